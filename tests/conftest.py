"""Shared fixtures: the two embedded models load once per test session."""

import os
from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[2] / "shared"
if not SHARED.exists():  # a checkout elsewhere: ../shared beside the repo
    SHARED = Path(__file__).resolve().parents[1].parent / "shared"
DATA = SHARED / "data"

# The vLLM tests need vLLM's CPU build, which lives in a virtualenv of its own (`make test-vllm`
# builds it and sets this variable); the suite's run neither collects nor skips them.
collect_ignore = [] if os.environ.get("PAIRLAB_VLLM_TESTS") else ["test_vllm_cpu.py"]


@pytest.fixture(scope="session")
def shared_data() -> Path:
    assert DATA.exists(), f"../shared/data not found at {DATA}"
    return DATA


@pytest.fixture(scope="session")
def smollm():
    from pairlab.models import get_model

    return get_model("smollm2-135m-instruct")


@pytest.fixture(scope="session")
def gemma():
    from pairlab.models import get_model

    return get_model("gemma3-270m")


@pytest.fixture(scope="session")
def pg_cluster():
    """One throwaway PostgreSQL cluster for the session (Debian's postgresql, `make test` installs it)."""
    from pgcluster import PgCluster

    with PgCluster() as cluster:
        yield cluster


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path):
    """A fresh, empty vote store URL: a SQLite file, or a new database in the PostgreSQL cluster."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'votes.db'}"
    return request.getfixturevalue("pg_cluster").create_database()

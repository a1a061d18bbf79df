"""Shared fixtures, and the suite's two tiers.

A test is in the slow tier when it uses a resource that costs seconds to start: a real model
(the ``smollm`` and ``gemma`` fixtures), PostgreSQL (``pg_cluster``, or ``store_url``'s
``postgresql`` parameter), a browser (``chromium``), a process of its own (an app, a model
server, a fresh Python interpreter: ``@pytest.mark.process``) or a coverage simulation
(``@pytest.mark.simulation``). The hook below marks each such test with what it uses and with
``slow``, from the fixtures it requests, so a new test lands in the right tier by using the
shared fixture. ``make test-fast`` runs ``-m "not slow"``; ``make test`` runs everything.

In the fast tier a test that starts a process or loads a model without saying so fails at
once, naming the marker it lacks: a slow test cannot hide in the fast tier.
"""

import os
import signal
import subprocess
from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[2] / "shared"
if not SHARED.exists():  # a checkout elsewhere: ../shared beside the repo
    SHARED = Path(__file__).resolve().parents[1].parent / "shared"
DATA = SHARED / "data"

# The vLLM tests need vLLM's CPU build, which lives in a virtualenv of its own (`make test-vllm`
# builds it and sets this variable); the suite's run neither collects nor skips them.
collect_ignore = [] if os.environ.get("PAIRLAB_VLLM_TESTS") else ["test_vllm_cpu.py"]

# What each resource is called as a marker, and the fixtures that bring it.
TIERS = {
    "model": "loads a real model (the smollm or gemma fixture, or get_model)",
    "postgres": "uses a PostgreSQL cluster (the pg_cluster fixture, a parameter whose value is 'postgresql')",
    "browser": "drives Chromium through Playwright (the chromium fixture)",
    "process": "starts a process: the app, a model server, or a fresh Python interpreter",
    "simulation": "a coverage or power simulation: many replicates of a fit",
}
FIXTURE_TIERS = {"smollm": "model", "gemma": "model", "pg_cluster": "postgres", "chromium": "browser",
                 "judge_server": "process"}


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: the slow tier, given to every test marked with one of: "
                            + ", ".join(TIERS) + " (make test-fast leaves it out)")
    for name, what in TIERS.items():
        config.addinivalue_line("markers", f"{name}: {what} (slow tier)")


def _tiers(item) -> set[str]:
    names = set(getattr(item, "fixturenames", ()))
    found = {tier for fixture, tier in FIXTURE_TIERS.items() if fixture in names}
    callspec = getattr(item, "callspec", None)
    if callspec is not None and "postgresql" in callspec.params.values():  # store_url's side, or a store kind
        found.add("postgres")
    found.update(mark.name for mark in item.iter_markers() if mark.name in TIERS)
    return found


def pytest_collection_modifyitems(config, items):
    for item in items:
        tiers = _tiers(item)
        for tier in sorted(tiers - {m.name for m in item.iter_markers()}):
            item.add_marker(tier)
        if tiers and item.get_closest_marker("slow") is None:
            item.add_marker("slow")
    # Modules with a slow test run first, each module whole: `make test` hands each worker
    # whole modules (--dist loadscope, so a module's fixtures are built once), and the many
    # quick modules left for the end keep both workers busy until the last one finishes.
    slow = {item.nodeid.split("::")[0] for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.nodeid.split("::")[0] not in slow)


@pytest.fixture(autouse=True)
def _fast_tier_guard(request, monkeypatch):
    """A test outside the slow tier may neither start a process nor load a model: it would
    make the fast tier slow without anyone choosing it. Fail it, naming the marker."""
    if request.node.get_closest_marker("slow") is not None:
        yield
        return

    def refuse(what: str, marker: str):
        pytest.fail(f"{request.node.nodeid} {what} but is in the fast tier: use the fixture that brings it "
                    f"or mark it @pytest.mark.{marker} (see tests/conftest.py)", pytrace=False)

    popen_init = subprocess.Popen.__init__

    def guarded_popen(self, args, *a, **kw):
        program = os.path.basename(str(args if isinstance(args, (str, bytes, os.PathLike)) else args[0]))
        if program != "git":  # a manifest reads the commit it ran from: a few milliseconds
            refuse(f"starts a process ({program})", "process")
        popen_init(self, args, *a, **kw)

    monkeypatch.setattr(subprocess.Popen, "__init__", guarded_popen)
    import pairlab.models

    get_model = pairlab.models.get_model

    def guarded_get_model(name, backend=None, *a, **kw):
        try:
            spec = pairlab.models.resolve(name, *a[:1], **{k: v for k, v in kw.items() if k == "config"})
        except Exception:  # a name or config the test expects to be refused: let get_model say so
            return get_model(name, backend, *a, **kw)
        kind, _, where = spec.source.partition(":")
        missing = kind in ("hf", "gguf") and not os.path.exists(where)  # a load that must fail, cheaply
        if (backend or spec.backend) in ("transformers", "vllm") and not missing:  # weights in this process
            refuse(f"loads model {name}", "model")
        return get_model(name, backend, *a, **kw)

    monkeypatch.setattr(pairlab.models, "get_model", guarded_get_model)
    yield


@pytest.fixture
def terminal_sigint():
    """SIGINT as a terminal's foreground job has it: Python's KeyboardInterrupt. A job started in
    the background by a non-interactive shell (``make test &``) inherits SIGINT ignored, and so
    would every process it starts, so a test of what Ctrl-C does sets it for its duration."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


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


@pytest.fixture
def judge_server():
    """``judge_server(*options)``: a context manager that starts tests/judge_sim.py's simulated
    judge (an OpenAI-compatible server with a latency distribution) in its own process and
    yields its base URL."""
    from judge_sim import sim_server

    return sim_server


@pytest.fixture(scope="session")
def chromium():
    """Debian's Chromium, headless, driven by Playwright: one browser for the session."""
    from playwright.sync_api import sync_playwright

    path = Path("/usr/bin/chromium")
    # A missing browser fails the test, as in every other browser test: a skip would count as a pass.
    assert path.exists(), "needs Debian chromium at /usr/bin/chromium: run `make browser`"
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(path), headless=True, args=["--no-sandbox", "--disable-gpu"])
        yield browser
        browser.close()

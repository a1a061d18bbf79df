"""The suite's two tiers (tests/conftest.py): a test's tier follows from the fixtures it uses,
and the fast tier refuses a test that starts a process or loads a model without saying so.
Run on a small suite of its own, with the real conftest, in this process."""

from pathlib import Path

CONFTEST = (Path(__file__).with_name("conftest.py")).read_text()

SUITE = '''
import subprocess
import sys

import pytest


def test_unit():
    pass


def test_model(smollm):
    pass


def test_store(store_url):
    pass


def test_kind_of_store(kind):
    pass


def test_browser(chromium):
    pass


def test_simulated_judge(judge_server):
    pass


@pytest.mark.simulation
def test_coverage():
    pass


@pytest.mark.process
def test_interpreter():
    pass


def test_starts_an_interpreter_unmarked():
    subprocess.run([sys.executable, "-c", "pass"])


def test_loads_a_model_unmarked():
    from pairlab.models import get_model

    get_model("smollm2-135m-instruct")


def test_asks_for_an_unknown_model():
    from pairlab.backends.base import BackendError
    from pairlab.models import get_model

    with pytest.raises(BackendError):
        get_model("no-such-model")


def pytest_generate_tests(metafunc):
    if "kind" in metafunc.fixturenames:
        metafunc.parametrize("kind", ["sqlite", "postgresql"])
'''


def test_each_resource_puts_a_test_in_the_slow_tier_by_its_fixture(pytester):
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_suite=SUITE)
    items, _ = pytester.inline_genitems("-p", "no:cacheprovider")
    tiers = {item.name: sorted(m.name for m in item.iter_markers()
                               if m.name in ("slow", "model", "postgres", "browser", "process", "simulation"))
             for item in items}
    assert tiers == {
        "test_unit": [], "test_store[sqlite]": [], "test_kind_of_store[sqlite]": [],
        "test_starts_an_interpreter_unmarked": [], "test_loads_a_model_unmarked": [],
        "test_asks_for_an_unknown_model": [],
        "test_model": ["model", "slow"],
        "test_store[postgresql]": ["postgres", "slow"], "test_kind_of_store[postgresql]": ["postgres", "slow"],
        "test_browser": ["browser", "slow"],
        "test_simulated_judge": ["process", "slow"], "test_interpreter": ["process", "slow"],
        "test_coverage": ["simulation", "slow"],
    }


def test_the_fast_tier_fails_a_test_that_starts_a_process_or_loads_a_model_unmarked(pytester):
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest_inprocess("-m", "not slow", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=4, failed=2)
    result.stdout.fnmatch_lines([
        "*test_starts_an_interpreter_unmarked starts a process (python*) but is in the fast tier*"
        "@pytest.mark.process*",
        "*test_loads_a_model_unmarked loads model smollm2-135m-instruct but is in the fast tier*"
        "@pytest.mark.model*",
    ])

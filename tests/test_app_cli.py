"""``python app.py`` on bad input: one ``app.py: error:`` line (exit 2), before any model loads."""

import subprocess
import sys
from pathlib import Path

import pytest
from support import run_module, wait_until

ROOT = Path(__file__).resolve().parents[1]


def run_app(*args, cwd=ROOT):
    return run_module(str(ROOT / "app.py"), *args, cwd=cwd)


def one_error_line(out) -> str:
    assert out.returncode == 2, out.stderr[-2000:]
    assert "Traceback" not in out.stderr
    errors = [line for line in out.stderr.splitlines() if line.startswith("app.py: error: ")]
    assert len(errors) == 1, out.stderr
    assert len(out.stderr.splitlines()) <= 3, out.stderr  # usage line + the error
    return errors[0]


# app.py run as a script, then which heavy modules it had imported when it exited.
_IMPORTED_AT_EXIT = """
import runpy, sys
sys.argv = sys.argv[1:]
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
finally:
    print(sorted(m for m in ("torch", "transformers", "gradio") if m in sys.modules))
"""


@pytest.mark.process  # what a fresh interpreter has imported when it exits
def test_missing_config_is_one_line_before_loading_anything(tmp_path):
    out = subprocess.run([sys.executable, "-c", _IMPORTED_AT_EXIT, str(ROOT / "app.py"), "--config",
                          str(tmp_path / "missing.toml")], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert "missing.toml" in one_error_line(out)
    assert out.stdout.strip() == "[]"  # the models (and Gradio) were not loaded first


def test_unreachable_database_is_one_line(tmp_path):
    # Port 9 (discard) has no PostgreSQL server: the driver's many-line error becomes one line.
    out = run_app("--db", "postgresql+psycopg://x:y@127.0.0.1:9/none")
    line = one_error_line(out)
    assert "127.0.0.1" in line and "y@" not in line  # the password is not printed


@pytest.mark.parametrize("body, expected", [
    ('[arena\nmodels = 1', "not valid TOML"),
    ('[arena]\nmodels = ["smollm2-135m-instruct", "no-such-model"]\n', "no-such-model"),
    ('[arena]\nmodels = []\npairs = "absent.jsonl"\n', "absent.jsonl"),
])
def test_bad_config_contents_are_one_line(tmp_path, body, expected):
    (tmp_path / "arena.toml").write_text(body)
    out = run_app("--config", str(tmp_path / "arena.toml"), "--db", str(tmp_path / "v.db"))
    assert expected in one_error_line(out)


def test_campaign_verdicts_that_miss_a_pick_are_one_line(tmp_path):
    from test_arena_campaign import write_campaign

    picks, verdicts, chosen = write_campaign(tmp_path)
    lines = verdicts.read_text().splitlines(keepends=True)
    verdicts.write_text("".join(line for line in lines if next(iter(chosen)) not in line))
    pairs = ROOT / "data" / "prompts_pairs.jsonl"
    (tmp_path / "arena.toml").write_text(f'[arena]\nmodels = []\npairs = "{pairs}"\npicks = "{picks}"\n'
                                         f'verdicts = "{verdicts}"\n')
    out = run_app("--config", str(tmp_path / "arena.toml"), "--db", str(tmp_path / "v.db"))
    assert "gave no verdict on 1 of the 16 picks" in one_error_line(out)


@pytest.mark.process
def test_the_app_says_which_address_to_open_once_it_listens(tmp_path):
    from app_process import AppProcess

    pairs = ROOT / "data" / "prompts_pairs.jsonl"
    (tmp_path / "arena.toml").write_text(f'[arena]\nmodels = []\npairs = "{pairs}"\n')
    log = tmp_path / "app.log"
    with AppProcess(tmp_path / "arena.toml", str(tmp_path / "v.db"), log) as app:
        wait_until(lambda: "ready" in log.read_text(), 60, what="the app's ready line")
        assert f"The arena is ready: open {app.url}/ " in log.read_text()


@pytest.mark.parametrize("command", [["app.py"], ["-m", "arena.export"]])
def test_help_says_what_the_command_does_in_plain_words(command):
    out = run_module(*command[-1:], "--help", cwd=ROOT, env={"COLUMNS": "200"}).stdout
    assert "``" not in out  # docstring markup, which repeated the usage line instead of a description
    assert "Example: " in out

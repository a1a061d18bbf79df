"""The report command line, and the HTML report as Chromium shows it on a laptop screen."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from support import run_module

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")


def run(*args):
    return run_module("analysis.report", *args, cwd=ROOT)


def test_help_documents_every_option():
    proc = run("--help")
    assert proc.returncode == 0
    for option in ("--votes", "--out", "--humans", "--bootstrap", "--rating-bootstrap", "--seed", "--quiet"):
        assert option in proc.stdout
    assert "report.html" in proc.stdout and "PandaLM" in proc.stdout


def test_missing_input_is_a_clear_error(tmp_path):
    proc = run("--votes", str(tmp_path / "nope.jsonl"), "--out", str(tmp_path / "out"))
    assert proc.returncode == 2 and "nope.jsonl" in proc.stderr and "no such file" in proc.stderr


def test_errors_have_the_style_of_analysis_ratings(tmp_path):
    """One style for the analysis CLIs: argparse's ``prog: error: ...`` on one line, exit code 2."""
    missing = tmp_path / "nope.jsonl"
    proc = run("--votes", str(missing), "--out", str(tmp_path / "out"))
    assert proc.returncode == 2
    assert proc.stderr == f"python -m analysis.report: error: {missing}: no such file or directory\n"
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    proc = run("--votes", str(empty), "--out", str(tmp_path / "out"))
    assert proc.returncode == 2
    # The words analysis.ratings says for it: one reader, one verdict.
    assert proc.stderr == f"python -m analysis.report: error: {empty}: empty file (no header, no rows)\n"
    blank = tmp_path / "empty.jsonl"
    blank.write_text("")
    proc = run("--votes", str(blank), "--out", str(tmp_path / "out"))
    assert proc.returncode == 2
    assert proc.stderr == f"python -m analysis.report: error: no records found in {blank}\n"


def test_humans_prefix_pools_other_voter_ids(tmp_path):
    from analysis.report import build_report, report_json
    from pairlab.records import Record, make_pair_id

    records = [
        Record(pair_id=make_pair_id("q", "a", "bb"), prompt="q", model_a="m1", model_b="m2", response_a="a",
               response_b="bb", winner=w, judge=j)
        for w, j in (("model_a", "expert_1"), ("model_b", "expert_2"), ("model_a", "judge-x"))
    ]
    data = report_json(build_report(records, human_prefix="expert", n_boot=20, rating_bootstrap=0))
    assert set(data["judges"]) == {"human", "judge-x"}
    assert data["judges"]["human"]["n_records"] == 2


@pytest.mark.browser
def test_pandalm_report_renders_in_chromium(tmp_path, shared_data):
    from playwright.sync_api import sync_playwright

    # A missing browser fails the test, as in every other browser test: a skip would count as a pass.
    assert CHROMIUM.exists(), "needs Debian chromium at /usr/bin/chromium: run `make browser`"
    out = tmp_path / "pandalm"
    proc = run("--votes", str(shared_data / "pandalm"), "--out", str(out), "--quiet", "--rating-bootstrap", "50")
    assert proc.returncode == 0, proc.stderr
    # the console gets one line for the 31 remarks (issue 30), the report each one
    notes = [x for x in proc.stderr.splitlines() if x.startswith("note:")]
    assert len(notes) == 1 and notes[0].startswith("note: 31 rows read with a remark")
    assert "idx 157" in (out / "report.md").read_text()
    data = json.loads((out / "report.json").read_text())
    assert set(data["judges"]) == {"human", "gpt-3.5-turbo", "pandalm-7b", "panel"}
    shot = tmp_path / "report.png"
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=str(CHROMIUM),
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run"],
        )
        page = browser.new_page(viewport={"width": 1366, "height": 768})
        requests = []
        page.on("request", lambda r: requests.append(r.url))
        page.goto((out / "report.html").as_uri())
        page.screenshot(path=str(shot), full_page=True)
        images = page.eval_on_selector_all("img", "els => els.map(e => [e.alt, e.naturalWidth, e.getBoundingClientRect().width])")
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        hidden = page.eval_on_selector_all(".scroll", "els => els.map(e => e.scrollWidth - e.clientWidth)")
        headings = page.eval_on_selector_all("h2", "els => els.map(e => e.textContent)")
        summary = page.inner_text("#summary + div table")
        browser.close()
    print(f"screenshot: {shot}")
    # Self-contained: nothing but the file itself is fetched.
    assert [u for u in requests if not u.startswith(("file:", "data:"))] == []
    assert len(images) >= 4 and all(natural > 0 and 300 < shown <= 1366 for _, natural, shown in images)
    assert overflow <= 0, "the page scrolls sideways on a 1366 px laptop screen"
    assert max(hidden) <= 0, "a table needs sideways scrolling on a 1366 px laptop screen"
    assert headings == [
        "In short: what each judge is worth", "Summary", "Position bias", "Length bias", "Self-family bias",
        "Agreement", "What is this judge worth?", "Self-preference with model strength held fixed", "The judge's leaderboard against the reference's (Arena-Hard-Auto)",
        "Which fix brings each judge closest to the reference", "Judge panel", "Annotator cards (AlpacaEval's analyze)",
    ]
    for rater in ("human", "gpt-3.5-turbo", "pandalm-7b"):
        assert rater in summary
    assert shot.stat().st_size > 50_000
    if os.environ.get("REPORT_SCREENSHOT_DIR"):  # keep a copy to look at
        target = Path(os.environ["REPORT_SCREENSHOT_DIR"])
        target.mkdir(parents=True, exist_ok=True)
        (target / "pandalm-report.png").write_bytes(shot.read_bytes())


def test_judge_family_falls_back_to_the_model_registry():
    from analysis.report import build_report
    from pairlab.records import Record, make_pair_id

    records = [
        Record(pair_id=make_pair_id(f"q{i}", "a", "bb"), prompt=f"q{i}", model_a="gemma-x", model_b="smollm-y",
               response_a="a", response_b="bb", winner="model_a", judge=judge)
        for i in range(3) for judge in ("gemma3-270m", "mystery-judge")
    ]
    report = build_report(records, n_boot=20, rating_bootstrap=0)
    assert report.rater("gemma3-270m").family == "gemma"  # data/models.toml
    assert report.rater("mystery-judge").family is None
    assert "unknown" in report.rater("mystery-judge").self_family.note


def test_markdown_report_escapes_what_records_carry():
    from analysis.report import build_report
    from analysis.report.render import render_markdown
    from pairlab.records import Record, make_pair_id

    evil_judge = "judge<script>alert(1)</script>|x"
    evil_model = "m![p](http://127.0.0.1:9/pixel.png)"
    records = [
        Record(pair_id=make_pair_id(f"q{i}", "a", "bb"), prompt=f"q{i}", model_a=evil_model, model_b="m2",
               response_a="a", response_b="bb", winner=w, judge=j)
        for i, (w, j) in enumerate([("model_a", "human"), ("model_b", "human"), ("model_a", evil_judge),
                                    ("model_b", evil_judge), ("tie", evil_judge)])
    ]
    md = render_markdown(build_report(records, n_boot=20, rating_bootstrap=0))
    assert "<script" not in md and "&lt;script&gt;" in md
    assert not re.search(r"(?<!\\)!(?<!\\)\[|(?<!\\)\]\(", md)  # no image or link syntax left unescaped
    assert "m\\!\\[p\\](http://127.0.0.1:9/pixel.png)" in md  # the name, as written
    assert "&lt;/script&gt;|x" not in md  # the | stays inside its table cell
    assert "judge&lt;script&gt;alert(1)&lt;/script&gt;\\|x" in md


def test_progress_of_the_long_parts_goes_to_stderr(tmp_path):
    """Reading (bytes of each file) and the bootstraps (raters; judging the judges, worth in
    human votes included) report progress on stderr; stdout says only what was written."""
    from analysis.importers.columnar import read_table
    from pairlab.records import write_records
    from report_sample import synthetic_records

    votes = tmp_path / "votes.jsonl"
    write_records(votes, synthetic_records(300, seed=4, rich=True))

    class Bar:
        def __init__(self, total):
            self.total, self.done, self.closed = total, 0, False

        def update(self, n):
            self.done += n

        def close(self):
            self.closed = True

    bars = []
    read_table([votes], progress=lambda total: bars.append(Bar(total)) or bars[-1])
    assert [(b.total, b.done, b.closed) for b in bars] == [(votes.stat().st_size, votes.stat().st_size, True)]
    proc = run("--votes", str(votes), "--out", str(tmp_path / "out"), "--bootstrap", "50", "--rating-bootstrap", "20")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("wrote ") and proc.stdout.count("\n") == 1
    for bar in ("raters", "judging the judges"):
        assert re.search(bar + r": 100%", proc.stderr), bar


def test_a_file_of_pairs_still_to_judge_is_named_as_such(tmp_path):
    from pairlab.records import write_records
    from report_sample import synthetic_records

    pairs = tmp_path / "pairs.jsonl"
    write_records(pairs, [{k: v for k, v in r.items() if k not in ("winner", "judge", "judge_family")}
                          for r in synthetic_records(3, seed=1)])
    proc = run("--votes", str(pairs), "--out", str(tmp_path / "out"))
    assert proc.returncode == 2
    assert proc.stderr.strip() == (f"python -m analysis.report: error: no records found in {pairs} ({pairs}: file: "
                                   "skipped: pairs to be judged (no winner), not votes)")


@pytest.mark.process  # the signal reaches a process group, as from a terminal
def test_ctrl_c_stops_the_workers_and_says_one_line(tmp_path, terminal_sigint):
    """Ctrl-C while the workers compute: exit 130 with one line (no traceback from the
    parent or from each worker), nothing reported as written, no process left behind."""
    import signal

    from pairlab.records import write_records
    from report_sample import synthetic_records

    votes = tmp_path / "votes.jsonl"
    write_records(votes, synthetic_records(2000, seed=1))
    proc = subprocess.Popen([sys.executable, "-m", "analysis.report", "--votes", str(votes), "--out",
                             str(tmp_path / "out"), "--workers", "2"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    seen = ""
    while "raters:" not in seen:  # the workers are running: their progress bar has started
        char = proc.stderr.read(1)
        assert char, f"the report ended before its workers started: {seen}"
        seen += char
    os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole process group
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 130
    assert out == ""
    assert err.splitlines()[-1] == "python -m analysis.report: interrupted"
    assert "Traceback" not in err
    with pytest.raises(ProcessLookupError):
        os.killpg(proc.pid, 0)  # no worker outlived the report


def test_ctrl_c_dropped_by_a_finaliser_still_stops_the_report(tmp_path, monkeypatch, capsys, terminal_sigint):
    """Python drops a KeyboardInterrupt raised while a finaliser runs ("Exception ignored"):
    the report must still end with 130 and say nothing was written."""
    import signal

    import analysis.report.figures as figures_module
    from analysis.report.cli import main
    from pairlab.records import write_records
    from report_sample import synthetic_records

    class Finaliser:
        def __del__(self):
            signal.raise_signal(signal.SIGINT)  # Ctrl-C landing while Python collects an object

    real = figures_module.build_report_with_figures

    def build_then_interrupted(*args, **kwargs):
        out = real(*args, **kwargs)
        Finaliser()  # dropped at once: its __del__ runs, and the exception with it is dropped
        return out

    monkeypatch.setattr(figures_module, "build_report_with_figures", build_then_interrupted)
    votes = tmp_path / "votes.jsonl"
    write_records(votes, synthetic_records(300, seed=2))
    with pytest.raises(SystemExit) as stopped:
        main(["--votes", str(votes), "--out", str(tmp_path / "out"), "--workers", "1", "--quiet",
              "--rating-bootstrap", "20"])
    assert stopped.value.code == 130
    out, err = capsys.readouterr()
    assert "wrote" not in out and err.splitlines()[-1] == "python -m analysis.report: interrupted"
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the handler is given back


@pytest.mark.timeout(300)
def test_ctrl_c_while_the_helper_writes_leaves_no_unfinished_file(tmp_path, monkeypatch, capsys, terminal_sigint):
    """Ctrl-C while the helper process writes the report: it is stopped midway, and the new
    content it had not yet put in place (a hidden file beside the report's) is removed; the report
    files already there stay as they were."""
    import signal
    import threading
    import time

    import analysis.report.render as render
    from analysis.report.cli import main
    from pairlab.files import replace_file
    from pairlab.records import write_records
    from report_sample import synthetic_records

    out = tmp_path / "out"
    out.mkdir()
    (out / "report.json").write_text("the last run's\n")

    def slow_write(texts):  # the helper (forked after this) writes with it: stopped midway
        path, text = next(iter(texts.items()))
        with replace_file(path) as fh:
            fh.write(text[:10])
            fh.flush()
            time.sleep(120)
            fh.write(text[10:])

    monkeypatch.setattr(render, "write_texts", slow_write)

    def ctrl_c_once_writing():
        while not any(p.name.startswith(".report.json.") for p in out.iterdir()):
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGINT)

    votes = tmp_path / "votes.jsonl"
    write_records(votes, synthetic_records(300, seed=2))
    threading.Thread(target=ctrl_c_once_writing, daemon=True).start()
    with pytest.raises(SystemExit) as stopped:
        main(["--votes", str(votes), "--out", str(out), "--workers", "2", "--quiet", "--rating-bootstrap", "20",
              "--bootstrap", "40"])
    assert stopped.value.code == 130
    assert sorted(p.name for p in out.iterdir()) == ["report.json"]
    assert (out / "report.json").read_text() == "the last run's\n"
    assert capsys.readouterr().err.splitlines()[-1] == "python -m analysis.report: interrupted"


def test_only_what_replace_file_left_unfinished_is_removed(tmp_path):
    """The cleanup after a stopped write removes the hidden files replace_file names for that path,
    not a user's file that merely starts alike, nor another path's."""
    from pairlab.files import remove_unfinished, replace_file

    target = tmp_path / "report.json"
    with pytest.raises(KeyboardInterrupt):  # its own cleanup runs here: none is left
        with replace_file(target) as fh:
            fh.write("{")
            raise KeyboardInterrupt
    left = tmp_path / ".report.json.abcd_123"  # as mkstemp names them
    kept = [tmp_path / ".report.json.bak", tmp_path / ".report.md.abcd_123", tmp_path / "report.json"]
    for path in (left, *kept):
        path.write_text("x")
    remove_unfinished(target)
    assert not left.exists() and all(path.exists() for path in kept)


def test_a_report_stopped_while_it_is_made_keeps_the_last_runs_three_files(tmp_path, monkeypatch):
    """Ctrl-C while the html is made (the last and longest of the three): the folder keeps the
    last run's json, markdown and html, none of them new beside an old one."""
    import analysis.report.render as render
    from analysis.report import build_report
    from pairlab.records import Record
    from report_sample import synthetic_records

    report = build_report([Record.from_dict(r) for r in synthetic_records(200, seed=3)], n_boot=20,
                          rating_bootstrap=0)
    out = tmp_path / "out"
    render.write_report(report, out, figs={})
    last = {p.name: p.read_bytes() for p in out.iterdir()}
    assert sorted(last) == ["report.html", "report.json", "report.md"]
    for name in last:
        (out / name).write_bytes(last[name] + b"<!-- the last run's -->")
    last = {p.name: p.read_bytes() for p in out.iterdir()}

    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(render, "_html", interrupted)
    with pytest.raises(KeyboardInterrupt):
        render.write_report(report, out, figs={})
    assert {p.name: p.read_bytes() for p in out.iterdir()} == last  # nothing new, no leftover

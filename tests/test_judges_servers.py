"""judges.run against servers: requests in flight, replicas, faults, and the CLI's errors.

The throughput and 429 cases use the latency-simulating judge of tests/judge_sim.py (how a
client keeps requests in flight does not depend on what a model says); the replica-kill
case runs two real ``arena.model_server`` processes of the embedded model.
"""

import json
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from pairlab.records import Pair, make_pair_id, read_records, write_records
from judge_sim import stats
from support import answers, run_module, wait_until
from judges import generate as generate_cli
from judges import run as run_cli

ROOT = Path(__file__).resolve().parents[1]
EMBEDDED = "smollm2-135m-instruct"


def make_pairs(n: int, questions: int | None = None) -> list[Pair]:
    out = []
    for i in range(n):
        prompt = f"Question {i % (questions or n)}: name a colour."
        a, b = f"Blue, answer {i}.", f"Red is a colour, answer {i}."
        out.append(Pair(pair_id=make_pair_id(prompt, a, b), prompt=prompt, model_a="m1", model_b="m2",
                        response_a=a, response_b=b, family_a="f1", family_b="f2"))
    return out


@pytest.fixture
def pairs_file(tmp_path):
    def write(n: int) -> Path:
        path = tmp_path / f"pairs{n}.jsonl"
        write_records(path, make_pairs(n))
        return path
    return write


def cli(*args):
    return run_module("judges.run", *args, cwd=ROOT, env={"COLUMNS": "200"})


def keys_and_lines(out: Path) -> tuple[list, set]:
    lines = out.read_text().splitlines()
    keys = [(r.pair_id, r.meta["order"]) for r in read_records(out)]
    return keys, set(lines)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_concurrency_keeps_n_requests_in_flight_and_records_do_not_depend_on_completion_order(pairs_file, tmp_path,
                                                                                              judge_server):
    pairs = pairs_file(24)
    with judge_server("--median", "0.1", "--sigma", "1.0") as url:
        judge = f"openai:{url}#sim-judge"
        assert run_cli.main(["--pairs", str(pairs), "--judge", judge, "--out", str(tmp_path / "a.jsonl"),
                             "--mode", "generate", "--concurrency", "16", "--quiet"]) == 0
        assert stats(url)["max_in_flight"] == 16  # 48 requests, 16 at a time, no batch barrier
        stats(url, reset=True)
        assert run_cli.main(["--pairs", str(pairs), "--judge", judge, "--out", str(tmp_path / "b.jsonl"),
                             "--mode", "generate", "--concurrency", "3", "--quiet"]) == 0
        assert stats(url)["max_in_flight"] == 3
    keys_a, lines_a = keys_and_lines(tmp_path / "a.jsonl")
    keys_b, lines_b = keys_and_lines(tmp_path / "b.jsonl")
    assert len(keys_a) == len(set(keys_a)) == 48
    assert lines_a == lines_b  # the same records, whatever order they were finished in
    manifest = json.loads((tmp_path / "a.manifest.json").read_text())
    assert manifest["throughput"]["in_flight_limit"] == 16 and manifest["throughput"]["verdicts"] == 48
    assert manifest["throughput"]["verdicts_per_s"] > 0


def test_logprob_mode_uses_the_same_pool_and_a_client_side_chat_template(pairs_file, tmp_path, judge_server):
    pairs = pairs_file(10)
    with judge_server("--median", "0.2") as url:
        out = tmp_path / "lp.jsonl"
        assert run_cli.main(["--pairs", str(pairs), "--judge", f"openai:{url}#sim-judge", "--out", str(out),
                             "--chat-template", "plain", "--concurrency", "8", "--quiet"]) == 0
        seen = stats(url)
    assert seen["max_in_flight"] == 8 and seen["requests"] == 40  # two candidates per judgment
    records = read_records(out)
    assert len(records) == 20 and all(0 <= r.prob_a <= 1 for r in records)


def test_sigkill_with_64_in_flight_then_rerun_loses_nothing_and_repeats_nothing(pairs_file, tmp_path, judge_server):
    pairs = pairs_file(100)
    with judge_server("--median", "0.5") as url:
        judge = f"openai:{url}#sim-judge"
        reference = tmp_path / "reference.jsonl"
        assert run_cli.main(["--pairs", str(pairs), "--judge", judge, "--out", str(reference), "--mode", "generate",
                             "--concurrency", "64", "--quiet"]) == 0
        stats(url, reset=True)
        out = tmp_path / "out.jsonl"
        args = ["--pairs", str(pairs), "--judge", judge, "--out", str(out), "--mode", "generate",
                "--concurrency", "64", "--quiet"]
        proc = subprocess.Popen([sys.executable, "-m", "judges.run", *args], cwd=ROOT, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        wait_until(lambda: _lines(out) >= 20, 300, what="20 verdicts written")
        seen = stats(url)
        assert seen["max_in_flight"] == 64 and seen["in_flight"] > 32  # killed with the pool of requests out
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        written = out.read_bytes().count(b"\n")
        assert 20 <= written < 200
        done = cli(*args)
        assert done.returncode == 0, done.stderr
    keys, lines = keys_and_lines(out)
    assert len(keys) == len(set(keys)) == 200
    assert lines == keys_and_lines(reference)[1]
    manifest = json.loads((tmp_path / "out.manifest.json").read_text())
    assert manifest["counts"]["skipped_existing"] == written and manifest["counts"]["records_written"] == 200 - written


def test_a_server_answering_429_for_a_while_slows_the_run_which_completes(pairs_file, tmp_path, judge_server):
    pairs = pairs_file(8)
    with judge_server("--median", "0.05", "--busy", "1.5") as url:
        out = tmp_path / "busy.jsonl"
        assert run_cli.main(["--pairs", str(pairs), "--judge", f"openai:{url}#sim-judge", "--out", str(out),
                             "--mode", "generate", "--concurrency", "8", "--quiet"]) == 0
        refused = stats(url)["refused_429"]
    keys, _ = keys_and_lines(out)
    assert refused >= 8 and len(keys) == len(set(keys)) == 16
    endpoint = json.loads((tmp_path / "busy.manifest.json").read_text())["endpoints"][0]
    assert endpoint["failures"] >= 8 and "429" in endpoint["last_error"] and endpoint["set_asides"] == 0


def _serve(port: int) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "arena.model_server", "--model", EMBEDDED, "--port", str(port)],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def _wait_up(url: str, proc: subprocess.Popen) -> None:
    wait_until(answers(url + "/models", proc), 180, what=f"{url} to come up")


SHORT = """{#
verdict: (?P<verdict>\\b[AB]\\b)
logprob_prefix: "Better answer: "
#}
Q: {{ instruction }}
A: {{ response_a }}
B: {{ response_b }}
Which is better, A or B?
"""


@pytest.mark.model  # two arena.model_server processes of the embedded model
@pytest.mark.process
def test_two_replicas_one_sigkilled_mid_run_the_other_finishes_each_judgment_once(tmp_path):
    from pairlab.weights import prepared_dir

    ports = [_free_port(), _free_port()]
    urls = [f"http://127.0.0.1:{p}/v1" for p in ports]
    procs = [_serve(p) for p in ports]
    try:
        for url, proc in zip(urls, procs):
            _wait_up(url, proc)
        template = tmp_path / "short.jinja"
        template.write_text(SHORT)
        pairs = tmp_path / "pairs.jsonl"
        write_records(pairs, make_pairs(6))
        out = tmp_path / "out.jsonl"
        args = ["--pairs", str(pairs), "--judge", f"openai:{urls[0]}#{EMBEDDED}", "--endpoint", urls[1],
                "--out", str(out), "--template", str(template), "--chat-template", str(prepared_dir("embedded:smollm2")[0]),
                "--concurrency", "2", "--quiet"]
        run = subprocess.Popen([sys.executable, "-m", "judges.run", *args], cwd=ROOT, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
        wait_until(lambda: _lines(out) >= 2, 120, what="2 verdicts written")
        procs[1].send_signal(signal.SIGKILL)
        procs[1].wait()
        stdout, stderr = run.communicate(timeout=240)
        assert run.returncode == 0, stderr
        keys, _ = keys_and_lines(out)
        assert len(keys) == len(set(keys)) == 12  # every (pair, order) judged, none twice
        manifest = json.loads((tmp_path / "out.manifest.json").read_text())
        first, second = manifest["endpoints"]
        assert first["requests"] > 0 and second["requests"] > 0  # both carried load while both were up
        assert second["set_asides"] >= 1 and first["set_asides"] == 0
        assert manifest["judge"]["endpoints"] == urls
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def test_sigterm_closes_the_manifest_with_status_and_wall_time(pairs_file, tmp_path, judge_server):
    pairs = pairs_file(300)
    with judge_server("--median", "0.5") as url:
        out = tmp_path / "out.jsonl"
        proc = subprocess.Popen([sys.executable, "-m", "judges.run", "--pairs", str(pairs), "--judge",
                                 f"openai:{url}#sim-judge", "--out", str(out), "--mode", "generate",
                                 "--quiet"], cwd=ROOT, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
        wait_until(lambda: _lines(out) >= 2, 300, what="2 verdicts written")
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 143 and "run the same command again to resume" in stderr
    manifest = json.loads((tmp_path / "out.manifest.json").read_text())
    assert manifest["status"] == "interrupted" and manifest["signal"] == "SIGTERM"
    assert manifest["wall_time_s"] > 0 and manifest["finished_at"]
    assert manifest["counts_so_far"]["records"] == len(out.read_text().splitlines()) >= 2


def test_progress_moves_per_judgment_in_integers_with_verdicts_per_second(pairs_file, tmp_path, judge_server):
    with judge_server("--median", "0.05") as url:
        done = cli("--pairs", str(pairs_file(3)), "--judge", f"openai:{url}#sim-judge", "--out",
                   str(tmp_path / "o.jsonl"), "--mode", "generate")
    assert done.returncode == 0, done.stderr
    assert "6/6 [" in done.stderr and "verdict/s" in done.stderr
    assert not re.search(r"\d\.\d/\d", done.stderr)  # never 4.0/6.0 pairs


def test_mostly_unparsable_judgments_end_non_zero_saying_what_to_try(pairs_file, tmp_path, capsys, judge_server):
    with judge_server("--median", "0.02") as url:  # it answers "[RESULT] A": never mt-bench-pair's "[[A]]"
        code = run_cli.main(["--pairs", str(pairs_file(3)), "--judge", f"openai:{url}#sim-judge", "--out",
                             str(tmp_path / "o.jsonl"), "--mode", "generate", "--template", "mt-bench-pair",
                             "--retries", "0", "--quiet"])
    err = capsys.readouterr().err
    assert code == 1
    assert "python -m judges.run: error: 6 of 6 judgments held no verdict" in err and "--mode logprob" in err


def _one_error_line(err: str) -> str:
    lines = [x for x in err.splitlines() if x.strip()]
    assert "Traceback" not in err and len(lines) == 1, err
    assert lines[0].startswith("python -m judges.run: error: ")
    return lines[0]


def test_logprob_against_a_server_without_a_visible_chat_template_is_one_line_and_no_file(pairs_file, tmp_path,
                                                                                          judge_server):
    with judge_server("--median", "0.02") as url:
        done = cli("--pairs", str(pairs_file(2)), "--judge", f"openai:{url}#sim-judge", "--out",
                   str(tmp_path / "o.jsonl"), "--quiet")
    assert done.returncode == 2
    assert "--chat-template" in _one_error_line(done.stderr)
    assert not (tmp_path / "o.jsonl").exists()


def test_a_server_that_is_down_is_one_line_and_leaves_no_file(pairs_file, tmp_path):
    url = f"http://127.0.0.1:{_free_port()}/v1"
    done = cli("--pairs", str(pairs_file(2)), "--judge", f"openai:{url}#judge", "--out", str(tmp_path / "o.jsonl"),
               "--mode", "generate", "--quiet")
    assert done.returncode == 2
    assert "no endpoint answers" in _one_error_line(done.stderr)
    assert not (tmp_path / "o.jsonl").exists()


def test_a_judge_that_fails_to_load_leaves_no_empty_out_file(pairs_file, tmp_path, capsys):
    out = tmp_path / "o.jsonl"
    code = run_cli.main(["--pairs", str(pairs_file(2)), "--judge", f"hf:{tmp_path / 'no-such-model'}",
                         "--out", str(out), "--quiet"])
    assert code == 2 and "cannot use judge" in _one_error_line(capsys.readouterr().err)
    assert not out.exists()


def test_empty_pairs_stop_before_the_judge_is_loaded(tmp_path, capsys):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    # A judge that cannot load: the message is about the pairs, so they were checked first.
    code = run_cli.main(["--pairs", str(empty), "--judge", f"hf:{tmp_path / 'no-such-model'}",
                         "--out", str(tmp_path / "o.jsonl")])
    assert code == 2 and _one_error_line(capsys.readouterr().err) == f"python -m judges.run: error: no pairs in {empty}"
    assert not (tmp_path / "o.jsonl").exists()


def test_generate_checks_every_model_name_before_generating(shared_data, tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        generate_cli.main(["--prompts", str(shared_data / "mt_bench" / "question.jsonl"), "--models",
                           f"{EMBEDDED},no-such-model", "--out", str(tmp_path / "p.jsonl"), "--limit", "1"])
    err = capsys.readouterr().err
    assert info.value.code == 2 and "python -m judges.generate: error: unknown model 'no-such-model'" in err
    assert "answering with" not in err and not (tmp_path / "p.jsonl").exists()


def test_server_options_are_refused_for_local_judges(pairs_file, tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        run_cli.main(["--pairs", str(pairs_file(1)), "--judge", EMBEDDED, "--out", str(tmp_path / "o.jsonl"),
                      "--concurrency", "8"])
    assert info.value.code == 2 and "--concurrency is for server judges" in capsys.readouterr().err

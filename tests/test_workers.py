"""analysis.workers: tasks over the parent's data in forked workers, results in call order; a
helper forked early that gets ready while its parent works."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time

import pytest

from analysis.workers import Helper, WorkerLost, Workers
from support import wait_until


def test_forked_workers_read_the_parents_data_and_keep_the_call_order():
    data = {"big": list(range(100_000))}  # made before the fork: the workers see it, nothing is sent

    def total(start: int, delay: float) -> tuple[int, int]:
        time.sleep(delay)  # the first call finishes last
        return sum(data["big"][start:]), os.getpid()

    with Workers(2, {"total": total}) as pool:
        results = pool.run([("total", (0, 0.3)), ("total", (10, 0.0)), ("total", (99_999, 0.0))])
    assert [r[0] for r in results] == [sum(range(100_000)), sum(range(10, 100_000)), 99_999]
    assert os.getpid() not in {pid for _, pid in results}  # run in the workers, not here


def test_one_worker_runs_the_tasks_here_in_order():
    seen = []
    with Workers(1, {"note": lambda x: seen.append(x) or (x, os.getpid())}) as pool:
        assert pool.run([("note", (k,)) for k in "abc"]) == [(k, os.getpid()) for k in "abc"]
    assert seen == list("abc")


def test_an_error_in_a_worker_reaches_the_caller():
    def fail(x):
        raise ValueError(f"no fit for {x}")

    with Workers(2, {"fail": fail}) as pool, pytest.raises(ValueError, match="no fit for 3"):
        pool.run([("fail", (3,))])


def test_progress_counts_each_result_as_it_arrives():
    seen = []

    def progress(items, desc):
        seen.append((desc, len(items)))
        return items

    with Workers(2, {"square": lambda x: x * x}) as pool:
        assert pool.run([("square", (k,)) for k in range(5)], progress, desc="squares") == [0, 1, 4, 9, 16]
    assert seen == [("squares", 5)]


_BORN_SLOW = """
import os, signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)  # as a terminal's foreground job has it
os.register_at_fork(after_in_child=lambda: time.sleep(1.0))  # a worker slow to start, as on a busy machine
from analysis.workers import Workers
try:
    with Workers(2, {"wait": lambda: time.sleep(10)}) as pool:
        print("forked", flush=True)
        pool.run([("wait", ())] * 2)
except KeyboardInterrupt:
    print("interrupted", flush=True)
"""


@pytest.mark.process  # the signal reaches a process group, as from a terminal
def test_ctrl_c_while_a_worker_is_still_starting_prints_no_traceback():
    """A Ctrl-C that reaches a worker before its initializer ignores it: the worker was still in
    Python's after-fork hooks, and its KeyboardInterrupt printed a traceback (CI saw it once in the
    report's Ctrl-C test). Born with SIGINT blocked, the worker drops it; the parent stops."""
    import signal
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    proc = subprocess.Popen([sys.executable, "-c", _BORN_SLOW], cwd=root, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env={**os.environ, "PYTHONPATH": str(root)})
    assert proc.stdout.readline().strip() == "forked"
    os.killpg(proc.pid, signal.SIGINT)  # the workers are still in their after-fork sleep
    out, err = proc.communicate(timeout=60)
    assert out.strip() == "interrupted" and "Traceback" not in err, err


def _ready_file(path: str) -> None:
    with open(path, "w") as fh:
        fh.write(str(os.getpid()))


def test_a_helper_gets_ready_while_its_parent_works_then_answers_in_its_own_process(tmp_path):
    ready = tmp_path / "ready"
    with Helper({"pid": lambda: open(ready).read(), "square": lambda x: (x * x, os.getpid())},
                prepare=lambda: _ready_file(str(ready))) as helper:
        assert helper.forked
        wait_until(ready.exists, timeout=30, what="the helper's prepare")  # while this process goes on
        pending = [helper.submit("square", k) for k in range(3)]
        assert [p.get()[0] for p in pending] == [0, 1, 4]
        pids = {p.get()[1] for p in pending}
        assert pids == {int(helper.submit("pid").get())} and os.getpid() not in pids


def test_an_error_in_a_helper_reaches_the_caller_when_it_asks():
    def fail(x):
        raise ValueError(f"cannot draw {x}")

    with Helper({"fail": fail}) as helper:
        pending = helper.submit("fail", "ratings")
        with pytest.raises(ValueError, match="cannot draw ratings"):
            pending.get()


def test_a_helper_not_forked_makes_each_call_here_when_handed_over():
    seen, prepared = [], []
    with Helper({"note": lambda x: seen.append(x) or os.getpid()}, prepare=lambda: prepared.append(1),
                fork=False) as helper:
        assert not helper.forked
        pending = helper.submit("note", "a")
        assert seen == ["a"]  # made already, before anything asked for it
        assert pending.get() == os.getpid()
    assert prepared == []  # what the calls need they import themselves


def test_each_result_is_handed_over_as_it_arrives_while_the_rest_still_run(tmp_path):
    """``arrived`` sees the quick call's result while the slow one still runs: the slow one waits
    for a file that only the handover of the quick one's result writes."""
    release = tmp_path / "release"

    def slow() -> str:
        wait_until(release.exists, timeout=30, what="the quick call's result handed over")
        return "released"

    def arrived(index: int, result) -> None:
        if result == "quick":
            release.write_text("go")

    with Workers(2, {"slow": slow, "quick": lambda: "quick"}) as pool:
        assert pool.run([("slow", ()), ("quick", ())], arrived=arrived) == ["released", "quick"]


def test_a_helper_whose_preparation_fails_still_answers_and_the_call_that_needs_it_fails():
    """A ``prepare`` that raises (matplotlib broken, say) must not leave the caller waiting: the
    pool would fork the process again and again. The calls run; one that needs what failed says so."""
    def prepare():
        raise ImportError("no module named 'matplotlib'")

    def draw():
        raise ImportError("no module named 'matplotlib'")

    with Helper({"draw": draw, "add": lambda a, b: a + b}, prepare=prepare) as helper:
        assert helper.forked
        assert helper.submit("add", 2, 3).get(timeout=60) == 5
        with pytest.raises(ImportError, match="matplotlib"):
            helper.submit("draw").get(timeout=60)


def test_a_helper_that_cannot_be_forked_makes_its_calls_here(monkeypatch):
    """Where a pool cannot be made (no /dev/shm for its locks, as in some sandboxes), the calls run
    in this process: a report of any size needs no second process."""
    import analysis.workers as workers

    def no_pool(*args, **kwargs):
        raise OSError(38, "Function not implemented")

    monkeypatch.setattr(workers, "_forked_pool", no_pool)
    with Helper({"pid": os.getpid}) as helper:
        assert not helper.forked
        assert helper.submit("pid").get() == os.getpid()


def _killed(*_):
    os.kill(os.getpid(), signal.SIGKILL)  # as the kernel's out-of-memory killer ends a process


@pytest.mark.timeout(120)  # the defect was a wait for ever
def test_a_worker_killed_mid_call_is_an_error_not_a_wait_for_ever():
    with Workers(2, {"killed": _killed, "fine": lambda x: x}) as pool, pytest.raises(WorkerLost, match="--workers 1"):
        pool.run([("killed", ()), ("fine", (1,))])


@pytest.mark.timeout(120)
def test_a_helper_killed_mid_call_is_an_error_and_a_timed_wait_still_times_out():
    with Helper({"killed": _killed, "slow": lambda: time.sleep(5)}) as helper:
        with pytest.raises(multiprocessing.TimeoutError):
            helper.submit("slow").get(timeout=0.1)
        with pytest.raises(WorkerLost, match="out of memory"):
            helper.submit("killed").get()


@pytest.mark.timeout(300)
def test_the_report_command_says_a_worker_was_lost_and_exits(tmp_path, monkeypatch, capsys):
    """A worker of the report killed while it prices a judge: the command stops with one line
    saying so (exit 2), writes nothing and does not wait for ever."""
    import analysis.report.estimates as estimates
    from analysis.report.cli import main
    from pairlab.records import write_records
    from report_sample import synthetic_records

    parent = os.getpid()

    def worth_then_killed(*args, **kwargs):
        if os.getpid() != parent:
            _killed()
        return ((), ())

    monkeypatch.setattr(estimates, "worth_of_judges", worth_then_killed)  # before the fork: the workers see it
    votes = tmp_path / "votes.jsonl"
    write_records(votes, synthetic_records(300, seed=3))
    with pytest.raises(SystemExit) as stopped:
        main(["--votes", str(votes), "--out", str(tmp_path / "out"), "--quiet", "--workers", "2",
              "--bootstrap", "40", "--rating-bootstrap", "20"])
    assert stopped.value.code == 2
    assert "a worker process died" in capsys.readouterr().err
    assert not (tmp_path / "out" / "report.html").exists()


# A forked worker's fit, its BLAS limited as the report's fits are, and the workers forked inside
# the limit, as the report forks them; ``seen`` is what the script saw before.
_FORKED_FITS = """
from threadpoolctl import threadpool_info
from analysis.ratings.threads import one_blas_thread
from analysis.workers import Workers

def threads_after_a_fit():
    with one_blas_thread():
        numpy.linalg.solve(numpy.eye(50) + 1.0, numpy.ones(50))
    return len(os.listdir("/proc/self/task"))

with one_blas_thread():
    with Workers(2, {"fit": threads_after_a_fit}) as pool:
        in_workers = pool.run([("fit", ())] * 2)
print(json.dumps({**seen, "in_workers": in_workers,
                  "blas": [i["num_threads"] for i in threadpool_info() if i["internal_api"] == "openblas"]}))
"""

_BLAS_IN_A_WORKER = """
import json, os, sys
from analysis.report.cli import main
seen = {"imported_first": "numpy" in sys.modules}
main(sys.argv[1:])  # the report command, as run from a shell: it forks its workers and helper
import numpy
""" + _FORKED_FITS


@pytest.mark.process  # the command from its own interpreter: numpy not imported before it runs
@pytest.mark.timeout(300)
def test_the_report_command_starts_openblas_without_a_pool_that_forked_workers_start_again(tmp_path):
    """OpenBLAS started with its pool shuts it at a fork and starts it again in the child the first
    time a limit is set there: one thread a library, spinning a tenth of a second before it sleeps,
    in every worker (about a second of CPU on the 100k report). The report command starts numpy's
    OpenBLAS with one thread, so a forked worker's fit runs in its one thread."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    from pairlab.records import write_records
    from report_sample import synthetic_records

    root = Path(__file__).resolve().parents[1]
    votes = tmp_path / "votes.jsonl"
    write_records(votes, synthetic_records(300, seed=3))
    # OpenBLAS also reads these, and make test sets OMP_NUM_THREADS: the command must do without them.
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")}
    done = subprocess.run([sys.executable, "-c", _BLAS_IN_A_WORKER, "--votes", str(votes), "--out",
                           str(tmp_path / "out"), "--quiet", "--workers", "2", "--bootstrap", "40",
                           "--rating-bootstrap", "20"], cwd=root, capture_output=True, text=True,
                          env={**env, "PYTHONPATH": f"{root}{os.pathsep}{root / 'tests'}"}, timeout=280)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    assert not seen["imported_first"]  # the command module leaves numpy to main, which sets BLAS up first
    assert seen["blas"] and set(seen["blas"]) == {1}
    assert seen["in_workers"] == [1, 1]
    assert (tmp_path / "out" / "report.json").exists()


_BLAS_FROM_PYTHON = """
import json, os
import numpy  # imported before any report, as in a notebook: OpenBLAS started with its pool
seen = {}
""" + _FORKED_FITS


def _blas_script(script: str) -> dict:
    """What ``script`` printed last (JSON), run in an interpreter of its own with OpenBLAS started
    on two threads (whatever the machine's cores) and none of its other thread settings."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    env = {k: v for k, v in os.environ.items() if k not in ("GOTO_NUM_THREADS", "OMP_NUM_THREADS")}
    done = subprocess.run([sys.executable, "-c", script], cwd=root, capture_output=True, text=True,
                          env={**env, "OPENBLAS_NUM_THREADS": "2", "PYTHONPATH": str(root)}, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.process  # numpy imported first, with a pool of two threads, in an interpreter of its own
def test_a_worker_forked_inside_the_blas_limit_sets_no_limit_that_would_start_openblas_pool_again(tmp_path):
    """numpy imported before the report (the Python API in a notebook): OpenBLAS starts with its
    pool, the report limits it to one thread and forks its workers inside the limit. A worker's
    fit then finds one thread and sets nothing, so it starts no thread that spins (it started
    one a library, a tenth of a second of CPU each); the limit is lifted afterwards."""
    seen = _blas_script(_BLAS_FROM_PYTHON)
    assert seen["in_workers"] == [1, 1]
    assert seen["blas"] == [2]  # as it was before the limit


_BLAS_LOADED_LATER = """
import json
import numpy
from threadpoolctl import threadpool_info
from analysis.ratings.threads import one_blas_thread

with one_blas_thread():  # the first limit, while numpy's OpenBLAS is the only one loaded
    pass
import scipy.linalg  # scipy's own OpenBLAS, loaded after it
with one_blas_thread():
    inside = {i["filepath"]: i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}
print(json.dumps({"inside": inside,
                  "after": {i["filepath"]: i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}}))
"""


@pytest.mark.process  # numpy and scipy imported in an interpreter of its own, one after the other
def test_a_blas_loaded_after_the_first_limit_is_limited_too():
    """``one_blas_thread`` limits every BLAS loaded when it is entered: scipy's own OpenBLAS,
    loaded by an import after the first limit was set (the fits import scipy.sparse.linalg only
    when they need it), runs one thread inside it as numpy's does, and its two again after."""
    seen = _blas_script(_BLAS_LOADED_LATER)
    assert len(seen["inside"]) == 2  # numpy's and scipy's
    assert set(seen["inside"].values()) == {1}
    assert set(seen["after"].values()) == {2}

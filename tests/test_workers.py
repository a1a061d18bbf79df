"""analysis.workers: tasks over the parent's data in forked workers, results in call order."""

from __future__ import annotations

import os
import time

import pytest

from analysis.workers import Workers


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

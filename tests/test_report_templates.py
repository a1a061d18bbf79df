"""analysis.report.render's templates: written where asked, nowhere else."""

from __future__ import annotations

import pytest

from analysis.report import build_report
from pairlab.records import Record
from report_sample import synthetic_records


@pytest.fixture(scope="module")
def report():
    return build_report([Record(**r) for r in synthetic_records(60, seed=5)], n_boot=20, rating_bootstrap=10, seed=0)


def test_writing_a_report_writes_nothing_but_the_report(report, tmp_path, monkeypatch):
    """A notebook that writes a report leaves no files behind outside the folder it named
    (no cache of compiled templates in the temp directory), and writing twice gives the
    same bytes."""
    import tempfile

    from analysis.report import render

    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    render._env.cache_clear()
    first = render.write_report(report, tmp_path / "first")
    second = render.write_report(report, tmp_path / "second")
    assert list(temp.iterdir()) == []
    for kind in ("json", "md", "html"):
        assert first[kind].read_bytes() == second[kind].read_bytes()


def test_the_clustering_sentence_names_only_the_repetition_its_clusters_cover():
    from analysis.report.render import clustering_sentence

    by_pair = clustering_sentence("clustered by pair_id (999 pairs)")
    assert "clustered by pair_id (999 pairs)" in by_pair and "both orders" in by_pair
    assert "sits in several pairs" not in by_pair  # one pair a prompt: answers do not recur
    by_prompt = clustering_sentence("clustered by prompt (80 prompts)")
    assert "sits in several pairs" in by_prompt

"""analysis.report.render's templates: compiled once, kept in jinja2's bytecode cache."""

from __future__ import annotations

import pytest

from analysis.report import build_report
from pairlab.records import Record
from report_sample import synthetic_records


@pytest.fixture(scope="module")
def report():
    return build_report([Record(**r) for r in synthetic_records(60, seed=5)], n_boot=20, rating_bootstrap=10, seed=0)


def test_compiled_templates_cached_or_not_write_the_same_report(report, tmp_path, monkeypatch):
    """report.md and report.html are the same whether the templates come compiled from
    jinja2's cache (every report after the first) or are compiled afresh, and a cache that
    cannot be written costs nothing but time."""
    import jinja2

    from analysis.report import render

    def written(name):
        render._env.cache_clear()
        paths = render.write_report(report, tmp_path / name)
        return paths["md"].read_bytes(), paths["html"].read_bytes()

    cached = written("cached")  # compiled now, or loaded from a cache of earlier runs
    assert render._env().bytecode_cache is not None
    monkeypatch.setattr(jinja2.FileSystemBytecodeCache, "__init__", lambda self: (_ for _ in ()).throw(
        RuntimeError("Cannot determine safe temp directory")))
    assert written("fresh") == cached
    assert render._env().bytecode_cache is None
    monkeypatch.undo()

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("tempfile.NamedTemporaryFile", full_disk)
    monkeypatch.setattr(jinja2.FileSystemBytecodeCache, "load_bytecode", lambda self, bucket: None)
    assert written("unwritable") == cached
    render._env.cache_clear()

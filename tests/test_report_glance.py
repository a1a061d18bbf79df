"""The report read at a glance: one table opens it, figure captions name only the panels drawn,
and the heat map marks each rater's own family so it can be found on a small map."""

from __future__ import annotations

import json
import re

import pytest
from report_sample import synthetic_records

from analysis.report import build_report
from analysis.report.figures import families_figure
from analysis.report.render import write_report
from pairlab.records import Record


@pytest.fixture(scope="module")
def one_order(tmp_path_factory):
    """The synthetic sample with every judge's pair in one order only (no swapped-order panel)."""
    seen, records = set(), []
    for row in synthetic_records(400, seed=3, rich=True):
        key = (row["judge"], row["pair_id"])
        if not row["judge"].startswith("human") and key in seen:
            continue
        seen.add(key)
        records.append(Record.from_dict(row))
    report = build_report(records, n_boot=50, rating_bootstrap=10, workers=1)
    out = tmp_path_factory.mktemp("glance")
    write_report(report, out)
    return report, (out / "report.md").read_text(), (out / "report.html").read_text(), \
        json.loads((out / "report.json").read_text())


def test_the_report_opens_with_one_table_of_the_judges(one_order):
    _, md, html, doc = one_order
    opening = md.split("**judge-llama**")[0]
    header = next(line for line in opening.splitlines() if line.startswith("| judge |"))
    for column in ("agrees with people, ties counted", "Cohen's kappa", "each human vote counts", "strongest bias",
                   "what to do"):
        assert column in header
    lines = opening.splitlines()
    for block in doc["summary"]:
        row = next(line for line in lines if line.startswith(f"| {block['judge']} |"))
        assert block["advice"] in row
        if block["agreement"] is not None:
            assert f"{100 * block['agreement']['with_ties']:.0f}%" in row
            assert f"{block['agreement']['cohen_kappa']:.2f}" in row
    # In the HTML the table comes before every judge's prose.
    assert html.index('class="glance"') < html.index('<div class="answer">')


def test_a_caption_names_no_right_panel_that_is_not_drawn(one_order):
    _, _, html, _ = one_order
    caption = re.search(r'alt="position bias per rater".*?<figcaption>(.*?)</figcaption>', html, re.S)[1]
    assert not caption.startswith("Left:") and "Right:" not in caption
    assert "No swapped-order panel" in caption


def test_own_family_cells_are_hatched_and_labelled_on_the_heat_map(one_order):
    report = one_order[0]
    ax = families_figure(report).axes[0]
    own = [r for r in report.raters if r.family in set(report.family_matrix.columns)]
    assert own
    hatched = [p for p in ax.patches if p.get_hatch()]
    labels = [t for t in ax.texts if t.get_text() == "own"]
    assert len(hatched) == len(labels) == len(own)
    for rater, patch in zip(own, hatched):
        column = list(report.family_matrix.columns).index(rater.family)
        row = [r.rater for r in report.raters].index(rater.rater)
        assert patch.get_xy() == (column - 0.5, row - 0.5)

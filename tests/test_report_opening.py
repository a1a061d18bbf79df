"""The PandaLM report's opening block, every sentence true of the numbers below it (issue 26).

Built once on the shared PandaLM data (three people and two judges a pair, each pair judged in one
order, 25 of gpt-3.5-turbo's verdicts unparseable) and checked against report.json and the
report's own tables.
"""

from __future__ import annotations

import re

import pytest


@pytest.fixture(scope="module")
def written(shared_data, tmp_path_factory):
    import warnings

    from analysis.importers.columnar import read_table
    from analysis.report import build_report

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the reader's per-row remarks
        table, _ = read_table([str(shared_data / "pandalm")])
    report = build_report(table, n_boot=50, rating_bootstrap=20, sources=["pandalm"])
    out = tmp_path_factory.mktemp("pandalm")
    from analysis.report.render import write_report

    write_report(report, out)
    return report, (out / "report.md").read_text(), (out / "report.html").read_text()


def _opening(md: str) -> str:
    return md.split("## Position bias")[0]


def test_the_record_count_is_of_the_records_read_not_the_panels_pooled_verdicts(written):
    """It said 5944 usable records from the data: 4970 read (25 unparseable of 4995) plus the
    panel's 974 verdicts pooled from them."""
    report, md, html = written
    read = sum(r.n_records for r in report.raters if not r.panel_members)
    assert read == 3 * 999 + 999 + 974
    for text in (md, html):
        assert f"{read} usable records from" in text
        assert f"{report.n_records} usable records" not in text


def test_none_detected_names_only_the_biases_that_were_measured(written):
    """The panel has no display order and no family of its own: its line said "position, length and
    controlled self-family intervals all include no bias"."""
    _, md, _ = written
    panel = _opening(md).split("**panel**")[1]
    line = next(x for x in panel.splitlines() if "none detected" in x)
    assert "length interval includes no bias" in line
    assert "not measured: position, controlled self-family" in line
    # pandalm-7b's length lean, on the scale of the others and against people's own, is its strongest bias.
    pandalm = _opening(md).split("**pandalm-7b**")[1].split("**panel**")[0]
    assert "none detected" not in pandalm and "less length preference than people" in pandalm


def test_peoples_agreement_says_the_pairs_it_rests_on(written):
    """gpt-3.5-turbo's verdicts cover 974 pairs; people's agreement with each other rests on their
    999. The sentence put people's 999-pair number "on the 974 pairs"."""
    report, md, _ = written
    people = next(r for r in report.raters if r.is_human)
    gpt = _opening(md).split("**gpt-3.5-turbo**")[1].split("**pandalm-7b**")[0]
    assert people.agreement.n_items == 999
    assert re.search(r"On the 974 pairs .* people agree with each other on \d+% \\\[\d+, \d+\\\] on their 999 pairs \(Cohen's",
                     gpt)
    pandalm = _opening(md).split("**pandalm-7b**")[1].split("**panel**")[0]
    assert "On the 999 pairs" in pandalm and "on their" not in pandalm  # same pairs: nothing to add


def test_the_clustering_sentence_gives_the_reasons_these_data_hold_once(written):
    """No judge saw a pair in both orders, yet the sentence gave that as a reason; the HTML
    printed the sentence twice, in the lead and in the note under it."""
    _, md, html = written
    sentence = next(x for x in _opening(md).splitlines() if "Intervals are clustered" in x)
    assert "several people vote on one pair" in sentence and "both orders" not in sentence
    assert html.split('id="answer"')[0].count("Intervals are clustered") == 1


@pytest.mark.browser
def test_the_alpacaeval_report_fits_a_phone(shared_data, tmp_path):
    """Issue 26: at 390 px the judge's heading (weighted_alpaca_eval_gpt4_turbo, one long word)
    was 379 px wide in a 342 px block and the page scrolled sideways by 13 px."""
    import warnings

    from playwright.sync_api import sync_playwright

    from analysis.importers.columnar import read_table
    from analysis.report import build_report
    from analysis.report.render import write_report

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table, _ = read_table(sorted(str(p) for p in (shared_data / "alpaca_eval").glob("*.annotations.json")))
    write_report(build_report(table, n_boot=50, rating_bootstrap=20), tmp_path)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 390, "height": 844})
        page.goto((tmp_path / "report.html").as_uri())
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        heading = page.inner_text("#answer ~ div.answer h3")
        browser.close()
    assert heading == "weighted_alpaca_eval_gpt4_turbo"
    assert overflow <= 0, f"the page scrolls sideways by {overflow} px on a 390 px phone"


def test_the_worth_line_names_peoples_sample_as_peoples(written):
    """It read "..., the judge on all of them (195 pairs, 585 votes), the ratings are as precise
    as ...": the sample's count stood after the judge's pairs, as if it were the judge's."""
    report, md, _ = written
    worth = next(w for w in report.worth if w.judge == "gpt-3.5-turbo")
    gpt = _opening(md).split("**gpt-3.5-turbo**")[1].split("**pandalm-7b**")[0]
    assert f"the judge on all of them ({worth.n_human_pairs} pairs" not in gpt
    assert f"from people's {worth.n_human:.0f} votes on {worth.n_human_pairs} pairs" in gpt

"""The report's figures read right at a glance: no legend over a label, readable text on
every heatmap cell, no empty panel, one warning printed once; and each is drawn once."""

from __future__ import annotations

import cProfile
import dataclasses
import itertools
import pstats
import re

import pytest

from analysis.report import build_report, write_report
from analysis.report.figures import DARK, families_figure, length_figure, luminance, position_figure
from analysis.report.plotting import draw
from analysis.report.render import render_html, render_markdown
from pairlab.records import Record, make_pair_id

LONG = "smollm2-135m-instruct (generate, prometheus-relative)"


def _records() -> list[Record]:
    """Each pair in one order only, the stronger model always shown first (display order not
    randomised: every rater gets the same order warning); family "strong" wins nearly always
    (dark heatmap cells); a judge with a long name; a few answers with markdown headers."""
    out = []
    for k in range(60):
        a, b = ("big", "small") if k % 2 else ("big", "tiny")
        prompt = f"prompt {k}"
        ra = ("# Title\n" if k < 2 else "") + f"{a} answers at length {'word ' * (k % 9 + 3)}"
        rb = f"{b} says {'w ' * (k % 4 + 1)}"
        common = dict(pair_id=make_pair_id(prompt, ra, rb), prompt=prompt, model_a=a, model_b=b, response_a=ra,
                      response_b=rb, family_a="strong", family_b="weak")
        out.append(Record(**common, winner="model_a" if k % 10 else "model_b", judge="human"))
        out.append(Record(**common, winner="model_a" if k % 7 else "model_b", judge=LONG, judge_family="smollm"))
        out.append(Record(**common, winner="model_a" if k % 5 else "tie", judge="other-judge", judge_family="x"))
    return out


@pytest.fixture(scope="module")
def report():
    return build_report(_records(), n_boot=50, rating_bootstrap=20, seed=0, panel=False)


def _boxes(fig):
    draw(fig)  # as the report draws it
    return fig.canvas.get_renderer()


def test_the_length_legend_covers_no_label_of_the_next_panel(report):
    fig = length_figure(report)
    renderer = _boxes(fig)
    curves, coefs = fig.axes[:2]
    legend = curves.get_legend().get_window_extent(renderer)
    labels = [t.get_window_extent(renderer) for t in coefs.get_yticklabels() if t.get_text()]
    assert labels and not any(legend.overlaps(box) for box in labels)
    assert not legend.overlaps(curves.get_window_extent(renderer))  # nor the curves it explains


def _contrast(fg: float, bg: float) -> float:
    light, dark = max(fg, bg), min(fg, bg)
    return (light + 0.05) / (dark + 0.05)


def test_every_heatmap_cell_text_is_readable(report):
    fig = families_figure(report)
    ax = fig.axes[0]
    image = ax.get_images()[0]
    values = image.get_array()
    texts = [t for t in ax.texts if "n=" in t.get_text()]
    assert texts
    from matplotlib.colors import to_rgba

    dark_cells = 0
    for t in texts:
        col, row = (round(v) for v in t.get_position())
        cell = luminance(image.cmap(image.norm(values[row, col])))
        dark_cells += cell < DARK
        assert _contrast(luminance(to_rgba(t.get_color())), cell) >= 4.5, t.get_text()
    assert dark_cells  # the data have dark cells: white text was needed


def test_no_empty_swapped_order_panel_and_the_report_says_why(report):
    assert all(r.position.n_swapped_pairs == 0 for r in report.raters)
    assert len(position_figure(report).axes) == 1
    html = render_html(report)
    assert "No swapped-order panel: no rater saw a pair in both orders" in html


def test_a_warning_shared_by_every_rater_is_printed_once(report):
    html, md = render_html(report), render_markdown(report)
    for text in ("display order is not randomised", "differs between the two responses in only"):
        assert html.count(text) == 1 and md.count(text) == 1, text
    assert f"Warning (human, {LONG}, other-judge)" in html or f"Warning (human, other-judge, {LONG})" in html


def test_a_small_run_says_why_its_length_curve_is_empty():
    few = [r for r in _records() if r.judge == "other-judge"][:8]
    fig = length_figure(build_report(few, n_boot=20, rating_bootstrap=0, seed=0, panel=False))
    assert any("or more decisive verdicts yet" in t.get_text() for t in fig.axes[0].texts)


def test_a_small_runs_empty_length_note_is_not_struck_through_by_the_no_bias_line():
    few = [r for r in _records() if r.judge == "other-judge"][:8]
    fig = length_figure(build_report(few, n_boot=20, rating_bootstrap=0, seed=0, panel=False))
    renderer = _boxes(fig)
    curves = fig.axes[0]
    note = next(t for t in curves.texts if "or more decisive verdicts yet" in t.get_text()).get_window_extent(renderer)
    line_y = curves.transData.transform((0, 0.5))[1]
    assert not note.y0 <= line_y <= note.y1
    panel = curves.get_window_extent(renderer)
    assert panel.x0 <= note.x0 and note.x1 <= panel.x1  # and the note fits in its panel


def _calls(profile: cProfile.Profile, path_end: str, name: str) -> int:
    stats = pstats.Stats(profile).stats
    return sum(calls for (path, _, func), (_, calls, *_) in stats.items() if path.endswith(path_end) and func == name)


def test_write_report_draws_each_figure_once_and_computes_each_section_once(tmp_path):
    """Each embedded figure drawn once; the summary worked out once for report.json, report.md
    and report.html; the templates compiled once per process, not once per report."""
    short = [dataclasses.replace(r, judge="judge-b") if r.judge == LONG else r for r in _records()]
    report = build_report(short, n_boot=50, rating_bootstrap=20, seed=0, panel=False)
    write_report(report, tmp_path / "first")
    profile = cProfile.Profile()
    profile.runcall(write_report, report, tmp_path / "second")
    html = (tmp_path / "second" / "report.html").read_text()
    images = re.findall(r'src="data:image/png;base64,([^"]+)"', html)
    assert len(images) == 5  # position, length, families, ratings, leaderboards (no people's worth curve here)
    assert _calls(profile, "matplotlib/figure.py", "draw") == len(images)
    assert _calls(profile, "analysis/report/summary.py", "summary_blocks") == 1
    assert _calls(profile, "jinja2/environment.py", "compile") == 0
    assert (tmp_path / "second" / "report.md").read_text() == (tmp_path / "first" / "report.md").read_text()


def test_no_two_model_labels_overlap_on_the_pandalm_leaderboard_figure(shared_data):
    """bloom-7b and pythia-6.9b have close ratings on every panel: their labels were drawn on each other."""
    from row_reader import import_paths
    from analysis.report.leaderboard_figure import leaderboard_figure

    report = build_report(import_paths([shared_data / "pandalm"]).records, n_boot=20, rating_bootstrap=20, seed=0)
    fig = leaderboard_figure(report)
    renderer = _boxes(fig)
    panels = [ax for ax in fig.axes if ax.texts]
    assert len(panels) == 3  # gpt-3.5-turbo, pandalm-7b and the panel against people
    for ax in panels:
        labels = {t.get_text(): t.get_window_extent(renderer) for t in ax.texts}
        assert {"bloom-7b", "pythia-6.9b"} <= set(labels)
        for (a, box_a), (b, box_b) in itertools.combinations(labels.items(), 2):
            assert not box_a.overlaps(box_b), (ax.get_title(), a, b)


def test_the_report_is_rendered_from_its_estimates_not_from_verdict_rows(report, tmp_path):
    """Rendering redoes no analysis: the built report keeps no verdict rows (the variants'
    rows served their bootstraps and are dropped), and it renders all three files."""
    assert all(r.variants for r in report.raters if not r.is_human)
    assert all(v.rows is None and v.sums is None for r in report.raters for v in r.variants)
    written = write_report(report, tmp_path / "out")
    assert all(written[kind].stat().st_size > 0 for kind in ("json", "md", "html"))


@pytest.fixture(scope="module")
def long_named():
    """Judges named as they come out of a judging run, every pair judged in both orders (the
    position figure then has its swapped-order panel beside the first-position one)."""
    from report_sample import synthetic_records

    names = {"judge-llama": "prometheus-7b-v2.0-strip-reasoning",
             "judge-qwen": "prometheus-7b-v2.0-strip-reasoning (generate, prometheus-relative)"}
    records = [Record.from_dict({**r, "judge": names.get(r["judge"], r["judge"])}) for r in synthetic_records(300)]
    return build_report(records, n_boot=20, rating_bootstrap=20, seed=0, panel=False)


def test_the_position_panels_x_labels_do_not_collide_under_long_rater_names(long_named):
    """The names widen the left margin: the first panel's long x label, centred under a
    narrower panel, ran into the second panel's."""
    fig = position_figure(long_named)
    renderer = _boxes(fig)
    first, swapped = fig.axes[:2]
    left, right = (ax.xaxis.label.get_window_extent(renderer) for ax in (first, swapped))
    assert not left.overlaps(right)
    page = fig.bbox
    for box in (left, right, *(ax.title.get_window_extent(renderer) for ax in (first, swapped))):
        assert page.x0 <= box.x0 and box.x1 <= page.x1  # and every label is on the page


def test_every_figure_fits_its_page_under_long_rater_names(long_named):
    """The margins are worked out from the labels' lengths, not measured on a drawn figure:
    every title, axis and tick label, legend and point label still lands on the page."""
    from analysis.report.figures import FIGURES

    drawn = {name: fig for name, build in FIGURES.items() if (fig := build(long_named)) is not None}
    assert {"position", "length", "families", "ratings", "leaderboards"} <= set(drawn)
    for name, fig in drawn.items():
        used, page = fig.get_tightbbox(_boxes(fig)), fig.bbox_inches  # inches
        slack = 1 / fig.dpi
        assert page.x0 - slack <= used.x0 and used.x1 <= page.x1 + slack, (name, used, page)
        assert page.y0 - slack <= used.y0 and used.y1 <= page.y1 + slack, (name, used, page)


def test_a_report_on_too_few_pairs_for_intervals_draws_its_leaderboards_without_them(tmp_path):
    """Eight pairs: every rater's intervals are withheld (fewer than ten units), so the figures
    get ratings without bounds; they drew axis limits from the bounds and the report failed."""
    import json
    import random

    from analysis.report.cli import main

    rng = random.Random(1)
    votes = tmp_path / "votes.jsonl"
    with votes.open("w") as fh:
        for i in range(8):
            a, b = rng.sample(["m1", "m2", "m3", "m4"], 2)
            pair = dict(pair_id=f"p{i}", prompt=f"prompt {i}", model_a=a, model_b=b, response_a="x" * (10 + i),
                        response_b="y" * (20 - i))
            fh.write(json.dumps({**pair, "winner": rng.choice(["model_a", "model_b"]), "judge": "human"}) + "\n")
            for order in ("ab", "ba"):
                fh.write(json.dumps({**pair, "winner": rng.choice(["model_a", "model_b"]), "judge": "judge-x",
                                     "judge_type": "llm", "prob_a": rng.random(), "meta": {"order": order}}) + "\n")
    assert main(["--votes", str(votes), "--out", str(tmp_path / "out"), "--quiet"]) == 0
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    people = report["judges"]["human"]["ratings"]["bt"]
    assert people and all(row["lower"] is None for row in people)  # withheld, not drawn from nothing
    assert "<img" in (tmp_path / "out" / "report.html").read_text()

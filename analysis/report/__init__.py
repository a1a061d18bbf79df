"""The bias report: position, length and self-family bias plus agreement, for every rater.

``python -m analysis.report --votes FILE_OR_DIR... --out DIR [--humans PREFIX]`` writes
``report.html`` (self-contained, figures embedded), ``report.md`` and ``report.json``.
Human voters are pooled under the rater ``human``; every other ``judge`` value is one
rater. :func:`build_report` does the analysis and returns data; the writers render it.
"""

from analysis.report.build import BiasReport, RaterReport, Ratings, build_report, rating_frames
from analysis.report.cli import main
from analysis.report.figures import figures
from analysis.report.render import render_html, render_markdown, write_report
from analysis.report.serialise import report_json

__all__ = [
    "BiasReport",
    "RaterReport",
    "Ratings",
    "build_report",
    "figures",
    "main",
    "rating_frames",
    "render_html",
    "render_markdown",
    "report_json",
    "write_report",
]

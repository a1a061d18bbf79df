"""The bias report: position, length and self-family bias plus agreement, for every rater.

``python -m analysis.report --votes FILE_OR_DIR... --out DIR [--humans PREFIX]`` writes
``report.html`` (self-contained, figures embedded), ``report.md`` and ``report.json``.
Human voters are pooled under the rater ``human``; every other ``judge`` value is one
rater. :func:`build_report` does the analysis and returns data; the writers render it.
"""

import importlib

# Each name is imported from its module on first use, so that ``import analysis.report``
# (and ``--help``) does not import pandas, scipy and matplotlib.
_HOMES = {
    "BiasReport": "estimates",
    "RaterReport": "estimates",
    "Ratings": "estimates",
    "build_report": "estimates",
    "build_report_with_figures": "figures",
    "figures": "figures",
    "main": "cli",
    "rating_frames": "estimates",
    "render_html": "render",
    "render_markdown": "render",
    "report_json": "serialise",
    "write_report": "render",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)

"""How the report writes numbers: plain JSON values (finite or null) and fixed-digit text."""

from __future__ import annotations

import math

import numpy as np

from pairlab.records import LIKELIHOOD

__all__ = ["duration", "fmt", "fmt_ci", "num", "pct", "pct_ci", "points", "points_ci"]


def num(x):
    """``x`` as plain JSON: ints and finite floats, None for NaN or inf, lists for tuples."""
    if x is None:
        return None
    if isinstance(x, (tuple, list)):
        return [num(v) for v in x]
    if isinstance(x, (np.integer, int)) and not isinstance(x, bool):
        return int(x)
    if isinstance(x, (np.floating, float)):
        return None if not math.isfinite(float(x)) else float(x)
    if isinstance(x, np.bool_):
        return bool(x)
    return x


def fmt(x, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    return f"{x:.{digits}f}"


def fmt_ci(ci, digits: int = 3) -> str:
    """"[lo, hi]"; "[lo, ∞)" for an interval open above (upper end +inf: a judge's worth whose
    resamples people's votes alone could not rate)."""
    if ci is None:
        return "-"
    lo, hi = ci
    if hi == math.inf:
        return f"[{lo:.{digits}f}, ∞)"
    return f"[{lo:.{digits}f}, {hi:.{digits}f}]"


def pct(x: float) -> str:
    """A share in whole percent: "71%"."""
    return f"{100 * x:.0f}%"


def pct_ci(ci) -> str:
    """An interval of shares in whole percent: "[68, 73]"."""
    return f"[{100 * ci[0]:.0f}, {100 * ci[1]:.0f}]"


def points(x: float) -> str:
    """A signed share in points of 100%: "+12". An interval's end that rounds to 0 without being
    0 keeps a decimal ("-0.3"): "[-22, -0]" would read as an interval that reaches 0, no bias."""
    text = f"{100 * x:+.0f}"
    return f"{100 * x:+.1f}" if text in ("+0", "-0") and x != 0 else text


def points_ci(ci) -> str:
    """An interval in signed points of 100%: "[-22, -0.3]"."""
    return f"[{points(ci[0])}, {points(ci[1])}]"


def lean(size: float, ci) -> str:
    """A signed bias told as the size of a lean in the direction the sentence's words name
    ("toward the second-shown", "less ... than people"): "12 points [0.5, 22]" for -12 [-22, -0.5].
    The interval turns with the estimate, so the number sits inside its own interval; a size
    beside the signed interval read "24 points [-28, -20]"."""
    lo, hi = ci if size >= 0 else (-ci[1], -ci[0])
    return f"{abs(100 * size):.0f} points [{points(lo).removeprefix('+')}, {points(hi).removeprefix('+')}]"


def duration(seconds) -> str:
    """A time a reader takes in at a glance: "42 s", "74 min", "3.2 h" (not "4423.0")."""
    if seconds is None or not math.isfinite(float(seconds)):
        return "-"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def no_order_note(rater) -> str:
    """Why a rater has no position numbers (its ``position.display_order`` is False): a panel,
    a judge's likelihood scores or its order-averaged verdicts."""
    if rater.panel_members:
        return "the panel's verdict never saw a display order"
    if rater.rater.endswith(LIKELIHOOD):
        return "the judge scored each answer alone, so no display order could sway it"
    return "each verdict is the mean of both orders, so no display order could sway it"

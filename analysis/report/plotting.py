"""Shared matplotlib helpers of the report's figures: a figure on its own Agg canvas, its
panels placed in inches, text sizes read off the font, PNG bytes and data URIs, colours,
interval bars.

A figure is a ``matplotlib.figure.Figure`` on an Agg canvas, never a pyplot figure: nothing
is registered globally (nothing to close, no state left between reports) and no rcParams
change outlives a draw. No layout engine either: each figure works out its margins from the
lengths of its own labels (``text_width``, from the font's metrics, without drawing) and
places its panels with ``place``, then ``png`` draws it once. The constrained layout this
replaces measured every tick label of every panel, twice, before the draw measured them
again: more than half of the figures' time.
"""

from __future__ import annotations

import base64
import functools
import io

__all__ = ["COLORS", "DPI", "FONT", "LABEL", "PAD", "TICK", "TITLE", "TITLE_PAD", "X_TICKS", "color", "data_uri",
           "draw", "few_ticks", "intervals", "legend_height", "legend_width", "new_figure", "place", "png", "prepare",
           "set_title", "text_height", "text_width", "tick_labels", "tick_width", "wrap"]

DPI = 110
FONT = 10.0  # points: matplotlib's text, tick label and axis label size
TITLE = 12.0  # points: axes and figure titles ("large")
PT = 1 / 72  # inches in a point
TICK = 7 * PT  # a tick and its label's pad (3.5 points each): from an axis to its tick labels
LABEL = 4 * PT  # from the tick labels to the axis label
TITLE_PAD = 6 * PT  # from the top of the axes to its title
PAD = 0.1  # inches of white round the figure's edge
X_TICKS = TICK + PT * FONT + LABEL  # below an axes: its tick marks and labels, then the gap to its axis label
LEGEND_GAP = 0.1  # inches between a legend under a panel and the panel's axis label


@functools.cache
def _font(size: float):
    from matplotlib.font_manager import FontProperties

    return FontProperties(size=size)


@functools.cache
def text_width(text: str, size: float = FONT) -> float:
    """Width in inches of ``text``'s widest line at ``size`` points, read off the font (the one
    matplotlib draws with) without drawing anything."""
    from matplotlib.textpath import text_to_path

    return PT * max(text_to_path.get_text_width_height_descent(line, _font(size), ismath=False)[0]
                    for line in text.split("\n"))


def text_height(text: str, size: float = FONT) -> float:
    """Height in inches of ``text`` at ``size`` points: one em a line, 1.2 em from line to line."""
    return PT * size * (1.2 * (text.count("\n") + 1) - 0.2)


def legend_height(rows: int, size: float = FONT) -> float:
    """Height in inches of a frameless legend of ``rows`` rows of text at ``size`` points: an
    em a row, half an em between rows, 0.4 em of padding above and below."""
    return PT * size * (rows + 0.5 * (rows - 1) + 0.8) + LEGEND_GAP


def legend_width(labels, ncol: int, size: float = FONT) -> float:
    """Width in inches of a frameless legend of ``labels`` in ``ncol`` columns at ``size``
    points: each column two ems of handle, 0.8 em to its widest label; two ems between
    columns, 0.4 em of padding each side (matplotlib's defaults)."""
    import numpy as np

    # Filled column by column, as matplotlib fills them.
    columns = [col for col in np.array_split(np.array(labels, dtype=object), ncol) if len(col)]
    return sum(2.8 * size * PT + max(text_width(t, size) for t in col) for col in columns) \
        + PT * size * (2.0 * (len(columns) - 1) + 0.8)


def wrap(text: str, width: float, size: float = FONT) -> str:
    """``text`` in lines of at most ``width`` inches, broken after a comma where that does it
    ("P(first-shown wins | decisive),\n95% CI clustered by pair"), else between words (a word
    longer than ``width`` keeps a line to itself)."""
    if text_width(text, size) <= width:
        return text
    lines: list[str] = []
    for clause in text.replace(", ", ",\n").split("\n"):
        if lines and text_width(f"{lines[-1]} {clause}", size) <= width:
            lines[-1] += f" {clause}"
            continue
        lines.append("")
        for word in clause.split(" "):
            if lines[-1] and text_width(f"{lines[-1]} {word}", size) > width:
                lines.append("")
            lines[-1] = f"{lines[-1]} {word}" if lines[-1] else word
    return "\n".join(lines)


def prepare() -> None:
    """What the first figure would do before drawing: import the parts of matplotlib the figures
    use and load the font. A process that draws later (:class:`analysis.workers.Helper`) does it
    while the report is computed."""
    import matplotlib.backends.backend_agg  # noqa: F401
    import matplotlib.figure  # noqa: F401
    import matplotlib.patches  # noqa: F401
    import matplotlib.ticker  # noqa: F401
    import PIL.Image  # noqa: F401

    text_width("0")


def new_figure(size: tuple[float, float], n: int = 1, **axes):
    """``(figure, axes)``: a figure of ``size`` inches with ``n`` axes in the report's look (no
    top or right spine), each to be put in its place with ``place``; ``axes`` go to each
    ``add_axes`` (``xscale="log"``)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=size, dpi=DPI)  # the dpi it is saved at: one renderer
    FigureCanvasAgg(fig)
    made = [fig.add_axes((0.1, 0.1, 0.8, 0.8), **axes) for _ in range(n)]
    for ax in made:
        ax.spines[["top", "right"]].set_visible(False)
    return fig, made


def place(ax, left: float, bottom: float, width: float, height: float) -> None:
    """Put ``ax`` at ``left``, ``bottom`` (inches from the figure's lower left corner), ``width``
    by ``height`` inches, and its axis labels just past its tick labels: where matplotlib would
    put them, but without measuring every tick label (of this axes and its siblings) again on
    every draw to find out. Call it once the axes holds its data and ticks."""
    w, h = ax.get_figure().get_size_inches()
    ax.set_position((left / w, bottom / h, width / w, height / h))
    if ax.get_xlabel():
        ax.xaxis.set_label_coords(0.5, -X_TICKS / height)
    if ax.get_ylabel():
        ax.yaxis.set_label_coords(-(TICK + tick_width(ax.yaxis) + LABEL) / width, 0.5)


def set_title(ax, text: str, size: float = TITLE) -> None:
    """``ax.set_title`` at the axes' top edge (y=1): a title matplotlib places itself is moved
    clear of any tick labels on top, which it measures on every draw (there are none)."""
    ax.set_title(text, fontsize=size, y=1)


def few_ticks(*axes, n: int = 5) -> None:
    """At most ``n`` + 1 round-numbered ticks on each axis, however long: matplotlib's own
    choice fits in as many as the axis has room for (nine on a 4-inch axis), and each tick
    costs as much to draw as a label. Their number then does not hang on the axis's length, so
    margins worked out from them before the axes is placed stay right."""
    from matplotlib.ticker import MaxNLocator

    for axis in axes:
        axis.set_major_locator(MaxNLocator(nbins=n, steps=(1, 2, 2.5, 5, 10)))


def tick_labels(axis) -> list[str]:
    """The labels ``axis`` will draw at its major ticks, as it is now (data plotted, limits set)."""
    lo, hi = sorted(axis.get_view_interval())
    locs = axis.get_majorticklocs()
    labels = axis.get_major_formatter().format_ticks(locs)
    slack = 1e-9 * (hi - lo)
    return [label for x, label in zip(locs, labels) if lo - slack <= x <= hi + slack]


def tick_width(axis) -> float:
    """Width in inches of the widest label ``axis`` will draw at its major ticks."""
    return max((text_width(label) for label in tick_labels(axis)), default=0.0)


def draw(fig) -> None:
    """Draw ``fig`` on its canvas, text unhinted: FreeType's hinting took a third of the
    drawing time, and at 110 dpi unhinted text reads as well (its widths are then exactly
    those ``text_width`` reads off the font). rcParams are back as they were afterwards."""
    from matplotlib import rc_context

    with rc_context({"text.hinting": "no_hinting"}):
        fig.canvas.draw()


def png(fig) -> bytes:
    """The figure as PNG, drawn once. RGB: the background is opaque, and this encodes in half
    the time of RGBA, in fewer bytes; zlib level 3 packs flat colour and text nearly as small
    as level 6 in two thirds of its time."""
    from PIL import Image

    draw(fig)
    buf = io.BytesIO()
    size = fig.canvas.get_width_height(physical=True)
    image = Image.frombuffer("RGBA", size, fig.canvas.buffer_rgba(), "raw", "RGBA", 0, 1)
    image.convert("RGB").save(buf, format="png", compress_level=3, dpi=(DPI, DPI))
    return buf.getvalue()


def data_uri(image: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(image).decode("ascii")


def intervals(ax, points: list[tuple[float, float | None, tuple | None, str]], capsize: float = 4) -> None:
    """Horizontal interval bars with their estimates, ``(row, estimate, (low, high), colour)``
    each (no estimate: nothing drawn on that row), as ``errorbar`` draws them but in three
    artists for the whole panel: an ``errorbar`` call per row built and drew four."""
    shown = [(y, v, ci or (v, v), c) for y, v, ci, c in points if v is not None]
    if not shown:
        return
    ys, values, cis, colors = zip(*shown)
    # min/max: rounding can put an interval bound a hair past an estimate of exactly 0 or 1.
    lows = [min(lo, v) for v, (lo, _) in zip(values, cis)]
    highs = [max(hi, v) for v, (_, hi) in zip(values, cis)]
    ax.hlines(ys, lows, highs, colors=colors, lw=1.5)
    ax.scatter(lows + highs, ys + ys, marker="|", s=(2 * capsize) ** 2, c=colors + colors, linewidths=1)
    ax.scatter(values, ys, c=colors, s=36, zorder=3)


COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")


def color(i: int) -> str:
    return COLORS[i % len(COLORS)]

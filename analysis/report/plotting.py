"""Shared matplotlib helpers of the report's figures: a figure on its own Agg canvas, PNG
bytes and data URIs, colours, interval bars.

A figure is a ``matplotlib.figure.Figure`` on an Agg canvas, never a pyplot figure: nothing
is registered globally (nothing to close, no state left between reports) and no rcParams
change. Every layout is "constrained": matplotlib makes room for tick labels, legends and
titles, so ``png`` lays each figure out once and draws it once.
"""

from __future__ import annotations

import base64
import io

__all__ = ["COLORS", "DPI", "color", "data_uri", "errbar", "new_figure", "png"]

DPI = 110


def new_figure(figsize: tuple[float, float], nrows: int = 1, ncols: int = 1, **subplots):
    """``(figure, axes)`` as ``pyplot.subplots`` gives them, with the report's look: no top or right spine."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize, dpi=DPI, layout="constrained")  # the dpi it is saved at: one renderer
    FigureCanvasAgg(fig)
    axes = fig.subplots(nrows, ncols, **subplots)
    for ax in fig.axes:
        ax.spines[["top", "right"]].set_visible(False)
    return fig, axes


def png(fig) -> bytes:
    """The figure as PNG, drawn once: laid out (constrained), then drawn, where ``savefig``
    lays out and draws a laid-out figure twice. Where long labels do not fit (a rater named
    "smollm2-135m-instruct (generate, prometheus-relative)") the layout lets them run past the
    figure's edge: then ``savefig`` grows the image to hold them (``bbox_inches="tight"``), as
    every figure was saved before. RGB at zlib level 3: the background is opaque, and this
    encodes in half the time of RGBA at level 6, in fewer bytes."""
    from PIL import Image

    fig.get_layout_engine().execute(fig)
    fig.set_layout_engine("none")  # laid out once: drawing must not lay it out again
    buf = io.BytesIO()
    if _spills(fig):
        fig.savefig(buf, format="png", dpi=DPI, bbox_inches="tight", pil_kwargs={"compress_level": 3})
        return buf.getvalue()
    fig.canvas.draw()
    image = Image.frombuffer("RGBA", fig.canvas.get_width_height(physical=True), fig.canvas.buffer_rgba(), "raw", "RGBA", 0, 1)
    image.convert("RGB").save(buf, format="png", compress_level=3, dpi=(DPI, DPI))
    return buf.getvalue()


def _spills(fig) -> bool:
    """Whether a title or axis label runs past the figure's edge. The constrained layout fits
    everything else, but leaves out a title's width and an axis label's length; checking those
    few texts costs a fiftieth of ``get_tightbbox`` (and agrees with it on every report we have)."""
    renderer, page = fig.canvas.get_renderer(), fig.bbox
    for ax in fig.axes:
        for text in (ax.title, ax.xaxis.label, ax.yaxis.label):
            if text.get_visible() and text.get_text():
                box = text.get_window_extent(renderer)
                if box.x0 < page.x0 or box.y0 < page.y0 or box.x1 > page.x1 or box.y1 > page.y1:
                    return True
    return False


def data_uri(image: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(image).decode("ascii")


def errbar(ax, y, value, ci, color, label=None, marker="o"):
    if value is None:
        return
    lo, hi = ci if ci else (value, value)
    # max(): rounding can put an interval bound a hair past an estimate of exactly 0 or 1.
    ax.errorbar([value], [y], xerr=[[max(0.0, value - lo)], [max(0.0, hi - value)]], fmt=marker, color=color, capsize=4, label=label)


COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")


def color(i: int) -> str:
    return COLORS[i % len(COLORS)]

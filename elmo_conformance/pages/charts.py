"""The margins chart (spec §10): one point per series (adapter-dtype) and quantity, on a log scale
with the tolerance at 1.0, drawn by matplotlib as SVG to inline in a page (no pyplot, no display,
no network: the text is SVG text, drawn in the page's own fonts)."""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence

MARKERS = ("o", "s", "D", "^", "v", "P", "X", "<", ">", "h")
OVER = "#c62828"


def _limits(values: Sequence[float]) -> tuple[float, float, float]:
    """(zero, low, high): where a margin of 0 is drawn, the smallest decade shown, the right edge."""
    positive = [v for v in values if v > 0 and math.isfinite(v)]
    low = 10.0 ** (math.floor(math.log10(min(positive)))) if positive else 1e-6
    high = max(10.0, 10.0 ** (math.ceil(math.log10(max(positive))) + 0.5) if positive else 10.0)
    low = max(min(low, 0.1), 1e-300)
    return low / 10.0**1.5, low, high


def _ticks(zero: float, low: float, high: float) -> tuple[list[float], list[str]]:
    """A tick at every decade from `low` (every second or third when there are many) and one
    labelled 0 where a margin of 0 is drawn."""
    first, last = round(math.log10(low)), math.floor(math.log10(high))
    step = max(1, math.ceil((last - first + 1) / 10))
    decades = [10.0**k for k in range(last, first - 1, -step)][::-1]
    return [zero, *decades], ["0", *(f"{x:g}" for x in decades)]


def margins_svg(
    series: Sequence[tuple[str, Mapping[str, float | None]]],
    quantities: Sequence[str],
    salt: str = "margins",
) -> str:
    """An inline <svg> of `series` (label, {quantity: margin, None when not finite}) over
    `quantities` (rows, top to bottom). A margin of 0 is drawn hollow at a tick labelled 0 left of
    a dotted break in the axis; one that is not finite as a cross at the right edge."""
    import matplotlib
    from matplotlib.figure import Figure
    from matplotlib.ticker import NullLocator

    rows = list(quantities)
    present = [v for _, values in series for v in values.values() if v is not None]
    zero, low, high = _limits(present)
    n = max(len(series), 1)
    band = 0.7
    columns = min(n, 3)
    legend_rows = math.ceil(len(series) / columns) if series else 0
    plot = 0.2 * max(len(rows), 1) * max(1.5, min(n, 12) * 0.45)  # inches for the rows
    below = 0.5 + 0.17 * legend_rows  # the x label, then the legend
    height, width = 0.2 + plot + below, 9.5
    left = 0.25 + 0.065 * max((len(q) for q in rows), default=4)
    rc = {
        "svg.fonttype": "none",
        "svg.hashsalt": salt,
        "text.parse_math": False,
        "font.size": 9,
        "font.family": "sans-serif",
        "font.sans-serif": ["DejaVu Sans"],
    }
    with matplotlib.rc_context(rc):  # type: ignore[arg-type]  # rc is a plain dict of rcParams names
        fig = Figure(figsize=(width, height))  # laid out by hand: constrained layout draws twice
        ax = fig.add_axes((left / width, below / height, 1 - (left + 0.2) / width, plot / height))
        ax.set_xscale("log")
        ax.set_xlim(zero / 3, high)
        ax.set_ylim(len(rows) - 0.5, -0.5)
        ax.axvspan(1.0, high, color=OVER, alpha=0.07, lw=0)
        ax.axvline(1.0, color=OVER, lw=1.2, ls="--")
        ax.text(0.9, -0.45, "tolerance: fails beyond 1", color=OVER, ha="right", va="top", fontsize=8)
        for i in range(1, len(rows)):
            ax.axhline(i - 0.5, color="#dddddd", lw=0.6)
        colours = matplotlib.colormaps["tab10" if n <= 10 else "tab20"]
        for k, (label, values) in enumerate(series):
            offset = (k - (n - 1) / 2) * (band / n) if n > 1 else 0.0
            colour = colours(k % colours.N)
            marker = MARKERS[k % len(MARKERS)]
            xs, ys, hollow_x, hollow_y, crosses = [], [], [], [], []
            for i, quantity in enumerate(rows):
                if quantity not in values:
                    continue
                value = values[quantity]
                if value is None or not math.isfinite(value):
                    crosses.append(i + offset)
                elif value == 0:
                    hollow_x.append(zero)
                    hollow_y.append(i + offset)
                else:
                    xs.append(value)
                    ys.append(i + offset)
            edges = ["black" if x > 1 else colour for x in xs]
            ax.scatter(
                xs, ys, s=30, marker=marker, color=colour, edgecolors=edges, linewidths=0.8, label=label, zorder=3
            )
            if hollow_x:
                ax.scatter(hollow_x, hollow_y, s=30, marker=marker, facecolors="none", edgecolors=colour, zorder=3)
            if crosses:
                ax.scatter(
                    [high / 1.6] * len(crosses), crosses, s=60, marker="X", color=OVER, edgecolors="black", zorder=3
                )
        ax.set_yticks(range(len(rows)), rows)
        ax.set_xticks(*_ticks(zero, low, high))
        ax.xaxis.set_minor_locator(NullLocator())  # a log axis's minor ticks cost more than the rest
        ax.axvline(math.sqrt(zero * low), color="#999999", lw=0.8, ls=":")  # the axis is broken here
        ax.set_xlabel(
            "margin = max |a − e| / (atol + rtol |e|), log scale (hollow: exactly 0; ✕ at the right: not finite)"
        )
        ax.grid(axis="x", which="major", color="#eeeeee", lw=0.6)
        ax.set_axisbelow(True)
        if series:
            fig.legend(loc="lower center", bbox_to_anchor=(0.5, 0.0), ncols=columns, frameon=False, fontsize=8)
        out = io.StringIO()
        fig.savefig(out, format="svg", metadata={"Date": None})
    svg = out.getvalue()
    return svg[svg.index("<svg") :]

"""Server-rendered SVG plots of a study's results: Figures 2 and 4 of Lombardo et al.

Pure functions from numbers to SVG text: the standard library and numpy only, no Django, no I/O.
Every text that reaches the SVG (titles, labels, legends) is escaped. Non-finite values are not
drawn. Ticks carry their value in ``data-value`` so that a reader (or a test) can map pixels back
to data.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from xml.sax.saxutils import escape, quoteattr

import numpy as np

__all__ = [
    "PALETTE",
    "Interval",
    "Line",
    "Series",
    "intervals_svg",
    "nice_ticks",
    "rescaling_svg",
    "scatter_svg",
    "scores_by_rank_svg",
]

# Paul Tol's "muted" qualitative scheme: distinguishable with the common colour-vision deficiencies.
PALETTE = ("#332288", "#88CCEE", "#44AA99", "#117733", "#999933", "#DDCC77", "#CC6677", "#882255", "#AA4499")
FINAL_COLOR = "#000000"
LINE_COLOR = "#0072B2"

WIDTH, HEIGHT = 760, 440
MARGIN_LEFT, MARGIN_RIGHT, MARGIN_TOP, MARGIN_BOTTOM = 64, 200, 40, 56
FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif"


@dataclass(frozen=True)
class Series:
    """Points of one colour with one legend entry."""

    label: str
    x: Sequence[float]
    y: Sequence[float]
    color: str
    radius: float = 2.5


@dataclass(frozen=True)
class Line:
    """A straight segment from (x1, y1) to (x2, y2) in data coordinates, with a legend entry."""

    label: str
    x1: float
    y1: float
    x2: float
    y2: float
    color: str = LINE_COLOR


@dataclass(frozen=True)
class Interval:
    """One row of an interval plot: a value, its interval, the group it belongs to, and a reference mark."""

    label: str
    value: float | None
    low: float | None
    high: float | None
    group: int
    reference: float | None = None


def nice_ticks(low: float, high: float, target: int = 5) -> tuple[float, float, list[float]]:
    """Round tick values covering [low, high]: the finest step of 1, 2 or 5 × 10^n that gives at most
    ``target`` + 2 intervals.

    Returns (axis low, axis high, ticks): the axis is widened to the outer ticks.
    """
    if not (math.isfinite(low) and math.isfinite(high)):
        raise ValueError("axis limits must be finite")
    if high < low:
        low, high = high, low
    if high == low:
        low, high = low - 0.5, high + 0.5
    magnitude = 10.0 ** math.floor(math.log10((high - low) / max(target, 1)))
    for multiple in (1, 2, 5, 10):
        step = multiple * magnitude
        first = math.floor(low / step + 1e-9)
        last = math.ceil(high / step - 1e-9)
        if last - first <= target + 2:
            break
    ticks = [_clean(i * step) for i in range(first, last + 1)]
    return ticks[0], ticks[-1], ticks


def _clean(value: float) -> float:
    """Drop the floating-point dust of i·step (0.30000000000000004 → 0.3)."""
    return float(f"{value:.12g}")


def _tick_label(value: float, ticks: Sequence[float]) -> str:
    step = abs(ticks[1] - ticks[0]) if len(ticks) > 1 else 1.0
    decimals = max(0, -math.floor(math.log10(step) + 1e-9))
    text = f"{value:.{decimals}f}"
    return "0" if text.strip("-0.") == "" else text


def _number(value: float) -> str:
    return f"{value:.2f}"


def _text(x: float, y: float, content: str, **attributes) -> str:
    extra = "".join(
        f" {name.replace('_', '-')}={quoteattr(str(value))}" for name, value in attributes.items()
    )
    return f'<text x="{_number(x)}" y="{_number(y)}"{extra}>{escape(content)}</text>'


def scatter_svg(
    *,
    title: str,
    x_label: str,
    y_label: str,
    series: Sequence[Series],
    lines: Sequence[Line] = (),
    x_limits: tuple[float, float] | None = None,
    y_limits: tuple[float, float] | None = None,
    width: int = WIDTH,
    height: int = HEIGHT,
) -> str:
    """A scatter plot with axes, ticks, axis labels, a title and a legend, as an SVG document.

    The axes span the data (and ``x_limits``/``y_limits`` when given, which the data may widen) and
    the lines, rounded out to the ticks. Points with a non-finite coordinate are left out.
    """
    points = []
    for s in series:
        x = np.asarray(s.x, dtype=np.float64)
        y = np.asarray(s.y, dtype=np.float64)
        if x.shape != y.shape:
            raise ValueError(f"series {s.label!r}: x and y differ in length ({x.size} and {y.size})")
        keep = np.isfinite(x) & np.isfinite(y)
        points.append((s, x[keep], y[keep]))

    def extent(values: list[np.ndarray], limits: tuple[float, float] | None) -> tuple[float, float]:
        values = [v for v in values if v.size]
        bounds = list(limits or ())
        if values:
            joined = np.concatenate(values)
            bounds += [float(joined.min()), float(joined.max())]
        if not bounds:
            bounds = [0.0, 1.0]
        return min(bounds), max(bounds)

    line_x = [np.asarray([ln.x1, ln.x2], dtype=np.float64) for ln in lines]
    line_y = [np.asarray([ln.y1, ln.y2], dtype=np.float64) for ln in lines]
    x_low, x_high, x_ticks = nice_ticks(*extent([p[1] for p in points] + line_x, x_limits))
    y_low, y_high, y_ticks = nice_ticks(*extent([p[2] for p in points] + line_y, y_limits))

    left, right = MARGIN_LEFT, width - MARGIN_RIGHT
    top, bottom = MARGIN_TOP, height - MARGIN_BOTTOM

    def px(value):
        return left + (np.asarray(value, dtype=np.float64) - x_low) / (x_high - x_low) * (right - left)

    def py(value):
        return bottom - (np.asarray(value, dtype=np.float64) - y_low) / (y_high - y_low) * (bottom - top)

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="plot" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" font-family={quoteattr(FONT)} font-size="12">',
        f"<title>{escape(title)}</title>",
        f'<rect class="frame" x="{left}" y="{top}" width="{right - left}" height="{bottom - top}" '
        'fill="#ffffff" stroke="#444444"/>',
        _text((left + right) / 2, top - 14, title, class_="title", text_anchor="middle", font_size="14"),
    ]
    for value in x_ticks:
        x = float(px(value))
        out.append(
            f'<g class="tick tick-x" data-value="{value!r}">'
            f'<line x1="{_number(x)}" y1="{bottom}" x2="{_number(x)}" y2="{bottom + 5}" stroke="#444444"/>'
            f'<line x1="{_number(x)}" y1="{top}" x2="{_number(x)}" y2="{bottom}" stroke="#e5e5e5"/>'
            + _text(x, bottom + 18, _tick_label(value, x_ticks), text_anchor="middle")
            + "</g>"
        )
    for value in y_ticks:
        y = float(py(value))
        out.append(
            f'<g class="tick tick-y" data-value="{value!r}">'
            f'<line x1="{left - 5}" y1="{_number(y)}" x2="{left}" y2="{_number(y)}" stroke="#444444"/>'
            f'<line x1="{left}" y1="{_number(y)}" x2="{right}" y2="{_number(y)}" stroke="#e5e5e5"/>'
            + _text(left - 8, y + 4, _tick_label(value, y_ticks), text_anchor="end")
            + "</g>"
        )
    out.append(_text((left + right) / 2, height - 14, x_label, class_="axis-label x", text_anchor="middle"))
    y_middle = (top + bottom) / 2
    out.append(
        _text(
            16,
            y_middle,
            y_label,
            class_="axis-label y",
            text_anchor="middle",
            transform=f"rotate(-90 16 {_number(y_middle)})",
        )
    )

    for number, (s, x, y) in enumerate(points):
        circles = "".join(
            f'<circle cx="{cx:.2f}" cy="{cy:.2f}" r="{s.radius}"/>'
            for cx, cy in zip(px(x), py(y), strict=True)
        )
        out.append(
            f'<g class="series" data-series="{number}" data-label={quoteattr(s.label)} '
            f'fill={quoteattr(s.color)} fill-opacity="0.75">{circles}</g>'
        )
    for ln in lines:
        out.append(
            f'<line class="fit" x1="{float(px(ln.x1)):.2f}" y1="{float(py(ln.y1)):.2f}" '
            f'x2="{float(px(ln.x2)):.2f}" y2="{float(py(ln.y2)):.2f}" '
            f'stroke={quoteattr(ln.color)} stroke-width="2"/>'
        )

    legend_x, legend_y = right + 16, top + 6
    out.append('<g class="legend">')
    for number, (s, _, _) in enumerate(points):
        y = legend_y + 18 * number
        out.append(f'<circle cx="{legend_x + 6}" cy="{y}" r="4" fill={quoteattr(s.color)}/>')
        out.append(_text(legend_x + 16, y + 4, f"{s.label}"))
    for number, ln in enumerate(lines, start=len(points)):
        y = legend_y + 18 * number
        out.append(
            f'<line x1="{legend_x}" y1="{y}" x2="{legend_x + 12}" y2="{y}" '
            f'stroke={quoteattr(ln.color)} stroke-width="2"/>'
        )
        out.append(_text(legend_x + 16, y + 4, ln.label))
    out.append("</g>")
    if not any(x.size for _, x, _ in points):
        out.append(_text((left + right) / 2, y_middle, "no data yet", class_="empty", text_anchor="middle"))
    out.append("</svg>")
    return "\n".join(out)


def rescaling_svg(*, ballot_number: int, win_ratio, previous_score, rescale_slope: float | None) -> str:
    """Figure 2 of Lombardo et al. for ballot k ≥ 2: x_i(k) (across) against ȳ_i(k-1) (up).

    The fitted line of Eq. 6, y = 1 - b̂(k) + b̂(k)·x, is drawn from x = 0 to x = 1 (through (1, 1));
    the legend gives b̂(k).
    """
    k = ballot_number
    x = np.asarray(win_ratio, dtype=np.float64)
    lines = []
    if rescale_slope is not None and math.isfinite(rescale_slope):
        b = float(rescale_slope)
        lines.append(Line(label=f"y = 1 − b̂ + b̂·x, b̂ = {b:.4f}", x1=0.0, y1=1.0 - b, x2=1.0, y2=1.0))
    return scatter_svg(
        title=f"Ballot {k}: x({k}) against ȳ({k - 1})",
        x_label=f"win ratio x({k}) in ballot {k}",
        y_label=f"score ȳ({k - 1}) after ballot {k - 1}",
        series=[
            Series(
                label=f"items of ballot {k} ({int(np.isfinite(x).sum())})",
                x=x,
                y=previous_score,
                color=PALETTE[0],
                radius=3.0,
            )
        ],
        lines=lines,
        x_limits=(0.0, 1.0),
        y_limits=(0.0, 1.0),
    )


def scores_by_rank_svg(*, rank, win_ratio, ballot_numbers: Sequence[int], score, final: bool = True) -> str:
    """Figure 4 of Lombardo et al.: x_i(k) of every ballot and ȳ_i against the rank of item i.

    ``win_ratio`` has one row per item and one column per entry of ``ballot_numbers``; ``final`` says
    whether the ranks and ȳ are the final ones or those of a study still running.
    """
    rank = np.asarray(rank, dtype=np.float64)
    win_ratio = np.asarray(win_ratio, dtype=np.float64).reshape(rank.size, len(ballot_numbers))
    series = []
    for column, k in enumerate(ballot_numbers):
        values = win_ratio[:, column]
        present = np.isfinite(values)
        if present.any():
            series.append(
                Series(
                    label=f"x({k}), ballot {k} ({int(present.sum())} items)",
                    x=rank[present],
                    y=values[present],
                    color=PALETTE[column % len(PALETTE)],
                    radius=2.0,
                )
            )
    score = np.asarray(score, dtype=np.float64)
    present = np.isfinite(score)
    series.append(
        Series(
            label="final ȳ" if final else "ȳ so far",
            x=rank[present],
            y=score[present],
            color=FINAL_COLOR,
            radius=1.6,
        )
    )
    which = "final ranking" if final else "current ranking"
    return scatter_svg(
        title="Scores by ballot against rank" if final else "Scores by ballot against rank (so far)",
        x_label=f"rank in the {which} (1 = most related)",
        y_label="win ratio x(k) and score ȳ",
        series=series,
        x_limits=(1.0, max(float(rank.max()) if rank.size else 1.0, 1.0)),
        y_limits=(0.0, 1.0),
    )


INTERVAL_ROW = 28
INTERVAL_LABEL_WIDTH = 220
INTERVAL_LABEL_CHARACTERS = 32
GROUP_FILL = "#E8ECF7"
REFERENCE_COLOR = "#777777"
LEGEND_LINE = 20  # px between the legend's entries, one under the other


def intervals_svg(
    *,
    title: str,
    x_label: str,
    rows: Sequence[Interval],
    reference_label: str = "",
    x_limits: tuple[float, float] | None = None,
    width: int = WIDTH,
    interval_label: str = "value and 95% interval",
    group_legend: bool = True,
) -> str:
    """Each row's value (a dot) with its interval (a bar), one row under the other, as an SVG document
    (the interval plot of Chatbot Arena's leaderboard).

    ``interval_label`` names the dot and bar in the legend; ``group_legend=False`` leaves the shaded
    band out of the legend (for plots whose rows are never grouped).

    Consecutive rows with the same ``group`` that are more than one are drawn on one shaded band,
    labelled "cannot be told apart". A row's ``reference`` (a chance level, say) is a grey tick, named
    in the legend by ``reference_label``. A row without a finite value says "not measured". Every row is
    a ``<g class="interval-row">`` carrying its label, value, bounds and group in ``data-`` attributes.
    """
    finite_values = [
        v
        for row in rows
        for v in (row.value, row.low, row.high, row.reference)
        if v is not None and math.isfinite(v)
    ]
    bounds = [*finite_values, *(x_limits or ())] or [0.0, 1.0]
    x_low, x_high, x_ticks = nice_ticks(min(bounds), max(bounds))

    left, right = INTERVAL_LABEL_WIDTH, width - 24
    top = MARGIN_TOP + 8
    bottom = top + INTERVAL_ROW * max(len(rows), 1)
    legend_y = bottom + 48
    height = legend_y + 16 + LEGEND_LINE * (bool(reference_label) + group_legend)

    def px(value: float) -> float:
        return left + (value - x_low) / (x_high - x_low) * (right - left)

    def row_middle(index: int) -> float:
        return top + INTERVAL_ROW * index + INTERVAL_ROW / 2

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="plot intervals" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" font-family={quoteattr(FONT)} font-size="12">',
        f"<title>{escape(title)}</title>",
        _text(
            (left + right) / 2, MARGIN_TOP - 14, title, class_="title", text_anchor="middle", font_size="14"
        ),
    ]
    start = 0
    for index in range(1, len(rows) + 1):  # the shaded bands of groups of two or more
        if index < len(rows) and rows[index].group == rows[start].group:
            continue
        if index - start >= 2:
            band_top = top + INTERVAL_ROW * start + 2
            out.append(
                f'<g class="tie-group" data-group="{rows[start].group}" data-size="{index - start}">'
                f'<rect x="4" y="{_number(band_top)}" width="{right - 4}" '
                f'height="{_number(INTERVAL_ROW * (index - start) - 4)}" rx="4" fill="{GROUP_FILL}"/>'
                + _text(right - 4, band_top + 11, "cannot be told apart", text_anchor="end", font_size="10")
                + "</g>"
            )
        start = index
    for value in x_ticks:
        x = px(value)
        out.append(
            f'<g class="tick tick-x" data-value="{value!r}">'
            f'<line x1="{_number(x)}" y1="{top}" x2="{_number(x)}" y2="{bottom}" stroke="#d0d0d0"/>'
            f'<line x1="{_number(x)}" y1="{bottom}" x2="{_number(x)}" y2="{bottom + 5}" stroke="#444444"/>'
            + _text(x, bottom + 18, _tick_label(value, x_ticks), text_anchor="middle")
            + "</g>"
        )
    out.append(f'<line x1="{left}" y1="{bottom}" x2="{right}" y2="{bottom}" stroke="#444444"/>')
    out.append(_text((left + right) / 2, bottom + 36, x_label, class_="axis-label x", text_anchor="middle"))

    for index, row in enumerate(rows):
        y = row_middle(index)
        label = row.label
        if len(label) > INTERVAL_LABEL_CHARACTERS:
            label = label[: INTERVAL_LABEL_CHARACTERS - 1] + "…"
        measured = row.value is not None and math.isfinite(row.value)
        attributes = {
            "data-label": row.label,
            "data-group": row.group,
            "data-value": repr(float(row.value)) if measured else "",
            "data-low": repr(float(row.low)) if row.low is not None else "",
            "data-high": repr(float(row.high)) if row.high is not None else "",
        }
        parts = [
            '<g class="interval-row"'
            + "".join(f" {name}={quoteattr(str(value))}" for name, value in attributes.items())
            + ">",
            f"<title>{escape(row.label)}</title>",
            _text(left - 10, y + 4, label, class_="row-label", text_anchor="end"),
        ]
        if row.reference is not None and math.isfinite(row.reference):
            x = px(row.reference)
            parts.append(
                f'<line class="reference" x1="{_number(x)}" y1="{_number(y - 8)}" x2="{_number(x)}" '
                f'y2="{_number(y + 8)}" stroke="{REFERENCE_COLOR}" stroke-width="2"/>'
            )
        if (
            row.low is not None
            and row.high is not None
            and math.isfinite(row.low)
            and math.isfinite(row.high)
        ):
            parts.append(
                f'<line class="interval" x1="{_number(px(row.low))}" y1="{_number(y)}" '
                f'x2="{_number(px(row.high))}" y2="{_number(y)}" stroke="{PALETTE[0]}" stroke-width="3"/>'
            )
        if measured:
            parts.append(
                f'<circle class="value" cx="{_number(px(row.value))}" cy="{_number(y)}" r="5" fill="{PALETTE[0]}"/>'
            )
        else:
            parts.append(_text(left + 8, y + 4, "not measured", class_="empty"))
        parts.append("</g>")
        out.append("".join(parts))

    # One legend entry per line: labels of any length never run into one another.
    out.append('<g class="legend">')
    out.append(f'<circle cx="{left + 6}" cy="{legend_y}" r="5" fill="{PALETTE[0]}"/>')
    out.append(
        f'<line x1="{left + 14}" y1="{legend_y}" x2="{left + 40}" y2="{legend_y}" stroke="{PALETTE[0]}" '
        'stroke-width="3"/>'
    )
    out.append(_text(left + 46, legend_y + 4, interval_label))
    entry_y = legend_y
    if reference_label:
        entry_y += LEGEND_LINE
        x = left + 27
        out.append(
            f'<line x1="{x}" y1="{entry_y - 8}" x2="{x}" y2="{entry_y + 8}" stroke="{REFERENCE_COLOR}" '
            'stroke-width="2"/>'
        )
        out.append(_text(left + 46, entry_y + 4, reference_label))
    if group_legend:
        entry_y += LEGEND_LINE
        out.append(
            f'<rect x="{left + 16}" y="{entry_y - 7}" width="22" height="14" rx="3" fill="{GROUP_FILL}"/>'
        )
        out.append(_text(left + 46, entry_y + 4, "cannot be told apart"))
    out.append("</g>")
    out.append("</svg>")
    return "\n".join(out)

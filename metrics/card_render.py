"""The instrument card's document rendered: as a Markdown datasheet, and with its figures drawn as SVG
for the page (``templates/metrics/card.html`` writes the rest of the HTML from the same document).

PURE module: the standard library, numpy and the pure SVG plots of ``scoring.plots``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import numpy as np

from metrics.card import (
    CardDocument,
    Facts,
    Figure,
    Items,
    Paragraph,
    Quote,
    Table,
    card_document,
    finite,
    fixed,
    number,
    percent,
)
from scoring.plots import PALETTE, Line, Series, scatter_svg

__all__ = [
    "card_markdown",
    "card_page_document",
    "precision_points",
    "precision_svg",
    "resolution_points",
    "resolution_svg",
]

CURVE_POINTS = 600  # the resolution plot thins longer curves to this many points


def card_page_document(card: Mapping, *, item_labels: Mapping[int, str] | None = None) -> CardDocument:
    """The card's document with its figures drawn (SVG) and their points as tables, for the page."""
    document = card_document(card, item_labels=item_labels)
    drawn = tuple(
        replace(
            section,
            blocks=tuple(
                replace(block, svg=FIGURES[block.name](card), points=FIGURE_POINTS[block.name](card))
                if isinstance(block, Figure)
                else block
                for block in section.blocks
            ),
        )
        for section in document.sections
    )
    return replace(document, sections=drawn)


# --- plots -----------------------------------------------------------------------------------------


def _precision_points(card: Mapping) -> tuple[np.ndarray, np.ndarray]:
    """Each item's score ȳ and its SD, as the precision plot draws them (NaN where not measured)."""
    items = (card.get("precision") or {}).get("items") or []
    score = np.array([finite(row.get("score")) for row in items], dtype=np.float64)
    sd = np.array([finite(row.get("sd")) for row in items], dtype=np.float64)
    return score, sd


def precision_points(card: Mapping) -> Table:
    """The precision plot's points as a table, by score: its text alternative."""
    score, sd = _precision_points(card)
    order = np.argsort(-np.nan_to_num(score, nan=-np.inf), kind="stable")
    return Table(
        header=("score ȳ", "SD of ȳ (bootstrap)"),
        rows=tuple((fixed(score[i], 4), number(sd[i])) for i in order),
        numeric=(True, True),
        caption="The plotted points: each item's score and its SD, highest score first.",
        collapsed=True,
    )


def precision_svg(card: Mapping) -> str:
    """SD of ȳ (up) against ȳ (across) for every item, with the mean SD as a line (Welty Figure 1)."""
    score, sd = _precision_points(card)
    lines = []
    mean_sd = finite((card.get("precision") or {}).get("mean_sd"))
    if mean_sd is not None:
        lines.append(Line(label=f"mean SD = {number(mean_sd)}", x1=0.0, y1=mean_sd, x2=1.0, y2=mean_sd))
    measured = int((np.isfinite(score) & np.isfinite(sd)).sum())
    return scatter_svg(
        title="Precision: SD of each item's score",
        x_label="score ȳ",
        y_label="SD of ȳ (bootstrap)",
        series=[Series(label=f"items ({measured})", x=score, y=sd, color=PALETTE[0], radius=2.5)],
        lines=lines,
        x_limits=(0.0, 1.0),
        y_limits=(0.0, max(float(np.nanmax(sd)) if measured else 0.1, 0.05)),
    )


def _resolution_points(card: Mapping) -> tuple[np.ndarray, np.ndarray]:
    """The agreement curve's thresholds t and agreements, thinned to CURVE_POINTS, as the plot draws them."""
    curve = (card.get("resolution") or {}).get("curve") or {}
    threshold = np.asarray(curve.get("threshold") or [], dtype=np.float64)
    agreement = np.array([finite(v) for v in curve.get("agreement") or []], dtype=np.float64)
    if threshold.size > CURVE_POINTS:  # keep the first and last points, thin evenly in between
        keep = np.unique(np.linspace(0, threshold.size - 1, CURVE_POINTS).round().astype(np.int64))
        threshold, agreement = threshold[keep], agreement[keep]
    return threshold, agreement


def resolution_points(card: Mapping) -> Table:
    """The resolution plot's points as a table, by threshold: its text alternative."""
    threshold, agreement = _resolution_points(card)
    return Table(
        header=("threshold t", "agreement"),
        rows=tuple((number(t), percent(a)) for t, a in zip(threshold, agreement, strict=True)),
        numeric=(True, True),
        caption="The plotted points: the agreement at each threshold t.",
        collapsed=True,
    )


def resolution_svg(card: Mapping) -> str:
    """Agreement (up) against the score-difference threshold t (across), with the 95% line."""
    resolved = card.get("resolution") or {}
    threshold, agreement = _resolution_points(card)
    target = finite(resolved.get("target")) or 0.95
    right = float(threshold.max()) if threshold.size else 1.0
    lines = [
        Line(label=f"{percent(target, 0)} agreement", x1=0.0, y1=target, x2=right, y2=target, color="#CC6677")
    ]
    value = finite(resolved.get("resolution"))
    if value is not None:
        lines.append(
            Line(label=f"resolution = {number(value)}", x1=value, y1=0.0, x2=value, y2=1.0, color="#117733")
        )
    return scatter_svg(
        title="Resolution: agreement against score difference",
        x_label="threshold t: compared pairs with |Δȳ| ≥ t",
        y_label="agreement of vote majority and score order",
        series=[
            Series(
                label=f"agreement ({threshold.size} points)",
                x=threshold,
                y=agreement,
                color=PALETTE[0],
                radius=2.0,
            )
        ],
        lines=lines,
        x_limits=(0.0, right),
        y_limits=(0.0, 1.0),
    )


FIGURES = {"precision": precision_svg, "resolution": resolution_svg}
FIGURE_POINTS = {"precision": precision_points, "resolution": resolution_points}


# --- Markdown --------------------------------------------------------------------------------------


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _markdown_block(block) -> list[str]:
    if isinstance(block, Paragraph):
        return [block.text]
    if isinstance(block, Quote):
        lines = [f"{block.label}:"] if block.label else []
        return lines + ["\n".join("> " + line if line else ">" for line in block.text.splitlines() or [""])]
    if isinstance(block, Facts):
        return ["\n".join(f"- **{label}**: {value}" for label, value in block.rows)]
    if isinstance(block, Items):
        return ["\n".join(f"- {entry}" for entry in block.entries)]
    if isinstance(block, Table):
        lines = ["| " + " | ".join(_cell(h) for h in block.header) + " |"]
        lines.append("|" + "|".join("---:" if numeric else "---" for numeric in block.numeric) + "|")
        lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in block.rows]
        return ([f"*{block.caption}*"] if block.caption else []) + ["\n".join(lines)]
    if isinstance(block, Figure):
        return [f"*Figure on the card's web page: {block.caption}*"]
    raise TypeError(f"unknown block {block!r}")


def card_markdown(
    card: Mapping,
    *,
    item_labels: Mapping[int, str] | None = None,
    heading_level: int = 1,
    appendix_note: str | None = None,
) -> str:
    """The instrument card as a Markdown datasheet: procedure, principle, precision, repeatability,
    reproducibility, resolution, chance level, how to cite it, and the settings changed after the
    start. Long per-item tables go to an appendix at the end.

    ``heading_level`` is the level of the title (2 nests the card in another document); with an
    ``appendix_note`` the per-item tables are left out and the note says where they are instead.
    """
    document = card_document(card, item_labels=item_labels)

    def heading(depth: int, text: str) -> str:
        return "#" * (heading_level + depth) + " " + text

    parts = [heading(0, f"Instrument card: {document.title}")]
    parts.append(
        f"Study `{document.slug}`, status **{document.status}**, card version {document.version}, "
        f"ranking made by the score model {document.score_model}."
    )
    parts += [f"> **{notice}**" for notice in document.notices]
    appendix = []
    for section in document.sections:
        parts.append(heading(1, section.heading))
        for block in section.blocks:
            if isinstance(block, Table) and block.collapsed:
                appendix.append((section, block))
                parts.append(f"*{block.caption} {appendix_note or 'See the appendix.'}*")
                continue
            parts += _markdown_block(block)
    if appendix and appendix_note is None:
        parts.append(heading(1, "Appendix"))
        for section, block in appendix:
            parts.append(heading(2, f"{section.title}: per item"))
            parts += _markdown_block(block)
    return "\n\n".join(parts) + "\n"

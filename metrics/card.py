"""The instrument card of a study as a document a reviewer can read (Welty et al., "Metrology for AI", §5).

``card_document`` turns the dict of ``metrics.instrument.instrument_card`` into titled sections of plain
blocks (paragraphs, facts, lists, tables, quotes, figures), in the order of Welty §5: what the card
says. ``metrics.card_render`` writes the document as Markdown and draws its figures for the page
(``templates/metrics/card.html``), so the download and the page say the same.

PURE module: the standard library, ``common.numbers`` and ``scoring.quality`` only. Numbers are shown
with three or four significant digits; a value that was not measured (None, NaN) is written "not
measured", never "nan". The module is long because it holds the card's text: ten sections of prose,
one function each.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import ClassVar

from common.numbers import counted, finite_or_none, listed
from scoring.quality import crowd_votes_text

__all__ = [
    "NOT_MEASURED",
    "agreement_at",
    "CardDocument",
    "Facts",
    "Figure",
    "Items",
    "Paragraph",
    "Quote",
    "Section",
    "Table",
    "card_document",
    "count",
    "fixed",
    "number",
    "finite",
    "percent",
]

NOT_MEASURED = "not measured"
LOMBARDO = "Lombardo et al., “Top-Rank-Focused Adaptive Vote Collection for the Evaluation of Domain-Specific Semantic Models”"
WELTY = "Welty, Paritosh and Aroyo, “Metrology for AI: From Benchmarks to Instruments”"
CHANCE_PAPER = (
    "Lombardo 2025, “Standardization of Weighted Ranking Correlation Coefficients”, arXiv 2504.08428"
)
AGREEMENT_THRESHOLDS = (0.0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5)


# --- numbers ---------------------------------------------------------------------------------------


def finite(value) -> float | None:
    """``value`` as a float, or None when it is None, a bool, not a number, NaN or infinite."""
    if isinstance(value, bool):
        return None
    try:
        return finite_or_none(value)
    except (TypeError, ValueError):
        return None


def number(value, digits: int = 3) -> str:
    """``value`` with ``digits`` significant digits in fixed notation (0.110, 1.00, 1008, -0.308);
    "not measured" for None and non-finite values."""
    value = finite(value)
    if value is None:
        return NOT_MEASURED
    if value == 0:
        return "0"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(value))))
    text = f"{value:.{decimals}f}"
    return "0" if text.strip("-0.") == "" else text


def count(value) -> str:
    """A whole number with thousands separators (61,425); "not measured" for None."""
    value = finite(value)
    return NOT_MEASURED if value is None else f"{round(value):,}"


def fixed(value, decimals: int = 3) -> str:
    """``value`` with a fixed number of decimals (scores and their bounds in tables)."""
    value = finite(value)
    return NOT_MEASURED if value is None else f"{value:.{decimals}f}"


def _setting(value) -> str:
    """A parameter as it was set: 0.5, 2, 6 (no padding to significant digits)."""
    value = finite(value)
    return NOT_MEASURED if value is None else f"{value:g}"


def _amount(value) -> str:
    """A count that may be a mean or a median: whole values without decimals (28, 27.5)."""
    value = finite(value)
    if value is None:
        return NOT_MEASURED
    return count(value) if value.is_integer() else number(value)


def percent(share, decimals: int = 1) -> str:
    """A share in [0, 1] as a percentage (0.938 → "93.8%")."""
    share = finite(share)
    return NOT_MEASURED if share is None else f"{100 * share:.{decimals}f}%"


def _plus_minus(mean, sd) -> str:
    if finite(mean) is None:
        return NOT_MEASURED
    return f"{number(mean)} ± {number(sd)}" if finite(sd) is not None else number(mean)


def _date(iso: str | None, zone: bool = True) -> str:
    if not iso:
        return "—"
    moment = datetime.fromisoformat(iso)
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%d %H:%M" + (" UTC" if zone else ""))


def _milliseconds(value) -> str:
    value = finite(value)
    if value is None:
        return NOT_MEASURED
    return f"{value:.0f} ms" if value < 1000 else f"{number(value / 1000)} s"


def _duration(seconds) -> str:
    seconds = finite(seconds)
    if seconds is None:
        return NOT_MEASURED
    if seconds < 120:
        return f"{number(seconds)} s"
    if seconds < 7200:
        return f"{number(seconds / 60)} min"
    return f"{number(seconds / 3600)} h"


def _summary(described: Mapping | None, show=number) -> str:
    """A distribution summary of ``services._describe``: median, quartiles, range, mean, count."""
    if not described:
        return NOT_MEASURED
    return (
        f"median {show(described['median'])} (quartiles {show(described['q1'])} to {show(described['q3'])}, "
        f"range {show(described['min'])} to {show(described['max'])}, mean {show(described['mean'])}; "
        f"{count(described['count'])} values)"
    )


# --- blocks ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Paragraph:
    text: str
    kind: ClassVar[str] = "paragraph"


@dataclass(frozen=True)
class Quote:
    text: str
    label: str = ""
    kind: ClassVar[str] = "quote"


@dataclass(frozen=True)
class Facts:
    """Label and value pairs (a definition list)."""

    rows: tuple[tuple[str, str], ...]
    kind: ClassVar[str] = "facts"


@dataclass(frozen=True)
class Items:
    """A bulleted list."""

    entries: tuple[str, ...]
    kind: ClassVar[str] = "items"


@dataclass(frozen=True)
class Table:
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    numeric: tuple[bool, ...]  # right-aligned columns
    caption: str = ""
    collapsed: bool = False  # long tables: folded on the page, an appendix in Markdown
    kind: ClassVar[str] = "table"

    @property
    def cells(self) -> list[list[tuple[str, bool]]]:
        """Rows of (text, numeric) pairs, for the template."""
        return [list(zip(row, self.numeric, strict=True)) for row in self.rows]

    @property
    def header_cells(self) -> list[tuple[str, bool]]:
        return list(zip(self.header, self.numeric, strict=True))


@dataclass(frozen=True)
class Figure:
    """A plot: drawn on the page (``svg``) with its plotted points as a table (``points``, its text
    alternative), described by its caption in Markdown."""

    name: str
    caption: str
    svg: str = ""
    points: Table | None = None
    kind: ClassVar[str] = "figure"


@dataclass(frozen=True)
class Section:
    anchor: str
    title: str
    reference: str
    blocks: tuple = field(default_factory=tuple)

    @property
    def heading(self) -> str:
        return f"{self.title} ({self.reference})" if self.reference else self.title


@dataclass(frozen=True)
class CardDocument:
    title: str
    slug: str
    status: str
    version: int | None
    notices: tuple[str, ...]
    sections: tuple[Section, ...]
    score_model: str = ""  # the model that made the ranking, in words with its code


# --- the document ----------------------------------------------------------------------------------


def card_document(card: Mapping, *, item_labels: Mapping[int, str] | None = None) -> CardDocument:
    """The card as titled sections of blocks, in the order of Welty §5.

    ``item_labels`` maps item indices to their tokens ("cat – dog") for the per-item table (without
    them items are named by index). Its figures are named and captioned; ``metrics.card_render`` draws them.
    """
    study = card.get("study") or {}
    status = study.get("status", "")
    notices = []
    simulated, votes = _simulated_votes(card), _votes(card)
    if simulated:
        notices.append(
            f"Simulated votes: {_crowd_text(card)} in the closed ballots ({percent(simulated / votes)}). "
            "Simulated annotators (manage.py simulate_voters, the voter model of Lombardo et al. §4.1) are "
            "not people: every figure below describes the simulation as much as any crowd, this card "
            "measures no one's judgement, and it offers no citation."
        )
    if status == "draft":
        notices.append(
            "Nothing has been measured yet: this study is a draft. Its card fills in once it has started "
            "and its first ballot has closed."
        )
    elif status == "running":
        notices.append(
            "Provisional: the study is still running. The figures below come from its closed ballots so far "
            "and will change as ballots close; the final card is the one of the finished study."
        )
    split = card.get("split")
    if split:
        notices.append(
            f"This study keeps a hidden test part: {count(split.get('test_items'))} of its items "
            f"({percent(split.get('hidden_share'), 0)}), drawn from its seed when it started, stratified by semantic "
            "area, whose human scores are never published; the leaderboard ranks models on them. The figures "
            "below summarise every item, but the per-item rows and the precision plot show the "
            f"{count(split.get('development_items'))} items of the public development part only."
        )
    labels = dict(item_labels or {})
    sections = (
        _procedure(card),
        _principle(card),
        _precision(card, labels),
        _repeatability(card),
        _reproducibility(card),
        _resolution(card),
        _chance(card),
        _citation(card),
        _changes(card),
        _score_models(card),
    )
    return CardDocument(
        title=study.get("name", ""),
        slug=study.get("slug", ""),
        status=status,
        version=card.get("version"),
        notices=tuple(notices),
        sections=sections,
        score_model=score_model_text(card),
    )


def _not_yet(what: str) -> Paragraph:
    return Paragraph(f"Not measured yet: {what} needs the votes of at least one closed ballot.")


def _procedure(card: Mapping) -> Section:
    procedure = card.get("procedure") or {}
    plan = procedure.get("plan")
    blocks: list = [
        Paragraph(
            "How the measurement was made, in enough detail for an operator to repeat it. Changing the question, "
            "the instructions, the tokens or the way items are made creates a new instrument (Welty §5.1)."
        ),
        Quote(procedure.get("question", ""), label="Question shown above every comparison"),
    ]
    if procedure.get("instructions"):
        blocks.append(Quote(procedure["instructions"], label="Instructions shown before voting"))
    answers = "the left item or the right item"
    if procedure.get("allow_ties"):
        answers += ", or “equally related” (a tie)"
    tokens = procedure.get("tokens")
    rare = procedure.get("rare_tokens")
    areas = procedure.get("areas") or []
    blocks.append(
        Facts(
            (
                (
                    "Task",
                    "annotators see two items (two pairs of words) and choose the pair whose words are more related",
                ),
                ("Answers offered", answers),
                ("How items were made", str(procedure.get("item_source") or "not recorded")),
                ("Tokens", f"{count(tokens)}, of which {count(rare)} marked rare in their domain (§2.1)"),
                (
                    "Items",
                    f"{count(procedure.get('items'))}: unordered pairs of two distinct tokens of one semantic area (§2.2)",
                ),
                ("Semantic areas", count(len(areas))),
                ("Score model (made the ranking)", score_model_text(card)),
                (
                    "Ranking",
                    "one ranking per semantic area: comparisons, survivors and scores within each area (§2.1-2.2)"
                    if procedure.get("ranking_scope") == "per_area"
                    else "one joint ranking of every area: a comparison may set items of two areas against each other",
                ),
            )
        )
    )
    if areas:
        blocks.append(
            Table(
                header=("Semantic area", "Tokens", "Items"),
                rows=tuple(
                    (str(a["name"]), count(a["tokens_count"]), count(a["items_count"])) for a in areas
                ),
                numeric=(False, True, True),
                caption="Items pair tokens within one area; no item crosses areas.",
            )
        )
    if plan:
        blocks.append(
            Facts(
                (
                    ("Ballots n_b", count(plan["ballot_count"])),
                    ("Fraction kept α", _setting(plan["keep_fraction"])),
                    ("Appearances per item per ballot M", count(plan["appearances"])),
                    ("Comparisons planned N_comp (Lombardo et al. Eq. 3)", count(plan["total_comparisons"])),
                    (
                        "Appearances of a top item M_top = n_b·M (Eq. 4)",
                        f"{count(plan['top_appearances'])}, against M_unif = {number(plan['uniform_appearances'])} "
                        "for a uniform plan of the same cost",
                    ),
                    (
                        "Voting time estimated (Eq. 10)",
                        f"{_duration(plan.get('cost_seconds'))} at {_setting(plan.get('seconds_per_comparison'))} s "
                        "per comparison",
                    ),
                )
            )
        )
        if plan.get("warnings"):
            blocks.append(Items(tuple(f"Plan warning (§2.7): {w}" for w in plan["warnings"])))
    blocks.append(_ballot_table(plan, procedure.get("ballots") or []))
    cap = procedure.get("votes_per_annotator_per_ballot")
    dates = procedure.get("dates") or {}
    blocks.append(
        Facts(
            (
                (
                    "Lease",
                    f"{count(procedure.get('lease_seconds'))} s: a comparison not voted in time returns to the pool",
                ),
                (
                    "Cap per annotator",
                    f"at most {count(cap)} votes per ballot"
                    if cap
                    else "none: an annotator may vote until a ballot runs out",
                ),
                ("Repeats", "no annotator judges the same pair of items twice"),
                ("Created", _date(dates.get("created"))),
                ("Started", _date(dates.get("started"))),
                ("Finished", _date(dates.get("finished")) if dates.get("finished") else "not yet"),
                ("Annotators (with votes in closed ballots)", _annotators_text(card)),
                (
                    "Votes measured (in closed ballots)",
                    _crowd_text(card) if _simulated_votes(card) else count(procedure.get("votes")),
                ),
                (
                    "Votes per annotator (all ballots)",
                    _summary(procedure.get("votes_per_annotator"), show=_amount),
                ),
                (
                    "Response time per vote (all ballots)",
                    _summary(procedure.get("response_ms"), show=_milliseconds),
                ),
            )
        )
    )
    blocks.extend(_check_blocks(card))
    blocks.extend(_exclusion_blocks(card))
    changed = list(dict.fromkeys(change["label"] for change in card.get("changes") or []))
    if changed:
        blocks.append(
            Paragraph(
                f"Changed after the start: {', '.join(changed)}. The values above are the current ones; votes "
                "cast before a change were collected under the earlier value (section 9 lists every change)."
            )
        )
    return Section("procedure", "1. Measurement procedure", "Welty §5.1", tuple(blocks))


def _crowd(card: Mapping) -> tuple[Mapping, Mapping]:
    """(people, simulated) of the card's "crowd", each {"annotators", "votes"}; cards before version 8
    have none and count every vote as a person's."""
    procedure = card.get("procedure") or {}
    crowd = card.get("crowd") or {
        "people": {"annotators": procedure.get("annotators") or 0, "votes": procedure.get("votes") or 0}
    }
    return crowd["people"], crowd.get("simulated") or {"annotators": 0, "votes": 0}


def _votes(card: Mapping) -> int:
    people, simulated = _crowd(card)
    return people["votes"] + simulated["votes"]


def _simulated_votes(card: Mapping) -> int:
    return _crowd(card)[1]["votes"]


def _crowd_text(card: Mapping) -> str:
    """ "772 votes: 9 by 1 person, 763 by 100 simulated annotators" (``scoring.quality.crowd_votes_text``)."""
    people, simulated = _crowd(card)
    return crowd_votes_text(
        people=people["annotators"],
        people_votes=people["votes"],
        simulated=simulated["annotators"],
        simulated_votes=simulated["votes"],
    )


def _annotators_text(card: Mapping) -> str:
    """The annotators with votes in closed ballots: "6", or "6: 1 person and 5 simulated annotators"."""
    people, simulated = _crowd(card)
    total = count((card.get("procedure") or {}).get("annotators"))
    if not simulated["annotators"]:
        return total
    return (
        f"{total}: {counted(people['annotators'], 'person', 'people')} and "
        f"{counted(simulated['annotators'], 'simulated annotator')}"
    )


def _check_blocks(card: Mapping) -> list:
    """The study's checks: how often they are served, and how the annotators answered them (cards from
    version 8)."""
    checks = card.get("checks")
    if checks is None:
        return []
    gold, told = checks["gold"], checks["instructed"]
    kinds = [
        counted(tally["checks"], noun)
        for tally, noun in ((gold, "gold comparison"), (told, "instructed-response check"))
        if tally["checks"]
    ]
    if not kinds:
        return [
            Facts(
                (
                    (
                        "Checks",
                        "none: no gold comparison or instructed-response check was mixed into the "
                        "comparisons",
                    ),
                )
            )
        ]
    rate = finite(checks.get("rate")) or 0.0
    rows = [
        (
            "Checks",
            f"{_setting(100 * rate)}% of the comparisons served are checks, from {listed(kinds)}; each "
            "annotator answers each check once"
            if rate
            else f"the study has {listed(kinds)}, but a check rate of 0: none is served",
        )
    ]
    for label, tally in (
        ("Gold comparisons answered as expected (all ballots)", gold),
        ("Instructed responses followed (all ballots)", told),
    ):
        if tally["checks"]:
            rows.append((label, _check_answers_text(tally)))
    return [
        Facts(tuple(rows)),
        Paragraph(
            "A check is served in place of a comparison and looks like one. A gold comparison asks the "
            "study's question about two items whose answer the researchers know; an instructed-response "
            "check asks for a given side (“choose the pair on the left”). Its answer is never a vote: no "
            "score counts it."
        ),
    ]


def _check_answers_text(tally: Mapping) -> str:
    """ "8 of 12 answers (66.7%), by 6 annotators", with simulated annotators' answers apart."""

    def share(answers: Mapping, noun: str = "") -> str:
        answered, correct = answers["answered"], answers["correct"]
        of = f"{count(correct)} of {count(answered)}{noun}"
        return of + (f" ({percent(correct / answered)})" if answered else "")

    people, simulated = tally["people"], tally["simulated"]
    if not people["answered"] and not simulated["answered"]:
        return "not answered yet"
    if not simulated["answered"]:
        return f"{share(people, ' answers')}, by {counted(people['annotators'], 'annotator')}"
    by_people = (
        f"{share(people, ' answers')}, by {counted(people['annotators'], 'person', 'people')}"
        if people["answered"]
        else "none by people"
    )
    return f"{by_people}; by simulated annotators {share(simulated)}"


def _ballot_table(plan: Mapping | None, ballots: Sequence[Mapping]) -> Table:
    """One row per planned ballot: N(k) and comparisons from the plan, then what happened."""
    by_number = {b["number"]: b for b in ballots}
    planned = len(plan["sizes"]) if plan else 0
    rows = []
    for number_ in range(1, max(planned, max(by_number, default=0)) + 1):
        ballot = by_number.get(number_, {})
        size = count(plan["sizes"][number_ - 1]) if number_ <= planned else "—"
        comparisons = ballot.get("comparison_count")
        if comparisons is None and number_ <= planned:
            comparisons = plan["comparisons"][number_ - 1]
        kept = count(plan["sizes"][number_]) if number_ < planned else "—"
        rows.append(
            (
                str(number_),
                size,
                count(comparisons),
                kept,
                str(ballot.get("status", "not opened")),
                count(ballot["votes_recorded"]) if ballot else "—",
                number(ballot.get("rescale_slope"), 4) if ballot.get("rescale_slope") is not None else "—",
                _date(ballot.get("opened_at"), zone=False),
                _date(ballot.get("closed_at"), zone=False),
            )
        )
    return Table(
        header=(
            "Ballot k",
            "Items N(k) (Eq. 2)",
            "Comparisons ⌈M·N(k)/2⌉",
            "Kept for k+1",
            "State",
            "Votes",
            "b̂(k) (Eq. 6)",
            "Opened (UTC)",
            "Closed (UTC)",
        ),
        rows=tuple(rows),
        numeric=(True, True, True, True, False, True, True, False, False),
        caption="The plan per ballot and what happened; b̂(k) maps the win ratios of ballot k onto the scale of the earlier ones.",
    )


def _principle(card: Mapping) -> Section:
    blocks = [
        Paragraph(str(card.get("principle") or "")),
        Paragraph(
            "Indication (Welty §5.3): the score ȳ of each item, between 0 and 1 (Lombardo et al. Eq. 5): the mean "
            "over the ballots an item reached of its win ratio x = (wins + ties/2)/appearances (Eq. 1), each later "
            "ballot rescaled onto the first one's scale by y = 1 − b̂ + b̂·x (Eq. 6). The final ranking orders the "
            "items by ȳ; a model is measured by its weighted rank correlation with it (ρ_w, τ_w, Eq. 8–9)."
        ),
        Paragraph(
            "The principle assumes that people perceive the relatedness of two words consistently enough for a "
            "crowd's majority to order two items the same way. Which items are shown together, and in which order, "
            "can prime the annotators: they are part of this instrument (Welty §5.2)."
        ),
    ]
    return Section("principle", "2. Principle of measurement", "Welty §5.2", tuple(blocks))


def _precision(card: Mapping, labels: Mapping[int, str]) -> Section:
    precision = card.get("precision")
    blocks: list = [
        Paragraph(
            "Precision is the closeness of agreement between replicate measurements of the same items (Welty §5.6), "
            "given here as each item's standard deviation (SD) of ȳ."
        )
    ]
    if not precision:
        blocks.append(_not_yet("precision"))
        return Section("precision", "3. Precision", "Welty §5.6", tuple(blocks))
    quartiles = precision.get("sd_quantiles")
    items = precision.get("items") or []
    blocks.append(
        Facts(
            (
                (
                    "Method",
                    f"{precision.get('method')}; every replicate re-scored by Lombardo et al. Eq. 1, 6 and 5",
                ),
                ("Bootstrap replicates B", count(precision.get("replicates"))),
                (
                    "Items with a measured SD",
                    f"{count(quartiles['count']) if quartiles else 0} of "
                    f"{count((card.get('procedure') or {}).get('items', len(items)))}",
                ),
                ("Mean SD of ȳ (mean standard error)", number(precision.get("mean_sd"))),
                (
                    "SD quartiles (min, Q1, median, Q3, max)",
                    ", ".join(number(quartiles[k]) for k in ("min", "q1", "median", "q3", "max"))
                    if quartiles
                    else NOT_MEASURED,
                ),
            )
        )
    )
    median_sd = finite(quartiles["median"]) if quartiles else None
    if median_sd is not None:
        blocks.append(
            Paragraph(
                f"How to read it: an item's score is known to about ±2·SD (a 95% interval); at the median SD of "
                f"{number(median_sd)} that is ±{number(2 * median_sd)} on the 0 to 1 scale of ȳ. The difference of "
                f"two items' scores has an SD about √2 times larger, so two items closer than about 2.8·SD "
                f"({number(2.8 * median_sd)} at the median) are not told apart by precision alone. An SD of 0 means "
                "that every resampled vote agreed (an item that won or lost all its comparisons), not that its score "
                "is exact; the SD is expected to be smaller near 0 and 1 (the crescent of Welty Figure 1)."
            )
        )
    development = " of the public development part" if card.get("split") else ""
    blocks.append(
        Figure(
            "precision",
            f"SD of ȳ against ȳ for every item{development}: the precision of each score.",
        )
    )
    order = sorted(items, key=_by_score_descending)
    blocks.append(
        Table(
            header=("Rank in the part" if development else "Rank", "Item", "ȳ", "SD", "95% interval"),
            rows=tuple(
                (
                    str(position),
                    labels.get(row["index"], f"item {row['index']}"),
                    fixed(row.get("score"), 4),
                    number(row.get("sd")),
                    f"{fixed(row.get('lower'))} to {fixed(row.get('upper'))}"
                    if finite(row.get("lower")) is not None
                    else NOT_MEASURED,
                )
                for position, row in enumerate(order, start=1)
            ),
            numeric=(True, False, True, True, True),
            caption=f"Every item{development} by score, with the SD and the 2.5 and 97.5 percentiles of its "
            "bootstrap replicates.",
            collapsed=True,
        )
    )
    blocks.extend(_area_blocks(card))
    return Section("precision", "3. Precision", "Welty §5.6", tuple(blocks))


def _area_blocks(card: Mapping) -> list:
    """Coverage and precision per semantic area, and what the ranking scope means for them."""
    areas = card.get("areas") or {}
    rows = areas.get("by_area") or []
    if not rows:
        return []
    if areas.get("ranking_scope") == "per_area":
        scope = (
            "The study ranks each semantic area on its own (Lombardo et al. §2.1-2.2): every comparison set two "
            "items of one area against each other, each area kept its own top α after every ballot, and its "
            "scores ȳ are on its own scale."
        )
    else:
        cross, total = areas.get("cross_area_votes", 0), areas.get("votes", 0)
        scope = "The study ranks its areas jointly: " + (
            f"{count(cross)} of {count(total)} votes ({percent(cross / total)}) compared items of two "
            "different areas."
            if total and len(rows) > 1
            else "its items are compared across areas."
            if len(rows) > 1
            else "it has one semantic area."
        )
    return [
        Paragraph(scope),
        Table(
            header=(
                "Semantic area",
                "Items",
                "Scored (coverage)",
                "Votes within the area",
                "Mean SD of ȳ",
                "Median SD",
            ),
            rows=tuple(
                (
                    str(row["name"]),
                    count(row["items"]),
                    f"{count(row['scored'])} ({percent(row['scored'] / row['items']) if row['items'] else '—'})",
                    count(row["votes"]),
                    number(row.get("mean_sd")),
                    number(row.get("median_sd")),
                )
                for row in rows
            ),
            numeric=(False, True, True, True, True, True),
            caption="Coverage and precision per semantic area: the items with a score, the votes that compared "
            "two of the area's items, and the SD of ȳ over the area's items.",
        ),
    ]


def _by_score_descending(row: Mapping) -> tuple[float, int]:
    score = finite(row.get("score"))
    return (-score if score is not None else math.inf, row["index"])


def _repeatability(card: Mapping) -> Section:
    repeatability = card.get("repeatability")
    blocks: list = [
        Paragraph(
            "Repeatability is the agreement between measurements of the same items under the same conditions: the "
            "same procedure and the same kind of crowd, in the short term (Welty §5.7). It is measured within this "
            "study, in two ways."
        )
    ]
    if not repeatability:
        blocks.append(_not_yet("repeatability"))
        return Section("repeatability", "4. Repeatability", "Welty §5.7", tuple(blocks))
    halves = repeatability.get("split_half")
    if halves:
        blocks.append(
            Facts(
                (
                    ("Split-half splits", count(halves.get("splits"))),
                    (
                        "Spearman ρ between halves (mean ± SD)",
                        _plus_minus(halves["rho"]["mean"], halves["rho"]["sd"]),
                    ),
                    ("ρ corrected by Spearman-Brown 2r/(1+r)", number(halves["rho"]["spearman_brown"])),
                    (
                        "Weighted ρ_w between halves, n0 = 2 (mean ± SD)",
                        _plus_minus(halves["rho_w"]["mean"], halves["rho_w"]["sd"]),
                    ),
                    ("ρ_w corrected by Spearman-Brown", number(halves["rho_w"]["spearman_brown"])),
                    *(
                        (
                            (
                                "Ballot 1 only: Spearman ρ of x(1) between halves (mean ± SD)",
                                _plus_minus(halves["ballot_one_rho"]["mean"], halves["ballot_one_rho"]["sd"]),
                            ),
                            (
                                "Ballot 1 ρ corrected by Spearman-Brown",
                                number(halves["ballot_one_rho"]["spearman_brown"]),
                            ),
                        )
                        if halves.get("ballot_one_rho")
                        else ()
                    ),
                )
            )
        )
        blocks.append(
            Paragraph(
                "Split-half reliability: the annotators are split at random into two halves, the items are scored "
                "from each half's votes alone (the ballots' items as the study ran them), and the two rankings are "
                "correlated; this is repeated for every split. Each half ranks items by the ballot they reached, then "
                "by their score: the selection of survivors is part of the design held fixed, so these figures are "
                "conditional on it and read high at the top; the ballot-1 figure, over every item before any "
                "selection, is the unconditional check. The Spearman-Brown value estimates the reliability of "
                "the whole crowd: the correlation to expect between this study and a repetition with as many "
                "annotators. ρ_w weighs the top ranks, where the adaptive plan puts most of its votes; read it against "
                "the chance level of section 7, not against 0. A ρ_w well below ρ says that the order at the top is "
                "less repeatable than the order overall."
            )
        )
    else:
        blocks.append(
            Paragraph(
                "Split-half reliability: not measured: it needs at least two annotators with votes in closed ballots."
            )
        )
    alpha = repeatability.get("krippendorff_alpha")
    if alpha:
        blocks.append(
            Facts(
                (
                    ("Krippendorff's α (nominal: left item, right item, tie)", number(alpha.get("alpha"))),
                    ("Item pairs judged more than once", count(alpha.get("pairs"))),
                    ("Votes on those pairs", count(alpha.get("votes"))),
                )
            )
        )
        simulated, votes = _simulated_votes(card), _votes(card)
        threshold = (
            f"{percent(simulated / votes)} of the votes ({count(simulated)} of {count(votes)}) were cast by "
            "simulated annotators: α measures how consistently the voter model answers, not how far people "
            "agree, and the 0.6 often asked of linguistic data does not apply."
            if simulated
            else "Welty et al. report α = 0.59 for WS353 and 0.6 as a usual threshold for publishable "
            "linguistic data."
        )
        blocks.append(
            Paragraph(
                f"How to read α: 1 is perfect agreement, 0 is agreement at chance level. {threshold} In an "
                "adaptive study, however, the pairs judged more than once are mostly top items compared "
                "again in the last ballots, the hardest ones to tell apart: α here describes those pairs, "
                f"not the whole instrument, and is computed from {count(alpha.get('pairs'))} pairs only."
            )
        )
    else:
        blocks.append(
            Paragraph(
                "Krippendorff's α: not measured: it needs at least two pairs of items judged more than once, with "
                "votes in more than one category. With many items and few comparisons per item the schedules rarely "
                "repeat a pair; the split-half reliability above covers repeatability instead."
            )
        )
    if _simulated_votes(card):
        people_alpha = repeatability.get("krippendorff_alpha_people")
        blocks.append(
            Facts(
                (
                    ("Krippendorff's α of the people's votes alone", number(people_alpha.get("alpha"))),
                    ("Item pairs people judged more than once", count(people_alpha.get("pairs"))),
                    ("People's votes on those pairs", count(people_alpha.get("votes"))),
                )
            )
            if people_alpha
            else Paragraph("The people's votes alone repeat too few pairs for an α of their own.")
        )
    return Section("repeatability", "4. Repeatability", "Welty §5.7", tuple(blocks))


def _reproducibility(card: Mapping) -> Section:
    entries = card.get("reproducibility") or []
    blocks: list = [
        Paragraph(
            "Reproducibility is the agreement between measurements of the same items under changed conditions: "
            "another run of the same procedure with another crowd, at another time (Welty §5.8). It is measured "
            "against every finished replication over the same items: a duplicate of this study, or the study it "
            "duplicates."
        )
    ]
    if not entries:
        blocks.append(
            Paragraph(
                "No finished replication: duplicate the study to measure it (same tokens, items and plan), run the "
                "copy with a new crowd, and this section compares the two."
            )
        )
        return Section("reproducibility", "5. Reproducibility", "Welty §5.8", tuple(blocks))
    blocks.append(
        Table(
            header=(
                "Replication",
                "Items",
                "ρ",
                "ρ_w",
                "τ_w",
                "Mean |Δȳ|",
                "Mean SD here",
                "Mean SD there",
                "SD ratio",
                "SD correlation",
            ),
            rows=tuple(
                (
                    f"{entry.get('name', '')} ({entry.get('study', '')})",
                    count(entry.get("items")),
                    number(entry.get("rho")),
                    number(entry.get("rho_w")),
                    number(entry.get("tau_w")),
                    number(entry.get("mean_absolute_difference")),
                    number(entry.get("mean_sd_a")),
                    number(entry.get("mean_sd_b")),
                    number(entry.get("sd_ratio")),
                    number(entry.get("sd_correlation")),
                )
                for entry in entries
            ),
            numeric=(False,) + (True,) * 9,
            caption="Rank agreement of the two studies' scores (ρ_w, τ_w with n0 = 2) and how the per-item uncertainty changed.",
        )
    )
    blocks.append(
        Paragraph(
            "How to read it: ρ, ρ_w and τ_w near 1 mean the two runs order the items alike; read ρ_w and τ_w against "
            "the chance level below, not against 0. An SD ratio above 1 means the replication measured less precisely "
            "than this study; a low SD correlation means the items that are hard to score differ between the runs."
        )
    )
    return Section("reproducibility", "5. Reproducibility", "Welty §5.8", tuple(blocks))


def agreement_at(curve: Mapping, threshold: float) -> tuple[float | None, int]:
    """(agreement, pairs counted) of the resolution curve at score difference ``threshold``: over the
    compared pairs with |Δȳ| ≥ threshold."""
    thresholds = list(curve.get("threshold") or [])
    position = bisect.bisect_left(thresholds, threshold)
    if position >= len(thresholds):
        return None, 0
    return curve["agreement"][position], int(curve["pairs"][position])


def _exclusion_blocks(card: Mapping) -> list:
    """Annotators excluded by the researchers or a rule, and what their votes did to the scores (cards from
    version 6; the public card gives counts, never who)."""
    excluded = card.get("exclusions")
    if not excluded or not excluded.get("annotators"):
        return []
    reasons = "; ".join(
        f"{'a researcher' if reason == 'researcher' else 'rule ' + reason}: {count(row.get('annotators'))} "
        f"annotator{'s' if row.get('annotators') != 1 else ''}, {count(row.get('votes_excluded'))} votes"
        for reason, row in sorted((excluded.get("by_reason") or {}).items())
    )
    rows = [
        ("Annotators excluded", count(excluded["annotators"])),
        (
            "Their votes in the closed ballots",
            f"{count(excluded.get('votes_excluded'))} of {count(excluded.get('votes_closed'))}",
        ),
        ("Their open-ballot votes set aside at the exclusion", count(excluded.get("votes_set_aside"))),
        ("By whom", reasons or NOT_MEASURED),
        (
            "ρ and τ between the scores with and without them",
            f"{number(excluded.get('spearman_with_without'))}, {number(excluded.get('kendall_with_without'))}",
        ),
        ("Items no longer measured without them", count(excluded.get("unmeasured_without"))),
    ]
    return [
        Paragraph(
            "Excluded annotators. Closed ballots are not re-run: the scores above use every vote of the design as it "
            "was collected. The same ballots scored without the excluded annotators' votes (Lombardo et al. Eq. 1, 6 "
            "and 5, the design held fixed) are in the results and in without-excluded.csv; here is how far they move."
        ),
        Facts(tuple(rows)),
    ]


def _fragility_blocks(card: Mapping) -> list:
    """How few votes, removed, change the top item and the top-K set (cards from version 6)."""
    fragility = card.get("fragility")
    if not fragility or not fragility.get("entries"):
        return []
    rows = []
    for entry in fragility["entries"]:
        what = "the top item" if entry["k"] == 1 else f"the top-{count(entry['k'])} set"
        if entry.get("area"):
            what += f" of {entry['area']}"
        if entry.get("votes") is None:
            found = (
                f"no removal found: the search tried up to {count(fragility.get('max_steps'))} votes per contested "
                "pair of items without changing it"
            )
        else:
            bound = "" if entry.get("exact") else "at most "
            found = (
                f"{bound}{count(entry['votes'])} of {count(entry['total'])} votes "
                f"({percent(entry.get('share'), 3)})"
            )
        rows.append((f"Votes whose removal changes {what}", found))
    return [
        Paragraph(
            "How fragile the top is: the fewest votes whose removal changes the top item, and the top-K set, with "
            "the design held fixed (the ballots keep their items; the scores are recomputed by Lombardo et al. Eq. 1, "
            "6 and 5). The search is greedy, so its count is an upper bound: the votes it found do change the top, "
            "and fewer might. A top that a handful of votes can change is not settled, whatever its intervals say."
        ),
        Facts(tuple(rows)),
    ]


def _resolution(card: Mapping) -> Section:
    resolved = card.get("resolution")
    blocks: list = [
        Paragraph(
            "Resolution is the smallest change the instrument detects (Welty §5.9). For every pair of items that "
            "annotators compared directly, the majority of its votes is set against the order of the two items' "
            "scores; at a threshold t the agreement is the share of those pairs with |Δȳ| ≥ t whose majority prefers "
            "the higher-scored item (a pair without a majority counts as a disagreement, as Welty counts “equally "
            "similar”). The resolution is the smallest t at which the agreement reaches 95%."
        )
    ]
    if not resolved:
        blocks.append(_not_yet("resolution"))
        return Section("resolution", "6. Resolution", "Welty §5.9", tuple(blocks))
    if resolved.get("part") == "development":
        blocks.append(
            Paragraph(
                "Over the pairs of two items of the public development part: the curve lists the score "
                "differences of the pairs, and a difference to a published score would give a hidden one."
            )
        )
    value = finite(resolved.get("resolution"))
    target = finite(resolved.get("target")) or 0.95
    compared = resolved.get("compared_pairs") or 0
    total = resolved.get("item_pairs_total")
    above = resolved.get("item_pairs_above_resolution")
    facts = [
        (
            "Resolution",
            f"{number(value)} on the ȳ scale, at {percent(target, 0)} agreement"
            if value is not None
            else "undefined",
        ),
        ("Compared item pairs with different scores", count(compared)),
        ("Agreement over all compared pairs (t = 0)", percent(resolved.get("overall_agreement"))),
    ]
    if value is not None and total:
        facts.append(
            (
                "Item pairs at least the resolution apart",
                f"{count(above)} of {count(total)} ({percent(above / total)})",
            )
        )
    blocks.append(Facts(tuple(facts)))
    if value is not None:
        blocks.append(
            Paragraph(
                f"How to read it: two items whose scores differ by less than {number(value)} may be interchangeable "
                f"in rank; the instrument cannot tell them apart. Of all {count(total)} pairs of items, "
                f"{count(above)} lie at least that far apart: only their order is backed by the votes at this level."
            )
        )
    elif compared == 0:
        blocks.append(
            Paragraph(
                "Undefined: no compared pair of items has two different scores yet, so there is nothing to set the votes against."
            )
        )
    else:
        blocks.append(
            Paragraph(
                f"Undefined: the agreement does not reach {percent(target, 0)} at any threshold; even the most distant "
                "compared pairs disagree with the scores too often. The ranking is not resolved at this level."
            )
        )
    curve = resolved.get("curve") or {}
    if curve.get("threshold"):
        rows = []
        thresholds = sorted(
            {t for t in AGREEMENT_THRESHOLDS if t <= curve["threshold"][-1]}
            | ({value} if value is not None else set())
        )
        for threshold in thresholds:
            agreement, pairs = agreement_at(curve, threshold)
            rows.append(
                (
                    number(threshold) + (" (resolution)" if threshold == value else ""),
                    count(pairs),
                    percent(agreement),
                )
            )
        blocks.append(
            Table(
                header=("Threshold t", "Compared pairs with |Δȳ| ≥ t", "Agreement"),
                rows=tuple(rows),
                numeric=(True, True, True),
                caption="The agreement curve at a few thresholds.",
            )
        )
        blocks.append(
            Figure(
                "resolution",
                "Agreement between the vote majority and the score order against the threshold t, with the 95% line.",
            )
        )
    blocks.append(
        Paragraph(
            "Caveats: the compared pairs are the comparisons the schedule drew, not a sample spread evenly over score "
            "differences as in Welty's WS353res; in an adaptive study they concentrate among top items in the last "
            "ballots. And the same votes made the scores, so the agreement is measured in-sample and is optimistic; a "
            "replication (section 5) gives an independent check."
        )
    )
    blocks.extend(_fragility_blocks(card))
    return Section("resolution", "6. Resolution", "Welty §5.9", tuple(blocks))


def _chance(card: Mapping) -> Section:
    chance = card.get("chance")
    blocks: list = [
        Paragraph(
            "Weighted rank coefficients do not average zero between unrelated rankings: the weights of Lombardo et "
            f"al. Eq. 9 depend on both rankings ({CHANCE_PAPER}). These are their mean and SD between this study's "
            "ranking and random permutations of it, with those of the plain ρ and τ (Eq. 7) on the same "
            "permutations: they average zero, and their SD says how far from zero chance alone reaches."
        )
    ]
    if not chance:
        blocks.append(_not_yet("the chance level"))
        return Section("chance", "7. Chance level", "Lombardo et al. Eq. 8–9", tuple(blocks))
    items = (card.get("procedure") or {}).get("items")
    rho_w, tau_w = chance.get("rho_w") or {}, chance.get("tau_w") or {}
    # Cards before version 5 have no ρ and τ: their lines are left out rather than shown empty.
    plain = tuple(
        (f"{label} of unrelated rankings (mean ± SD)", _plus_minus(level.get("mean"), level.get("sd")))
        for label, level in (("ρ", chance.get("rho")), ("τ", chance.get("tau")))
        if level
    )
    blocks.append(
        Facts(
            (
                ("ρ_w of unrelated rankings (mean ± SD)", _plus_minus(rho_w.get("mean"), rho_w.get("sd"))),
                ("τ_w of unrelated rankings (mean ± SD)", _plus_minus(tau_w.get("mean"), tau_w.get("sd"))),
                *plain,
                ("Items", count(items)),
                ("Weight offset n0, f(n) = 1/(n + n0)²", _setting(chance.get("weight_offset"))),
                ("Random permutations", count(chance.get("draws"))),
            )
        )
    )
    reach = []
    for name, level in (("ρ_w", rho_w), ("τ_w", tau_w)):
        mean, sd = finite(level.get("mean")), finite(level.get("sd"))
        if mean is not None and sd is not None:
            reach.append(f"{name} above about {number(mean + 2 * sd)}")
    blocks.append(
        Paragraph(
            "Remember: a model's ρ_w or τ_w on this study must be read against this level, not against 0. A "
            "coefficient is evidence of agreement with the crowd only as far as it exceeds the chance mean by a few "
            "SD" + (f" ({'; '.join(reach)}, the mean + 2·SD)" if reach else "") + "."
        )
    )
    return Section("chance", "7. Chance level", "Lombardo et al. Eq. 8–9", tuple(blocks))


def _citation(card: Mapping) -> Section:
    study = card.get("study") or {}
    procedure = card.get("procedure") or {}
    dates = procedure.get("dates") or {}
    period = f"{_date(dates.get('started'))} to {_date(dates.get('finished')) if dates.get('finished') else 'still running'}"
    simulated = _simulated_votes(card)
    cite = (
        Paragraph(
            f"No citation: {count(simulated)} of the {count(_votes(card))} votes were cast by simulated "
            "annotators (manage.py simulate_voters), not by people. A card of simulated votes describes a "
            "simulation, not a measurement: run the study with people (a duplicate of it, say) and cite "
            "that study's card."
        )
        if simulated
        else Paragraph(
            f"How to cite: “{study.get('name', '')}” ({study.get('slug', '')}), Yardstick instrument card version "
            f"{card.get('version')}, {count(procedure.get('items'))} items ranked from {count(procedure.get('votes'))} "
            f"votes by {count(procedure.get('annotators'))} annotators, collected {period}. Cite {LOMBARDO} for the "
            f"adaptive procedure and the scores, and {WELTY} for this characterisation. Report a model's coefficient "
            "with its interval and beside the chance level of this card."
        )
    )
    blocks = [
        cite,
        Items(
            (
                "What it cannot tell: the true relatedness of two words. There is no true value to compare with, so "
                "the accuracy of the scores is not a quantity (Welty §5.4 and §5.5); the scores are this crowd's "
                "consensus under this procedure.",
                "Whether the scores measure what they are meant to (validity), or how another population of "
                "annotators would rank the items.",
                "The precision holds fixed which items each ballot held: it leaves out the chance that an item was "
                "dropped too early (premature loss, Lombardo et al. §2.7), so items outside the last ballot are less "
                "certain than their SD says.",
                "The resolution is measured on the pairs the schedule compared, with the votes that made the scores "
                "(section 6); reproducibility only as far as replications exist (section 5).",
                "Any change to the question, the instructions, the tokens or the plan makes a new instrument: its "
                "card must be measured again.",
            )
        ),
    ]
    return Section("citation", "8. How to cite, and what it cannot tell", "", tuple(blocks))


def _changed_value(value) -> str:
    """A setting's value before or after a change: blank, yes/no, a number as set, a quoted text."""
    if value is None or value == "":
        return "blank"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float):
        return _setting(value)
    text = " ".join(str(value).split())
    return f"“{text if len(text) <= 120 else text[:119] + '…'}”"


def _changes(card: Mapping) -> Section:
    changes = card.get("changes")
    blocks: list = [
        Paragraph(
            "Every setting changed after the study started, with when, the value before and after, and where it "
            "was changed (the admin, the API or a command). Votes cast before a change were collected under the "
            "earlier value: a cap lowered during a ballot leaves the votes already cast above it. Once a study has "
            "started, its plan, seed, slug, seconds per comparison and whether ties are allowed cannot change; "
            "the question, the instructions and how the collection runs (lease, cap, deadline, completion) can "
            "until it finishes."
        )
    ]
    if changes is None:
        blocks.append(Paragraph("Not recorded by this version of the card."))
    elif not changes:
        blocks.append(
            Paragraph(
                "No setting changed after the start: every vote was collected under the settings of section 1."
            )
        )
    else:
        blocks.append(
            Table(
                header=("When (UTC)", "Study was", "Setting", "From", "To", "Through"),
                rows=tuple(
                    (
                        _date(change["changed_at"], zone=False),
                        str(change["study_status"]),
                        str(change["label"]),
                        "not published" if change["private"] else _changed_value(change["from"]),
                        "not published" if change["private"] else _changed_value(change["to"]),
                        "API" if change["channel"] == "api" else str(change["channel"]),
                    )
                    for change in changes
                ),
                numeric=(False, False, False, True, True, False),
                caption=f"{count(len(changes))} {'change' if len(changes) == 1 else 'changes'}, oldest first. "
                "The values of the completion code and URL are not published: they would let anyone claim a "
                "crowd platform's payment.",
            )
        )
    return Section("changes", "9. Changes after the start", "Welty §5.1", tuple(blocks))


# --- the score models (issue 37) ---------------------------------------------------------------------

PROTOCOLS_DOC = "docs/protocols.md"


def score_model_text(card: Mapping) -> str:
    """The score model that made the ranking, in words with its code: "rescaled Borda (borda)". Cards
    before version 9 name none: their rankings were made by rescaled Borda, the only model then."""
    model = (card.get("procedure") or {}).get("score_model") or {
        "name": "borda",
        "label": "rescaled Borda",
    }
    return f"{model.get('label') or model.get('name')} ({model.get('name')})"


def _model_name(entry: Mapping) -> str:
    return str(entry.get("label") or entry.get("model"))


def _models_tables(table: Mapping, where: str) -> list:
    """The table of the models against the reference, and the models' pairwise ρ_w, of one ranking."""
    models = table.get("models") or []
    k = table.get("top_k")
    rows = []
    for entry in models:
        reference, top = entry.get("reference") or {}, entry.get("top") or {}
        rows.append(
            (
                _model_name(entry),
                str(entry.get("description") or entry.get("model")),
                number(reference.get("rho_w")),
                number(reference.get("tau_w")),
                number(reference.get("rho")),
                number(reference.get("tau")),
                f"{count(top.get('shared'))} of {count(top.get('k'))}" if top.get("k") else NOT_MEASURED,
            )
        )
    names = [_model_name(entry) for entry in models]
    matrix = (table.get("matrix") or {}).get("rho_w") or []
    return [
        Table(
            header=("Score model", "What it is", "ρ_w", "τ_w", "ρ", "τ", f"Top-{k} overlap"),
            rows=tuple(rows),
            numeric=(False, False, True, True, True, True, True),
            caption=(
                f"Each score model's ranking of the same votes against the study's ranking{where}: ρ_w and τ_w "
                f"at n0 = {_setting(table.get('weight_offset'))} (Lombardo et al. Eq. 8–9), ρ and τ (Eq. 7), over "
                f"{count(table.get('items'))} items, and how many of the study's first {k} items the model also "
                f"ranks among its first {k}."
            ),
        ),
        Table(
            header=("ρ_w", *names),
            rows=tuple(
                (name, *(number(value) for value in row)) for name, row in zip(names, matrix, strict=True)
            ),
            numeric=(False, *(True for _ in names)),
            caption=f"ρ_w between the score models' rankings{where}, each pair over the items both score.",
        ),
    ]


def _score_models(card: Mapping) -> Section:
    figure = card.get("score_models")
    blocks: list = [
        Paragraph(
            f"The study's ranking was made by {score_model_text(card)}. Rescaled Borda (Lombardo et al., Eq. 1, "
            "5, 6) is the default and the reference of the paper; another score model is offered as a study's "
            "score model only where the score models' comparison at equal budget, on crowds drawn from the "
            f"paper's voter model, shows that it wins ({PROTOCOLS_DOC} records the tables, for each distribution "
            "and crowd mix, and the command). Below, every score model scores the same votes, those of the closed ballots that "
            "the ranking counts, and its ranking is set beside the study's."
        )
    ]
    if not figure:
        blocks.append(Paragraph("Not measured yet: the score models are compared once the study has finished."))
        return Section("score-models", "10. Score models", "Lombardo et al. Eq. 8–9", tuple(blocks))
    left_out = [model for model in figure.get("models") or [] if model not in (figure.get("fitted") or [])]
    if left_out:
        blocks.append(
            Paragraph(
                f"Not fitted: {', '.join(left_out)}. The study has {count(figure.get('items'))} items, more than "
                f"the {count(figure.get('max_items'))} for which every score model is fitted; only the study's "
                "own model is."
            )
        )
    if figure.get("part") == "development":
        blocks.append(
            Paragraph(
                "Over the public development part only: the items of the hidden test part are left out of every "
                "ranking compared here."
            )
        )
    if figure.get("table"):
        blocks.extend(_models_tables(figure["table"], ""))
    for area in figure.get("areas") or []:  # a study ranked per area: each area is its own ranking
        blocks.extend(_models_tables(area, f" in the area {area.get('area')}"))
    return Section("score-models", "10. Score models", "Lombardo et al. Eq. 8–9", tuple(blocks))

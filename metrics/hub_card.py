"""The dataset card of a study's Hugging Face dataset (``metrics.hub``), and what it is written from: the
options a researcher chooses (license, languages) and the counts of the tables written.

The card is the folder's ``README.md``: the Hub's YAML header (license, language, task categories, size,
pretty name, and ``configs``, one per table, ``items`` the default), then the tables' columns, the
study's design, the instrument card's figures at a glance, the hidden test part left out, the license,
and the whole instrument card (``metrics.card_render``) without its per-item appendix, which the
``items`` table holds.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from collection.models import Study
from common.errors import ServiceError
from metrics.card import count, number, percent
from metrics.card_render import card_markdown
from scoring.selectors import QualityThresholds

if TYPE_CHECKING:
    from huggingface_hub import DatasetCard

# Licenses a researcher may choose, by their Hub identifiers; "other" asks for the terms in the card.
LICENSES = (
    "cc-by-4.0",
    "cc-by-sa-4.0",
    "cc-by-nc-4.0",
    "cc-by-nc-sa-4.0",
    "cc0-1.0",
    "odc-by",
    "odbl",
    "pddl",
    "other",
)
DEFAULT_LICENSE = "cc-by-4.0"  # the usual one of published human-judgement data sets
DEFAULT_LANGUAGES = ("en",)
MAX_LANGUAGES = 20
LANGUAGE_CODE = re.compile(r"[a-z]{2,3}")  # ISO 639-1 or 639-3, as the Hub's language field takes them
CONFIGS = ("items", "votes", "ballots")
DEFAULT_CONFIG = "items"

COLUMN_NOTES = {
    "items": {
        "index": "the item's number in the study (the instrument card's per-item rows use it)",
        "token_a, token_b": "the item's two tokens",
        "area": "its semantic area",
        "rank": "its place in the final ranking of the public items (1 = most related)",
        "area_rank": "its place among the public items of its area",
        "score": "its final score under the study's score model, which the instrument card names (rescaled Borda, "
        "the default: ȳ, the mean of its rescaled win ratios, Eq. 5)",
        "sd, lower, upper": "the bootstrap SD of ȳ and its 2.5 and 97.5 percentiles (the card's precision)",
        "last_ballot": "the last ballot it took part in: later ballots hold the higher-ranked items",
        "score_<model>, rank_<model>": "each score model's score of the item from the same votes (those of the "
        "closed ballots) and its place among the public items under that model; the study's own model first "
        "(the instrument card names it and compares the models)",
    },
    "votes": {
        "ballot": "the ballot the comparison belonged to",
        "annotator": "a pseudonym, the same for all of one annotator's votes in this study",
        "simulated": "true for a simulated annotator (manage.py simulate_voters), not a person",
        "excluded": "true for an annotator excluded by a researcher or the quality rule; the closed ballots, and "
        "so the scores, keep their votes",
        "left_index, right_index": "the two items shown (their `index` in `items`), left and right",
        "left_token_a … right_area": "their tokens and semantic areas",
        "choice": "left, right or tie (tie only where the study allowed ties)",
        "response_ms": "milliseconds from the comparison being shown to the vote, on the server",
        "created_at": "when the vote was recorded (UTC)",
    },
    "ballots": {
        "number": "k = 1 … n_b",
        "status": "closed for every ballot of a finished study",
        "items, comparisons, votes": "the ballot's items, comparisons and votes, hidden part included",
        "published_votes": "its votes in the `votes` table (between two public items)",
        "rescale_slope": "b̂(k) of Eq. 6, which maps its win ratios onto the scale of the earlier ballots",
        "opened_at, closed_at": "when it opened and closed (UTC)",
    },
}


@dataclass(frozen=True)
class HubOptions:
    """What the researcher chooses for the card's header: the license and the language(s) of the tokens."""

    license: str = DEFAULT_LICENSE
    languages: tuple[str, ...] = DEFAULT_LANGUAGES


@dataclass(frozen=True)
class HubExport:
    """A written dataset folder and what it holds."""

    folder: Path
    rows: dict[str, int]  # rows per config
    annotators: int  # pseudonyms in the votes
    withheld_items: int  # the hidden test part
    withheld_votes: int  # the votes that involve a hidden item


def hub_options(*, license: str | None = None, language: str | None = None) -> HubOptions:
    """The options of an export from a request's or a command's text, or 400 saying what is wrong.

    ``license`` is one of ``LICENSES`` (default cc-by-4.0); ``language`` is one or more ISO 639-1/639-3
    codes separated by commas (default en).
    """
    chosen = (license or DEFAULT_LICENSE).strip().lower()
    if chosen not in LICENSES:
        raise ServiceError(f"license must be one of {', '.join(LICENSES)}; got {license!r}")
    languages = DEFAULT_LANGUAGES
    if language is not None and language.strip():
        languages = tuple(dict.fromkeys(code.strip().lower() for code in language.split(",") if code.strip()))
        wrong = [code for code in languages if not LANGUAGE_CODE.fullmatch(code)]
        if wrong or not languages or len(languages) > MAX_LANGUAGES:
            raise ServiceError(
                f"language must be up to {MAX_LANGUAGES} ISO 639 codes separated by commas, such as 'en' or "
                f"'de,fr'; got {language!r}"
            )
    return HubOptions(license=chosen, languages=languages)


# --- the dataset card ------------------------------------------------------------------------------


def size_category(rows: int) -> str:
    """The Hub's size category of a dataset of ``rows`` rows (its largest table)."""
    for bound, name in (
        (1_000, "n<1K"),
        (10_000, "1K<n<10K"),
        (100_000, "10K<n<100K"),
        (1_000_000, "100K<n<1M"),
    ):
        if rows < bound:
            return name
    return "1M<n<10M"


def dataset_card(*, study: Study, card: Mapping, options: HubOptions, export: HubExport) -> DatasetCard:
    """The dataset card: the Hub's YAML header, the tables, the design, the figures, the hidden part,
    the license and the whole instrument card (``card`` as ``card_json_data`` gives it)."""
    from huggingface_hub import DatasetCard, DatasetCardData  # by an export only: see metrics.hub_views

    header = DatasetCardData(
        license=options.license,
        language=list(options.languages),
        pretty_name=study.name,
        size_categories=[size_category(max(export.rows.values()))],
        task_categories=["sentence-similarity"],
        tags=["pairwise-comparison", "human-judgement", "relatedness", "ranking", "yardstick"],
        annotations_creators=["crowdsourced"],
        configs=[
            {
                "config_name": name,
                "data_files": [{"split": "train", "path": f"data/{name}.parquet"}],
                **({"default": True} if name == DEFAULT_CONFIG else {}),
            }
            for name in CONFIGS
        ],
    )
    body = "\n\n".join(
        [
            f"# {study.name}",
            _summary(study, card, export),
            _tables_section(export),
            _design_section(study, card, export),
            _figures_section(card),
            _hidden_section(card, export),
            _license_section(options),
            card_markdown(
                card, heading_level=2, appendix_note="Per item: the `items` table of this dataset."
            ),
        ]
    )
    return DatasetCard(f"---\n{header.to_yaml()}\n---\n\n{body}\n")


def _summary(study: Study, card: Mapping, export: HubExport) -> str:
    procedure = card.get("procedure") or {}
    return (
        f"Human judgements of relatedness collected with Yardstick, an adaptive pairwise-comparison "
        f"platform (study `{study.slug}`, finished {_day(procedure.get('dates', {}).get('finished'))}). "
        f"Annotators were shown two items, each a pair of tokens, and asked: *{study.question}* "
        f"The {count(export.rows['items'])} items here carry their final score and rank; the "
        f"{count(export.rows['votes'])} votes behind them are here too, by {count(export.annotators)} "
        "annotators under pseudonyms."
    )


def _tables_section(export: HubExport) -> str:
    usage = "\n".join(
        [
            "```python",
            "from datasets import load_dataset",
            "",
            'items = load_dataset("FOLDER_OR_REPO", split="train")  # the default config: items',
            'votes = load_dataset("FOLDER_OR_REPO", "votes", split="train")',
            'ballots = load_dataset("FOLDER_OR_REPO", "ballots", split="train")',
            "```",
        ]
    )
    parts = ["## Tables", "Each table is a config with one `train` split:", usage]
    for name in CONFIGS:
        parts.append(f"### `{name}` ({count(export.rows[name])} rows)")
        parts.append("\n".join(f"- `{column}`: {note}" for column, note in COLUMN_NOTES[name].items()))
    return "\n\n".join(parts)


def _design_section(study: Study, card: Mapping, export: HubExport) -> str:
    procedure = card.get("procedure") or {}
    plan = procedure.get("plan") or {}
    areas = procedure.get("areas") or []
    thresholds = QualityThresholds.of(study)
    checks = card.get("checks") or {}
    crowd = card.get("crowd") or {}
    exclusions = card.get("exclusions") or {}
    facts = [
        ("Question", study.question),
        ("Ties", "allowed (“equally related”)" if study.allow_ties else "not allowed"),
        (
            "Ranking",
            "each semantic area ranked on its own"
            if study.ranking_scope == Study.RankingScope.PER_AREA
            else "one joint ranking of every area",
        ),
        (
            "Semantic areas",
            "; ".join(f"{area['name']} ({count(area['items_count'])} items)" for area in areas) or "—",
        ),
        ("Ballots (n_b)", count(study.ballot_count)),
        ("Kept after each ballot (α)", number(study.keep_fraction)),
        ("Votes per item per ballot (M)", count(study.appearances)),
        ("Items per ballot", ", ".join(count(size) for size in plan.get("sizes") or []) or "—"),
        ("Comparisons per ballot", ", ".join(count(c) for c in plan.get("comparisons") or []) or "—"),
        ("Votes", f"{count(procedure.get('votes'))} in all, {count(export.rows['votes'])} in this dataset"),
        (
            "Annotators",
            f"{count(procedure.get('annotators'))} in all, {count(export.annotators)} in this dataset",
        ),
        (
            "Simulated votes",
            count((crowd.get("simulated") or {}).get("votes")) + " (marked `simulated` in `votes`)",
        ),
        ("Check rate", percent(checks.get("rate"))),
        (
            "Checks",
            ", ".join(
                f"{kind}: {count((checks.get(kind) or {}).get('checks'))} "
                f"({count(((checks.get(kind) or {}).get('people') or {}).get('correct'))} of "
                f"{count(((checks.get(kind) or {}).get('people') or {}).get('answered'))} people's answers as expected)"
                for kind in ("gold", "instructed")
            ),
        ),
        ("Flags", _thresholds_text(thresholds)),
        (
            "Exclusion rule",
            "flagged annotators are excluded when a ballot closes"
            if study.exclude_flagged_annotators
            else "none automatic; researchers exclude by hand",
        ),
        ("Annotators excluded", count(exclusions.get("annotators") or 0)),
    ]
    return "## Design\n\n" + "\n".join(f"- **{label}**: {value}" for label, value in facts)


def _thresholds_text(thresholds: QualityThresholds) -> str:
    parts = []
    if thresholds.fast_ms is not None and thresholds.max_fast_share is not None:
        parts.append(
            f"more than {percent(thresholds.max_fast_share, 0)} of answers under {thresholds.fast_ms} ms"
        )
    if thresholds.position_alpha is not None:
        parts.append(f"position bias at p < {number(thresholds.position_alpha)} (Holm)")
    if thresholds.min_majority_agreement is not None:
        parts.append(f"agreement with the majority under {percent(thresholds.min_majority_agreement, 0)}")
    if thresholds.min_self_agreement is not None:
        parts.append(f"self-agreement under {percent(thresholds.min_self_agreement, 0)}")
    if thresholds.max_failed_checks is not None:
        parts.append(f"more than {thresholds.max_failed_checks} failed checks")
    return "; ".join(parts) or "none"


def _figures_section(card: Mapping) -> str:
    precision = card.get("precision") or {}
    resolution = card.get("resolution") or {}
    repeatability = card.get("repeatability") or {}
    halves = repeatability.get("split_half") or {}
    alpha = repeatability.get("krippendorff_alpha") or {}
    facts = [
        (
            "Precision",
            f"mean SD of ȳ {number(precision.get('mean_sd'))} over {count(precision.get('replicates'))} "
            "bootstrap replicates",
        ),
        (
            "Resolution",
            f"{number(resolution.get('resolution'))}: the smallest score difference at which the votes "
            f"agree with the scores {percent(resolution.get('target'), 0)} of the time",
        ),
        (
            "Repeatability (split half)",
            f"ρ {number(halves.get('rho'))}, ρ_w {number(halves.get('rho_w'))} between "
            f"the rankings of two halves of the annotators ({count(halves.get('splits'))} splits)",
        ),
        (
            "Repeatability (Krippendorff's α)",
            f"{number(alpha.get('alpha'))} over {count(alpha.get('pairs'))} pairs judged more than once",
        ),
    ]
    for entry in card.get("reproducibility") or []:
        facts.append(
            (
                f"Reproducibility with `{entry.get('study')}`",
                f"ρ {number(entry.get('rho'))}, ρ_w {number(entry.get('rho_w'))} over {count(entry.get('items'))} items",
            )
        )
    if not card.get("reproducibility"):
        facts.append(("Reproducibility", "no finished replication of these items yet"))
    return (
        "## The instrument's figures\n\n"
        + "\n".join(f"- **{label}**: {value}" for label, value in facts)
        + (
            "\n\nFrom the instrument card below (Welty et al., “Metrology for AI”, §5), computed on every item."
        )
    )


def _hidden_section(card: Mapping, export: HubExport) -> str:
    split = card.get("split")
    if not split:
        return "## Hidden test part\n\nThis study keeps none: every item and every vote is here."
    return (
        "## Hidden test part\n\n"
        f"{count(export.withheld_items)} items ({percent(split.get('hidden_share'), 0)}), drawn from the study's "
        "seed when it started and stratified by semantic area, form its hidden test part, on which its "
        "leaderboard ranks models. They are **withheld**: they are not in `items`, "
        f"and the {count(export.withheld_votes)} votes that involve one of them are not in `votes`. `rank` and "
        "`area_rank` are places within the public part, so they show no gap where a hidden item stands. "
        "The ballots' sizes and vote counts are the whole study's, as its public instrument card states them: "
        "with `last_ballot` they tell how many hidden items reached each ballot, never which."
    )


def _license_section(options: HubOptions) -> str:
    text = f"## License\n\n`{options.license}`, chosen by the study's researchers when they exported it."
    if options.license == "other":
        text += " The terms are theirs to state here."
    return text


def _day(iso: str | None) -> str:
    return iso[:10] if iso else "—"

"""A study's public development part and hidden test part: the draw, who sees which, and their figures.

The draw (``items_split_draw``) happens when the study starts, from the study's seed and
``hidden_share`` (``collection.split``, stratified by semantic area), and is fixed from then on: the
setting freezes with the plan, and a trigger (migration 0018) refuses to move an item between the parts
once the study has left its draft. A study with ``hidden_share`` 0 has no hidden part and behaves as
before the split existed.

Who sees the human scores of the hidden part (``hidden_part_visible_to``): the study's creator,
superusers, and accounts holding the permission ``collection.view_hidden_part``. Everyone else, staff
included, sees the development part only; the public pages, API and card never show the hidden part.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from django.db import transaction
from django.db.models import Q

from collection import arrays
from collection.models import Item, Study
from collection.split import split_draw
from common.errors import StudyStateError

SPLIT_STREAM = 7717  # the study's seed drawn with this stream for the split (SeedSequence entropy)
HIDDEN_PART_PERMISSION = "collection.view_hidden_part"
HIDDEN_PART_REFUSAL = (
    "study {slug!r} keeps a hidden test part: its per-item scores, votes and exports are for its "
    "researchers only (its creator, superusers, and accounts with the permission “Can see the human scores "
    "of the hidden test parts”); ask an administrator for that permission"
)
SPLIT_FIXED = (
    "the hidden test part of study {slug!r} was drawn when it started and is fixed: annotators have voted on "
    "the items of both parts, and moving an item between them would publish a score kept hidden"
)


def has_hidden_part(study: Study) -> bool:
    """Whether the study keeps a hidden test part (its setting; the items are drawn at the start)."""
    return study.hidden_share > 0


def hidden_part_visible_to(user, study: Study) -> bool:
    """Whether ``user`` may see the human scores of the study's hidden test part: always when it has
    none; otherwise its creator, a superuser, or an account with ``collection.view_hidden_part``."""
    if not has_hidden_part(study):
        return True
    if user is None or not user.is_authenticated or not user.is_active:
        return False
    return bool(
        user.is_superuser
        or (study.created_by_id is not None and study.created_by_id == user.pk)
        or user.has_perm(HIDDEN_PART_PERMISSION)
    )


def hidden_items_q(user, *, prefix: str = "") -> Q | None:
    """The items (through ``prefix``, e.g. "item__") whose human scores ``user`` may not see, as a filter
    for the admin's lists: the hidden items of studies it is not a researcher of; None when none."""
    if user.is_active and (user.is_superuser or user.has_perm(HIDDEN_PART_PERMISSION)):
        return None
    return Q(**{f"{prefix}hidden": True}) & ~Q(**{f"{prefix}study__created_by": user.pk})


def hidden_mask(study: Study) -> np.ndarray:
    """True for each item of the hidden test part, by index (all False for a study without one)."""
    if not has_hidden_part(study):
        return np.zeros(study.items.count(), dtype=bool)
    return arrays.item_hidden(study_id=study.pk)


def split_planned(study: Study) -> np.ndarray:
    """The hidden test part the study's current items and settings give (what its start will store)."""
    item_count = study.items.count()
    if not has_hidden_part(study) or item_count == 0:
        return np.zeros(item_count, dtype=bool)
    copied = _split_of_original(study, item_count)
    if copied is not None:
        return copied
    rng = np.random.default_rng([study.seed, SPLIT_STREAM])
    return split_draw(
        arrays.item_areas(study_id=study.pk),
        study.hidden_share,
        rng,
        order_key=_prior_ranking(study, item_count),
    )


def _same_items(study: Study, other: Study) -> bool:
    """The two studies hold the same items at the same indices (a duplicate whose pools did not change)."""

    def pairs(of: Study):
        return list(
            of.items.order_by("index").values_list("index", "area__name", "token_a__text", "token_b__text")
        )

    return pairs(study) == pairs(other)


def _split_of_original(study: Study, item_count: int) -> np.ndarray | None:
    """A replication hides what its original hides: the original's hidden part, when it has one with
    the same share and the same items (a replication that hid others would publish what it hid)."""
    original = study.duplicated_from
    if (
        original is None
        or original.is_draft
        or original.hidden_share != study.hidden_share
        or original.items.count() != item_count
        or not _same_items(study, original)
    ):
        return None
    return arrays.item_hidden(study_id=original.pk)


def _prior_ranking(study: Study, item_count: int) -> np.ndarray | None:
    """The final scores of the finished study this one replicates (same items), to spread the test part
    along; None before any ranking of these items exists (the usual case: a random order)."""
    original = study.duplicated_from
    if (
        original is None
        or original.status != Study.Status.FINISHED
        or original.items.count() != item_count
        or not _same_items(study, original)
    ):
        return None
    return arrays.final_scores(study_id=original.pk, item_count=item_count)[0]


@transaction.atomic
def items_split_draw(*, study: Study) -> int:
    """Store the study's hidden test part (``split_planned``) on its items; returns how many are hidden.

    Only while the study is a draft (``study_start`` calls it just before the first ballot opens);
    afterwards 409, and the database refuses it too.
    """
    study = Study.objects.select_for_update().get(pk=study.pk)
    if not study.is_draft:
        raise StudyStateError(SPLIT_FIXED.format(slug=study.slug))
    hidden = split_planned(study)
    indices = np.flatnonzero(hidden).tolist()
    Item.objects.filter(study=study).exclude(index__in=indices).update(hidden=False)
    Item.objects.filter(study=study, index__in=indices).update(hidden=True)
    return len(indices)


# --- what the admin shows ------------------------------------------------------------------------------


@dataclass(frozen=True)
class SplitSummary:
    """The parts of a study, per area, and once finished how the test part spreads over the ranking."""

    share: float
    drawn: bool  # False for a draft: the counts are what the start will draw
    development: int
    test: int
    by_area: list[dict]  # {"area", "items", "test", "expected"}
    by_fifth: list[dict] | None  # {"ranks", "items", "test", "share"} over the final ranking


def split_summary(*, study: Study) -> SplitSummary | None:
    """The development and test counts per area (for a draft, the ones its start will draw), and for a
    finished study the test part's share in each fifth of the final ranking; None without a split."""
    if not has_hidden_part(study):
        return None
    drawn = not study.is_draft
    hidden = hidden_mask(study) if drawn else split_planned(study)
    areas = arrays.item_areas(study_id=study.pk)
    names = dict(study.areas.values_list("pk", "name"))
    area_ids, code = np.unique(areas, return_inverse=True)
    sizes = np.bincount(code, minlength=area_ids.size)
    tests = np.bincount(code, weights=hidden, minlength=area_ids.size).astype(np.int64)
    expected = sizes * study.hidden_share
    by_area = sorted(
        (
            {
                "area": names.get(area, str(area)),
                "items": int(size),
                "test": int(test),
                "expected": float(quota),
            }
            for area, size, test, quota in zip(area_ids.tolist(), sizes, tests, expected, strict=True)
        ),
        key=lambda row: row["area"],
    )
    by_fifth = None
    if study.status == Study.Status.FINISHED and hidden.size:
        _, rank, _ = arrays.final_scores(study_id=study.pk, item_count=hidden.size)
        ranked = rank > 0
        if ranked.sum() >= 5:
            order = np.argsort(rank[ranked], kind="stable")
            in_test = hidden[ranked][order]
            by_fifth = []
            for fifth, chunk in enumerate(np.array_split(np.arange(order.size), 5)):  # five rows, not items
                by_fifth.append(
                    {
                        "ranks": f"{chunk[0] + 1}–{chunk[-1] + 1}",
                        "fifth": fifth + 1,
                        "items": int(chunk.size),
                        "test": int(in_test[chunk].sum()),
                        "share": float(in_test[chunk].mean()),
                    }
                )
    test = int(hidden.sum())
    return SplitSummary(
        share=study.hidden_share,
        drawn=drawn,
        development=int(hidden.size - test),
        test=test,
        by_area=by_area,
        by_fifth=by_fifth,
    )

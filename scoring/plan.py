"""The ballot plan: how many items each ballot holds, how many comparisons it costs, and whether
the parameters sit inside the ranges the paper recommends.

PURE module: numpy, scipy and the standard library only.

Symbols follow Lombardo et al., "Top-Rank-Focused Adaptive Vote Collection" (§2.5, §2.7, §4):
``N_items`` items, ``n_b`` ballots (``ballot_count``), selected fraction α (``keep_fraction``),
``M`` appearances of every item in every ballot (``appearances``).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from fractions import Fraction

from common.numbers import as_entered, counted, listed

__all__ = [
    "BUDGET_RULE",
    "AreaPlans",
    "BallotPlan",
    "appearances_for_budget",
    "area_plans",
    "cross_area_share",
    "ballot_plan",
    "ballot_sizes",
    "budget_derivation",
    "comparisons_for",
    "plan_for_budget",
    "round_half_up",
]

BUDGET_RULE = "the largest even M whose N_comp fits"


def round_half_up(value: Fraction | int) -> int:
    """round() of Eq. 2, with halves rounded up (Python's round() would round 22.5 to 22).

    Exact for a ``Fraction``: α·N of Eq. 2 is computed from α as entered (``as_entered``), so that
    0.7·45 = 31.5 rounds to 32, where the float product 31.4999… would give 31.
    """
    return math.floor(Fraction(value) + Fraction(1, 2))


@dataclass(frozen=True)
class BallotPlan:
    """A complete adaptive plan with its derived figures (Eq. 2, 3, 4, 10) and §2.7 warnings."""

    item_count: int
    ballot_count: int
    keep_fraction: float
    appearances: int
    sizes: tuple[int, ...]
    comparisons: tuple[int, ...]
    seconds_per_comparison: float | None = None
    warnings: tuple[str, ...] = field(default=())

    @property
    def total_comparisons(self) -> int:
        """N_comp = Σ_k ⌈M·N(k)/2⌉ (Eq. 3)."""
        return sum(self.comparisons)

    @property
    def top_appearances(self) -> int:
        """M_top = n_b·M: appearances of an item that survives to the last ballot (Eq. 4)."""
        return self.ballot_count * self.appearances

    @property
    def uniform_appearances(self) -> float:
        """M_unif = 2·N_comp/N_items: appearances per item of a uniform plan of equal cost (Eq. 4)."""
        return 2.0 * self.total_comparisons / self.item_count

    @property
    def survivors(self) -> tuple[int, ...]:
        """Items carried from ballot k into ballot k+1, for k = 1 … n_b-1 (Eq. 2)."""
        return self.sizes[1:]

    @property
    def cost_seconds(self) -> float | None:
        """C ≈ t̄_comp·N_comp, person-seconds of voting (Eq. 10); None without t̄_comp."""
        if self.seconds_per_comparison is None:
            return None
        return self.seconds_per_comparison * self.total_comparisons

    def as_dict(self) -> dict:
        """Plain dict of the parameters and every derived figure, for JSON and templates."""
        data = asdict(self)
        data.update(
            sizes=list(self.sizes),
            comparisons=list(self.comparisons),
            warnings=list(self.warnings),
            survivors=list(self.survivors),
            total_comparisons=self.total_comparisons,
            top_appearances=self.top_appearances,
            uniform_appearances=self.uniform_appearances,
            cost_seconds=self.cost_seconds,
        )
        return data


def ballot_sizes(item_count: int, ballot_count: int, keep_fraction: float) -> tuple[int, ...]:
    """N(k) for k = 1 … n_b: ``N(1) = N_items`` and ``N(k) = round(α·N(k-1))`` (Eq. 2).

    α·N(k-1) is computed exactly from α as entered, halves rounded up (``round_half_up``).
    Raises ValueError if a ballot would hold fewer than two items (nothing left to compare).
    """
    _check_counts(item_count, ballot_count, keep_fraction)
    alpha = as_entered(keep_fraction)
    sizes = [int(item_count)]
    for ballot in range(2, ballot_count + 1):
        size = round_half_up(alpha * sizes[-1])
        if size < 2:
            raise ValueError(
                f"ballot {ballot} would hold {counted(size, 'item')}: with {item_count} items and "
                f"keep_fraction α = {keep_fraction:g}, at most {counted(ballot - 1, 'ballot')} "
                f"{'keeps' if ballot - 1 == 1 else 'keep'} two or more items "
                f"(§2.7 asks α ≳ (2/N_items)^(1/(n_b-1)) = {_alpha_lower(item_count, ballot_count):.3f})"
            )
        sizes.append(size)
    return tuple(sizes)


def comparisons_for(size: int, appearances: int) -> int:
    """Comparisons of one ballot: ⌈M·N(k)/2⌉ (Eq. 3); one item appears M+1 times when M·N(k) is odd."""
    return (appearances * size + 1) // 2


def ballot_plan(
    *,
    item_count: int,
    ballot_count: int,
    keep_fraction: float,
    appearances: int,
    seconds_per_comparison: float | None = None,
    sizes=None,
) -> BallotPlan:
    """The plan for given n_b, α and M, with every derived figure and the §2.7 warnings.

    ``sizes`` are the N(k) a study fixed when it started (they are then not derived again by Eq. 2);
    None derives them (``ballot_sizes``).
    """
    if int(appearances) != appearances or appearances < 1:
        raise ValueError(f"appearances M must be a positive whole number, got {appearances!r}")
    appearances = int(appearances)
    if seconds_per_comparison is not None and not (seconds_per_comparison > 0):
        raise ValueError(f"seconds_per_comparison must be positive, got {seconds_per_comparison!r}")
    if sizes is None:
        sizes = ballot_sizes(item_count, ballot_count, keep_fraction)
    else:
        sizes = tuple(int(size) for size in sizes)
        if len(sizes) != ballot_count or sizes[0] != item_count:
            raise ValueError(
                f"fixed ballot sizes {list(sizes)} do not fit {item_count} items in {ballot_count} ballots"
            )
    comparisons = tuple(comparisons_for(size, appearances) for size in sizes)
    plan = BallotPlan(
        item_count=item_count,
        ballot_count=ballot_count,
        keep_fraction=float(keep_fraction),
        appearances=appearances,
        sizes=sizes,
        comparisons=comparisons,
        seconds_per_comparison=seconds_per_comparison,
    )
    return replace(plan, warnings=_warnings(plan))


def plan_for_budget(
    *,
    item_count: int,
    ballot_count: int,
    keep_fraction: float,
    comparison_budget: int,
    seconds_per_comparison: float | None = None,
) -> BallotPlan:
    """The plan with the largest even M whose N_comp (Eq. 3) fits in ``comparison_budget``.

    With an even M every ballot costs exactly M·N(k)/2, so M = 2·⌊budget / Σ_k N(k)⌋.
    """
    sizes = ballot_sizes(item_count, ballot_count, keep_fraction)
    per_unit = sum(sizes)  # comparisons per unit of M/2
    if int(comparison_budget) != comparison_budget or comparison_budget < per_unit:
        raise ValueError(
            f"a budget of {comparison_budget} comparisons is too small: the smallest even M (2) "
            f"already needs {per_unit} comparisons for ballots of {listed(sizes)} items"
        )
    return ballot_plan(
        item_count=item_count,
        ballot_count=ballot_count,
        keep_fraction=keep_fraction,
        appearances=appearances_for_budget(comparison_budget, sizes),
        seconds_per_comparison=seconds_per_comparison,
    )


def appearances_for_budget(comparison_budget: int, sizes) -> int:
    """M for a budget of comparisons: ``BUDGET_RULE``, M = 2·⌊budget / Σ_k N(k)⌋.

    With an even M every ballot k costs exactly M·N(k)/2 comparisons (Eq. 3), so N_comp = (M/2)·Σ_k N(k).
    """
    return 2 * (int(comparison_budget) // sum(sizes))


def budget_derivation(comparison_budget: int, sizes) -> str:
    """How ``appearances_for_budget`` reaches M, in words and with the numbers, for people to check."""
    return (
        f"{BUDGET_RULE}, M = 2·⌊{comparison_budget:,} / ΣN(k)⌋ = 2·⌊{comparison_budget:,} / {sum(sizes):,}⌋"
    )


def _check_counts(item_count: int, ballot_count: int, keep_fraction: float) -> None:
    if int(item_count) != item_count or item_count < 2:
        raise ValueError(f"a study needs at least two items to compare, got {item_count!r}")
    if int(ballot_count) != ballot_count or ballot_count < 1:
        raise ValueError(f"ballot_count n_b must be a positive whole number, got {ballot_count!r}")
    if not (0.0 < keep_fraction < 1.0):
        raise ValueError(f"keep_fraction α must lie strictly between 0 and 1, got {keep_fraction!r}")


def _alpha_upper(ballot_count: int) -> float:
    return 0.1 ** (1.0 / (ballot_count - 1))


def _alpha_lower(item_count: int, ballot_count: int) -> float:
    if ballot_count < 2:
        return 0.0
    return (2.0 / item_count) ** (1.0 / (ballot_count - 1))


def _warnings(plan: BallotPlan) -> tuple[str, ...]:
    """The heuristics of §2.7 (and footnote 6), each with the numbers that trigger it."""
    found = []
    n_b, alpha, m = plan.ballot_count, plan.keep_fraction, plan.appearances
    if n_b < 2:
        found.append(
            "ballot_count n_b = 1: with a single ballot the plan is uniform; the adaptive approach "
            "needs n_b ≥ 2 (§2.7)."
        )
    if n_b > 10:
        found.append(
            f"ballot_count n_b = {n_b} > 10: every ballot pauses the collection while it closes; "
            f"§2.7 suggests n_b ≲ 10."
        )
    if n_b >= 2:
        upper = _alpha_upper(n_b)
        last_share = plan.sizes[-1] / plan.item_count
        if alpha > upper:
            found.append(
                f"keep_fraction α = {alpha:g} > 0.1^(1/(n_b-1)) = {upper:.3f}: {plan.sizes[-1]} of "
                f"{plan.item_count} items ({last_share:.0%}) reach the last ballot; §2.7 suggests at most 10%."
            )
        lower = _alpha_lower(plan.item_count, n_b)
        if alpha < lower:
            found.append(
                f"keep_fraction α = {alpha:g} < (2/N_items)^(1/(n_b-1)) = {lower:.3f}: the last ballot holds "
                f"only {plan.sizes[-1]} items (§2.7 lower bound)."
            )
    if plan.top_appearances < 100:
        found.append(
            f"M_top = n_b·M = {n_b}·{m} = {plan.top_appearances} < 100: the top items are compared fewer "
            f"than 100 times, too few for precise top ranks (§2.7)."
        )
    if m % 2 == 1 and any(size % 2 == 1 for size in plan.sizes):
        odd = [k + 1 for k, size in enumerate(plan.sizes) if size % 2 == 1]
        found.append(
            f"appearances M = {m} is odd: in {'ballot' if len(odd) == 1 else 'ballots'} {listed(odd)} one "
            f"item appears M+1 = {m + 1} times "
            f"(footnote 6 recommends an even M)."
        )
    for k, size in enumerate(plan.sizes, start=1):
        if m > size - 1:
            found.append(
                f"ballot {k} holds {size} items and M = {m} > {size - 1}: some pairs of items are "
                f"compared more than once in that ballot, each time by a different annotator."
            )
    return tuple(found)


# --- one ranking per semantic area (§2.1-2.2) ----------------------------------------------------


@dataclass(frozen=True)
class AreaPlans:
    """The plans of a study ranked per semantic area: one adaptive plan per area, run in the same ballots.

    Each area's ballots shrink by Eq. 2 on the area's own size, N_a(k) = round(α·N_a(k-1)); every item
    appears M times in every ballot, in comparisons with items of its own area only, so ballot k costs
    Σ_a ⌈M·N_a(k)/2⌉ comparisons (Eq. 3 summed over the areas). ``total`` is the study's plan with those
    sums (``sizes``, ``comparisons``) and the areas' §2.7 warnings, each naming the areas it concerns.
    """

    by_area: dict[str, BallotPlan]
    total: BallotPlan


def area_plans(
    *,
    area_item_counts: dict[str, int],
    ballot_count: int,
    keep_fraction: float,
    appearances: int | None = None,
    comparison_budget: int | None = None,
    seconds_per_comparison: float | None = None,
    fixed_sizes: dict[str, list[int]] | None = None,
) -> AreaPlans:
    """One plan per area (Eq. 2-4 on each area's items), with M given or derived from a budget.

    With a budget, M is ``BUDGET_RULE`` over all the areas' ballots: M = 2·⌊budget / Σ_a Σ_k N_a(k)⌋.
    ``fixed_sizes`` maps an area to the N_a(k) its study fixed when it started (not derived again).
    Areas without items are left out. Raises ValueError naming every area whose items are too few for
    the plan, and what each lacks.
    """
    counts = {name: int(count) for name, count in area_item_counts.items() if count > 0}
    if not counts:
        raise ValueError("a study ranked per area needs items in at least one semantic area")
    sizes, problems = {}, []
    fixed_sizes = fixed_sizes or {}
    for name, count in counts.items():
        try:
            sizes[name] = tuple(fixed_sizes.get(name) or ballot_sizes(count, ballot_count, keep_fraction))
        except ValueError as exc:
            problems.append(f"area {name!r} ({counted(count, 'item')}): {exc}")
    if problems:
        raise ValueError(
            "ranked per area, every area must hold enough items for the plan on its own: "
            + "; ".join(problems)
        )
    if appearances is None:
        if comparison_budget is None:
            raise ValueError("the plan needs either appearances M or a comparison budget")
        per_unit = sum(sum(area_sizes) for area_sizes in sizes.values())
        if int(comparison_budget) != comparison_budget or comparison_budget < per_unit:
            raise ValueError(
                f"a budget of {comparison_budget} comparisons is too small: the smallest even M (2) "
                f"already needs {per_unit} comparisons for the ballots of every area"
            )
        appearances = 2 * (int(comparison_budget) // per_unit)
    by_area = {
        name: ballot_plan(
            item_count=counts[name],
            ballot_count=ballot_count,
            keep_fraction=keep_fraction,
            appearances=appearances,
            seconds_per_comparison=seconds_per_comparison,
            sizes=sizes[name],
        )
        for name in counts
    }
    plans = list(by_area.values())
    total = BallotPlan(
        item_count=sum(counts.values()),
        ballot_count=ballot_count,
        keep_fraction=float(keep_fraction),
        appearances=int(appearances),
        sizes=tuple(int(sum(column)) for column in zip(*(plan.sizes for plan in plans), strict=True)),
        comparisons=tuple(
            int(sum(column)) for column in zip(*(plan.comparisons for plan in plans), strict=True)
        ),
        seconds_per_comparison=seconds_per_comparison,
    )
    return AreaPlans(by_area=by_area, total=replace(total, warnings=_area_warnings(by_area)))


def _area_warnings(by_area: dict[str, BallotPlan]) -> tuple[str, ...]:
    """Every area's §2.7 warnings, once each, prefixed with the areas it concerns."""
    areas_of: dict[str, list[str]] = {}
    for name, plan in by_area.items():
        for warning in plan.warnings:
            areas_of.setdefault(warning, []).append(name)
    return tuple(
        f"{'area' if len(names) == 1 else 'areas'} {listed(names)}: {warning}"
        for warning, names in areas_of.items()
    )


def cross_area_share(area_item_counts) -> float:
    """Expected share of a joint ballot's comparisons that set an item of one area against one of another.

    Every pair of distinct items is equally likely to be compared in a schedule whose items all appear
    M times, so the share is that of the cross-area pairs among all pairs:
    1 - Σ_a N_a(N_a - 1) / (N(N - 1)), with N = Σ_a N_a.
    """
    counts = [int(count) for count in area_item_counts if count > 0]
    total = sum(counts)
    if total < 2:
        return 0.0
    within = sum(count * (count - 1) for count in counts)
    return 1.0 - within / (total * (total - 1))

"""python manage.py plan: the cheapest plan that reaches a target precision in simulation (Lombardo et al. §4.1)."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from collection.models import Study
from collection.studies import study_area_item_counts
from scoring.management.commands.simulate import _ProgressBar
from scoring.plan_report import confidence_text, cost_text, not_reached, plan_text, without_warnings_text
from scoring.plan_search import DEFAULT_CONFIDENCE, STRATEGIES, measure_label, parse_target
from scoring.planning import (
    DEFAULT_CONFIRMATION_REPETITIONS,
    DEFAULT_MAX_SIMULATIONS,
    DEFAULT_NOISE,
    DEFAULT_OVERSIGHT,
    DEFAULT_REPETITIONS,
    QUANTILE_CONFIRMATION_REPETITIONS,
    plan_search_run,
)
from scoring.simulation import DISTRIBUTIONS

NOT_REACHED = 3  # the exit status when no plan of the grid reaches the target and is confirmed


class Command(BaseCommand):
    help = (
        "Find the cheapest plan (protocol, n_b, α, M) whose simulated ranking reaches a target, such as "
        "'rho_w>=0.95' or 'recall@50>=0.9', with the voter model of Lombardo et al. §4.1: a one-sided "
        "lower confidence bound (default 90%) must reach it, on the search's repetitions and again on fresh "
        "ones. Print the plan, its figures on the fresh repetitions, its cost in comparisons (Eq. 3), hours "
        "and money, its §2.7 warnings (and the cheapest plan without them) and what was searched. Exits "
        f"with status {NOT_REACHED} when no plan of the grid reaches the target and is confirmed."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--target",
            required=True,
            help="MEASURE>=VALUE: rho_w, tau_w, rho, tau, recall@K or precision@K, e.g. 'recall@50>=0.9'",
        )
        parser.add_argument(
            "--quantile",
            type=float,
            default=None,
            help="reach the target at this quantile of the repetitions (0.1: in about 9 of 10) instead of on average",
        )
        parser.add_argument(
            "--confidence",
            type=float,
            default=DEFAULT_CONFIDENCE,
            help="the one-sided confidence of the answer (default 0.9: 90%%)",
        )
        parser.add_argument("--items", type=int, default=None, help="N_items (or --study)")
        parser.add_argument(
            "--study",
            default=None,
            help="a study's slug: its items (each area's, for a study ranked per area), seconds per "
            "comparison and pay rate",
        )
        parser.add_argument(
            "--noise",
            type=float,
            default=DEFAULT_NOISE,
            help=f"voter noise: σ* drawn from [noise/10, noise] (§4.1.1; default {DEFAULT_NOISE})",
        )
        parser.add_argument(
            "--oversight",
            type=float,
            default=DEFAULT_OVERSIGHT,
            help=f"ε drawn from [oversight/10, oversight] (§4.1.1; default {DEFAULT_OVERSIGHT})",
        )
        parser.add_argument("--voters", type=int, default=100, help="simulated voters (default 100)")
        parser.add_argument("--pay-per-hour", type=float, default=None, help="pay rate per hour of voting")
        parser.add_argument("--currency", default=None, help="the pay's currency, e.g. GBP")
        parser.add_argument(
            "--seconds-per-comparison",
            type=float,
            default=None,
            help="mean time per comparison (default: the study's, else 6 s)",
        )
        parser.add_argument("--distribution", choices=DISTRIBUTIONS, default="exponential")
        parser.add_argument(
            "--repetitions",
            type=int,
            default=None,
            help=f"simulations of each plan in the search (default {DEFAULT_REPETITIONS}, or the fewest a "
            "quantile's bound needs)",
        )
        parser.add_argument(
            "--confirmation-repetitions",
            type=int,
            default=None,
            help="fresh simulations that confirm the plan found (default "
            f"{DEFAULT_CONFIRMATION_REPETITIONS}, {QUANTILE_CONFIRMATION_REPETITIONS} with --quantile)",
        )
        parser.add_argument("--seed", type=int, default=0, help="seed of the simulations (default 0)")
        parser.add_argument(
            "--max-simulations",
            type=int,
            default=DEFAULT_MAX_SIMULATIONS,
            help=f"most plans simulated (default {DEFAULT_MAX_SIMULATIONS})",
        )
        parser.add_argument(
            "--strategy",
            choices=STRATEGIES,
            default="scan",
            help="scan: every plan cheaper than the answer is simulated (exact; the default); bisect: on M "
            "per (n_b, α) only (fewer simulations, assumes more appearances never hurt)",
        )
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args, **options):
        item_count, area_item_counts = options["items"], None
        seconds = options["seconds_per_comparison"]
        pay = options["pay_per_hour"]
        currency = options["currency"]
        if options["study"] is not None:
            if item_count is not None:
                raise CommandError("give --items or --study, not both: a study's items are counted")
            study = Study.objects.filter(slug=options["study"]).first()
            if study is None:
                raise CommandError(f"there is no study with the slug {options['study']!r}")
            if study.ranking_scope == Study.RankingScope.PER_AREA:
                area_item_counts = study_area_item_counts(study=study)
            else:
                item_count = study.items.count()
            seconds = study.seconds_per_comparison if seconds is None else seconds
            pay = study.pay_per_hour if pay is None else pay
            currency = study.pay_currency if currency is None else currency
        if item_count is None and area_item_counts is None:
            raise CommandError("give the number of items (--items N) or a study (--study SLUG)")
        try:
            target = parse_target(options["target"], quantile=options["quantile"])
            result = plan_search_run(
                item_count=item_count,
                area_item_counts=area_item_counts,
                target=target,
                confidence=options["confidence"],
                distribution=options["distribution"],
                noise=options["noise"],
                oversight=options["oversight"],
                voter_count=options["voters"],
                repetitions=options["repetitions"],
                confirmation_repetitions=options["confirmation_repetitions"],
                seed=options["seed"],
                max_simulations=options["max_simulations"],
                strategy=options["strategy"],
                seconds_per_comparison=6.0 if seconds is None else seconds,
                pay_per_hour=pay,
                currency=currency or "",
                progress=None if options["json"] else _ProgressBar(self.stderr),
            )
        except (OSError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(json.dumps(result) if options["json"] else report(result))
        if not result["reached"]:
            raise CommandError(not_reached(result), returncode=NOT_REACHED)


def report(result: dict) -> str:
    """The search's result as text: the plan, its confidence, its figures, cost, warnings, what was searched."""
    p, searched = result["parameters"], result["searched"]
    areas = p.get("area_item_counts")
    items = (
        f"{p['item_count']:,} items in {len(areas)} areas ranked each on its own "
        f"({', '.join(f'{name} {count:,}' for name, count in areas.items())})"
        if areas
        else f"{p['item_count']:,} items"
    )
    lines = [
        f"Target: {result['target']['text']}, with {result['confidence']:.0%} confidence"
        + (", in every area." if areas else "."),
        f"Simulated: {items}, {p['distribution']} similarities, {p['voter_count']} voters "
        f"with σ* in [{p['noise'] / 10:g}, {p['noise']:g}] and ε in [{p['oversight'] / 10:g}, {p['oversight']:g}] "
        f"(§4.1), {p['repetitions']} repetitions per plan (seed {p['seed']}).",
        f"Searched: {searched['simulations']} of {searched['candidates']:,} plans simulated "
        f"({searched['strategy']}, {searched['lines']} lines of n_b and α; n_b in "
        f"{searched['grid']['ballot_counts'][0]}…{searched['grid']['ballot_counts'][-1]}, α in "
        f"{', '.join(f'{a:g}' for a in searched['grid']['keep_fractions'])}, {searched['grid']['appearances']}, "
        f"N_comp ≤ {searched['grid']['max_total_comparisons']:,}), {searched['confirmations']} tried on fresh "
        f"repetitions, in {result['seconds']:.1f} s"
        + (
            "." if result["complete"] else "; stopped at the bound on simulations before the end of the grid."
        ),
    ]
    for failed in result["failed_confirmations"]:
        where = f" in area {failed['area']}" if failed["area"] else ""
        bound = "—" if failed["bound"] is None else f"{failed['bound']:.3f}"
        statistic = "—" if failed["statistic"] is None else f"{failed['statistic']:.3f}"
        lines.append(
            f"Not confirmed: {plan_text(failed['plan'])}, {failed['plan']['total_comparisons']:,} comparisons: "
            f"{statistic}{where} on {failed['repetitions']} fresh repetitions, its {failed['level']:.1%} lower "
            f"bound {bound}; later plans were judged on those repetitions too."
        )
    lines.append("")
    plan = result["plan"]
    if plan is None:
        lines.append("No plan of the grid reaches the target and is confirmed.")
        return "\n".join(lines)
    lines.append(f"Cheapest plan: {plan_text(plan)}.")
    lines.append(f"Cost: {cost_text(result['cost'])}.")
    lines.append(confidence_text(result, result))
    if not result["complete"]:
        lines.append(
            f"The cheapest found before the bound on simulations: {searched['unsimulated_cheaper']:,} cheaper "
            "plans were not simulated, and one of them may reach."
            if searched["strategy"] == "scan"
            else "The cheapest found before the bound on simulations: a cheaper plan may exist."
        )
    elif searched["strategy"] == "bisect" and searched["unsimulated_cheaper"]:
        lines.append(
            f"Bisection: {searched['unsimulated_cheaper']:,} cheaper plans were not simulated; the answer is the "
            "cheapest only if more appearances never make a plan worse (--strategy scan checks them all)."
        )
    figures_of = (
        [("", result["figures"])]
        if not result["areas"]
        else [
            (f" (area {area['area']}, {area['item_count']:,} items)", area["figures"])
            for area in result["areas"]
        ]
    )
    for where, figures in figures_of:
        confirmation = result["confirmation"]
        lines += [
            "",
            f"On the {confirmation['repetitions']} fresh repetitions{where}:",
            f"{'measure':<16}{'mean ± sd':>18}{'10th–90th percentile':>24}",
        ]
        for figure in figures:
            if figure["mean"] is None:
                continue
            sd = "—" if figure["sd"] is None else f"{figure['sd']:.3f}"
            spread = f"{figure['mean']:.3f} ± {sd}"
            percentiles = f"{figure['p10']:.3f} – {figure['p90']:.3f}"
            lines.append(f"{measure_label(figure['key']):<16}{spread:>18}{percentiles:>24}")
    if result["areas"]:
        lines += ["", f"{'area':<20}{'items':>8}{'ballots N_a(k)':>32}{'comparisons':>13}"]
        for area in result["areas"]:
            sizes = " → ".join(f"{s:,}" for s in area["sizes"])
            lines.append(f"{area['area']:<20}{area['item_count']:>8,}{sizes:>32}{area['comparisons']:>13,}")
    lines.append("")
    if result["warnings"]:
        lines += [f"Warning: {warning}" for warning in result["warnings"]]
        lines.append(without_warnings_text(result))
    else:
        lines.append("The plan lies within the ranges §2.7 recommends.")
    return "\n".join(lines)

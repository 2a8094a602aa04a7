"""python manage.py plan: the cheapest plan that reaches a target precision in simulation (Lombardo et al. §4.1)."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from collection.models import Study
from scoring.management.commands.simulate import _ProgressBar
from scoring.plan_search import STRATEGIES, measure_label, parse_target
from scoring.planning import (
    DEFAULT_MAX_SIMULATIONS,
    DEFAULT_NOISE,
    DEFAULT_OVERSIGHT,
    DEFAULT_REPETITIONS,
    plan_search_run,
)
from scoring.simulation import DISTRIBUTIONS

NOT_REACHED = 3  # the exit status when no plan of the grid reaches the target


class Command(BaseCommand):
    help = (
        "Find the cheapest plan (protocol, n_b, α, M) whose simulated ranking reaches a target, such as "
        "'rho_w>=0.95' or 'recall@50>=0.9', with the voter model of Lombardo et al. §4.1; print its "
        "figures with their spread, its cost in comparisons (Eq. 3), hours and money, its §2.7 warnings "
        f"and what was searched. Exits with status {NOT_REACHED} when no plan of the grid reaches the target."
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
        parser.add_argument("--items", type=int, default=None, help="N_items (or --study)")
        parser.add_argument(
            "--study", default=None, help="a study's slug: its items, seconds per comparison and pay rate"
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
            default=DEFAULT_REPETITIONS,
            help=f"simulations of each plan (default {DEFAULT_REPETITIONS})",
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
            default="bisect",
            help="bisect on M per (n_b, α) (assumes more appearances never hurt), or scan cheapest first",
        )
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args, **options):
        item_count = options["items"]
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
                raise CommandError(
                    f"“{study}” is ranked per area; plans from a target are searched for one joint ranking: "
                    "run the command with --items for each area's number of items"
                )
            item_count = study.items.count()
            seconds = study.seconds_per_comparison if seconds is None else seconds
            pay = study.pay_per_hour if pay is None else pay
            currency = study.pay_currency if currency is None else currency
        if item_count is None:
            raise CommandError("give the number of items (--items N) or a study (--study SLUG)")
        try:
            target = parse_target(options["target"], quantile=options["quantile"])
            result = plan_search_run(
                item_count=item_count,
                target=target,
                distribution=options["distribution"],
                noise=options["noise"],
                oversight=options["oversight"],
                voter_count=options["voters"],
                repetitions=options["repetitions"],
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
            raise CommandError(
                f"no plan of the grid reaches {result['target']['text']}"
                + ("" if result["complete"] else " within the bound of simulations (--max-simulations)")
                + ": lower the target, or lower the voter noise",
                returncode=NOT_REACHED,
            )


def report(result: dict) -> str:
    """The search's result as text: the plan, its figures, its cost, its warnings, what was searched."""
    p, searched = result["parameters"], result["searched"]
    lines = [
        f"Target: {result['target']['text']}.",
        f"Simulated: {p['item_count']:,} items, {p['distribution']} similarities, {p['voter_count']} voters "
        f"with σ* in [{p['noise'] / 10:g}, {p['noise']:g}] and ε in [{p['oversight'] / 10:g}, {p['oversight']:g}] "
        f"(§4.1), {p['repetitions']} repetitions per plan (seed {p['seed']}).",
        f"Searched: {searched['simulations']} of {searched['candidates']:,} plans simulated "
        f"({searched['strategy']}, {searched['lines']} lines of n_b and α; n_b in "
        f"{searched['grid']['ballot_counts'][0]}…{searched['grid']['ballot_counts'][-1]}, α in "
        f"{', '.join(f'{a:g}' for a in searched['grid']['keep_fractions'])}, {searched['grid']['appearances']}, "
        f"N_comp ≤ {searched['grid']['max_total_comparisons']:,}) in {result['seconds']:.1f} s"
        + (
            "." if result["complete"] else "; stopped at the bound on simulations before the end of the grid."
        ),
        "",
    ]
    plan = result["plan"]
    if plan is None:
        lines.append("No plan of the grid reaches the target.")
        return "\n".join(lines)
    if plan["protocol"] == "uniform":
        lines.append(f"Cheapest plan: uniform (one ballot, n_b = 1), M = {plan['appearances']}.")
    else:
        lines.append(
            f"Cheapest plan: adaptive, n_b = {plan['ballot_count']}, α = {plan['keep_fraction']:g}, "
            f"M = {plan['appearances']} (ballots of {' → '.join(f'{s:,}' for s in plan['sizes'])} items)."
        )
    cost = result["cost"]
    money = ""
    if cost["money"] is not None:
        money = f", {cost['money']:,.2f} {cost['currency']} at {cost['pay_per_hour']:g} per hour".rstrip()
    lines.append(
        f"Cost: {cost['comparisons']:,} comparisons (N_comp, Eq. 3), {cost['hours']:,.2f} hours of voting at "
        f"{cost['seconds_per_comparison']:g} s each (Eq. 10){money}."
    )
    if not result["complete"]:
        lines.append("The cheapest found before the bound on simulations: a cheaper plan may exist.")
    lines += ["", f"{'measure':<16}{'mean ± sd':>18}{'10th–90th percentile':>24}"]
    for figure in result["figures"]:
        if figure["mean"] is None:
            continue
        sd = "—" if figure["sd"] is None else f"{figure['sd']:.3f}"
        spread = f"{figure['mean']:.3f} ± {sd}"
        percentiles = f"{figure['p10']:.3f} – {figure['p90']:.3f}"
        lines.append(f"{measure_label(figure['key']):<16}{spread:>18}{percentiles:>24}")
    lines.append("")
    if result["warnings"]:
        lines += [f"Warning: {warning}" for warning in result["warnings"]]
    else:
        lines.append("The plan lies within the ranges §2.7 recommends.")
    return "\n".join(lines)

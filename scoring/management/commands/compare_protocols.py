"""python manage.py compare_protocols: uniform, adaptive and confidence elimination at equal budget."""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from collection.models import Study
from collection.studies import study_plan
from common.errors import ServiceError
from scoring.elimination import DEFAULT_CUTOFFS, DEFAULT_DELTA
from scoring.management.arguments import add_voter_model_arguments, voter_model_options
from scoring.management.commands.simulate import _ProgressBar
from scoring.plan_search import parse_target
from scoring.protocol_comparison import Protocols
from scoring.protocol_runs import (
    comparison_svgs,
    comparison_table,
    protocol_comparison_run,
    protocols_for_budget,
    score_model_comparison_run,
    score_model_table,
    similarity_for,
)
from scoring.simulation import CROWD_MIXES, DISTRIBUTIONS, SimulationConfig

_DEFAULTS = SimulationConfig()
MAX_REPETITIONS = 1_000
MAX_BUDGET = 2_000_000


def _whole_numbers(text: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise CommandError(f"expected whole numbers separated by commas, got {text!r}") from None
    if not values:
        raise CommandError(f"expected at least one whole number, got {text!r}")
    return values


class Command(BaseCommand):
    help = (
        "Compare the uniform protocol (Lombardo et al. §2.4), the paper's adaptive one (§2.5) and a batched "
        "confidence-elimination protocol (Heckel et al. 2019) at equal numbers of comparisons, on the §4.1 "
        "voter model: mean ± sd of ρ_w, τ_w, ρ, τ and top-K recall (= P@K) over repetitions, and with "
        "--target the budget each protocol needs to reach it. Defaults are the paper's §4.2 setting."
    )

    def add_arguments(self, parser):
        parser.add_argument("--distribution", choices=DISTRIBUTIONS, default="exponential")
        parser.add_argument(
            "--file",
            dest="similarity_file",
            default=None,
            help="CSV with a 'similarity' column (with 'file')",
        )
        parser.add_argument("--items", type=int, default=None, help="N_items (default 990, or the study's)")
        parser.add_argument(
            "--study", default=None, help="a study's slug: its items and its plan (n_b, α, M)"
        )
        parser.add_argument("--ballots", type=int, default=_DEFAULTS.ballot_count, help="adaptive n_b")
        parser.add_argument("--keep-fraction", type=float, default=_DEFAULTS.keep_fraction, help="adaptive α")
        parser.add_argument(
            "--appearances", type=int, default=None, help=f"adaptive M (default {_DEFAULTS.appearances})"
        )
        parser.add_argument(
            "--budget",
            type=int,
            default=None,
            help="comparisons: the adaptive plan gets the largest even M that fits, and every protocol its N_comp",
        )
        parser.add_argument("--rounds", type=int, default=7, help="elimination: rounds R (default 7)")
        parser.add_argument(
            "--cutoffs",
            default=",".join(map(str, DEFAULT_CUTOFFS)),
            help="elimination: the top-K cutoffs to settle (default 10,50,100; those ≥ N are dropped)",
        )
        parser.add_argument(
            "--delta", type=float, default=DEFAULT_DELTA, help=f"elimination: δ (default {DEFAULT_DELTA})"
        )
        parser.add_argument(
            "--top-k", default="10,50,100", help="K of top-K recall and P@K (default 10,50,100)"
        )
        parser.add_argument(
            "--target",
            action="append",
            default=[],
            help="also find each protocol's budget to reach this, e.g. 'rho_w>=0.9' (repeatable)",
        )
        parser.add_argument(
            "--sweep",
            default="",
            help="also compare at the N_comp of these adaptive M, e.g. 10,40,80 (for the by-budget figure)",
        )
        parser.add_argument("--repetitions", type=int, default=50, help="repetitions (default 50)")
        parser.add_argument(
            "--target-repetitions", type=int, default=20, help="repetitions per budget tried for --target"
        )
        parser.add_argument(
            "--max-budget",
            type=int,
            default=500_000,
            help="largest budget tried for --target (default 500,000)",
        )
        parser.add_argument("--seed", type=int, default=0, help="seed of numpy's SeedSequence (default 0)")
        parser.add_argument("--voters", type=int, default=_DEFAULTS.voter_count, help="N_voters")
        add_voter_model_arguments(parser)
        parser.add_argument(
            "--n0", type=float, default=_DEFAULTS.weight_offset, help="weight offset of ρ_w, τ_w"
        )
        parser.add_argument(
            "--score-models",
            action="store_true",
            help="instead: rank the adaptive protocol's votes by every score model (Borda, Bradley-Terry, "
            "worker-aware Bradley-Terry), paired with Borda, per crowd",
        )
        parser.add_argument(
            "--crowd",
            action="append",
            choices=list(CROWD_MIXES),
            default=[],
            help="with --score-models: the crowd (repeatable; default every one): the §4.1 voters ('paper') or "
            "a share of them replaced by speeders, one-sided or random annotators, or issue 10's mix",
        )
        parser.add_argument(
            "--no-model-selects",
            action="store_true",
            help="with --score-models: leave out the variant where the model also picks each close's survivors",
        )
        parser.add_argument("--svg", default=None, help="write the SVG figures into this folder")
        parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")

    def handle(self, *args, **options):
        for name, bound in (("repetitions", MAX_REPETITIONS), ("target_repetitions", MAX_REPETITIONS)):
            if not 1 <= options[name] <= bound:
                raise CommandError(
                    f"--{name.replace('_', '-')} must be from 1 to {bound:,}, got {options[name]}"
                )
        if not 1 <= options["max_budget"] <= MAX_BUDGET:
            raise CommandError(f"--max-budget must be from 1 to {MAX_BUDGET:,}, got {options['max_budget']}")
        folder = Path(options["svg"]) if options["svg"] else None
        if folder is not None and not folder.is_dir():
            raise CommandError(f"--svg: {folder} is not a folder")
        item_count = options["items"]
        ballots, alpha, appearances = options["ballots"], options["keep_fraction"], options["appearances"]
        if options["study"] is not None:
            if item_count is not None or options["budget"] is not None or appearances is not None:
                raise CommandError(
                    "--study brings its items and its plan: leave out --items, --budget and --appearances"
                )
            study = Study.objects.filter(slug=options["study"]).first()
            if study is None:
                raise CommandError(f"there is no study with the slug {options['study']!r}")
            if study.ranking_scope == Study.RankingScope.PER_AREA:
                raise CommandError(
                    f"“{study}” is ranked per area; the comparison is of one joint ranking: run it with --items "
                    "and the plan of each area"
                )
            try:
                plan = study_plan(study=study)
            except ServiceError as exc:
                raise CommandError(str(exc)) from None
            item_count, ballots, alpha, appearances = (
                plan.item_count,
                plan.ballot_count,
                plan.keep_fraction,
                plan.appearances,
            )
        if options["budget"] is not None and appearances is not None:
            raise CommandError("give --budget or --appearances, not both: the budget sets M")
        if item_count is None and options["distribution"] != "file":
            item_count = _DEFAULTS.item_count
        try:
            similarity = similarity_for(options["distribution"], item_count, options["similarity_file"])
            item_count = similarity.size
            elimination = dict(
                round_count=options["rounds"],
                cutoffs=tuple(_whole_numbers(options["cutoffs"])),
                delta=options["delta"],
            )
            if options["budget"] is not None:
                protocols = protocols_for_budget(
                    item_count=item_count,
                    ballot_count=ballots,
                    keep_fraction=alpha,
                    comparison_budget=options["budget"],
                    **elimination,
                )
            else:
                protocols = Protocols(
                    item_count=item_count,
                    ballot_count=ballots,
                    keep_fraction=alpha,
                    appearances=_DEFAULTS.appearances if appearances is None else appearances,
                    **elimination,
                )
            voter_model = SimulationConfig(
                item_count=item_count,
                ballot_count=1,
                appearances=2,
                **voter_model_options(options),
                weight_offset=options["n0"],
            )
            if options["score_models"]:
                result = score_model_comparison_run(
                    protocols=protocols,
                    similarity=similarity,
                    voter_model=voter_model,
                    crowds=options["crowd"] or list(CROWD_MIXES),
                    repetitions=options["repetitions"],
                    seed=options["seed"],
                    top_ks=_whole_numbers(options["top_k"]),
                    model_selects=not options["no_model_selects"],
                    progress=None if options["json"] else _ProgressBar(self.stderr),
                )
                result["parameters"]["distribution"] = options["distribution"]
                self.stdout.write(
                    json.dumps(result)
                    if options["json"]
                    else score_model_table(result, distribution=options["distribution"])
                )
                return
            targets = [parse_target(text) for text in options["target"]]
            sweep = _whole_numbers(options["sweep"]) if options["sweep"] else []
            if any(m < 1 for m in sweep):
                raise CommandError("--sweep takes appearances M ≥ 1")
            result = protocol_comparison_run(
                protocols=protocols,
                similarity=similarity,
                voter_model=voter_model,
                repetitions=options["repetitions"],
                seed=options["seed"],
                top_ks=_whole_numbers(options["top_k"]),
                targets=targets,
                target_repetitions=options["target_repetitions"],
                sweep=sweep,
                max_budget=options["max_budget"],
                progress=None if options["json"] else _ProgressBar(self.stderr),
            )
        except (OSError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        result["parameters"]["distribution"] = options["distribution"]
        if options["svg"]:
            stem = f"protocols-{options['distribution'].replace('_', '-')}"
            for name, svg in comparison_svgs(result, distribution=options["distribution"]).items():
                (folder / f"{stem}-{name}.svg").write_text(svg + "\n", encoding="utf-8")
        if options["json"]:
            self.stdout.write(json.dumps(result))
            return
        self.stdout.write(comparison_table(result, distribution=options["distribution"]))

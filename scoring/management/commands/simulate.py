"""python manage.py simulate: Table 2 of Lombardo et al. for one underlying distribution."""

from __future__ import annotations

import json
import sys

from django.core.management.base import BaseCommand, CommandError

from scoring.management.arguments import add_voter_model_arguments, voter_model_options
from scoring.services import simulation_run
from scoring.simulation import DISTRIBUTIONS, METRICS, SimulationConfig

_DEFAULTS = SimulationConfig()
_LABELS = {"rho_w": "ρ_w", "tau_w": "τ_w", "rho": "ρ", "tau": "τ"}


class Command(BaseCommand):
    help = (
        "Simulate relatedness-driven voting (Lombardo et al. §4) and compare the uniform and the "
        "adaptive protocol at the same number of comparisons: mean ± SD of ρ_w, τ_w, ρ, τ against "
        "the theoretical ranking over repeated simulations (the paper's Table 2). Defaults are the "
        "paper's parameters."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--distribution",
            choices=DISTRIBUTIONS,
            default=_DEFAULTS.distribution,
            help="underlying similarity z_i (§4.1.1); 'file' reads --file",
        )
        parser.add_argument(
            "--file",
            dest="similarity_file",
            default=None,
            help="CSV with a 'similarity' column (default: the paper's 990 embedding similarities)",
        )
        parser.add_argument("--repetitions", type=int, default=50, help="simulations to average (default 50)")
        parser.add_argument("--seed", type=int, default=0, help="seed of numpy's SeedSequence (default 0)")
        parser.add_argument(
            "--items",
            type=int,
            default=None,
            help=f"N_items (default {_DEFAULTS.item_count}; the file's row count with --distribution file)",
        )
        parser.add_argument("--ballots", type=int, default=_DEFAULTS.ballot_count, help="n_b, ballots")
        parser.add_argument(
            "--keep-fraction",
            type=float,
            default=_DEFAULTS.keep_fraction,
            help="α, fraction of items kept after each ballot",
        )
        parser.add_argument(
            "--appearances",
            type=int,
            default=_DEFAULTS.appearances,
            help="M, appearances of every item in every ballot",
        )
        parser.add_argument("--voters", type=int, default=_DEFAULTS.voter_count, help="N_voters")
        add_voter_model_arguments(parser)
        parser.add_argument(
            "--n0", type=float, default=_DEFAULTS.weight_offset, help="weight offset n0 of ρ_w and τ_w"
        )
        parser.add_argument(
            "--jobs", type=int, default=1, help="worker processes (results do not depend on it)"
        )
        parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")

    def handle(self, *args, **options):
        item_count = options["items"]
        if item_count is None:
            item_count = _DEFAULTS.item_count
            if options["distribution"] == "file":
                from scoring.datafiles import EMBEDDING_SIMILARITY_CSV, read_similarity_csv

                try:
                    item_count = read_similarity_csv(
                        options["similarity_file"] or EMBEDDING_SIMILARITY_CSV
                    ).size
                except (OSError, ValueError) as exc:
                    raise CommandError(str(exc)) from None
        try:
            config = SimulationConfig(
                distribution=options["distribution"],
                item_count=item_count,
                ballot_count=options["ballots"],
                keep_fraction=options["keep_fraction"],
                appearances=options["appearances"],
                **voter_model_options(options),
                weight_offset=options["n0"],
            )
            progress = None if options["json"] else _ProgressBar(self.stderr)
            result = simulation_run(
                config=config,
                repetitions=options["repetitions"],
                seed=options["seed"],
                similarity_file=options["similarity_file"],
                jobs=options["jobs"],
                progress=progress,
            )
        except (OSError, ValueError) as exc:
            raise CommandError(str(exc)) from None

        if options["json"]:
            self.stdout.write(json.dumps(result))
            return
        self.stdout.write(_table(result))


class _ProgressBar:
    """A one-line progress bar on stderr."""

    def __init__(self, stream, width: int = 30):
        self.stream = stream
        self.width = width

    def __call__(self, done: int, total: int) -> None:
        filled = round(self.width * done / total)
        bar = "#" * filled + "-" * (self.width - filled)
        self.stream.write(f"\rsimulating [{bar}] {done}/{total}", ending="")
        if done == total:
            self.stream.write("")
        if hasattr(self.stream, "flush"):
            self.stream.flush()
        elif sys.stderr:
            sys.stderr.flush()


def _table(result: dict) -> str:
    p = result["parameters"]
    lines = [
        f"distribution {p['distribution']}: N_items = {p['item_count']}, n_b = {p['ballot_count']}, "
        f"α = {p['keep_fraction']:g}, M = {p['appearances']}, N_comp = {p['total_comparisons']} "
        f"(M_unif = {p['uniform_appearances']:.2f}, M_top = {p['top_appearances']}), "
        f"N_voters = {p['voter_count']}, n0 = {p['weight_offset']:g}",
        f"mean ± SD over {p['repetitions']} repetitions (seed {p['seed']}), {result['seconds']:.1f} s",
        "",
        f"{'protocol':<10}" + "".join(f"{_LABELS[m]:>18}" for m in METRICS),
    ]
    for protocol in ("uniform", "adaptive"):
        cells = []
        for metric in METRICS:
            stats = result[protocol][metric]
            sd = "—" if stats["sd"] is None else f"{stats['sd']:.4f}"
            cells.append(f"{stats['mean']:.4f} ± {sd}".rjust(18))
        lines.append(f"{protocol:<10}" + "".join(cells))
    return "\n".join(lines)

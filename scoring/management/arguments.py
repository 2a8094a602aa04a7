"""Command-line arguments shared by the simulation commands (``simulate``, ``simulate_voters``,
``compare_protocols``)."""

from __future__ import annotations

from scoring.simulation import SimulationConfig

_DEFAULTS = SimulationConfig()


def add_voter_model_arguments(parser) -> None:
    """The ranges of the §4.1 voter model: nonconformity σ* and oversight ε (the paper's defaults)."""
    for name, default, symbol in (
        ("nonconformity-min", _DEFAULTS.nonconformity_min, "σ* lower bound"),
        ("nonconformity-max", _DEFAULTS.nonconformity_max, "σ* upper bound"),
        ("oversight-min", _DEFAULTS.oversight_min, "ε lower bound"),
        ("oversight-max", _DEFAULTS.oversight_max, "ε upper bound"),
    ):
        parser.add_argument(f"--{name}", type=float, default=default, help=symbol)


def voter_model_options(options) -> dict:
    """The §4.1 voter model's settings of ``SimulationConfig`` from the parsed arguments above and ``--voters``."""
    return {
        "voter_count": options["voters"],
        "nonconformity_min": options["nonconformity_min"],
        "nonconformity_max": options["nonconformity_max"],
        "oversight_min": options["oversight_min"],
        "oversight_max": options["oversight_max"],
    }

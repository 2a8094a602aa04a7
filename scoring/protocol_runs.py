"""Services of the protocol comparison (``scoring.protocol_comparison``): the run behind
``manage.py compare_protocols``, its text table and its SVG figures."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from scoring.datafiles import EMBEDDING_SIMILARITY_CSV, read_similarity_csv
from scoring.plan import appearances_for_budget, ballot_sizes
from scoring.plan_search import Target, measure_label
from scoring.plots import PALETTE, Interval, Series, intervals_svg, scatter_svg
from scoring.protocol_comparison import (
    PROTOCOLS,
    Protocols,
    budget_to_reach,
    compare_at_budget,
    paired_differences,
    score_model_figures,
)
from scoring.simulation import SimulationConfig, underlying_similarity

ProgressCallback = Callable[[int, int], None]

COLORS = {"uniform": PALETTE[6], "adaptive": PALETTE[0], "elimination": PALETTE[2]}


def similarity_for(distribution: str, item_count: int | None, similarity_file: Path | str | None = None):
    """z_i of §4.1.1 for ``item_count`` items, or the file's values (the paper's 990 by default)."""
    if distribution == "file":
        z = read_similarity_csv(similarity_file or EMBEDDING_SIMILARITY_CSV)
        if item_count is not None and item_count != z.size:
            raise ValueError(
                f"the similarity file holds {z.size} items, not {item_count}: leave out --items with the file"
            )
        return z
    if item_count is None:
        raise ValueError("give the number of items")
    return underlying_similarity(distribution, item_count)


def protocols_for_budget(
    *, item_count: int, ballot_count: int, keep_fraction: float, comparison_budget: int, **elimination
) -> Protocols:
    """The adaptive plan with the largest even M whose N_comp fits the budget (Eq. 3), and the
    elimination's settings; every protocol then spends that N_comp."""
    sizes = ballot_sizes(item_count, ballot_count, keep_fraction)
    appearances = appearances_for_budget(comparison_budget, sizes)
    if appearances < 2:
        raise ValueError(
            f"a budget of {comparison_budget:,} comparisons is too small for the adaptive plan: the smallest even "
            f"M (2) already needs {sum(sizes):,} comparisons for ballots of {sum(sizes):,} item places"
        )
    return Protocols(
        item_count=item_count,
        ballot_count=ballot_count,
        keep_fraction=keep_fraction,
        appearances=appearances,
        **elimination,
    )


def protocol_comparison_run(
    *,
    protocols: Protocols,
    similarity,
    voter_model: SimulationConfig,
    repetitions: int,
    seed: int,
    top_ks: Sequence[int] = (10, 50, 100),
    targets: Sequence[Target] = (),
    target_repetitions: int = 20,
    sweep: Sequence[int] = (),
    max_budget: int = 500_000,
    progress: ProgressCallback | None = None,
) -> dict:
    """The three protocols at the adaptive plan's N_comp; at the N_comp of each M in ``sweep``; and,
    for each target, the budget each protocol needs to reach it.

    ``progress(done, total)`` counts the steps: one per budget compared and one per protocol and target.
    """
    started = time.perf_counter()
    top_ks = sorted({int(k) for k in top_ks if 1 <= int(k) < protocols.item_count})
    total = 1 + len(sweep) + len(targets) * len(PROTOCOLS)
    done = 0

    def step() -> None:
        nonlocal done
        done += 1
        if progress:
            progress(done, total)

    common = dict(similarity=similarity, voter_model=voter_model)
    at_budget = compare_at_budget(protocols, repetitions=repetitions, seed=seed, top_ks=top_ks, **common)
    step()
    swept = []
    for appearances in sweep:
        other = protocols.with_appearances(int(appearances))
        swept.append(
            {
                "appearances": int(appearances),
                "budget": other.budget,
                "figures": compare_at_budget(
                    other, repetitions=repetitions, seed=seed, top_ks=top_ks, **common
                ),
            }
        )
        step()
    reached = []
    for target in targets:
        budgets = {}
        for protocol in PROTOCOLS:
            budgets[protocol] = budget_to_reach(
                protocol,
                target,
                protocols,
                repetitions=target_repetitions,
                seed=seed,
                max_budget=max_budget,
                **common,
            )
            step()
        reached.append(
            {"target": target.as_dict(), "key": target.key, "text": target.describe(), "budgets": budgets}
        )
    return {
        "parameters": {
            **protocols.as_dict(),
            "repetitions": repetitions,
            "seed": seed,
            "top_ks": top_ks,
            "voter_count": voter_model.voter_count,
            "nonconformity": [voter_model.nonconformity_min, voter_model.nonconformity_max],
            "oversight": [voter_model.oversight_min, voter_model.oversight_max],
            "weight_offset": voter_model.weight_offset,
            "target_repetitions": target_repetitions,
            "max_budget": max_budget,
        },
        "at_budget": at_budget,
        "sweep": swept,
        "targets": reached,
        "seconds": round(time.perf_counter() - started, 3),
    }


def comparison_table(result: dict, *, distribution: str = "") -> str:
    """The result as text: one row per protocol, mean ± sd of every measure, then the budgets to reach."""
    p = result["parameters"]
    sizes = " → ".join(f"{s:,}" for s in p["sizes"])
    lines = [
        f"{p['item_count']:,} items{f', {distribution} similarities' if distribution else ''}, "
        f"{p['voter_count']} voters (σ* in [{p['nonconformity'][0]:g}, {p['nonconformity'][1]:g}], "
        f"ε in [{p['oversight'][0]:g}, {p['oversight'][1]:g}]), n0 = {p['weight_offset']:g}; "
        f"mean ± sd over {p['repetitions']} repetitions (seed {p['seed']}), {result['seconds']:.1f} s.",
        f"Every protocol makes N_comp = {p['budget']:,} comparisons: the adaptive plan's (n_b = {p['ballot_count']}, "
        f"α = {p['keep_fraction']:g}, M = {p['appearances']}, ballots of {sizes} items, Eq. 3).",
        f"Elimination: R = {p['round_count']} rounds, cutoffs K = {', '.join(map(str, p['cutoffs']))}, δ = {p['delta']:g} "
        "(Hoeffding with a union bound over items and rounds).",
        "",
    ]
    lines += _figure_rows(result["at_budget"], p["top_ks"])
    for entry in result["sweep"]:
        lines += ["", f"At N_comp = {entry['budget']:,} (adaptive M = {entry['appearances']}):"]
        lines += _figure_rows(entry["figures"], p["top_ks"])
    for entry in result["targets"]:
        lines += ["", f"Budget to reach {entry['text']} ({p['target_repetitions']} repetitions per budget):"]
        for protocol in PROTOCOLS:
            found = entry["budgets"][protocol]
            if found["budget"] is None:
                lines.append(f"  {protocol:<12} not reached within {p['max_budget']:,} comparisons")
            else:
                lines.append(
                    f"  {protocol:<12} {found['budget']:>9,} comparisons ({measure_label(entry['key'])} = "
                    f"{found['statistic']:.3f}; {found['evaluations']} budgets simulated)"
                )
    return "\n".join(lines)


def _figure_rows(figures: dict, top_ks: Sequence[int]) -> list[str]:
    keys = ["rho_w", "tau_w", "rho", "tau"] + [f"recall@{k}" for k in top_ks]
    header = f"{'protocol':<12}" + "".join(f"{measure_label(key):>17}" for key in keys)
    rows = [header]
    for protocol in PROTOCOLS:
        cells = []
        for key in keys:
            stats = figures[protocol][key]
            sd = "—" if stats["sd"] is None else f"{stats['sd']:.3f}"
            cells.append(f"{stats['mean']:.3f} ± {sd}".rjust(17))
        rows.append(f"{protocol:<12}" + "".join(cells))
    rows.append(f"{'':<12}top-K recall = P@K here: both sets hold K items.")
    return rows


def comparison_svgs(result: dict, *, distribution: str = "") -> dict[str, str]:
    """SVG figures: ``at-budget`` (each measure's mean and 10th-90th percentiles per protocol) and, with
    a sweep, ``by-budget-rho-w`` and ``by-budget-recall-K`` (the mean against N_comp). Keys are
    file-name stems."""
    p = result["parameters"]
    where = f"{p['item_count']:,} items" + (f", {distribution}" if distribution else "")
    keys = ["rho_w", "tau_w"] + [f"recall@{k}" for k in p["top_ks"]]
    rows = []
    for group, key in enumerate(keys):
        for protocol in PROTOCOLS:
            stats = result["at_budget"][protocol][key]
            rows.append(
                Interval(
                    label=f"{measure_label(key)}, {protocol}",
                    value=stats["mean"],
                    low=stats["p10"],
                    high=stats["p90"],
                    group=group * len(PROTOCOLS) + PROTOCOLS.index(protocol),
                )
            )
    figures = {
        "at-budget": intervals_svg(
            title=f"Protocols at N_comp = {p['budget']:,} ({where})",
            x_label=f"mean (dot) and 10th-90th percentile (bar) over {p['repetitions']} repetitions",
            rows=rows,
            x_limits=(0.0, 1.0),
            interval_label="mean and 10th-90th percentile",
            group_legend=False,
        )
    }
    if result["sweep"]:
        budgets = [p["budget"]] + [entry["budget"] for entry in result["sweep"]]
        by_budget = [result["at_budget"]] + [entry["figures"] for entry in result["sweep"]]
        order = sorted(range(len(budgets)), key=budgets.__getitem__)
        for key in ["rho_w"] + [f"recall@{k}" for k in p["top_ks"]]:
            series = [
                Series(
                    label=protocol,
                    x=[budgets[i] / 1000 for i in order],
                    y=[by_budget[i][protocol][key]["mean"] for i in order],
                    color=COLORS[protocol],
                    radius=4.0,
                )
                for protocol in PROTOCOLS
            ]
            figures[f"by-budget-{key.replace('@', '-').replace('_', '-')}"] = scatter_svg(
                title=f"{measure_label(key)} against budget ({where})",
                x_label="N_comp, thousands of comparisons (the same for the three protocols)",
                y_label=f"mean {measure_label(key)} over {p['repetitions']} repetitions",
                series=series,
                y_limits=(0.0, 1.0),
            )
    return figures


def score_model_comparison_run(
    *,
    protocols: Protocols,
    similarity,
    voter_model: SimulationConfig,
    crowds: Sequence[str],
    repetitions: int,
    seed: int,
    top_ks: Sequence[int] = (10, 50, 100),
    model_selects: bool = True,
    progress: ProgressCallback | None = None,
) -> dict:
    """The adaptive protocol's votes ranked by every score model, per crowd (``score_model_figures``),
    with each model's paired difference to Borda; ``progress(done, total)`` counts the crowds."""
    started = time.perf_counter()
    top_ks = sorted({int(k) for k in top_ks if 1 <= int(k) < protocols.item_count})
    seeds = np.random.SeedSequence(seed).spawn(int(repetitions))
    by_crowd = {}
    for done, crowd in enumerate(crowds, start=1):
        figures, comparisons = score_model_figures(
            protocols,
            similarity=similarity,
            voter_model=voter_model,
            seeds=seeds,
            crowd=crowd,
            top_ks=top_ks,
            model_selects=model_selects,
        )
        by_crowd[crowd] = {
            "figures": {
                name: {key: _summary(values) for key, values in measures.items()}
                for name, measures in figures.items()
            },
            "against_borda": paired_differences(figures),
            "comparisons": {name: sorted(set(counts.tolist())) for name, counts in comparisons.items()},
        }
        if progress:
            progress(done, len(crowds))
    return {
        "parameters": {
            **protocols.as_dict(),
            "repetitions": repetitions,
            "seed": seed,
            "top_ks": top_ks,
            "voter_count": voter_model.voter_count,
            "nonconformity": [voter_model.nonconformity_min, voter_model.nonconformity_max],
            "oversight": [voter_model.oversight_min, voter_model.oversight_max],
            "weight_offset": voter_model.weight_offset,
            "crowds": list(crowds),
            "model_selects": model_selects,
        },
        "crowds": by_crowd,
        "seconds": round(time.perf_counter() - started, 3),
    }


def _summary(values) -> dict:
    values = np.asarray(values, dtype=np.float64)
    return {
        "mean": float(values.mean()),
        "sd": float(values.std(ddof=1)) if values.size > 1 else None,
        "p10": float(np.percentile(values, 10)),
        "p90": float(np.percentile(values, 90)),
    }


def score_model_table(result: dict, *, distribution: str = "") -> str:
    """Markdown tables, one per crowd: each variant's mean ± sd, and under it its paired difference to
    Borda with the paired t-test's p (bold: p < 0.001)."""
    p = result["parameters"]
    keys = ["rho_w", "tau_w"] + [f"recall@{k}" for k in p["top_ks"]]
    lines = [
        f"{p['item_count']:,} items{f', {distribution} similarities' if distribution else ''}, adaptive plan "
        f"n_b = {p['ballot_count']}, α = {p['keep_fraction']:g}, M = {p['appearances']} (N_comp = {p['budget']:,}); "
        f"{p['voter_count']} voters; mean ± sd over {p['repetitions']} repetitions (seed {p['seed']}), "
        f"{result['seconds']:.0f} s.",
    ]
    for crowd, entry in result["crowds"].items():
        lines += ["", f"Crowd: {crowd}", ""]
        lines.append("| score model | " + " | ".join(measure_label(key) for key in keys) + " | comparisons |")
        lines.append("|---" * (len(keys) + 2) + "|")
        for name, measures in entry["figures"].items():
            cells = [f"{measures[key]['mean']:.3f} ± {measures[key]['sd'] or 0:.3f}" for key in keys]
            spent = ", ".join(f"{c:,}" for c in entry["comparisons"][name])
            lines.append(f"| {name} | " + " | ".join(cells) + f" | {spent} |")
            if name in entry["against_borda"]:
                diff = entry["against_borda"][name]
                cells = []
                for key in keys:
                    d = diff[key]
                    text = f"{d['mean']:+.3f} (p {d['p']:.1g})" if d["p"] is not None else f"{d['mean']:+.3f}"
                    cells.append(f"**{text}**" if d["p"] is not None and d["p"] < 0.001 else text)
                lines.append("| − borda | " + " | ".join(cells) + " | |")
    return "\n".join(lines)

"""The three protocols at equal budget (scoring.protocol_comparison) and manage.py compare_protocols."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from io import StringIO

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from scoring.plan_search import parse_target
from scoring.protocol_comparison import Protocols, budget_to_reach, compare_at_budget, protocol_figures
from scoring.simulation import SimulationConfig, underlying_similarity

VOTERS = SimulationConfig(item_count=990, ballot_count=1, appearances=2)


def test_the_budget_is_the_papers_n_comp_by_eq_3():
    # 990 items, n_b = 7, α = 0.5, M = 20: ballots of 990, 495, 248, 124, 62, 31, 16 items, and
    # 10·(990 + 495 + 248 + 124 + 62 + 31 + 16) = 19,660 comparisons.
    protocols = Protocols(item_count=990)
    assert protocols.sizes == (990, 495, 248, 124, 62, 31, 16)
    assert protocols.budget == 19_660
    # An odd M: ⌈M·N(k)/2⌉ per ballot. 15 items, n_b = 3, α = 0.5, M = 3: 15, 8, 4 → 23 + 12 + 6 = 41.
    assert Protocols(item_count=15, ballot_count=3, appearances=3, round_count=2, cutoffs=(5,)).budget == 41


def test_cutoffs_at_or_above_the_number_of_items_are_dropped():
    assert Protocols(item_count=60, cutoffs=(10, 50, 100)).cutoffs == (10, 50)


def test_every_protocol_runs_on_the_same_crowds_whatever_else_is_compared():
    # Common random numbers: a protocol's figures do not depend on which others run beside it.
    z = underlying_similarity("power_law", 120)
    protocols = Protocols(item_count=120, appearances=10)
    seeds = np.random.SeedSequence(5).spawn(4)
    voters = SimulationConfig(item_count=120, ballot_count=1, appearances=2)
    together = protocol_figures(protocols, similarity=z, voter_model=voters, seeds=seeds, top_ks=(10,))
    for name in ("uniform", "adaptive", "elimination"):
        alone = protocol_figures(
            protocols, similarity=z, voter_model=voters, seeds=seeds, top_ks=(10,), which=(name,)
        )
        for key, values in alone[name].items():
            np.testing.assert_array_equal(values, together[name][key])


def test_recall_and_precision_at_k_are_one_number_and_lie_in_zero_one():
    z = underlying_similarity("exponential", 150)
    figures = protocol_figures(
        Protocols(item_count=150, appearances=8),
        similarity=z,
        voter_model=SimulationConfig(item_count=150, ballot_count=1, appearances=2),
        seeds=np.random.SeedSequence(0).spawn(3),
        top_ks=(10, 50, 100),
    )
    for measures in figures.values():
        for k in (10, 50, 100):
            np.testing.assert_array_equal(measures[f"recall@{k}"], measures[f"precision@{k}"])
            assert ((measures[f"recall@{k}"] >= 0) & (measures[f"recall@{k}"] <= 1)).all()


def test_the_paper_setting_ranks_the_protocols_as_the_documentation_says():
    # The §4.2 setting, 10 repetitions: the adaptive protocol leads on ρ_w and top-10 recall; the
    # elimination protocol, whose intervals never settle an item at this budget, trails the uniform one.
    z = underlying_similarity("exponential", 990)
    summary = compare_at_budget(
        Protocols(item_count=990), similarity=z, voter_model=VOTERS, repetitions=10, seed=0
    )
    rho_w = {name: summary[name]["rho_w"]["mean"] for name in summary}
    top10 = {name: summary[name]["recall@10"]["mean"] for name in summary}
    assert rho_w["adaptive"] > rho_w["uniform"] > rho_w["elimination"]
    assert top10["adaptive"] > top10["uniform"] > top10["elimination"]
    assert summary["adaptive"]["rho_w"]["sd"] > 0


def test_the_budget_found_reaches_the_target_and_one_step_less_does_not():
    z = underlying_similarity("exponential", 80)
    voters = SimulationConfig(item_count=80, ballot_count=1, appearances=2)
    protocols = Protocols(item_count=80, appearances=4, round_count=3, cutoffs=(10,))
    target = parse_target("recall@10>=0.75")
    seeds = np.random.SeedSequence(1).spawn(8)
    for protocol, unit in (("uniform", 40), ("elimination", 40), ("adaptive", sum(protocols.sizes))):
        found = budget_to_reach(
            protocol,
            target,
            protocols,
            similarity=z,
            voter_model=voters,
            repetitions=8,
            seed=1,
            max_budget=60_000,
        )
        budget = found["budget"]
        assert budget is not None and budget % unit == 0

        def mean_recall(spend: int, protocol=protocol, unit=unit) -> float:
            if protocol == "adaptive":
                other = protocols.with_appearances(2 * spend // unit)
                figures = protocol_figures(
                    other, similarity=z, voter_model=voters, seeds=seeds, top_ks=(10,), which=("adaptive",)
                )
            else:
                figures = protocol_figures(
                    protocols,
                    similarity=z,
                    voter_model=voters,
                    seeds=seeds,
                    top_ks=(10,),
                    which=(protocol,),
                    budget=spend,
                )
            return float(figures[protocol]["recall@10"].mean())

        assert mean_recall(budget) >= 0.75
        assert found["statistic"] == pytest.approx(mean_recall(budget))
        smallest = 1 if protocol != "elimination" else -(-(79 * 3 + 1) // unit)
        if budget // unit > smallest:
            assert mean_recall(budget - unit) < 0.75


def test_a_target_out_of_reach_within_the_largest_budget_gives_no_budget():
    z = underlying_similarity("exponential", 60)
    found = budget_to_reach(
        "uniform",
        parse_target("rho_w>=0.999"),
        Protocols(item_count=60, appearances=4, round_count=2, cutoffs=(10,)),
        similarity=z,
        voter_model=SimulationConfig(item_count=60, ballot_count=1, appearances=2),
        repetitions=3,
        seed=0,
        max_budget=600,
    )
    assert found["budget"] is None and found["evaluations"] >= 1


# --- the command -----------------------------------------------------------------------------------


def compare(*args) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("compare_protocols", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_the_command_prints_one_row_per_protocol_at_the_adaptive_n_comp():
    out, _ = compare("--items", "100", "--appearances", "10", "--repetitions", "3", "--top-k", "10,50")
    # Ballots of 100, 50, 25, 13, 7, 4, 2 items (Eq. 2, halves up); M = 10: 5·201 = 1,005 (Eq. 3).
    assert "Every protocol makes N_comp = 1,005 comparisons" in out
    rows = [
        line.split()[0]
        for line in out.splitlines()
        if line.split() and line.split()[0] in ("uniform", "adaptive", "elimination")
    ]
    assert rows == ["uniform", "adaptive", "elimination"]
    assert "top-10 recall" in out and "top-50 recall" in out


def test_the_command_gives_json_with_the_figures_and_the_budget_to_reach_a_target():
    out, _ = compare(
        "--items",
        "80",
        "--appearances",
        "6",
        "--rounds",
        "3",
        "--cutoffs",
        "10",
        "--repetitions",
        "3",
        "--target",
        "recall@10>=0.5",
        "--target-repetitions",
        "3",
        "--json",
    )
    result = json.loads(out)
    assert result["parameters"]["budget"] == 3 * sum(result["parameters"]["sizes"])
    assert set(result["at_budget"]) == {"uniform", "adaptive", "elimination"}
    assert result["at_budget"]["adaptive"]["rho_w"]["mean"] is not None
    (entry,) = result["targets"]
    assert entry["key"] == "recall@10"
    assert set(entry["budgets"]) == {"uniform", "adaptive", "elimination"}


def test_a_budget_sets_the_largest_even_m_that_fits():
    out, _ = compare("--items", "100", "--budget", "2500", "--repetitions", "2", "--json")
    p = json.loads(out)["parameters"]
    # Σ N(k) = 100+50+25+13+7+4+2 = 201: M = 2·⌊2500/201⌋ = 24, N_comp = 12·201 = 2,412.
    assert p["appearances"] == 24 and p["budget"] == 2_412


@pytest.mark.django_db
def test_a_study_brings_its_items_and_its_plan():
    from tests.factories import make_study

    study = make_study(start=False, tokens=10, appearances=20)  # 45 items; n_b = 3, α = 0.5
    out, _ = compare("--study", study.slug, "--repetitions", "2", "--json")
    p = json.loads(out)["parameters"]
    assert (p["item_count"], p["ballot_count"], p["keep_fraction"], p["appearances"]) == (45, 3, 0.5, 20)
    assert p["sizes"] == [45, 23, 12] and p["budget"] == 450 + 230 + 120
    assert p["cutoffs"] == [10] and p["top_ks"] == [10]


def test_the_command_writes_the_svg_figures(tmp_path):
    compare(
        "--items", "100", "--appearances", "8", "--repetitions", "2", "--sweep", "12", "--svg", str(tmp_path)
    )
    names = sorted(path.name for path in tmp_path.iterdir())
    assert names == [
        "protocols-exponential-at-budget.svg",
        "protocols-exponential-by-budget-recall-10.svg",
        "protocols-exponential-by-budget-recall-50.svg",
        "protocols-exponential-by-budget-rho-w.svg",
    ]
    for path in tmp_path.iterdir():
        root = ET.fromstring(path.read_text(encoding="utf-8"))
        assert root.tag.endswith("svg")


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--study", "nothing-here"], "there is no study with the slug 'nothing-here'"),
        (["--items", "100", "--budget", "200"], "too small for the adaptive plan"),
        (["--items", "100", "--appearances", "2"], "every item needs a comparison in the first round"),
        (["--items", "100", "--cutoffs", "ten"], "expected whole numbers separated by commas"),
        (["--items", "100", "--delta", "2"], "must lie strictly between 0 and 1"),
        (
            ["--items", "100", "--budget", "5000", "--appearances", "10"],
            "give --budget or --appearances, not both",
        ),
        (["--items", "100", "--target", "rho_w=0.9"], "cannot read the target"),
        (["--items", "100", "--repetitions", "0"], "--repetitions must be from 1 to 1,000"),
        (["--items", "100", "--svg", "/nonexistent-folder"], "is not a folder"),
    ],
)
def test_bad_options_are_refused_with_the_reason(args, message):
    with pytest.raises(CommandError, match=message):
        compare(*args)


@pytest.mark.django_db
def test_a_study_with_items_or_ranked_per_area_is_refused():
    from collection.studies import study_update
    from tests.factories import make_study

    study = make_study(start=False, tokens=10)
    with pytest.raises(CommandError, match="--study brings its items and its plan"):
        compare("--study", study.slug, "--items", "45")
    per_area = make_study(start=False, areas=2, tokens=10)
    study_update(study=per_area, changes={"ranking_scope": "per_area"}, channel="command")
    with pytest.raises(CommandError, match="is ranked per area"):
        compare("--study", per_area.slug)

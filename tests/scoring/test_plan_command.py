"""manage.py plan: the cheapest plan that reaches a target with a stated confidence, its cost, warnings, the
confirmation on fresh repetitions, per-area studies, and refusals in words."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from collection.studies import study_update
from scoring.plan import ballot_plan
from tests.factories import make_study

pytestmark = pytest.mark.django_db


def plan(*args) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("plan", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_it_prints_the_cheapest_plan_with_its_cost_in_comparisons_hours_and_money():
    out, _ = plan(
        "--items",
        "15",
        "--target",
        "rho>=0.6",
        "--repetitions",
        "3",
        "--pay-per-hour",
        "12",
        "--currency",
        "GBP",
        "--json",
    )
    result = json.loads(out)
    found = result["plan"]
    priced = ballot_plan(
        item_count=15,
        ballot_count=found["ballot_count"],
        keep_fraction=found["keep_fraction"] or 0.5,
        appearances=found["appearances"],
    )
    # Eq. 3 by scoring.plan; Eq. 10 at 6 s; the money at 12 per hour.
    assert result["cost"]["comparisons"] == priced.total_comparisons
    assert result["cost"]["hours"] == pytest.approx(priced.total_comparisons * 6 / 3600)
    assert result["cost"]["money"] == pytest.approx(priced.total_comparisons * 6 / 3600 * 12)
    assert result["warnings"] == list(priced.warnings)
    rho = next(figure for figure in result["figures"] if figure["key"] == "rho")
    assert rho["mean"] >= 0.6
    assert [f["key"] for f in result["figures"]] == [
        "rho_w",
        "tau_w",
        "rho",
        "tau",
        "recall@10",
        "precision@10",
    ]
    # What was searched: every plan cheaper than the answer was simulated (scan), and the only cheaper ones
    # that reached on the search's repetitions are those whose confirmation on fresh ones failed.
    assert result["searched"]["strategy"] == "scan" and result["searched"]["unsimulated_cheaper"] == 0
    failed = {(f["plan"]["ballot_count"], f["plan"]["appearances"]) for f in result["failed_confirmations"]}
    cheaper = {
        (entry["ballot_count"], entry["appearances"])
        for entry in result["trail"]
        if entry["reached"] and entry["total_comparisons"] < priced.total_comparisons
    }
    assert cheaper == failed
    assert result["confidence"] == 0.9 and result["confirmation"]["bound"] >= 0.6


def test_the_text_report_names_the_plan_its_cost_and_what_was_searched():
    out, err = plan(
        "--items", "15", "--target", "recall@3>=0.5", "--repetitions", "3", "--pay-per-hour", "10"
    )
    assert "Target: top-3 recall ≥ 0.5 on average over the simulated repetitions, with 90% confidence." in out
    assert "Cheapest plan: " in out and "comparisons (N_comp, Eq. 3)" in out and "per hour" in out
    assert "Confirmed on 100 fresh repetitions: mean top-3 recall " in out
    assert "97.5% lower bound" in out and "so the answer holds with 90% confidence" in out
    assert "Searched: " in out and "plans simulated" in out
    assert "top-3 recall" in out and "P@3" in out
    assert "simulating [" in err


def test_a_target_no_plan_reaches_within_the_bound_exits_with_status_3():
    with pytest.raises(CommandError) as refused:
        plan("--items", "15", "--target", "tau_w>=0.999", "--repetitions", "3", "--max-simulations", "2")
    assert refused.value.returncode == 3
    assert str(refused.value) == (
        "no plan of the grid reaches τ_w ≥ 0.999 on average over the simulated repetitions with 90% "
        "confidence within the bound of simulations (--max-simulations): lower the target, or lower the "
        "voter noise"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--items", "15", "--target", "rho_w=0.9"], "cannot read the target 'rho_w=0.9'"),
        (
            ["--items", "15", "--target", "recall@15>=0.9"],
            "the cutoff K must be smaller than the number of items",
        ),
        (["--items", "15", "--target", "rho>=0.9", "--noise", "0"], "the voter noise σ* must lie in (0, 1]"),
        (["--items", "1", "--target", "rho>=0.9"], "the number of items must be from 2 to 20,000"),
        (
            ["--items", "15", "--target", "rho>=0.9", "--repetitions", "1"],
            "repetitions must be from 2 to 200",
        ),
        (["--items", "15", "--target", "rho>=0.9", "--quantile", "1.5"], "the quantile must lie strictly"),
        (
            ["--items", "15", "--target", "rho>=0.9", "--quantile", "0.1", "--repetitions", "10"],
            "repetitions must be at least 22 for a 0.9 lower bound of the 10th percentile of ρ",
        ),
        (
            ["--items", "15", "--target", "rho>=0.9", "--confidence", "1"],
            "the confidence must lie in [0.5, 0.999]",
        ),
        (["--target", "rho>=0.9"], "give the number of items (--items N) or a study (--study SLUG)"),
        (
            ["--study", "nothing-here", "--target", "rho>=0.9"],
            "there is no study with the slug 'nothing-here'",
        ),
        (
            ["--items", "15", "--target", "rho>=0.9", "--pay-per-hour", "0"],
            "pay_per_hour must be more than 0",
        ),
    ],
)
def test_bad_input_is_refused_saying_what_is_wrong(args, message):
    with pytest.raises(CommandError) as refused:
        plan(*args)
    assert message in str(refused.value)


def test_a_study_gives_its_items_seconds_per_comparison_and_pay_rate():
    study = make_study(start=False, seconds_per_comparison=10.0, pay_per_hour=12.0, pay_currency="USD")
    out, _ = plan("--study", study.slug, "--target", "rho>=0.5", "--repetitions", "3", "--json")
    result = json.loads(out)
    assert result["parameters"]["item_count"] == 15
    cost = result["cost"]
    assert (cost["seconds_per_comparison"], cost["pay_per_hour"], cost["currency"]) == (10.0, 12.0, "USD")
    assert cost["money"] == pytest.approx(cost["comparisons"] * 10 / 3600 * 12)
    with pytest.raises(CommandError, match="give --items or --study, not both"):
        plan("--study", study.slug, "--items", "15", "--target", "rho>=0.5")


def test_a_study_ranked_per_area_gets_one_plan_for_every_area():
    study = make_study(start=False, areas=2, tokens=6)  # two areas of 15 items
    study_update(study=study, changes={"ranking_scope": "per_area"}, channel="command")
    out, _ = plan("--study", study.slug, "--target", "rho>=0.5", "--repetitions", "4", "--json")
    result = json.loads(out)
    assert result["ranking_scope"] == "per_area"
    assert result["parameters"]["area_item_counts"] == {"Area0": 15, "Area1": 15}
    assert [area["area"] for area in result["areas"]] == ["Area0", "Area1"]
    assert all(area["confirmation"]["bound"] >= 0.5 for area in result["areas"])
    text, _ = plan("--study", study.slug, "--target", "rho>=0.5", "--repetitions", "4")
    assert (
        "Target: ρ ≥ 0.5 on average over the simulated repetitions, with 90% confidence, in every area."
        in text
    )
    assert "30 items in 2 areas ranked each on its own (Area0 15, Area1 15)" in text
    assert "On the 100 fresh repetitions (area Area1, 15 items):" in text


def test_the_confidence_is_stated_and_used():
    out, _ = plan(
        "--items", "15", "--target", "rho>=0.5", "--repetitions", "4", "--confidence", "0.95", "--json"
    )
    result = json.loads(out)
    assert result["confidence"] == 0.95 and result["confirmation_level"] == pytest.approx(0.9875)
    assert result["search"]["bound"] >= 0.5

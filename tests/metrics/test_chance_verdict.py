"""A figure at or below chance is said in words (issue 34 §4.9): above chance when p ≤ 0.05, below
chance when p ≥ 0.95, at chance in between (p: the one-sided permutation p-value of the chance column)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from metrics.evaluation import CHANCE_P, chance_sentence, chance_summary, chance_verdict, evaluate
from metrics.metrology import chance_level


@pytest.mark.parametrize(
    ("p_value", "verdict"),
    [
        (1 / 1001, "above"),
        (0.05, "above"),
        (0.0501, "at"),
        (0.5, "at"),
        (0.9499, "at"),
        (0.95, "below"),
        (1.0, "below"),
    ],
)
def test_the_verdict_follows_the_p_value_of_the_chance_column(p_value, verdict):
    assert chance_verdict({"value": 0.1, "p_value": p_value}) == verdict


def test_no_verdict_without_a_value_or_a_chance_level():
    assert chance_verdict({"value": None, "p_value": None, "undefined": "ρ_w is undefined: …"}) is None
    assert chance_verdict({"value": 0.3}) is None  # stored before ρ and τ had a chance level
    assert chance_sentence("tau_w", {"value": 0.3}) is None


def test_the_issues_best_model_at_minus_0_541_is_said_to_be_at_chance():
    sentence = chance_sentence(
        "tau_w", {"value": -0.541, "chance_mean": -0.502, "chance_sd": 0.110, "p_value": 0.634}
    )
    assert sentence == (
        "τ_w = -0.541 is at chance: p = 0.634, so 63.4% of random rankings of these items score at least as "
        "high; it does not tell the model from a random order"
    )


def test_a_figure_below_chance_says_the_model_orders_against_the_people():
    assert chance_sentence("rho_w", {"value": -0.9, "p_value": 0.999}) == (
        "ρ_w = -0.900 is below chance: p = 0.999, so 99.9% of random rankings of these items score at least as "
        "high; the model orders the items against the people's ranking"
    )


def test_a_figure_above_chance_needs_no_sentence():
    assert chance_sentence("rho", {"value": 0.8, "p_value": 0.001}) is None


def test_the_summary_says_each_coefficient_at_or_below_chance_in_order():
    entries = {
        "rho_w": {"value": 0.41, "p_value": 0.001},
        "tau_w": {"value": -0.2, "p_value": 0.7},
        "rho": {"value": None, "undefined": "ρ is undefined: …"},
        "tau": {"value": -0.6, "p_value": 0.98},
    }
    assert chance_summary(entries) == [
        chance_sentence("tau_w", entries["tau_w"]),
        chance_sentence("tau", entries["tau"]),
    ]


def test_a_real_evaluation_reversed_is_below_random_is_at_and_the_truth_is_above():
    n = 60
    rng = np.random.default_rng(4)
    human = rng.random(n)
    chance = chance_level(n, np.random.default_rng(5), weight_offset=2.0, draws=1000)
    truth = evaluate(human, human, top_k=10, chance=chance)
    reversed_ = evaluate(-human, human, top_k=10, chance=chance)
    assert [chance_verdict(truth[name]) for name in ("rho_w", "tau_w", "rho", "tau")] == ["above"] * 4
    assert [chance_verdict(reversed_[name]) for name in ("rho_w", "tau_w", "rho", "tau")] == ["below"] * 4
    # Random models: about 90% land at chance, as the definition's central 90% of the chance draws.
    verdicts = [
        chance_verdict(
            evaluate(np.random.default_rng(seed).random(n), human, top_k=10, chance=chance)["tau_w"]
        )
        for seed in range(100)
    ]
    assert 80 <= verdicts.count("at") <= 98


@given(st.floats(0, 1), st.floats(-1, 1))
def test_every_p_value_gets_exactly_one_verdict_by_the_stated_bounds(p_value, value):
    verdict = chance_verdict({"value": value, "p_value": p_value})
    assert verdict == ("above" if p_value <= CHANCE_P else "below" if p_value >= 1 - CHANCE_P else "at")

"""The score models compared on the adaptive protocol's votes (compare_protocols --score-models): the
budgets are equal exactly, the Borda variant is the protocol comparison's adaptive protocol, the crowd
mixes vote as issue 10's bad annotators do, and the paired differences are those of the values."""

from __future__ import annotations

import json
from io import StringIO

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from scipy import stats

from scoring.protocol_comparison import Protocols, paired_differences, protocol_figures, score_model_figures
from scoring.score_models import BORDA, SCORE_MODELS
from scoring.simulation import (
    CROWD_MIXES,
    LEFT,
    RANDOM,
    RIGHT,
    SPEEDER,
    SimulationConfig,
    Voters,
    draw_voters,
    underlying_similarity,
    voter_outcomes,
    with_crowd_mix,
)

ITEMS = 120
PROTOCOLS = Protocols(item_count=ITEMS, appearances=8, round_count=3)
VOTERS = SimulationConfig(item_count=ITEMS, ballot_count=1, appearances=2)
Z = underlying_similarity("exponential", ITEMS)


@pytest.fixture(scope="module")
def one_sided_figures():
    return score_model_figures(
        PROTOCOLS,
        similarity=Z,
        voter_model=VOTERS,
        seeds=np.random.SeedSequence(3).spawn(4),
        crowd="one_sided",
    )


def test_every_score_model_and_variant_spends_exactly_the_adaptive_plans_budget(one_sided_figures):
    _, comparisons = one_sided_figures
    assert set(comparisons) == set(SCORE_MODELS) | {"bradley_terry:selects", "noisy_bradley_terry:selects"}
    for counts in comparisons.values():
        np.testing.assert_array_equal(counts, np.full(4, PROTOCOLS.budget))


def test_the_borda_variant_is_the_protocol_comparisons_adaptive_protocol():
    seeds = np.random.SeedSequence(8).spawn(3)
    figures, _ = score_model_figures(
        PROTOCOLS, similarity=Z, voter_model=VOTERS, seeds=seeds, models=(BORDA,), top_ks=(10,)
    )
    adaptive = protocol_figures(
        PROTOCOLS, similarity=Z, voter_model=VOTERS, seeds=seeds, top_ks=(10,), which=("adaptive",)
    )["adaptive"]
    for key, values in adaptive.items():
        np.testing.assert_allclose(figures[BORDA][key], values, rtol=0, atol=1e-12)


def test_crowd_mixes_replace_the_stated_share_of_voters_and_they_vote_as_issue_10s_bad_annotators():
    rng = np.random.default_rng(0)
    voters = draw_voters(Z, VOTERS, rng)
    mixed = with_crowd_mix(voters, "mixed")
    # Issue 10's crowd of 16: 2 speeders, 1 always left, 1 always right, 2 random; of 100 voters,
    # round(100·2/16) = 12 and round(100/16) = 6 of each kind, 64 good.
    assert np.bincount(mixed.behaviour, minlength=5).tolist() == [64, 12, 6, 6, 12]
    one_sided = with_crowd_mix(voters, "one_sided")
    left = np.arange(ITEMS - 1)
    for kind, expected in ((LEFT, 1.0), (RIGHT, 0.0)):
        voter = np.full(left.size, np.flatnonzero(one_sided.behaviour == kind)[0])
        outcome = voter_outcomes(one_sided, voter, left, left + 1, rng)
        assert (outcome == expected).all()
    random_crowd = with_crowd_mix(voters, "random")
    clicker = np.full(4000, np.flatnonzero(random_crowd.behaviour == RANDOM)[0])
    share = voter_outcomes(random_crowd, clicker, np.zeros(4000, int), np.ones(4000, int), rng).mean()
    assert abs(share - 0.5) < 4 * 0.5 / np.sqrt(4000)
    assert (with_crowd_mix(voters, "speeders").behaviour == SPEEDER).sum() == 20
    assert with_crowd_mix(voters, "paper").behaviour.tolist() == [0] * 100
    with pytest.raises(ValueError, match="crowd mix must be one of"):
        with_crowd_mix(voters, "lazy")
    assert set(CROWD_MIXES) == {"paper", "speeders", "one_sided", "random", "mixed"}


def test_a_crowd_without_bad_annotators_votes_as_the_plain_voter_model():
    voters = draw_voters(Z, VOTERS, np.random.default_rng(1))
    plain = Voters(voters.opinions, voters.oversight, voters.nonconformity)
    pairs = np.random.default_rng(2).integers(0, ITEMS, (500, 2))
    voter = np.arange(500) % 100
    np.testing.assert_array_equal(
        voter_outcomes(
            with_crowd_mix(voters, "paper"), voter, pairs[:, 0], pairs[:, 1], np.random.default_rng(3)
        ),
        voter_outcomes(plain, voter, pairs[:, 0], pairs[:, 1], np.random.default_rng(3)),
    )


def test_paired_differences_are_scipys_paired_t_test_of_the_values(one_sided_figures):
    figures, _ = one_sided_figures
    result = paired_differences(figures)
    assert set(result) == set(figures) - {BORDA}
    model, borda = figures["noisy_bradley_terry"]["rho_w"], figures[BORDA]["rho_w"]
    entry = result["noisy_bradley_terry"]["rho_w"]
    assert entry["mean"] == pytest.approx((model - borda).mean())
    assert entry["p"] == pytest.approx(stats.ttest_rel(model, borda).pvalue)
    half = stats.t.ppf(0.975, 3) * (model - borda).std(ddof=1) / 2
    assert (entry["low"], entry["high"]) == pytest.approx((entry["mean"] - half, entry["mean"] + half))
    assert entry["wins"] == int(((model - borda) > 0).sum())


def test_the_command_prints_one_table_per_crowd_and_refuses_an_unknown_crowd():
    out = StringIO()
    call_command(
        "compare_protocols",
        "--score-models",
        "--items",
        "60",
        "--ballots",
        "4",
        "--appearances",
        "4",
        "--rounds",
        "2",
        "--repetitions",
        "2",
        "--crowd",
        "random",
        "--no-model-selects",
        "--top-k",
        "10",
        "--json",
        stdout=out,
    )
    result = json.loads(out.getvalue())
    assert list(result["crowds"]) == ["random"]
    entry = result["crowds"]["random"]
    assert set(entry["figures"]) == set(SCORE_MODELS)
    budget = result["parameters"]["budget"]
    assert entry["comparisons"] == {name: [budget] for name in SCORE_MODELS}
    with pytest.raises(CommandError):
        call_command("compare_protocols", "--score-models", "--crowd", "lazy", stdout=StringIO())

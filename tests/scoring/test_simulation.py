"""The voter model of §4.1 and the uniform-versus-adaptive comparison of Table 2."""

import json

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from metrics.correlation import ranks_from_scores
from scoring.datafiles import read_similarity_csv
from scoring.services import simulation_run
from scoring.simulation import (
    SimulationConfig,
    Voters,
    cast_votes,
    deal_comparisons,
    draw_voters,
    run_adaptive,
    theoretical_ranks,
    underlying_similarity,
)


def test_underlying_distributions_follow_section_4_1_1():
    n = 990
    exponential = underlying_similarity("exponential", n)
    power_law = underlying_similarity("power_law", n)
    assert exponential[0] == 1.0 and exponential[-1] == pytest.approx(2 * np.exp(-989 / 990) - 1)
    assert power_law[0] == 1.0 and power_law[495] == pytest.approx(2 / (1 + np.sqrt(0.5)) - 1)
    # Exponential z crosses zero at i = N·ln 2, where relatedness |z| is lowest.
    assert np.argmin(np.abs(exponential)) == round(n * np.log(2))


def test_theoretical_ranks_follow_relatedness_not_similarity():
    np.testing.assert_array_equal(theoretical_ranks([0.9, -0.95, 0.1, -0.1]), [2, 1, 3.5, 3.5])


def test_the_shipped_embedding_similarities_are_the_papers_990_items():
    z = read_similarity_csv()
    assert z.size == 990 and z[0] == pytest.approx(0.7651831122838377)
    assert np.abs(z).max() <= 1


def test_opinions_are_relatedness_in_zero_one_with_noise_vanishing_at_the_ends():
    z = np.array([1.0, -1.0, 0.0, 0.5])
    voters = draw_voters(z, SimulationConfig(voter_count=200), np.random.default_rng(0))
    assert voters.opinions.shape == (200, 4)
    assert voters.opinions.min() >= 0 and voters.opinions.max() <= 1
    # σ*(1 - z²) = 0 at z = ±1: every voter sees relatedness exactly 1.
    np.testing.assert_array_equal(voters.opinions[:, :2], 1.0)
    # At z = 0 the noise is σ*·η with σ* ≤ 0.2: opinions stay small.
    assert voters.opinions[:, 2].max() < 1.0
    assert voters.nonconformity.min() >= 0.02 and voters.nonconformity.max() <= 0.2
    assert voters.oversight.min() >= 0.005 and voters.oversight.max() <= 0.05


def test_a_faithful_voter_always_picks_the_more_related_item_and_a_careless_one_never():
    opinions = np.array([[0.9, 0.2, 0.5, 0.5]])
    pairs = np.array([[0, 1], [1, 0], [2, 3], [1, 2]])
    faithful = Voters(opinions=opinions, oversight=np.array([0.0]), nonconformity=np.array([0.0]))
    careless = Voters(opinions=opinions, oversight=np.array([1.0]), nonconformity=np.array([0.0]))
    who = np.zeros(4, dtype=int)
    np.testing.assert_array_equal(cast_votes(faithful, pairs, who, np.random.default_rng(0)), [1, 0, 0.5, 0])
    np.testing.assert_array_equal(cast_votes(careless, pairs, who, np.random.default_rng(0)), [0, 1, 0.5, 1])


def test_oversight_flips_votes_at_the_voters_rate():
    opinions = np.array([[1.0, 0.0]])
    voters = Voters(opinions=opinions, oversight=np.array([0.05]), nonconformity=np.array([0.0]))
    outcome = cast_votes(
        voters, np.tile([0, 1], (100_000, 1)), np.zeros(100_000, int), np.random.default_rng(1)
    )
    assert 1 - outcome.mean() == pytest.approx(0.05, abs=0.003)  # 5σ of a binomial(1e5, 0.05) share


def test_comparisons_are_dealt_evenly_to_voters():
    dealt = deal_comparisons(19_660, 100, np.random.default_rng(0))
    assert np.bincount(dealt).tolist() == [197] * 60 + [196] * 40


def test_without_noise_the_adaptive_protocol_keeps_the_true_top_items():
    config = SimulationConfig(
        item_count=200,
        ballot_count=4,
        appearances=20,
        nonconformity_min=0,
        nonconformity_max=0,
        oversight_min=0,
        oversight_max=0,
    )
    z = underlying_similarity("exponential", 200)
    voters = draw_voters(z, config, np.random.default_rng(0))
    score, last_ballot = run_adaptive(voters, (200, 100, 50, 25), 20, np.random.default_rng(1))
    assert np.bincount(last_ballot).tolist()[1:] == [100, 50, 25, 25]
    truth = theoretical_ranks(z)
    reached_last = np.flatnonzero(last_ballot == 4)
    # The 25 items of the last ballot are among the true top 40, and the top 10 always get there.
    assert truth[reached_last].max() <= 40
    assert set(np.flatnonzero(truth <= 10)) <= set(reached_last)
    assert ranks_from_scores(score)[np.argmin(truth)] <= 3


def test_table_2_adaptive_beats_uniform_on_top_weighted_metrics_only():
    result = simulation_run(config=SimulationConfig(), repetitions=8, seed=0)
    uniform, adaptive = result["uniform"], result["adaptive"]
    assert adaptive["rho_w"]["mean"] > uniform["rho_w"]["mean"] + 0.05
    assert adaptive["tau_w"]["mean"] > uniform["tau_w"]["mean"] + 0.2
    assert abs(adaptive["rho"]["mean"] - uniform["rho"]["mean"]) < 0.05
    assert abs(adaptive["tau"]["mean"] - uniform["tau"]["mean"]) < 0.05
    assert result["parameters"]["total_comparisons"] == 19_660


def test_results_do_not_depend_on_the_number_of_processes():
    config = SimulationConfig(item_count=300, ballot_count=4)
    single = simulation_run(config=config, repetitions=4, seed=3, jobs=1)
    parallel = simulation_run(config=config, repetitions=4, seed=3, jobs=2)
    assert single["uniform"] == parallel["uniform"] and single["adaptive"] == parallel["adaptive"]


def test_progress_is_reported_after_every_repetition():
    seen = []
    simulation_run(
        config=SimulationConfig(item_count=100, ballot_count=3),
        repetitions=3,
        seed=0,
        progress=lambda done, total: seen.append((done, total)),
    )
    assert seen == [(1, 3), (2, 3), (3, 3)]


def test_the_command_prints_one_json_object(capsys):
    call_command("simulate", "--repetitions", "3", "--items", "200", "--ballots", "4", "--json")
    result = json.loads(capsys.readouterr().out)
    assert set(result) == {"parameters", "uniform", "adaptive", "seconds"}
    assert set(result["uniform"]) == {"rho_w", "tau_w", "rho", "tau"}
    assert set(result["adaptive"]["tau_w"]) == {"mean", "sd"}
    assert result["parameters"]["item_count"] == 200 and result["parameters"]["repetitions"] == 3


def test_the_command_prints_a_table_and_a_progress_bar(capsys):
    call_command("simulate", "--repetitions", "2", "--distribution", "file")
    captured = capsys.readouterr()
    assert "distribution file: N_items = 990" in captured.out
    assert captured.out.splitlines()[-2].startswith("uniform") and captured.out.splitlines()[-1].startswith(
        "adaptive"
    )
    assert "[##############################] 2/2" in captured.err


def test_the_command_reads_a_similarity_file(tmp_path, capsys):
    path = tmp_path / "z.csv"
    path.write_text("similarity\n" + "\n".join(str(v) for v in np.linspace(0.9, -0.2, 120)))
    call_command(
        "simulate",
        "--distribution",
        "file",
        "--file",
        str(path),
        "--ballots",
        "3",
        "--repetitions",
        "2",
        "--json",
    )
    assert json.loads(capsys.readouterr().out)["parameters"]["item_count"] == 120


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--keep-fraction", "1.5"], "strictly between 0 and 1"),
        (["--repetitions", "0"], "at least 1"),
        (["--nonconformity-min", "0.3"], r"nonconformity range must satisfy"),
        (["--distribution", "file", "--file", "/nonexistent/z.csv"], "No such file"),
    ],
)
def test_the_command_explains_bad_parameters(arguments, message):
    with pytest.raises(CommandError, match=message):
        call_command("simulate", *arguments)


def test_a_malformed_similarity_file_names_the_line(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("similarity\n0.5\nabc\n")
    with pytest.raises(ValueError, match="line 3: 'abc' is not a number"):
        read_similarity_csv(path)

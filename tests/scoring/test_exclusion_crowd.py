"""Excluding bad annotators moves the scores toward the truth the simulation knows.

A simulated crowd votes through the real services: honest annotators who follow the §4.1 voter model
(``scoring.simulation.draw_voters`` / ``voter_outcomes``, over the exponential similarities z_i of
§4.1.1, so item 0 is the most related), and bad ones: speeders (random clicks in under a second),
annotators who always pick the left or the right side, and random clickers at a normal speed. The
bad ones are excluded by the rule (the quality flags) and by hand; the scores of the same ballots
without their votes are closer to z (Spearman and Kendall from scipy) than the scores with them.
"""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest
from django.test import Client
from scipy.stats import kendalltau, spearmanr

from collection.exclusion import annotator_exclude
from collection.models import Annotator, Assignment, Ballot, Exclusion, Item, Study, Vote
from scoring.borda import study_scores
from scoring.exclusion import exclusion_rules_apply, scores_without_excluded
from scoring.simulation import SimulationConfig, draw_voters, underlying_similarity, voter_outcomes
from tests.factories import annotators, make_study, vote_until

pytestmark = pytest.mark.django_db

HONEST = 8
BAD_KINDS = ["speeder"] * 3 + ["left"] * 2 + ["right"] * 2 + ["random"] * 5
# 10 tokens → 45 items; n_b = 2, α = 0.5, M = 20: ballots of 45 and 23 items, 450 + 230 comparisons.
PLAN = {"tokens": 10, "ballot_count": 2, "keep_fraction": 0.5, "appearances": 20}


class SimulatedCrowd:
    """``choose`` and ``respond`` for ``vote_until``: honest §4.1 voters and the bad kinds."""

    def __init__(self, study: Study, voters: list[Annotator], kinds: list[str], *, seed: int):
        self.rng = np.random.default_rng(seed)
        self.index_of = dict(study.items.values_list("id", "index"))
        self.truth = underlying_similarity("exponential", len(self.index_of))
        honest = [voter.pk for voter, kind in zip(voters, kinds, strict=True) if kind == "honest"]
        config = SimulationConfig(item_count=len(self.index_of), ballot_count=2, voter_count=len(honest))
        self.model = draw_voters(self.truth, config, self.rng)
        self.model_index = {pk: position for position, pk in enumerate(honest)}
        self.kinds = {voter.pk: kind for voter, kind in zip(voters, kinds, strict=True)}

    def respond(self, annotator) -> int:
        if self.kinds[annotator.pk] == "speeder":
            return int(self.rng.integers(150, 800))
        return int(self.rng.integers(2500, 9000))

    def choose(self, comparison) -> str:
        annotator_id = Assignment.objects.get(
            comparison=comparison, status=Assignment.Status.ACTIVE
        ).annotator_id
        kind = self.kinds[annotator_id]
        if kind in ("left", "right"):
            return kind
        if kind in ("speeder", "random"):
            return "left" if self.rng.random() < 0.5 else "right"
        outcome = voter_outcomes(
            self.model,
            [self.model_index[annotator_id]],
            [self.index_of[comparison.left_item_id]],
            [self.index_of[comparison.right_item_id]],
            self.rng,
            allow_ties=False,
        )[0]
        return "left" if outcome == 1.0 else "right"


def run_crowd(seed: int, **fields) -> tuple[Study, list[Annotator], list[str], np.ndarray]:
    # The majority check is off: with this many bad annotators on few votes per pair, the "majority" of
    # the others is itself noisy and flags honest annotators too; random clickers are excluded by hand.
    fields.setdefault("quality_min_majority_agreement", None)
    study = make_study(seed=seed, **PLAN, **fields)
    kinds = ["honest"] * HONEST + BAD_KINDS
    voters = annotators(study, len(kinds))
    crowd = SimulatedCrowd(study, voters, kinds, seed=seed)
    vote_until(study, voters=voters, choose=crowd.choose, respond=crowd.respond)
    study.refresh_from_db()
    assert study.status == Study.Status.FINISHED
    return study, voters, kinds, crowd.truth


def closeness(scores: np.ndarray, truth: np.ndarray) -> tuple[float, float]:
    """ρ and τ (scipy) between the scores and the relatedness |z| the voters perceive (§4.1.2)."""
    return spearmanr(scores, np.abs(truth)).statistic, kendalltau(scores, np.abs(truth)).statistic


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_excluding_the_bad_annotators_moves_the_scores_toward_the_truth(seed):
    study, voters, kinds, truth = run_crowd(seed)
    bad = {voter.pk for voter, kind in zip(voters, kinds, strict=True) if kind != "honest"}

    by_rule = exclusion_rules_apply(study=study)
    caught = {exclusion.annotator_id for exclusion in by_rule}
    speeders_and_one_sided = {
        voter.pk for voter, kind in zip(voters, kinds, strict=True) if kind in ("speeder", "left", "right")
    }
    assert speeders_and_one_sided <= caught <= bad  # no honest annotator excluded by the rule
    for missed in sorted(bad - caught):  # what the flags missed, the researcher excludes by hand
        annotator_exclude(
            annotator=Annotator.objects.get(pk=missed), reason="random clicks seen in the votes"
        )

    report = scores_without_excluded(study=study)
    # With every vote, the recomputation is the closes' own result.
    stored = np.array(
        Item.objects.filter(study=study).order_by("index").values_list("final_score", flat=True)
    )
    np.testing.assert_allclose(report.score_with, stored, rtol=0, atol=1e-12)
    assert report.votes_closed == 680 == Vote.objects.filter(ballot__study=study).count()
    assert report.votes_excluded == Vote.objects.filter(ballot__study=study, annotator_id__in=bad).count()
    assert {person.annotator_id for person in report.annotators} == bad
    assert sum(group["annotators"] for group in report.by_reason.values()) == len(bad)

    rho_with, tau_with = closeness(report.score_with, truth)
    rho_without, tau_without = closeness(report.score_without, truth)
    # Closer to the truth on every seed; by how much varies with the seed. Seeds 11 to 20 (schedules
    # drawn the same on every CPU since 2026-11-24) gave ρ +0.02 to +0.21 (mean +0.12) and τ +0.03 to
    # +0.21; seeds 11-13: ρ 0.78 → 0.90, 0.87 → 0.89, 0.80 → 0.85.
    assert rho_without > rho_with
    assert tau_without > tau_with
    assert rho_without > 0.7


def closeness_with_and_without_the_bad(seed: int) -> tuple[float, float, float, float]:
    """ρ and τ against the truth of the scores with every vote and without the bad annotators' (those the
    rule excluded, and the rest by hand), for the crowd of ``seed``."""
    study, voters, kinds, truth = run_crowd(seed)
    bad = {voter.pk for voter, kind in zip(voters, kinds, strict=True) if kind != "honest"}
    caught = {exclusion.annotator_id for exclusion in exclusion_rules_apply(study=study)}
    for missed in sorted(bad - caught):
        annotator_exclude(
            annotator=Annotator.objects.get(pk=missed), reason="random clicks seen in the votes"
        )
    report = scores_without_excluded(study=study)
    return (*closeness(report.score_with, truth), *closeness(report.score_without, truth))


def test_over_ten_crowds_excluding_the_bad_annotators_gains_on_average():
    # The size of the gain varies with the crowd (seeds 11 to 20: ρ +0.02 to +0.21, τ +0.03 to +0.21);
    # its average over ten crowds is the claim, with room: it was +0.12 for ρ and +0.13 for τ.
    figures = np.array([closeness_with_and_without_the_bad(seed) for seed in range(11, 21)])
    rho_with, tau_with, rho_without, tau_without = figures.T
    assert (rho_without > rho_with).all() and (tau_without > tau_with).all()
    assert (rho_without - rho_with).mean() > 0.05
    assert (tau_without - tau_with).mean() > 0.05


def test_the_rule_excludes_the_flagged_annotators_when_ballot_1_closes_and_their_votes_stop():
    study, voters, kinds, truth = run_crowd(21, exclude_flagged_annotators=True)
    one_sided_or_fast = {
        voter.pk for voter, kind in zip(voters, kinds, strict=True) if kind in ("speeder", "left", "right")
    }
    honest = {voter.pk for voter, kind in zip(voters, kinds, strict=True) if kind == "honest"}

    exclusions = Exclusion.objects.filter(study=study)
    excluded = set(exclusions.values_list("annotator_id", flat=True))
    assert one_sided_or_fast <= excluded and not excluded & honest
    assert all(exclusion.rule.startswith("quality:") and exclusion.username == "" for exclusion in exclusions)
    fast = exclusions.get(annotator=voters[HONEST])  # the first speeder: its figure in the reason
    assert "fast" in fast.rule and "answers faster than 1,000 ms" in fast.reason
    # Excluded when ballot 1 closed: no vote of theirs in ballot 2, which others completed.
    ballot_2 = Ballot.objects.get(study=study, number=2)
    assert not Vote.objects.filter(ballot=ballot_2, annotator_id__in=excluded).exists()
    assert ballot_2.votes_recorded == 230

    report = scores_without_excluded(study=study)
    assert report.votes_excluded == Vote.objects.filter(annotator_id__in=excluded).count() > 0
    rho_with, _ = closeness(report.score_with, truth)
    rho_without, _ = closeness(report.score_without, truth)
    assert rho_without > rho_with


def test_study_scores_drops_nothing_for_a_hand_worked_two_ballot_study():
    # Three items; ballot 1: 0 beats 1, 0 beats 2, 1 ties 2; ballot 2 (items 0, 1): 1 beats 0, 0 beats 1.
    ballot = [1, 1, 1, 2, 2]
    left = [0, 0, 1, 1, 0]
    right = [1, 2, 2, 0, 1]
    outcome = [1.0, 1.0, 0.5, 1.0, 1.0]
    first, second = study_scores(ballot, left, right, outcome, 3, 2)
    # x(1) = (1, 0.25, 0.25); x(2) = (0.5, 0.5, NaN); b = Σ(1-x)(1-ȳ) / Σ(1-x)² = (0 + 0.375)/(0.5) = 0.75
    np.testing.assert_allclose(first.win_ratio, [1.0, 0.25, 0.25])
    assert second.rescale_slope == pytest.approx(0.75)
    # y(2) = 1 - b + b·x = 0.625 for items 0 and 1; ȳ(2) = (x(1) + y(2))/2; item 2 keeps 0.25
    np.testing.assert_allclose(second.score, [(1.0 + 0.625) / 2, (0.25 + 0.625) / 2, 0.25])


def test_the_results_page_and_the_export_report_the_scores_with_and_without(django_user_model):
    study, voters, kinds, truth = run_crowd(11)
    exclusion_rules_apply(study=study)
    staff = Client()
    staff.force_login(django_user_model.objects.create_user("r", password="x", is_staff=True))

    page = staff.get(f"/studies/{study.slug}/results/").content.decode()
    report = scores_without_excluded(study=study)
    assert f"{report.votes_excluded} of 680" in page
    assert 'id="exclusion-log"' in page and "quality:fast" in page and "quality:position" in page

    response = staff.get(f"/studies/{study.slug}/export/without-excluded.csv")
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert len(rows) == 45
    without = np.array([float(row["score_without_excluded"]) for row in rows])
    np.testing.assert_allclose(without, report.score_without, rtol=1e-12)
    assert [int(row["rank_with"]) for row in rows] == list(
        Item.objects.filter(study=study).order_by("index").values_list("final_rank", flat=True)
    )
    assert sorted(int(row["rank_without_excluded"]) for row in rows) == list(range(1, 46))

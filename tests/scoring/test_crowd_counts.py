"""People's votes and simulated annotators' votes counted apart (issue 34 §4.8)."""

import pytest
from django.core.management import call_command

from collection.checks import check_create
from collection.models import Annotator, CheckAnswer, Vote
from collection.voting import comparison_next_for, vote_record
from scoring.quality import crowd_votes_text
from scoring.selectors import study_check_tally, study_crowd, study_overview
from tests.factories import annotators, disagreeing_crowd, make_study, vote_until


def test_the_issues_crowd_is_told_as_nine_votes_by_one_person_and_763_by_100_simulated_annotators():
    text = crowd_votes_text(people=1, people_votes=9, simulated=100, simulated_votes=763)
    assert text == "772 votes: 9 by 1 person, 763 by 100 simulated annotators"


@pytest.mark.parametrize(
    ("people", "people_votes", "simulated", "simulated_votes", "text"),
    [
        (101, 772, 0, 0, "772 votes by 101 annotators"),
        (1, 1, 0, 0, "1 vote by 1 annotator"),
        (0, 0, 0, 0, "0 votes"),
        (0, 0, 100, 763, "763 votes, all by 100 simulated annotators"),
        (0, 0, 1, 1, "1 vote, by 1 simulated annotator"),
        (2, 1, 1, 1, "2 votes: 1 by 2 people, 1 by 1 simulated annotator"),
    ],
)
def test_the_crowd_is_told_in_words_for_every_mix(people, people_votes, simulated, simulated_votes, text):
    assert (
        crowd_votes_text(
            people=people, people_votes=people_votes, simulated=simulated, simulated_votes=simulated_votes
        )
        == text
    )


@pytest.mark.django_db(transaction=True)
def test_a_study_with_simulated_and_human_votes_counts_them_apart():
    study = make_study(tokens=6, ballot_count=2, appearances=4)  # 30 + 16 comparisons
    people = annotators(study, 3, prefix="prolific-")
    assert vote_until(study, voters=people, choose=disagreeing_crowd(study), max_votes=9) == 9
    call_command("simulate_voters", "--study", study.slug, "--voters", "6", "--distribution", "exponential")
    simulated_votes = Vote.objects.filter(ballot__study=study, annotator__simulated=True).count()
    assert simulated_votes == 46 - 9
    crowd = study_crowd(study=study)
    assert (crowd.people, crowd.people_votes, crowd.simulated, crowd.simulated_votes) == (3, 9, 6, 37)
    assert crowd.text == "46 votes: 9 by 3 people, 37 by 6 simulated annotators"
    overview = study_overview(study=study)
    assert (overview.vote_count, overview.voter_count) == (46, 9)
    assert overview.crowd == crowd


@pytest.mark.django_db
def test_check_answers_are_tallied_by_kind_and_crowd():
    study = make_study(check_rate=0.5)
    items = list(study.items.order_by("index"))
    gold = check_create(study=study, kind="gold", left_item=items[0], right_item=items[14], expected="left")
    other = check_create(study=study, kind="gold", left_item=items[1], right_item=items[13], expected="right")
    told = check_create(
        study=study,
        kind="instructed",
        left_item=items[2],
        right_item=items[12],
        expected="left",
        instruction="For this one, choose the pair on the left.",
    )
    people = annotators(study, 3)
    robot = Annotator.objects.create(study=study, participant_id="sim-0", simulated=True)
    choices = {  # every annotator answers every check; right (R) or wrong (W) by hand below
        people[0]: {gold: "left", other: "left", told: "left"},  # R W R
        people[1]: {gold: "left", other: "right", told: "right"},  # R R W
        people[2]: {gold: "right", other: "right", told: "left"},  # W R R
        robot: {gold: "left", other: "left", told: "right"},  # R W W
    }
    for annotator, choice_of in choices.items():
        for _ in choice_of:
            served = comparison_next_for(annotator=annotator, check_due=True).assignment
            check = next(check for check in choice_of if check.pk == served.quality_check_id)
            vote_record(annotator=annotator, assignment_id=served.pk, choice=choice_of[check])
    assert CheckAnswer.objects.filter(annotator__study=study).count() == 12
    assert study_check_tally(study=study) == {
        "rate": 0.5,
        "gold": {
            "checks": 2,
            "people": {"annotators": 3, "answered": 6, "correct": 4},
            "simulated": {"annotators": 1, "answered": 2, "correct": 1},
        },
        "instructed": {
            "checks": 1,
            "people": {"annotators": 3, "answered": 3, "correct": 2},
            "simulated": {"annotators": 1, "answered": 1, "correct": 0},
        },
    }

"""Crowd platforms' conventions: a code for each outcome and an exit for a participant without work, codes
per participant that the export verifies, the platform's parameters recorded, and the consent page's
promise of comparisons, minutes and pay."""

import csv
import io
import json
import re
from datetime import timedelta

import numpy as np
import pytest
from django.db import IntegrityError, transaction
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from hypothesis import given
from hypothesis import strategies as st

from collection import limits
from collection.crowd import OUTCOMES, Outcome, median_of_medians, participant_code, study_expectations
from collection.exclusion import annotator_exclude
from collection.identity import annotator_consent, annotator_for
from collection.models import Annotator, Comparison, Study, Vote
from collection.signing import participant_link
from collection.studies import study_duplicate
from collection.voting import NextReason
from tests.collection.test_close_wait import _fully_voted_but_open
from tests.collection.test_views import entry_url, join, page, vote_url
from tests.factories import annotators, make_study, vote_until

pytestmark = pytest.mark.django_db

PROLIFIC_COMPLETION = "https://app.prolific.com/submissions/complete"
PROLIFIC_PID = "5f0c1a2b3c4d5e6f7a8b9c0d"
MTURK_SUBMIT = "https://workersandbox.mturk.com/mturk/externalSubmit"


@pytest.fixture
def closing_study():
    """15 items, ballots of 30, 16 and 8 comparisons; ballot 1 closed in 6.0 s, ballot 2 voted and closing."""
    study = make_study()
    vote_until(study, voters=annotators(study, 5), max_votes=30)  # the 30th vote closes ballot 1
    study.ballots.filter(number=1).update(close_seconds=6.0)
    _fully_voted_but_open(study.ballots.get(number=2))
    return study


@pytest.fixture
def researcher_client(django_user_model):
    researcher = django_user_model.objects.create_user("researcher", password="x", is_staff=True)
    researcher_client = Client()
    researcher_client.force_login(researcher)
    return researcher_client


def waited(annotator: Annotator, seconds: float) -> None:
    """The annotator consented ``seconds`` ago and has not voted since."""
    Annotator.objects.filter(pk=annotator.pk).update(consented_at=timezone.now() - timedelta(seconds=seconds))


def refresh_seconds(response) -> list[str]:
    return re.findall(r'<meta http-equiv="refresh" content="(\d+)">', response.content.decode())


# --- a code for each outcome -----------------------------------------------------------------------


def test_a_participant_who_arrives_when_nothing_is_left_gets_the_no_work_code_and_exit(client):
    study = make_study(completion_redirect_url=PROLIFIC_COMPLETION)
    vote_until(study, voters=annotators(study, 5))
    study.refresh_from_db()
    assert study.status == Study.Status.FINISHED

    shown = page(client.get(entry_url(study), {"PROLIFIC_PID": PROLIFIC_PID}))

    assert shown.attributes["completion"]["data-outcome"] == Outcome.NO_WORK
    assert shown.text["completion-code"] == study.no_work_code
    assert shown.attributes["completion-link"]["href"] == f"{PROLIFIC_COMPLETION}?cc={study.no_work_code}"
    assert study.no_work_code != study.completion_code


def test_a_participant_waiting_past_the_longest_wait_is_offered_the_no_work_exit(client, closing_study):
    study = closing_study
    Study.objects.filter(pk=study.pk).update(max_wait_seconds=300)
    late = join(client, study, participant="late")

    waited(late, 100)
    before = client.get(vote_url(study))
    waited(late, 301)
    after = client.get(vote_url(study))

    shown = page(before)
    assert shown.attributes["nothing"]["data-reason"] == NextReason.BALLOT_CLOSING
    assert ("exit" in shown.attributes, "completion-code" in shown.attributes) == (False, False)
    assert (before["Retry-After"], refresh_seconds(before)) == ("6", ["6"])  # the close comes first
    shown = page(after)
    assert shown.text["exit-heading"] == "You may stop here"
    assert shown.attributes["completion"]["data-outcome"] == Outcome.NO_WORK
    assert shown.text["completion-code"] == study.no_work_code
    # It stops reloading, so the code does not vanish while it is being copied; "Check again" stays.
    assert (after.has_header("Retry-After"), refresh_seconds(after)) == (False, [])
    assert shown.attributes["retry-link"]["href"] == vote_url(study)


def test_the_waiting_page_reloads_no_later_than_the_longest_wait(client, closing_study):
    study = closing_study
    study.ballots.filter(number=1).update(close_seconds=300.0)  # the close would be told as 241 s
    Study.objects.filter(pk=study.pk).update(max_wait_seconds=300)
    late = join(client, study, participant="late")
    waited(late, 250)

    response = client.get(vote_url(study))

    assert int(response["Retry-After"]) in (49, 50)  # 300 - 250 s, give or take the test's own second
    assert refresh_seconds(response) == [response["Retry-After"]]


def test_every_comparison_taken_past_the_longest_wait_offers_the_exit_too(client):
    study = make_study(max_wait_seconds=60)
    late = join(client, study, participant="late")
    ballot = study.ballots.get(number=1)
    Comparison.objects.filter(ballot=ballot).update(
        status=Comparison.Status.LEASED, lease_expires_at=timezone.now() + timedelta(minutes=5)
    )
    waited(late, 61)

    shown = page(client.get(vote_url(study)))

    assert shown.attributes["nothing"]["data-reason"] == NextReason.ALL_LEASED
    assert shown.text["completion-code"] == study.no_work_code


def test_a_participant_whose_quota_is_done_gets_the_completion_code_and_their_own(client):
    study = make_study(votes_per_annotator_per_ballot=2, participant_codes=True)
    participant = join(client, study, participant="quick")
    for _ in range(2):
        client.post(vote_url(study), {"assignment": _assignment(client, study), "choice": "left"})

    shown = page(client.get(vote_url(study)))

    assert shown.attributes["nothing"]["data-reason"] == NextReason.QUOTA
    assert shown.attributes["completion"]["data-outcome"] == Outcome.COMPLETED
    assert shown.text["completion-code"] == study.completion_code
    expected = participant_code(study=study, annotator_id=participant.pk, outcome=Outcome.COMPLETED)
    assert shown.text["personal-code"] == expected


MEANINGS = {
    Outcome.COMPLETED: "This code confirms that you completed your part of the study.",
    Outcome.NO_WORK: "This code tells the platform that sent you here that no work was available for you.",
    Outcome.SCREENED_OUT: (
        "This code tells the platform that sent you here that the researchers ended your participation "
        "(screened out)."
    ),
}


def test_each_exit_says_what_its_code_means_and_none_claims_more(client):
    done = make_study(votes_per_annotator_per_ballot=1)
    join(client, done, participant="quick")
    client.post(vote_url(done), {"assignment": _assignment(client, done), "choice": "left"})
    finished = make_study()
    vote_until(finished, voters=annotators(finished, 5))
    screened = make_study()
    annotator_exclude(annotator=join(client, screened, participant="bot"), reason="pasted the same answer")
    waiting = make_study(max_wait_seconds=60)
    waited(join(client, waiting, participant="late"), 61)
    Comparison.objects.filter(ballot__study=waiting).update(
        status=Comparison.Status.LEASED, lease_expires_at=timezone.now() + timedelta(minutes=5)
    )

    exits = {
        "quota": client.get(vote_url(done)),
        "arrived after the end": client.get(entry_url(finished), {"participant": "newcomer"}),
        "screened out (voting page)": client.get(vote_url(screened)),
        "screened out (study link)": client.get(entry_url(screened)),
        "waited past the longest wait": client.get(vote_url(waiting)),
    }

    shown = {case: page(response) for case, response in exits.items()}
    assert {case: page.attributes["completion"]["data-outcome"] for case, page in shown.items()} == {
        "quota": Outcome.COMPLETED,
        "arrived after the end": Outcome.NO_WORK,
        "screened out (voting page)": Outcome.SCREENED_OUT,
        "screened out (study link)": Outcome.SCREENED_OUT,
        "waited past the longest wait": Outcome.NO_WORK,
    }
    for case, page_shown in shown.items():
        outcome = page_shown.attributes["completion"]["data-outcome"]
        assert page_shown.text["completion-meaning"] == MEANINGS[outcome], case
        assert "took part" not in page_shown.text["completion"], case


def _assignment(client, study) -> str:
    html = client.get(vote_url(study)).content.decode()
    return re.search(r'name="assignment" value="(\d+)"', html).group(1)


def test_no_personal_code_is_shown_unless_the_study_gives_them(client):
    study = make_study(votes_per_annotator_per_ballot=1)
    join(client, study, participant="quick")
    client.post(vote_url(study), {"assignment": _assignment(client, study), "choice": "left"})

    shown = page(client.get(vote_url(study)))

    assert (shown.text["completion-code"], "personal-code" in shown.attributes) == (
        study.completion_code,
        False,
    )


# --- codes per participant ---------------------------------------------------------------------------


def test_codes_per_participant_are_unique_and_stable():
    study = make_study(start=False)
    codes = [
        participant_code(study=study, annotator_id=pk, outcome=o) for pk in range(1, 2001) for o in OUTCOMES
    ]

    assert len(set(codes)) == len(codes) == 2000 * len(OUTCOMES) == 6000
    assert all(re.fullmatch(r"[A-Z2-7]{5}-[A-Z2-7]{5}", code) for code in codes)
    assert participant_code(study=study, annotator_id=7, outcome="completed") == codes[6 * len(OUTCOMES)]
    other = make_study(start=False)  # another study's secret: other codes for the same annotator ids
    assert participant_code(study=other, annotator_id=7, outcome="completed") != codes[6 * len(OUTCOMES)]


def test_the_exports_carry_the_code_a_participant_was_shown(client, researcher_client):
    study = make_study(votes_per_annotator_per_ballot=1, participant_codes=True)
    voter = join(client, study, participant=PROLIFIC_PID)
    client.post(vote_url(study), {"assignment": _assignment(client, study), "choice": "left"})
    shown_to_voter = page(client.get(vote_url(study))).text["personal-code"]

    rows = list(csv.DictReader(io.StringIO(download(researcher_client, "scoring:export-votes-csv", study))))
    dataset = json.loads(download(researcher_client, "scoring:export-dataset-json", study))

    assert [(row["annotator_id"], row["code_completed"]) for row in rows] == [(str(voter.pk), shown_to_voter)]
    participants = {entry["participant_id"]: entry for entry in dataset["study"]["participants"]}
    assert participants[PROLIFIC_PID]["code_completed"] == shown_to_voter
    no_work = participant_code(study=study, annotator_id=voter.pk, outcome=Outcome.NO_WORK)
    assert participants[PROLIFIC_PID]["code_no_work"] == no_work


def download(client, name: str, study: Study) -> str:
    response = client.get(reverse(name, args=[study.slug]))
    assert response.status_code == 200
    return b"".join(response.streaming_content).decode()


# --- platform parameters -------------------------------------------------------------------------------


def test_a_prolific_link_records_the_participant_study_and_session(client):
    study = make_study()
    link = {"PROLIFIC_PID": PROLIFIC_PID, "STUDY_ID": "64a1b2c3d4e5f60718293a4b", "SESSION_ID": "sess-1"}

    entry = page(client.get(entry_url(study), link))
    hidden = {name: value for name, value in link.items() if name != "PROLIFIC_PID"}
    client.post(entry_url(study), {"consent": "yes", "participant": PROLIFIC_PID, **hidden})

    annotator = Annotator.objects.get(study=study)
    assert (annotator.participant_id, annotator.prolific_study_id, annotator.prolific_session_id) == (
        PROLIFIC_PID,
        "64a1b2c3d4e5f60718293a4b",
        "sess-1",
    )
    assert annotator.consented_at is not None
    assert "consent" in entry.attributes


def test_an_mturk_link_records_the_worker_hit_assignment_and_submit_address(client):
    study = make_study()
    link = {
        "workerId": "A1B2C3D4E5F6G7",
        "hitId": "3HIT",
        "assignmentId": "3ASSIGN",
        "turkSubmitTo": MTURK_SUBMIT,
    }

    html = client.get(entry_url(study), link).content.decode()
    form = {name: value for name, value in re.findall(r'type="hidden" name="(\w+)" value="([^"]*)"', html)}
    client.post(entry_url(study), {**form, "consent": "yes"})

    annotator = Annotator.objects.get(study=study)
    assert (
        annotator.participant_id,
        annotator.mturk_hit_id,
        annotator.mturk_assignment_id,
        annotator.mturk_submit_to,
    ) == ("A1B2C3D4E5F6G7", "3HIT", "3ASSIGN", MTURK_SUBMIT)
    assert annotator.consented_at is not None


@pytest.mark.parametrize(
    ("parameter", "value", "says"),
    [
        ("STUDY_ID", "abc\x00def", "its STUDY_ID holds control characters"),
        ("SESSION_ID", "s" * 129, "its SESSION_ID is 129 characters long"),
        ("turkSubmitTo", "http://www.mturk.com", "its turkSubmitTo is not an https address"),
        ("turkSubmitTo", "javascript:alert(1)", "its turkSubmitTo is not an https address"),
    ],
)
def test_a_malformed_platform_parameter_is_refused_and_records_nothing(client, parameter, value, says):
    study = make_study()

    shown_get = client.get(entry_url(study), {"PROLIFIC_PID": PROLIFIC_PID, parameter: value})
    posted = client.post(entry_url(study), {"consent": "yes", "participant": PROLIFIC_PID, parameter: value})

    assert (shown_get.status_code, posted.status_code) == (400, 400)
    assert says in page(shown_get).text["link-error"]
    assert not Annotator.objects.filter(study=study).exists()


def test_a_signed_link_with_prolific_parameters_still_works(client):
    study = make_study(require_signed_links=True)
    link = participant_link("/s/x/", study.participant_secret, PROLIFIC_PID)
    signature = link.rsplit("sig=", 1)[1]

    shown = client.get(entry_url(study), {"PROLIFIC_PID": PROLIFIC_PID, "sig": signature, "STUDY_ID": "S1"})
    forged = client.get(
        entry_url(study), {"PROLIFIC_PID": "someone-else", "sig": signature, "STUDY_ID": "S1"}
    )

    assert (shown.status_code, forged.status_code) == (200, 403)
    assert Annotator.objects.get(study=study).prolific_study_id == "S1"


# --- the consent page's promise ---------------------------------------------------------------------


def test_the_consent_page_states_comparisons_minutes_and_pay_from_the_plan_and_the_estimate(client):
    # 15 items, n_b = 3, α = 0.5, M = 4: ballots of 30, 16 and 8 comparisons. A cap of 10 per ballot:
    # 10 + 10 + 8 = 28 comparisons; at 6 s each, 168 s: 3 minutes (rounded up); at 9.00 per hour, 0.45.
    study = make_study(votes_per_annotator_per_ballot=10, seconds_per_comparison=6.0, pay_per_hour=9.0)

    shown = page(client.get(entry_url(study)))

    assert (shown.text["expected-comparisons"], shown.text["expected-minutes"]) == ("28", "3")
    assert shown.text["expected-pay"] == "0.45 GBP"
    assert "about 6.0 s per comparison" in shown.text["expectations"]


def test_the_consent_page_uses_the_median_of_the_votes_measured(client):
    # Without a cap: 30 + 16 + 8 = 54 comparisons. Five annotators whose votes took 10, 12, 12, 14 and
    # 20 s: the median 12 s; 648 s is 10.8 minutes, 11 rounded up; at 12.50 USD per hour, 2.29 USD.
    study = make_study(pay_per_hour=12.5, pay_currency="USD")
    vote_until(study, voters=annotators(study, 5), max_votes=5)
    for vote, milliseconds in zip(
        Vote.objects.order_by("pk"), (10_000, 20_000, 12_000, 14_000, 12_000), strict=True
    ):
        Vote.objects.filter(pk=vote.pk).update(response_ms=milliseconds)

    shown = page(client.get(entry_url(study)))

    assert (shown.text["expected-comparisons"], shown.text["expected-minutes"]) == ("54", "11")
    assert shown.text["expected-pay"] == "2.29 USD"
    assert "a comparison takes 12.0 s for half of the people" in shown.text["expectations"]


# Server-measured times (ms) of five annotators who read and judge, the way people do: each one's
# median 4.0, 5.5, 6.0, 7.5 and 9.0 s (one distracted for 30 s once); the median of the medians is 6.0 s.
CAREFUL_CROWD = {
    "a": [3_800, 4_000, 4_900],
    "b": [5_500, 5_100, 8_000],
    "c": [6_000, 12_000, 4_500],
    "d": [7_500, 7_000, 30_000],
    "e": [9_000, 8_200, 9_900],
}
# The speeder: 15 votes 150 ms apart, flagged "fast" by quality control (15 votes >= 10, all of
# them under the study's 1,000 ms, above its 25% share).
SPEEDER = [150] * 15


def crowd_voted(study: Study, times: dict[str, list[int]]) -> dict[str, Annotator]:
    """Each participant votes once per entry of their times, each vote measured at that time (ms)."""
    voters = {}
    for participant, milliseconds in times.items():
        voter = annotator_for(study=study, participant_id=participant)
        annotator_consent(annotator=voter)
        vote_until(study, voters=[voter], max_votes=len(milliseconds))
        votes = Vote.objects.filter(annotator=voter).order_by("pk")
        for vote, value in zip(votes, milliseconds, strict=True):
            Vote.objects.filter(pk=vote.pk).update(response_ms=value)
        voters[participant] = voter
    return voters


@pytest.fixture
def priced_study():
    # 10 tokens, 45 items, n_b = 3, α = 0.5, M = 4: ballots of 45, 23 and 12 items, 90 + 46 + 24 = 160
    # comparisons (no cap). The prior: 6.0 s per comparison, 960 s, 16 minutes; at 9.00 per hour, 2.40.
    return make_study(tokens=10, seconds_per_comparison=6.0, pay_per_hour=9.0)


def test_one_fast_voter_leaves_the_consent_pages_estimate_at_the_studys_prior(client, priced_study):
    crowd_voted(priced_study, {"speeder": SPEEDER})

    expectations = study_expectations(study=priced_study)
    shown = page(client.get(entry_url(priced_study)))

    assert (expectations.seconds_per_comparison, expectations.measured) == (6.0, False)
    assert (shown.text["expected-minutes"], shown.text["expected-pay"]) == ("16", "2.40 GBP")
    assert "about 6.0 s per comparison" in shown.text["expectations"]


def test_the_estimate_is_the_median_of_the_medians_of_annotators_in_good_standing(client, priced_study):
    crowd_voted(priced_study, CAREFUL_CROWD | {"speeder": SPEEDER})

    expectations = study_expectations(study=priced_study)
    shown = page(client.get(entry_url(priced_study)))

    # 160 comparisons at 6.0 s: 16 minutes, 2.40 GBP; the votes' own median (2.0 s) would say 6 minutes.
    assert (expectations.seconds_per_comparison, expectations.measured) == (6.0, True)
    assert (shown.text["expected-minutes"], shown.text["expected-pay"]) == ("16", "2.40 GBP")
    assert "a comparison takes 6.0 s for half of the people" in shown.text["expectations"]


def test_excluded_and_simulated_annotators_do_not_feed_the_estimate(priced_study):
    voters = crowd_voted(priced_study, CAREFUL_CROWD | {"gone": [60_000] * 3, "bot": [50_000] * 3})
    annotator_exclude(annotator=voters["gone"], reason="left the study's chat with abuse")
    Annotator.objects.filter(pk=voters["bot"].pk).update(simulated=True)

    assert study_expectations(study=priced_study).seconds_per_comparison == 6.0
    # Four careful annotators left once one is excluded: too few, the prior stands.
    annotator_exclude(annotator=voters["e"], reason="shared their code on a forum")
    expectations = study_expectations(study=priced_study)
    assert (expectations.seconds_per_comparison, expectations.measured) == (6.0, False)


def test_without_the_speed_check_the_speeder_counts_but_moves_the_estimate_one_rank_at_most(priced_study):
    Study.objects.filter(pk=priced_study.pk).update(quality_fast_ms=None)
    priced_study.refresh_from_db()
    crowd_voted(priced_study, CAREFUL_CROWD | {"speeder": SPEEDER})

    # Six medians, 0.15, 4.0, 5.5, 6.0, 7.5, 9.0 s: the median is (5.5 + 6.0) / 2 = 5.75 s.
    assert study_expectations(study=priced_study).seconds_per_comparison == 5.75


@given(
    careful=st.lists(
        st.lists(st.integers(min_value=1_000, max_value=60_000), min_size=1, max_size=6),
        min_size=3,
        max_size=9,
    ),
    other=st.lists(st.integers(min_value=1, max_value=3_600_000), min_size=1, max_size=40),
)
def test_one_annotators_times_move_the_median_of_medians_by_one_rank_at_most(careful, other):
    medians = sorted(float(np.median(times)) for times in careful)
    people = len(medians)
    ids = [person for person, times in enumerate(careful) for _ in times]
    milliseconds = [value for times in careful for value in times]

    estimate, counted = median_of_medians(ids + [people] * len(other), milliseconds + other)

    assert counted == people + 1
    assert medians[max(0, (people - 1) // 2 - 1)] <= estimate <= medians[min(people - 1, people // 2 + 1)]


def test_the_median_of_medians_weighs_people_not_votes():
    # Two people at 4 s with one vote each, one at 9 s with a hundred votes: the median person is at 4 s.
    assert median_of_medians([1, 2] + [3] * 100, [4_000, 4_000] + [9_000] * 100) == (4_000.0, 3)
    assert median_of_medians([], []) == (pytest.approx(float("nan"), nan_ok=True), 0)


def test_the_consent_page_states_no_pay_without_a_rate(client):
    shown = page(client.get(entry_url(make_study())))

    assert ("expected-comparisons" in shown.attributes, "expected-pay" in shown.attributes) == (True, False)


# --- permissions ----------------------------------------------------------------------------------------


def test_another_studys_participant_sees_no_code_of_this_study(client):
    mine = make_study(votes_per_annotator_per_ballot=1, participant_codes=True)
    theirs = make_study(participant_codes=True)
    vote_until(theirs, voters=annotators(theirs, 5))
    join(client, mine, participant="p1")
    client.post(vote_url(mine), {"assignment": _assignment(client, mine), "choice": "left"})
    assert page(client.get(vote_url(mine))).text["completion-code"] == mine.completion_code

    voting = client.get(vote_url(theirs))
    entry = page(client.get(entry_url(theirs)))

    assert (voting.status_code, voting["Location"]) == (302, entry_url(theirs))
    assert ("completion-code" in entry.attributes, "personal-code" in entry.attributes) == (False, False)


# --- the settings' bounds ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"max_wait_seconds": 29}, limits.WAIT_MESSAGE),
        ({"max_wait_seconds": limits.MAX_WAIT_SECONDS + 1}, limits.WAIT_MESSAGE),
        ({"pay_per_hour": 0}, limits.PAY_MESSAGE),
        ({"pay_per_hour": limits.MAX_PAY_PER_HOUR + 1}, limits.PAY_MESSAGE),
    ],
)
def test_the_api_refuses_a_wait_or_pay_out_of_bounds_and_says_why(researcher_client, values, message):
    response = researcher_client.post(
        "/api/studies/", {"name": "Pilot", "slug": "pilot", **values}, content_type="application/json"
    )

    assert response.status_code == 400
    assert response.json()["errors"] == [f"{next(iter(values))}: {message}"]
    assert not Study.objects.filter(slug="pilot").exists()


@pytest.mark.parametrize("values", [{"max_wait_seconds": 0}, {"pay_per_hour": -1.0}])
def test_the_database_refuses_a_wait_or_pay_out_of_bounds(values):
    study = make_study(start=False)
    Study.objects.filter(pk=study.pk).update(max_wait_seconds=30, pay_per_hour=None)  # within the bounds

    with pytest.raises(IntegrityError), transaction.atomic():
        Study.objects.filter(pk=study.pk).update(**values)


def test_a_duplicate_keeps_the_crowd_settings_but_gets_codes_of_its_own():
    study = make_study(max_wait_seconds=90, participant_codes=True, pay_per_hour=8.5, pay_currency="EUR")

    copy = study_duplicate(study=study)

    assert (copy.max_wait_seconds, copy.participant_codes, copy.pay_per_hour, copy.pay_currency) == (
        90,
        True,
        8.5,
        "EUR",
    )
    assert (copy.no_work_code != study.no_work_code, copy.participant_secret != study.participant_secret) == (
        True,
        True,
    )


# --- MTurk: the assignment submitted back to MTurk -------------------------------------------------


def _mturk_worker_done(client, study, submit_to: str, assignment: str = "3ASSIGN"):
    link = {
        "workerId": "A1B2C3D4E5F6G7",
        "hitId": "3HIT",
        "assignmentId": assignment,
        "turkSubmitTo": submit_to,
    }
    html = client.get(entry_url(study), link).content.decode()
    form = {name: value for name, value in re.findall(r'type="hidden" name="(\w+)" value="([^"]*)"', html)}
    client.post(entry_url(study), {**form, "consent": "yes"})
    client.post(vote_url(study), {"assignment": _assignment(client, study), "choice": "left"})
    return client.get(vote_url(study))


def _mturk_form(response) -> tuple[str, dict[str, str]] | None:
    html = response.content.decode()
    found = re.search(r'<form method="post" action="([^"]+)" id="mturk-submit">(.*?)</form>', html, re.S)
    if found is None:
        return None
    fields = dict(re.findall(r'type="hidden" name="(\w+)" value="([^"]*)"', found.group(2)))
    return found.group(1), fields


@pytest.mark.parametrize(
    ("submit_to", "action"),
    [
        ("https://www.mturk.com", "https://www.mturk.com/mturk/externalSubmit"),
        ("https://workersandbox.mturk.com/", "https://workersandbox.mturk.com/mturk/externalSubmit"),
        (MTURK_SUBMIT, "https://workersandbox.mturk.com/mturk/externalSubmit"),
    ],
)
def test_an_mturk_worker_who_is_done_submits_the_assignment_to_mturk(client, submit_to, action):
    study = make_study(votes_per_annotator_per_ballot=1, participant_codes=True)
    response = _mturk_worker_done(client, study, submit_to)
    annotator = Annotator.objects.get(study=study)
    expected = participant_code(study=study, annotator_id=annotator.pk, outcome=Outcome.COMPLETED)
    assert _mturk_form(response) == (
        action,
        {
            "assignmentId": "3ASSIGN",
            "outcome": Outcome.COMPLETED,
            "completion_code": study.completion_code,
            "personal_code": expected,
        },
    )
    # The form may go there: the page's Content-Security-Policy names MTurk's host in form-action.
    form_action = [d for d in response["Content-Security-Policy"].split("; ") if d.startswith("form-action")]
    assert action.split("/mturk/")[0] in form_action[0].split()


@pytest.mark.parametrize(
    ("submit_to", "assignment"),
    [
        ("https://evil.example/mturk/externalSubmit", "3ASSIGN"),  # anyone can write a link
        ("https://www.mturk.com.evil.example", "3ASSIGN"),
        ("https://www.mturk.com/elsewhere", "3ASSIGN"),
        ("https://www.mturk.com", "ASSIGNMENT_ID_NOT_AVAILABLE"),  # a preview: nothing to submit
    ],
)
def test_no_form_goes_anywhere_but_mturk_or_for_a_preview(client, submit_to, assignment):
    study = make_study(votes_per_annotator_per_ballot=1)
    response = _mturk_worker_done(client, study, submit_to, assignment=assignment)
    assert _mturk_form(response) is None
    assert page(response).text["completion-code"] == study.completion_code  # the code is still shown


def test_a_worker_from_elsewhere_sees_no_mturk_form(client):
    study = make_study(votes_per_annotator_per_ballot=1)
    join(client, study, participant="prolific-person")
    client.post(vote_url(study), {"assignment": _assignment(client, study), "choice": "left"})
    assert _mturk_form(client.get(vote_url(study))) is None

"""Leaving the study: Finish ends a participant's session with the completed code once they have made the
study's minimum of judgements, and a page that is left gives its comparison back at once (the release)."""

import random
import re
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from collection import limits
from collection.checks import check_create
from collection.crowd import Outcome
from collection.exclusion import annotator_exclude
from collection.models import Annotator, Assignment, Comparison, Study, Vote
from collection.studies import study_setting_problems
from collection.voting import NextReason, comparison_next_for, vote_record
from tests.collection.test_views import entry_url, join, page, vote_url
from tests.factories import annotators, make_study

pytestmark = pytest.mark.django_db


class Always(random.Random):
    """Draws that always serve a check."""

    def random(self) -> float:
        return 0.0


def finish_url(study: Study) -> str:
    return reverse("collection:finish", args=[study.slug])


def release_url(study: Study) -> str:
    return reverse("collection:release", args=[study.slug])


def held_assignment(client, study: Study) -> int:
    """The assignment of the comparison the voting page shows (leasing it)."""
    html = client.get(vote_url(study)).content.decode()
    return int(re.search(r'name="assignment" value="(\d+)"', html).group(1))


def vote(client, study: Study, times: int = 1) -> None:
    for _ in range(times):
        response = client.post(
            vote_url(study), {"assignment": held_assignment(client, study), "choice": "left"}
        )
        assert response.status_code == 200


# --- Finish --------------------------------------------------------------------------------------------


def test_before_the_minimum_finish_is_refused_with_how_many_remain(client):
    study = make_study(min_judgements=5)
    annotator = join(client, study)
    vote(client, study, times=3)
    before = page(client.get(vote_url(study)))

    refused = client.post(finish_url(study))

    assert (
        before.text["finish-remaining"]
        == "After 2 more comparisons you may finish here and leave with your completion code."
    )
    assert (
        before.attributes["finish-remaining"].keys() >= {"id"}
        and "hidden" not in before.attributes["finish-remaining"]
    )
    assert "hidden" in before.attributes["finish-ready"]
    assert refused.status_code == 409
    assert page(refused).text["vote-error"] == (
        "This study asks for 5 comparisons before you finish; you have made 3, so 2 remain."
    )
    annotator.refresh_from_db()
    assert annotator.finished_at is None
    assert Assignment.objects.filter(annotator=annotator, status=Assignment.Status.ACTIVE).count() == 1


def test_at_the_minimum_finish_ends_the_session_with_the_completed_code_and_gives_the_lease_back(client):
    study = make_study(min_judgements=2, participant_codes=True)
    annotator = join(client, study)
    vote(client, study, times=2)
    shown = page(client.get(vote_url(study)))
    held = Assignment.objects.get(annotator=annotator, status=Assignment.Status.ACTIVE)
    assert (
        "hidden" in shown.attributes["finish-remaining"] and "hidden" not in shown.attributes["finish-ready"]
    )

    finished = client.post(finish_url(study))

    assert (finished.status_code, finished["Location"]) == (302, vote_url(study))
    exit_page = page(client.get(vote_url(study)))
    assert exit_page.attributes["nothing"]["data-reason"] == NextReason.ANNOTATOR_FINISHED
    assert exit_page.text["nothing-heading"] == "Thank you, you have finished"
    assert exit_page.attributes["completion"]["data-outcome"] == Outcome.COMPLETED
    assert exit_page.text["completion-code"] == study.completion_code
    assert exit_page.text["completion-meaning"] == ("This code confirms that you completed the study.")
    annotator.refresh_from_db()
    assert annotator.finished_at is not None
    held.refresh_from_db()
    assert (held.status, held.comparison.status) == (Assignment.Status.EXPIRED, Comparison.Status.OPEN)
    assert Vote.objects.filter(annotator=annotator).count() == 2


def test_a_finished_annotator_who_comes_back_sees_the_completed_exit_and_votes_no_more(client):
    study = make_study(min_judgements=1)
    annotator = join(client, study)
    vote(client, study)
    stale = held_assignment(client, study)
    client.post(finish_url(study))

    entry = page(client.get(entry_url(study)))
    sent_after = client.post(vote_url(study), {"assignment": stale, "choice": "right"})
    asked = client.get(reverse("api:study-next", args=[study.slug]))
    again = client.post(finish_url(study))

    assert entry.attributes["completion"]["data-outcome"] == Outcome.COMPLETED
    assert entry.text["completion-code"] == study.completion_code
    assert "consent" not in entry.attributes
    assert sent_after.status_code == 409
    assert page(sent_after).attributes["nothing"]["data-reason"] == NextReason.ANNOTATOR_FINISHED
    assert (asked.status_code, asked["X-Yardstick-Reason"]) == (204, NextReason.ANNOTATOR_FINISHED)
    assert again.status_code == 302  # Finish again: the same exit, the first time kept
    assert Vote.objects.filter(annotator=annotator).count() == 1
    assert not Assignment.objects.filter(annotator=annotator, status=Assignment.Status.ACTIVE).exists()


def test_answers_to_checks_are_not_judgements(client):
    study = make_study(min_judgements=1, check_rate=0.5)
    check_create(
        study=study,
        kind="instructed",
        left_item=study.items.order_by("index")[0],
        right_item=study.items.order_by("index")[1],
        expected="left",
        instruction="For this one, choose the pair on the left.",
    )
    annotator = join(client, study)
    served = comparison_next_for(annotator=annotator, rng=Always())
    assert served.assignment.quality_check_id is not None
    vote_record(annotator=annotator, assignment_id=served.assignment.pk, choice="left")

    refused = client.post(finish_url(study))

    assert refused.status_code == 409
    assert "you have made 0, so 1 remain" in page(refused).text["vote-error"]


def test_with_a_minimum_of_zero_a_participant_may_finish_at_once_with_the_completed_code(client):
    study = make_study(min_judgements=0)
    join(client, study)
    shown = page(client.get(vote_url(study)))

    client.post(finish_url(study))

    assert "hidden" not in shown.attributes["finish-ready"]
    assert page(client.get(vote_url(study))).text["completion-code"] == study.completion_code


def test_an_excluded_annotator_cannot_finish_and_keeps_the_screened_out_exit(client):
    study = make_study(min_judgements=0)
    annotator = join(client, study)
    annotator_exclude(annotator=annotator, reason="answered in a language the study does not use")

    refused = client.post(finish_url(study))

    assert refused.status_code == 403
    annotator.refresh_from_db()
    assert annotator.finished_at is None
    assert page(client.get(vote_url(study))).text["completion-code"] == study.screened_out_code


def test_a_waiting_page_offers_finish_rather_than_the_no_work_code_once_the_minimum_is_made(client):
    study = make_study(min_judgements=1, max_wait_seconds=60)
    annotator = join(client, study)
    vote(client, study)
    Assignment.objects.filter(annotator=annotator, status=Assignment.Status.ACTIVE).update(
        status=Assignment.Status.EXPIRED
    )
    Comparison.objects.filter(ballot__study=study).exclude(status=Comparison.Status.VOTED).update(
        status=Comparison.Status.LEASED, lease_expires_at=timezone.now() + timedelta(minutes=5)
    )
    Vote.objects.filter(annotator=annotator).update(created_at=timezone.now() - timedelta(seconds=61))

    waiting = client.get(vote_url(study))

    shown = page(waiting)
    assert shown.attributes["nothing"]["data-reason"] == NextReason.ALL_LEASED
    assert "completion-code" not in shown.attributes  # no no-work code beside Finish
    assert "hidden" not in shown.attributes["finish-ready"] and "finish-button" in shown.attributes
    assert 2 <= int(waiting["Retry-After"]) <= 4  # it still checks for work


def test_the_api_finishes_as_the_page_does(client):
    study = make_study(
        min_judgements=1, completion_redirect_url="https://app.prolific.com/submissions/complete"
    )
    join(client, study)
    url = reverse("api:study-finish", args=[study.slug])

    refused = client.post(url)
    vote(client, study)
    finished = client.post(url)
    again = client.post(url)

    assert (refused.status_code, refused.json()["detail"]) == (
        409,
        "this study asks for 1 comparisons before you finish; you have made 0, so 1 remains",
    )
    assert finished.status_code == 200
    assert finished.json() == {
        "outcome": "completed",
        "code": study.completion_code,
        "personal_code": "",
        "completion_url": f"https://app.prolific.com/submissions/complete?cc={study.completion_code}",
        "votes": 1,
    }
    assert again.json() == finished.json()
    assert Client().post(url).status_code == 403  # nobody's: open the link and consent first


def test_the_consent_page_states_the_minimum_before_finish(client):
    # Without a cap a participant makes at most 30 + 16 + 8 = 54 comparisons; with a cap of 4, 12.
    shown = page(client.get(entry_url(make_study(min_judgements=20))))
    at_once = page(client.get(entry_url(make_study(min_judgements=0))))
    beyond = page(client.get(entry_url(make_study(min_judgements=20, votes_per_annotator_per_ballot=4))))

    assert shown.text["expected-minimum"] == "20"
    assert "After 20 comparisons you may press Finish at any time" in shown.text["expectations"]
    assert "You may press Finish at any time" in at_once.text["expectations"]
    # A minimum beyond what one person may make is never reached: Finish is not promised.
    assert "Finish" not in beyond.text["expectations"] and "expected-minimum" not in beyond.attributes


def test_min_judgements_changes_while_the_study_runs_within_its_bounds(django_user_model):
    study = make_study()
    staff = Client()
    staff.force_login(django_user_model.objects.create_user("researcher", password="x", is_staff=True))
    url = reverse("api:study-detail", args=[study.slug])

    changed = staff.patch(url, {"min_judgements": 40}, content_type="application/json")
    too_many = staff.patch(
        url, {"min_judgements": limits.MAX_MIN_JUDGEMENTS + 1}, content_type="application/json"
    )
    Study.objects.filter(pk=study.pk).update(status=Study.Status.FINISHED)
    after = staff.patch(url, {"min_judgements": 10}, content_type="application/json")

    assert (changed.status_code, changed.json()["min_judgements"]) == (200, 40)
    assert too_many.status_code == 400
    assert too_many.json()["errors"] == [f"min_judgements: {limits.MIN_JUDGEMENTS_MESSAGE}"]
    assert after.status_code == 409
    assert Study.objects.get(pk=study.pk).min_judgements == 40


def test_the_admin_shows_min_judgements_with_the_crowd_settings(django_user_model):
    study = make_study()
    staff = Client()
    staff.force_login(django_user_model.objects.create_superuser("admin", password="x"))

    html = staff.get(reverse("admin:collection_study_change", args=[study.pk])).content.decode()

    assert 'name="min_judgements"' in html
    assert html.index('name="max_wait_seconds"') < html.index('name="min_judgements"')


# --- the lease given back --------------------------------------------------------------------------------


def test_leaving_the_page_gives_the_comparison_back_at_once(client):
    study = make_study()
    annotator = join(client, study)
    held = held_assignment(client, study)
    comparison = Assignment.objects.get(pk=held).comparison_id
    (other,) = annotators(study, 1, prefix="other")

    released = client.post(release_url(study), {"assignment": held})

    assert released.status_code == 204
    assert Assignment.objects.get(pk=held).status == Assignment.Status.EXPIRED
    assert Comparison.objects.get(pk=comparison).status == Comparison.Status.OPEN
    assert comparison_next_for(annotator=other).assignment.comparison_id == comparison  # the first open one
    refused = client.post(vote_url(study), {"assignment": held, "choice": "left"})
    assert refused.status_code == 409 and not Vote.objects.filter(annotator=annotator).exists()


def test_a_release_twice_or_after_the_vote_changes_nothing(client):
    study = make_study()
    join(client, study)
    held = held_assignment(client, study)
    client.post(vote_url(study), {"assignment": held, "choice": "left"})
    voted = Vote.objects.get(assignment_id=held)

    after_vote = client.post(release_url(study), {"assignment": held})
    nxt = held_assignment(client, study)
    first, second = (client.post(release_url(study), {"assignment": nxt}) for _ in range(2))

    assert (after_vote.status_code, first.status_code, second.status_code) == (204, 204, 204)
    assert Assignment.objects.get(pk=held).status == Assignment.Status.VOTED
    assert Comparison.objects.get(pk=voted.comparison_id).status == Comparison.Status.VOTED
    assert Assignment.objects.get(pk=nxt).status == Assignment.Status.EXPIRED


def test_another_annotators_lease_is_not_released(client):
    study = make_study()
    join(client, study)
    (other,) = annotators(study, 1, prefix="other")
    theirs = comparison_next_for(annotator=other).assignment

    foreign = client.post(release_url(study), {"assignment": theirs.pk})
    unknown = client.post(release_url(study), {"assignment": 999_999})
    malformed = client.post(release_url(study), {"assignment": "9223372036854775808"})
    stranger = Client().post(release_url(study), {"assignment": theirs.pk})

    assert (foreign.status_code, foreign.content.decode()) == (
        404,
        f"assignment {theirs.pk} is not one of yours",
    )
    assert (unknown.status_code, malformed.status_code, stranger.status_code) == (404, 400, 403)
    assert stranger.content.decode().startswith("you hold no comparison of this study")
    theirs.refresh_from_db()
    assert (theirs.status, theirs.comparison.status) == (Assignment.Status.ACTIVE, Comparison.Status.LEASED)


def test_a_release_without_the_csrf_token_is_refused():
    study = make_study()
    browser = Client(enforce_csrf_checks=True)
    browser.get(entry_url(study), {"participant": "abc"})
    token = browser.cookies["csrftoken"].value
    browser.post(entry_url(study), {"consent": "yes", "participant": "abc", "csrfmiddlewaretoken": token})
    held = held_assignment(browser, study)

    forged = browser.post(release_url(study), {"assignment": held})
    sent = browser.post(release_url(study), {"assignment": held, "csrfmiddlewaretoken": token})

    assert (forged.status_code, sent.status_code) == (403, 204)
    assert Annotator.objects.get(study=study).participant_id == "abc"


def test_the_service_refuses_a_minimum_beyond_its_bound():
    study = make_study()
    study.min_judgements = limits.MAX_MIN_JUDGEMENTS + 1

    problems = study_setting_problems(study=study, changed={"min_judgements"})

    assert problems == [("min_judgements", limits.MIN_JUDGEMENTS_MESSAGE)]


def test_a_minimum_no_participant_can_reach_shows_no_finish_on_the_voting_page(client):
    # A cap of 4 per ballot over 3 ballots: at most 12 comparisons, never the 20 the study asks.
    study = make_study(min_judgements=20, votes_per_annotator_per_ballot=4)
    reachable = make_study(min_judgements=12, votes_per_annotator_per_ballot=5)  # 5 + 5 + 5 = 15
    join(client, study)
    join(client, reachable, participant="other")

    assert "finish" not in page(client.get(vote_url(study))).attributes
    assert page(client.get(vote_url(reachable))).text["finish-remaining"].startswith("After 12 more")

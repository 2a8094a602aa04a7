"""The voting page's form without JavaScript, sent odd but honest values: a 4xx page that says what is
wrong, never a 500, and nothing written. (The API's answers: tests/api/test_echoed_text.py.)"""

from __future__ import annotations

from html.parser import HTMLParser

import pytest
from django.test import RequestFactory
from django.urls import reverse

from collection.models import Annotator, Assignment, Vote
from collection.views import _vote_error_page
from common.errors import ServiceError
from tests.factories import make_study

pytestmark = pytest.mark.django_db


class VoteError(HTMLParser):
    """The text of the page's element with id ``vote-error``."""

    def __init__(self, html: str):
        super().__init__()
        self.depth, self.text = 0, ""
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        if self.depth or dict(attrs).get("id") == "vote-error":
            self.depth += 1

    def handle_endtag(self, tag):
        self.depth = max(0, self.depth - 1)

    def handle_data(self, data):
        if self.depth:
            self.text += data


def vote_error(response) -> str:
    return " ".join(VoteError(response.content.decode()).text.split())


def join_and_lease(client, study) -> Assignment:
    """Consent as a crowd participant does, open the voting page; the assignment it leased."""
    entry = reverse("collection:entry", args=[study.slug])
    client.get(entry, {"participant": "abc"})
    client.post(entry, {"consent": "yes", "participant": "abc"})
    client.get(reverse("collection:vote", args=[study.slug]))
    annotator = Annotator.objects.get(study=study, participant_id="abc")
    return Assignment.objects.get(annotator=annotator, status=Assignment.Status.ACTIVE)


@pytest.mark.parametrize(
    "assignment",
    ["9223372036854775808", str(2**70), "-9223372036854775809", "0", "-1", "1e400"],
)
def test_an_assignment_number_out_of_the_database_range_is_refused_with_400_and_nothing_written(
    client, assignment
):
    study = make_study(votes_per_annotator_per_ballot=3)
    held = join_and_lease(client, study)

    form = {"assignment": assignment, "choice": "left"}

    response = client.post(reverse("collection:vote", args=[study.slug]), form)

    assert response.status_code == 400
    assert vote_error(response) == (
        "The form did not name a comparison of yours (its number must be a whole number from 1 to "
        "9,223,372,036,854,775,807); open the voting page again and vote."
    )
    assert Vote.objects.count() == 0
    held.refresh_from_db()
    assert held.status == Assignment.Status.ACTIVE


def test_the_largest_assignment_number_is_looked_up_and_not_found(client):
    study = make_study(votes_per_annotator_per_ballot=3)
    join_and_lease(client, study)

    response = client.post(
        reverse("collection:vote", args=[study.slug]), {"assignment": str(2**63 - 1), "choice": "left"}
    )

    assert response.status_code == 404
    assert vote_error(response) == "Assignment 9223372036854775807 is not one of yours."
    assert Vote.objects.count() == 0


def test_a_choice_with_bytes_that_are_not_utf8_is_refused_with_400_naming_what_was_received(client):
    study = make_study(votes_per_annotator_per_ballot=3)
    held = join_and_lease(client, study)

    # "left" and the UTF-8 form of the lone surrogate U+D800, which no UTF-8 decoder accepts
    response = client.post(
        reverse("collection:vote", args=[study.slug]),
        f"assignment={held.pk}&choice=left%ED%A0%80",
        content_type="application/x-www-form-urlencoded",
    )

    assert response.status_code == 400
    assert vote_error(response) == "Choice must be one of left, right, tie, got 'left\ufffd\ufffd\ufffd'."
    assert Vote.objects.count() == 0


def test_an_error_page_that_echoes_a_lone_surrogate_is_sent_with_it_escaped():
    study = make_study(start=False)
    request = RequestFactory().post("/")

    response = _vote_error_page(request, study, ServiceError("choice must be left or right, got left\ud800"))

    assert response.status_code == 400
    assert vote_error(response) == "Choice must be left or right, got left\\ud800."

"""On the embedded default (eager Celery) the close asked for by the vote that completes a ballot runs
after that vote's response has been sent, not inside its request; outside a request, at commit."""

import io
import logging
import re
import sys
from http.cookies import SimpleCookie
from urllib.parse import urlencode

import pytest
from django.core.handlers.wsgi import WSGIHandler
from django.http import HttpResponse
from django.test import Client, RequestFactory
from django.urls import reverse

from collection.models import Annotator, Ballot, Vote
from common.tasks import AfterResponseMiddleware, run_after_response
from tests.factories import annotators, make_study, vote_until

pytestmark = pytest.mark.django_db  # a response's close() sends request_finished, which tidies connections


def test_outside_a_request_the_work_runs_at_once():
    done = []
    run_after_response(lambda: done.append("now"))
    assert done == ["now"]


def _view_asking_for(*works):
    """The middleware around a view that asks for ``works`` to run after its response."""

    def view(request):
        for work in works:
            run_after_response(work)
        return HttpResponse("answered")

    return AfterResponseMiddleware(view)


def test_in_a_request_the_work_waits_for_the_response_and_runs_in_order():
    done = []
    handler = _view_asking_for(
        lambda: done.append("first"),
        lambda: run_after_response(lambda: done.append("asked for by the first")),
        lambda: done.append("second"),
    )
    response = handler(RequestFactory().get("/"))
    assert (response.content, done) == (b"answered", [])
    response.close()  # the server has sent the body
    assert done == ["first", "asked for by the first", "second"]


def test_work_that_fails_is_logged_and_the_rest_still_runs(caplog):
    done = []
    response = _view_asking_for(lambda: 1 / 0, lambda: done.append("ran"))(RequestFactory().get("/"))
    with caplog.at_level(logging.ERROR, logger="common.tasks"):
        response.close()
    assert done == ["ran"]
    assert [record.getMessage() for record in caplog.records] == ["work after the response failed"]


def test_after_a_response_nobody_closed_work_runs_at_once_again():
    done = []
    _view_asking_for(lambda: done.append("of the unclosed response"))(RequestFactory().get("/"))
    run_after_response(lambda: done.append("outside any view"))
    assert done == ["outside any view"]


# --- the close of a ballot, through a WSGI server's steps -----------------------------------------


def _wsgi_post(path: str, data: dict, cookies: SimpleCookie):
    """POST ``data`` to ``path`` as a WSGI server does; returns (status, headers, response), the
    response's body produced but not yet closed (a server closes it once the body is sent)."""
    body = urlencode(data).encode()
    environ = {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": path,
        "QUERY_STRING": "",
        "SERVER_NAME": "testserver",
        "SERVER_PORT": "80",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "CONTENT_TYPE": "application/x-www-form-urlencoded",
        "CONTENT_LENGTH": str(len(body)),
        "HTTP_COOKIE": "; ".join(f"{name}={morsel.value}" for name, morsel in cookies.items()),
        "HTTP_X_CSRFTOKEN": cookies["csrftoken"].value,
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr,
        "wsgi.url_scheme": "http",
        "wsgi.version": (1, 0),
        "wsgi.multithread": True,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
    }
    started = {}

    def start_response(status, headers, exc_info=None):
        started.update(status=status, headers=dict(headers))

    response = WSGIHandler()(environ, start_response)
    b"".join(response)  # the body, as the server sends it
    return started["status"], started["headers"], response


@pytest.mark.django_db(transaction=True)
def test_the_vote_that_completes_a_ballot_is_answered_before_the_close_runs():
    study = make_study(ballot_count=2)  # 15 items: ballots of 30 and 16 comparisons
    first = study.ballots.get()
    crowd = annotators(study, 6, prefix="crowd")
    assert vote_until(study, voters=crowd, max_votes=first.comparison_count - 1) == 29

    client = Client()
    vote_url = reverse("collection:vote", args=[study.slug])
    entry_url = reverse("collection:entry", args=[study.slug])
    client.get(entry_url, {"participant": "last"})
    client.post(entry_url, {"consent": "yes", "participant": "last"})
    html = client.get(vote_url).content.decode()
    assignment = re.search(r'name="assignment" value="(\d+)"', html).group(1)

    status, headers, response = _wsgi_post(
        vote_url, {"assignment": assignment, "choice": "left"}, client.cookies
    )

    # The annotator has the answer (their vote stored, a redirect to the next comparison) while the
    # ballot is still open: its close has not run inside the request.
    assert (status, headers["Location"]) == ("302 Found", vote_url)
    last = Annotator.objects.get(study=study, participant_id="last")
    assert Vote.objects.filter(annotator=last).count() == 1
    first.refresh_from_db()
    assert (first.status, first.votes_recorded, study.ballots.count()) == (Ballot.Status.OPEN, 30, 1)

    response.close()  # the server has sent the body

    first.refresh_from_db()
    assert first.status == Ballot.Status.CLOSED and first.close_seconds > 0
    assert list(study.ballots.values_list("number", "status", "comparison_count")) == [
        (1, Ballot.Status.CLOSED, 30),
        (2, Ballot.Status.OPEN, 16),
    ]


@pytest.mark.django_db(transaction=True)
def test_through_the_test_client_the_next_ballot_is_open_when_the_last_vote_returns():
    study = make_study(ballot_count=2)
    crowd = annotators(study, 6, prefix="crowd")
    vote_until(study, voters=crowd, max_votes=29)
    client = Client()
    vote_url = reverse("collection:vote", args=[study.slug])
    entry_url = reverse("collection:entry", args=[study.slug])
    client.get(entry_url, {"participant": "last"})
    client.post(entry_url, {"consent": "yes", "participant": "last"})
    html = client.get(vote_url).content.decode()
    assignment = re.search(r'name="assignment" value="(\d+)"', html).group(1)

    client.post(vote_url, {"assignment": assignment, "choice": "right"})

    assert list(study.ballots.values_list("number", "status")) == [
        (1, Ballot.Status.CLOSED),
        (2, Ballot.Status.OPEN),
    ]

"""The annotator's identity in a signed cookie: no session row per request, forged or expired ignored."""

import pytest
from django.conf import settings
from django.core import signing
from django.db import connection
from django.test import Client, override_settings
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from collection.identity import (
    ANNOTATOR_COOKIE,
    ANNOTATOR_COOKIE_MAX_AGE,
    SESSION_ANNOTATORS,
    annotator_consent,
    annotator_for,
)
from collection.models import Annotator, Vote
from tests.factories import make_study

pytestmark = pytest.mark.django_db

SALT = "collection.identity.annotators"


def join(client: Client, study, participant: str) -> Annotator:
    entry = reverse("collection:entry", args=[study.slug])
    client.get(entry, {"participant": participant})
    client.post(entry, {"consent": "yes", "participant": participant})
    return Annotator.objects.get(study=study, participant_id=participant)


def next_of(client: Client, study):
    return client.get(f"/api/studies/{study.slug}/next/", HTTP_ACCEPT="application/json")


def vote(client: Client, assignment: int, choice: str = "left"):
    token = client.cookies["csrftoken"].value
    return client.post(
        "/api/votes/", {"assignment": assignment, "choice": choice}, content_type="application/json",
        HTTP_X_CSRFTOKEN=token,
    )  # fmt: skip


def session_queries(context: CaptureQueriesContext) -> list[str]:
    return [q["sql"] for q in context.captured_queries if "django_session" in q["sql"]]


def test_a_participant_votes_without_any_session_row_read_or_written():
    study = make_study()
    client = Client()
    annotator = join(client, study, "p-1")
    with CaptureQueriesContext(connection) as asked:
        assignment = next_of(client, study).json()["assignment"]
    with CaptureQueriesContext(connection) as voted:
        assert vote(client, assignment, "right").status_code == 201
    assert (session_queries(asked), session_queries(voted)) == ([], [])
    assert list(Vote.objects.values_list("annotator_id", "choice")) == [(annotator.pk, "right")]


def test_one_browser_in_two_studies_keeps_an_annotator_in_each():
    first, second = make_study(), make_study()
    client = Client()
    one = join(client, first, "p-1")
    other = join(client, second, "p-2")
    remembered = signing.loads(client.cookies[ANNOTATOR_COOKIE].value, salt=SALT)
    assert remembered == {str(first.pk): one.pk, str(second.pk): other.pk}
    assignment = next_of(client, first).json()["assignment"]
    assert vote(client, assignment).status_code == 201
    assert list(Vote.objects.values_list("annotator_id", flat=True)) == [one.pk]


def test_a_forged_cookie_is_ignored_and_never_a_500():
    study = make_study()
    victim = annotator_consent(annotator=annotator_for(study=study, participant_id="victim"))
    client = Client()
    join(client, study, "attacker")  # a CSRF cookie, and a real cookie of its own
    unsigned = signing.dumps({str(study.pk): victim.pk}, salt="another purpose")
    for forged in (unsigned, "garbage", client.cookies[ANNOTATOR_COOKIE].value[:-3] + "abc"):
        client.cookies[ANNOTATOR_COOKIE] = forged
        response = next_of(client, study)
        assert response.status_code == 403, forged
    assert victim.assignments.count() == 0


def test_an_expired_cookie_is_ignored(monkeypatch):
    study = make_study()
    client = Client()
    join(client, study, "p-1")
    signed_long_ago = client.cookies[ANNOTATOR_COOKIE].value
    real_time = signing.time.time
    monkeypatch.setattr(signing.time, "time", lambda: real_time() + ANNOTATOR_COOKIE_MAX_AGE + 60)
    client.cookies[ANNOTATOR_COOKIE] = signed_long_ago
    assert next_of(client, study).status_code == 403


def test_a_vote_with_the_cookie_but_without_the_csrf_token_is_refused():
    study = make_study()
    client = Client()
    join(client, study, "p-1")
    assignment = next_of(client, study).json()["assignment"]
    another_site = Client(enforce_csrf_checks=True)
    another_site.cookies = client.cookies  # the browser sends its cookies along, not the token
    response = another_site.post(
        "/api/votes/", {"assignment": assignment, "choice": "left"}, content_type="application/json"
    )
    assert response.status_code == 403
    assert Vote.objects.count() == 0


def test_a_browser_that_joined_before_the_cookie_is_found_through_its_session_then_gets_the_cookie():
    study = make_study()
    client = Client()
    session = client.session
    annotator = annotator_consent(annotator=annotator_for(study=study, session_key=session.session_key))
    session[SESSION_ANNOTATORS] = {str(study.pk): annotator.pk}
    session.save()
    assert next_of(client, study).status_code == 200
    assert signing.loads(client.cookies[ANNOTATOR_COOKIE].value, salt=SALT) == {str(study.pk): annotator.pk}
    assert settings.SESSION_COOKIE_NAME in client.cookies  # the session stays, for the anonymous path


def test_a_cookie_that_names_another_annotator_votes_on_nobody_elses_assignment():
    # Two browsers in one study, and a third in another study whose annotator has the same place in
    # its own cookie: none of them may vote on the first one's assignment, and nothing is written.
    study, elsewhere = make_study(), make_study()
    owner, stranger, outsider = Client(), Client(), Client()
    join(owner, study, "owner")
    join(stranger, study, "stranger")
    join(outsider, elsewhere, "outsider")
    assignment = next_of(owner, study).json()["assignment"]
    next_of(stranger, study)
    for client in (stranger, outsider):
        refused = vote(client, assignment, "right")
        assert (refused.status_code, refused.json()["detail"]) == (
            404,
            f"assignment {assignment} is not one of yours",
        )
    assert not Vote.objects.exists()
    assert study.ballots.get(number=1).votes_recorded == 0
    assert vote(owner, assignment, "left").status_code == 201
    assert list(Vote.objects.values_list("annotator__participant_id", "choice")) == [("owner", "left")]


def test_an_excluded_annotators_retry_of_a_recorded_vote_is_refused_too():
    # The exclusion sets the open ballot's votes aside: a retry must not find (or answer with) them.
    from collection.exclusion import annotator_exclude

    study = make_study()
    client = Client()
    annotator = join(client, study, "retrying")
    assignment = next_of(client, study).json()["assignment"]
    assert vote(client, assignment, "left").status_code == 201
    annotator_exclude(annotator=annotator, reason="speeding")
    retried = vote(client, assignment, "left")
    assert retried.status_code == 403 and "excluded from this study" in retried.json()["detail"]
    assert not Vote.objects.exists()


def test_a_browsers_judgement_needs_no_statement_to_learn_who_votes():
    # The vote's first statement takes the assignment among the cookie's annotators: nothing is read
    # before it to learn who votes; the vote and the lease are the eight statements of one transaction.
    study = make_study(votes_per_annotator_per_ballot=None)
    client = Client()
    join(client, study, "cookie-voter")
    assignment = next_of(client, study).json()["assignment"]
    # The first vote of a process reads the study's settings once (collection.study_cache).
    assignment = vote(client, assignment, "right").json()["next"]["assignment"]
    for choice in ("left", "right", "left"):
        with CaptureQueriesContext(connection) as queries:
            response = vote(client, assignment, choice)
        assert response.status_code == 201
        sent = [q["sql"].split()[:3] for q in queries]
        assert sent[0][0] == "SAVEPOINT" and sent[-1][0] == "RELEASE"  # one transaction (a test's savepoint)
        assert sent[1] == ["UPDATE", "collection_assignment", "SET"] and len(sent) == 10
        assignment = response.json()["next"]["assignment"]
    assert Vote.objects.filter(annotator__participant_id="cookie-voter").count() == 4


def test_the_annotators_endpoints_answer_json_whatever_the_accept_header_asks():
    study = make_study()
    client = Client()
    join(client, study, "html-accepting")
    asked = client.get(f"/api/studies/{study.slug}/next/", HTTP_ACCEPT="text/html")
    assert (asked.status_code, asked["Content-Type"]) == (200, "application/json")
    token = client.cookies["csrftoken"].value
    voted = client.post(
        "/api/votes/", {"assignment": asked.json()["assignment"], "choice": "left"},
        content_type="application/json", HTTP_X_CSRFTOKEN=token, HTTP_ACCEPT="text/html;q=1, */*;q=0",
    )  # fmt: skip
    assert (voted.status_code, voted["Content-Type"], voted.json()["choice"]) == (
        201,
        "application/json",
        "left",
    )
    refused = client.post(
        "/api/votes/", {"assignment": 987654, "choice": "left"}, content_type="application/json",
        HTTP_X_CSRFTOKEN=token, HTTP_ACCEPT="text/html",
    )  # fmt: skip
    assert (refused.status_code, refused["Content-Type"]) == (404, "application/json")


def test_get_next_reads_the_cookies_annotator_and_its_study_in_one_query():
    study = make_study()
    client = Client()
    annotator = join(client, study, "p-1")
    with CaptureQueriesContext(connection) as asked:
        response = next_of(client, study)
    assert response.status_code == 200
    reads = [q["sql"] for q in asked.captured_queries if 'FROM "collection_annotator"' in q["sql"]]
    assert len(reads) == 1 and 'JOIN "collection_study"' in reads[0]
    assert not any(q["sql"].lstrip().startswith('SELECT "collection_study"') for q in asked.captured_queries)
    held = Annotator.objects.get(pk=annotator.pk).assignments.get(status="active")
    assert response.json()["assignment"] == held.pk


def test_a_signed_cookie_that_names_an_annotator_for_another_study_is_no_way_into_theirs():
    # Only the server signs the cookie, and it writes each study's own annotator: a pair that says
    # otherwise (study B → an annotator of study A) opens neither study.
    study, other = make_study(), make_study()
    annotator = annotator_consent(annotator=annotator_for(study=study, participant_id="p-1"))
    client = Client()
    client.cookies[ANNOTATOR_COOKIE] = signing.dumps({str(other.pk): annotator.pk}, salt=SALT, compress=True)
    response = next_of(client, study)
    assert response.status_code == 403
    assert "you are not an annotator of this study yet" in response.json()["detail"]
    assert annotator.assignments.count() == 0


def test_get_next_with_the_cookie_still_says_what_is_missing():
    study = make_study()
    client = Client()
    join(client, study, "p-1")
    missing = client.get("/api/studies/no-such-study/next/", HTTP_ACCEPT="application/json")
    assert (missing.status_code, missing.json()["detail"]) == (
        404,
        "there is no study 'no-such-study'; check the link you were given",
    )
    # Through the study link, not yet past the consent form: the cookie names an annotator who has
    # not agreed to take part, and gets no comparison.
    newcomer = Client()
    newcomer.get(reverse("collection:entry", args=[study.slug]), {"participant": "p-2"})
    assert ANNOTATOR_COOKIE in newcomer.cookies
    refused = next_of(newcomer, study)
    assert refused.status_code == 403
    assert "you have not agreed to take part yet" in refused.json()["detail"]
    assert not Annotator.objects.filter(participant_id="p-2", assignments__isnull=False).exists()


def test_a_cookies_signature_is_checked_once_per_process_and_its_age_on_every_request(monkeypatch):
    from collection import identity

    study = make_study()
    client = Client()
    join(client, study, "p-1")
    checked = []
    real_loads = signing.loads
    monkeypatch.setattr(
        identity.signing, "loads", lambda *a, **k: checked.append(a[0]) or real_loads(*a, **k)
    )
    identity._verified_cookie.cache_clear()
    for _ in range(3):
        assert next_of(client, study).status_code == 200
    assert len(checked) == 1  # the next two requests sent the same cookie
    real_time = signing.time.time
    monkeypatch.setattr(signing.time, "time", lambda: real_time() + ANNOTATOR_COOKIE_MAX_AGE + 60)
    assert next_of(client, study).status_code == 403  # the kept cookie has expired since
    assert len(checked) == 1


def test_a_cookie_checked_under_one_secret_key_is_refused_under_another():
    study = make_study()
    client = Client()
    join(client, study, "p-1")
    assert next_of(client, study).status_code == 200  # checked, and kept
    with override_settings(SECRET_KEY="another-" + "k" * 50):
        assert next_of(client, study).status_code == 403
    with override_settings(SECRET_KEY="another-" + "k" * 50, SECRET_KEY_FALLBACKS=[settings.SECRET_KEY]):
        assert next_of(client, study).status_code == 200  # a rotated key is still accepted

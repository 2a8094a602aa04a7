"""Defences against scripts: rate limits on joining, asking and voting, and signed participant links."""

import pytest
from django.core.management import call_command
from django.test import Client

from collection.models import Annotator, Vote
from collection.signing import participant_signature
from tests.collection.test_api import next_of, session_annotator, vote
from tests.factories import make_study

pytestmark = pytest.mark.django_db


@pytest.fixture
def rates(settings):
    """Set some rate limits (the others stay as configured) for one test."""

    def set_rates(**scopes):
        framework = dict(settings.REST_FRAMEWORK)
        framework["DEFAULT_THROTTLE_RATES"] = {
            **framework["DEFAULT_THROTTLE_RATES"],
            **{name.replace("_", "."): rate for name, rate in scopes.items()},
        }
        settings.REST_FRAMEWORK = framework

    return set_rates


def vote_next(client, study, choice):
    assignment = next_of(client, study).json()["assignment"]
    return vote(client, assignment, choice)


def test_an_annotator_over_the_vote_limit_gets_429_with_retry_after_and_nothing_is_stored(rates):
    rates(vote_participant="3/min")
    study = make_study()
    client, annotator = session_annotator(study)

    answers = [vote_next(client, study, choice).status_code for choice in ("left", "right", "left")]
    refused = vote_next(client, study, "right")

    assert answers == [201, 201, 201]
    assert refused.status_code == 429
    assert 1 <= int(refused["Retry-After"]) <= 60
    assert refused.json()["detail"].startswith("Request was throttled.")
    assert Vote.objects.filter(annotator=annotator).count() == 3


def test_the_limit_is_per_annotator_another_annotator_still_votes(rates):
    rates(vote_participant="2/min")
    study = make_study()
    first, _ = session_annotator(study)
    second, _ = session_annotator(study)

    first_answers = [vote_next(first, study, choice).status_code for choice in ("left", "right", "left")]
    second_answer = vote_next(second, study, "right").status_code

    assert (first_answers, second_answer) == ([201, 201, 429], 201)


def test_many_sessions_from_one_address_hit_the_address_limit(rates):
    rates(next_address="4/min")
    study = make_study()
    clients = [session_annotator(study)[0] for _ in range(5)]

    answers = [next_of(client, study).status_code for client in clients]

    assert answers == [200, 200, 200, 200, 429]


def test_the_address_is_remote_addr_and_a_forged_forwarded_for_does_not_escape_the_limit(rates):
    rates(next_address="2/min")
    study = make_study()
    clients = [session_annotator(study)[0] for _ in range(3)]

    answers = [
        client.get(f"/api/studies/{study.slug}/next/", headers={"X-Forwarded-For": f"10.0.0.{i}"}).status_code
        for i, client in enumerate(clients)
    ]

    assert answers == [200, 200, 429]


def test_a_script_minting_participant_ids_is_stopped_at_the_join_limit(rates):
    rates(join_address="3/hour")
    study = make_study()
    client = Client()

    answers = [
        client.post(f"/s/{study.slug}/", {"participant": f"bot-{i}", "consent": "yes"}).status_code
        for i in range(5)
    ]

    assert answers == [302, 302, 302, 429, 429]
    assert Annotator.objects.filter(study=study, consented_at__isnull=False).count() == 3


def test_the_voting_page_over_its_limit_says_to_slow_down_and_continues_by_itself(rates):
    rates(next_participant="2/min")
    study = make_study()
    client, _ = session_annotator(study)

    pages = [client.get(f"/s/{study.slug}/vote/") for _ in range(3)]

    assert [page.status_code for page in pages] == [200, 200, 429]
    assert "Please slow down" in pages[2].content.decode()
    assert pages[2]["Retry-After"].isdigit()


def test_the_voting_page_and_the_api_share_one_count(rates):
    rates(next_participant="3/min", next_address=None)
    study = make_study()
    client, _ = session_annotator(study)

    answers = [next_of(client, study).status_code, client.get(f"/s/{study.slug}/vote/").status_code]
    answers += [next_of(client, study).status_code, client.get(f"/s/{study.slug}/vote/").status_code]
    answers.append(next_of(client, study).status_code)

    assert answers == [200, 200, 200, 429, 429]


def test_limits_set_to_off_never_refuse(rates):
    rates(vote_participant=None, vote_address=None)
    study = make_study()
    client, _ = session_annotator(study)

    answers = {vote_next(client, study, choice).status_code for choice in ["left", "right"] * 10}

    assert answers == {201}


def test_rate_limits_let_requests_through_when_the_cache_does_not_answer(rates, settings):
    rates(vote_participant="1/min")
    settings.CACHES = {
        "default": {
            "BACKEND": "django_redis.cache.RedisCache",  # as deployed (config/settings.py)
            "LOCATION": "redis://127.0.0.1:1/0",  # nothing listens on port 1
            "OPTIONS": {"SOCKET_CONNECT_TIMEOUT": 0.2},
        }
    }
    study = make_study()
    client, _ = session_annotator(study)

    answers = [vote_next(client, study, choice).status_code for choice in ("left", "right", "left")]

    assert answers == [201, 201, 201]


# --- signed participant links ------------------------------------------------------------------------


def signed_study():
    study = make_study(require_signed_links=True)
    return study


def test_a_signed_link_lets_the_participant_in_and_consent_records_them():
    study = signed_study()
    signature = participant_signature(study.participant_secret, "P-17")
    client = Client()

    page = client.get(f"/s/{study.slug}/", {"participant": "P-17", "sig": signature})
    consent = client.post(f"/s/{study.slug}/", {"participant": "P-17", "sig": signature, "consent": "yes"})

    assert page.status_code == 200
    assert f'name="sig" value="{signature}"' in page.content.decode()
    assert consent.status_code == 302
    assert Annotator.objects.get(study=study, participant_id="P-17").consented_at is not None
    assert next_of(client, study).status_code == 200


@pytest.mark.parametrize(
    "query",
    [
        {"participant": "P-17"},  # no signature
        {"participant": "P-17", "sig": "0" * 64},  # a wrong one
        {"participant": "P-18", "sig": "SIGNATURE_OF_P17"},  # another participant's
        {},  # no participant at all
    ],
)
def test_an_unsigned_or_forged_link_is_refused_and_creates_no_annotator(query):
    study = signed_study()
    query = {
        key: participant_signature(study.participant_secret, "P-17") if value == "SIGNATURE_OF_P17" else value
        for key, value in query.items()
    }
    client = Client()

    page = client.get(f"/s/{study.slug}/", query)
    consent = client.post(f"/s/{study.slug}/", {**query, "consent": "yes"})

    assert (page.status_code, consent.status_code) == (403, 403)
    assert 'id="link-error"' in page.content.decode()
    assert "personal link" in page.content.decode()
    assert not Annotator.objects.filter(study=study).exists()
    assert next_of(client, study).status_code == 403


def test_a_study_without_the_requirement_accepts_unsigned_ids():
    study = make_study()
    client = Client()

    consent = client.post(f"/s/{study.slug}/", {"participant": "P-1", "consent": "yes"})

    assert consent.status_code == 302
    assert Annotator.objects.filter(study=study, participant_id="P-1").exists()


def test_the_command_prints_a_working_signed_link_per_participant(tmp_path, capsys):
    study = signed_study()
    ids = tmp_path / "ids.txt"
    ids.write_text("A1\n\nB 2\n")

    call_command("participant_links", "--study", study.slug, str(ids), "--base-url", "http://testserver")
    lines = capsys.readouterr().out.splitlines()

    assert lines[0] == "participant_id,link"
    assert [line.split(",")[0] for line in lines[1:]] == ["A1", "B 2"]
    link = lines[2].split(",", 1)[1]
    assert link.startswith(f"http://testserver/s/{study.slug}/?participant=B+2&sig=")
    page = Client().get(link.removeprefix("http://testserver"))
    assert page.status_code == 200
    assert 'name="participant" value="B 2"' in page.content.decode()


@pytest.mark.parametrize("method", ["get", "post"])
def test_a_participant_id_longer_than_any_crowd_platforms_is_refused_with_nothing_created(method):
    study = make_study()
    data = {"participant": "p" * 129, "consent": "yes"}

    response = getattr(Client(), method)(f"/s/{study.slug}/", data)

    assert response.status_code == 400
    assert "its participant id is 129 characters long" in response.content.decode()
    assert not Annotator.objects.filter(study=study).exists()


def test_after_the_cache_hangs_once_the_limits_stop_asking_it_for_a_while(rates, settings):
    import socket
    import threading
    import time

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(50)
    accepted = []
    threading.Thread(
        target=lambda: [accepted.append(listener.accept()) for _ in range(50)], daemon=True
    ).start()
    rates(vote_participant="1/min")
    settings.CACHES = {
        "default": {
            "BACKEND": "django_redis.cache.RedisCache",  # as deployed (config/settings.py)
            "LOCATION": f"redis://127.0.0.1:{listener.getsockname()[1]}/0",  # accepts, never answers
            "OPTIONS": {"SOCKET_CONNECT_TIMEOUT": 0.3, "SOCKET_TIMEOUT": 0.3},
        }
    }
    study = make_study()
    client, _ = session_annotator(study)

    started = time.perf_counter()
    answers = [vote_next(client, study, choice).status_code for choice in ("left", "right", "left", "right")]
    elapsed = time.perf_counter() - started

    assert answers == [201, 201, 201, 201]
    assert elapsed < 2.0  # one timeout (0.3 s), then the cache is left alone; without that, 8 × 0.3 s
    listener.close()


@pytest.mark.parametrize("participant", ["a\x00b", "tab\there", "line\nbreak"])
def test_a_participant_id_with_control_characters_is_refused(participant):
    study = make_study()

    response = Client().get(f"/s/{study.slug}/", {"participant": participant})

    assert response.status_code == 400
    assert "control characters" in response.content.decode()
    assert not Annotator.objects.filter(study=study).exists()


@pytest.mark.parametrize("signature", ["é" * 64, "\x00", "zz", "0" * 1000])
def test_a_signature_of_any_characters_is_refused_not_an_error(signature):
    study = signed_study()

    response = Client().get(f"/s/{study.slug}/", {"participant": "P-1", "sig": signature})

    assert response.status_code == 403


def test_participants_of_one_address_each_have_their_own_limit_from_their_signed_cookie(rates):
    rates(next_participant="2/min", next_address=None)
    study = make_study()
    browsers = []
    for participant in ["p-1", "p-2"]:
        client = Client()
        client.get(f"/s/{study.slug}/", {"participant": participant})
        client.post(f"/s/{study.slug}/", {"consent": "yes", "participant": participant})
        browsers.append(client)

    answers = [[next_of(client, study).status_code for _ in range(3)] for client in browsers]

    assert answers == [[200, 200, 429], [200, 200, 429]]

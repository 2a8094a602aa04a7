"""The card page of a large card not computed yet: 202 with the computation's progress, then the card.

As the API does, a card of more than CARD_SYNC_ITEMS items is computed in the background. The page
answers 202 with a <progress> of the steps done and its text, asks again by itself
(static/metrics/card_progress.js, or a <noscript> meta refresh), and shows the card once it is stored.
The .md and .json downloads answer 202 with Retry-After meanwhile. The study: 28 items (8 tokens),
counted as large by lowering CARD_SYNC_ITEMS to 10.
"""

from __future__ import annotations

import json
import re
import time

import pytest
from django.core.cache import cache
from django.urls import reverse

from metrics import instrument
from metrics.card_render import card_markdown
from metrics.instrument import CARD_PROGRESS_KEY, card_json_data, instrument_card
from metrics.models import StudyFigure

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def large_card_not_computed(study, monkeypatch):
    """The study's 28 items count as large, its card is not stored and nothing is asked for yet."""
    monkeypatch.setattr(instrument, "CARD_SYNC_ITEMS", 10)
    StudyFigure.objects.filter(study=study, kind="card").delete()
    cache.clear()
    yield
    cache.clear()


def page_url(study) -> str:
    return reverse("metrics:card", args=[study.slug])


def progress_bar(html: str) -> str:
    found = re.findall(r"<progress[^>]*>[^<]*</progress>", html)
    assert len(found) == 1, found
    return found[0]


def test_the_page_shows_the_progress_then_the_card(client, study, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):  # as the request's commit would
        first = client.get(page_url(study))

    assert first.status_code == 202
    assert first["Retry-After"] == "2"
    assert "no-store" in first["Cache-Control"]
    html = first.content.decode()
    assert progress_bar(html) == (
        '<progress id="card-progress" aria-labelledby="card-progress-text" max="8" value="0">'
        "step 1 of 8</progress>"
    )
    assert (
        '<p class="progress-row" id="card-progress-text" role="status">'
        "Computing the instrument card: step 1 of 8</p>"
    ) in html
    assert "A card of 28 items takes about 2 seconds to compute." in html
    # It asks again by itself: with the script (no inline script: the CSP), else a meta refresh.
    assert '<script defer src="/static/metrics/card_progress.js"></script>' in html
    assert '<noscript><meta http-equiv="refresh" content="2"></noscript>' in html
    assert 'data-recheck-after="2"' in html
    assert "<svg" not in html and "Download as Markdown" not in html

    # Eager Celery (the embedded default) computed the card after the response: the page shows it.
    assert StudyFigure.objects.filter(study=study, kind="card").count() == 1
    second = client.get(page_url(study))
    assert second.status_code == 200
    html = second.content.decode()
    assert "<progress" not in html and "card_progress.js" not in html and "refresh" not in html
    assert "Precision (Welty §5.6)" in html
    assert html.count("<svg") == 2


def test_the_page_says_the_step_the_computation_has_reached(
    client, study, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks() as asked:  # held back: the computation has not run
        client.get(page_url(study))
        # The computation in a worker has reported two of its eight steps done (as _compute_card does).
        cache.set(CARD_PROGRESS_KEY.format(study.pk), 2)
        response = client.get(page_url(study))

    assert len(asked) == 1  # one computation asked for, however often the page asks again
    assert response.status_code == 202
    html = response.content.decode()
    assert 'max="8" value="2">step 3 of 8</progress>' in progress_bar(html)
    assert "Computing the instrument card: step 3 of 8</p>" in html


def test_without_a_progress_report_the_bar_has_no_value(client, study, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks():
        client.get(page_url(study))
        cache.delete(CARD_PROGRESS_KEY.format(study.pk))  # e.g. the cache was emptied meanwhile
        response = client.get(page_url(study))

    assert response.status_code == 202
    html = response.content.decode()
    assert (
        progress_bar(html)
        == '<progress id="card-progress" aria-labelledby="card-progress-text" max="8"></progress>'
    )
    assert 'role="status">Computing the instrument card</p>' in html


def test_the_downloads_answer_202_until_the_card_is_stored(client, study, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        markdown = client.get(reverse("metrics:card-markdown", args=[study.slug]))
        data = client.get(reverse("metrics:card-json", args=[study.slug]))

    message = (
        f"The instrument card of study {study.slug!r} is being computed (28 items): ask again in 2 seconds. "
        f"Its page, /models/studies/{study.slug}/card/, shows how far the computation has gone.\n"
    )
    for response in (markdown, data):
        assert (response.status_code, response["Retry-After"]) == (202, "2")
        assert response["Content-Type"] == "text/plain; charset=utf-8"
        assert not response.has_header("Content-Disposition")
        assert response.content.decode() == message

    # The first ask computed the card (after its response); both downloads now serve it.
    card = instrument_card(study=study)
    labels = {
        index: f"{a} – {b}"
        for index, a, b in study.items.values_list("index", "token_a__text", "token_b__text")
    }
    markdown = client.get(reverse("metrics:card-markdown", args=[study.slug]))
    assert markdown.status_code == 200
    assert markdown.content.decode() == card_markdown(card, item_labels=labels)
    data = client.get(reverse("metrics:card-json", args=[study.slug]))
    assert data.status_code == 200
    assert json.loads(data.content) == card_json_data(card)


def test_a_computation_running_past_its_estimate_is_not_asked_for_again(
    client, study, monkeypatch, django_capture_on_commit_callbacks
):
    monkeypatch.setattr(instrument, "card_wait_seconds", lambda item_count: 1)  # the ask lasts 1 s
    with django_capture_on_commit_callbacks() as asked:
        client.get(page_url(study))
    assert len(asked) == 1
    during = []
    precision_summary = instrument.precision_summary

    def slow(replicates):  # the third step takes longer than the whole card was estimated to
        time.sleep(1.2)
        with django_capture_on_commit_callbacks() as again:
            response = client.get(page_url(study))
        during.append((response.status_code, len(again), progress_bar(response.content.decode())))
        return precision_summary(replicates)

    monkeypatch.setattr(instrument, "precision_summary", slow)
    instrument_card(study=study)  # the worker's task

    assert during == [
        (
            202,
            0,
            '<progress id="card-progress" aria-labelledby="card-progress-text" max="8" '
            'value="2">step 3 of 8</progress>',
        )
    ]
    assert client.get(page_url(study)).status_code == 200


def test_a_computation_lost_on_its_way_is_asked_for_again_after_its_estimate(
    client, study, monkeypatch, django_capture_on_commit_callbacks
):
    monkeypatch.setattr(instrument, "card_wait_seconds", lambda item_count: 1)
    with django_capture_on_commit_callbacks() as asked:  # never run: the worker lost it
        client.get(page_url(study))
        cache.set(CARD_PROGRESS_KEY.format(study.pk), 4)  # a figure of an earlier computation
        client.get(page_url(study))
    assert len(asked) == 1
    time.sleep(1.2)
    with django_capture_on_commit_callbacks() as asked_again:
        response = client.get(page_url(study))

    assert len(asked_again) == 1
    assert 'max="8" value="0">step 1 of 8</progress>' in progress_bar(response.content.decode())

"""The instrument card of a study: a public page, and downloads as Markdown and JSON.

/models/studies/<slug>/card/ (HTML with two SVG plots), …/card.md and …/card.json. The card is
computed by ``metrics.instrument.instrument_card`` (cached until the study changes; about 3 s per 1000
items when it is not). As the API does (``instrument_card_or_request``), a card of at most
``CARD_SYNC_ITEMS`` items is computed in the request and a larger one in the background: meanwhile the
page answers 202 with the computation's progress, which ``static/metrics/card_progress.js`` follows
until it puts the card in place, and the downloads answer 202 with Retry-After. A draft has no card
yet: the page says so and the downloads answer 409.
"""

from __future__ import annotations

import json

from django.http import HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils.cache import add_never_cache_headers

from collection.models import Study
from metrics import card_render
from metrics.instrument import (
    CARD_STEPS,
    DRAFT_MESSAGE,
    card_json_data,
    card_steps_done,
    card_wait_seconds,
    instrument_card_or_request,
)

# How often the page being computed asks again (its script, or its <noscript> meta refresh).
PAGE_RECHECK_SECONDS = 2
DOWNLOAD_COMPUTING = (
    "The instrument card of study {slug!r} is being computed ({items:,} items): ask again in {wait} "
    "seconds. Its page, {page}, shows how far the computation has gone."
)


def card_page(request, slug: str):
    """The card as a datasheet page, with the precision and resolution plots; 202 with the progress of
    its computation while a large card is computed in the background."""
    study = get_object_or_404(Study, slug=slug)
    if study.is_draft:
        return render(request, "metrics/card.html", {"study": study, "draft": True})
    card = instrument_card_or_request(study=study)
    if card is None:
        return _computing_page(request, study)
    document = card_render.card_page_document(card, item_labels=_item_labels(study))
    return render(request, "metrics/card.html", {"study": study, "draft": False, "document": document})


def card_markdown(request, slug: str):
    """The card as a Markdown file; 202 with Retry-After while it is computed in the background."""
    study = get_object_or_404(Study, slug=slug)
    if study.is_draft:
        return _draft_response(study)
    card = instrument_card_or_request(study=study)
    if card is None:
        return _download_computing(study)
    text = card_render.card_markdown(card, item_labels=_item_labels(study))
    return _download(text, "text/markdown; charset=utf-8", f"{study.slug}-instrument-card.md")


def card_json(request, slug: str):
    """The card dict as a JSON file: numpy values made plain, non-finite numbers null; 202 with
    Retry-After while it is computed in the background."""
    study = get_object_or_404(Study, slug=slug)
    if study.is_draft:
        return _draft_response(study)
    card = instrument_card_or_request(study=study)
    if card is None:
        return _download_computing(study)
    text = json.dumps(card_json_data(card), ensure_ascii=False, allow_nan=False, indent=1)
    return _download(text + "\n", "application/json", f"{study.slug}-instrument-card.json")


def _computing_page(request, study: Study) -> HttpResponse:
    """202: the page of a card being computed, with the steps done of ``CARD_STEPS`` (none known when
    the cache does not answer: the bar then shows no value)."""
    items = study.items.count()
    done = card_steps_done(study=study)
    computing = {
        "items": items,
        "wait": card_wait_seconds(items),
        "steps": CARD_STEPS,
        "done": done,
        "step": None if done is None else min(done + 1, CARD_STEPS),
        "recheck": PAGE_RECHECK_SECONDS,
    }
    response = render(
        request, "metrics/card.html", {"study": study, "draft": False, "computing": computing}, status=202
    )
    response["Retry-After"] = str(PAGE_RECHECK_SECONDS)
    add_never_cache_headers(response)  # the same address soon shows the card
    return response


def _download_computing(study: Study) -> HttpResponse:
    items = study.items.count()
    wait = card_wait_seconds(items)
    page = reverse("metrics:card", args=[study.slug])
    response = HttpResponse(
        DOWNLOAD_COMPUTING.format(slug=study.slug, items=items, wait=wait, page=page) + "\n",
        status=202,
        content_type="text/plain; charset=utf-8",
    )
    response["Retry-After"] = str(wait)
    add_never_cache_headers(response)
    return response


def _item_labels(study: Study) -> dict[int, str] | None:
    """Tokens of each item, for a finished study only: a running study's current order stays unnamed,
    so that annotators reading the public card are not primed by it."""
    if study.status != Study.Status.FINISHED:
        return None
    return {
        index: f"{a} – {b}"
        for index, a, b in study.items.values_list("index", "token_a__text", "token_b__text")
    }


def _draft_response(study: Study) -> HttpResponse:
    return HttpResponse(
        DRAFT_MESSAGE.format(slug=study.slug) + "\n", status=409, content_type="text/plain; charset=utf-8"
    )


def _download(text: str, content_type: str, filename: str) -> HttpResponse:
    response = HttpResponse(text.encode("utf-8"), content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response

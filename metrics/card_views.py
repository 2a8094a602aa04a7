"""The instrument card of a study: a public page, and downloads as Markdown and JSON.

/models/studies/<slug>/card/ (HTML with two SVG plots), …/card.md and …/card.json. The card is
computed by ``metrics.instrument.instrument_card`` (cached until the study changes; about 3 s for 990
items when it is not). A draft has no card yet: the page says so and the downloads answer 409.
"""

from __future__ import annotations

import json

from django.http import HttpResponse
from django.shortcuts import get_object_or_404, render

from collection.models import Study
from metrics import card_render
from metrics.instrument import DRAFT_MESSAGE, card_json_data, instrument_card


def card_page(request, slug: str):
    """The card as a datasheet page, with the precision and resolution plots."""
    study = get_object_or_404(Study, slug=slug)
    if study.is_draft:
        return render(request, "metrics/card.html", {"study": study, "draft": True})
    card = instrument_card(study=study)
    document = card_render.card_page_document(card, item_labels=_item_labels(study))
    return render(request, "metrics/card.html", {"study": study, "draft": False, "document": document})


def card_markdown(request, slug: str):
    """The card as a Markdown file."""
    study = get_object_or_404(Study, slug=slug)
    if study.is_draft:
        return _draft_response(study)
    text = card_render.card_markdown(instrument_card(study=study), item_labels=_item_labels(study))
    return _download(text, "text/markdown; charset=utf-8", f"{study.slug}-instrument-card.md")


def card_json(request, slug: str):
    """The card dict as a JSON file: numpy values made plain, non-finite numbers null."""
    study = get_object_or_404(Study, slug=slug)
    if study.is_draft:
        return _draft_response(study)
    text = json.dumps(
        card_json_data(instrument_card(study=study)), ensure_ascii=False, allow_nan=False, indent=1
    )
    return _download(text + "\n", "application/json", f"{study.slug}-instrument-card.json")


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

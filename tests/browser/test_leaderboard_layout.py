"""The public leaderboard laid out for a phone and for a desktop, in real Chromium: the page never scrolls
sideways; the model, its score and its interval are on screen (on a desktop, every column); the plot's
text stays legible (10 CSS pixels or more) and its legend entries do not overlap. Its links (JSON, CSV,
SVG) are tested in tests/metrics/test_leaderboard_downloads.py.

Each size also leaves screenshots in pytest's temporary directory (``leaderboard-<size>.png``, the whole
page, and ``leaderboard-<size>-board.png``, the plot and the table) for a person to look at when the
layout changes.
"""

from __future__ import annotations

import numpy as np
import pytest
from playwright.sync_api import expect

from collection.models import Study
from metrics.services import submission_create
from tests.factories import annotators, make_study, vote_until

pytestmark = pytest.mark.django_db(transaction=True)

SIZES = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 360, "height": 740}}
MODELS = (
    ("MiniLM-L6 cosine similarity of mean-pooled embeddings", 0.05),
    ("GloVe 300d cosine", 0.4),
    ("Random baseline", 5.0),
)

# The page's geometry as the browser lays it out.
GEOMETRY_JS = """() => {
    const box = (element) => element.getBoundingClientRect();
    const row = document.querySelector("#leaderboard tbody tr");
    const wrap = document.querySelector("#leaderboard").parentElement;
    const texts = Array.from(document.querySelectorAll("#interval-plot svg text"));
    const legend = Array.from(document.querySelectorAll("#interval-plot svg .legend text")).map(box);
    const overlapping = legend.some((a, i) => legend.slice(i + 1).some(
        (b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom));
    return {
        viewport: window.innerWidth,
        pageWidth: document.documentElement.scrollWidth,
        model: box(row.querySelector(".model")).toJSON(),
        value: box(row.querySelector(".value")).toJSON(),
        interval: box(row.querySelector(".interval")).toJSON(),
        tableHidden: wrap.scrollWidth - wrap.clientWidth,
        smallestPlotText: Math.min(...texts.map((text) => box(text).height)),
        smallestPlotFont: Math.min(...texts.map((text) => {
            const scale = text.ownerSVGElement.getScreenCTM().a;
            return parseFloat(getComputedStyle(text).fontSize) * scale;
        })),
        legendEntries: legend.length,
        legendOverlaps: overlapping,
    };
}"""


@pytest.fixture
def board(django_user_model) -> Study:
    study = make_study(tokens=8, ballot_count=2, appearances=8, seed=4)
    vote_until(study, voters=annotators(study, 6))
    study.refresh_from_db()
    assert study.status == Study.Status.FINISHED
    owner = django_user_model.objects.create_user("ada-lovelace-research-group")
    rng = np.random.default_rng(3)
    truth = list(study.items.values_list("pk", "final_score"))
    for name, noise in MODELS:
        submission_create(
            study=study,
            owner=owner,
            model_name=name,
            data=[{"item": item, "score": score + rng.normal(0, noise)} for item, score in truth],
            source_format="json",
        )
    return study


@pytest.mark.parametrize("size", SIZES)
def test_the_leaderboard_fits_the_screen_with_its_score_and_legible_plot(
    new_context, live_server, board, size, tmp_path
):
    viewport = SIZES[size]
    context = new_context(viewport=viewport, is_mobile=size == "phone", has_touch=size == "phone")
    page = context.new_page()
    page.goto(f"{live_server.url}/models/studies/{board.slug}/leaderboard/")
    expect(page.locator("#leaderboard tbody tr")).to_have_count(len(MODELS))
    page.screenshot(path=tmp_path / f"leaderboard-{size}.png", full_page=True)
    page.locator("#interval-plot").evaluate("figure => figure.scrollIntoView()")
    page.screenshot(path=tmp_path / f"leaderboard-{size}-board.png")

    geometry = page.evaluate(GEOMETRY_JS)
    print(size, geometry)
    assert geometry["pageWidth"] <= geometry["viewport"]
    for cell in ("model", "value", "interval"):
        assert 0 <= geometry[cell]["left"] and geometry[cell]["right"] <= viewport["width"], (cell, geometry)
    if size == "desktop":  # every column shown; a phone scrolls the table for those after the interval
        assert geometry["tableHidden"] <= 0, geometry
    assert geometry["smallestPlotFont"] >= 10, geometry
    assert geometry["legendEntries"] == 3 and not geometry["legendOverlaps"], geometry

"""The instrument card's plots have a text alternative: the points each plot draws, as a table."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from metrics.card_render import precision_points, precision_svg, resolution_points, resolution_svg
from metrics.instrument import instrument_card
from tests.factories import annotators, make_study, vote_until

SVG = "{http://www.w3.org/2000/svg}"


def test_the_precision_points_are_each_items_score_and_sd_highest_score_first():
    card = {
        "precision": {
            "mean_sd": 0.03,
            "items": [{"score": 0.2, "sd": 0.05}, {"score": 0.9, "sd": 0.01}, {"score": None, "sd": None}],
        }
    }
    table = precision_points(card)
    assert table.header == ("score ȳ", "SD of ȳ (bootstrap)")
    assert table.rows == (("0.9000", "0.0100"), ("0.2000", "0.0500"), ("not measured", "not measured"))


def test_the_resolution_points_are_the_agreement_at_each_threshold():
    card = {"resolution": {"curve": {"threshold": [0.0, 0.1, 0.25], "agreement": [0.6, 0.8, 1.0]}}}
    assert resolution_points(card).rows == (("0", "60.0%"), ("0.100", "80.0%"), ("0.250", "100.0%"))


@pytest.mark.django_db
def test_the_card_page_lists_every_point_each_plot_draws(client):
    study = make_study(tokens=6, ballot_count=2, appearances=6, seed=2)
    vote_until(study, voters=annotators(study, 5))
    page = client.get(f"/models/studies/{study.slug}/card/").content.decode()
    card = instrument_card(study=study)
    for name, svg, points in (
        ("precision", precision_svg(card), precision_points(card)),
        ("resolution", resolution_svg(card), resolution_points(card)),
    ):
        series = ET.fromstring(svg).find(f"{SVG}g[@class='series']")
        assert len(series.findall(f"{SVG}circle")) == len(points.rows), name
        assert page.count(f'id="figure-{name}-points"') == 1
        assert f"<summary>The plotted points as a table ({len(points.rows)} rows)</summary>" in page
    assert len(precision_points(card).rows) == study.items.count() == 15

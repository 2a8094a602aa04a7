"""The leaderboard page links its figures as JSON and CSV (the API) and its plot as an SVG file, and
shows times as a <time> element with a readable text."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from html import unescape

import numpy as np
import pytest
from django.test import Client
from django.utils.dateparse import parse_datetime

from metrics.leaderboard import leaderboard_for
from metrics.models import Submission
from metrics.services import submission_create
from tests.factories import make_study

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture
def two_models(study, django_user_model):
    owner = django_user_model.objects.create_user("ada")
    rng = np.random.default_rng(5)
    truth = list(study.items.values_list("pk", "final_score"))
    for name, noise in (("close", 0.05), ("noisy", 2.0)):
        submission_create(
            study=study,
            owner=owner,
            model_name=name,
            data=[{"item": item, "score": score + rng.normal(0, noise)} for item, score in truth],
            source_format="json",
        )
    return owner


def href(html: str, element_id: str) -> str:
    match = re.search(rf'<a href="([^"]*)" id="{element_id}"', html)
    assert match is not None, f"no link #{element_id}"
    return unescape(match.group(1))


def test_the_page_links_the_json_csv_and_svg_of_the_board_it_shows(study, two_models):
    html = Client().get(f"/models/studies/{study.slug}/leaderboard/", {"metric": "rho", "n0": "5"}).content
    html = html.decode()
    query = "?metric=rho&n0=5"
    assert href(html, "json-link") == f"/api/studies/{study.slug}/leaderboard/{query}&format=json"
    assert href(html, "csv-link") == f"/api/studies/{study.slug}/leaderboard/{query}&format=csv"
    assert href(html, "svg-link") == f"/models/studies/{study.slug}/leaderboard.svg{query}"

    answer = Client().get(href(html, "json-link"))
    assert (answer.status_code, answer["Content-Type"]) == (200, "application/json")
    assert [row["model_name"] for row in answer.json()["rows"]] == ["close", "noisy"]


def test_the_svg_download_is_the_plot_of_the_asked_metric_with_one_row_per_model(study, two_models):
    answer = Client().get(f"/models/studies/{study.slug}/leaderboard.svg", {"metric": "tau", "n0": "2"})

    assert answer.status_code == 200
    assert answer["Content-Type"] == "image/svg+xml"
    assert answer["Content-Disposition"] == f'attachment; filename="{study.slug}-leaderboard-tau-n0-2.svg"'
    rows = ET.fromstring(answer.content).findall(f"{SVG}g[@class='interval-row']")
    board = leaderboard_for(study=study, metric="tau", weight_offset=2.0)
    assert [(row.get("data-label"), float(row.get("data-value"))) for row in rows] == [
        (entry["name"], entry["value"]) for entry in board["rows"]
    ]


def test_the_svg_download_refuses_what_it_cannot_draw(study, two_models):
    client = Client()
    bad = client.get(f"/models/studies/{study.slug}/leaderboard.svg", {"metric": "kappa"})
    assert bad.status_code == 400
    assert bad.content.decode() == "metric: kappa is not a metric: use one of rho_w, tau_w, rho, tau."
    running = make_study()
    assert client.get(f"/models/studies/{running.slug}/leaderboard.svg").status_code == 409
    Submission.objects.all().delete()
    assert client.get(f"/models/studies/{study.slug}/leaderboard.svg").status_code == 404


def test_submission_times_are_a_time_element_with_a_readable_text(study, two_models):
    html = Client().get(f"/models/studies/{study.slug}/leaderboard/").content.decode()
    times = re.findall(r'<td class="submitted"><time datetime="([^"]+)">([^<]+)</time></td>', html)
    created = list(Submission.objects.order_by("pk").values_list("created_at", flat=True))
    assert [parse_datetime(moment) for moment, _ in times] == created
    assert [text for _, text in times] == [moment.strftime("%-d %b %Y, %H:%M UTC") for moment in created]

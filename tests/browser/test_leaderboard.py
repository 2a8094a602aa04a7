"""A model owner in real headless Chromium: logs in, uploads a CSV of their model's scores, reads the
evaluation of the submission, and finds their row on the public leaderboard."""

import re

import numpy as np
import pytest
from playwright.sync_api import expect

from collection.models import Study
from metrics.models import Submission
from tests.factories import annotators, make_study, vote_until

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "correct horse battery staple"


@pytest.fixture
def finished_study() -> Study:
    study = make_study(tokens=8, ballot_count=2, appearances=8, seed=4)
    vote_until(study, voters=annotators(study, 6))
    study.refresh_from_db()
    assert study.status == Study.Status.FINISHED
    return study


def test_a_model_owner_goes_from_a_csv_of_scores_to_a_leaderboard_row(
    page, live_server, django_user_model, finished_study
):
    study = finished_study
    django_user_model.objects.create_user("ada", password=PASSWORD)
    rng = np.random.default_rng(3)
    scores = "item,score\n" + "".join(
        f"{item_id},{score + rng.normal(0, 0.05)!r}\n"
        for item_id, score in study.items.values_list("pk", "final_score")
    )

    page.goto(f"{live_server.url}/models/")
    page.get_by_role("row", name=re.compile(re.escape(study.name))).get_by_role(
        "link", name="Submit a model"
    ).click()
    expect(page).to_have_url(re.compile(r"/models/login/\?next="))
    page.get_by_label("Username").fill("ada")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("heading", level=1)).to_have_text(f"Submit a model: {study.name}")

    page.get_by_label("Model name").fill("MiniLM cosine")
    page.get_by_label("Description").fill("cosine similarity of the two tokens' embeddings")
    page.get_by_label("Scores (CSV)").set_input_files(
        files=[{"name": "scores.csv", "mimeType": "text/csv", "buffer": scores.encode()}]
    )
    page.get_by_role("button", name="Submit and evaluate").click()

    submission = Submission.objects.get()
    expect(page).to_have_url(f"{live_server.url}/models/submissions/{submission.pk}/")
    expect(page.locator("#submission-status")).to_have_text("done")
    expect(page.locator("#submission-coverage")).to_have_text("28 of 28 items (100%)")
    result = submission.evaluations.get(weight_offset=2.0).result
    expect(page.locator("#coefficient-rho_w .value")).to_have_text(f"{result['rho_w']['value']:.3f}")
    expect(page.locator("#coefficient-tau_w .value")).to_have_text(f"{result['tau_w']['value']:.3f}")
    expect(page.locator("#retrieval tbody tr")).to_have_count(11)
    expect(page.locator("svg.plot title")).to_have_text("11-point interpolated precision-recall")

    page.get_by_role("link", name=f"The leaderboard of {study.name}").click()
    expect(page.get_by_role("heading", level=1)).to_have_text(f"Leaderboard: {study.name}")
    row = page.locator("#leaderboard tbody tr")
    expect(row).to_have_count(1)
    expect(row.locator(".model")).to_have_text("MiniLM cosine")
    expect(row.locator(".owner")).to_have_text("ada")
    expect(row.locator(".rank")).to_have_text("1")
    expect(row.locator(".value")).to_have_text(f"{result['tau_w']['value']:.3f}")
    low, high = result["tau_w"]["interval"]
    expect(row.locator(".interval")).to_have_text(f"[{low:.3f}, {high:.3f}]")
    expect(row).to_have_class(re.compile(r"\bown-row\b"))

    page.get_by_role("link", name="ρ_w (weighted Spearman)").click()
    expect(page.locator("#board-heading")).to_have_text("Models by ρ_w (weighted Spearman), n0 = 2")
    expect(page.locator("#leaderboard tbody tr .value")).to_have_text(f"{result['rho_w']['value']:.3f}")

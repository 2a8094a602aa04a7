"""The model owners' pages without JavaScript: the list of studies, logging in, the upload form, a
submission with its evaluation, and the public leaderboard with the per-annotator view."""

from __future__ import annotations

import csv
import io
import math
import re
import xml.etree.ElementTree as ET
from datetime import UTC
from html import unescape
from html.parser import HTMLParser

import numpy as np
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from collection.models import Study
from metrics import services
from metrics.evaluation import chance_verdict
from metrics.leaderboard import annotator_view, leaderboard_for
from metrics.models import Submission
from tests.factories import make_study

SVG = "{http://www.w3.org/2000/svg}"

pytestmark = pytest.mark.django_db

PASSWORD = "correct horse battery staple"


class Page(HTMLParser):
    """The text of every element with an id, and every table with an id as rows of cell texts."""

    VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}

    def __init__(self, html: str):
        super().__init__()
        self.attributes: dict[str, dict] = {}
        self._text: dict[str, list[str]] = {}
        self._open: list[str | None] = []
        self.tables: dict[str, list[list[str]]] = {}
        self._table: str | None = None
        self._cell: list[str] | None = None
        self.links: list[tuple[str, str]] = []
        self._link: list[str] | None = None
        self._href = ""
        self.feed(html)
        self.text = {key: " ".join("".join(parts).split()) for key, parts in self._text.items()}

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        element_id = attrs.get("id")
        if element_id:
            self.attributes[element_id] = attrs
            self._text[element_id] = []
        if tag == "table" and element_id:
            self._table = element_id
            self.tables[element_id] = []
        elif tag == "tr" and self._table:
            self.tables[self._table].append([])
        elif tag in ("td", "th") and self._table:
            self._cell = []
        elif tag == "a":
            self._link, self._href = [], attrs.get("href", "")
        if tag not in self.VOID:
            self._open.append(element_id)

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.tables[self._table][-1].append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "table":
            self._table = None
        elif tag == "a" and self._link is not None:
            self.links.append((" ".join("".join(self._link).split()), self._href))
            self._link = None
        if tag not in self.VOID:
            self._open.pop()

    def handle_data(self, data):
        for element_id in self._open:
            if element_id:
                self._text[element_id].append(data)
        if self._cell is not None:
            self._cell.append(data)
        if self._link is not None:
            self._link.append(data)


def page(response) -> Page:
    return Page(response.content.decode())


def body_rows(table: list[list[str]]) -> list[list[str]]:
    return table[1:]


def number(value: float | None, places: int = 3) -> str:
    """A number as the template's floatformat shows it (which writes no minus sign before a zero)."""
    if value is None:
        return "—"
    text = f"{value:.{places}f}"
    return text.removeprefix("-") if float(text) == 0 else text


def logged_in(django_user_model, username: str = "owner") -> Client:
    user = django_user_model.objects.create_user(username, password=PASSWORD)
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def owner(django_user_model) -> Client:
    return logged_in(django_user_model)


def truth_csv(study: Study) -> str:
    """The study's own final scores: the true ranking."""
    return "item,score\n" + "".join(
        f"{pk},{score}\n" for pk, score in study.items.values_list("pk", "final_score")
    )


def random_csv(study: Study, seed: int = 0) -> str:
    rng = np.random.default_rng(seed)
    return "item,score\n" + "".join(
        f"{pk},{rng.random()}\n" for pk in study.items.values_list("pk", flat=True)
    )


def twin_csv(study: Study) -> str:
    rng = np.random.default_rng(1)
    return "item,score\n" + "".join(
        f"{pk},{score + rng.normal(0, 1e-6)!r}\n"
        for pk, score in study.items.values_list("pk", "final_score")
    )


def upload(client: Client, study: Study, model_name: str, text: str | bytes, description: str = ""):
    content = text.encode() if isinstance(text, str) else text
    return client.post(
        f"/models/studies/{study.slug}/submit/",
        {
            "model_name": model_name,
            "description": description,
            "file": SimpleUploadedFile("scores.csv", content, content_type="text/csv"),
        },
    )


def assert_no_inline_script_or_style(response) -> None:
    html = response.content.decode()
    assert re.findall(r"<script|<style|\sstyle=|\son[a-z]+=", html) == []


# --- the list of studies and logging in ----------------------------------------------------------


def test_the_models_page_lists_finished_studies_with_their_links_and_no_running_one(study, owner):
    running = make_study()

    response = Client().get("/models/")

    found = page(response)
    assert response.status_code == 200
    assert body_rows(found.tables["studies"]) == [
        [
            study.name,
            "28",
            "168 votes by 6 annotators",
            "0",
            study.finished_at.strftime("%-d %b %Y"),
            "Leaderboard Instrument card Submit a model",
        ]
    ]
    # The day is readable text; the <time> carries the exact instant (UTC, ISO 8601) for machines.
    instant = study.finished_at.astimezone(UTC).isoformat()
    assert (
        f'<td><time datetime="{instant}">{study.finished_at:%-d %b %Y}</time></td>'
        in response.content.decode()
    )
    assert ("Leaderboard", f"/models/studies/{study.slug}/leaderboard/") in found.links
    assert ("Instrument card", f"/models/studies/{study.slug}/card/") in found.links
    assert ("Submit a model", f"/models/studies/{study.slug}/submit/") in found.links
    assert running.name not in response.content.decode()
    assert "my-submissions" not in found.tables
    assert_no_inline_script_or_style(response)


def test_the_models_page_lists_the_owners_own_submissions_only(study, owner, django_user_model):
    upload(logged_in(django_user_model, "other"), study, "theirs", random_csv(study))
    upload(owner, study, "mine", truth_csv(study))
    mine = Submission.objects.get(model_name="mine")

    found = page(owner.get("/models/"))

    assert body_rows(found.tables["my-submissions"]) == [
        ["mine", study.name, "100% (28 items)", "done", mine.created_at.strftime("%-d %b %Y, %H:%M UTC")]
    ]
    assert ("mine", f"/models/submissions/{mine.pk}/") in found.links
    assert found.text["current-user"] == "owner"


def test_a_model_owner_without_staff_rights_logs_in_and_returns_to_the_page_they_wanted(
    study, django_user_model
):
    django_user_model.objects.create_user("owner", password=PASSWORD)
    client = Client()
    wanted = f"/models/studies/{study.slug}/submit/"

    login_page = client.get(f"/models/login/?next={wanted}")
    response = client.post("/models/login/", {"username": "owner", "password": PASSWORD, "next": wanted})

    assert login_page.status_code == 200
    assert (response.status_code, response["Location"]) == (302, wanted)
    assert client.get(wanted).status_code == 200


def test_a_wrong_password_shows_the_login_error(django_user_model):
    django_user_model.objects.create_user("owner", password=PASSWORD)

    response = Client().post("/models/login/", {"username": "owner", "password": "wrong"})

    assert response.status_code == 200
    assert page(response).text["login-error"] == (
        "Please enter a correct username and password. Note that both fields may be case-sensitive."
    )


def test_logging_out_needs_a_post_and_returns_to_the_models_page(owner):
    response = owner.post("/models/logout/")

    assert (response.status_code, response["Location"]) == (302, "/models/")
    assert "current-user" not in page(owner.get("/models/")).text


# --- submitting --------------------------------------------------------------------------------------


def test_the_submit_page_sends_a_visitor_to_the_login_first(study):
    response = Client().get(f"/models/studies/{study.slug}/submit/")

    assert (response.status_code, response["Location"]) == (
        302,
        f"/models/login/?next=/models/studies/{study.slug}/submit/",
    )


def test_the_submit_page_offers_the_items_csv_and_the_form(study, owner):
    response = owner.get(f"/models/studies/{study.slug}/submit/")

    found = page(response)
    assert response.status_code == 200
    assert ("Download the study's items (CSV)", f"/models/studies/{study.slug}/items.csv") in found.links
    assert {"id_model_name", "id_description", "id_file"} <= set(found.attributes)
    assert_no_inline_script_or_style(response)


def test_the_items_csv_lists_ids_and_tokens_without_human_scores(study, owner):
    response = owner.get(f"/models/studies/{study.slug}/items.csv")

    assert response["Content-Disposition"] == f'attachment; filename="{study.slug}-items.csv"'
    rows = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert rows[0] == ["item", "token_a", "token_b", "area"]
    assert rows[1:] == [
        [str(item.pk), item.token_a.text, item.token_b.text, item.area.name]
        for item in study.items.select_related("token_a", "token_b", "area").order_by("index")
    ]


def test_the_items_csv_with_a_score_column_added_uploads_as_it_is(study, owner):
    rows = list(
        csv.reader(
            io.StringIO(
                b"".join(owner.get(f"/models/studies/{study.slug}/items.csv").streaming_content).decode()
            )
        )
    )
    scores = dict(study.items.values_list("pk", "final_score"))
    text = "\n".join(
        ",".join([*row, "score" if number_ == 0 else str(scores[int(row[0])])])
        for number_, row in enumerate(rows)
    )

    response = upload(owner, study, "from the items file", text + "\n")

    assert response.status_code == 302
    assert Submission.objects.get().covered == 28


def test_an_uploaded_csv_is_stored_and_the_owner_is_sent_to_its_evaluation(study, owner):
    response = upload(owner, study, "truth", truth_csv(study), description="the study's own scores")

    submission = Submission.objects.get()
    assert (response.status_code, response["Location"]) == (302, f"/models/submissions/{submission.pk}/")
    assert (submission.model_name, submission.description, submission.source_format) == (
        "truth",
        "the study's own scores",
        "csv",
    )
    assert (submission.status, submission.covered) == ("done", 28)


def test_bad_rows_are_shown_with_their_lines_and_nothing_is_stored(study, owner):
    first, second = study.items.order_by("index").values_list("pk", flat=True)[:2]
    text = f"item,score\n{first},0.5\n{first},0.7\n999999,1\n{second},nan\n{second},high\n"

    response = upload(owner, study, "bad", text)

    found = page(response)
    assert response.status_code == 400
    assert found.text["submission-problem"].startswith(
        "Your scores were not submitted. The submission has 4 problems; nothing was stored"
    )
    problems = re.search(r'<ul id="submission-problems">(.*?)</ul>', response.content.decode()).group(1)
    assert [unescape(line) for line in re.findall(r"<li>(.*?)</li>", problems)] == (
        [
            "line 3: this item was already scored at line 2",
            f"line 4: item 999999 is not an item of study '{study.slug}'",
            f"line 5, item {second}: the score 'nan' is not a finite number",
            f"line 6, item {second}: the score 'high' is not a number",
        ]
    )
    assert found.attributes["id_model_name"]["value"] == "bad"  # the form keeps what was typed
    assert Submission.objects.count() == 0


def test_an_empty_file_is_refused_with_the_header_it_needs(study, owner):
    response = upload(owner, study, "empty", b"")

    assert response.status_code == 400
    assert page(response).text["submission-problem"] == (
        "Your scores were not submitted. The CSV needs a header with the columns item,score or token_a,token_b,score; "
        "got an empty file"
    )
    assert Submission.objects.count() == 0


def test_a_file_larger_than_5_mib_is_refused_with_413(study, owner):
    limit = services.MAX_SUBMISSION_BYTES

    response = upload(owner, study, "big", b"item,score\n" + b"1" * limit)

    assert response.status_code == 413
    assert page(response).text["submission-problem"] == (
        f"Your scores were not submitted. The file is {limit + 11:,} bytes; the limit is {limit:,} bytes (5 MiB)"
    )
    assert Submission.objects.count() == 0


def test_too_low_a_coverage_is_refused(study, owner):
    text = "item,score\n" + "".join(f"{pk},{pk}\n" for pk in study.items.values_list("pk", flat=True)[:5])

    response = upload(owner, study, "few", text)

    assert response.status_code == 400
    assert page(response).text["submission-problem"] == (
        "Your scores were not submitted. The submission scores 5 of 28 items (17.9%); this study needs at least 50% and two items"
    )


def test_a_model_name_used_twice_is_refused_with_409(study, owner):
    upload(owner, study, "twice", truth_csv(study))

    response = upload(owner, study, "twice", random_csv(study))

    assert response.status_code == 409
    assert page(response).text["submission-problem"] == (
        "Your scores were not submitted. You already submitted a model named 'twice' for this study; submissions are never "
        "replaced, so choose another name"
    )
    assert Submission.objects.count() == 1


def test_a_missing_model_name_and_file_are_shown_by_field(study, owner):
    response = owner.post(f"/models/studies/{study.slug}/submit/", {"model_name": ""})

    assert response.status_code == 400
    assert re.findall(r'<p class="field-error" role="alert">([^<]+)</p>', response.content.decode()) == [
        "This field is required.",
        "This field is required.",
    ]


def test_a_study_that_has_not_finished_takes_no_submission(owner):
    running = make_study()

    response = owner.get(f"/models/studies/{running.slug}/submit/")

    assert response.status_code == 409
    assert page(response).text["study-state"] == (
        "This study is running: model submissions will be available once it has finished, because models are "
        "evaluated against its final ranking."
    )


# --- a submission and its evaluation ---------------------------------------------------------------


def test_the_submission_page_shows_the_full_evaluation(study, owner):
    upload(owner, study, "truth", truth_csv(study))
    submission = Submission.objects.get()

    response = owner.get(f"/models/submissions/{submission.pk}/")

    found = page(response)
    result = services.public_result(submission.evaluations.get(weight_offset=2.0).result)
    assert response.status_code == 200
    assert (found.text["submission-status"], found.text["submission-coverage"]) == (
        "done",
        "28 of 28 items (100%)",
    )
    assert found.text["first-rank-weight"] == number(result["first_rank_weight"])
    rho_w, tau_w, rho, tau = (result[name] for name in ("rho_w", "tau_w", "rho", "tau"))
    assert body_rows(found.tables["coefficients"]) == [
        [
            "ρ_w (weighted Spearman)",
            number(rho_w["value"]),
            f"[{number(rho_w['interval'][0])}, {number(rho_w['interval'][1])}]",
            number(rho_w["standard_error"]),
            f"{number(rho_w['chance_mean'])} ± {number(rho_w['chance_sd'])}",
            number(rho_w["p_value"]),
        ],
        [
            "τ_w (weighted Kendall)",
            number(tau_w["value"]),
            f"[{number(tau_w['interval'][0])}, {number(tau_w['interval'][1])}]",
            number(tau_w["standard_error"]),
            f"{number(tau_w['chance_mean'])} ± {number(tau_w['chance_sd'])}",
            number(tau_w["p_value"]),
        ],
        [
            "ρ (Spearman)",
            number(rho["value"]),
            f"[{number(rho['interval'][0])}, {number(rho['interval'][1])}]",
            number(rho["standard_error"]),
            f"{number(rho['chance_mean'])} ± {number(rho['chance_sd'])}",
            number(rho["p_value"]),
        ],
        [
            "τ (Kendall)",
            number(tau["value"]),
            f"[{number(tau['interval'][0])}, {number(tau['interval'][1])}]",
            number(tau["standard_error"]),
            f"{number(tau['chance_mean'])} ± {number(tau['chance_sd'])}",
            number(tau["p_value"]),
        ],
    ]
    retrieval = result["retrieval"]
    assert [row[:2] for row in body_rows(found.tables["retrieval"])] == [
        ["P@2", number(retrieval["precision_at_k"])],
        ["R@2", number(retrieval["recall_at_k"])],
        ["Fβ@2 (β = 1)", number(retrieval["f_measure_at_k"])],
        ["AP", number(retrieval["average_precision"])],
        ["R-precision", number(retrieval["r_precision"])],
        ["bpref", number(retrieval["bpref"])],
        ["DCG@2", number(retrieval["dcg_at_k"])],
        ["nDCG@2", number(retrieval["ndcg_at_k"])],
        ["RR", number(retrieval["reciprocal_rank"])],
        ["Q-measure (β = 1)", number(retrieval["q_measure"])],
        ["R-measure (β = 1)", number(retrieval["r_measure"])],
    ]
    assert body_rows(found.tables["curve"]) == [
        [f"{recall:.1f}", number(precision)]
        for recall, precision in zip(
            retrieval["recall_levels"], retrieval["interpolated_precision"], strict=True
        )
    ]
    html = response.content.decode()
    assert html.count('<circle cx="') == 11 + 1  # the 11 points and the legend's
    assert "replicates" not in html and 'http-equiv="refresh"' not in html
    assert_no_inline_script_or_style(response)


def test_the_submission_page_evaluates_at_the_n0_and_k_asked_for(study, owner):
    upload(owner, study, "truth", truth_csv(study))
    submission = Submission.objects.get()

    response = owner.get(f"/models/submissions/{submission.pk}/", {"n0": "0", "k": "5"})

    found = page(response)
    assert found.text["first-rank-weight"] == number(6 / math.pi**2)  # R(0)
    assert body_rows(found.tables["retrieval"])[0][0] == "P@5"
    assert (found.attributes["id_n0"]["value"], found.attributes["id_k"]["value"]) == ("0", "5")
    assert sorted(submission.evaluations.values_list("weight_offset", "top_k")) == [(0.0, 5), (2.0, 2)]


def test_settings_out_of_range_are_explained_and_the_defaults_shown(study, owner):
    upload(owner, study, "truth", truth_csv(study))
    submission = Submission.objects.get()

    response = owner.get(f"/models/submissions/{submission.pk}/", {"n0": "2", "k": "99"})

    found = page(response)
    assert found.text["settings-problem"] == (
        "K must lie between 1 and the study's 28 items, got 99 Shown below: the evaluation at the defaults."
    )
    assert body_rows(found.tables["retrieval"])[0][0] == "P@2"


def test_a_running_evaluation_shows_its_progress_and_reloads_every_2_seconds(
    study, owner, monkeypatch, django_capture_on_commit_callbacks
):
    monkeypatch.setattr(services, "SYNC_EVALUATION_ITEMS", 10)  # so that 28 items go to the background task
    with django_capture_on_commit_callbacks():  # captured, not run: the task has not started
        upload(owner, study, "big", truth_csv(study))
    submission = Submission.objects.get()

    response = owner.get(f"/models/submissions/{submission.pk}/")

    found = page(response)
    html = response.content.decode()
    assert found.text["submission-status"] == "pending"
    assert found.attributes["evaluation-progress"] == {
        "id": "evaluation-progress",
        "max": "100",
        "value": "0",
    }
    assert '<meta http-equiv="refresh" content="2">' in html
    assert "coefficients" not in found.tables


def test_a_failed_evaluation_shows_its_error(study, owner):
    upload(owner, study, "truth", truth_csv(study))
    Submission.objects.update(status=Submission.Status.FAILED, error="the evaluation failed on our side")

    found = page(owner.get(f"/models/submissions/{Submission.objects.get().pk}/"))

    assert found.text["evaluation-failed"] == "The evaluation failed on our side."


def test_another_owners_submission_page_is_404_and_a_visitor_is_sent_to_the_login(
    study, owner, django_user_model
):
    upload(owner, study, "mine", truth_csv(study))
    url = f"/models/submissions/{Submission.objects.get().pk}/"

    other = logged_in(django_user_model, "other").get(url)
    visitor = Client().get(url)

    assert other.status_code == 404
    assert (visitor.status_code, visitor["Location"]) == (302, f"/models/login/?next={url}")


# --- the leaderboard ---------------------------------------------------------------------------------


@pytest.fixture
def three_models(study, django_user_model):
    alice, bob = logged_in(django_user_model, "alice"), logged_in(django_user_model, "bob")
    for client, name, text in (
        (alice, "truth", truth_csv(study)),
        (bob, "random", random_csv(study)),
        (alice, "twin", twin_csv(study)),
    ):
        assert upload(client, study, name, text).status_code == 302
    return alice


def test_the_leaderboard_page_is_public_with_intervals_chance_ranks_and_ties(study, three_models):
    response = Client().get(f"/models/studies/{study.slug}/leaderboard/", {"metric": "rho_w"})

    found = page(response)
    board = leaderboard_for(study=study, metric="rho_w")
    assert response.status_code == 200
    assert found.tables["leaderboard"][0] == [
        "Rank",
        "Model",
        "ρ_w (weighted Spearman)",
        "95% interval",
        "Rank range",
        "Chance (mean ± SD)",
        "p",
        "Coverage",
        "Owner",
        "Owner's variants",
        "Interval for the variants",
    ]
    expected = []
    for row in board["rows"]:
        rho_w = row["metrics"]["rho_w"]
        ties = row["indistinguishable_from"]
        expected.append(
            [
                str(row["rank"]),
                row["model_name"]
                + (f" cannot be told apart from: {', '.join(ties)}" if ties else "")
                + (
                    f" {chance_verdict(rho_w)} chance (p = {number(rho_w['p_value'])})"
                    if chance_verdict(rho_w) in ("at", "below")
                    else ""
                ),
                number(row["value"]),
                f"[{number(row['interval'][0])}, {number(row['interval'][1])}]",
                f"{row['rank_range'][0]}–{row['rank_range'][1]}",
                f"{number(rho_w['chance_mean'])} ± {number(rho_w['chance_sd'])}",
                number(rho_w["p_value"]),
                "100%",
                row["owner"],
                str(row["variants"]),
                f"[{number(row['interval_adjusted'][0])}, {number(row['interval_adjusted'][1])}]",
            ]
        )
    assert body_rows(found.tables["leaderboard"]) == expected
    assert [row[1] for row in expected] == [
        "truth cannot be told apart from: twin (alice)",
        "twin cannot be told apart from: truth (alice)",
        f"random at chance (p = {number(board['rows'][2]['metrics']['rho_w']['p_value'])})",
    ]
    assert found.attributes["csv-link"]["href"] == (
        f"/api/studies/{study.slug}/leaderboard/?metric=rho_w&n0=2&format=csv"
    )
    assert found.attributes["card-link"]["href"] == f"/models/studies/{study.slug}/card/"
    assert "replicates" not in response.content.decode()
    assert_no_inline_script_or_style(response)


def test_the_leaderboard_page_switches_metric_by_links_and_shows_chance_for_plain_metrics_too(
    study, three_models
):
    response = Client().get(f"/models/studies/{study.slug}/leaderboard/", {"metric": "rho", "n0": "5"})

    found = page(response)
    assert [link for link in found.links if link[1].startswith("?metric=")] == [
        ("ρ_w (weighted Spearman)", "?metric=rho_w&n0=5"),
        ("τ_w (weighted Kendall)", "?metric=tau_w&n0=5"),
        ("ρ (Spearman)", "?metric=rho&n0=5"),
        ("τ (Kendall)", "?metric=tau&n0=5"),
    ]
    assert found.tables["leaderboard"][0] == [
        "Rank",
        "Model",
        "ρ (Spearman)",
        "95% interval",
        "Rank range",
        "Chance (mean ± SD)",
        "p",
        "Coverage",
        "Owner",
        "Owner's variants",
        "Interval for the variants",
    ]
    board = leaderboard_for(study=study, metric="rho", weight_offset=5.0)
    assert [row[5:7] for row in body_rows(found.tables["leaderboard"])] == [
        [
            f"{number(row['metrics']['rho']['chance_mean'])} ± {number(row['metrics']['rho']['chance_sd'])}",
            number(row["metrics"]["rho"]["p_value"]),
        ]
        for row in board["rows"]
    ]
    assert found.text["board-heading"] == "Models by ρ (Spearman), n0 = 5"
    assert (
        found.attributes["csv-link"]["href"]
        == f"/api/studies/{study.slug}/leaderboard/?metric=rho&n0=5&format=csv"
    )


def interval_plot(response) -> ET.Element:
    match = re.search(
        r'<figure class="plot-figure" id="interval-plot".*?(<svg.*?</svg>)',
        response.content.decode(),
        re.DOTALL,
    )
    assert match is not None, "the leaderboard page has no interval plot"
    return ET.fromstring(match.group(1))


def test_the_interval_plot_has_one_interval_per_model_and_bands_those_that_cannot_be_told_apart(
    study, three_models
):
    response = Client().get(f"/models/studies/{study.slug}/leaderboard/", {"metric": "rho_w"})

    plot = interval_plot(response)
    board = leaderboard_for(study=study, metric="rho_w")
    rows = plot.findall(f".//{SVG}g[@class='interval-row']")
    assert [
        (
            row.get("data-label"),
            float(row.get("data-value")),
            [float(row.get("data-low")), float(row.get("data-high"))],
        )
        for row in rows
    ] == [(entry["name"], entry["value"], entry["interval"]) for entry in board["rows"]]
    assert [len(row.findall(f"{SVG}line[@class='interval']")) for row in rows] == [1, 1, 1]
    for row in rows:  # the dot lies on its bar, and the chance tick is drawn too
        bar, dot = row.find(f"{SVG}line[@class='interval']"), row.find(f"{SVG}circle[@class='value']")
        assert float(bar.get("x1")) <= float(dot.get("cx")) <= float(bar.get("x2"))
        assert row.find(f"{SVG}line[@class='reference']") is not None
    # truth and twin cannot be told apart (the table says so): one band for both; random stands alone.
    assert [row.get("data-label") for row in rows] == ["truth (alice)", "twin (alice)", "random (bob)"]
    assert [row.get("data-group") for row in rows] == ["0", "0", "1"]
    bands = plot.findall(f".//{SVG}g[@class='tie-group']")
    assert [(band.get("data-group"), band.get("data-size")) for band in bands] == [("0", "2")]
    assert_no_inline_script_or_style(response)


def test_a_leaderboard_without_models_draws_no_plot(study):
    response = Client().get(f"/models/studies/{study.slug}/leaderboard/")

    assert response.status_code == 200
    assert 'id="interval-plot"' not in response.content.decode()


def test_the_leaderboard_page_shows_each_models_agreement_with_the_annotators(study, three_models):
    found = page(Client().get(f"/models/studies/{study.slug}/leaderboard/"))

    view = annotator_view(study=study)
    assert body_rows(found.tables["annotator-agreement"]) == [
        [
            name,
            str(entry["annotators"]),
            number(entry["min"]),
            number(entry["max"]),
            number(entry["mean"]),
            number(entry["sd"]),
        ]
        for name, entry in view["models"].items()
    ]
    assert body_rows(found.tables["paired-tests"]) == [
        [
            test["first"],
            test["second"],
            str(test["annotators"]),
            number(test["t_statistic"]),
            number(test["p_value"]),
        ]
        for test in view["paired_tests"]
    ]


def test_the_owners_own_rows_are_marked_on_the_leaderboard(study, three_models):
    html = three_models.get(f"/models/studies/{study.slug}/leaderboard/").content.decode()

    assert re.findall(r'<tr class="board-row own-row" data-model="([^"]+)"', html) == [
        "truth (alice)",
        "twin (alice)",
    ]


def test_a_leaderboard_without_models_says_so(study):
    found = page(Client().get(f"/models/studies/{study.slug}/leaderboard/"))

    assert found.text["no-models"] == "No model has been submitted for this study yet."


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"metric": "kendall"}, "metric: kendall is not a metric: use one of rho_w, tau_w, rho, tau."),
        ({"n0": "3"}, "n0: the leaderboard offers n0 = 0, 1, 2, 5, 10, got 3."),
    ],
)
def test_bad_leaderboard_settings_are_explained_with_400(study, query, message):
    response = Client().get(f"/models/studies/{study.slug}/leaderboard/", query)

    assert (response.status_code, page(response).text["settings-problem"]) == (400, message)


def test_the_leaderboard_of_a_running_study_is_not_open_yet():
    running = make_study()

    response = Client().get(f"/models/studies/{running.slug}/leaderboard/")

    assert response.status_code == 409
    assert page(response).text["study-state"] == (
        "This study is running: its leaderboard will be available once it has finished, because models are "
        "evaluated against its final ranking."
    )


def test_an_unknown_study_is_404():
    assert Client().get("/models/studies/no-such-study/leaderboard/").status_code == 404

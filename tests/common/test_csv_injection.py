"""Every CSV the project writes is safe to open in a spreadsheet: text cells that start with = + - @
(or a tab or carriage return) are written with a leading apostrophe (OWASP, "CSV Injection")."""

import csv
import io

import numpy as np
import pytest
from django.test import Client

from collection.lifecycle import study_start
from collection.models import Study
from collection.pools import items_generate, tokens_import
from common.csvexport import csv_text, escape_cell, unescape_cell
from metrics import services as metrics_services
from tests.factories import annotators, disagreeing_crowd, vote_until

pytestmark = pytest.mark.django_db

TRIGGERS = ["=", "+", "-", "@"]
PAYLOADS = [f'{c}HYPERLINK("http://evil.example","x")' for c in TRIGGERS]


@pytest.mark.parametrize("trigger", [*TRIGGERS, "\t", "\r"])
def test_a_text_cell_starting_with_a_formula_character_gets_an_apostrophe(trigger):
    assert escape_cell(f"{trigger}1+1") == f"'{trigger}1+1"
    assert unescape_cell(escape_cell(f"{trigger}1+1")) == f"{trigger}1+1"


@pytest.mark.parametrize("value", [-0.25, -3, 0.5, None, "plain", "a=b", "'quoted", "", "ok-"])
def test_numbers_and_harmless_text_are_written_as_they_are(value):
    assert escape_cell(value) == ("" if value is None else value)
    assert unescape_cell("'quoted") == "'quoted"


def test_the_csv_keeps_negative_numbers_numeric_and_quotes_what_needs_it():
    text = csv_text(["name", "value"], [["=1+1", -0.5], ['a "b", c', 2]])
    assert text == 'name,value\n\'=1+1,-0.5\n"a ""b"", c",2\n'


@pytest.fixture
def formula_study():
    study = Study.objects.create(
        name="Formulas", slug="formulas", ballot_count=2, appearances=4, votes_per_annotator_per_ballot=None
    )
    words = [f"{c}cmd{i}" for i, c in enumerate(TRIGGERS)] + ["plain", "safe"]
    tokens_import(study=study, data="token,area\n" + "".join(f'"{w}",A\n' for w in words))
    items_generate(study=study)
    study_start(study=study)
    vote_until(study, voters=annotators(study, 6), choose=disagreeing_crowd(study, seed=5))
    study.refresh_from_db()
    assert study.status == Study.Status.FINISHED
    return study


def cells(response) -> list[list[str]]:
    text = b"".join(response.streaming_content).decode() if response.streaming else response.content.decode()
    return list(csv.reader(io.StringIO(text)))


def assert_no_formula(rows: list[list[str]]) -> None:
    for row in rows:
        for cell in row:
            if cell[:1] in TRIGGERS:
                float(cell)  # only numbers may start with - or + (a ValueError here is an unescaped formula)


def test_the_dataset_votes_and_items_exports_escape_the_tokens(formula_study, django_user_model):
    staff = Client()
    staff.force_login(django_user_model.objects.create_user("researcher", password="x", is_staff=True))
    owner = Client()
    owner.force_login(django_user_model.objects.create_user("owner", password="x"))

    exports = {
        "dataset": cells(staff.get("/studies/formulas/export/dataset.csv")),
        "votes": cells(staff.get("/studies/formulas/export/votes.csv")),
        "items": cells(owner.get("/models/studies/formulas/items.csv")),
    }

    for name, rows in exports.items():
        assert_no_formula(rows)
        written = {cell for row in rows for cell in row}
        assert {f"'{c}cmd{i}" for i, c in enumerate(TRIGGERS)} <= written, name


def test_the_escaped_items_file_scored_in_a_spreadsheet_uploads_back(formula_study, django_user_model):
    owner = Client()
    owner.force_login(django_user_model.objects.create_user("owner", password="x"))
    rows = cells(owner.get("/models/studies/formulas/items.csv"))
    rng = np.random.default_rng(0)
    scored = "token_a,token_b,score\n" + "".join(f'"{a}","{b}",{rng.random()}\n' for _, a, b, _ in rows[1:])

    submission = metrics_services.submission_create(
        study=formula_study,
        owner=django_user_model.objects.get(username="owner"),
        model_name="by tokens",
        data=scored.encode(),
        source_format="csv",
    )

    assert submission.covered == formula_study.items.count()


@pytest.mark.parametrize("payload", PAYLOADS)
def test_the_leaderboard_csv_escapes_model_names_in_both_columns(formula_study, django_user_model, payload):
    owner = django_user_model.objects.create_user("owner", password="x")
    truth = dict(formula_study.items.values_list("pk", "final_score"))
    for name in (payload, "honest model"):
        rng = np.random.default_rng(1)  # the same scores: the instrument cannot tell the two apart
        rows = [{"item": pk, "score": float(score + rng.normal(0, 0.5))} for pk, score in truth.items()]
        metrics_services.submission_create(
            study=formula_study, owner=owner, model_name=name, data=rows, source_format="json"
        )

    rows = cells(Client().get("/api/studies/formulas/leaderboard/", {"format": "csv"}))
    header, body = rows[0], rows[1:]
    named = {row[header.index("model_name")] for row in body}
    indistinguishable = [row[header.index("indistinguishable_from")] for row in body]

    assert_no_formula(body)
    assert f"'{payload}" in named
    assert f"'{payload} (owner)" in indistinguishable

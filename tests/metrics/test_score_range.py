"""Scores a 64-bit float cannot hold are refused with a 400 that names the row and the item: beyond
±1.8e308 (1 followed by 400 zeros, as a JSON number, a string or a CSV cell), NaN and ±Infinity as
strings, and a nonzero number so close to 0 that it would read as 0 (1e-400), which would silently tie
it with every other such score. A subnormal number (5e-324) is a number like any other."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from metrics.models import Submission
from tests.metrics.test_api import assert_refused, final_scores, owner_client, submit_csv
from tests.metrics.test_pages import logged_in, page

pytestmark = pytest.mark.django_db

HUGE = "1" + "0" * 400
BEYOND = "is beyond the range of a 64-bit float (about ±1.8e308); rescale your scores"
TOO_SMALL = (
    "is too close to 0 for a 64-bit float, which would read it as 0 and tie it with every other such score "
    "(the smallest is about 4.9e-324); rescale your scores"
)


@pytest.fixture
def owner(django_user_model):
    return owner_client(django_user_model)


def item_ids(study) -> list[int]:
    return list(study.items.order_by("index").values_list("pk", flat=True))


def test_scores_beyond_the_float_range_or_undefined_in_json_are_refused_naming_each_item(study, owner):
    ids = item_ids(study)
    odd = [HUGE, f'"{HUGE}"', "1e400", '"-1e400"', "1e-400", '"-1e-400"', '"NaN"', '"Infinity"', '"-Infinity"']
    rows = [f'{{"item": {ids[i]}, "score": {score}}}' for i, score in enumerate(odd)]
    rows += [f'{{"item": {item}, "score": 0.5}}' for item in ids[len(odd) :]]
    body = '{"model_name": "m", "scores": [' + ", ".join(rows) + "]}"

    response = owner.post(f"/api/studies/{study.slug}/submissions/", body, content_type="application/json")

    assert_refused(
        response,
        400,
        "the submission has 9 problems; nothing was stored",
        [
            f"scores[0], item {ids[0]}: the score 10000000000000000000… (401 digits) {BEYOND}",
            f"scores[1], item {ids[1]}: the score '10000000000000000000…' (401 characters) {BEYOND}",
            f"scores[2], item {ids[2]}: the score 1e400 {BEYOND}",
            f"scores[3], item {ids[3]}: the score '-1e400' {BEYOND}",
            f"scores[4], item {ids[4]}: the score 1e-400 {TOO_SMALL}",
            f"scores[5], item {ids[5]}: the score '-1e-400' {TOO_SMALL}",
            f"scores[6], item {ids[6]}: the score 'NaN' is not a finite number",
            f"scores[7], item {ids[7]}: the score 'Infinity' is not a finite number",
            f"scores[8], item {ids[8]}: the score '-Infinity' is not a finite number",
        ],
    )


def test_a_csv_with_a_score_beyond_the_float_range_is_refused_naming_the_item_or_the_pair(study, owner):
    ids = item_ids(study)
    first = study.items.select_related("token_a", "token_b").get(pk=ids[1])
    text = (
        f"item,token_a,token_b,score\n{ids[0]},,,{HUGE}\n,{first.token_a.text},{first.token_b.text},-1e999\n"
        + "".join(f"{item},,,0.5\n" for item in ids[2:])
    )

    response = submit_csv(owner, study, "m", text)

    assert_refused(
        response,
        400,
        "the submission has 2 problems; nothing was stored",
        [
            f"line 2, item {ids[0]}: the score '10000000000000000000…' (401 characters) {BEYOND}",
            f"line 3, the pair '{first.token_a.text}' – '{first.token_b.text}': the score '-1e999' {BEYOND}",
        ],
    )


def test_the_submission_page_refuses_a_score_beyond_the_float_range_naming_the_item(study, django_user_model):
    client = logged_in(django_user_model)
    ids = item_ids(study)
    text = f"item,score\n{ids[0]},{HUGE}\n" + "".join(f"{item},0.5\n" for item in ids[1:])
    upload = SimpleUploadedFile("scores.csv", text.encode(), content_type="text/csv")

    response = client.post(f"/models/studies/{study.slug}/submit/", {"model_name": "m", "file": upload})

    assert response.status_code == 400
    assert page(response).text["submission-problems"] == (
        f"line 2, item {ids[0]}: the score '10000000000000000000…' (401 characters) {BEYOND}"
    )
    assert Submission.objects.count() == 0


def test_a_boolean_score_is_not_a_number(study, owner):
    ids = item_ids(study)
    body = f'{{"model_name": "m", "scores": [{{"item": {ids[0]}, "score": true}}]}}'

    response = owner.post(f"/api/studies/{study.slug}/submissions/", body, content_type="application/json")

    assert response.json()["errors"] == [f"scores[0], item {ids[0]}: the score True is not a number"]


def test_subnormal_scores_are_numbers_and_keep_their_order(study, owner):
    human = final_scores(study)
    lowest, second = sorted(human, key=human.get)[:2]
    rows = [f'{{"item": {item}, "score": {score!r}}}' for item, score in human.items() if item not in (lowest, second)]
    rows += [f'{{"item": {lowest}, "score": 5e-324}}', f'{{"item": {second}, "score": "1e-310"}}']
    body = '{"model_name": "m", "scores": [' + ", ".join(rows) + "]}"

    response = owner.post(f"/api/studies/{study.slug}/submissions/", body, content_type="application/json")

    assert response.status_code == 201, response.content
    submission = Submission.objects.get()
    by_item = dict(zip(item_ids(study), submission.scores, strict=True))
    assert (by_item[lowest], by_item[second]) == (5e-324, 1e-310)

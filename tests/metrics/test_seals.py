"""Sealed submissions: a scores file committed by its SHA-256 before it is shown, and verified on upload."""

from __future__ import annotations

import hashlib

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from collection.models import Study
from metrics.leaderboard import leaderboard_for
from metrics.models import Seal, Submission
from tests.factories import make_study
from tests.metrics.test_api import submit_json
from tests.metrics.test_leaderboard import noisy

pytestmark = pytest.mark.django_db


def scores_csv(study, seed: int) -> bytes:
    lines = ["item,score"] + [f"{row['item']},{row['score']!r}" for row in noisy(study, seed)]
    return ("\n".join(lines) + "\n").encode()


def owner_client(name: str = "sealer") -> Client:
    user, _ = User.objects.get_or_create(username=name)
    client = Client()
    client.force_login(user)
    return client


def seal(client: Client, study, model_name: str, sha256: str):
    return client.post(
        f"/api/studies/{study.slug}/seals/",
        {"model_name": model_name, "sha256": sha256},
        content_type="application/json",
    )


def upload(client: Client, study, model_name: str, content: bytes):
    return client.post(
        f"/api/studies/{study.slug}/submissions/",
        {
            "model_name": model_name,
            "file": SimpleUploadedFile("scores.csv", content, content_type="text/csv"),
        },
    )


def test_a_model_sealed_while_the_study_runs_is_revealed_by_its_very_file_and_the_leaderboard_says_so(study):
    content = scores_csv(study, 1)
    client = owner_client()
    Study.objects.filter(pk=study.pk).update(status=Study.Status.RUNNING)  # before the final ranking exists
    running = Study.objects.get(pk=study.pk)
    made = seal(client, running, "sealed model", hashlib.sha256(content).hexdigest())
    assert made.status_code == 201, made.content
    assert made.json()["study_status"] == "running" and made.json()["submission"] is None
    Study.objects.filter(pk=study.pk).update(status=Study.Status.FINISHED)

    revealed = upload(client, study, "sealed model", content)
    assert revealed.status_code == 201, revealed.content
    submission = Submission.objects.get(pk=revealed.json()["id"])
    assert submission.seal == Seal.objects.get(model_name="sealed model")
    listed = client.get(f"/api/studies/{study.slug}/seals/").json()
    assert [(row["model_name"], row["submission"]) for row in listed] == [("sealed model", submission.pk)]
    row = {r["model_name"]: r for r in leaderboard_for(study=study, metric="tau_w")["rows"]}["sealed model"]
    assert row["sealed_while"] == "running" and row["sealed_at"].startswith(
        str(submission.seal.sealed_at.date())
    )
    page = Client().get(f"/models/studies/{study.slug}/leaderboard/").content.decode()
    sealed_at = submission.seal.sealed_at
    assert (
        f'sealed <time datetime="{sealed_at.isoformat()}">{sealed_at:%-d %b %Y}</time>, while the study was running'
        in page
    )


def test_a_file_that_does_not_match_its_seal_is_refused_and_nothing_is_stored(study):
    client = owner_client()
    sealed = scores_csv(study, 1)
    assert seal(client, study, "m", hashlib.sha256(sealed).hexdigest()).status_code == 201
    other = scores_csv(study, 2)  # a variant tuned after the seal
    refused = upload(client, study, "m", other)
    assert refused.status_code == 400
    assert hashlib.sha256(other).hexdigest() in refused.json()["detail"]
    assert "upload the very file you sealed" in refused.json()["detail"]
    json_rows = submit_json(client, study, "m", noisy(study, 1))  # rows, not the sealed file
    assert json_rows.status_code == 400 and "upload the sealed file itself" in json_rows.json()["detail"]
    assert not Submission.objects.filter(study=study, model_name="m").exists()


def test_an_unsealed_name_is_submitted_as_before(study):
    client = owner_client()
    assert upload(client, study, "plain", scores_csv(study, 3)).status_code == 201
    assert Submission.objects.get(model_name="plain").seal is None


@pytest.mark.parametrize(
    ("sha256", "says"),
    [("abc", "64 hexadecimal digits"), ("g" * 64, "64 hexadecimal digits"), ("", "sha256")],
)
def test_a_seal_that_is_not_a_sha256_is_refused(study, sha256, says):
    response = seal(owner_client(), study, "m", sha256)
    assert response.status_code == 400 and says in response.content.decode()
    assert not Seal.objects.exists()


def test_a_name_is_sealed_once_and_seals_count_toward_the_owners_variants(study):
    Study.objects.filter(pk=study.pk).update(max_variants_per_owner=2)
    client = owner_client()
    digest = hashlib.sha256(b"x").hexdigest()
    assert seal(client, study, "a", digest).status_code == 201
    again = seal(client, study, "a", digest)
    assert again.status_code == 409 and "already sealed" in again.json()["detail"]
    assert seal(client, study, "b", digest).status_code == 201
    third = seal(client, study, "c", digest)
    assert third.status_code == 409 and "its limit per owner (2)" in third.json()["detail"]
    # Revealing a seal does not take another variant: the cap counts it once.
    content = scores_csv(study, 4)
    Seal.objects.filter(model_name="a").update(sha256=hashlib.sha256(content).hexdigest())
    assert upload(client, study, "a", content).status_code == 201


def test_a_seal_is_allowed_in_a_draft_and_is_the_owners_alone(study):
    draft = make_study(start=False)
    digest = hashlib.sha256(b"y").hexdigest()
    assert seal(owner_client("alice"), draft, "m", digest).status_code == 201
    assert owner_client("bob").get(f"/api/studies/{draft.slug}/seals/").json() == []
    assert Client().post(f"/api/studies/{draft.slug}/seals/", {}).status_code == 401

"""Seals and the cap of variants hold for judges as for models: a judge sealed first is revealed by its
very file, a judge's name shares the owner's namespace with their models, and the cap counts models and
judges apart."""

from __future__ import annotations

import hashlib
import json

import pytest
from django.contrib.auth.models import User

from collection.models import Study
from common.errors import ServiceError, StudyStateError
from metrics import services
from metrics.leaderboard import leaderboard_for
from metrics.models import Kind, Seal, Submission
from tests.metrics.judge_helpers import csv_bytes, post_judge_file, reference_rows
from tests.metrics.test_api import owner_client
from tests.metrics.test_leaderboard import noisy, submit

pytestmark = pytest.mark.django_db


def judge(study, name: str, content: bytes, owner: str = "owner") -> Submission:
    user, _ = User.objects.get_or_create(username=owner)
    return services.judge_create(study=study, owner=user, judge_name=name, data=content, source_format="file")


def test_a_judge_sealed_first_is_revealed_by_its_very_file_and_the_leaderboard_says_so(
    study, django_user_model
):
    client = owner_client(django_user_model, "sealer")
    content = csv_bytes(reference_rows(study))
    sealed = client.post(
        f"/api/studies/{study.slug}/seals/",
        json.dumps(
            {"model_name": "sealed judge", "kind": "judge", "sha256": hashlib.sha256(content).hexdigest()}
        ),
        content_type="application/json",
    )
    assert sealed.status_code == 201, sealed.content
    assert sealed.json()["kind"] == "judge"
    response = post_judge_file(client, study, "sealed judge", content)
    assert response.status_code == 201, response.content
    revealed = Submission.objects.get(pk=response.json()["id"])
    assert revealed.seal_id == sealed.json()["id"]
    row = leaderboard_for(study=study, kind=Kind.JUDGE)["rows"][0]
    assert row["sealed_at"] == Seal.objects.get().sealed_at.isoformat()


def test_a_file_that_does_not_match_the_judges_seal_is_refused_and_nothing_is_stored(study):
    owner = User.objects.create_user("sealer")
    content = csv_bytes(reference_rows(study))
    seal = services.seal_create(
        study=study, owner=owner, model_name="j", sha256=hashlib.sha256(content).hexdigest(), kind=Kind.JUDGE
    )
    other = csv_bytes(reference_rows(study, flip=True))
    with pytest.raises(ServiceError) as refused:
        judge(study, "j", other, owner="sealer")
    assert refused.value.message == (
        f"this file's SHA-256 is {hashlib.sha256(other).hexdigest()}, and your seal of 'j' made on "
        f"{seal.sealed_at:%Y-%m-%d %H:%M} UTC holds {seal.sha256}: upload the very file you sealed; nothing was stored"
    )
    assert not Submission.objects.exists()


def test_a_seal_made_without_its_kind_is_revealed_by_a_judge_of_its_name(study):
    owner = User.objects.create_user("sealer")
    content = csv_bytes(reference_rows(study))
    seal = services.seal_create(
        study=study, owner=owner, model_name="x", sha256=hashlib.sha256(content).hexdigest()
    )
    assert seal.kind == Kind.MODEL  # the endpoint's default
    revealed = judge(study, "x", content, owner="sealer")
    assert (revealed.status, revealed.seal_id) == (Submission.Status.DONE, seal.pk)
    assert Seal.objects.get(pk=seal.pk).kind == Kind.JUDGE


def test_the_cap_counts_judges_and_models_apart(study):
    Study.objects.filter(pk=study.pk).update(max_variants_per_owner=1)
    study = Study.objects.get(pk=study.pk)
    submit(study, "the model", noisy(study, 1))
    first = judge(study, "the judge", csv_bytes(reference_rows(study)))
    assert first.status == Submission.Status.DONE
    with pytest.raises(
        StudyStateError, match=r"you have submitted 1 judge for this study, its limit per owner \(1\)"
    ):
        judge(study, "another judge", csv_bytes(reference_rows(study, flip=True)))
    with pytest.raises(
        StudyStateError, match=r"you have submitted 1 model for this study, its limit per owner \(1\)"
    ):
        submit(study, "another model", noisy(study, 2))
    Submission.objects.filter(pk=first.pk).update(status=Submission.Status.FAILED)  # failed on our side
    assert judge(study, "the judge", csv_bytes(reference_rows(study))).status == Submission.Status.DONE


def test_an_unrevealed_judge_seal_takes_one_of_the_judges(study):
    Study.objects.filter(pk=study.pk).update(max_variants_per_owner=1)
    study = Study.objects.get(pk=study.pk)
    owner = User.objects.create_user("owner")
    services.seal_create(study=study, owner=owner, model_name="later", sha256="0" * 64, kind=Kind.JUDGE)
    with pytest.raises(StudyStateError, match="you have submitted 1 judge"):
        judge(study, "now", csv_bytes(reference_rows(study)))
    assert submit(study, "a model", noisy(study, 3)).status == Submission.Status.DONE  # models count apart


def test_the_judges_leaderboard_counts_each_owners_judges_only(study):
    submit(study, "m1", noisy(study, 1))
    submit(study, "m2", noisy(study, 2))
    judge(study, "j1", csv_bytes(reference_rows(study)))
    row = leaderboard_for(study=study, kind=Kind.JUDGE)["rows"][0]
    assert (row["model_name"], row["variants"]) == ("j1", 1)

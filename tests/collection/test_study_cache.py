"""The study's settings kept per process (collection/study_cache.py): read once, renewed by any save."""

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from collection import study_cache
from collection.models import Study, Vote
from tests.collection.test_identity import join, next_of, vote
from tests.factories import make_study

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_cache():
    study_cache.forget_all()
    yield
    study_cache.forget_all()


def study_reads(context: CaptureQueriesContext) -> list[str]:
    """Statements that read the study's own row (not the vote's join, which reads one column of it)."""
    return [
        q["sql"]
        for q in context.captured_queries
        if q["sql"].lstrip().upper().startswith("SELECT") and 'FROM "collection_study"' in q["sql"]
    ]


def test_votes_after_the_first_read_the_study_row_no_more():
    study = make_study()
    client = Client()
    join(client, study, "p-1")
    current = next_of(client, study).json()
    reads = []
    for number in range(4):
        with CaptureQueriesContext(connection) as voted:
            answer = vote(client, current["assignment"], ("left", "right")[number % 2])
        assert answer.status_code == 201, answer.content
        reads.append(len(study_reads(voted)))
        current = answer.json()["next"]
    assert reads == [1, 0, 0, 0]
    assert Vote.objects.filter(annotator__participant_id="p-1").count() == 4


def test_a_saved_change_is_seen_by_the_next_vote():
    study = make_study(allow_ties=False)
    client = Client()
    join(client, study, "p-1")
    first = next_of(client, study).json()
    refused = vote(client, first["assignment"], "tie")
    assert refused.status_code == 400 and "does not allow ties" in refused.json()["detail"]

    study.allow_ties = True
    study.save(update_fields=["allow_ties"])  # a new settings_version, as every save gives
    accepted = vote(client, first["assignment"], "tie")
    assert accepted.status_code == 201, accepted.content
    assert accepted.json()["next"]["allow_ties"] is True

    Study.objects.get(pk=study.pk).save()  # any save, from any copy, renews the version
    second = accepted.json()["next"]
    study.refresh_from_db()
    study.allow_ties = False
    study.save()
    again = vote(client, second["assignment"], "tie")
    assert again.status_code == 400


def test_every_save_gives_a_new_version():
    study = make_study(start=False)
    versions = {study.settings_version}
    study.question = "Which pair is closer in meaning?"
    study.save(update_fields=["question"])
    versions.add(Study.objects.values_list("settings_version", flat=True).get(pk=study.pk))
    study.save()
    versions.add(Study.objects.values_list("settings_version", flat=True).get(pk=study.pk))
    assert len(versions) == 3


def test_each_caller_gets_its_own_instance_and_the_copies_are_bounded(monkeypatch):
    studies = [make_study(start=False, tokens=3) for _ in range(4)]
    one = study_cache.study_at_version(studies[0].pk, studies[0].settings_version)
    one.question = "changed in memory only"
    other = study_cache.study_at_version(studies[0].pk, studies[0].settings_version)
    assert other.question == studies[0].question and other is not one

    monkeypatch.setattr(study_cache, "MAX_STUDIES", 2)
    for study in studies:
        assert study_cache.study_at_version(study.pk, study.settings_version).pk == study.pk
    assert list(study_cache._rows) == [studies[2].pk, studies[3].pk]
    assert study_cache.study_at_version(10**9, studies[0].settings_version) is None


def test_another_annotators_assignment_is_404_like_an_unknown_one():
    study = make_study()
    mine, theirs = Client(), Client()
    join(mine, study, "p-1")
    join(theirs, study, "p-2")
    their_assignment = next_of(theirs, study).json()["assignment"]
    next_of(mine, study)
    stolen = vote(mine, their_assignment, "left")
    unknown = vote(mine, their_assignment + 10_000, "left")
    assert (stolen.status_code, unknown.status_code) == (404, 404)
    assert stolen.json()["detail"] == f"assignment {their_assignment} is not one of yours"
    assert not Vote.objects.exists()


def test_a_kept_copy_is_the_row_as_the_orm_loads_it():
    study = make_study(start=False, tokens=3)
    study_cache.study_at_version(study.pk, study.settings_version)  # read: now kept
    kept = study_cache.study_at_version(study.pk, study.settings_version)
    latest = study_cache.latest_study(study.pk)
    loaded = Study.objects.get(pk=study.pk)
    for copy in (kept, latest):
        assert {f.attname: getattr(copy, f.attname) for f in Study._meta.concrete_fields} == {
            f.attname: getattr(loaded, f.attname) for f in Study._meta.concrete_fields
        }
        assert (copy._state.adding, copy._state.db) == (False, loaded._state.db)
        assert copy._state.fields_cache == {}
    assert kept._state is not latest._state
    kept.duplicated_from = loaded  # a related object cached on one copy is not on the next
    assert study_cache.latest_study(study.pk)._state.fields_cache == {}
    kept.duplicated_from = None
    kept.save(update_fields=["question"])  # an instance of the ORM's: saves as one loaded would
    assert Study.objects.get(pk=study.pk).settings_version != study.settings_version


def test_a_kept_copy_runs_studys_init_when_something_listens_to_it():
    from django.db.models.signals import post_init

    study = make_study(start=False, tokens=3)
    study_cache.study_at_version(study.pk, study.settings_version)
    seen = []

    def listener(sender, instance, **kwargs):
        seen.append(instance)

    post_init.connect(listener, sender=Study)
    try:
        copy = study_cache.study_at_version(study.pk, study.settings_version)
    finally:
        post_init.disconnect(listener, sender=Study)
    assert seen == [copy]

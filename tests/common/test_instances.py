"""common.instances.loaded: an instance as Model.from_db builds it, without Model.__init__."""

import pytest
from django.db import connection
from django.db.models.signals import post_init, pre_init
from django.test.utils import CaptureQueriesContext

from collection.models import Annotator, Vote
from common.instances import loaded
from tests.factories import make_study

pytestmark = pytest.mark.django_db


def fields(instance) -> dict:
    return {
        f.attname: instance.__dict__.get(f.attname, "deferred") for f in type(instance)._meta.concrete_fields
    }


def test_an_instance_equals_from_dbs_with_the_same_fields_deferred():
    study = make_study()
    annotator = Annotator.objects.create(study=study, participant_id="p-1")
    values = {"id": annotator.pk, "study_id": study.pk, "excluded_at": None}
    built = loaded(Annotator, connection.alias, values)
    expected = Annotator.from_db(connection.alias, list(values), list(values.values()))
    assert fields(built) == fields(expected)
    assert built.get_deferred_fields() == expected.get_deferred_fields() != set()
    assert (built._state.adding, built._state.db, built._state.fields_cache) == (False, connection.alias, {})
    assert built == expected
    with CaptureQueriesContext(connection) as asked:
        assert built.participant_id == "p-1"  # a deferred field is read when asked for, as from_db's
    assert len(asked.captured_queries) == 1


def test_each_instance_has_its_own_state():
    values = {f.attname: None for f in Vote._meta.concrete_fields} | {"id": 7}
    one, other = loaded(Vote, "default", values), loaded(Vote, "default", values)
    one._state.fields_cache["annotator"] = object()
    one.choice = "left"
    assert other._state.fields_cache == {} and other.choice is None and values["choice"] is None


@pytest.mark.parametrize("signal", [pre_init, post_init])
def test_the_models_init_runs_when_something_listens_to_it(signal):
    seen = []

    def listener(sender, **kwargs):
        seen.append(sender)

    signal.connect(listener, sender=Annotator)
    try:
        built = loaded(Annotator, "default", {"id": 1, "study_id": 2, "excluded_at": None})
    finally:
        signal.disconnect(listener, sender=Annotator)
    assert seen == [Annotator] and built.get_deferred_fields() != set()

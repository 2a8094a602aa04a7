"""Model instances for rows read by raw SQL, built as ``Model.from_db`` builds them, for less.

``Model.from_db`` runs ``Model.__init__``, which sets each field through the model's descriptors and
sends ``pre_init`` and ``post_init``: for the study's fifty-odd fields and the vote's handful, about a
tenth of a judgement's Python in the web process. A model instance is its
attributes in ``__dict__`` and a ``ModelState``; ``loaded`` writes those directly. Fields it is not
given are deferred, as ``from_db`` leaves them: read from the database if asked for.
"""

from __future__ import annotations

from django.db.models import Model, signals
from django.db.models.base import ModelState


def loaded(model: type[Model], db: str, values: dict):
    """An instance of ``model`` as ``model.from_db(db, names, values)`` would build it from ``values``
    ({attname: value}). When something listens to the model's ``pre_init`` or ``post_init``, it is
    built by ``from_db`` itself, so that the listeners run."""
    if signals.pre_init.has_listeners(model) or signals.post_init.has_listeners(model):
        return model.from_db(db, list(values), list(values.values()))
    instance = model.__new__(model)
    instance.__dict__.update(values)
    state = instance._state = ModelState()
    state.adding = False
    state.db = db
    return instance

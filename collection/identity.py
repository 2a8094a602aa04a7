"""Who is voting: the annotator of a request, from a crowd participant id, a login or the session."""

from __future__ import annotations

from collection.models import Annotator, Study
from collection.voting import annotator_for

SESSION_ANNOTATORS = "yardstick.annotators"  # {study id: annotator id} in the browser session


def annotator_from_request(
    request, study: Study, *, create: bool = False, participant_id: str | None = None
) -> Annotator | None:
    """The request's annotator in ``study``, or None if it has none and ``create`` is False.

    A participant id (from the crowd platform's link) wins and is remembered in the session; then the
    annotator remembered in the session; then the logged-in user's. With ``create`` (the consent
    form), a logged-in user without one gets one, and anybody else a new anonymous annotator bound to
    this browser session; without it nothing is created, so a stray request leaves no row behind.
    """
    remembered = request.session.get(SESSION_ANNOTATORS, {})
    annotator = None
    if participant_id:
        annotator = annotator_for(study=study, participant_id=participant_id.strip())
    elif str(study.pk) in remembered:
        annotator = Annotator.objects.filter(pk=remembered[str(study.pk)], study=study).first()
    if annotator is None and request.user.is_authenticated:
        annotator = Annotator.objects.filter(study=study, user=request.user).first()
        if annotator is None and create:
            annotator = annotator_for(study=study, user=request.user)
    if annotator is None and create:
        if request.session.session_key is None:
            request.session.save()
        annotator = annotator_for(study=study, session_key=request.session.session_key)
    if annotator is not None and remembered.get(str(study.pk)) != annotator.pk:
        remembered[str(study.pk)] = annotator.pk
        request.session[SESSION_ANNOTATORS] = remembered
    if annotator is not None:
        annotator.study = study  # the caller's instance: one query less per request
    return annotator

"""Annotator pages: the entry page (instructions and consent) and the voting page.

Server-rendered and complete without JavaScript; ``static/collection/vote.js`` only enhances the voting
page (keys, no reload between comparisons) through the REST API. Every write goes through the services.
"""

from __future__ import annotations

import math
from functools import wraps

from django.conf import settings
from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import get_script_prefix, reverse
from django.utils import translation
from django.utils.translation import gettext
from django.views.decorators.cache import cache_control, never_cache
from django.views.decorators.csrf import ensure_csrf_cookie
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django.views.i18n import JavaScriptCatalog

from collection.crowd import (
    Outcome,
    annotator_platform_record,
    annotator_waited_seconds,
    completion_url,
    finish_reachable,
    platform_parameters,
    study_exit,
    study_expectations,
)
from collection.forms import VoteForm
from collection.identity import annotator_consent, annotator_from_request
from collection.languages import annotator_language, annotator_language_record, language_response
from collection.leaving import annotator_finish, assignment_release, finish_remaining
from collection.models import Study
from collection.selectors import annotator_progress
from collection.signing import SIGNATURE_PARAMETER, signature_valid
from collection.voting import NextReason, comparison_next_for, vote_record_and_next
from common.errors import ServiceError
from common.throttling import AddressThrottle, page_wait_seconds

# Query parameters that carry the crowd platform's participant id: ours, Prolific's, MTurk's.
PARTICIPANT_PARAMETERS = ("participant", "PROLIFIC_PID", "workerId")

# The longest participant id kept (Annotator.participant_id); Prolific's and MTurk's are 24 and 14 long.
MAX_PARTICIPANT_ID_LENGTH = 128

# A client-measured response time beyond a day is a clock glitch, not a measurement.
MAX_CLIENT_RESPONSE_MS = 24 * 60 * 60 * 1000

NOTHING_TEMPLATES = {
    NextReason.QUOTA: "collection/next/quota.html",
    NextReason.BALLOT_CLOSING: "collection/next/ballot_closing.html",
    NextReason.ALL_LEASED: "collection/next/all_leased.html",
    NextReason.NONE_FOR_YOU: "collection/next/none_for_you.html",
    NextReason.FINISHED: "collection/next/finished.html",
    NextReason.NOT_STARTED: "collection/next/not_started.html",
    NextReason.EXCLUDED: "collection/next/excluded.html",
    NextReason.ANNOTATOR_FINISHED: "collection/next/annotator_finished.html",
}


def _participant_id(data) -> str | None:
    for name in PARTICIPANT_PARAMETERS:
        value = data.get(name, "").strip()
        if value:
            return value
    return None


def in_annotator_language(view):
    """The annotator's page of the study ``slug`` in their language (``collection.languages``): the view
    gets the study with its texts in that language (a copy, never saved) and the language chosen."""

    @wraps(view)
    def with_language(request, slug):
        study = get_object_or_404(Study, slug=slug)
        language = annotator_language(request, study)
        with translation.override(language.shown):
            response = view(request, language.study_shown(study), language)
        return language_response(response, language)

    return with_language


def _participant_id_problem(participant_id: str | None) -> str:
    if participant_id and not participant_id.isprintable():
        return gettext(
            "This link is not valid: its participant id holds control characters, which no crowd platform "
            "sends. Open the link you were given, unchanged."
        )
    if participant_id and len(participant_id) > MAX_PARTICIPANT_ID_LENGTH:
        return gettext(
            "This link is not valid: its participant id is %(length)s characters long, and crowd platforms' "
            "ids are at most %(maximum)s. Open the link you were given, unchanged."
        ) % {"length": f"{len(participant_id):,}", "maximum": MAX_PARTICIPANT_ID_LENGTH}
    return ""


def _client_response_ms(value: str | None) -> int | None:
    try:
        milliseconds = int(value or "")
    except ValueError:
        return None
    return milliseconds if 0 < milliseconds <= MAX_CLIENT_RESPONSE_MS else None


def _exit_context(study, annotator, outcome: str) -> dict:
    """What ``_completion.html`` shows of a participant's exit with ``outcome``."""
    leaving = study_exit(study=study, annotator=annotator, outcome=outcome)
    return {"exit": leaving, "completion_url": completion_url(study, leaving.code)}


def _entry_page(
    request,
    study,
    annotator,
    *,
    participant_id=None,
    signature="",
    platform=None,
    error="",
    link_error="",
    status=200,
):
    voted = annotator is not None and annotator_progress(annotator=annotator).votes_total > 0
    context = {
        "study": study,
        "annotator": annotator,
        "participant_id": participant_id,
        "signature": signature,
        "platform": sorted((platform or {}).items()),  # carried through the consent form
        "voted": voted,
        "error": error,
        "link_error": link_error,
    }
    if not link_error and annotator is not None and annotator.excluded_at is not None:
        # An excluded annotator leaves with the screened-out code, whatever the study's state.
        context |= _exit_context(study, annotator, Outcome.SCREENED_OUT) | {"excluded": True}
    elif not link_error and annotator is not None and annotator.finished_at is not None:
        # One who pressed Finish comes back to their completed exit.
        context |= _exit_context(study, annotator, Outcome.COMPLETED) | {"finished_early": True}
    elif not link_error and study.status == Study.Status.FINISHED and annotator is not None:
        # A participant who arrives when nothing is left leaves with the no-work code.
        context |= _exit_context(study, annotator, Outcome.COMPLETED if voted else Outcome.NO_WORK)
    if not link_error and study.status == Study.Status.RUNNING and not (annotator and annotator.consented_at):
        context["expectations"] = study_expectations(study=study)
    return render(request, "collection/entry.html", context, status=status)


def _link_problem(request, study, participant_id: str | None, signature: str) -> str:
    """Why a study that requires signed links refuses this link ("" when it accepts it)."""
    if not study.require_signed_links:
        return ""
    if participant_id:
        if signature_valid(study.participant_secret, participant_id, signature):
            return ""
        return gettext(
            "This link is not valid: its signature does not match the participant id. Open the personal "
            "link you were given, unchanged."
        )
    if request.user.is_authenticated or annotator_from_request(request, study) is not None:
        return ""
    return gettext(
        "This study is open only through the personal link you were given: it carries your participant "
        "id and its signature."
    )


@never_cache
@require_http_methods(["GET", "POST"])
@in_annotator_language
def entry(request, study, language):
    """The study's link for annotators: instructions and consent, or why the study cannot be joined."""
    if request.method == "POST":
        return _consent(request, study, language)
    participant_id, signature, platform, refused = _participant_of_link(request, study, request.GET)
    if refused:
        return refused
    annotator = annotator_from_request(request, study, participant_id=participant_id)
    if annotator is not None and platform:
        annotator_platform_record(annotator=annotator, parameters=platform)
    return _entry_page(
        request, study, annotator, participant_id=participant_id, signature=signature, platform=platform
    )


def _participant_of_link(request, study, data):
    """(participant id, signature, the platform's parameters, None), or the entry page that refuses a
    bad link (400 or 403) in place of None."""
    participant_id = _participant_id(data)
    signature = data.get(SIGNATURE_PARAMETER, "")
    platform, bad_parameter = platform_parameters(data)
    if malformed := _participant_id_problem(participant_id) or bad_parameter:
        refusal = _entry_page(request, study, None, link_error=malformed, status=400)
        return participant_id, signature, platform, refusal
    if problem := _link_problem(request, study, participant_id, signature):
        refusal = _entry_page(request, study, None, link_error=problem, status=403)
        return participant_id, signature, platform, refusal
    return participant_id, signature, platform, None


def _consent(request, study, language):
    if study.status != Study.Status.RUNNING:
        return redirect(study)  # the entry page says why nobody can join now
    wait = page_wait_seconds(request, "join", throttles=(AddressThrottle,))
    if wait is not None:
        return _too_fast_page(request, study, wait, next_url=study.get_absolute_url())
    participant_id, signature, platform, refused = _participant_of_link(request, study, request.POST)
    if refused:
        return refused
    if request.POST.get("consent") != "yes":
        annotator = annotator_from_request(request, study, participant_id=participant_id)
        error = gettext("Tick the box to confirm that you agree to take part, then press Start.")
        return _entry_page(
            request,
            study,
            annotator,
            participant_id=participant_id,
            signature=signature,
            platform=platform,
            error=error,
            status=400,
        )
    annotator = annotator_from_request(request, study, create=True, participant_id=participant_id)
    annotator_platform_record(annotator=annotator, parameters=platform)
    annotator_consent(annotator=annotator)
    annotator_language_record(annotator=annotator, language=language.asked)
    return redirect("collection:vote", slug=study.slug)


@never_cache
@ensure_csrf_cookie  # vote.js sends the cookie's token with its API calls
@require_http_methods(["GET", "POST"])
@in_annotator_language
def vote(request, study, language):
    """The next comparison (GET), or a vote on the current one and then the next comparison (POST)."""
    annotator = annotator_from_request(request, study)
    if annotator is None or annotator.consented_at is None:
        if study.status == Study.Status.RUNNING:
            messages.info(
                request, gettext("Please read the instructions and agree to take part before voting.")
            )
        return redirect(study)
    wait = page_wait_seconds(request, "vote" if request.method == "POST" else "next")
    if wait is not None:
        return _too_fast_page(request, study, wait, next_url=reverse("collection:vote", args=[study.slug]))
    if request.method == "POST" and annotator.excluded_at is None and annotator.finished_at is None:
        return _vote_post(request, study, language, annotator)
    return _next_page(request, study, language, annotator, comparison_next_for(annotator=annotator))


def _leaving_annotator(request, study):
    """The consented annotator of a Finish or a release, or None."""
    annotator = annotator_from_request(request, study)
    return annotator if annotator is not None and annotator.consented_at is not None else None


@never_cache
@require_POST
@in_annotator_language
def finish(request, study, language):
    """Finish: the annotator ends their session with the completed code, once they have made the study's
    minimum of judgements (before it, 409 with how many remain), and sees their exit."""
    annotator = _leaving_annotator(request, study)
    if annotator is None:
        return redirect(study)
    wait = page_wait_seconds(request, "next")
    if wait is not None:
        return _too_fast_page(request, study, wait, next_url=reverse("collection:vote", args=[study.slug]))
    try:
        annotator_finish(annotator=annotator)
    except ServiceError as error:
        return _vote_error_page(request, study, error, heading=gettext("You cannot finish yet"))
    return redirect("collection:vote", slug=study.slug)


# The voting page's messages in one language, the same for everyone: any cache may keep them an hour (a
# deployment with new translations reaches every browser within it).
_catalog = cache_control(public=True, max_age=60 * 60)(JavaScriptCatalog.as_view(domain="djangojs"))


@require_GET
def catalog(request, language):
    """The JavaScript catalog (Django's ``JavaScriptCatalog``: ``gettext`` and friends) of ``language``,
    named in its address so that the page asks for the one it is shown in; 404 for a language not offered."""
    if language not in dict(settings.LANGUAGES):
        raise Http404(f"no catalog for {language!r}")
    with translation.override(language):
        return _catalog(request)


@never_cache
@require_POST
def release(request, slug):
    """The voting page was left (vote.js sends this on ``pagehide``): give back the annotator's running
    lease on the posted assignment at once. 204 whether it was running or not (voted, lapsed, released
    before), 404 when it is not theirs, 400 for a malformed id, 403 without consent."""
    study = get_object_or_404(Study, slug=slug)
    annotator = _leaving_annotator(request, study)
    if annotator is None:
        refusal = "you hold no comparison of this study: open the study link and give your consent first"
        return HttpResponse(refusal, status=403, content_type="text/plain; charset=utf-8")
    form = VoteForm(request.POST)
    if not form.is_valid():
        return HttpResponse(form.problem(), status=400, content_type="text/plain; charset=utf-8")
    try:
        assignment_release(annotator=annotator, assignment_id=form.cleaned_data["assignment"])
    except ServiceError as error:
        return HttpResponse(error.message, status=error.status, content_type="text/plain; charset=utf-8")
    return HttpResponse(status=204)


def _next_page(request, study, language, annotator, result):
    """The voting page of the annotator's next comparison, or the page that says why there is none."""
    if result.assignment is None:
        progress = result.progress or annotator_progress(annotator=annotator)
        return _nothing_page(request, study, annotator, result, progress)
    context = {
        "study": study,
        "assignment": result.assignment,
        "items": result.sides,
        "question": language.texts.question_shown(result.instruction),
        "progress": result.progress,
        "participant_id": annotator.participant_id,  # the consent text that the instructions repeat
        "api_vote_url": f"{get_script_prefix()}api/votes/",
        "api_next_url": f"{get_script_prefix()}api/studies/{study.slug}/next/",
        "finish_remaining": finish_remaining(study=study, votes=result.progress.votes_total),
        "finish_reachable": finish_reachable(study=study),
    }
    return render(request, "collection/vote.html", context)


def _vote_post(request, study, language, annotator):
    """Record the vote and answer with the next comparison's page: one round trip per judgement.

    Not post/redirect/get: sending the form again (reload, back) records nothing twice, since a vote on
    an assignment already voted returns the recorded one, and shows the comparison the annotator holds.
    When there is no next comparison the answer redirects to the voting page, which says why and checks
    again by itself (its refresh must not send the form again).
    """
    form = VoteForm(request.POST)
    if not form.is_valid():
        return _vote_error_page(request, study, ServiceError(form.problem()))
    try:
        _vote, _created, result = vote_record_and_next(
            annotator=annotator,
            assignment_id=form.cleaned_data["assignment"],
            choice=request.POST.get("choice", ""),
            client_response_ms=_client_response_ms(request.POST.get("client_ms")),
        )
    except ServiceError as error:
        return _vote_error_page(request, study, error)
    if result.assignment is None:
        return redirect("collection:vote", slug=study.slug)
    return _next_page(request, study, language, annotator, result)


def _too_fast_page(request, study, wait: int, *, next_url: str):
    context = {"study": study, "retry_after": wait, "next_url": next_url}
    response = render(request, "collection/too_fast.html", context, status=429)
    response["Retry-After"] = str(wait)
    return response


def _vote_error_page(request, study, error: ServiceError, heading: str | None = None):
    heading = heading or gettext("That vote was not recorded")
    context = {"study": study, "message": error.message, "heading": heading}
    return render(request, "collection/vote_error.html", context, status=error.status)


# Reasons to wait for work: after the study's max_wait_seconds, the page offers the no-work exit.
WAITING_REASONS = (NextReason.BALLOT_CLOSING, NextReason.ALL_LEASED)


def _nothing_page(request, study, annotator, result, progress):
    """Why there is no comparison, with the participant's exit and code where they may leave.

    Their quota done, or all pairs left judged by them: the completion code (the no-work code if they
    never voted). Waiting for work (a ballot closing, every comparison taken): the page checks again by
    itself, at the latest when the wait reaches ``max_wait_seconds``; from then on it offers the exit
    with the no-work code and stops reloading, so that the code does not vanish while being copied.
    A participant who voted and made the study's minimum is offered Finish (the completed code) instead.
    Pressed Finish: the completed exit, worded as such.
    """
    voted = progress.votes_total > 0
    retry = result.retry_after_seconds
    context = {"study": study, "progress": progress, "reason": result.reason, "voted": voted}
    if result.reason in WAITING_REASONS:
        waited = annotator_waited_seconds(annotator=annotator)
        remaining = context["finish_remaining"] = finish_remaining(study=study, votes=progress.votes_total)
        may_finish = voted and not remaining  # Finish gives the completed code: no no-work exit beside it
        if waited >= study.max_wait_seconds and not may_finish:
            context |= _exit_context(study, annotator, Outcome.NO_WORK)
            retry = None
        elif retry and waited < study.max_wait_seconds:
            retry = min(retry, max(1, math.ceil(study.max_wait_seconds - waited)))
    elif result.reason == NextReason.EXCLUDED:
        context |= _exit_context(study, annotator, Outcome.SCREENED_OUT)
    elif result.reason == NextReason.ANNOTATOR_FINISHED:
        context |= _exit_context(study, annotator, Outcome.COMPLETED) | {"finished_early": True}
    elif result.reason != NextReason.NOT_STARTED:
        context |= _exit_context(study, annotator, Outcome.COMPLETED if voted else Outcome.NO_WORK)
    context["retry_after_seconds"] = retry
    context["retry_after_minutes"] = round(retry / 60) if retry else None  # as {% widthratio %} rounds
    # A vote sent after the exclusion (403) or after Finish (409) is refused with the same page; asking
    # for work is not an error.
    status = 200
    if request.method == "POST":
        status = {NextReason.EXCLUDED: 403, NextReason.ANNOTATOR_FINISHED: 409}.get(result.reason, 200)
    response = render(request, NOTHING_TEMPLATES[result.reason], context, status=status)
    if retry:
        response["Retry-After"] = str(retry)
    return response

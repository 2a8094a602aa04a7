"""The study's own pages in the admin: upload tokens, generate or upload items, start, close the open
ballot now, duplicate. Each page shows a form or a confirmation, calls one service and says what it did
or why it could not, in words a researcher can act on."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponseRedirect
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from collection.admin.display import counted, sentence
from collection.checks import checks_import
from collection.forms import (
    ChecksUploadForm,
    DuplicateForm,
    ItemsGenerateForm,
    PairsUploadForm,
    TokensUploadForm,
)
from collection.jobs import items_generate_start
from collection.lifecycle import study_close_current_ballot, study_start
from collection.models import Ballot, Study, StudyJob
from collection.pools import items_import_pairs, pools_editable, tokens_import
from collection.studies import study_duplicate
from common.errors import ServiceError


class StudyPages:
    """The pages of ``StudyAdmin`` beside its list and change form, at ``<id>/<name>/``."""

    def study_views(self) -> list[tuple[str, object]]:
        """The study's own pages (name, view), at ``<id>/<name>/`` and named ``collection_study_<name>``."""
        return [
            ("tokens-upload", self.tokens_upload_view),
            ("items-generate", self.items_generate_view),
            ("items-upload", self.items_upload_view),
            ("checks-upload", self.checks_upload_view),
            ("start", self.start_view),
            ("close-ballot", self.close_ballot_view),
            ("duplicate", self.duplicate_view),
            ("job", self.job_view),
        ]

    def get_urls(self):
        custom = [
            path(
                f"<path:object_id>/{name}/",
                self.admin_site.admin_view(view),
                name=f"collection_study_{name.replace('-', '_')}",
            )
            for name, view in self.study_views()
        ]
        # Before the defaults: their "<path:object_id>/" would swallow these paths.
        return custom + super().get_urls()

    def _study_or_404(self, request, object_id, *, change: bool = True) -> Study:
        study = self.get_object(request, unquote(object_id))
        if study is None:
            raise Http404(f"There is no study with the id {object_id!r}.")
        allowed = self.has_change_permission if change else self.has_view_permission
        if not allowed(request, study):
            raise PermissionDenied
        return study

    def _change_url(self, study: Study, anchor: str = "") -> str:
        return reverse("admin:collection_study_change", args=[study.pk]) + anchor

    def _render(self, request, study: Study, template: str, context: dict, status: int = 200):
        page = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "original": study,
            "study": study,
            "change_url": self._change_url(study),
            "has_view_permission": self.has_view_permission(request, study),
            **context,
        }
        return TemplateResponse(request, template, page, status=status)

    def _render_form(self, request, study, form, *, title, intro, submit, error=None, extra=None):
        status = 200
        if error is not None:
            status = error.status
        elif form.is_bound and form.errors:
            status = 400
        context = {
            "title": title,
            "intro": intro,
            "form": form,
            "submit_label": submit,
            "error_message": sentence(error.message) if error is not None else None,
            "error_lines": error.errors if error is not None else [],
            "multipart": any(f.widget.needs_multipart_form for f in form.fields.values()),
            **(extra or {}),
        }
        return self._render(request, study, "admin/collection/study/action_form.html", context, status)

    def _refuse_unless_draft(self, request, study: Study, what: str) -> HttpResponseRedirect | None:
        if pools_editable(study):  # the services' rule; the words here are the admin's
            return None
        self.message_user(
            request,
            f"“{study}” is {study.status}: its {what} cannot change any more. "
            "Duplicate it to start a new draft with the same pools and plan.",
            messages.ERROR,
        )
        return redirect(self._change_url(study))

    def tokens_upload_view(self, request, object_id):
        study = self._study_or_404(request, object_id)
        if refused := self._refuse_unless_draft(request, study, "tokens"):
            return refused
        form = TokensUploadForm(request.POST or None, request.FILES or None)
        if request.method == "POST" and form.is_valid():
            replace = form.cleaned_data["mode"] == "replace"
            try:
                report = tokens_import(study=study, data=form.cleaned_data["file"], replace=replace)
            except ServiceError as exc:
                return self._tokens_form(request, study, form, exc)
            if replace:
                text = (
                    f"Replaced the pool of “{study}”: removed {counted(report.tokens_removed, 'token')} and "
                    f"{counted(report.items_removed, 'item')}, imported "
                    f"{counted(report.tokens_created, 'token')} in "
                    f"{counted(report.areas_created, 'semantic area')}. Next: generate the items."
                )
            else:
                text = (
                    f"Imported {counted(report.tokens_created, 'token')} into “{study}” "
                    f"({counted(report.areas_created, 'new semantic area')}). Next: generate the items."
                )
            self.message_user(request, text, messages.SUCCESS)
            for warning in report.warnings:
                self.message_user(request, sentence(warning), messages.WARNING)
            return redirect(self._change_url(study))
        return self._tokens_form(request, study, form)

    def _tokens_form(self, request, study, form, error=None):
        return self._render_form(
            request,
            study,
            form,
            title=f"Upload tokens into “{study}”",
            intro=(
                "Tokens are grouped by semantic area; items pair two tokens of the same area (§2.1, §2.2). "
                "The file is imported whole or not at all: any bad line refuses it, with every problem "
                "listed by line number, and the study's pool stays as it was."
            ),
            submit="Upload tokens",
            error=error,
        )

    def items_generate_view(self, request, object_id):
        study = self._study_or_404(request, object_id)
        if refused := self._refuse_unless_draft(request, study, "items"):
            return refused
        form = ItemsGenerateForm(request.POST or None)
        error = None
        if request.method == "POST" and form.is_valid():
            try:
                outcome = items_generate_start(
                    study=study, max_per_area=form.cleaned_data["max_per_area"], user=request.user
                )
            except ServiceError as exc:
                error = exc
            else:
                if isinstance(outcome, StudyJob):
                    self.message_user(
                        request,
                        f"Generating {counted(outcome.total, 'item')} of “{study}” in the background (job "
                        f"{outcome.pk}): the Pools panel shows its progress; reload the page to follow it.",
                        messages.SUCCESS,
                    )
                    return redirect(self._change_url(study, "#pools"))
                self.message_user(
                    request,
                    f"Generated {counted(outcome.items_created, 'item')} in “{study}”.",
                    messages.SUCCESS,
                )
                for warning in outcome.warnings:
                    self.message_user(request, sentence(warning), messages.WARNING)
                return redirect(self._change_url(study, "#plan"))
        current = study.items.count()
        return self._render_form(
            request,
            study,
            form,
            title=f"Generate the items of “{study}”",
            intro=(
                f"Every pair of two distinct tokens of the same semantic area becomes an item (§2.2). "
                f"The study has {counted(study.tokens.count(), 'token')} in "
                f"{counted(study.areas.count(), 'semantic area')}"
                + (f"; its {counted(current, 'current item')} will be replaced." if current else ".")
            ),
            submit="Generate items",
            error=error,
        )

    def items_upload_view(self, request, object_id):
        study = self._study_or_404(request, object_id)
        if refused := self._refuse_unless_draft(request, study, "items"):
            return refused
        form = PairsUploadForm(request.POST or None, request.FILES or None)
        error = None
        if request.method == "POST" and form.is_valid():
            try:
                report = items_import_pairs(study=study, data=form.cleaned_data["file"])
            except ServiceError as exc:
                error = exc
            else:
                replaced = (
                    f", replacing {counted(report.items_removed, 'item')}" if report.items_removed else ""
                )
                self.message_user(
                    request,
                    f"Imported {counted(report.items_created, 'item')} into “{study}”{replaced}.",
                    messages.SUCCESS,
                )
                for warning in report.warnings:
                    self.message_user(request, sentence(warning), messages.WARNING)
                return redirect(self._change_url(study, "#plan"))
        return self._render_form(
            request,
            study,
            form,
            title=f"Upload the items of “{study}” as explicit pairs",
            intro=(
                "Instead of all pairs within each area, give the items one by one. Both tokens of a pair "
                "must have been uploaded already and belong to the same semantic area."
            ),
            submit="Upload pairs",
            error=error,
        )

    def checks_upload_view(self, request, object_id):
        study = self._study_or_404(request, object_id)  # in any state: a check is never a vote
        form = ChecksUploadForm(request.POST or None, request.FILES or None)
        error = None
        if request.method == "POST" and form.is_valid():
            try:
                added = checks_import(study=study, data=form.cleaned_data["file"])
            except ServiceError as exc:
                error = exc
            else:
                self.message_user(
                    request, f"Imported {counted(added, 'check')} into “{study}”.", messages.SUCCESS
                )
                return redirect(self._change_url(study, "#checks-group"))
        return self._render_form(
            request,
            study,
            form,
            title=f"Upload checks into “{study}”",
            intro=(
                "Gold comparisons and instructed-response checks, added to the study's checks. The file is "
                "imported whole or not at all: any bad line refuses it, with every problem listed by line "
                "number. In a study ranked per area, a gold comparison pairs two items of one area."
            ),
            submit="Upload checks",
            error=error,
        )

    def start_view(self, request, object_id):
        study = self._study_or_404(request, object_id)
        if request.method == "POST":
            self._start(request, study)
            return redirect(self._change_url(study))
        if not study.is_draft:
            self.message_user(request, f"“{study}” is already {study.status}.", messages.ERROR)
            return redirect(self._change_url(study))
        return self._render(
            request,
            study,
            "admin/collection/study/confirm_start.html",
            {"title": f"Start “{study}”?", **self._plan_context(study)},
        )

    def close_ballot_view(self, request, object_id):
        study = self._study_or_404(request, object_id)
        if request.method == "POST":
            self._close_current_ballot(request, study)
            return redirect(self._change_url(study))
        ballot = study.ballots.filter(status=Ballot.Status.OPEN).first()
        if ballot is None:
            self.message_user(
                request, f"“{study}” has no open ballot to close (it is {study.status}).", messages.ERROR
            )
            return redirect(self._change_url(study))
        return self._render(
            request,
            study,
            "admin/collection/study/confirm_close.html",
            {
                "title": f"Close ballot {ballot.number} of “{study}” now?",
                "ballot": ballot,
                "is_last": ballot.number >= study.ballot_count,
                "unvoted": counted(ballot.comparison_count - ballot.votes_recorded, "comparison"),
                "votes": f"{ballot.votes_recorded:,}",
                "comparisons": counted(ballot.comparison_count, "comparison"),
            },
        )

    def job_view(self, request, object_id):
        """The study's job line alone, for the page's script to refresh while the job runs."""
        study = self._study_or_404(request, object_id, change=False)
        return self._render(
            request, study, "admin/collection/study/_job.html", self._job_context(study, latest=True)
        )

    def duplicate_view(self, request, object_id):
        study = self._study_or_404(request, object_id)
        if not self.has_add_permission(request):
            raise PermissionDenied
        form = DuplicateForm(request.POST or None, study=study)
        if request.method == "POST" and form.is_valid():
            copy = self._duplicate(request, study, **form.cleaned_data)
            return redirect(self._change_url(copy))
        return self._render_form(
            request,
            study,
            form,
            title=f"Duplicate “{study}”",
            intro=(
                "The copy is a new draft with the same semantic areas, tokens, items (in the same order) and "
                "plan, and no ballots or votes: the same instrument, run again with other annotators."
            ),
            submit="Duplicate",
        )

    # --- the services, as used by the buttons and the list's actions

    def _start(self, request, study: Study) -> None:
        try:
            ballot = study_start(study=study)
        except ServiceError as exc:
            self.message_user(request, f"“{study}” was not started. {sentence(exc.message)}", messages.ERROR)
            return
        entry = study.get_absolute_url()
        self.message_user(
            request,
            format_html(
                "“{}” has started: ballot 1 of {} is open with {} and {}. Annotators vote at "
                '<a href="{}">{}</a>.',
                study,
                study.ballot_count,
                counted(ballot.items.count(), "item"),
                counted(ballot.comparison_count, "comparison"),
                entry,
                request.build_absolute_uri(entry),
            ),
            messages.SUCCESS,
        )

    def _close_current_ballot(self, request, study: Study) -> None:
        try:
            ballot = study_close_current_ballot(study=study)
        except ServiceError as exc:
            self.message_user(
                request, f"Nothing to close in “{study}”. {sentence(exc.message)}", messages.ERROR
            )
            return
        ballot.refresh_from_db()
        if ballot.status == Ballot.Status.OPEN:  # a real worker takes the task after this request
            self.message_user(
                request,
                f"Ballot {ballot.number} of “{study}” is closing: the task is queued and the next ballot "
                "opens when it is done.",
                messages.SUCCESS,
            )
            return
        done = (
            f"Ballot {ballot.number} of “{study}” is closed with {ballot.votes_recorded:,} of "
            f"{counted(ballot.comparison_count, 'comparison')} voted"
        )
        following = study.ballots.filter(number=ballot.number + 1).first()
        if following is not None:
            text = f"{done}; ballot {following.number} is open with {counted(following.comparison_count, 'comparison')}."
        else:
            text = f"{done}; the study is finished with its final ranking."
        self.message_user(request, text, messages.SUCCESS)

    def _duplicate(self, request, study: Study, name: str | None = None, slug: str | None = None) -> Study:
        copy = study_duplicate(study=study, name=name, slug=slug, user=request.user)
        self.message_user(
            request,
            format_html(
                'Created <a href="{}">{}</a>, a draft copy of “{}” with {}, the same plan and no votes.',
                self._change_url(copy),
                copy,
                study,
                counted(copy.items.count(), "item"),
            ),
            messages.SUCCESS,
        )
        return copy

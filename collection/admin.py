"""The researchers' admin: studies with their plan, pools and lifecycle actions.

Every write goes through the services (``collection.studies``, ``pools``, ``jobs``, ``lifecycle``) and
every panel reads through the selectors; this module validates forms, calls one service, turns its
``ServiceError`` into a message a person can act on, and lays the figures out for the templates.
Votes, ballots and pools are shown read-only: they change only through the protocol. The scoring app
extends the study's page with the simulations of its plan (``scoring.admin``).
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db.models import Count
from django.http import Http404, HttpResponseRedirect
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from collection.forms import (
    DuplicateForm,
    ItemsGenerateForm,
    PairsUploadForm,
    StudyAdminForm,
    TokensUploadForm,
)
from collection.jobs import items_generate_start, study_job_done_count
from collection.lifecycle import study_close_current_ballot, study_start
from collection.models import Annotator, Ballot, Item, SemanticArea, Study, StudyChange, StudyJob, Token, Vote
from collection.pools import items_import_pairs, pools_editable, tokens_import
from collection.selectors import (
    areas_with_totals,
    studies_with_progress,
    study_job_shown,
    study_pools,
    study_progress,
)
from collection.studies import (
    STUDY_SETTINGS,
    study_create,
    study_deletable,
    study_delete,
    study_duplicate,
    study_plan,
    study_settings_frozen,
    study_update,
)
from common.errors import ServiceError
from scoring.plan import BUDGET_RULE, budget_derivation

admin.site.site_header = "Yardstick"
admin.site.site_title = "Yardstick admin"
admin.site.index_title = "Studies, pools, votes and scores"

RECORD_FIELDS = ("status", "created_by", "created_at", "started_at", "finished_at", "duplicated_from")


def counted(number: int, noun: str, plural: str | None = None) -> str:
    """ "1 item", "1,234 items"."""
    return f"{number:,} {noun if number == 1 else plural or noun + 's'}"


def sentence(text: str) -> str:
    """A service's message as a sentence: capitalised, with a final full stop."""
    text = text.strip()
    text = text[:1].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else text + "."


def _progress_bar(done: int, total: int) -> str:
    percent = round(100 * done / total) if total else 0
    return format_html('<progress value="{}" max="{}">{}%</progress>', done, total or 1, percent)


class ReadOnlyAdmin(admin.ModelAdmin):
    """Lists and detail pages only: these rows change through the protocol, never by hand."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class AreaFilter(admin.SimpleListFilter):
    """Semantic areas, limited to the study chosen in the study filter (area names repeat across studies)."""

    title = "semantic area"
    parameter_name = "area"

    def lookups(self, request, model_admin):
        areas = SemanticArea.objects.select_related("study").order_by("study__name", "name")
        study_id = request.GET.get("study__id__exact", "")
        if study_id.isdigit():
            return [(str(area.pk), area.name) for area in areas.filter(study_id=study_id)]
        return [(str(area.pk), f"{area.name} ({area.study.name})") for area in areas]

    def queryset(self, request, queryset):
        value = self.value()
        if value and value.isdigit():
            return queryset.filter(area_id=value)
        return queryset


# --- studies -------------------------------------------------------------------------------------


@admin.register(Study)
class StudyAdmin(admin.ModelAdmin):
    form = StudyAdminForm
    change_form_template = "admin/collection/study/change_form.html"
    list_display = ("name", "slug", "status", "item_count", "current_ballot", "created_at")
    list_filter = ("status", "allow_ties", "created_at")
    search_fields = ("name", "slug", "question")
    save_on_top = True
    view_on_site = False  # the panel links the annotators' page, the results and the exports
    actions = ("start_studies", "close_current_ballots", "duplicate_studies")

    # --- lists and forms

    def get_queryset(self, request):
        return studies_with_progress(super().get_queryset(request))

    @admin.display(description="items", ordering="item_total")
    def item_count(self, study: Study) -> str:
        return f"{study.item_total:,}"

    @admin.display(description="current ballot")
    def current_ballot(self, study: Study) -> str:
        if study.open_ballot_number is None:
            if study.status == Study.Status.RUNNING:
                return "closing a ballot"
            return "not started" if study.is_draft else "finished"
        return format_html(
            "{} ballot {} of {}: {} of {} votes",
            _progress_bar(study.open_ballot_votes, study.open_ballot_comparisons),
            study.open_ballot_number,
            study.ballot_count,
            f"{study.open_ballot_votes:,}",
            f"{study.open_ballot_comparisons:,}",
        )

    def get_fieldsets(self, request, obj=None):
        fieldsets = [
            (
                "Question and instructions",
                {"fields": ("name", "slug", "question", "instructions")},
            ),
            (
                "Plan",
                {
                    "fields": (
                        ("ballot_count", "keep_fraction"),
                        ("appearances", "comparison_budget"),
                        "seconds_per_comparison",
                        "seed",
                    ),
                    "description": (
                        "n_b ballots; after each, the fraction α of the items with the best scores goes on to "
                        "the next (Eq. 2). Give M, the appearances of every item in every ballot, or a "
                        f"comparison budget from which M is derived: {BUDGET_RULE}. "
                        "The plan is frozen when the study starts."
                    ),
                },
            ),
            (
                "Annotators",
                {
                    "fields": (
                        "allow_ties",
                        "lease_seconds",
                        "votes_per_annotator_per_ballot",
                        "ballot_deadline_hours",
                        "completion_redirect_url",
                        "completion_code",
                        "require_signed_links",
                    )
                },
            ),
            ("Evaluation of models", {"fields": ("minimum_coverage", "relevant_top_k")}),
        ]
        if obj is not None:
            fieldsets.append(("Record", {"fields": RECORD_FIELDS}))
        return fieldsets

    def get_readonly_fields(self, request, obj=None):
        # What the study's state freezes, by the services' rules (the API refuses the same with 409).
        frozen = study_settings_frozen(status=obj.status) if obj is not None else ()
        return RECORD_FIELDS + frozen

    def get_prepopulated_fields(self, request, obj=None):
        return {"slug": ("name",)} if obj is None else {}

    def save_model(self, request, obj, form, change):
        # Through the services: they check the state on the locked row and record a started study's changes.
        if change:
            changes = {
                name: form.cleaned_data[name] for name in form.changed_data if name in form.cleaned_data
            }
            saved = study_update(
                study=obj, changes=changes, user=request.user, channel=StudyChange.Channel.ADMIN
            )
        else:
            values = {name: form.cleaned_data[name] for name in form.fields if name in form.cleaned_data}
            saved = study_create(values=values, user=request.user)
        obj.pk = saved.pk
        obj.refresh_from_db()
        obj._state.adding = False

    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        try:
            return super().changeform_view(request, object_id, form_url, extra_context)
        except ServiceError as exc:  # the study changed state between the form's check and the save
            self.message_user(request, f"Nothing was saved. {sentence(exc.message)}", messages.ERROR)
            return redirect(request.get_full_path())

    # --- deletion: drafts only

    def delete_model(self, request, obj):
        study_delete(study=obj)

    def delete_view(self, request, object_id, extra_context=None):
        try:
            return super().delete_view(request, object_id, extra_context)
        except ServiceError as exc:  # started between the confirmation page and the deletion
            self.message_user(request, f"Nothing was deleted. {sentence(exc.message)}", messages.ERROR)
            return redirect(reverse("admin:collection_study_change", args=[unquote(object_id)]))

    def has_delete_permission(self, request, obj=None):
        return super().has_delete_permission(request, obj) and (obj is None or study_deletable(obj))

    def get_actions(self, request):
        actions = super().get_actions(request)
        # The bulk delete would not ask whether a study is a draft; a draft is deleted from its own page.
        actions.pop("delete_selected", None)
        return actions

    def get_deleted_objects(self, objs, request):
        # A draft's areas, tokens and items go with it; their admins refuse deletion one by one
        # (it would break the item numbering), which must not block deleting the whole study.
        deleted, model_count, _perms_needed, protected = super().get_deleted_objects(objs, request)
        return deleted, model_count, set(), protected

    # --- the change page

    def change_view(self, request, object_id, form_url="", extra_context=None):
        study = self.get_object(request, unquote(object_id))
        context = dict(extra_context or {})
        if study is not None:
            context.update(self._study_panels(request, study))
        return super().change_view(request, object_id, form_url, extra_context=context)

    def _study_panels(self, request, study: Study) -> dict:
        """The panels of the study's page: plan, ballots, pools, links and changes."""
        context = {"study": study, **self._plan_context(study), **study_pools(study=study)}
        progress = study_progress(study=study)
        context["ballots"] = progress
        context["open_ballot"] = next((b for b in progress if b["status"] == Ballot.Status.OPEN), None)
        job = study_job_shown(study=study)
        if job is not None:
            done = study_job_done_count(job)
            context["job"] = {
                "job": job,
                "done": done,
                "percent": round(100 * done / job.total) if job.total else 0,
            }
        entry = study.get_absolute_url()
        context["entry_url"] = request.build_absolute_uri(entry)
        context.update(self._changes_context(study))
        return context

    @staticmethod
    def _changes_context(study: Study) -> dict:
        """The audit trail of a started study, and what its state freezes, with the reasons."""
        frozen: dict[str, list[str]] = {}
        for name in study_settings_frozen(status=study.status):
            frozen.setdefault(STUDY_SETTINGS[name].frozen_because, []).append(STUDY_SETTINGS[name].label)
        return {
            "study_changes": [] if study.is_draft else list(study.changes.all()),
            "frozen_settings": [(", ".join(labels), reason) for reason, labels in frozen.items()],
        }

    def _plan_context(self, study: Study) -> dict:
        try:
            plan = study_plan(study=study)
        except ServiceError as exc:
            return {"plan": None, "plan_error": exc.message}
        rows = []
        for k, (size, comparisons) in enumerate(zip(plan.sizes, plan.comparisons, strict=True), start=1):
            rows.append(
                {
                    "number": k,
                    "items": f"{size:,}",
                    "survivors": f"{plan.sizes[k]:,}" if k < plan.ballot_count else "final ranking",
                    "comparisons": f"{comparisons:,}",
                }
            )
        return {
            "plan": plan,
            "plan_rows": rows,
            "plan_total": f"{plan.total_comparisons:,}",
            "plan_item_count": f"{plan.item_count:,}",
            "plan_appearances_source": self._appearances_source(study, plan),
            "plan_uniform": f"{plan.uniform_appearances:.1f}",
            "plan_cost_hours": f"{plan.cost_seconds / 3600:,.1f}",
            "plan_cost_formula": (
                f"{plan.total_comparisons:,} comparisons × {plan.seconds_per_comparison:g} s"
            ),
        }

    @staticmethod
    def _appearances_source(study: Study, plan) -> str:
        budget = study.comparison_budget
        if study.appearances and budget:
            if study.is_draft:
                return "as given; the comparison budget is not used while M is set"
            return f"derived from the budget of {budget:,} comparisons when the study started"
        if study.appearances:
            return "as given"
        return f"derived from the budget of {budget:,} comparisons: {budget_derivation(budget, plan.sizes)}"

    # --- custom views

    def study_views(self) -> list[tuple[str, object]]:
        """The study's own pages (name, view), at ``<id>/<name>/`` and named ``collection_study_<name>``."""
        return [
            ("tokens-upload", self.tokens_upload_view),
            ("items-generate", self.items_generate_view),
            ("items-upload", self.items_upload_view),
            ("start", self.start_view),
            ("close-ballot", self.close_ballot_view),
            ("duplicate", self.duplicate_view),
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
            try:
                report = tokens_import(study=study, data=form.cleaned_data["file"])
            except ServiceError as exc:
                return self._tokens_form(request, study, form, exc)
            self.message_user(
                request,
                f"Imported {counted(report.tokens_created, 'token')} into “{study}” "
                f"({counted(report.areas_created, 'new semantic area')}). Next: generate the items.",
                messages.SUCCESS,
            )
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
                "listed by line number."
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
                self.message_user(
                    request,
                    f"Imported {counted(report.items_created, 'item')} into “{study}”.",
                    messages.SUCCESS,
                )
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
                "unvoted": f"{ballot.comparison_count - ballot.votes_recorded:,}",
                "votes": f"{ballot.votes_recorded:,}",
                "comparisons": f"{ballot.comparison_count:,}",
            },
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
        done = f"Ballot {ballot.number} of “{study}” is closed with {ballot.votes_recorded:,} of {ballot.comparison_count:,} comparisons voted"
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

    @admin.action(description="Start the selected studies (open ballot 1)", permissions=["change"])
    def start_studies(self, request, queryset):
        for study in queryset:
            self._start(request, study)

    @admin.action(description="Close the current ballot of the selected studies now", permissions=["change"])
    def close_current_ballots(self, request, queryset):
        for study in queryset:
            self._close_current_ballot(request, study)

    @admin.action(
        description="Duplicate the selected studies (same items and plan, no votes)", permissions=["add"]
    )
    def duplicate_studies(self, request, queryset):
        for study in queryset:
            self._duplicate(request, study)


@admin.register(StudyChange)
class StudyChangeAdmin(ReadOnlyAdmin):
    """The audit trail of every study: settings changed after the start, never edited."""

    list_display = (
        "changed_at",
        "study",
        "setting",
        "old_shown",
        "new_shown",
        "username",
        "channel",
        "study_status",
    )
    list_filter = ("channel", "study_status", "setting", "study")
    search_fields = ("study__name", "study__slug", "username", "setting")
    list_select_related = ("study",)
    date_hierarchy = "changed_at"

    @admin.display(description="from")
    def old_shown(self, change: StudyChange) -> str:
        return change.old_shown

    @admin.display(description="to")
    def new_shown(self, change: StudyChange) -> str:
        return change.new_shown


# --- pools, ballots, annotators and votes: read-only ---------------------------------------------


@admin.register(SemanticArea)
class SemanticAreaAdmin(ReadOnlyAdmin):
    list_display = ("name", "study", "token_total", "item_total")
    list_filter = ("study",)
    search_fields = ("name",)
    list_select_related = ("study",)

    def get_queryset(self, request):
        return areas_with_totals(super().get_queryset(request))

    @admin.display(description="tokens", ordering="token_total")
    def token_total(self, area):
        return area.token_total

    @admin.display(description="items", ordering="item_total")
    def item_total(self, area):
        return area.item_total


@admin.register(Token)
class TokenAdmin(ReadOnlyAdmin):
    list_display = ("text", "area", "rare", "study")
    list_filter = ("study", AreaFilter, "rare")
    search_fields = ("text",)
    list_select_related = ("area", "study")


@admin.register(Item)
class ItemAdmin(ReadOnlyAdmin):
    list_display = ("index", "__str__", "area", "study", "final_rank", "final_score", "last_ballot")
    list_display_links = ("index", "__str__")
    list_filter = ("study", AreaFilter, "last_ballot")
    search_fields = ("token_a__text", "token_b__text")
    list_select_related = ("token_a", "token_b", "area", "study")
    ordering = ("study", "final_rank", "index")


@admin.register(Ballot)
class BallotAdmin(ReadOnlyAdmin):
    list_display = (
        "__str__",
        "status",
        "item_total",
        "progress",
        "opened_at",
        "deadline",
        "closed_at",
        "rescale_slope",
    )
    list_filter = ("status", "study")
    list_select_related = ("study",)
    exclude = ("items",)

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(item_total=Count("items"))

    @admin.display(description="items", ordering="item_total")
    def item_total(self, ballot):
        return f"{ballot.item_total:,}"

    @admin.display(description="votes / comparisons")
    def progress(self, ballot):
        return format_html(
            "{} {} / {}",
            _progress_bar(ballot.votes_recorded, ballot.comparison_count),
            f"{ballot.votes_recorded:,}",
            f"{ballot.comparison_count:,}",
        )


@admin.register(Annotator)
class AnnotatorAdmin(ReadOnlyAdmin):
    list_display = ("__str__", "study", "vote_total", "consented_at", "created_at")
    list_filter = ("study",)
    search_fields = ("participant_id", "user__username")
    list_select_related = ("study", "user")

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(vote_total=Count("votes"))

    @admin.display(description="votes", ordering="vote_total")
    def vote_total(self, annotator):
        return annotator.vote_total


@admin.register(Vote)
class VoteAdmin(ReadOnlyAdmin):
    list_display = (
        "pk",
        "study",
        "ballot_number",
        "annotator",
        "left_item",
        "right_item",
        "choice",
        "response_ms",
        "created_at",
    )
    list_filter = ("choice", "ballot__study")
    search_fields = ("annotator__participant_id",)
    list_select_related = (
        "ballot__study",
        "annotator__user",
        "left_item__token_a",
        "left_item__token_b",
        "right_item__token_a",
        "right_item__token_b",
    )

    @admin.display(description="study", ordering="ballot__study")
    def study(self, vote):
        return vote.ballot.study

    @admin.display(description="ballot k", ordering="ballot__number")
    def ballot_number(self, vote):
        return vote.ballot.number

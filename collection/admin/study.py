"""The study's admin: the list, the settings form (saved through ``study_create`` and ``study_update``),
deletion of drafts, the study's page with its panels, and the list's actions."""

from __future__ import annotations

from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.html import format_html

from collection import limits
from collection.admin.display import progress_bar, sentence
from collection.admin.languages import StudyTranslationInline
from collection.admin.study_pages import StudyPages
from collection.checks import checks_across_areas_warning
from collection.forms import CheckFormSet, CheckInlineForm, StudyAdminForm, in_field_labels
from collection.jobs import study_job_done_count
from collection.languages import study_language_notices
from collection.models import Ballot, Check, Study, StudyChange
from collection.parts import hidden_part_visible_to, split_summary
from collection.selectors import studies_with_progress, study_job_shown, study_pools, study_progress
from collection.studies import (
    QUALITY_SETTINGS,
    STUDY_SETTINGS,
    study_area_item_counts,
    study_area_plans,
    study_create,
    study_deletable,
    study_delete,
    study_plan,
    study_settings_frozen,
    study_update,
)
from common.errors import ServiceError
from common.numbers import counted, listed, percent_done
from scoring.plan import BUDGET_RULE, budget_derivation, cross_area_share

RECORD_FIELDS = ("status", "created_by", "created_at", "started_at", "finished_at", "duplicated_from")


class CheckInline(admin.TabularInline):
    """The study's checks, added and changed on its page (any state: a check is never a vote)."""

    model = Check
    form = CheckInlineForm
    formset = CheckFormSet
    # Each item named by its two tokens, as in a checks file: a study holds up to 20,000 items.
    fields = ("kind", "left_a", "left_b", "right_a", "right_b", "expected", "instruction")
    extra = 1
    max_num = limits.MAX_CHECKS
    verbose_name = "check"
    verbose_name_plural = (
        "Checks: gold comparisons (the study's question, a known answer) and instructed-response checks "
        "(an instruction in place of the question), served at the check rate, never counted as votes"
    )

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .select_related(
                "left_item__token_a", "left_item__token_b", "right_item__token_a", "right_item__token_b"
            )
        )


@admin.register(Study)
class StudyAdmin(StudyPages, admin.ModelAdmin):
    form = StudyAdminForm
    change_form_template = "admin/collection/study/change_form.html"
    list_display = ("name", "slug", "status", "item_count", "current_ballot", "created_at")
    list_filter = ("status", "allow_ties", "created_at")
    search_fields = ("name", "slug", "question")
    save_on_top = True
    view_on_site = False  # the panel links the annotators' page, the results and the exports
    actions = ("start_studies", "close_current_ballots", "duplicate_studies")

    def get_inlines(self, request, obj=None):
        # A check shows two items of the study; the translations name the study's own language.
        return [CheckInline, StudyTranslationInline] if obj is not None else []

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
            "{} ballot {} of {}: {} of {}",
            progress_bar(study.open_ballot_votes, study.open_ballot_comparisons),
            study.open_ballot_number,
            study.ballot_count,
            f"{study.open_ballot_votes:,}",
            counted(study.open_ballot_comparisons, "vote"),
        )

    def get_fieldsets(self, request, obj=None):
        fieldsets = [
            (
                "Question and instructions",
                {"fields": ("name", "slug", "question", "instructions", "language")},
            ),
            (
                "Plan",
                {
                    "fields": (
                        "ranking_scope",
                        ("ballot_count", "keep_fraction"),
                        ("appearances", "comparison_budget"),
                        "seconds_per_comparison",
                        "seed",
                    ),
                    "description": (
                        "n_b ballots; after each, the fraction α of the items with the best scores goes on to "
                        "the next (Eq. 2). Give M, the appearances of every item in every ballot, or a "
                        f"comparison budget from which M is derived: {BUDGET_RULE}. "
                        "Ranked per area, each semantic area runs this plan on its own items, in the same "
                        "ballots, and comparisons pair items of one area only. "
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
                        "no_work_code",
                        "screened_out_code",
                        "max_wait_seconds",
                        "min_judgements",
                        "participant_codes",
                        "pay_per_hour",
                        "pay_currency",
                        "require_signed_links",
                    )
                },
            ),
            (
                "Evaluation of models",
                {
                    "fields": (
                        "minimum_coverage",
                        "relevant_top_k",
                        "max_variants_per_owner",
                        "hidden_share",
                    ),
                    "description": "A hidden share above 0 keeps that share of the items as a hidden test "
                    "part: drawn from the seed when the study starts (stratified by semantic area), fixed "
                    "from then on; the leaderboard ranks models on it, and its human scores are never "
                    "published. Submissions must then score every item.",
                },
            ),
            (
                "Final ranking",
                {
                    "fields": ("score_model",),
                    "description": "Which model turns the votes into the final ranking; the comparison "
                    "behind the choices is in docs/protocols.md, section “Score models compared”.",
                },
            ),
            (
                "Quality control",
                {
                    "fields": (*QUALITY_SETTINGS, "check_rate", "exclude_flagged_annotators"),
                    "description": "The results page flags an annotator past any of these thresholds; "
                    "a blank one is off. They may change at any time: they judge the votes, not the design. "
                    "The check rate mixes the checks listed below into each annotator's comparisons.",
                },
            ),
        ]
        if obj is not None:
            fieldsets.append(("Record", {"fields": RECORD_FIELDS}))
        if obj is not None and not obj.is_draft:
            # Once started, the page opens on the study at work; the settings stay one click away.
            fieldsets = [(name, {**options, "classes": ("collapse",)}) for name, options in fieldsets]
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
            said = sentence(in_field_labels(exc.message))
            self.message_user(request, f"Nothing was saved. {said}", messages.ERROR)
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
            if request.method == "GET" and (warning := checks_across_areas_warning(study=study)):
                self.message_user(request, sentence(warning), messages.WARNING)
            if request.method == "GET":
                for notice in study_language_notices(study=study):
                    self.message_user(request, notice, messages.WARNING)
        return super().change_view(request, object_id, form_url, extra_context=context)

    def _study_panels(self, request, study: Study) -> dict:
        """The panels of the study's page: plan, ballots, pools, links and changes."""
        context = {"study": study, **self._plan_context(study), **study_pools(study=study)}
        progress = study_progress(study=study)
        context["ballots"] = progress
        context["open_ballot"] = next((b for b in progress if b["status"] == Ballot.Status.OPEN), None)
        context.update(self._job_context(study))
        context["split"] = split_summary(study=study)
        context["split_visible"] = hidden_part_visible_to(request.user, study)
        entry = study.get_absolute_url()
        context["entry_url"] = request.build_absolute_uri(entry)
        context.update(self._changes_context(study))
        return context

    @staticmethod
    def _job_context(study: Study, *, latest: bool = False) -> dict:
        """The study's job on its pools, if one runs or failed (with ``latest``, its latest job, done
        too: what the refreshed panel shows when it ends): its units done of its total."""
        job = study.jobs.first() if latest else study_job_shown(study=study)
        if job is None:
            return {"job": None}
        done = study_job_done_count(job)
        return {
            "job": {"job": job, "done": done, "percent": percent_done(done, job.total) if job.total else 0}
        }

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
        if study.is_draft and study.items.count() < 2:  # not a fault: the pools come first
            return {
                "plan": None,
                "plan_next_step": self._pools_next_step(study),
                "plan_scope": f"Ranking scope: {study.get_ranking_scope_display()}.",
            }
        try:
            plan = study_plan(study=study)
        except ServiceError as exc:
            return {
                "plan": None,
                "plan_error": exc.message,
                "plan_scope": f"Ranking scope: {study.get_ranking_scope_display()}.",
            }
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
            **self._scope_context(study, plan),
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
    def _pools_next_step(study: Study) -> str:
        """What a draft with fewer than two items needs next, for the place of its plan."""
        tokens = study.tokens.count()
        step = (
            f"generate the items from the study's {counted(tokens, 'token')} (or upload pairs)"
            if tokens
            else "upload the tokens, then generate the items (or upload pairs)"
        )
        return f"Next: {step}. The plan is shown here once the study has two items or more."

    @staticmethod
    def _scope_context(study: Study, plan) -> dict:
        """What the plan panel says of the ranking scope: joint (and how often areas meet) or per area."""
        counts = study_area_item_counts(study=study)
        if study.ranking_scope == Study.RankingScope.PER_AREA:
            plans = study_area_plans(study=study).by_area
            area_rows = [
                {
                    "name": name,
                    "items": f"{area_plan.item_count:,}",
                    "sizes": " → ".join(f"{size:,}" for size in area_plan.sizes),
                    "comparisons": f"{area_plan.total_comparisons:,}",
                }
                for name, area_plan in plans.items()
            ]
            return {
                "plan_scope": (
                    f"One ranking per semantic area ({counted(len(plans), 'area')}): each ballot compares "
                    "items of the same area only, each area keeps its own top α after every ballot "
                    "(round(α·N_a(k)), halves up), and each area gets its own final ranking."
                ),
                "plan_area_rows": area_rows,
            }
        if len(counts) < 2:
            return {"plan_scope": "One joint ranking: the study's items are all in one semantic area."}
        share = cross_area_share(counts.values())
        first = plan.comparisons[0]
        return {
            "plan_scope": (
                f"One joint ranking of the {counted(len(counts), 'semantic area')}: annotators will compare "
                f"pairs from different areas (a pair of {listed(list(counts)[:2])}, say). About {share:.0%} "
                f"of ballot 1's {first:,} comparisons (≈ {round(share * first):,}) are expected to set a "
                "pair of one area against a pair of another. Choose one ranking per area to compare "
                "within areas only."
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

    # --- the list's actions

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

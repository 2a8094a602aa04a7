"""The scoring app's admin: the study's page with the simulations of its plan, its results and exports;
read-only lists of the per-ballot item scores and of the simulations.

Scores come from votes through the close of each ballot (``collection.lifecycle.ballot_close``); nobody
edits them by hand. A simulation run may be deleted (it is a forecast, not a measurement), never edited.
"""

from __future__ import annotations

import json

from django.contrib import admin, messages
from django.shortcuts import redirect
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.html import format_html

from collection.admin.display import counted, sentence
from collection.admin.rows import HiddenRowsAdmin
from collection.admin.study import StudyAdmin as CollectionStudyAdmin
from collection.models import Study
from common.errors import ServiceError
from scoring.admin_plan import PlanTargetAdmin
from scoring.forms import SimulateForm
from scoring.live import study_live
from scoring.models import ItemScore, SimulationRun
from scoring.services import simulation_request

METRIC_LABELS = (("rho_w", "ρ_w"), ("tau_w", "τ_w"), ("rho", "ρ"), ("tau", "τ"))


def prediction_rows(result: dict | None) -> list[dict]:
    """The predicted mean ± sd of each metric for the uniform and the adaptive protocol, as table rows."""
    if not result:
        return []
    rows = []
    for metric, label in METRIC_LABELS:
        row = {"metric": metric, "label": label}
        for protocol in ("uniform", "adaptive"):
            summary = result.get(protocol, {}).get(metric) or {}
            row[protocol] = _mean_sd(summary.get("mean"), summary.get("sd"))
        rows.append(row)
    return rows


def prediction_tables(result: dict | None) -> list[dict]:
    """The tables of a done simulation: one for a joint study (``area`` None), one per semantic area, in
    the simulation's order, for a study ranked per area (``scoring.services.simulation_run_by_area``)."""
    if not result:
        return []
    if result.get("ranking_scope") == Study.RankingScope.PER_AREA:
        return [
            {
                "area": area["area"],
                "item_count": area["parameters"]["item_count"],
                "total_comparisons": area["parameters"]["total_comparisons"],
                "rows": prediction_rows(area),
            }
            for area in result.get("areas", [])
        ]
    return [{"area": None, "rows": prediction_rows(result)}]


def _mean_sd(mean: float | None, sd: float | None) -> str:
    if mean is None or mean != mean:  # absent, or NaN (every repetition undefined)
        return "—"
    if sd is None or sd != sd:
        return f"{mean:.3f}"
    return f"{mean:.3f} ± {sd:.3f}"


def simulation_is_active(run: SimulationRun) -> bool:
    return run.status in (SimulationRun.Status.PENDING, SimulationRun.Status.RUNNING)


# --- the study's page, extended -------------------------------------------------------------------

SIMULATIONS_SHOWN = 10
EXPORTS = (
    ("scoring:export-dataset-csv", "Dataset (CSV)"),
    ("scoring:export-dataset-json", "Dataset (JSON)"),
    ("scoring:export-votes-csv", "Votes (CSV)"),
    ("scoring:export-annotators-csv", "Annotators (CSV)"),
    ("scoring:export-checks-csv", "Check answers (CSV)"),
)
# The public dataset (metrics.hub): a finished study's only, its hidden test part withheld.
HUB_DATASET = ("export-hub-dataset", "Hugging Face dataset (zip; hidden test part withheld)")


class StudyAdmin(PlanTargetAdmin, CollectionStudyAdmin):
    """The collection's study admin with what scoring adds to the study's page: "Simulate this plan"
    and the simulations panel (refreshed while runs are in progress), the results and the exports."""

    change_form_template = "admin/scoring/study/change_form.html"
    actions = (*CollectionStudyAdmin.actions, "simulate_plans")

    def study_views(self):
        return [
            *super().study_views(),
            ("simulate", self.simulate_view),
            ("simulations", self.simulations_view),
        ]

    def _study_panels(self, request, study: Study) -> dict:
        context = super()._study_panels(request, study)
        if not study.is_draft:
            context["results_url"] = reverse("scoring:results", args=[study.slug])
            finished = study.status == Study.Status.FINISHED
            context["exports"] = [
                (label, reverse(name, args=[study.slug]))
                for name, label in (*EXPORTS, *([HUB_DATASET] if finished else []))
            ]
            context["live_url"] = reverse("scoring:live", args=[study.slug])
            context["live"] = study_live(study=study)
        context.update(self._simulations_context(study))
        return context

    def _simulations_context(self, study: Study) -> dict:
        runs = list(study.simulations.all()[:SIMULATIONS_SHOWN])
        for run in runs:
            run.tables = prediction_tables(run.result) if run.status == SimulationRun.Status.DONE else []
            run.distribution = run.parameters.get("distribution", "")
        return {
            "simulations": runs,
            "simulations_active": any(simulation_is_active(run) for run in runs),
            "simulations_url": reverse("admin:collection_study_simulations", args=[study.pk]),
        }

    def simulate_view(self, request, object_id):
        study = self._study_or_404(request, object_id)
        form = SimulateForm(request.POST or None)
        error = None
        if request.method == "POST" and form.is_valid():
            try:
                run = simulation_request(study=study, user=request.user, **form.cleaned_data)
            except ServiceError as exc:
                error = exc
            except ValueError as exc:  # parameters the simulator refuses, e.g. the file's item count
                error = ServiceError(str(exc))
            else:
                run.refresh_from_db()
                if run.status == SimulationRun.Status.DONE:
                    text = f"The simulation of the plan of “{study}” is done: the predictions are below."
                else:
                    text = (
                        f"The simulation of the plan of “{study}” is queued "
                        f"({counted(run.repetitions, 'repetition')}); its progress shows below."
                    )
                self.message_user(request, text, messages.SUCCESS)
                return redirect(self._change_url(study, "#simulations"))
        return self._render_form(
            request,
            study,
            form,
            title=f"Simulate the plan of “{study}”",
            intro=(
                "Simulated voters (§4.1) judge items whose true relatedness follows the chosen distribution, "
                "once with the uniform protocol and once with this adaptive plan at the same cost; the "
                "prediction is the mean ± sd of the weighted and plain rank correlations with the truth. "
                "In a study ranked per area, each area is simulated on its own plan and gets its own "
                "prediction."
            ),
            submit="Simulate",
            error=error,
            extra=self._plan_context(study),
        )

    def simulations_view(self, request, object_id):
        """The simulations panel alone, for the page's script to refresh while runs are in progress."""
        study = self._study_or_404(request, object_id, change=False)
        return self._render(
            request, study, "admin/scoring/study/_simulations.html", self._simulations_context(study)
        )

    def _simulate(self, request, study: Study) -> None:
        try:
            run = simulation_request(study=study, user=request.user)
        except ServiceError as exc:
            self.message_user(
                request,
                f"“{study}” cannot be simulated. {sentence(exc.message)}",
                messages.ERROR,
            )
            return
        run.refresh_from_db()
        self.message_user(
            request,
            format_html(
                'Simulation of the plan of “{}” ({}, {}): <a href="{}">{}</a>.',
                study,
                run.parameters.get("distribution", ""),
                counted(run.repetitions, "repetition"),
                self._change_url(study, "#simulations"),
                "done" if run.status == SimulationRun.Status.DONE else "queued",
            ),
            messages.SUCCESS,
        )

    @admin.action(
        description="Simulate the plan of the selected studies (exponential, 20 repetitions)",
        permissions=["change"],
    )
    def simulate_plans(self, request, queryset):
        for study in queryset:
            self._simulate(request, study)


admin.site.unregister(Study)
admin.site.register(Study, StudyAdmin)


# --- read-only lists -------------------------------------------------------------------------------


@admin.register(SimulationRun)
class SimulationRunAdmin(admin.ModelAdmin):
    change_form_template = "admin/scoring/simulationrun/change_form.html"
    list_display = ("__str__", "study", "distribution", "status", "progress", "created_at", "finished_at")
    list_filter = ("status", "study")
    list_select_related = ("study",)
    search_fields = ("study__name", "study__slug")
    fields = (
        "study",
        "status",
        "progress",
        "repetitions",
        "seed",
        "predictions",
        "error",
        "plan_parameters",
        "requested_by",
        "created_at",
        "finished_at",
    )
    readonly_fields = fields

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    @admin.display(description="distribution")
    def distribution(self, run: SimulationRun) -> str:
        return run.parameters.get("distribution", "")

    @admin.display(description="progress")
    def progress(self, run: SimulationRun) -> str:
        return format_html(
            '<progress value="{}" max="{}">{}%</progress> {} / {}',
            run.done,
            run.repetitions,
            run.progress_percent,
            run.done,
            run.repetitions,
        )

    @admin.display(description="predicted ρ_w, τ_w, ρ, τ (mean ± sd; per area in a study ranked per area)")
    def predictions(self, run: SimulationRun) -> str:
        if run.status != SimulationRun.Status.DONE:
            return "—"
        return render_to_string(
            "admin/scoring/_prediction_tables.html", {"tables": prediction_tables(run.result)}
        )

    @admin.display(description="parameters")
    def plan_parameters(self, run: SimulationRun) -> str:
        return format_html("<pre>{}</pre>", json.dumps(run.parameters, indent=2, ensure_ascii=False))

    def render_change_form(self, request, context, *args, **kwargs):
        run = context.get("original")
        context["simulation_active"] = run is not None and simulation_is_active(run)
        return super().render_change_form(request, context, *args, **kwargs)


@admin.register(ItemScore)
class ItemScoreAdmin(HiddenRowsAdmin):
    hidden_item_paths = ("item__",)
    list_display = (
        "item",
        "study",
        "ballot_number",
        "wins",
        "ties",
        "appearances",
        "win_ratio",
        "rescaled_score",
        "score",
        "measured",
        "survived",
    )
    list_filter = ("ballot__study", "ballot__number", "survived")
    list_select_related = ("ballot__study", "item__token_a", "item__token_b")
    search_fields = ("item__token_a__text", "item__token_b__text")
    ordering = ("ballot__study", "ballot__number", "-score")

    @admin.display(description="study", ordering="ballot__study")
    def study(self, score: ItemScore):
        return score.ballot.study

    @admin.display(description="ballot k", ordering="ballot__number")
    def ballot_number(self, score: ItemScore) -> int:
        return score.ballot.number

"""Read-only admin lists of what the engine measured: per-ballot item scores and plan simulations.

Scores come from votes through ``scoring.services.ballot_close``; nobody edits them by hand.
A simulation run may be deleted (it is a forecast, not a measurement), never edited.
"""

from __future__ import annotations

import json

from django.contrib import admin
from django.template.loader import render_to_string
from django.utils.html import format_html

from scoring.models import ItemScore, SimulationRun

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


def _mean_sd(mean: float | None, sd: float | None) -> str:
    if mean is None or mean != mean:  # absent, or NaN (every repetition undefined)
        return "—"
    if sd is None or sd != sd:
        return f"{mean:.3f}"
    return f"{mean:.3f} ± {sd:.3f}"


def simulation_is_active(run: SimulationRun) -> bool:
    return run.status in (SimulationRun.Status.PENDING, SimulationRun.Status.RUNNING)


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

    @admin.display(description="predicted ρ_w, τ_w, ρ, τ (mean ± sd)")
    def predictions(self, run: SimulationRun) -> str:
        if run.status != SimulationRun.Status.DONE:
            return "—"
        return render_to_string("admin/scoring/_predictions.html", {"rows": prediction_rows(run.result)})

    @admin.display(description="parameters")
    def plan_parameters(self, run: SimulationRun) -> str:
        return format_html("<pre>{}</pre>", json.dumps(run.parameters, indent=2, ensure_ascii=False))

    def render_change_form(self, request, context, *args, **kwargs):
        run = context.get("original")
        context["simulation_active"] = run is not None and simulation_is_active(run)
        return super().render_change_form(request, context, *args, **kwargs)


@admin.register(ItemScore)
class ItemScoreAdmin(admin.ModelAdmin):
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

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.display(description="study", ordering="ballot__study")
    def study(self, score: ItemScore):
        return score.ballot.study

    @admin.display(description="ballot k", ordering="ballot__number")
    def ballot_number(self, score: ItemScore) -> int:
        return score.ballot.number

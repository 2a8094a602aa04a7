"""The study's admin page, part "plan from a target": the form that starts a search (a Celery task), the
panel that shows its progress and result, and the confirmation that applies the plan found to a draft."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect
from django.urls import reverse

from collection.models import Study, StudyChange
from common.errors import ServiceError
from scoring.models import PlanSearch
from scoring.plan_forms import PlanApplyForm, PlanTargetForm
from scoring.plan_report import confidence_text, cost_text, not_reached, plan_text, without_warnings_text
from scoring.plan_search import LABELS
from scoring.planning import plan_search_apply, plan_search_request

PLAN_SEARCHES_SHOWN = 3


def _number(value, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _figure_rows(figures: list[dict]) -> list[dict]:
    rows = []
    for figure in figures:
        name, _, k = figure["key"].partition("@")
        rows.append(
            {
                "key": figure["key"],
                "label": LABELS[name].format(k=k),
                "mean_sd": f"{_number(figure['mean'])} ± {_number(figure['sd'])}",
                "percentiles": f"{_number(figure['p10'])} – {_number(figure['p90'])}",
            }
        )
    return rows


def plan_search_view_model(search: PlanSearch) -> dict:
    """What the panel shows of one search, as strings."""
    shown = {
        "search": search,
        "active": search.status in (PlanSearch.Status.PENDING, PlanSearch.Status.RUNNING),
    }
    result = search.result if search.status == PlanSearch.Status.DONE else None
    target = search.parameters.get("target", {})
    key = target.get("measure", "")
    shown["target"] = LABELS.get(key, key).format(k=target.get("k")) + f" ≥ {target.get('threshold', 0):g}"
    if not result:
        return shown
    shown["target"] = result["target"]["text"]
    if "confirmation" not in result:  # stored before plans were confirmed on fresh repetitions
        shown["unconfirmed"] = True
        return shown
    shown["target"] += f", with {result['confidence']:.0%} confidence" + (
        ", in every area" if result["ranking_scope"] == "per_area" else ""
    )
    searched = result["searched"]
    shown["searched"] = (
        f"{searched['simulations']} of {searched['candidates']:,} plans simulated on "
        f"{result['parameters']['repetitions']} repetitions each"
        + (
            f" ({searched['search_repetitions']} after a failed confirmation)"
            if searched["search_repetitions"] != result["parameters"]["repetitions"]
            else ""
        )
        + f", {searched['confirmations']} tried on fresh repetitions, in {result['seconds']:.1f} s "
        + (
            "(every plan cheaper than the answer simulated, cheapest first; "
            if searched["strategy"] == "scan"
            else "(bisection on M for each n_b and α; "
        )
        + f"n_b from {searched['grid']['ballot_counts'][0]} to {searched['grid']['ballot_counts'][-1]}, "
        f"α in {', '.join(f'{a:g}' for a in searched['grid']['keep_fractions'])}, {searched['grid']['appearances']})"
        + ("" if result["complete"] else "; stopped at the bound on simulations: a cheaper plan may exist")
    )
    shown["failed"] = [
        f"{plan_text(failed['plan'])}, {failed['plan']['total_comparisons']:,} comparisons: "
        f"{_number(failed['statistic'])}"
        + (f" in area {failed['area']}" if failed["area"] else "")
        + f" on {failed['repetitions']} fresh repetitions, its {failed['level']:.1%} lower bound "
        f"{_number(failed['bound'])}"
        for failed in result["failed_confirmations"]
    ]
    if result["plan"] is None:
        shown["none"] = not_reached(result)
        return shown
    shown["plan"] = plan_text(result["plan"])
    shown["cost"] = cost_text(result["cost"])
    shown["confidence"] = confidence_text(result, result)
    shown["figures"] = _figure_rows(result["figures"])
    shown["areas"] = [
        {
            "name": area["area"],
            "item_count": f"{area['item_count']:,}",
            "sizes": " → ".join(f"{size:,}" for size in area["sizes"]),
            "comparisons": f"{area['comparisons']:,}",
            "statistic": _number(area["confirmation"]["statistic"]),
            "bound": _number(area["confirmation"]["bound"]),
            "figures": _figure_rows(area["figures"]),
        }
        for area in result["areas"]
    ]
    shown["statistic_label"] = result["target"]["statistic_label"]
    shown["level"] = f"{result['confirmation']['level']:.1%}"
    shown["repetitions"] = result["confirmation"]["repetitions"]
    shown["warnings"] = result["warnings"]
    if result["warnings"]:
        other = result["without_warnings"]
        shown["without_warnings"] = without_warnings_text(result)
        shown["without_warnings_found"] = other is not None
    return shown


class PlanTargetAdmin:
    """Mixed into the study's admin (``scoring.admin.StudyAdmin``): plans from a target precision."""

    def study_views(self):
        return [
            *super().study_views(),
            ("plan-target", self.plan_target_view),
            ("plan-searches", self.plan_searches_view),
            ("plan-apply", self.plan_apply_view),
        ]

    def _study_panels(self, request, study: Study) -> dict:
        context = super()._study_panels(request, study)
        context.update(self._plan_searches_context(request, study))
        return context

    def _plan_searches_context(self, request, study: Study) -> dict:
        searches = [
            plan_search_view_model(search) for search in study.plan_searches.all()[:PLAN_SEARCHES_SHOWN]
        ]
        return {
            "plan_searches": searches,
            "plan_searches_active": any(shown["active"] for shown in searches),
            "plan_searches_url": reverse("admin:collection_study_plan_searches", args=[study.pk]),
            "plan_apply_allowed": study.is_draft and self.has_change_permission(request, study),
        }

    def plan_target_view(self, request, object_id):
        study = self._study_or_404(request, object_id)
        form = PlanTargetForm(request.POST or None, initial={"pay_per_hour": study.pay_per_hour})
        error = None
        if request.method == "POST" and form.is_valid():
            data = form.cleaned_data
            try:
                search = plan_search_request(
                    study=study,
                    target=data["target"],
                    confidence=float(data["confidence"]),
                    noise=data["noise"],
                    pay_per_hour=data["pay_per_hour"],
                    repetitions=data["repetitions"],
                    distribution=data["distribution"],
                    user=request.user,
                )
            except ServiceError as exc:
                error = exc
            else:
                search.refresh_from_db()
                done = search.status == PlanSearch.Status.DONE
                self.message_user(
                    request,
                    f"The search for the cheapest plan of “{study}” is "
                    + ("done: the plan is below." if done else "queued; its progress shows below."),
                    messages.SUCCESS,
                )
                return redirect(self._change_url(study, "#plan-search"))
        return self._render_form(
            request,
            study,
            form,
            title=f"Plan “{study}” from a target precision",
            intro=(
                "State how precise the ranking must be; Yardstick simulates the voting (Lombardo et al. §4.1) "
                "for plans of growing cost, uniform and adaptive (n_b, α, M), and returns the cheapest whose "
                "lower confidence bound reaches the target, confirmed on fresh simulations, with its figures, "
                "cost and §2.7 warnings (and the cheapest plan without warnings beside it)."
                + (
                    " This study is ranked per area: the plan found is one n_b, α and M that reaches the "
                    "target in every area, each area simulated on its own items."
                    if study.ranking_scope == Study.RankingScope.PER_AREA
                    else ""
                )
            ),
            submit="Search",
            error=error,
        )

    def plan_searches_view(self, request, object_id):
        """The panel alone, for the page's script to refresh while a search runs."""
        study = self._study_or_404(request, object_id, change=False)
        return self._render(
            request,
            study,
            "admin/scoring/study/_plan_search.html",
            self._plan_searches_context(request, study),
        )

    def plan_apply_view(self, request, object_id):
        study = self._study_or_404(request, object_id)
        form = PlanApplyForm(request.POST or request.GET or None)
        if not form.is_valid():
            raise Http404("Say which search's plan to apply (?search=<id>).")
        search = PlanSearch.objects.filter(pk=form.cleaned_data["search"], study=study).first()
        if search is None:
            raise Http404("This study has no such plan search.")
        without_warnings = form.cleaned_data["which"] == PlanApplyForm.WITHOUT_WARNINGS
        plan, cost = "the plan found", ""
        answer = (search.result or {}).get("without_warnings" if without_warnings else "plan")
        if search.status == PlanSearch.Status.DONE and answer:
            plan = plan_text(answer["plan"] if without_warnings else answer)
            cost = cost_text(answer["cost"] if without_warnings else search.result["cost"])
        error = None
        if request.method == "POST":
            try:
                plan_search_apply(
                    search=search,
                    without_warnings=without_warnings,
                    user=request.user,
                    channel=StudyChange.Channel.ADMIN,
                )
            except ServiceError as exc:
                error = exc
            else:
                self.message_user(request, f"The plan of “{study}” is now {plan}.", messages.SUCCESS)
                return redirect(self._change_url(study, "#plan"))
        return self._render_form(
            request,
            study,
            form,
            title=f"Apply the plan found to “{study}”",
            intro=(
                f"Set the plan of “{study}” to {plan}"
                + (f": {cost}" if cost else "")
                + ". The comparison budget is cleared (M is given). Only a draft's plan can change."
            ),
            submit="Apply this plan",
            error=error,
        )

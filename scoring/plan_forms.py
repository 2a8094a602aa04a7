"""Forms of plans from a target precision in the admin: the target, and the confirmation of applying a plan."""

from __future__ import annotations

from django import forms

from collection import limits
from scoring.forms import DISTRIBUTION_LABELS
from scoring.plan_search import parse_target
from scoring.planning import CONFIDENCES, DEFAULT_NOISE, DEFAULT_REPETITIONS, MAX_REPETITIONS
from scoring.simulation import DISTRIBUTIONS

REACH_CHOICES = (
    ("mean", "on average over the repetitions"),
    ("0.1", "in 9 repetitions of 10 (the 10th percentile)"),
    ("0.05", "in 19 repetitions of 20 (the 5th percentile)"),
)


class PlanTargetForm(forms.Form):
    target = forms.CharField(
        max_length=40,
        initial="rho_w>=0.95",
        help_text="MEASURE>=VALUE, e.g. rho_w>=0.95 or recall@50>=0.9 (rho_w, tau_w, rho, tau, recall@K, "
        "precision@K), measured against the true ranking of the simulated items.",
    )
    reach = forms.ChoiceField(
        choices=REACH_CHOICES,
        initial="mean",
        label="Reached",
        help_text="The simulated figures vary from one repetition to the next: reach the target on average, "
        "or in nearly every repetition.",
    )
    confidence = forms.ChoiceField(
        choices=[(f"{level:g}", f"{level:.0%}") for level in CONFIDENCES],
        initial="0.9",
        help_text="The plan's figure must reach the target with this one-sided confidence: its lower "
        "confidence bound, not its estimate, on the simulations and again on fresh ones.",
    )
    noise = forms.FloatField(
        initial=DEFAULT_NOISE,
        min_value=0.001,
        max_value=1.0,
        label="Voter noise σ*",
        help_text="Each simulated voter's nonconformity σ* is drawn from [noise/10, noise] (§4.1.1); "
        "the paper's bound is 0.2.",
    )
    pay_per_hour = forms.FloatField(
        required=False,
        min_value=0.01,
        max_value=limits.MAX_PAY_PER_HOUR,
        label="Pay per hour",
        help_text="For the cost in money; blank for the study's pay rate.",
    )
    repetitions = forms.IntegerField(
        required=False,
        min_value=2,
        max_value=MAX_REPETITIONS,
        help_text=f"Simulations of every plan tried; blank for {DEFAULT_REPETITIONS}, or the fewest that "
        "bound a percentile. More give a steadier answer and take longer.",
    )
    distribution = forms.ChoiceField(
        choices=[(name, DISTRIBUTION_LABELS[name]) for name in DISTRIBUTIONS],
        initial="exponential",
        help_text="The distribution of the items' true relatedness the simulated voters judge.",
    )

    def clean(self):
        data = super().clean()
        if "target" in data and "reach" in data:
            quantile = None if data["reach"] == "mean" else float(data["reach"])
            try:
                data["target"] = parse_target(data["target"], quantile=quantile)
            except ValueError as exc:
                self.add_error("target", str(exc))
        return data


class PlanApplyForm(forms.Form):
    PLAN, WITHOUT_WARNINGS = "plan", "without_warnings"

    search = forms.IntegerField(widget=forms.HiddenInput, min_value=1)
    which = forms.ChoiceField(
        widget=forms.HiddenInput,
        choices=((PLAN, "the cheapest plan"), (WITHOUT_WARNINGS, "the cheapest plan without §2.7 warnings")),
        required=False,
    )

    def clean_which(self):
        return self.cleaned_data["which"] or self.PLAN

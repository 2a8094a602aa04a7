"""Forms of the scoring app's admin: the simulation of a study's plan."""

from __future__ import annotations

from django import forms

from scoring.simulation import DISTRIBUTIONS

DISTRIBUTION_LABELS = {
    "exponential": "exponential similarities (§4.1)",
    "power_law": "power-law similarities (§4.1)",
    "file": "the paper's 990 embedding similarities (needs exactly 990 items)",
}


class SimulateForm(forms.Form):
    distribution = forms.ChoiceField(
        choices=[(name, DISTRIBUTION_LABELS[name]) for name in DISTRIBUTIONS],
        initial="exponential",
        help_text="The distribution of the items' true relatedness the simulated voters judge.",
    )
    repetitions = forms.IntegerField(
        initial=20,
        min_value=1,
        max_value=500,
        help_text="Each repetition simulates the uniform and the adaptive protocol once.",
    )

"""Forms of the model owners' pages: the submission upload and the evaluation settings."""

from __future__ import annotations

from django import forms

from metrics.correlation import MIN_WEIGHT_OFFSET, MIN_WEIGHT_OFFSET_MESSAGE
from metrics.evaluation import COEFFICIENTS
from metrics.leaderboard import LEADERBOARD_WEIGHT_OFFSETS, leaderboard_offsets_text
from metrics.services import MAX_WEIGHT_OFFSET, MAX_WEIGHT_OFFSET_MESSAGE


class SubmissionForm(forms.Form):
    model_name = forms.CharField(
        max_length=100,
        help_text="Unique among your models for this study; shown on the leaderboard.",
    )
    description = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="Optional: the model, its version and how the scores were made.",
    )
    # An empty file reaches the service, whose message says which header the CSV needs.
    file = forms.FileField(
        label="Scores (CSV)",
        allow_empty_file=True,
        help_text="UTF-8, at most 5 MiB, with the header item,score or token_a,token_b,score.",
        widget=forms.ClearableFileInput(attrs={"accept": ".csv,text/csv"}),
    )


class JudgeForm(forms.Form):
    judge_name = forms.CharField(
        max_length=100,
        help_text="Unique among your models and judges for this study; shown on the judges' leaderboard.",
    )
    description = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="Optional: the judge (a model, a prompt, a person), its version and how it decided.",
    )
    # An empty file reaches the service, whose message says which header the CSV needs.
    file = forms.FileField(
        label="Decisions (CSV or JSONL)",
        allow_empty_file=True,
        help_text='UTF-8, at most 16 MiB: a CSV with the header pair,decision, or JSONL, one {"pair": 1, '
        '"decision": "left"} per line. A decision is left, right or tie.',
        widget=forms.ClearableFileInput(attrs={"accept": ".csv,.jsonl,text/csv,application/jsonl"}),
    )


class EvaluationSettingsForm(forms.Form):
    """n0 and K of an evaluation, read from the query string (GET)."""

    n0 = forms.FloatField(
        label="Weight offset n0",
        min_value=MIN_WEIGHT_OFFSET,
        max_value=MAX_WEIGHT_OFFSET,
        error_messages={"min_value": MIN_WEIGHT_OFFSET_MESSAGE, "max_value": MAX_WEIGHT_OFFSET_MESSAGE},
        help_text="From -0.9 to 1,000,000; the paper uses 2.",
    )
    k = forms.IntegerField(label="K", min_value=1, help_text="The human top-K items count as relevant.")


class LeaderboardSettingsForm(forms.Form):
    """The metric and n0 of the leaderboard page, read from the query string (GET)."""

    metric = forms.ChoiceField(
        choices=[(name, name) for name in COEFFICIENTS],
        error_messages={
            "invalid_choice": f"%(value)s is not a metric: use one of {', '.join(COEFFICIENTS)}."
        },
    )
    n0 = forms.FloatField(
        label="Weight offset n0",
        widget=forms.Select(choices=[(f"{value:g}", f"{value:g}") for value in LEADERBOARD_WEIGHT_OFFSETS]),
    )

    def clean_n0(self) -> float:
        value = self.cleaned_data["n0"]
        if value not in LEADERBOARD_WEIGHT_OFFSETS:
            raise forms.ValidationError(
                f"the leaderboard offers n0 = {leaderboard_offsets_text()}, got {value:g}."
            )
        return value

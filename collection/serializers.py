"""Serializers of the REST API: request validation and the shape of every response."""

from __future__ import annotations

import copy

from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from collection.models import Item, Study, Token, Vote
from collection.services import study_plan
from common.errors import ServiceError

# What a running study cannot change: its plan, the seed of its schedules, and the annotators' link.
FROZEN_ONCE_STARTED = ("ballot_count", "keep_fraction", "appearances", "comparison_budget", "seed", "slug")


class ErrorSerializer(serializers.Serializer):
    detail = serializers.CharField(help_text="What is wrong and how to fix it.")
    errors = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="Every problem of an upload, by line."
    )


# --- studies -------------------------------------------------------------------------------------


class StudySerializer(serializers.ModelSerializer):
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    duplicated_from = serializers.SlugRelatedField(slug_field="slug", read_only=True)

    class Meta:
        model = Study
        fields = [
            "id",
            "name",
            "slug",
            "question",
            "instructions",
            "allow_ties",
            "ballot_count",
            "keep_fraction",
            "appearances",
            "comparison_budget",
            "seconds_per_comparison",
            "lease_seconds",
            "votes_per_annotator_per_ballot",
            "ballot_deadline_hours",
            "completion_code",
            "completion_redirect_url",
            "seed",
            "status",
            "created_by",
            "duplicated_from",
            "created_at",
            "started_at",
            "finished_at",
        ]
        read_only_fields = ["status", "created_at", "started_at", "finished_at"]
        extra_kwargs = {
            "ballot_count": {"min_value": 1},
            "appearances": {"min_value": 1},
            "comparison_budget": {"min_value": 1},
            "lease_seconds": {"min_value": 10},
            "votes_per_annotator_per_ballot": {"min_value": 1},
            "ballot_deadline_hours": {"min_value": 1},
        }

    def validate_keep_fraction(self, value: float) -> float:
        if not 0 < value < 1:
            raise serializers.ValidationError(
                f"keep_fraction α must lie strictly between 0 and 1 (the paper uses 0.5), got {value:g}"
            )
        return value

    def validate_seconds_per_comparison(self, value: float) -> float:
        if not value > 0:
            raise serializers.ValidationError(
                f"seconds_per_comparison must be positive (a typical comparison takes 4 to 8 s), got {value:g}"
            )
        return value

    def validate(self, attrs: dict) -> dict:
        study = self.instance
        if study is not None and not study.is_draft:
            changed = [
                name for name in FROZEN_ONCE_STARTED if name in attrs and attrs[name] != getattr(study, name)
            ]
            if changed:
                raise serializers.ValidationError(
                    {
                        name: f"cannot change once the study has started (it is {study.status}); "
                        "duplicate the study to run it again with other values"
                        for name in changed
                    }
                )
        candidate = copy.copy(study) if study is not None else Study()
        for name, value in attrs.items():
            setattr(candidate, name, value)
        if candidate.appearances is None and candidate.comparison_budget is None:
            raise serializers.ValidationError(
                {"appearances": "set appearances M (e.g. 20) or a comparison_budget from which M is derived"}
            )
        try:
            candidate.validate_constraints()
        except DjangoValidationError as exc:
            raise serializers.ValidationError(exc.messages) from None
        item_count = study.items.count() if study is not None else 0
        if item_count:
            try:
                study_plan(study=candidate, item_count=item_count)
            except ServiceError as exc:
                raise serializers.ValidationError({"plan": exc.message}) from None
        return attrs


class StudyDuplicateSerializer(serializers.Serializer):
    name = serializers.CharField(
        max_length=200, required=False, help_text='Default: the name followed by "(replication)".'
    )
    slug = serializers.SlugField(
        max_length=80, required=False, help_text='Default: the slug followed by "-copy"; made unique.'
    )


class PlanSerializer(serializers.Serializer):
    item_count = serializers.IntegerField(help_text="N_items")
    ballot_count = serializers.IntegerField(help_text="n_b")
    keep_fraction = serializers.FloatField(help_text="α")
    appearances = serializers.IntegerField(help_text="M, appearances of each item in each ballot")
    sizes = serializers.ListField(
        child=serializers.IntegerField(), help_text="N(k), items in ballot k (Eq. 2)"
    )
    comparisons = serializers.ListField(child=serializers.IntegerField(), help_text="Comparisons in ballot k")
    seconds_per_comparison = serializers.FloatField(allow_null=True)
    warnings = serializers.ListField(child=serializers.CharField(), help_text="The §2.7 heuristics")
    survivors = serializers.ListField(
        child=serializers.IntegerField(), help_text="Items carried into ballot k+1"
    )
    total_comparisons = serializers.IntegerField(help_text="N_comp (Eq. 3)")
    top_appearances = serializers.IntegerField(help_text="M_top = n_b·M (Eq. 4)")
    uniform_appearances = serializers.FloatField(help_text="M_unif (Eq. 4)")
    cost_seconds = serializers.FloatField(allow_null=True, help_text="Person-seconds of voting (Eq. 10)")


class BallotProgressSerializer(serializers.Serializer):
    number = serializers.IntegerField()
    status = serializers.CharField()
    items = serializers.IntegerField()
    comparisons = serializers.IntegerField()
    votes = serializers.IntegerField()
    percent = serializers.IntegerField()
    opened_at = serializers.DateTimeField()
    closed_at = serializers.DateTimeField(allow_null=True)
    deadline = serializers.DateTimeField(allow_null=True)
    rescale_slope = serializers.FloatField(allow_null=True, help_text="b̂(k) of Eq. 6")


class BallotClosingSerializer(serializers.Serializer):
    ballot = serializers.IntegerField(help_text="The number of the ballot being closed.")
    detail = serializers.CharField()


class ResultSerializer(serializers.Serializer):
    rank = serializers.IntegerField(help_text="1 = most related")
    item = serializers.IntegerField()
    index = serializers.IntegerField()
    tokens = serializers.ListField(child=serializers.CharField(), min_length=2, max_length=2)
    area = serializers.CharField()
    final_score = serializers.FloatField(allow_null=True, help_text="ȳ after the item's last ballot (Eq. 5)")
    last_ballot = serializers.IntegerField(allow_null=True)
    win_ratios = serializers.ListField(
        child=serializers.FloatField(allow_null=True),
        help_text="x(k) for ballots 1 … last_ballot (Eq. 1); null where the item got no vote",
    )


# --- pools ---------------------------------------------------------------------------------------


class TokenSerializer(serializers.ModelSerializer):
    area = serializers.CharField(source="area.name")

    class Meta:
        model = Token
        fields = ["id", "text", "area", "rare"]


class ItemSerializer(serializers.ModelSerializer):
    tokens = serializers.SerializerMethodField()
    area = serializers.CharField(source="area.name")

    class Meta:
        model = Item
        fields = ["id", "index", "tokens", "area", "final_rank", "final_score", "last_ballot"]

    @extend_schema_field(serializers.ListField(child=serializers.CharField(), min_length=2, max_length=2))
    def get_tokens(self, item: Item) -> list[str]:
        return [item.token_a.text, item.token_b.text]


@extend_schema_field(
    OpenApiTypes.BINARY
)  # a file chooser in the docs, not a URL (uploads are never read back)
class CsvFileField(serializers.FileField):
    pass


class CsvUploadSerializer(serializers.Serializer):
    file = CsvFileField(help_text="A CSV file, UTF-8, at most 2 MiB.")


class ImportReportSerializer(serializers.Serializer):
    areas_created = serializers.IntegerField()
    tokens_created = serializers.IntegerField()
    items_created = serializers.IntegerField()
    warnings = serializers.ListField(child=serializers.CharField())


class ItemsGenerateSerializer(serializers.Serializer):
    max_per_area = serializers.IntegerField(
        min_value=1,
        required=False,
        allow_null=True,
        help_text="Keep a uniform random sample of this many pairs per area; all pairs when absent.",
    )


# --- annotators ----------------------------------------------------------------------------------


class ComparisonSideSerializer(serializers.Serializer):
    item = serializers.IntegerField()
    tokens = serializers.ListField(child=serializers.CharField(), min_length=2, max_length=2)


class AnnotatorProgressSerializer(serializers.Serializer):
    ballot = serializers.IntegerField(allow_null=True, help_text="k, the current (or last) ballot")
    ballot_count = serializers.IntegerField(help_text="n_b")
    votes_in_ballot = serializers.IntegerField()
    cap = serializers.IntegerField(allow_null=True, help_text="Votes allowed per annotator in a ballot")
    votes_total = serializers.IntegerField()
    ballot_voted = serializers.IntegerField()
    ballot_comparisons = serializers.IntegerField()
    quota_percent = serializers.IntegerField(allow_null=True)
    ballot_percent = serializers.IntegerField()


class NextComparisonSerializer(serializers.Serializer):
    assignment = serializers.IntegerField(help_text="Send this id with your vote.")
    expires_at = serializers.DateTimeField(help_text="The comparison returns to the pool after this.")
    question = serializers.CharField()
    allow_ties = serializers.BooleanField()
    left = ComparisonSideSerializer()
    right = ComparisonSideSerializer()
    progress = AnnotatorProgressSerializer()


_CHOICES = ", ".join(f'"{choice}"' for choice in Vote.Choice.values)


class VoteRequestSerializer(serializers.Serializer):
    assignment = serializers.IntegerField(min_value=1)
    choice = serializers.ChoiceField(
        choices=Vote.Choice.choices,
        error_messages={"invalid_choice": f'"{{input}}" is not a choice: send one of {_CHOICES}.'},
    )
    client_response_ms = serializers.IntegerField(
        min_value=0,
        required=False,
        allow_null=True,
        help_text="Milliseconds from showing the comparison to the decision, as the page measured them.",
    )


class VoteResultSerializer(serializers.Serializer):
    vote = serializers.IntegerField()
    assignment = serializers.IntegerField()
    choice = serializers.ChoiceField(choices=Vote.Choice.choices)
    created = serializers.BooleanField(
        help_text="False when the vote was already recorded by an earlier request."
    )

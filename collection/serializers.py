"""Serializers of the REST API: request validation and the shape of every response."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field, extend_schema_serializer
from rest_framework import serializers

from collection import limits
from collection.models import Exclusion, Item, Study, StudyChange, StudyJob, Token, Vote
from collection.studies import QUALITY_SETTINGS
from collection.voting import NextReason
from common.schema import BoundedFloatField
from common.serializers import MAX_DATABASE_ID, StrictJSONTypes

# --- studies -------------------------------------------------------------------------------------


QUALITY_SHARES = ("quality_max_fast_share", "quality_min_majority_agreement", "quality_min_self_agreement")


def _share_messages(name: str) -> dict:
    message = limits.QUALITY_SHARE_MESSAGE.format(name=name)
    return {"min_value": message, "max_value": message}


class StudyChangeSerializer(serializers.ModelSerializer):
    user = serializers.SerializerMethodField(help_text="Who changed it: a username, null for a command.")
    channel = serializers.ChoiceField(
        choices=StudyChange.Channel.choices, read_only=True, help_text="Where it was changed."
    )
    study_status = serializers.ChoiceField(
        choices=Study.Status.choices, read_only=True, help_text="The study's state when it changed."
    )
    setting = serializers.CharField(read_only=True, help_text="The field of the study that changed.")
    old_value = serializers.JSONField(
        allow_null=True, read_only=True, help_text="Its value before; null when it was blank."
    )
    new_value = serializers.JSONField(
        allow_null=True, read_only=True, help_text="Its value after; null when it is blank."
    )

    class Meta:
        model = StudyChange
        fields = ["changed_at", "user", "channel", "study_status", "setting", "old_value", "new_value"]
        read_only_fields = fields

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_user(self, change: StudyChange) -> str | None:
        return change.username or None


class StudySerializer(StrictJSONTypes, serializers.ModelSerializer):
    """A study's settings and state. Which settings may change in which state is decided by the
    services (``collection.studies.STUDY_SETTINGS``); this checks the shape of each field."""

    created_by = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True, help_text="null once that user is deleted."
    )
    duplicated_from = serializers.SlugRelatedField(
        slug_field="slug", read_only=True, allow_null=True, help_text="The study this one replicates, if any."
    )
    changes = StudyChangeSerializer(
        many=True, read_only=True, help_text="Every setting changed after the start, oldest first."
    )
    # Declared for their exclusive bounds in the schema; validate_<field> below refuses the rest.
    keep_fraction = BoundedFloatField(
        greater_than=0,
        less_than=1,
        required=False,
        help_text=Study._meta.get_field("keep_fraction").help_text,
    )
    seconds_per_comparison = BoundedFloatField(
        greater_than=0,
        max_value=limits.MAX_SECONDS_PER_COMPARISON,
        required=False,
        help_text=Study._meta.get_field("seconds_per_comparison").help_text,
    )

    quality_position_alpha = BoundedFloatField(
        greater_than=0,
        less_than=1,
        required=False,
        allow_null=True,
        help_text=Study._meta.get_field("quality_position_alpha").help_text,
    )

    class Meta:
        model = Study
        fields = [
            "id",
            "name",
            "slug",
            "question",
            "instructions",
            "language",
            "allow_ties",
            "ranking_scope",
            "ballot_count",
            "keep_fraction",
            "appearances",
            "comparison_budget",
            "seconds_per_comparison",
            "lease_seconds",
            "votes_per_annotator_per_ballot",
            "ballot_deadline_hours",
            "completion_code",
            "no_work_code",
            "screened_out_code",
            "max_wait_seconds",
            "min_judgements",
            "participant_codes",
            "pay_per_hour",
            "pay_currency",
            "require_signed_links",
            "completion_redirect_url",
            "seed",
            "minimum_coverage",
            "max_variants_per_owner",
            "relevant_top_k",
            "hidden_share",
            *QUALITY_SETTINGS,
            "check_rate",
            "exclude_flagged_annotators",
            "score_model",
            "status",
            "created_by",
            "duplicated_from",
            "created_at",
            "started_at",
            "finished_at",
            "changes",
        ]
        read_only_fields = ["status", "created_at", "started_at", "finished_at"]
        extra_kwargs = {
            # The bounds of collection/limits.py, refused with the reason for each.
            "ballot_count": {"min_value": 1, "error_messages": {"max_value": limits.BALLOTS_MESSAGE}},
            "appearances": {"min_value": 1, "error_messages": {"max_value": limits.APPEARANCES_MESSAGE}},
            "comparison_budget": {"min_value": 1, "error_messages": {"max_value": limits.BUDGET_MESSAGE}},
            "seconds_per_comparison": {"error_messages": {"max_value": limits.SECONDS_MESSAGE}},
            "lease_seconds": {"min_value": 10, "error_messages": {"max_value": limits.LEASE_MESSAGE}},
            "votes_per_annotator_per_ballot": {"min_value": 1},
            "ballot_deadline_hours": {
                "min_value": 1,
                "error_messages": {"max_value": limits.DEADLINE_MESSAGE},
            },
            "relevant_top_k": {"min_value": 1},
            "max_variants_per_owner": {
                "min_value": 1,
                "error_messages": {"max_value": limits.VARIANTS_MESSAGE},
            },
            "max_wait_seconds": {
                "error_messages": {"min_value": limits.WAIT_MESSAGE, "max_value": limits.WAIT_MESSAGE}
            },
            "min_judgements": {
                "max_value": limits.MAX_MIN_JUDGEMENTS,
                "error_messages": {"max_value": limits.MIN_JUDGEMENTS_MESSAGE},
            },
            "pay_per_hour": {
                "error_messages": {"min_value": limits.PAY_MESSAGE, "max_value": limits.PAY_MESSAGE}
            },
            "quality_fast_ms": {
                "error_messages": {
                    "min_value": limits.QUALITY_FAST_MS_MESSAGE,
                    "max_value": limits.QUALITY_FAST_MS_MESSAGE,
                },
            },
            **{name: {"error_messages": _share_messages(name)} for name in QUALITY_SHARES},
            "quality_max_failed_checks": {
                "error_messages": {
                    "min_value": limits.FAILED_CHECKS_MESSAGE,
                    "max_value": limits.FAILED_CHECKS_MESSAGE,
                },
            },
            "check_rate": {
                "error_messages": {
                    "min_value": limits.CHECK_RATE_MESSAGE,
                    "max_value": limits.CHECK_RATE_MESSAGE,
                },
            },
            "seed": {"error_messages": {"min_value": limits.SEED_MESSAGE, "max_value": limits.SEED_MESSAGE}},
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

    def validate_minimum_coverage(self, value: float) -> float:
        if not 0 <= value <= 1:
            raise serializers.ValidationError(
                f"minimum_coverage is a share of the items, from 0 to 1 (0.5: half of them), got {value:g}"
            )
        return value

    def validate_quality_position_alpha(self, value: float | None) -> float | None:
        if value is not None and not 0 < value < 1:
            raise serializers.ValidationError(f"{limits.QUALITY_ALPHA_MESSAGE} Got {value:g}.")
        return value


class StudyDuplicateSerializer(StrictJSONTypes, serializers.Serializer):
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
    area_rank = serializers.IntegerField(
        help_text="The rank within the item's semantic area (1 = its most related item): in a study ranked "
        "per area, the area's own final ranking."
    )
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
    area_rank = serializers.IntegerField(
        read_only=True,
        allow_null=True,
        help_text="The final rank within the item's semantic area (1 = its most related item; in a study "
        "ranked per area, the area's own final ranking). null until the study is finished.",
    )

    class Meta:
        model = Item
        fields = ["id", "index", "tokens", "area", "final_rank", "area_rank", "final_score", "last_ballot"]

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
    # A default for the results of jobs stored before these were counted.
    tokens_removed = serializers.IntegerField(default=0, help_text="Tokens removed by a replacement.")
    items_removed = serializers.IntegerField(
        default=0, help_text="Items removed: all of them when the items or the tokens are replaced."
    )
    warnings = serializers.ListField(child=serializers.CharField())


class TokensImportQuerySerializer(serializers.Serializer):
    mode = serializers.ChoiceField(
        choices=[
            ("add", "add the file's tokens to the study's"),
            ("replace", "the file becomes the whole pool: tokens, areas and items are removed first"),
        ],
        default="add",
        help_text="add: the file's tokens join the study's. replace: the study's tokens, semantic areas "
        "and items are removed and the file's tokens take their place (generate or upload the items "
        "again). Either way all or nothing, and only while the study is a draft.",
    )


class StudyJobSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    kind = serializers.ChoiceField(choices=StudyJob.Kind.choices)
    status = serializers.ChoiceField(choices=StudyJob.Status.choices)
    done = serializers.IntegerField(help_text="Units done (items written).")
    total = serializers.IntegerField(help_text="Units to do (items to write).")
    percent = serializers.IntegerField()
    result = ImportReportSerializer(allow_null=True, help_text="The outcome, once done.")
    error = serializers.CharField(allow_blank=True, help_text="Why it failed, if it did.")
    url = serializers.CharField(help_text="Where to follow it.")


class ItemsGenerateSerializer(StrictJSONTypes, serializers.Serializer):
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


@extend_schema_serializer(component_name="Vote")  # "VoteRequest" in the schema, not "VoteRequestRequest"
class VoteRequestSerializer(StrictJSONTypes, serializers.Serializer):
    assignment = serializers.IntegerField(min_value=1, max_value=MAX_DATABASE_ID)
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


NEXT_REASONS = [
    (NextReason.OK, "a comparison is in next"),
    (NextReason.NOT_STARTED, "the study has not started"),
    (NextReason.FINISHED, "the study has finished"),
    (NextReason.QUOTA, "you made as many comparisons in this ballot as one person may"),
    (NextReason.BALLOT_CLOSING, "every comparison of the ballot is judged; the next ballot opens soon"),
    (NextReason.NONE_FOR_YOU, "the comparisons left are pairs you have judged"),
    (NextReason.ALL_LEASED, "the comparisons left are being judged by others; some may come back"),
    (NextReason.EXCLUDED, "you were excluded from the study (screened out)"),
    (NextReason.ANNOTATOR_FINISHED, "you pressed Finish: your session has ended (completed)"),
]


class FinishResultSerializer(serializers.Serializer):
    outcome = serializers.CharField(
        help_text='"completed": Finish ends the session with the completion code.'
    )
    code = serializers.CharField(help_text="The study's completion code, for the crowd platform.")
    personal_code = serializers.CharField(
        allow_blank=True, help_text="Your own code for this outcome, when the study gives one; else blank."
    )
    completion_url = serializers.CharField(
        allow_blank=True, help_text="The crowd platform's completion address with the code, or blank."
    )
    votes = serializers.IntegerField(help_text="Your judgements in this study (answers to checks are not).")


class VoteResultSerializer(serializers.Serializer):
    vote = serializers.IntegerField()
    assignment = serializers.IntegerField()
    choice = serializers.ChoiceField(choices=Vote.Choice.choices)
    created = serializers.BooleanField(
        help_text="False when the vote was already recorded by an earlier request."
    )
    next = NextComparisonSerializer(
        allow_null=True,
        help_text="Your next comparison, leased as GET /api/studies/{slug}/next/ would lease it (the same "
        "body): show it without asking for it. null when there is none; next_reason says why.",
    )
    next_reason = serializers.ChoiceField(
        choices=NEXT_REASONS,
        help_text="ok when next holds a comparison; otherwise why there is none (GET next's X-Yardstick-Reason).",
    )
    next_retry_after = serializers.IntegerField(
        allow_null=True,
        min_value=0,
        help_text="Seconds after which a comparison may be available, when one is expected "
        "(GET next's Retry-After); null otherwise.",
    )


class ExclusionRequestSerializer(serializers.Serializer):
    reason = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=2000,
        help_text="Why the annotator is excluded (required), or why readmitted (optional); it is logged.",
    )


class ExclusionSerializer(serializers.ModelSerializer):
    """One row of the exclusion log: who excluded the annotator (a researcher, or a rule), when, why."""

    annotator_label = serializers.CharField(source="annotator.__str__", read_only=True)
    active = serializers.BooleanField(read_only=True)

    class Meta:
        model = Exclusion
        fields = [
            "id",
            "annotator",
            "annotator_label",
            "active",
            "reason",
            "rule",
            "username",
            "excluded_at",
            "votes_set_aside",
            "leases_released",
            "lifted_at",
            "lifted_by_username",
            "lift_reason",
        ]
        read_only_fields = fields

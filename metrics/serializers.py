"""Serializers of the metrics API: model owners' requests and the shape of every response.

Rows of scores are not validated here: ``metrics.services.submission_parse`` checks them and names
the first offending rows, so a bad row gets the same message through the API and the web form.
"""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from collection.models import Item
from collection.serializers import CsvFileField
from common.schema import BoundedFloatField
from common.serializers import StrictJSONTypes
from metrics.correlation import MIN_WEIGHT_OFFSET, MIN_WEIGHT_OFFSET_MESSAGE
from metrics.evaluation import COEFFICIENTS, chance_verdict
from metrics.leaderboard import LEADERBOARD_WEIGHT_OFFSETS, leaderboard_offsets_text
from metrics.models import Kind, Submission
from metrics.services import MAX_JUDGE_BYTES, MAX_WEIGHT_OFFSET, MAX_WEIGHT_OFFSET_MESSAGE

UNDEFINED_HELP = (
    "Present when the value is null: why it is undefined, e.g. 'ρ_w is undefined: every score is the same, "
    "so the scores rank nothing'."
)

METRIC_CHOICES = [(name, name) for name in COEFFICIENTS]


# --- items -----------------------------------------------------------------------------------------


class PairSerializer(serializers.ModelSerializer):
    item = serializers.IntegerField(source="pk", help_text="The item id to send with its score.")
    token_a = serializers.CharField(source="token_a.text")
    token_b = serializers.CharField(source="token_b.text")
    area = serializers.CharField(source="area.name", help_text="The semantic area of both tokens.")

    class Meta:
        model = Item
        fields = ["item", "token_a", "token_b", "area"]


# --- submissions -----------------------------------------------------------------------------------


class ScoreRowSerializer(serializers.Serializer):
    """One scored item, by id or by its two tokens (in either order); documentation only."""

    item = serializers.IntegerField(required=False, help_text="An item id from pairs/.")
    token_a = serializers.CharField(required=False, help_text="Instead of item: one token of the pair …")
    token_b = serializers.CharField(required=False, help_text="… and the other (either order).")
    score = serializers.FloatField(
        help_text="Higher means more related; any finite number a 64-bit float holds, up to about ±1.8e308. "
        "A nonzero number so small that it reads as 0 (below about 4.9e-324) is refused, as it would tie "
        "with every other such score."
    )


@extend_schema_field(ScoreRowSerializer(many=True))
class ScoreRowsField(serializers.Field):
    """The rows as sent, NaN included: the service checks each one and lists the first offending rows."""

    def to_internal_value(self, data):
        return data

    def to_representation(self, value):
        return value


class SubmissionCreateSerializer(StrictJSONTypes, serializers.Serializer):
    model_name = serializers.CharField(max_length=100, help_text="Unique among your models for this study.")
    description = serializers.CharField(required=False, allow_blank=True, default="")
    scores = ScoreRowsField(
        help_text='[{"item": 12, "score": 0.87}, …] or [{"token_a": "…", "token_b": "…", "score": 0.87}, …]'
    )


class SubmissionUploadSerializer(serializers.Serializer):
    model_name = serializers.CharField(max_length=100, help_text="Unique among your models for this study.")
    description = serializers.CharField(required=False, allow_blank=True, default="")
    file = CsvFileField(
        allow_empty_file=True,  # the service says what an empty file lacks
        help_text="A CSV file, UTF-8, at most 5 MiB, with the header item,score or token_a,token_b,score.",
    )


# A plain string in the schema: an enum named "status" would collide with the study's.
STATUS_HELP = "The evaluation at the defaults: " + ", ".join(Submission.Status.values) + "."


class SubmissionSerializer(serializers.ModelSerializer):
    study = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    status = serializers.CharField(help_text=STATUS_HELP)
    url = serializers.SerializerMethodField()

    class Meta:
        model = Submission
        fields = [
            "id",
            "study",
            "model_name",
            "description",
            "covered",
            "coverage",
            "source_format",
            "status",
            "progress",
            "error",
            "created_at",
            "url",
        ]

    def get_url(self, submission: Submission) -> str:
        return reverse("metrics-api:submission-detail", args=[submission.pk])


class SubmissionCreatedSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    model_name = serializers.CharField()
    covered = serializers.IntegerField(help_text="Items with a score.")
    coverage = serializers.FloatField(help_text="covered / items of the study")
    status = serializers.CharField(help_text=STATUS_HELP)
    progress = serializers.IntegerField(help_text="Percent done of the evaluation.")
    url = serializers.CharField(help_text="Where to follow the evaluation.")


# --- evaluations -----------------------------------------------------------------------------------


class CoefficientSerializer(serializers.Serializer):
    value = serializers.FloatField(allow_null=True, help_text="null when undefined (see undefined).")
    undefined = serializers.CharField(required=False, help_text=UNDEFINED_HELP)
    standard_error = serializers.FloatField(
        allow_null=True, required=False, help_text="SD of the value over the bootstrap replicates."
    )
    interval = serializers.ListField(
        child=serializers.FloatField(),
        min_length=2,
        max_length=2,
        allow_null=True,
        required=False,
        help_text="95% interval: value ± 1.96 standard errors.",
    )
    chance_mean = serializers.FloatField(
        required=False, help_text="Mean between unrelated rankings of this size (1000 random permutations)."
    )
    chance_sd = serializers.FloatField(required=False, help_text="SD between unrelated rankings.")
    p_value = serializers.FloatField(
        allow_null=True,
        required=False,
        help_text="One-sided Monte Carlo p-value against chance: (1 + #{random ≥ value}) / (1 + 1000).",
    )
    chance = serializers.SerializerMethodField(
        help_text="above, at or below chance: above when p ≤ 0.05, below when p ≥ 0.95 (at least 95% of the "
        "random rankings score as high), at chance in between; null when the value is undefined."
    )

    @extend_schema_field(serializers.ChoiceField(choices=["above", "at", "below"], allow_null=True))
    def get_chance(self, instance) -> str | None:
        return chance_verdict(instance)

    def to_representation(self, instance):
        # Only what was computed: an evaluation stored before ρ and τ had a chance level (it is
        # recomputed when read through the services) and one without intervals lack those keys.
        represented = super().to_representation(instance).items()
        return {
            key: value
            for key, value in represented
            if key in instance or key == "chance" and "p_value" in instance
        }


class GradeCountsSerializer(serializers.Serializer):
    S = serializers.IntegerField()
    A = serializers.IntegerField()
    B = serializers.IntegerField()


class RetrievalSerializer(serializers.Serializer):
    k = serializers.IntegerField()
    item_count = serializers.IntegerField()
    ranked_count = serializers.IntegerField()
    relevant_count = serializers.IntegerField(help_text="R: the human top-K of the covered items.")
    precision_at_k = serializers.FloatField()
    recall_at_k = serializers.FloatField()
    f_measure_at_k = serializers.FloatField(help_text="F_β of P@k and R@k (β, not trec_eval's β²).")
    average_precision = serializers.FloatField()
    r_precision = serializers.FloatField()
    bpref = serializers.FloatField()
    dcg_at_k = serializers.FloatField()
    ndcg_at_k = serializers.FloatField()
    reciprocal_rank = serializers.FloatField()
    q_measure = serializers.FloatField()
    r_measure = serializers.FloatField()
    recall_levels = serializers.ListField(child=serializers.FloatField(), help_text="0.0, 0.1, … 1.0")
    interpolated_precision = serializers.ListField(
        child=serializers.FloatField(), help_text="The 11-point interpolated precision."
    )
    f_beta = serializers.FloatField()
    q_beta = serializers.FloatField()
    gains = serializers.ListField(child=serializers.FloatField(), help_text="Gain of grades B, A, S.")
    discount = serializers.CharField()


class EvaluationSerializer(serializers.Serializer):
    """An evaluation result without its bootstrap replicate values."""

    part = serializers.CharField(
        required=False,
        help_text="The items it is computed on: all, or in a study that keeps a hidden test part, the public "
        "development part (the owner's evaluation) or the hidden test part (the leaderboard's aggregates).",
    )
    items = serializers.IntegerField(help_text="Items of the part it is computed on (of the study: all).")
    covered = serializers.IntegerField(help_text="Items with a model score and a human score.")
    coverage = serializers.FloatField()
    weight_offset = serializers.FloatField(help_text="n0 of f(n) = 1/(n+n0)² (Eq. 9).")
    first_rank_weight = serializers.FloatField(help_text="R(n0): the first rank's share of the weight.")
    top_k = serializers.IntegerField(help_text="K: the human top-K items are the relevant ones.")
    grade_counts = GradeCountsSerializer(help_text="Relevant items graded S, A and B.")
    replicate_count = serializers.IntegerField(required=False, help_text="Bootstrap replicates.")
    rho_w = CoefficientSerializer(help_text="Weighted Spearman ρ_w (Eq. 8-9).")
    tau_w = CoefficientSerializer(help_text="Weighted Kendall τ_w (Eq. 8-9).")
    rho = CoefficientSerializer(help_text="Spearman ρ.")
    tau = CoefficientSerializer(help_text="Kendall τ_b.")
    retrieval = RetrievalSerializer()


class SubmissionDetailSerializer(SubmissionSerializer):
    evaluation = serializers.SerializerMethodField(
        help_text="At the study's defaults; in a study that keeps a hidden test part, over the public "
        "development part."
    )
    test_part = serializers.SerializerMethodField(
        help_text="In a study that keeps a hidden test part: the leaderboard's figures of this model on it "
        "(coefficients with intervals, chance level, retrieval measures), aggregates over the part, never "
        "per item; null otherwise."
    )

    class Meta(SubmissionSerializer.Meta):
        fields = [*SubmissionSerializer.Meta.fields, "evaluation", "test_part"]

    @extend_schema_field(EvaluationSerializer(allow_null=True))
    def get_evaluation(self, submission: Submission) -> dict | None:
        result = self.context.get("evaluation")
        return EvaluationSerializer(result).data if result is not None else None

    @extend_schema_field(EvaluationSerializer(allow_null=True))
    def get_test_part(self, submission: Submission) -> dict | None:
        result = self.context.get("test_part")
        return EvaluationSerializer(result).data if result is not None else None


class EvaluationQuerySerializer(serializers.Serializer):
    n0 = serializers.FloatField(
        min_value=MIN_WEIGHT_OFFSET,
        max_value=MAX_WEIGHT_OFFSET,
        required=False,
        default=2.0,
        error_messages={"min_value": MIN_WEIGHT_OFFSET_MESSAGE, "max_value": MAX_WEIGHT_OFFSET_MESSAGE},
        help_text="Weight offset n0 of f(n) = 1/(n + n0)², from -0.9 (where the first rank takes R(-0.9) = 0.986 "
        "of the weight; nearer -1, 64-bit floats lose the other ranks' share) to 1,000,000 (default 2).",
    )
    k = serializers.IntegerField(
        required=False, min_value=1, help_text="K of the retrieval measures (default: the study's)."
    )


# --- leaderboard and annotators --------------------------------------------------------------------


class LeaderboardQuerySerializer(serializers.Serializer):
    metric = serializers.ChoiceField(
        choices=METRIC_CHOICES,
        default="tau_w",
        required=False,
        error_messages={
            "invalid_choice": f'"{{input}}" is not a metric: use one of {", ".join(COEFFICIENTS)}.'
        },
    )
    n0 = BoundedFloatField(
        one_of=LEADERBOARD_WEIGHT_OFFSETS,
        required=False,
        default=2.0,
        help_text=f"Weight offset n0: one of {leaderboard_offsets_text()}.",
    )

    def validate_n0(self, value: float) -> float:
        if value not in LEADERBOARD_WEIGHT_OFFSETS:
            raise serializers.ValidationError(
                f"the leaderboard offers n0 = {leaderboard_offsets_text()}, got {value:g}; your own "
                "submissions can be evaluated at any n0 from -0.9 to 1,000,000 at /api/submissions/<id>/evaluation/"
            )
        return value


class LeaderboardMetricsSerializer(serializers.Serializer):
    rho_w = CoefficientSerializer()
    tau_w = CoefficientSerializer()
    rho = CoefficientSerializer()
    tau = CoefficientSerializer()


class AreaCoefficientSerializer(serializers.Serializer):
    value = serializers.FloatField(
        allow_null=True,
        help_text="null when undefined: the area has fewer than two covered items, or one ranking is constant.",
    )
    undefined = serializers.CharField(required=False, help_text=UNDEFINED_HELP)
    standard_error = serializers.FloatField(
        allow_null=True, required=False, help_text="SD of the value over the study's bootstrap replicates."
    )
    interval = serializers.ListField(
        child=serializers.FloatField(),
        min_length=2,
        max_length=2,
        allow_null=True,
        required=False,
        help_text="95% interval: value ± 1.96 standard errors.",
    )


class LeaderboardAreaSerializer(serializers.Serializer):
    area = serializers.CharField(help_text="The semantic area's name.")
    items = serializers.IntegerField(help_text="The area's items.")
    covered = serializers.IntegerField(help_text="The area's items that both the model and the study score.")
    rho_w = AreaCoefficientSerializer(help_text="ρ_w (Eq. 8) over the area's items, ranked within the area.")
    tau_w = AreaCoefficientSerializer(help_text="τ_w (Eq. 9) over the area's items, ranked within the area.")
    rho = AreaCoefficientSerializer(help_text="Spearman's ρ over the area's items.")
    tau = AreaCoefficientSerializer(help_text="Kendall's τ over the area's items.")


class LeaderboardRowSerializer(serializers.Serializer):
    name = serializers.CharField(help_text='"model_name (owner)": how other rows refer to this one.')
    model_name = serializers.CharField()
    owner = serializers.CharField()
    value = serializers.FloatField(
        allow_null=True, help_text="The chosen metric; null when undefined (metrics.<metric>.undefined says why)."
    )
    interval = serializers.ListField(
        child=serializers.FloatField(), min_length=2, max_length=2, allow_null=True
    )
    rank = serializers.IntegerField(
        allow_null=True,
        help_text="1 + the number of models significantly better; null for a model whose value is undefined, "
        "which is compared with none and listed last.",
    )
    rank_range = serializers.ListField(
        child=serializers.IntegerField(),
        min_length=2,
        max_length=2,
        allow_null=True,
        help_text="[rank, models with a value - the number of models significantly worse]; null when undefined.",
    )
    indistinguishable_from = serializers.ListField(
        child=serializers.CharField(), help_text="Models whose difference interval contains zero."
    )
    coverage = serializers.FloatField()
    submitted_at = serializers.DateTimeField()
    metrics = LeaderboardMetricsSerializer(help_text="All four coefficients of the model.")
    sealed_at = serializers.DateTimeField(
        allow_null=True,
        help_text="When the owner sealed this file by its SHA-256, before showing it; null if not.",
    )
    sealed_while = serializers.CharField(
        allow_null=True, help_text="The study's status then: running means before its final ranking existed."
    )
    variants = serializers.IntegerField(
        help_text="How many models the owner submitted for this study, all counted (pending, evaluated), but for "
        "those that failed on our side."
    )
    interval_adjusted = serializers.ListField(
        child=serializers.FloatField(),
        min_length=2,
        max_length=2,
        allow_null=True,
        help_text="The 95% interval widened for the owner's variants (Bonferroni: value ± z·SE with z the "
        "1 - 0.025/variants normal quantile), so that an owner's best of many is not read as better than it is.",
    )
    areas = LeaderboardAreaSerializer(
        many=True,
        help_text="The four coefficients restricted to each semantic area's items, with 95% intervals from "
        "the same bootstrap replicates: where the model is strong or weak. In a study ranked per area these "
        "are the area's own rankings; in a joint one, the joint ranking restricted to the area.",
    )


class LeaderboardSubmissionSerializer(serializers.Serializer):
    model_name = serializers.CharField()
    owner = serializers.CharField()
    status = serializers.CharField(help_text="pending, running, done or failed.")
    submitted_at = serializers.DateTimeField()


class CrowdPartSerializer(serializers.Serializer):
    annotators = serializers.IntegerField(help_text="Annotators with at least one vote.")
    votes = serializers.IntegerField()


class CrowdSerializer(serializers.Serializer):
    people = CrowdPartSerializer()
    simulated = CrowdPartSerializer(help_text="Simulated annotators: no person's judgement.")


class LeaderboardSerializer(serializers.Serializer):
    study = serializers.CharField()
    metric = serializers.ChoiceField(choices=METRIC_CHOICES)
    weight_offset = serializers.FloatField()
    top_k = serializers.IntegerField()
    part = serializers.CharField(
        help_text="The items every row's figures are computed on: all, or the hidden test part of a study "
        "that keeps one (whose human scores are never published).",
    )
    part_items = serializers.IntegerField(help_text="How many items that part holds.")
    areas_part = serializers.CharField(
        help_text="The items of each area the rows' areas figures are over: all, or the development part.",
    )
    replicate_count = serializers.IntegerField(
        source="replicates", help_text="Bootstrap replicates of the human ranking."
    )
    rows = LeaderboardRowSerializer(many=True)
    crowd = CrowdSerializer(
        help_text="The votes behind the human ranking, people's and simulated annotators' (simulate_voters) apart."
    )
    submissions = LeaderboardSubmissionSerializer(
        many=True, help_text="Every submission for the study, oldest first, whatever became of it."
    )


class AnnotatorAgreementSerializer(serializers.Serializer):
    per_annotator = serializers.ListField(
        child=serializers.FloatField(allow_null=True),
        help_text="Agreement with annotator 0 … A-1; null for one without a usable vote.",
    )
    min = serializers.FloatField(allow_null=True)
    max = serializers.FloatField(allow_null=True)
    mean = serializers.FloatField(allow_null=True)
    sd = serializers.FloatField(allow_null=True)
    annotators = serializers.IntegerField(help_text="Annotators with a usable vote.")


class PairedTestSerializer(serializers.Serializer):
    first = serializers.CharField()
    second = serializers.CharField()
    annotators = serializers.IntegerField()
    t_statistic = serializers.FloatField(allow_null=True)
    p_value = serializers.FloatField(allow_null=True, help_text="Two-sided paired t-test.")


class AnnotatorViewSerializer(serializers.Serializer):
    annotators = serializers.IntegerField()
    part = serializers.CharField(
        help_text="The votes compared: all, or in a study that keeps a hidden test part, the votes between "
        "two development items only.",
    )
    models = serializers.DictField(child=AnnotatorAgreementSerializer(), help_text='By "model_name (owner)".')
    paired_tests = PairedTestSerializer(many=True)


# --- instrument card -------------------------------------------------------------------------------


class SealCreateSerializer(serializers.Serializer):
    model_name = serializers.CharField(
        max_length=100, help_text="The name the submission will carry (a model's or a judge's: they share names)."
    )
    kind = serializers.ChoiceField(
        choices=Kind.choices, required=False, default=Kind.MODEL, help_text="What it seals: a model (default) or a judge."
    )
    sha256 = serializers.CharField(
        max_length=64,
        help_text="SHA-256 of the scores file you will upload (64 hexadecimal digits: sha256sum scores.csv).",
    )


class SealSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    model_name = serializers.CharField()
    kind = serializers.CharField(help_text="model or judge.")
    sha256 = serializers.CharField()
    sealed_at = serializers.DateTimeField()
    study_status = serializers.CharField(help_text="The study's status when the seal was made.")
    submission = serializers.IntegerField(
        source="submission_id", allow_null=True, help_text="The submission that revealed it, once uploaded."
    )


class CardStudySerializer(serializers.Serializer):
    name = serializers.CharField()
    slug = serializers.CharField()
    status = serializers.CharField()


SECTION_HELP = "null before the first ballot has closed."


class CardSerializer(serializers.Serializer):
    """The instrument card as the .json download gives it (documentation of the response only)."""

    version = serializers.IntegerField(help_text="The card's version: it changes when its contents do.")
    study = CardStudySerializer()
    procedure = serializers.DictField(
        help_text="Question, instructions, areas, tokens, items, plan, ballots, annotators, votes, response times."
    )
    changes = serializers.ListField(
        child=serializers.DictField(), help_text="Settings changed after the start, oldest first."
    )
    principle = serializers.CharField(help_text="How the instrument measures (Lombardo et al., Eq. 1, 5, 6).")
    split = serializers.DictField(
        allow_null=True,
        required=False,
        help_text="The hidden test part of a study that keeps one: hidden_share, development_items, test_items "
        "(counts, never which items; from card version 7); null without one.",
    )
    precision = serializers.DictField(
        allow_null=True,
        help_text="Bootstrap SD of every item's score ȳ; its per-item rows list the development part only in a "
        "study that keeps a hidden test part. " + SECTION_HELP,
    )
    repeatability = serializers.DictField(
        allow_null=True, help_text="Split-half reliability and Krippendorff's α. " + SECTION_HELP
    )
    resolution = serializers.DictField(
        allow_null=True,
        help_text="The smallest score difference told apart with 95% agreement. " + SECTION_HELP,
    )
    chance = serializers.DictField(
        allow_null=True,
        help_text="Mean and SD of ρ_w, τ_w, ρ and τ between unrelated rankings of the items. " + SECTION_HELP,
    )
    reproducibility = serializers.ListField(
        child=serializers.DictField(), help_text="Agreement with each finished replication of the same items."
    )
    exclusions = serializers.DictField(
        allow_null=True,
        required=False,
        help_text="Annotators excluded (a count, never who), their votes, by rule or researcher, and ρ and τ between "
        "the scores with and without them over the same ballots (from card version 6); null without exclusions.",
    )
    fragility = serializers.DictField(
        allow_null=True,
        required=False,
        help_text="The fewest votes found whose removal changes the top item and the top-K set (a greedy upper "
        "bound; from card version 6). " + SECTION_HELP,
    )


class CardComputingSerializer(serializers.Serializer):
    detail = serializers.CharField()
    retry_after = serializers.IntegerField(help_text="Seconds to wait before asking again (as Retry-After).")
    progress = serializers.FloatField(
        allow_null=True,
        help_text="The share of the card's computation done (0 to 1), as it last reported; null before it starts.",
    )


class AuthTokenResponseSerializer(serializers.Serializer):
    token = serializers.CharField(help_text="Send it as the header 'Authorization: Token <token>'.")


# --- judges ----------------------------------------------------------------------------------------


class JudgePairSerializer(serializers.Serializer):
    pair = serializers.IntegerField(help_text="The pair number 1 … P to send with its decision.")
    left_item = serializers.IntegerField(help_text="The item shown on the left (its id).")
    left_token_a = serializers.CharField()
    left_token_b = serializers.CharField()
    right_item = serializers.IntegerField(help_text="The item shown on the right (its id).")
    right_token_a = serializers.CharField()
    right_token_b = serializers.CharField()


class DecisionRowSerializer(serializers.Serializer):
    """One decided pair; documentation only (the service checks the rows and names the bad ones)."""

    pair = serializers.IntegerField(help_text="A pair number from judge-pairs/.")
    decision = serializers.CharField(
        help_text="left (the left item is more related), right, or tie where the study allows ties; any case. "
        "1, 0 and 0.5 are read as left, right and tie."
    )


@extend_schema_field(DecisionRowSerializer(many=True))
class DecisionRowsField(ScoreRowsField):
    """The rows as sent: the service checks each one and lists the first offending rows."""


JUDGE_NAME_HELP = "Unique among your models and judges for this study."


class JudgeCreateSerializer(StrictJSONTypes, serializers.Serializer):
    judge_name = serializers.CharField(max_length=100, help_text=JUDGE_NAME_HELP)
    description = serializers.CharField(required=False, allow_blank=True, default="")
    decisions = DecisionRowsField(help_text='[{"pair": 1, "decision": "left"}, …]')


class JudgeUploadSerializer(serializers.Serializer):
    judge_name = serializers.CharField(max_length=100, help_text=JUDGE_NAME_HELP)
    description = serializers.CharField(required=False, allow_blank=True, default="")
    file = CsvFileField(
        allow_empty_file=True,  # the service says what an empty file lacks
        help_text=f"UTF-8, at most {MAX_JUDGE_BYTES // 2**20} MiB: a CSV with the header pair,decision, or JSONL, "
        'one {"pair": 1, "decision": "left"} per line (told apart by the first character).',
    )


class JudgeSerializer(serializers.ModelSerializer):
    study = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    judge_name = serializers.CharField(source="model_name")
    decided = serializers.IntegerField(source="covered", help_text="Pairs with a decision.")
    coverage = serializers.FloatField(help_text="decided / pairs of the study")
    status = serializers.CharField(help_text=STATUS_HELP)
    url = serializers.SerializerMethodField()

    class Meta:
        model = Submission
        fields = [
            "id",
            "study",
            "judge_name",
            "description",
            "decided",
            "coverage",
            "source_format",
            "status",
            "progress",
            "error",
            "created_at",
            "url",
        ]

    def get_url(self, judge: Submission) -> str:
        return reverse("metrics-api:judge-detail", args=[judge.pk])


class JudgeCreatedSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    judge_name = serializers.CharField()
    decided = serializers.IntegerField(help_text="Pairs with a decision.")
    coverage = serializers.FloatField(help_text="decided / pairs of the study")
    status = serializers.CharField(help_text=STATUS_HELP)
    progress = serializers.IntegerField(help_text="Percent done of the evaluation.")
    url = serializers.CharField(help_text="Where to follow the evaluation.")


class CrowdFigureSerializer(serializers.Serializer):
    value = serializers.FloatField(allow_null=True)
    interval = serializers.ListField(child=serializers.FloatField(), allow_null=True, required=False)


class AgreementFigureSerializer(CrowdFigureSerializer):
    pairs = serializers.IntegerField(required=False, help_text="Pairs it is over (majority: those with one).")
    votes = serializers.IntegerField(required=False, help_text="Votes it is over (single annotators, κ).")
    crowd = CrowdFigureSerializer(help_text="The crowd's own figure: the ceiling of a judge's.")

    def to_representation(self, instance):
        # Only what was computed: majority counts pairs, the others votes.
        return {key: value for key, value in super().to_representation(instance).items() if key in instance}


class JudgeAgreementSerializer(serializers.Serializer):
    majority = AgreementFigureSerializer(
        help_text="Accuracy against the crowd's majority, on the pairs where the crowd has one (pairs)."
    )
    single = AgreementFigureSerializer(help_text="Accuracy against single annotators' votes (votes).")
    kappa = AgreementFigureSerializer(help_text="Cohen's κ against the crowd, beside the crowd's own κ.")
    side = serializers.DictField(
        help_text="left_share, p_value, crowd_left_share, biased (bool), sentence: whether it favours a side."
    )


class DisagreementRowSerializer(serializers.Serializer):
    label = serializers.CharField()
    comparisons = serializers.IntegerField()
    disagreement = serializers.FloatField(allow_null=True)
    interval = serializers.ListField(child=serializers.FloatField(), allow_null=True, required=False)


class DisagreementSerializer(serializers.Serializer):
    by_area = DisagreementRowSerializer(many=True)
    by_band = DisagreementRowSerializer(many=True, help_text="The top of the reference ranking against the rest.")
    by_closeness = DisagreementRowSerializer(many=True, help_text="By how close the crowd's vote was.")


class VerdictSerializer(serializers.Serializer):
    indistinguishable = serializers.BooleanField(
        help_text="Whether the judge's ranking cannot be told from the crowd's own split-half replicate."
    )
    direction = serializers.CharField(help_text="like the crowd, worse than the crowd or better than the crowd.")
    difference = CrowdFigureSerializer(help_text="The judge's ρ_w minus the crowd's split-half ρ_w, with its interval.")
    judge_rho_w = serializers.FloatField(allow_null=True)
    crowd_rho_w = serializers.FloatField(allow_null=True)
    splits = serializers.IntegerField()
    share_at_least_crowd = serializers.FloatField(allow_null=True)
    sentence = serializers.CharField(help_text="The verdict in words, with its confidence.")


class JudgeEvaluationSerializer(serializers.Serializer):
    """A judge's evaluation (``metrics.judges.judge_result``) without its bootstrap replicate values."""

    part = serializers.CharField(help_text="all, or the development part (the owner's) or the test part.")
    pairs = serializers.IntegerField(help_text="The judge pairs of the part.")
    decided = serializers.IntegerField()
    coverage = serializers.FloatField()
    score_model = serializers.CharField(help_text="The study's score model that turned the decisions into scores.")
    agreement = JudgeAgreementSerializer()
    ranking = EvaluationSerializer(help_text="The judge's ranking against the reference, as a model's evaluation.")
    disagreement = DisagreementSerializer()
    verdict = VerdictSerializer()
    areas = serializers.ListField(
        child=serializers.DictField(),
        required=False,
        help_text="Per-area study only: per area its ρ_w, τ_w, ρ and τ, as a model's areas.",
    )

    def to_representation(self, instance):
        # The result as computed: its nested figures are JSON already (finite_or_none).
        return dict(instance)


class JudgeDetailSerializer(JudgeSerializer):
    evaluation = serializers.SerializerMethodField(
        help_text="At the study's defaults once done; in a study that keeps a hidden test part, over the "
        "public development part."
    )
    test_part = serializers.SerializerMethodField(
        help_text="In a study that keeps a hidden test part: the judges' leaderboard figures of this judge on it, "
        "aggregates over the part, never per pair; null otherwise."
    )

    class Meta(JudgeSerializer.Meta):
        fields = [*JudgeSerializer.Meta.fields, "evaluation", "test_part"]

    @extend_schema_field(JudgeEvaluationSerializer(allow_null=True))
    def get_evaluation(self, judge: Submission) -> dict | None:
        return self.context.get("evaluation")

    @extend_schema_field(serializers.DictField(allow_null=True))
    def get_test_part(self, judge: Submission) -> dict | None:
        return self.context.get("test_part")


class JudgeStandingSerializer(serializers.Serializer):
    pairs = serializers.IntegerField(help_text="The judge pairs of the part ranked.")
    decided = serializers.IntegerField()
    majority = AgreementFigureSerializer(help_text="Accuracy against the crowd's majority.")
    kappa = AgreementFigureSerializer(help_text="Cohen's κ against the crowd, and the crowd's own (the ceiling).")
    side = serializers.DictField()
    verdict = VerdictSerializer()


class JudgeLeaderboardRowSerializer(serializers.Serializer):
    name = serializers.CharField(help_text='"judge_name (owner)": how other rows refer to this one.')
    judge_name = serializers.CharField(source="model_name")
    owner = serializers.CharField()
    value = serializers.FloatField(allow_null=True, help_text="The chosen coefficient of the judge's ranking.")
    interval = serializers.ListField(child=serializers.FloatField(), min_length=2, max_length=2, allow_null=True)
    rank = serializers.IntegerField(allow_null=True, help_text="1 + the number of judges significantly better.")
    rank_range = serializers.ListField(
        child=serializers.IntegerField(), min_length=2, max_length=2, allow_null=True
    )
    indistinguishable_from = serializers.ListField(child=serializers.CharField())
    coverage = serializers.FloatField(help_text="Decided pairs / pairs.")
    submitted_at = serializers.DateTimeField()
    metrics = LeaderboardMetricsSerializer(help_text="ρ_w, τ_w, ρ and τ of the judge's ranking.")
    sealed_at = serializers.DateTimeField(allow_null=True)
    sealed_while = serializers.CharField(allow_null=True)
    variants = serializers.IntegerField(help_text="How many judges the owner submitted for this study.")
    interval_adjusted = serializers.ListField(
        child=serializers.FloatField(), min_length=2, max_length=2, allow_null=True
    )
    judge = JudgeStandingSerializer(help_text="Agreement with the crowd and the verdict, on the part ranked.")


class JudgeLeaderboardSubmissionSerializer(serializers.Serializer):
    judge_name = serializers.CharField(source="model_name")
    owner = serializers.CharField()
    status = serializers.CharField(help_text="pending, running, done or failed.")
    submitted_at = serializers.DateTimeField()


class JudgeLeaderboardSerializer(LeaderboardSerializer):
    rows = JudgeLeaderboardRowSerializer(many=True)
    submissions = JudgeLeaderboardSubmissionSerializer(
        many=True, help_text="Every judge submitted for the study, oldest first, whatever became of it."
    )

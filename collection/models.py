"""Studies, their token and item pools, ballots, comparisons, annotators, assignments, votes, and the
per-ballot scores that the close of a ballot writes.

The database keeps the invariants: a comparison has at most one vote, an assignment at most one vote,
an annotator at most one active assignment and at most one vote per pair of items in a study, a ballot
number exists once per study, an item is an unordered pair of two distinct tokens.
"""

from __future__ import annotations

import secrets
import uuid

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import connection, models
from django.db.models import F, OuterRef, Q, Subquery, Sum
from django.db.models.functions import Coalesce
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver
from django.urls import reverse

from collection import limits
from common.models import BackgroundWork
from scoring.score_models import BORDA, OFFERED_SCORE_MODELS, SCORE_MODEL_LABELS


def _new_completion_code() -> str:
    return secrets.token_hex(4).upper()


def _new_seed() -> int:
    return secrets.randbits(62)


def _new_participant_secret() -> str:
    return secrets.token_hex(32)


def _share_validators(name: str) -> list:
    message = limits.QUALITY_SHARE_MESSAGE.format(name=name)
    return [MinValueValidator(0, message=message), MaxValueValidator(1, message=message)]


def _share_or_blank(name: str) -> Q:
    return Q(**{f"{name}__isnull": True}) | (Q(**{f"{name}__gte": 0}) & Q(**{f"{name}__lte": 1}))


class Study(models.Model):
    """One data-collection campaign: question, pools, plan, ballots, votes and results."""

    class Status(models.TextChoices):
        DRAFT = "draft", "draft"
        RUNNING = "running", "running"
        FINISHED = "finished", "finished"

    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=80, unique=True, help_text="Used in the annotators' link, /s/SLUG/.")
    question = models.CharField(
        max_length=300,
        default="Which pair of words is more closely related?",
        help_text="Shown above every comparison.",
    )
    instructions = models.TextField(
        blank=True,
        default=(
            "You will see two pairs of words. Choose the pair whose two words are more closely related "
            "in meaning: words can be related because they are similar, opposite, or often used together. "
            "There are no right or wrong answers; follow your first impression."
        ),
        help_text="Shown on the consent page before voting.",
    )
    allow_ties = models.BooleanField(default=False, help_text='Offer an "equally related" answer.')
    language = models.CharField(
        max_length=7,
        choices=settings.LANGUAGES,
        default="en",
        help_text="The language of the name, question, instructions and check instructions above, and of the "
        "annotators' pages when they ask for no language that the study has texts in (Translations below).",
    )

    class RankingScope(models.TextChoices):
        JOINT = "joint", "one joint ranking of all areas"
        PER_AREA = "per_area", "one ranking per semantic area"

    ranking_scope = models.CharField(
        max_length=10,
        choices=RankingScope.choices,
        default=RankingScope.JOINT,
        help_text="Joint: the areas are ranked together, so a comparison may set a pair of one area against "
        "a pair of another. Per area (§2.1-2.2): comparisons only within an area, survivors and scores "
        "per area, one final ranking per area.",
    )

    # The final ranking's score model (scoring/score_models.py); the closes always select by ȳ (§2.5).
    score_model = models.CharField(
        max_length=32,
        choices=[(name, SCORE_MODEL_LABELS[name]) for name in OFFERED_SCORE_MODELS],
        default=BORDA,
        help_text="The model that turns the votes of every closed ballot into the final ranking. Rescaled Borda "
        "(Lombardo et al.) is the paper's and the default; the survivors of each ballot are always chosen by it. "
        "Bradley-Terry fits every ballot's votes at once; the worker-aware Bradley-Terry also fits each "
        "annotator's reliability and side bias, so careless or one-sided annotators weigh less without being "
        "excluded. In simulations of the paper's setting (990 items, 19,660 comparisons), both ranked the same votes "
        "better than Borda on every measure and crowd tried; the worker-aware one by the most, above all when some "
        "annotators click at random or always pick one side (top-10 recall .92 against Borda's .65 when 36 of 100 "
        "annotators do). See docs/protocols.md, “Score models compared”.",
    )

    ballot_count = models.PositiveSmallIntegerField(
        default=7,
        validators=[
            MinValueValidator(1),
            MaxValueValidator(limits.MAX_BALLOTS, message=limits.BALLOTS_MESSAGE),
        ],
        help_text="n_b, the number of ballots (§2.5).",
    )
    keep_fraction = models.FloatField(
        default=0.5, help_text="α, the fraction of items kept after each ballot."
    )
    appearances = models.PositiveIntegerField(
        null=True,
        blank=True,
        default=20,
        validators=[
            MinValueValidator(1),
            MaxValueValidator(limits.MAX_APPEARANCES, message=limits.APPEARANCES_MESSAGE),
        ],
        help_text="M, appearances of each item in each ballot.",
    )
    comparison_budget = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[
            MinValueValidator(1),
            MaxValueValidator(limits.MAX_TOTAL_COMPARISONS, message=limits.BUDGET_MESSAGE),
        ],
        help_text="Instead of M: the total number of comparisons; M is derived from it.",
    )
    seconds_per_comparison = models.FloatField(
        default=6.0,
        validators=[MaxValueValidator(limits.MAX_SECONDS_PER_COMPARISON, message=limits.SECONDS_MESSAGE)],
        help_text="Mean time per comparison, for the cost estimate (Eq. 10).",
    )
    lease_seconds = models.PositiveIntegerField(
        default=300,
        validators=[
            MinValueValidator(10),
            MaxValueValidator(limits.MAX_LEASE_SECONDS, message=limits.LEASE_MESSAGE),
        ],
        help_text="How long an annotator holds a comparison before it returns to the pool.",
    )
    votes_per_annotator_per_ballot = models.PositiveIntegerField(
        null=True, blank=True, default=200, help_text="Cap per annotator and ballot (§2.5); blank for none."
    )
    ballot_deadline_hours = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[
            MinValueValidator(1),
            MaxValueValidator(limits.MAX_BALLOT_DEADLINE_HOURS, message=limits.DEADLINE_MESSAGE),
        ],
        help_text="Close a ballot this many hours after it opens, voted or not.",
    )
    completion_code = models.CharField(max_length=32, default=_new_completion_code)
    no_work_code = models.CharField(
        max_length=32,
        default=_new_completion_code,
        help_text="The completion code of a participant who found no work: nothing left to judge, or a wait "
        "longer than the longest wait.",
    )
    screened_out_code = models.CharField(
        max_length=32,
        default=_new_completion_code,
        help_text="The completion code of a participant who was excluded (screened out): failed checks, "
        "a quality rule, or a researcher's decision.",
    )
    max_wait_seconds = models.PositiveIntegerField(
        default=300,
        validators=[
            MinValueValidator(limits.MIN_WAIT_SECONDS, message=limits.WAIT_MESSAGE),
            MaxValueValidator(limits.MAX_WAIT_SECONDS, message=limits.WAIT_MESSAGE),
        ],
        help_text="Seconds a participant waits for work (a ballot closing, every comparison taken) before "
        "the page offers the exit with the no-work code.",
    )
    min_judgements = models.PositiveIntegerField(
        default=20,
        help_text="Judgements after which a participant may press Finish and leave with the completion code "
        "(the consent page states it); 0 lets them finish at any time.",
    )
    participant_codes = models.BooleanField(
        default=False,
        help_text="Also give each participant a code of their own for each outcome, listed in the exports.",
    )
    # A float, as seconds_per_comparison: it feeds an estimate, and the change trail stores it as JSON.
    pay_per_hour = models.FloatField(
        null=True,
        blank=True,
        validators=[
            MinValueValidator(0.01, message=limits.PAY_MESSAGE),
            MaxValueValidator(limits.MAX_PAY_PER_HOUR, message=limits.PAY_MESSAGE),
        ],
        help_text="Pay per hour, for the estimate on the consent page; blank for none.",
    )
    pay_currency = models.CharField(
        max_length=3, blank=True, default="GBP", help_text="The pay's currency, e.g. GBP or USD."
    )
    completion_redirect_url = models.URLField(
        blank=True, help_text="Where annotators go when done, e.g. the crowd platform's completion URL."
    )
    seed = models.BigIntegerField(
        default=_new_seed,
        validators=[
            MinValueValidator(0, message=limits.SEED_MESSAGE),
            MaxValueValidator(limits.MAX_SEED, message=limits.SEED_MESSAGE),
        ],
        help_text="Seed of the random schedules.",
    )
    require_signed_links = models.BooleanField(
        default=False,
        help_text="Accept a participant id only with its signature (sig = HMAC-SHA256 of the id with the "
        "study's participant secret), so that nobody can invent participant ids.",
    )
    participant_secret = models.CharField(
        max_length=64,
        default=_new_participant_secret,
        editable=False,
        help_text="The key of the participant links' signatures; keep it private.",
    )
    item_source = models.CharField(
        max_length=200,
        blank=True,
        editable=False,
        help_text="How the items were made, for the instrument card.",
    )
    minimum_coverage = models.FloatField(
        default=0.5, help_text="Model submissions scoring fewer than this share of the items are refused."
    )
    max_variants_per_owner = models.PositiveSmallIntegerField(
        default=10,
        validators=[MinValueValidator(1), MaxValueValidator(limits.MAX_VARIANTS_PER_OWNER)],
        help_text="How many models one owner may submit for this study, all counted: pending, failed and "
        "evaluated (a leaderboard that lets an owner try many variants and show the best is inflated).",
    )
    hidden_share = models.FloatField(
        default=0.0,
        validators=[
            MinValueValidator(0, message=limits.HIDDEN_SHARE_MESSAGE),
            MaxValueValidator(limits.MAX_HIDDEN_SHARE, message=limits.HIDDEN_SHARE_MESSAGE),
        ],
        help_text="Share of the items kept as a hidden test part (0 to 0.9; 0, no split): their human "
        "scores are never published and the leaderboard ranks models on them alone; the others form the "
        "public development part. Drawn from the seed when the study starts, stratified by semantic area.",
    )
    relevant_top_k = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="K of the retrieval measures: the human top-K items count as relevant. "
        "Blank: a tenth of the items, at most 100.",
    )
    # Quality control: the thresholds past which the results page flags an annotator (blank: no check).
    # They judge the votes, not how they were collected, so they may change at any time.
    quality_fast_ms = models.PositiveIntegerField(
        null=True,
        blank=True,
        default=1000,
        validators=[
            MinValueValidator(1, message=limits.QUALITY_FAST_MS_MESSAGE),
            MaxValueValidator(limits.MAX_QUALITY_FAST_MS, message=limits.QUALITY_FAST_MS_MESSAGE),
        ],
        help_text="An answer given in fewer milliseconds than this is fast (reading two pairs of words "
        "and choosing takes seconds; the cost estimate assumes 6 s). Blank: no speed check.",
    )
    quality_max_fast_share = models.FloatField(
        null=True,
        blank=True,
        default=0.25,
        validators=_share_validators("quality_max_fast_share"),
        help_text="Flag an annotator whose share of fast answers is above this (0 to 1). Blank: no flag.",
    )
    quality_position_alpha = models.FloatField(
        null=True,
        blank=True,
        default=0.05,
        validators=[
            MinValueValidator(0, message=limits.QUALITY_ALPHA_MESSAGE),
            MaxValueValidator(1, message=limits.QUALITY_ALPHA_MESSAGE),
        ],
        help_text="Flag an annotator whose left-choice rate differs from 50% at this significance level "
        "(exact binomial test, Holm-corrected across the annotators). Blank: no flag.",
    )
    quality_min_majority_agreement = models.FloatField(
        null=True,
        blank=True,
        default=0.6,
        validators=_share_validators("quality_min_majority_agreement"),
        help_text="Flag an annotator who agrees with the others' majority less often than this (0 to 1; "
        "a random clicker agrees about half the time without ties). Blank: no flag.",
    )
    quality_min_self_agreement = models.FloatField(
        null=True,
        blank=True,
        default=None,
        validators=_share_validators("quality_min_self_agreement"),
        help_text="Flag an annotator who judges the pairs they saw more than once the same way less often "
        "than this (0 to 1). The ballots never show an annotator a pair twice today. Blank: no flag.",
    )
    quality_max_failed_checks = models.PositiveIntegerField(
        null=True,
        blank=True,
        default=2,
        validators=[
            MinValueValidator(1, message=limits.FAILED_CHECKS_MESSAGE),
            MaxValueValidator(limits.MAX_FAILED_CHECKS, message=limits.FAILED_CHECKS_MESSAGE),
        ],
        help_text="Flag an annotator who fails this many checks or more (gold comparisons answered "
        "against the known answer, instructed-response checks not followed). Blank: no flag.",
    )
    # Checks are mixed into each annotator's stream at this rate; they are never votes (collection/checks.py).
    check_rate = models.FloatField(
        default=0.0,
        validators=[
            MinValueValidator(0, message=limits.CHECK_RATE_MESSAGE),
            MaxValueValidator(limits.MAX_CHECK_RATE, message=limits.CHECK_RATE_MESSAGE),
        ],
        help_text="Share of the comparisons served that are checks (gold or instructed-response) the "
        "annotator has not answered yet, 0 to 0.5; 0 serves none. Checks are never counted as votes.",
    )

    # Exclusion by rule (collection/exclusion.py, scoring/exclusion.py): off by default.
    exclude_flagged_annotators = models.BooleanField(
        default=False,
        help_text="When a ballot closes, exclude every annotator the quality thresholds above flag (too many "
        "fast answers, position bias, disagreement with the majority or with themselves). Their later votes "
        "stop; closed ballots keep their votes, and the results report the scores with and without them.",
    )

    status = models.CharField(max_length=10, choices=Status.choices, default=Status.DRAFT)
    # N(k) of every ballot (Eq. 2), fixed when the study starts, so that a later change of the rounding
    # never changes a running study's survivors; NULL in a draft. A per-area study's are the areas' sums.
    ballot_sizes = models.JSONField(null=True, blank=True, editable=False)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    duplicated_from = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="duplicates"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # A new value on every save: web processes keep a study's row in memory keyed by it, and read only
    # this value with the vote's own query to know the copy is current (collection/study_cache.py).
    settings_version = models.UUIDField(default=uuid.uuid4, editable=False)

    class Meta:
        verbose_name_plural = "studies"
        ordering = ["-created_at"]
        # Besides a study's creator and superusers, who may see the human scores of its hidden test part.
        permissions = [("view_hidden_part", "Can see the human scores of the hidden test parts")]
        constraints = [
            models.CheckConstraint(
                condition=Q(keep_fraction__gt=0) & Q(keep_fraction__lt=1),
                name="study_keep_fraction_in_0_1",
                violation_error_message="keep_fraction α must lie strictly between 0 and 1.",
            ),
            models.CheckConstraint(
                condition=Q(ballot_count__gte=1),
                name="study_ballot_count_positive",
                violation_error_message="ballot_count n_b must be at least 1.",
            ),
            models.CheckConstraint(
                condition=Q(appearances__isnull=False) | Q(comparison_budget__isnull=False),
                name="study_has_appearances_or_budget",
                violation_error_message="Give appearances M or a comparison budget.",
            ),
            models.CheckConstraint(
                condition=Q(seconds_per_comparison__gt=0),
                name="study_seconds_positive",
                violation_error_message="seconds_per_comparison must be positive.",
            ),
            models.CheckConstraint(
                condition=Q(minimum_coverage__gte=0) & Q(minimum_coverage__lte=1),
                name="study_minimum_coverage_in_0_1",
                violation_error_message="minimum_coverage must lie between 0 and 1.",
            ),
            models.CheckConstraint(
                condition=Q(lease_seconds__gte=10),
                name="study_lease_at_least_10s",
                violation_error_message="lease_seconds must be at least 10.",
            ),
            models.CheckConstraint(
                condition=Q(ballot_count__lte=limits.MAX_BALLOTS),
                name="study_ballot_count_bounded",
                violation_error_message=limits.BALLOTS_MESSAGE,
            ),
            models.CheckConstraint(
                condition=Q(appearances__isnull=True) | Q(appearances__lte=limits.MAX_APPEARANCES),
                name="study_appearances_bounded",
                violation_error_message=limits.APPEARANCES_MESSAGE,
            ),
            models.CheckConstraint(
                condition=Q(comparison_budget__isnull=True)
                | Q(comparison_budget__lte=limits.MAX_TOTAL_COMPARISONS),
                name="study_budget_bounded",
                violation_error_message=limits.BUDGET_MESSAGE,
            ),
            models.CheckConstraint(
                condition=Q(seconds_per_comparison__lte=limits.MAX_SECONDS_PER_COMPARISON),
                name="study_seconds_bounded",
                violation_error_message=limits.SECONDS_MESSAGE,
            ),
            models.CheckConstraint(
                condition=Q(lease_seconds__lte=limits.MAX_LEASE_SECONDS),
                name="study_lease_bounded",
                violation_error_message=limits.LEASE_MESSAGE,
            ),
            models.CheckConstraint(
                condition=Q(ballot_deadline_hours__isnull=True)
                | Q(ballot_deadline_hours__lte=limits.MAX_BALLOT_DEADLINE_HOURS),
                name="study_deadline_bounded",
                violation_error_message=limits.DEADLINE_MESSAGE,
            ),
            models.CheckConstraint(
                condition=Q(seed__gte=0) & Q(seed__lte=limits.MAX_SEED),
                name="study_seed_bounded",
                violation_error_message=limits.SEED_MESSAGE,
            ),
            models.CheckConstraint(
                condition=Q(ranking_scope__in=["joint", "per_area"]),
                name="study_ranking_scope_known",
                violation_error_message="ranking_scope must be joint or per_area.",
            ),
            models.CheckConstraint(
                condition=Q(max_wait_seconds__gte=limits.MIN_WAIT_SECONDS)
                & Q(max_wait_seconds__lte=limits.MAX_WAIT_SECONDS),
                name="study_max_wait_bounded",
                violation_error_message=limits.WAIT_MESSAGE,
            ),
            models.CheckConstraint(
                condition=Q(pay_per_hour__isnull=True)
                | Q(pay_per_hour__gt=0) & Q(pay_per_hour__lte=limits.MAX_PAY_PER_HOUR),
                name="study_pay_bounded",
                violation_error_message=limits.PAY_MESSAGE,
            ),
            models.CheckConstraint(
                condition=Q(max_variants_per_owner__gte=1)
                & Q(max_variants_per_owner__lte=limits.MAX_VARIANTS_PER_OWNER),
                name="study_max_variants_bounded",
                violation_error_message=limits.VARIANTS_MESSAGE,
            ),
            models.CheckConstraint(
                condition=Q(quality_fast_ms__isnull=True)
                | (Q(quality_fast_ms__gte=1) & Q(quality_fast_ms__lte=limits.MAX_QUALITY_FAST_MS)),
                name="study_quality_fast_ms_bounded",
                violation_error_message=limits.QUALITY_FAST_MS_MESSAGE,
            ),
            models.CheckConstraint(
                condition=Q(quality_position_alpha__isnull=True)
                | (Q(quality_position_alpha__gt=0) & Q(quality_position_alpha__lt=1)),
                name="study_quality_alpha_in_0_1",
                violation_error_message=limits.QUALITY_ALPHA_MESSAGE,
            ),
            *(
                models.CheckConstraint(
                    condition=_share_or_blank(name),
                    name=f"study_{name}_in_0_1",
                    violation_error_message=limits.QUALITY_SHARE_MESSAGE.format(name=name),
                )
                for name in (
                    "quality_max_fast_share",
                    "quality_min_majority_agreement",
                    "quality_min_self_agreement",
                )
            ),
            models.CheckConstraint(
                condition=Q(quality_max_failed_checks__isnull=True)
                | (
                    Q(quality_max_failed_checks__gte=1)
                    & Q(quality_max_failed_checks__lte=limits.MAX_FAILED_CHECKS)
                ),
                name="study_quality_failed_checks_bounded",
                violation_error_message=limits.FAILED_CHECKS_MESSAGE,
            ),
            models.CheckConstraint(
                condition=Q(hidden_share__gte=0) & Q(hidden_share__lte=limits.MAX_HIDDEN_SHARE),
                name="study_hidden_share_bounded",
                violation_error_message=limits.HIDDEN_SHARE_MESSAGE,
            ),
            models.CheckConstraint(
                condition=Q(check_rate__gte=0) & Q(check_rate__lte=limits.MAX_CHECK_RATE),
                name="study_check_rate_bounded",
                violation_error_message=limits.CHECK_RATE_MESSAGE,
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def save(self, *args, **kwargs):
        # Every save is a new version, so that no web process goes on with an older copy of the row.
        self.settings_version = uuid.uuid4()
        update_fields = kwargs.get("update_fields")
        if update_fields is not None:
            kwargs["update_fields"] = {*update_fields, "settings_version"}
        super().save(*args, **kwargs)

    def get_absolute_url(self) -> str:
        return reverse("collection:entry", args=[self.slug])

    @property
    def is_draft(self) -> bool:
        return self.status == self.Status.DRAFT

    def default_top_k(self, item_count: int) -> int:
        """K of the retrieval measures: the study's setting, else a tenth of the items (1 … 100)."""
        if self.relevant_top_k:
            return min(self.relevant_top_k, item_count)
        return max(1, min(100, item_count // 10))


class StudyTranslation(models.Model):
    """The study's own texts in one more language: an annotator who asks for it sees them, with the pages
    in that language; without them (or without a check's instruction in it) the whole page is in the
    study's language (``collection.languages``)."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="translations")
    language = models.CharField(max_length=7, choices=settings.LANGUAGES)
    name = models.CharField(max_length=200, help_text="The study's name, at the top of every page.")
    question = models.CharField(max_length=300, help_text="Shown above every comparison.")
    instructions = models.TextField(
        blank=True, help_text="Shown on the consent page; needed when the study has instructions."
    )

    class Meta:
        ordering = ["study", "language"]
        constraints = [
            models.UniqueConstraint(fields=["study", "language"], name="study_translation_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.study.slug} in {self.get_language_display()}"

    def clean(self) -> None:
        if self.study_id is None:
            return
        if self.language == self.study.language:
            raise ValidationError(
                {"language": "This is the study's own language: its texts are the study's fields above."}
            )
        if self.study.instructions.strip() and not self.instructions.strip():
            raise ValidationError(
                {"instructions": "The study has instructions: give them in this language too."}
            )


class StudyChange(models.Model):
    """One setting of a started study changed: who, when, through which channel, from what to what.

    Written only by ``collection.studies.study_update``, one row per changed setting. The database
    keeps the trail: a trigger (migration 0006) refuses to update or delete a row, except the SET NULL
    of ``user`` when that account is deleted (``username`` keeps the name), and the study is PROTECTed.
    """

    class Channel(models.TextChoices):
        ADMIN = "admin", "admin"
        API = "api", "API"
        COMMAND = "command", "command"

    study = models.ForeignKey(Study, on_delete=models.PROTECT, related_name="changes")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    username = models.CharField(max_length=150, blank=True, help_text="Who, kept if the account is deleted.")
    channel = models.CharField(max_length=10, choices=Channel.choices)
    changed_at = models.DateTimeField()
    study_status = models.CharField(
        max_length=10, choices=Study.Status.choices, help_text="The study's state when it changed."
    )
    setting = models.CharField(max_length=50)
    old_value = models.JSONField(null=True, blank=True)
    new_value = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["study", "changed_at", "pk"]
        indexes = [models.Index(fields=["study", "changed_at"], name="studychange_study_time")]
        constraints = [
            models.CheckConstraint(
                condition=Q(channel__in=["admin", "api", "command"]), name="studychange_channel_known"
            ),
            models.CheckConstraint(
                condition=Q(study_status__in=["running", "finished"]),
                name="studychange_of_a_started_study",
                violation_error_message="Only the changes of a started study are recorded.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.setting} of {self.study_id} at {self.changed_at:%Y-%m-%d %H:%M}"

    @staticmethod
    def shown(value) -> str:
        """A recorded value as a person reads it: blank for none, yes/no for booleans."""
        if value is None or value == "":
            return "blank"
        if isinstance(value, bool):
            return "yes" if value else "no"
        return str(value)

    @property
    def old_shown(self) -> str:
        return self.shown(self.old_value)

    @property
    def new_shown(self) -> str:
        return self.shown(self.new_value)


class SemanticArea(models.Model):
    """A group of tokens from one domain area; items pair tokens within it (§2.1)."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="areas")
    name = models.CharField(max_length=100)
    # The area's own N_a(k) in a study ranked per area, fixed at the start as Study.ballot_sizes is.
    ballot_sizes = models.JSONField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["study", "name"]
        constraints = [models.UniqueConstraint(fields=["study", "name"], name="area_unique_in_study")]

    def __str__(self) -> str:
        return self.name


class Token(models.Model):
    """A word or multi-word concept (§2.1)."""

    MAX_LENGTH = 100

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="tokens")
    area = models.ForeignKey(SemanticArea, on_delete=models.CASCADE, related_name="tokens")
    text = models.CharField(max_length=MAX_LENGTH)
    rare = models.BooleanField(default=False, help_text="Rare in the domain's corpus (§2.1, hubness).")

    class Meta:
        ordering = ["study", "area", "text"]
        constraints = [models.UniqueConstraint(fields=["study", "text"], name="token_unique_in_study")]

    def __str__(self) -> str:
        return self.text


class Item(models.Model):
    """An unordered pair of two distinct tokens of one area: the thing being ranked (§2.2).

    ``index`` numbers the items of a study 0 … N-1: the position of the item in the engine's arrays.
    ``token_a`` has the lower id, so a pair is stored once.
    """

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="items")
    area = models.ForeignKey(SemanticArea, on_delete=models.CASCADE, related_name="items")
    token_a = models.ForeignKey(Token, on_delete=models.CASCADE, related_name="+")
    token_b = models.ForeignKey(Token, on_delete=models.CASCADE, related_name="+")
    index = models.PositiveIntegerField()
    final_score = models.FloatField(
        null=True, blank=True, help_text="ȳ after the item's last ballot (Eq. 5)."
    )
    final_rank = models.PositiveIntegerField(null=True, blank=True, help_text="1 = most related.")
    last_ballot = models.PositiveSmallIntegerField(null=True, blank=True)
    # Drawn when the study starts (collection.parts.items_split_draw); a trigger (migration 0018)
    # refuses to change it once the study has left its draft.
    hidden = models.BooleanField(
        default=False,
        editable=False,
        help_text="In the hidden test part: its human score is never published.",
    )

    class Meta:
        ordering = ["study", "index"]
        constraints = [
            models.UniqueConstraint(fields=["study", "token_a", "token_b"], name="item_pair_unique_in_study"),
            models.UniqueConstraint(fields=["study", "index"], name="item_index_unique_in_study"),
            models.CheckConstraint(
                condition=Q(token_a__lt=F("token_b")), name="item_tokens_ordered_distinct"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.token_a.text} – {self.token_b.text}"


# The parts of a ballot's count of votes (``BallotCounter``). A vote adds one to the part of its
# thread (``collection.voting``): votes that run at once add to different rows, so none waits for
# another's commit, as they would on one counter row. A ballot has a row only for the parts its
# threads used, so the sum reads a few tens of rows.
BALLOT_COUNTER_PARTS = 4096


def votes_recorded_expression():
    """The ballot's votes recorded: the sum of its counter's parts (0 before its first vote)."""
    parts = (
        BallotCounter.objects.filter(ballot=OuterRef("pk"))
        .order_by()
        .values("ballot")
        .annotate(total=Sum("votes"))
        .values("total")
    )
    return Coalesce(Subquery(parts, output_field=models.IntegerField()), 0)


class BallotManager(models.Manager):
    """Every ballot read through ``Ballot.objects`` (and a study's ``ballots``) carries
    ``votes_recorded``, the sum of its counter's parts, read in the same query."""

    def get_queryset(self):
        return super().get_queryset().annotate(votes_recorded=votes_recorded_expression())


class Ballot(models.Model):
    """One round of comparisons over the items still in play; k = ``number`` (§2.5).

    ``votes_recorded`` (its votes, kept by ``BallotCounter``) comes with every ballot that
    ``Ballot.objects`` reads; a ballot made here and not read since has none recorded.
    """

    class Status(models.TextChoices):
        OPEN = "open", "open"
        CLOSED = "closed", "closed"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="ballots")
    number = models.PositiveSmallIntegerField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN)
    items = models.ManyToManyField(Item, through="BallotItem", related_name="ballots")
    comparison_count = models.PositiveIntegerField()
    opened_at = models.DateTimeField(auto_now_add=True)
    deadline = models.DateTimeField(null=True, blank=True)
    closed_at = models.DateTimeField(null=True, blank=True)
    rescale_slope = models.FloatField(null=True, blank=True, help_text="b̂(k) of Eq. 6.")
    area_rescale_slopes = models.JSONField(
        default=dict,
        blank=True,
        help_text="b̂(k) of Eq. 6 for each semantic area, by area name, in a study ranked per area "
        "(each area's own chain of ballots); empty in a joint study.",
    )
    close_seconds = models.FloatField(
        null=True,
        blank=True,
        help_text="How long its close took (scoring it and opening the next ballot), in seconds; "
        "the wait told to annotators who arrive while a later ballot closes is estimated from it.",
    )

    objects = BallotManager()
    votes_recorded = 0  # a ballot not read through its manager: made here, before any vote

    class Meta:
        ordering = ["study", "number"]
        constraints = [
            models.UniqueConstraint(fields=["study", "number"], name="ballot_number_unique_in_study"),
            models.UniqueConstraint(
                fields=["study"], condition=Q(status="open"), name="one_open_ballot_per_study"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.study} · ballot {self.number}"

    def refresh_from_db(self, using=None, fields=None, from_queryset=None):
        """Reload the ballot's fields and, when all are reloaded, its ``votes_recorded``."""
        super().refresh_from_db(using=using, fields=fields, from_queryset=from_queryset)
        if fields is None:
            counted = Ballot.objects.db_manager(using).filter(pk=self.pk)
            self.votes_recorded = counted.values_list("votes_recorded", flat=True).get()


class SweepRun(models.Model):
    """When a periodic sweep last finished (``collection.lifecycle.ballots_sweep``, as ``"ballots"``):
    ``/healthz/`` says when it has not run for a while (no Celery beat, or beat stopped)."""

    name = models.CharField(primary_key=True, max_length=40)
    finished_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"sweep {self.name} at {self.finished_at:%Y-%m-%d %H:%M:%S}"


class BallotCounter(models.Model):
    """One part of a ballot's count of votes recorded; the count is the sum of its parts.

    A vote adds one to the part of its thread (``BALLOT_COUNTER_PARTS`` of them), creating it at its
    first vote; an exclusion takes the votes it sets aside off part 0,
    which may then be negative: only the sum has a meaning. The vote that brings the sum to the
    ballot's ``comparison_count``, as it reads the committed parts, asks for the close
    (``collection.voting``).
    """

    ballot = models.ForeignKey(Ballot, on_delete=models.CASCADE, related_name="counter_parts", db_index=False)
    part = models.PositiveSmallIntegerField()
    votes = models.IntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["ballot", "part"], name="ballot_counter_part_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.ballot_id} · part {self.part}: {self.votes}"

    @classmethod
    def add(cls, *, ballot_id: int, votes: int, part: int = 0) -> tuple[int, int]:
        """Add ``votes`` (negative to take off) to one part of the ballot's count, in one statement on
        either database; returns the ballot's (votes recorded, comparison count) as this transaction
        sees them."""
        with connection.cursor() as cursor:
            cursor.execute(
                "INSERT INTO collection_ballotcounter (ballot_id, part, votes) VALUES (%(ballot)s, %(part)s, %(votes)s)"
                " ON CONFLICT (ballot_id, part)"
                " DO UPDATE SET votes = collection_ballotcounter.votes + excluded.votes"
                " RETURNING collection_ballotcounter.votes + (SELECT COALESCE(SUM(other.votes), 0)"
                " FROM collection_ballotcounter other WHERE other.ballot_id = %(ballot)s AND other.part <> %(part)s),"
                " (SELECT b.comparison_count FROM collection_ballot b WHERE b.id = %(ballot)s)",
                {"ballot": ballot_id, "part": part, "votes": votes},
            )
            return cursor.fetchone()


class AnnotatorVotes(models.Model):
    """An annotator's count of votes: in their study, and in the ballot of their latest vote.

    The vote's statement adds one (``collection.voting``), an exclusion takes off the votes it sets
    aside (``collection.exclusion``), so that the lease reads the annotator's progress and cap from one
    row: counting their votes instead read every one of them, on every lease.
    ``in_ballot`` counts the votes in ``ballot``; in any other ballot the annotator has none yet.
    """

    annotator = models.OneToOneField(
        "Annotator", on_delete=models.CASCADE, primary_key=True, related_name="vote_count"
    )
    total = models.IntegerField(default=0)
    # Indexed, for the foreign-key check when a ballot is deleted. A vote leaves ``ballot`` as it is
    # within a ballot, so its update of this row stays HOT all the same.
    ballot = models.ForeignKey(Ballot, on_delete=models.CASCADE, related_name="+")
    in_ballot = models.IntegerField(default=0)

    class Meta:
        verbose_name_plural = "annotator votes"

    def __str__(self) -> str:
        return (
            f"annotator {self.annotator_id}: {self.total} votes, {self.in_ballot} in ballot {self.ballot_id}"
        )

    @classmethod
    def add(cls, *, annotator_id: int, ballot_id: int, votes: int) -> tuple[int, int]:
        """Add ``votes`` (negative to take off) to the annotator's count, in ``ballot_id``: one
        statement on either database; returns their (votes in all, votes in ``ballot_id``)."""
        with connection.cursor() as cursor:
            cursor.execute(
                ANNOTATOR_VOTES_ADD_SQL, {"annotator": annotator_id, "ballot": ballot_id, "votes": votes}
            )
            return cursor.fetchone()


# A vote in the ballot the count is in adds to in_ballot; a vote in the next ballot starts it again.
ANNOTATOR_VOTES_ADD_SQL = """
INSERT INTO collection_annotatorvotes (annotator_id, total, ballot_id, in_ballot)
VALUES (%(annotator)s, %(votes)s, %(ballot)s, %(votes)s)
ON CONFLICT (annotator_id) DO UPDATE SET
    total = collection_annotatorvotes.total + excluded.total,
    in_ballot = CASE WHEN collection_annotatorvotes.ballot_id = excluded.ballot_id
                     THEN collection_annotatorvotes.in_ballot + excluded.in_ballot
                     ELSE excluded.in_ballot END,
    ballot_id = excluded.ballot_id
RETURNING total, in_ballot
"""


class BallotItem(models.Model):
    """Membership of an item in a ballot."""

    ballot = models.ForeignKey(Ballot, on_delete=models.CASCADE)
    item = models.ForeignKey(Item, on_delete=models.CASCADE)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["ballot", "item"], name="ballot_item_unique")]

    def __str__(self) -> str:
        return f"{self.item_id} in ballot {self.ballot_id}"


class Comparison(models.Model):
    """Two items shown together for one decision; scheduled before its ballot opens (§2.3)."""

    class Status(models.TextChoices):
        OPEN = "open", "open"
        LEASED = "leased", "leased"
        VOTED = "voted", "voted"
        CANCELLED = "cancelled", "cancelled"

    # No index of its own: comparison_position_unique (ballot, position) serves lookups by ballot.
    ballot = models.ForeignKey(Ballot, on_delete=models.CASCADE, related_name="comparisons", db_index=False)
    position = models.PositiveIntegerField()
    # Indexed (as the vote's are), although nothing looks comparisons or votes up by item: deleting an
    # item, which happens with its study, makes PostgreSQL's foreign-key check look for rows that still
    # name it, once per item. Without these indexes that was a scan of the whole table per item, and
    # deleting a 990-item study took several times longer. Their cost to a judgement is not measurable.
    left_item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="+")
    right_item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="+")
    pair_low = models.PositiveIntegerField(help_text="The lower item index of the pair.")
    pair_high = models.PositiveIntegerField(help_text="The higher item index of the pair.")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN)
    lease_expires_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["ballot", "position"]
        # The lease reads the first open comparison by position, and the longest-lapsed lease by
        # expiry. Partial indexes of exactly those rows: the planner prefers them at any fill of the
        # ballot, where with statistics taken at the ballot's opening (every comparison open) it took
        # the (ballot, position) index and read past every comparison already voted; and the lapsed
        # leases are the start of a ballot's range of the leased ones by expiry, one probe however many
        # a crowd holds (migration 0027).
        indexes = [
            models.Index(fields=["ballot", "position"], condition=Q(status="open"), name="comparison_open"),
            models.Index(
                fields=["ballot", "lease_expires_at", "position"],
                condition=Q(status="leased"),
                name="comparison_lapsing",
            ),
        ]
        constraints = [
            models.UniqueConstraint(fields=["ballot", "position"], name="comparison_position_unique"),
            models.CheckConstraint(
                condition=Q(pair_low__lt=F("pair_high")), name="comparison_distinct_items"
            ),
        ]

    def __str__(self) -> str:
        return f"comparison {self.position} of ballot {self.ballot_id}"


class Annotator(models.Model):
    """A person voting in one study: a crowd participant id, a browser session, or a user."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="annotators")
    # NULL, not "", for absent identities: the unique constraints below must ignore them.
    participant_id = models.CharField(max_length=128, null=True, blank=True)  # noqa: DJ001
    session_key = models.CharField(max_length=64, null=True, blank=True)  # noqa: DJ001
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE)
    consented_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # What the crowd platform's link said (collection/crowd.py, PLATFORM_PARAMETERS); blank when absent.
    prolific_study_id = models.CharField(max_length=128, blank=True, default="")
    prolific_session_id = models.CharField(max_length=128, blank=True, default="")
    mturk_hit_id = models.CharField(max_length=128, blank=True, default="")
    mturk_assignment_id = models.CharField(max_length=128, blank=True, default="")
    mturk_submit_to = models.CharField(max_length=200, blank=True, default="")
    # When the annotator's active exclusion began (an ``Exclusion`` row says who and why); NULL while
    # they may vote. On the row that every vote and lease already reads, so refusing costs no query.
    excluded_at = models.DateTimeField(null=True, blank=True, editable=False)
    # When the annotator pressed Finish (after the study's min_judgements): they leave as completed.
    finished_at = models.DateTimeField(null=True, blank=True, editable=False)
    # Votes cast by ``simulate_voters``, not by a person: counted apart in the card, exports and boards.
    simulated = models.BooleanField(default=False, editable=False)
    # The language their link or browser asked for when they consented ("" for none we offer): the
    # study's page tells the researcher which languages were asked for without the study's texts.
    language_asked = models.CharField(max_length=7, blank=True, default="", editable=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["study", "participant_id"],
                condition=Q(participant_id__isnull=False),
                name="annotator_participant_unique",
            ),
            models.UniqueConstraint(
                fields=["study", "user"], condition=Q(user__isnull=False), name="annotator_user_unique"
            ),
            models.UniqueConstraint(
                fields=["study", "session_key"],
                condition=Q(session_key__isnull=False),
                name="annotator_session_unique",
            ),
            models.CheckConstraint(
                condition=Q(participant_id__isnull=False)
                | Q(session_key__isnull=False)
                | Q(user__isnull=False),
                name="annotator_is_identified",
            ),
        ]

    def __str__(self) -> str:
        if self.participant_id:
            return f"participant {self.participant_id}"
        if self.user_id:
            return f"user {self.user}"
        return f"anonymous #{self.pk}"


class Assignment(models.Model):
    """A comparison leased to one annotator until it is voted or the lease expires."""

    class Status(models.TextChoices):
        ACTIVE = "active", "active"
        VOTED = "voted", "voted"
        ANSWERED = "answered", "answered"  # a check's assignment, answered: never a vote
        EXPIRED = "expired", "expired"
        CANCELLED = "cancelled", "cancelled"

    # A comparison to vote on, or a check to answer (collection/checks.py): exactly one of the two.
    comparison = models.ForeignKey(
        Comparison, null=True, blank=True, on_delete=models.CASCADE, related_name="assignments"
    )
    # Not "check": that name is the model's system-check method.
    # Its index holds only the checks' assignments (below): a comparison's would add a NULL entry.
    quality_check = models.ForeignKey(
        "Check", null=True, blank=True, on_delete=models.CASCADE, related_name="assignments", db_index=False
    )
    ballot = models.ForeignKey(Ballot, on_delete=models.CASCADE, related_name="assignments")
    annotator = models.ForeignKey(Annotator, on_delete=models.CASCADE, related_name="assignments")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ACTIVE)
    issued_at = models.DateTimeField()
    expires_at = models.DateTimeField()

    class Meta:
        ordering = ["-issued_at"]
        indexes = [
            models.Index(
                fields=["quality_check"],
                condition=Q(quality_check__isnull=False),
                name="assignment_of_a_check",
            ),
        ]
        constraints = [
            models.CheckConstraint(
                condition=(Q(comparison__isnull=False) & Q(quality_check__isnull=True))
                | (Q(comparison__isnull=True) & Q(quality_check__isnull=False)),
                name="assignment_of_a_comparison_or_a_check",
                violation_error_message="An assignment is of a comparison or of a check, never both.",
            ),
            # A comparison is voted, a check answered: never the other way round.
            models.CheckConstraint(
                condition=~Q(status="voted") | Q(comparison__isnull=False),
                name="assignment_voted_is_a_comparison",
            ),
            models.CheckConstraint(
                condition=~Q(status="answered") | Q(quality_check__isnull=False),
                name="assignment_answered_is_a_check",
            ),
            models.UniqueConstraint(
                fields=["annotator"], condition=Q(status="active"), name="one_active_assignment_per_annotator"
            ),
            models.UniqueConstraint(
                fields=["comparison"],
                condition=Q(status="active"),
                name="one_active_assignment_per_comparison",
            ),
        ]

    def __str__(self) -> str:
        return f"assignment {self.pk} ({self.status})"


class Vote(models.Model):
    """An annotator's decision on an assignment: left, right or tie. Recorded once."""

    class Choice(models.TextChoices):
        LEFT = "left", "left"
        RIGHT = "right", "right"
        TIE = "tie", "tie"

    assignment = models.OneToOneField(Assignment, on_delete=models.CASCADE, related_name="vote")
    comparison = models.OneToOneField(Comparison, on_delete=models.CASCADE, related_name="vote")
    # No index of its own: vote_annotator_ballot and vote_once_per_pair_per_annotator lead with it.
    annotator = models.ForeignKey(Annotator, on_delete=models.CASCADE, related_name="votes", db_index=False)
    ballot = models.ForeignKey(Ballot, on_delete=models.CASCADE, related_name="votes")
    left_item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="+")  # indexed: Comparison's
    right_item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="+")
    pair_low = models.PositiveIntegerField()
    pair_high = models.PositiveIntegerField()
    choice = models.CharField(max_length=5, choices=Choice.choices)
    response_ms = models.PositiveIntegerField(
        help_text="From issuing the assignment to the vote, on the server."
    )
    client_response_ms = models.PositiveIntegerField(
        null=True, blank=True, help_text="As measured by the page."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at"]
        indexes = [models.Index(fields=["annotator", "ballot"], name="vote_annotator_ballot")]
        constraints = [
            models.UniqueConstraint(
                fields=["annotator", "pair_low", "pair_high"], name="vote_once_per_pair_per_annotator"
            ),
        ]

    def __str__(self) -> str:
        return f"vote {self.pk}: {self.choice}"


class Check(models.Model):
    """A check a researcher adds to a study: two items shown as any comparison, with a known answer.

    A gold comparison asks the study's question about two items whose answer the researcher knows
    ("cat – kitten" against "cat – carburetor"). An instructed-response check shows an instruction in
    place of the question ("For this one, choose the pair on the left."), the kind of attention check
    Prolific allows. Checks are served among the comparisons at the study's ``check_rate`` and answered
    once per annotator; an answer is a ``CheckAnswer``, never a ``Vote``.
    """

    class Kind(models.TextChoices):
        GOLD = "gold", "gold comparison"
        INSTRUCTED = "instructed", "instructed response"

    class Side(models.TextChoices):
        LEFT = "left", "left"
        RIGHT = "right", "right"

    INSTRUCTION_MAX_LENGTH = 300  # as Study.question, which it replaces on the page

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="checks")
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.GOLD)
    left_item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="+")
    right_item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="+")
    expected = models.CharField(
        max_length=5, choices=Side.choices, help_text="The correct answer: the left or the right pair."
    )
    instruction = models.CharField(
        max_length=INSTRUCTION_MAX_LENGTH,
        blank=True,
        help_text='Instructed-response checks only: shown in place of the question, e.g. "For this one, '
        "choose the pair on the left.\" Blank for a gold comparison, which shows the study's question.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["study", "pk"]
        constraints = [
            models.CheckConstraint(
                condition=~Q(left_item=F("right_item")),
                name="check_two_distinct_items",
                violation_error_message="A check shows two different items.",
            ),
            models.CheckConstraint(
                condition=Q(expected__in=["left", "right"]),
                name="check_expects_a_side",
                violation_error_message='The expected answer is "left" or "right".',
            ),
            models.CheckConstraint(
                condition=(Q(kind="gold") & Q(instruction="")) | (Q(kind="instructed") & ~Q(instruction="")),
                name="check_instruction_of_its_kind",
                violation_error_message="An instructed-response check needs its instruction; a gold "
                "comparison has none (it shows the study's question).",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} {self.pk} (expects {self.expected})"

    @property
    def question_shown(self) -> str:
        return self.instruction or self.study.question

    def problems(self) -> list[str]:
        """What is wrong with this check for its study, in words (empty when it is fine).

        The one set of rules behind ``clean`` (the admin's form), ``check_create`` and ``checks_import``.
        An item may be unset (None): a name that matched no item, reported by the caller.
        """
        problems = []
        if self.kind not in self.Kind.values:
            problems.append(f'kind must be "gold" or "instructed", got {self.kind!r}')
        if self.expected not in self.Side.values:
            problems.append(f'expected must be "left" or "right", got {self.expected!r}')
        left = self.left_item if self.left_item_id is not None else None
        right = self.right_item if self.right_item_id is not None else None
        for side, item in (("left", left), ("right", right)):
            if item is not None and item.study_id != self.study_id:
                problems.append(f"the {side} item {item.pk} is not an item of study {self.study.slug!r}")
        if left is not None and right is not None and left.pk == right.pk:
            problems.append("a check shows two different items; both sides are the same item")
        instruction = self.instruction or ""
        if self.kind == self.Kind.INSTRUCTED and not instruction.strip():
            problems.append(
                'an instructed-response check needs its instruction, e.g. "For this one, choose the pair on '
                'the left."'
            )
        if self.kind == self.Kind.GOLD and instruction.strip():
            problems.append(
                "a gold comparison shows the study's question, not an instruction: leave the instruction "
                'blank, or make it an "instructed" check'
            )
        if len(instruction) > self.INSTRUCTION_MAX_LENGTH:
            problems.append(
                f"the instruction is {len(instruction):,} characters long; at most {self.INSTRUCTION_MAX_LENGTH}"
            )
        if (
            self.kind == self.Kind.GOLD
            and left is not None
            and right is not None
            and left.area_id != right.area_id
            and self.study.ranking_scope == Study.RankingScope.PER_AREA
        ):
            # Every comparison of such a study pairs items of one area: a pair across areas is a check.
            problems.append(
                "a gold comparison of a study ranked per area sets two items of one semantic area against "
                "each other, as every comparison of the study does; a check across areas would stand out: "
                f"the left item {left} is in {left.area}, the right item {right} in {right.area}; choose two "
                "items of one area"
            )
        return problems

    def clean(self) -> None:
        if problems := self.problems():
            raise ValidationError(problems)


class CheckTranslation(models.Model):
    """An instructed-response check's instruction in one more language than the study's."""

    check_item = models.ForeignKey("Check", on_delete=models.CASCADE, related_name="translations")
    language = models.CharField(max_length=7, choices=settings.LANGUAGES)
    instruction = models.CharField(
        max_length=300,
        help_text="In a right-to-left language (Arabic) the check's left pair is shown on the right: say "
        "which pair to choose as the annotator sees it.",
    )

    class Meta:
        ordering = ["check_item", "language"]
        constraints = [
            models.UniqueConstraint(fields=["check_item", "language"], name="check_translation_unique"),
        ]

    def __str__(self) -> str:
        return f"check {self.check_item_id} in {self.get_language_display()}"


class CheckAnswer(models.Model):
    """An annotator's answer to a check: recorded once, never a vote, never in a ballot's counter."""

    assignment = models.OneToOneField(Assignment, on_delete=models.CASCADE, related_name="check_answer")
    quality_check = models.ForeignKey(Check, on_delete=models.CASCADE, related_name="answers")
    annotator = models.ForeignKey(Annotator, on_delete=models.CASCADE, related_name="check_answers")
    choice = models.CharField(max_length=5, choices=Vote.Choice.choices)
    correct = models.BooleanField(help_text="The choice is the check's expected answer.")
    response_ms = models.PositiveIntegerField(
        help_text="From issuing the assignment to the answer, on the server."
    )
    client_response_ms = models.PositiveIntegerField(
        null=True, blank=True, help_text="As measured by the page."
    )
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["annotator", "quality_check"], name="check_answered_once_per_annotator"
            ),
        ]

    def __str__(self) -> str:
        return f"answer {self.pk} to check {self.quality_check_id}: {self.choice}"


class Exclusion(models.Model):
    """An annotator excluded from a study: by whom (a researcher, or a rule), when, why; and its lifting.

    Written by ``collection.exclusion.annotator_exclude`` and ``annotator_readmit`` only: the log of
    exclusions. At most one active (not lifted) exclusion per annotator, which the database keeps.
    ``user`` is SET NULL if that account is deleted; ``username`` keeps the name.
    """

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="exclusions")
    annotator = models.ForeignKey(Annotator, on_delete=models.CASCADE, related_name="exclusions")
    reason = models.TextField(help_text="Why, in words: the researcher's reason, or the rule's figure.")
    rule = models.CharField(
        max_length=50,
        blank=True,
        help_text="The rule that excluded the annotator; blank: a researcher's decision.",
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    username = models.CharField(max_length=150, blank=True, help_text="Who, kept if the account is deleted.")
    excluded_at = models.DateTimeField()
    votes_set_aside = models.PositiveIntegerField(
        default=0, help_text="Votes of the open ballot taken out of it, their comparisons back in the pool."
    )
    leases_released = models.PositiveIntegerField(default=0)
    lifted_at = models.DateTimeField(null=True, blank=True)
    lifted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    lifted_by_username = models.CharField(max_length=150, blank=True)
    lift_reason = models.TextField(blank=True)

    class Meta:
        ordering = ["study", "excluded_at", "pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["annotator"],
                condition=Q(lifted_at__isnull=True),
                name="one_active_exclusion_per_annotator",
                violation_error_message="The annotator is already excluded.",
            ),
            models.CheckConstraint(
                condition=~Q(reason=""),
                name="exclusion_has_reason",
                violation_error_message="An exclusion needs a reason.",
            ),
        ]

    def __str__(self) -> str:
        return f"exclusion of annotator {self.annotator_id} at {self.excluded_at:%Y-%m-%d %H:%M}"

    @property
    def active(self) -> bool:
        return self.lifted_at is None

    @property
    def by(self) -> str:
        """Who decided: the rule, else the researcher's name."""
        return f"rule {self.rule}" if self.rule else (self.username or "unknown")


class ExcludedVote(models.Model):
    """A vote of the open ballot set aside when its annotator was excluded: every field of the vote as it
    was (``vote_id`` its id), with the exclusion. Its comparison went back to the pool, so the open ballot
    counts it no longer; it is kept, not deleted, so that nothing an annotator did is lost.
    """

    exclusion = models.ForeignKey(Exclusion, on_delete=models.CASCADE, related_name="set_aside")
    vote_id = models.BigIntegerField(help_text="The id the vote had.")
    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="+")
    comparison = models.ForeignKey(Comparison, on_delete=models.CASCADE, related_name="+")
    annotator = models.ForeignKey(Annotator, on_delete=models.CASCADE, related_name="+")
    ballot = models.ForeignKey(Ballot, on_delete=models.CASCADE, related_name="+")
    left_item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="+")
    right_item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="+")
    pair_low = models.PositiveIntegerField()
    pair_high = models.PositiveIntegerField()
    choice = models.CharField(max_length=5, choices=Vote.Choice.choices)
    response_ms = models.PositiveIntegerField()
    client_response_ms = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["exclusion", "vote_id"]
        constraints = [models.UniqueConstraint(fields=["vote_id"], name="excluded_vote_once")]

    def __str__(self) -> str:
        return f"vote {self.vote_id} set aside ({self.choice})"


class ItemScore(models.Model):
    """What ballot k measured for one of its items: x(k), y(k), ȳ(k) (Eq. 1, 5, 6), written by its close.

    The table keeps the name it had when the model lived in the scoring app; the admin shows the rows
    through the proxy ``scoring.ItemScore``.
    """

    ballot = models.ForeignKey(Ballot, on_delete=models.CASCADE, related_name="scores")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="scores")
    wins = models.PositiveIntegerField()
    ties = models.PositiveIntegerField()
    appearances = models.PositiveIntegerField()
    win_ratio = models.FloatField(null=True, help_text="x(k); empty when the item got no vote in the ballot.")
    rescaled_score = models.FloatField(null=True, help_text="y(k)")
    score = models.FloatField(null=True, help_text="ȳ(k), the running mean of y up to ballot k")
    measured = models.PositiveSmallIntegerField(help_text="Ballots up to k in which the item got a vote.")
    survived = models.BooleanField(help_text="Carried into ballot k+1.")

    class Meta:
        db_table = "scoring_itemscore"
        ordering = ["ballot", "-score"]
        constraints = [
            models.UniqueConstraint(fields=["ballot", "item"], name="item_score_unique_per_ballot")
        ]

    def __str__(self) -> str:
        return f"item {self.item_id} in ballot {self.ballot_id}: ȳ = {self.score}"


class StudyJob(BackgroundWork):
    """A long operation on a study run as a Celery task (generating many items), with its outcome.

    While it runs, its progress is in the cache (``collection.jobs.study_job_done_count``): the task
    writes the items in one transaction, so rows written inside it would not show progress until the end.
    """

    class Kind(models.TextChoices):
        ITEMS_GENERATE = "items_generate", "generate items"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="jobs")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    parameters = models.JSONField(default=dict, blank=True)
    total = models.PositiveIntegerField(default=0, help_text="Units of work (items to make).")

    class Meta(BackgroundWork.Meta):
        constraints = [
            models.UniqueConstraint(
                fields=["study"],
                condition=Q(status__in=["pending", "running"]),
                name="one_unfinished_job_per_study",
                violation_error_message="The study already has a job in progress.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} for study {self.study_id} ({self.status})"


@receiver([post_save, post_delete], sender=StudyTranslation)
@receiver([post_save, post_delete], sender=CheckTranslation)
@receiver([post_save, post_delete], sender=Check)
def study_texts_changed(sender, instance, **kwargs) -> None:
    """A new ``settings_version`` for the study whose texts or checks changed: each web process's copy of
    its texts in other languages (``collection.languages``) is kept per version."""
    study_id = instance.check_item.study_id if sender is CheckTranslation else instance.study_id
    Study.objects.filter(pk=study_id).update(settings_version=uuid.uuid4())

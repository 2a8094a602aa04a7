"""Model submissions, their evaluations, and the cached measurement-quality figures of studies."""

from __future__ import annotations

import secrets
from datetime import timedelta

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q
from django.utils import timezone

from common.numbers import FiniteJSONEncoder


class Kind(models.TextChoices):
    """What a submission is: a model's scores of the items, or a judge's decisions on the crowd's pairs."""

    MODEL = "model", "model"
    JUDGE = "judge", "judge"


class Submission(models.Model):
    """A model owner's scores of one study's items, or a judge's decisions on its pairs, stored once and
    never changed.

    A model (``kind`` "model") holds ``scores``: one entry per item of the study, in item index order,
    the submitted score or None for an item it does not cover; higher scores mean more related.
    A judge (``kind`` "judge") holds ``decisions``: one entry per judge pair (``metrics.judges``) in pair
    order (pair 1 is index 0): 1 the left item as listed is more related, 0 the right one, 0.5 a tie,
    None undecided. ``covered`` and ``coverage`` count the scored items, or the decided pairs.

    ``failed`` means failed on our side (a server error while evaluating it): such a submission holds
    neither its name nor a seal, and does not count against the owner's variants.
    """

    class Status(models.TextChoices):
        PENDING = "pending", "pending"
        RUNNING = "running", "running"
        DONE = "done", "done"
        FAILED = "failed", "failed"

    study = models.ForeignKey("collection.Study", on_delete=models.CASCADE, related_name="submissions")
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="submissions")
    kind = models.CharField(max_length=5, choices=Kind.choices, default=Kind.MODEL)
    # A judge's name too: one namespace of names per owner and study, which seals share.
    model_name = models.CharField(max_length=100)
    description = models.TextField(blank=True)
    scores = models.JSONField(encoder=FiniteJSONEncoder, null=True, blank=True)
    decisions = models.JSONField(
        encoder=FiniteJSONEncoder,
        null=True,
        blank=True,
        help_text="A judge's: 1 left, 0 right, 0.5 tie, null.",
    )
    covered = models.PositiveIntegerField(help_text="Items with a score, or pairs with a decision.")
    coverage = models.FloatField(help_text="covered / items of the study (a judge: / pairs)")
    source_format = models.CharField(max_length=10, help_text="json or csv (a judge: json, csv or jsonl)")
    created_at = models.DateTimeField(auto_now_add=True)
    # The evaluation at the study's default settings (n0 = 2, K from the study), with its progress.
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    progress = models.PositiveSmallIntegerField(default=0, help_text="Percent done of the evaluation.")
    error = models.TextField(blank=True)
    seal = models.OneToOneField(
        "Seal",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="submission",
        help_text="The seal this submission's file matched, made before it.",
    )

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            # One that failed on our side frees its name for the owner's retry.
            models.UniqueConstraint(
                fields=["study", "owner", "model_name"],
                condition=~Q(status="failed"),
                name="submission_model_unique_per_owner",
            ),
            models.CheckConstraint(
                condition=Q(coverage__gte=0) & Q(coverage__lte=1), name="submission_coverage_in_0_1"
            ),
            models.CheckConstraint(
                condition=Q(kind__in=Kind.values),
                name="submission_kind_known",
                violation_error_message="A submission is a model or a judge.",
            ),
            # A model holds scores and no decisions, a judge decisions and no scores.
            models.CheckConstraint(
                condition=Q(kind=Kind.MODEL, scores__isnull=False, decisions__isnull=True)
                | Q(kind=Kind.JUDGE, scores__isnull=True, decisions__isnull=False),
                name="submission_kind_holds_its_data",
                violation_error_message="A model holds scores, a judge decisions.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.model_name} on {self.study_id}"


class Seal(models.Model):
    """A model owner's commitment to a scores file before showing it: its SHA-256, kept with the time and
    the study's state then. The submission of the same model name must be that very file."""

    study = models.ForeignKey("collection.Study", on_delete=models.CASCADE, related_name="seals")
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="seals")
    kind = models.CharField(
        max_length=5, choices=Kind.choices, default=Kind.MODEL, help_text="What it seals: a model or a judge."
    )
    model_name = models.CharField(max_length=100)
    sha256 = models.CharField(max_length=64, help_text="SHA-256 of the file, 64 hexadecimal digits.")
    sealed_at = models.DateTimeField(auto_now_add=True)
    study_status = models.CharField(max_length=10, help_text="The study's status when the seal was made.")

    class Meta:
        ordering = ["-sealed_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["study", "owner", "model_name"], name="seal_model_unique_per_owner"
            ),
            models.CheckConstraint(condition=Q(sha256__regex=r"^[0-9a-f]{64}$"), name="seal_sha256_hex"),
            models.CheckConstraint(condition=Q(kind__in=Kind.values), name="seal_kind_known"),
        ]

    def __str__(self) -> str:
        return f"seal of {self.model_name} on {self.study_id}"


class Part(models.TextChoices):
    """Which items a figure is computed over: all of them (a study without a hidden test part), the
    public development part, or the hidden test part (collection.parts)."""

    ALL = "all", "all items"
    DEVELOPMENT = "development", "development part"
    TEST = "test", "hidden test part"


class Evaluation(models.Model):
    """The metrics of a submission against the study's final ranking, for one n0 and one K, over one
    part of the items: the development part is its owner's to read, the test part only the leaderboard's
    aggregates."""

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="evaluations")
    part = models.CharField(max_length=12, choices=Part.choices, default=Part.ALL)
    weight_offset = models.FloatField(help_text="n0 of the weighted coefficients (Eq. 9).")
    top_k = models.PositiveIntegerField(help_text="K: the human top-K items are the relevant ones.")
    result = models.JSONField(encoder=FiniteJSONEncoder)
    computed_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["submission", "part", "weight_offset", "top_k"], name="evaluation_unique_per_settings"
            ),
            models.CheckConstraint(
                condition=models.Q(part__in=Part.values),
                name="evaluation_part_known",
                violation_error_message="An evaluation is over all items, the development part or the test part.",
            ),
        ]

    def __str__(self) -> str:
        return f"evaluation of {self.submission_id} ({self.part}, n0={self.weight_offset}, K={self.top_k})"


class StudyFigure(models.Model):
    """A cached measurement-quality figure of a study (instrument card, chance level, bootstrap).

    ``fingerprint`` records the state of the study the figure was computed from (votes, status); a
    figure whose fingerprint no longer matches is stale and recomputed.
    """

    study = models.ForeignKey("collection.Study", on_delete=models.CASCADE, related_name="figures")
    kind = models.CharField(max_length=40)
    parameters = models.JSONField(default=dict, encoder=FiniteJSONEncoder)
    key = models.CharField(max_length=200, help_text="kind and parameters, canonical")
    fingerprint = models.CharField(max_length=200)
    value = models.JSONField(encoder=FiniteJSONEncoder)
    array = models.BinaryField(
        null=True, blank=True, help_text="A large numpy array (np.save), e.g. bootstrap replicates"
    )
    computed_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["study", "key"], name="study_figure_unique")]

    def __str__(self) -> str:
        return f"{self.key} of study {self.study_id}"


class Standing(models.Model):
    """A submission's place on the leaderboard at one n0: its four coefficients and their values on the
    study's bootstrap replicates (for the paired comparisons of models).

    Stored after the submission's evaluation (by a task), so that the public leaderboard only reads;
    the one at the default n0 is the default evaluation's, stored with it.
    """

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="standings")
    part = models.CharField(
        max_length=12,
        choices=Part.choices,
        default=Part.ALL,
        help_text="The items it ranks on: all, or the hidden test part of a study that keeps one.",
    )
    weight_offset = models.FloatField(help_text="n0 of ρ_w and τ_w (Eq. 9): one the leaderboard offers.")
    coefficients = models.JSONField(
        encoder=FiniteJSONEncoder,
        help_text="ρ_w, τ_w, ρ and τ: value (null when undefined, with the reason), interval, chance level, p-value.",
    )
    replicates = models.JSONField(
        encoder=FiniteJSONEncoder,
        help_text="Each coefficient on every bootstrap replicate of the study (null where undefined).",
    )
    computed_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["submission", "weight_offset"], name="standing_unique_per_offset"
            ),
            # The leaderboard ranks on all items or on the test part, never on the public development part.
            models.CheckConstraint(
                condition=models.Q(part__in=[Part.ALL, Part.TEST]),
                name="standing_part_all_or_test",
                violation_error_message="A standing ranks on all items or on the hidden test part.",
            ),
        ]

    def __str__(self) -> str:
        return f"standing of {self.submission_id} (n0={self.weight_offset})"


def invitation_key() -> str:
    """A new invitation's secret: 32 random bytes, URL-safe (43 characters)."""
    return secrets.token_urlsafe(32)


def two_weeks_from_now():
    return timezone.now() + timedelta(days=14)


MAX_INVITATION_USES = 1000


class Invitation(models.Model):
    """A link by which people create their own model owner's account, given by a study's researcher.

    Bounded: at most ``max_uses`` accounts, until ``expires_at``, and revocable at any time. The
    accounts it made are ``InvitedAccount`` rows.
    """

    study = models.ForeignKey("collection.Study", on_delete=models.CASCADE, related_name="invitations")
    key = models.CharField(max_length=64, unique=True, default=invitation_key, editable=False)
    note = models.CharField(
        max_length=200, blank=True, help_text="For whom, as a reminder; never shown to them."
    )
    max_uses = models.PositiveIntegerField(
        default=10,
        validators=[MinValueValidator(1), MaxValueValidator(MAX_INVITATION_USES)],
        help_text=f"How many accounts the link may create (1 to {MAX_INVITATION_USES:,}).",
    )
    uses = models.PositiveIntegerField(
        default=0, editable=False, help_text="Accounts created with it so far."
    )
    expires_at = models.DateTimeField(default=two_weeks_from_now, help_text="The link refuses after this.")
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+", editable=False
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(max_uses__gte=1, max_uses__lte=MAX_INVITATION_USES),
                name="invitation_max_uses_bounded",
                violation_error_message=f"An invitation creates from 1 to {MAX_INVITATION_USES:,} accounts.",
            ),
            # Two people following the link at once cannot both take its last use (metrics/accounts.py).
            models.CheckConstraint(
                condition=Q(uses__lte=models.F("max_uses")), name="invitation_uses_within_max"
            ),
        ]

    def __str__(self) -> str:
        return f"invitation to {self.study} ({self.uses} of {self.max_uses} used)"


class InvitedAccount(models.Model):
    """An account made through an invitation: who invited it, to which study, and when."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="invitation_use"
    )
    invitation = models.ForeignKey(Invitation, on_delete=models.CASCADE, related_name="accounts")
    joined_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.user} through {self.invitation}"

"""Per-ballot scores of the items, and plan simulations run from the admin."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class ItemScore(models.Model):
    """What ballot k measured for one of its items: x(k), y(k), ȳ(k) (Eq. 1, 5, 6)."""

    ballot = models.ForeignKey("collection.Ballot", on_delete=models.CASCADE, related_name="scores")
    item = models.ForeignKey("collection.Item", on_delete=models.CASCADE, related_name="scores")
    wins = models.PositiveIntegerField()
    ties = models.PositiveIntegerField()
    appearances = models.PositiveIntegerField()
    win_ratio = models.FloatField(null=True, help_text="x(k); empty when the item got no vote in the ballot.")
    rescaled_score = models.FloatField(null=True, help_text="y(k)")
    score = models.FloatField(null=True, help_text="ȳ(k), the running mean of y up to ballot k")
    measured = models.PositiveSmallIntegerField(help_text="Ballots up to k in which the item got a vote.")
    survived = models.BooleanField(help_text="Carried into ballot k+1.")

    class Meta:
        ordering = ["ballot", "-score"]
        constraints = [
            models.UniqueConstraint(fields=["ballot", "item"], name="item_score_unique_per_ballot")
        ]

    def __str__(self) -> str:
        return f"item {self.item_id} in ballot {self.ballot_id}: ȳ = {self.score}"


class SimulationRun(models.Model):
    """A simulation of a study's plan (§4), run as a Celery task with its progress stored here."""

    class Status(models.TextChoices):
        PENDING = "pending", "pending"
        RUNNING = "running", "running"
        DONE = "done", "done"
        FAILED = "failed", "failed"

    study = models.ForeignKey("collection.Study", on_delete=models.CASCADE, related_name="simulations")
    parameters = models.JSONField()
    repetitions = models.PositiveIntegerField(default=20)
    seed = models.BigIntegerField(default=0)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    done = models.PositiveIntegerField(default=0)
    result = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"simulation {self.pk} of study {self.study_id} ({self.status})"

    @property
    def progress_percent(self) -> int:
        return round(100 * self.done / self.repetitions) if self.repetitions else 0

"""What several apps' models share; abstract, so no table and no migration of its own."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import models


class BackgroundWork(models.Model):
    """Work that a Celery task does for a researcher, with its state and outcome.

    Pending until its task starts, then running, then done or failed. A row still pending long after
    it was made had its task lost (a broker that was down): the sweep sends it again
    (``stale_pending``).
    """

    class Status(models.TextChoices):
        PENDING = "pending", "pending"
        RUNNING = "running", "running"
        DONE = "done", "done"
        FAILED = "failed", "failed"

    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    result = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True
        ordering = ["-created_at"]

    @property
    def finished(self) -> bool:
        return self.status in (self.Status.DONE, self.Status.FAILED)

    @classmethod
    def stale_pending(cls, *, now: datetime, stale_seconds: int):
        """The ids of the rows still pending ``stale_seconds`` after they were made."""
        return cls.objects.filter(
            status=cls.Status.PENDING, created_at__lte=now - timedelta(seconds=stale_seconds)
        ).values_list("pk", flat=True)

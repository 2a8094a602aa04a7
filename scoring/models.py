"""Plan simulations run from the admin, and the admin's view of the per-ballot scores."""

from __future__ import annotations

from django.db import models

import collection.models
from common.models import BackgroundWork
from common.numbers import percent_done


class ItemScore(collection.models.ItemScore):
    """The per-ballot scores as the researchers' admin shows them, under the scoring app where they were
    first kept: their admin pages (/admin/scoring/itemscore/) and permissions stay. The rows are
    ``collection.models.ItemScore``, written by the close of a ballot; read and write them there."""

    class Meta:
        proxy = True


class SimulationRun(BackgroundWork):
    """A simulation of a study's plan (§4), run as a Celery task with its progress stored here."""

    study = models.ForeignKey("collection.Study", on_delete=models.CASCADE, related_name="simulations")
    parameters = models.JSONField()
    repetitions = models.PositiveIntegerField(default=20)
    seed = models.BigIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)

    def __str__(self) -> str:
        return f"simulation {self.pk} of study {self.study_id} ({self.status})"

    @property
    def progress_percent(self) -> int:
        return percent_done(self.done, self.repetitions) if self.repetitions else 0


class PlanSearch(BackgroundWork):
    """A search for the cheapest plan that reaches a target in simulation (``scoring.plan_search``), run as
    a Celery task; ``done`` counts the plans simulated, of at most ``total``. ``result`` is
    ``scoring.planning.plan_search_run``'s JSON: the plan, its confidence and confirmation, the plan
    without warnings beside it, one entry per area for a study ranked per area."""

    study = models.ForeignKey("collection.Study", on_delete=models.CASCADE, related_name="plan_searches")
    parameters = models.JSONField()
    done = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(default=0)

    def __str__(self) -> str:
        return f"plan search {self.pk} of study {self.study_id} ({self.status})"

    @property
    def progress_percent(self) -> int:
        return percent_done(self.done, self.total) if self.total else 0


class LiveSample(models.Model):
    """The votes recorded in a running study at one minute: the series of the live view's "votes over
    time" (``scoring.live``). At most one per study and minute (the unique constraint: whoever reads or
    samples first in a minute writes it), kept for ``scoring.live.LIVE_SAMPLES_KEPT_MINUTES``."""

    study = models.ForeignKey("collection.Study", on_delete=models.CASCADE, related_name="live_samples")
    minute = models.DateTimeField(help_text="The sample's minute (its time, seconds dropped).")
    at = models.DateTimeField(help_text="When the votes were read.")
    votes = models.IntegerField(help_text="Votes recorded in the study then (its ballots' counters).")

    class Meta:
        ordering = ["study", "minute"]
        constraints = [models.UniqueConstraint(fields=["study", "minute"], name="live_sample_one_per_minute")]

    def __str__(self) -> str:
        return f"study {self.study_id} at {self.at:%Y-%m-%d %H:%M:%S}: {self.votes} votes"

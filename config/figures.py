"""The figures of GET /metrics that come from the apps' rows, read when Prometheus scrapes.

Votes recorded are read from the ballots' counters (``BallotCounter``, whose parts the vote adds to
in the same transaction as the vote), summed per study: one aggregate query per scrape over the
counters' parts (at most 16 per ballot), nothing at all on the vote's path, and exact across every web process and
host, because the database is what they share. A study's counter only grows: votes are never removed.
"""

from __future__ import annotations

import logging

from django.db import DatabaseError
from django.db.models import Sum
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from collection.models import Ballot

logger = logging.getLogger(__name__)


class VotesRecordedCollector:
    """``yardstick_votes_recorded_total{study}`` from the ballots' counters."""

    def collect(self):
        try:
            totals = list(
                Ballot._base_manager.values_list("study__slug")  # without each ballot's own count
                .annotate(votes=Sum("counter_parts__votes"))
                .order_by()
            )
        except DatabaseError as exc:
            logger.warning("votes recorded unknown: the database did not answer (%s)", exc)
            up = GaugeMetricFamily("yardstick_database_up", "1 if the database answered this scrape.")
            up.add_metric([], 0.0)
            return [up]
        votes = CounterMetricFamily(
            "yardstick_votes_recorded", "Votes recorded, by study (the ballots' counters).", labels=["study"]
        )
        for slug, count in totals:
            votes.add_metric([slug], float(count or 0))
        up = GaugeMetricFamily("yardstick_database_up", "1 if the database answered this scrape.")
        up.add_metric([], 1.0)
        return [votes, up]

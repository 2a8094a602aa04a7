"""python manage.py simulate_voters --study SLUG: simulated annotators vote through the services."""

from __future__ import annotations

import time

import numpy as np
from django.core.management.base import BaseCommand, CommandError
from django.db.models import Count, Max
from django.test.utils import override_settings
from django.utils import timezone

from collection.arrays import OUTCOME
from collection.identity import annotator_consent
from collection.models import Annotator, Assignment, Ballot, CheckAnswer, Comparison, Study
from collection.voting import NextReason, comparison_next_for, vote_record_and_next
from common.errors import ServiceError
from common.numbers import counted
from scoring.datafiles import EMBEDDING_SIMILARITY_CSV, read_similarity_csv
from scoring.management.arguments import add_voter_model_arguments, voter_model_options
from scoring.simulation import (
    DISTRIBUTIONS,
    SimulationConfig,
    draw_voters,
    underlying_similarity,
    voter_outcomes,
)

CHOICE_OF_OUTCOME = {outcome: choice for choice, outcome in OUTCOME.items()}
# Beyond the lease: a page's last vote may reach the server a moment after its lease ran out.
WAIT_BEYOND_LEASE_SECONDS = 30
# Nobody could vote for this long: the command says why, and how long it will wait.
EXPLAIN_AFTER_SECONDS = 2.0

_DEFAULTS = SimulationConfig()


class Command(BaseCommand):
    help = (
        "Vote on a running study with simulated annotators (the relatedness-driven voter model of "
        "Lombardo et al. §4.1), through the same services as real annotators, until the study finishes "
        "or --max-votes is reached. Ballots close as they would for people: by the Celery task that the "
        "last vote of a ballot enqueues (in-process on the embedded default, on a worker on the full stack)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--study", required=True, help="slug of a running study")
        parser.add_argument("--voters", type=int, default=_DEFAULTS.voter_count, help="simulated annotators")
        parser.add_argument(
            "--distribution",
            choices=DISTRIBUTIONS,
            default=None,
            help="underlying similarity of the items; default: the paper's 990 embedding similarities when "
            "the study has 990 items, else exponential",
        )
        add_voter_model_arguments(parser)
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--max-votes", type=int, default=None, help="stop after this many votes")
        parser.add_argument(
            "--prefix", default="sim-", help="participant id prefix of the simulated annotators"
        )
        parser.add_argument(
            "--wait",
            type=float,
            default=None,
            help="seconds to wait while no simulated annotator can vote (a ballot closing on a worker, "
            "comparisons leased by people); default: the study's lease plus "
            f"{WAIT_BEYOND_LEASE_SECONDS} s, so that a lease held by an open voting page lapses and its "
            "comparison returns to the pool",
        )

    def handle(self, *args, **options):
        # With DEBUG on, Django keeps the text of every query: a quarter of the time of a vote here.
        with override_settings(DEBUG=False):
            self._simulate(**options)

    def _simulate(self, **options):
        study = Study.objects.filter(slug=options["study"]).first()
        if study is None:
            raise CommandError(f"no study with slug {options['study']!r}")
        if study.status != Study.Status.RUNNING:
            raise CommandError(
                f"study {study.slug!r} is {study.status}; start it first (admin action 'Start')"
            )
        item_count = study.items.count()
        distribution = options["distribution"] or ("file" if item_count == 990 else "exponential")
        rng = np.random.default_rng(options["seed"])
        if distribution == "file":
            values = read_similarity_csv(EMBEDDING_SIMILARITY_CSV)
            if values.size != item_count:
                raise CommandError(
                    f"the shipped similarities describe {values.size} items; the study has {item_count}"
                )
            similarity = values
        else:
            # Items are numbered in generation order; give them the similarities in a random order.
            similarity = rng.permutation(underlying_similarity(distribution, item_count))
        try:
            config = SimulationConfig(
                item_count=item_count,
                ballot_count=study.ballot_count,
                keep_fraction=study.keep_fraction,
                appearances=study.appearances,
                **voter_model_options(options),
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        voters = draw_voters(similarity, config, rng)
        index_of = dict(study.items.values_list("id", "index"))
        annotators = _simulated_annotators(study, prefix=options["prefix"], count=options["voters"])
        if options["wait"] is None:
            wait = study.lease_seconds + WAIT_BEYOND_LEASE_SECONDS
            wait_why = f"the study's lease of {study.lease_seconds} s and {WAIT_BEYOND_LEASE_SECONDS} s more"
        else:
            wait, wait_why = options["wait"], "--wait"
        total = sum(study.ballots.values_list("comparison_count", flat=True))
        votes = answers = 0
        started = time.monotonic()
        idle_since, explained = None, False
        # Each annotator's next comparison, as the answer to their last vote leased it (one call per
        # judgement, as for people); an annotator without one asks with comparison_next_for.
        leased = [None] * len(annotators)
        while options["max_votes"] is None or votes < options["max_votes"]:
            # The study's status once per pass: the services say when a ballot closes or the study ends.
            study.refresh_from_db(fields=["status"])
            if study.status == Study.Status.FINISHED:
                break
            voted_this_pass = 0
            for number, annotator in enumerate(annotators):
                if options["max_votes"] is not None and votes >= options["max_votes"]:
                    break
                result = leased[number] or comparison_next_for(annotator=annotator)
                leased[number] = None
                if result.assignment is None:
                    if result.reason in (NextReason.FINISHED, NextReason.BALLOT_CLOSING):
                        break
                    continue
                sides = result.sides
                left, right = index_of[sides["left"]["item"]], index_of[sides["right"]["item"]]
                (outcome,) = voter_outcomes(
                    voters, [number], [left], [right], rng, allow_ties=study.allow_ties
                )
                try:
                    recorded, _created, after = vote_record_and_next(
                        annotator=annotator,
                        assignment_id=result.assignment.pk,
                        choice=CHOICE_OF_OUTCOME[outcome],
                    )
                except ServiceError as exc:  # e.g. the ballot closed at its deadline meanwhile
                    self.stderr.write(f"vote refused: {exc.message}")
                    continue
                # A check's answer is never a vote: it is neither in a ballot nor in the progress of one.
                if isinstance(recorded, CheckAnswer):
                    answers += 1
                else:
                    votes += 1
                voted_this_pass += 1
                if after.assignment is not None:
                    leased[number] = after
                elif after.reason in (NextReason.FINISHED, NextReason.BALLOT_CLOSING):
                    break
            if voted_this_pass:
                idle_since, explained = None, False
                total = max(total, sum(study.ballots.values_list("comparison_count", flat=True)))
                self._progress(study, votes, answers, total)
                continue
            # Nobody could vote: the ballot is closing on a worker, people hold the comparisons left, or
            # the simulated annotators judged every pair left.
            idle_since = idle_since or time.monotonic()
            idle = time.monotonic() - idle_since
            if idle > wait:
                raise CommandError(
                    f"no simulated annotator could vote for {wait:.0f} s: "
                    + _why_nobody_could_vote(study, prefix=options["prefix"])
                )
            if idle >= EXPLAIN_AFTER_SECONDS and not explained:
                self.stderr.write(
                    f"\nno simulated annotator can vote: {_why_nobody_could_vote(study, prefix=options['prefix'])}"
                    f"; waiting up to {wait:.0f} s ({wait_why})"
                )
                explained = True
            time.sleep(0.5)
        self.stderr.write("")
        study.refresh_from_db()
        checks = f" and {counted(answers, 'check answer')}" if answers else ""
        self.stdout.write(
            f"{votes} votes{checks} by {len(annotators)} simulated annotators in "
            f"{time.monotonic() - started:.1f} s; "
            f"study {study.slug!r} is {study.status}"
            + (f", {study.ballots.count()} ballots" if study.status != Study.Status.FINISHED else "")
        )

    def _progress(self, study, votes: int, answers: int, total: int) -> None:
        ballot = study.ballots.order_by("-number").first()
        width = 30
        filled = min(width, round(width * votes / max(total, 1)))
        self.stderr.write(
            f"\rvoting [{'#' * filled}{'-' * (width - filled)}] {votes} votes, "
            f"{counted(answers, 'check answer')}, ballot {ballot.number}/{study.ballot_count}",
            ending="",
        )


def _simulated_annotators(study: Study, *, prefix: str, count: int) -> list[Annotator]:
    """The ``count`` simulated annotators ``<prefix>0`` … of the study, created marked ``simulated`` (or
    those of an earlier run); a person whose participant id is one of theirs is refused, never voted for."""
    annotators = []
    for number in range(count):
        participant_id = f"{prefix}{number}"[:128]
        annotator, _ = Annotator.objects.get_or_create(
            study=study, participant_id=participant_id, defaults={"simulated": True}
        )
        if not annotator.simulated:
            raise CommandError(
                f"participant {participant_id!r} of this study is a person, not a simulated annotator; "
                "choose another --prefix"
            )
        annotators.append(annotator_consent(annotator=annotator))
    return annotators


def _why_nobody_could_vote(study: Study, *, prefix: str) -> str:
    """What holds the study: a close that no worker runs, people's leases, or pairs all judged."""
    ballot = study.ballots.order_by("-number").first()
    if (
        ballot is None
        or ballot.status != Ballot.Status.OPEN
        or ballot.votes_recorded >= ballot.comparison_count
    ):
        number = ballot.number if ballot else "none"
        return f"ballot {number} is fully voted and waits for its close; is a Celery worker running?"
    now = timezone.now()
    held = Comparison.objects.filter(
        ballot=ballot,
        status=Comparison.Status.LEASED,
        lease_expires_at__gt=now,
        assignments__status=Assignment.Status.ACTIVE,
    ).exclude(assignments__annotator__participant_id__startswith=prefix)
    people = held.aggregate(count=Count("id", distinct=True), until=Max("lease_expires_at"))
    if people["count"]:
        return (
            f"{counted(people['count'], 'comparison')} of ballot {ballot.number} "
            f"{'is' if people['count'] == 1 else 'are'} leased by participants who are not simulated, "
            f"until {people['until']:%H:%M:%S} UTC at the latest; run the command again after that "
            "(a lapsed lease goes back to the pool), or with a longer --wait"
        )
    left = ballot.comparison_count - ballot.votes_recorded
    return (
        f"the simulated annotators have judged every pair of the {counted(left, 'comparison')} left in "
        f"ballot {ballot.number}; run it with more --voters"
    )

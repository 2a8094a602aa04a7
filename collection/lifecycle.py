"""The ballot state machine: start a study, open a ballot, close it, open the next or finish the study.

    draft ──study_start──▶ ballot 1 open ──ballot_close──▶ ballot 2 open ─ … ─▶ ballot n_b closed: finished

A ballot closes when its last comparison is voted (``collection.voting.vote_record`` asks for the close
through ``ballot_close_request``), when a researcher closes it now (``study_close_current_ballot``), or
when the sweep (Celery beat, and each worker as it connects to the broker) finds it past its deadline or
fully voted with its close never run; a lease that finds it fully voted and open for a while asks for
its close again (``ballot_close_ask_again``). The
close itself runs in the Celery task ``scoring.ballot_close`` (``collection.tasks``), after commit:
on a worker on the full stack; on the embedded default (eager Celery) after the response of the request
that asked for it (``common.tasks``), so the annotator whose vote completes the ballot does not wait.
Each close stores how long it took (``Ballot.close_seconds``); ``ballot_close_wait_seconds`` turns
those into the wait told to annotators who arrive while a ballot closes.
The sweep also returns expired leases to the pool and sends again the jobs whose task was never sent.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from datetime import datetime, timedelta

import numpy as np
from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Max, Sum
from django.utils import timezone

from collection import arrays
from collection.jobs import study_jobs_restart
from collection.models import (
    Assignment,
    Ballot,
    BallotItem,
    Comparison,
    Item,
    ItemScore,
    SemanticArea,
    Study,
    SweepRun,
    Vote,
)
from collection.parts import items_split_draw
from collection.pools import require_no_job
from collection.schedule import ballot_schedule, stratified_schedule
from collection.studies import study_area_plans, study_plan
from common.errors import ServiceError, StudyStateError
from common.tasks import enqueue_on_commit
from scoring.borda import (
    ballot_tallies,
    final_order,
    score_ballot,
    score_ballot_by_stratum,
    select_survivors,
    select_survivors_by_stratum,
)
from scoring.score_models import BORDA, scores_from_votes

logger = logging.getLogger(__name__)

BALLOT_CLOSE_TASK = "scoring.ballot_close"  # the Celery name it has always had (queued messages carry it)
# What closes a ballot whose closing task could not be sent: the sweep (Celery beat, every SWEEP_SECONDS,
# and each worker when it connects to the broker) or the next lease's ask (ballot_close_ask_again).
BALLOT_CLOSE_RECOVERY = "the ballots sweep or the next lease"
BALLOTS_SWEEP = "ballots"  # the sweep's row in SweepRun
# The rule that excludes flagged annotators, run after each close of a study that asks for it.
EXCLUSION_RULES_TASK = "scoring.exclusion_rules_apply"
EXCLUSION_RULES_RECOVERY = "the next close, or manage.py exclusion_rules_apply"


# --- start and open ------------------------------------------------------------------------------


@transaction.atomic
def study_start(*, study: Study, now: datetime | None = None) -> Ballot:
    """Freeze the plan and open ballot 1 with its schedule."""
    study = Study.objects.select_for_update().get(pk=study.pk)
    if study.status != Study.Status.DRAFT:
        raise StudyStateError(f"the study is already {study.status}")
    require_no_job(study, "start the study")
    plan = study_plan(study=study)
    items_split_draw(study=study)  # the hidden test part, fixed from now on (collection.parts)
    study.appearances = plan.appearances  # a budget becomes the M it allows, frozen from now on
    study.ballot_sizes = list(plan.sizes)  # N(k) of Eq. 2, frozen too: the survivors of every close
    if study.ranking_scope == Study.RankingScope.PER_AREA:
        for name, area_plan in study_area_plans(study=study).by_area.items():
            SemanticArea.objects.filter(study=study, name=name).update(ballot_sizes=list(area_plan.sizes))
    study.status = Study.Status.RUNNING
    study.started_at = now or timezone.now()
    study.save(update_fields=["appearances", "ballot_sizes", "status", "started_at"])
    indices = np.arange(plan.item_count)
    return ballot_open(study=study, number=1, item_indices=indices, now=now)


def ballot_open(*, study: Study, number: int, item_indices, now: datetime | None = None) -> Ballot:
    """Create ballot ``number`` over the given items with its comparisons (call inside a transaction).

    The schedule is drawn from ``numpy.random.default_rng([study.seed, number])``: re-running the
    opening of a ballot (after a crash) draws the same comparisons.
    """
    now = now or timezone.now()
    item_indices = np.asarray(item_indices, dtype=np.int64)
    ids = arrays.item_ids(study_id=study.pk)
    found = np.unique(item_indices[(item_indices >= 0) & (item_indices < ids.size)]).size
    if found != item_indices.size:
        raise ServiceError(f"ballot {number}: {item_indices.size - found} of its items do not exist")
    rng = np.random.default_rng([study.seed, number])
    if study.ranking_scope == Study.RankingScope.PER_AREA:
        areas = arrays.item_areas(study_id=study.pk)
        local = stratified_schedule(areas[item_indices], study.appearances, rng)
    else:
        local = ballot_schedule(item_indices.size, study.appearances, rng)
    pairs = item_indices[local]
    deadline = now + timedelta(hours=study.ballot_deadline_hours) if study.ballot_deadline_hours else None
    ballot = Ballot.objects.create(
        study=study, number=number, comparison_count=pairs.shape[0], deadline=deadline
    )
    BallotItem.objects.bulk_create(
        [BallotItem(ballot=ballot, item_id=item_id) for item_id in ids[item_indices].tolist()],
        batch_size=2000,
    )
    low = np.minimum(pairs[:, 0], pairs[:, 1])
    high = np.maximum(pairs[:, 0], pairs[:, 1])
    Comparison.objects.bulk_create(
        [
            Comparison(
                ballot=ballot,
                position=position,
                left_item_id=left,
                right_item_id=right,
                pair_low=lo,
                pair_high=hi,
            )
            for position, (left, right, lo, hi) in enumerate(
                zip(
                    ids[pairs[:, 0]].tolist(),
                    ids[pairs[:, 1]].tolist(),
                    low.tolist(),
                    high.tolist(),
                    strict=True,
                )
            )
        ],
        batch_size=2000,
    )
    if connection.vendor == "postgresql":
        # Fresh statistics for the new rows: until autovacuum gets to them the planner takes the ballot
        # for empty and the lease query (every GET next) scans and sorts every open comparison, 40-110 ms
        # instead of 0.06 ms. ANALYZE samples the table: tens of milliseconds, once a ballot.
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE collection_comparison")
    logger.info("opened %s with %d items and %d comparisons", ballot, item_indices.size, pairs.shape[0])
    return ballot


# --- asking for a close --------------------------------------------------------------------------


# A fully voted ballot still open this long after its last vote (and at least twice its expected close)
# has lost its closing message: a lease that finds it so asks for the close again, and each process
# asks again at most this often. The sweep does the same, when beat runs.
CLOSE_ASK_AGAIN_SECONDS = 10.0
# When this process last looked at a closing ballot's last vote: ballot id -> time.monotonic().
_close_looked_at: dict[int, float] = {}
_close_looked_at_lock = threading.Lock()
CLOSE_LOOKED_AT_KEPT = 1_000  # ballots remembered per process; the oldest go first


def ballot_close_ask_again(
    *, ballot_id: int, expected_close_seconds: float = 0.0, now: datetime | None = None
) -> bool:
    """Someone found ``ballot_id`` fully voted and still open (``ballot_closing``): ask for its close
    again if its last vote is ``CLOSE_ASK_AGAIN_SECONDS`` old, and twice ``expected_close_seconds``.
    Returns whether it asked.

    Its closing message may have been lost (a broker that was down at the last vote); without Celery
    beat's sweep nothing else would close it. Each process looks at a ballot at most once per that
    interval (counted in its memory, so that a broker that is down costs one bounded attempt per
    interval, not one per annotator). An ask while the close runs costs a message: the close is
    idempotent.
    """
    interval = max(CLOSE_ASK_AGAIN_SECONDS, 2 * expected_close_seconds)
    looked_at = time.monotonic()
    with _close_looked_at_lock:
        last_look = _close_looked_at.get(ballot_id)
        if last_look is not None and looked_at - last_look < interval:
            return False
        _close_looked_at[ballot_id] = looked_at
        while len(_close_looked_at) > CLOSE_LOOKED_AT_KEPT:
            del _close_looked_at[next(iter(_close_looked_at))]
    now = now or timezone.now()
    last_vote = Vote.objects.filter(ballot_id=ballot_id).aggregate(last=Max("created_at"))["last"]
    if last_vote is None or (now - last_vote).total_seconds() < interval:
        return False
    waited = (now - last_vote).total_seconds()
    logger.warning("ballot %s still closing %.0f s after its last vote: close asked again", ballot_id, waited)
    ballot_close_request(ballot_id=ballot_id)
    return True


def ballot_close_asks_forget() -> None:
    """Forget when this process last looked at closing ballots (tests, whose ballot ids repeat)."""
    with _close_looked_at_lock:
        _close_looked_at.clear()


def ballot_close_request(*, ballot_id: int, after_response: bool = True) -> None:
    """Have the ballot closed by the Celery task once the current transaction commits.

    On the embedded default (eager Celery) the close runs after the response of the request that asked
    for it (the annotator whose vote completes the ballot does not wait for it), or, without
    ``after_response``, before it (a researcher's close-now, whose page reports the close).
    Whatever happens to the message, what asked for it stands: a broker that is down is logged, and the
    sweep closes the ballot (fully voted, or past the deadline set by a close-now) at its next run.
    """
    enqueue_on_commit(
        BALLOT_CLOSE_TASK, ballot_id, recovered_by=BALLOT_CLOSE_RECOVERY, after_response=after_response
    )


# The bounds of the wait told while a ballot closes keep a page from reloading several times a second,
# or from waiting for ever.
MIN_CLOSE_WAIT_SECONDS = 2
MAX_CLOSE_WAIT_SECONDS = 600
# Margin on the estimate: a close of the same size varies (the database's cache, the machine's load),
# and a page that reloads too early costs a request and shows the wait again.
CLOSE_WAIT_MARGIN = 1.5
# A close's seconds per comparison before any close of the study has been measured: about four times
# what ballot 1 of the demo-sized study takes on a 2-core host, so that a slower host is covered too;
# a study's first close then calibrates the estimate.
CLOSE_SECONDS_PER_COMPARISON_PRIOR = 1e-4


def ballot_close_wait_seconds(
    *, study_id: int, ballot: Ballot | None = None, comparison_count: int | None = None
) -> int:
    """Seconds to tell annotators who arrive while ``ballot`` closes (the page reloads after them).

    The closes already measured in the study (``Ballot.close_seconds``) give the seconds per
    comparison, since a close's work (its votes, the next ballot's comparisons) grows with its
    comparisons; times the closing ballot's comparisons, with a margin of half, plus one second for
    the page to reload. Before any close of the study was measured, the seconds per comparison are
    ``CLOSE_SECONDS_PER_COMPARISON_PRIOR``. With no ballot to go by (``comparison_count`` None: none
    is open while the study runs, which the sweep repairs), the sweep interval. Bounded to 2 to 600 s.
    ``comparison_count`` stands for ``ballot.comparison_count`` where the caller read it without the row.
    """
    if ballot is not None:
        comparison_count = ballot.comparison_count
    if comparison_count is None:
        estimate = _sweep_seconds()
    else:
        measured = Ballot.objects.filter(study_id=study_id, close_seconds__isnull=False).aggregate(
            seconds=Sum("close_seconds"), comparisons=Sum("comparison_count")
        )
        if measured["comparisons"]:
            per_comparison = measured["seconds"] / measured["comparisons"]
        else:
            per_comparison = CLOSE_SECONDS_PER_COMPARISON_PRIOR
        estimate = per_comparison * comparison_count * CLOSE_WAIT_MARGIN + 1
    return int(min(max(math.ceil(estimate), MIN_CLOSE_WAIT_SECONDS), MAX_CLOSE_WAIT_SECONDS))


def _sweep_seconds() -> float:
    return float(settings.CELERY_BEAT_SCHEDULE["ballots-sweep"]["schedule"])


@transaction.atomic
def study_close_current_ballot(*, study: Study, now: datetime | None = None) -> Ballot:
    """Ask for the open ballot to be closed now, with the votes it has (the task runs after commit).

    The request is stored first, as a deadline of now: if the closing task cannot be sent, the sweep
    closes the ballot at its next run, as it closes every ballot past its deadline.
    """
    now = now or timezone.now()
    ballot = study.ballots.select_for_update(no_key=True).filter(status=Ballot.Status.OPEN).first()
    if ballot is None:
        raise StudyStateError(f"the study has no open ballot (it is {study.status})")
    if ballot.deadline is None or ballot.deadline > now:
        ballot.deadline = now
        ballot.save(update_fields=["deadline"])
    ballot_close_request(ballot_id=ballot.pk, after_response=False)  # the researcher's page reports it
    return ballot


# --- the close -----------------------------------------------------------------------------------


def _due(ballot: Ballot, now: datetime) -> bool:
    """Whether the locked ballot is fully voted, by its count read now (a statement after the lock, so
    that it sees what committed before), or past its deadline."""
    if ballot.deadline is not None and ballot.deadline <= now:
        return True
    counted = Ballot.objects.filter(pk=ballot.pk).values_list("votes_recorded", flat=True).get()
    return counted >= ballot.comparison_count


def _leases_end(ballot: Ballot) -> None:
    """Cancel the ballot's running assignments, then its comparisons not voted: what comes before the
    close reads the ballot's votes.

    A vote no longer waits for the ballot's row (its count is in ``BallotCounter``): the comparison's
    row is what orders a vote and the close. A vote locks its assignment, then takes its comparison
    (leased to voted); these updates lock the same rows in the same order, so a vote that got there
    first commits before them and they leave its rows alone, and a vote that comes after finds its
    comparison cancelled and is refused. Either way, the votes the close reads next (a new snapshot)
    are all the ballot will ever have.
    """
    # By the ballot, not its comparisons: a check's assignment has no comparison and ends here too.
    Assignment.objects.filter(ballot=ballot, status=Assignment.Status.ACTIVE).update(
        status=Assignment.Status.CANCELLED
    )
    Comparison.objects.filter(ballot=ballot).exclude(status=Comparison.Status.VOTED).update(
        status=Comparison.Status.CANCELLED, lease_expires_at=None
    )


def ballot_close(*, ballot_id: int, now: datetime | None = None, when_due: bool = False) -> Ballot | None:
    """Close a ballot: score it (Eq. 1, 5, 6), keep the survivors, open the next ballot or finish.

    Idempotent and safe under races: the ballot row is locked (``FOR NO KEY UPDATE`` on PostgreSQL,
    an IMMEDIATE transaction on SQLite) and a closed ballot is left alone, so two workers, or a rerun
    after a crash half-way (whose transaction was rolled back), give the same rows and exactly one
    next ballot. Comparisons not voted by then are cancelled, with their leases.
    Returns the ballot, or None if it does not exist.

    ``when_due`` (the task's and the sweep's close) leaves a ballot open, and returns it so, unless it
    is due: fully voted, or past its deadline (a researcher's close-now sets it). A vote asks for the
    close from the count its statement read, which an exclusion committed meanwhile may have lowered;
    here the count is read again once the ballot's row is locked, which the exclusion also locks.
    """
    with transaction.atomic():
        # FOR NO KEY UPDATE: two closes wait for each other, but a vote's commit, which checks its
        # foreign keys then (FOR KEY SHARE of the ballot's row), does not wait for the close, which
        # may itself wait for that vote's rows (``_leases_end``).
        ballot = (
            Ballot.objects.select_for_update(no_key=True).select_related("study").filter(pk=ballot_id).first()
        )
        if ballot is None:
            logger.warning("ballot %s does not exist; nothing to close", ballot_id)
            return None
        if ballot.status == Ballot.Status.CLOSED:
            return ballot
        # The time is taken once the row is locked: a vote committed while this close waited for the
        # lock must not be stamped after the close that counted it.
        now = now or timezone.now()
        if when_due and not _due(ballot, now):
            logger.warning("%s is not due (neither fully voted nor past a deadline); left open", ballot)
            return ballot
        started = time.perf_counter()
        _leases_end(ballot)
        study = ballot.study
        item_ids = arrays.item_ids(study_id=study.pk)
        item_count = item_ids.size
        in_ballot_indices = arrays.ballot_item_indices(ballot_id=ballot.pk)
        in_ballot = np.zeros(item_count, dtype=bool)
        in_ballot[in_ballot_indices] = True

        votes = arrays.ballot_votes(ballot_id=ballot.pk)
        wins, ties, appearances = ballot_tallies(votes.left, votes.right, votes.outcome, item_count)
        previous = None
        if ballot.number > 1:
            previous = arrays.ballot_scores(
                study_id=study.pk, number=ballot.number - 1, item_count=item_count
            )
        chain = dict(
            ballot=ballot.number,
            wins=wins,
            ties=ties,
            appearances=appearances,
            previous_score=None if previous is None else previous.score,
            previous_measured=None if previous is None else previous.measured,
        )
        last = ballot.number >= study.ballot_count
        survivors = np.empty(0, dtype=np.int64)
        area_slopes = {}
        if study.ranking_scope == Study.RankingScope.PER_AREA:
            # Each area is its own chain of ballots (§2.1-2.2): its b(k), its scores, its top α.
            areas = arrays.item_areas(study_id=study.pk)
            names = dict(SemanticArea.objects.filter(study=study).values_list("pk", "name"))
            scores, slopes = score_ballot_by_stratum(strata=areas, **chain)
            area_slopes = {names[area]: slope for area, slope in slopes.items()}
            if not last:
                plans = study_area_plans(study=study).by_area
                counts = {
                    area: plans[names[area]].sizes[ballot.number]
                    for area in np.unique(areas[in_ballot_indices]).tolist()
                }
                survivors = np.sort(select_survivors_by_stratum(scores.score, in_ballot, areas, counts))
        else:
            scores = score_ballot(**chain)
            if not last:
                sizes = study_plan(study=study, item_count=item_count).sizes
                survivors = np.sort(select_survivors(scores.score, in_ballot, sizes[ballot.number]))
        survived = np.zeros(item_count, dtype=bool)
        survived[survivors] = True

        ItemScore.objects.bulk_create(
            _item_scores(
                ballot,
                item_ids[in_ballot_indices],
                in_ballot_indices,
                scores,
                wins,
                ties,
                appearances,
                survived,
            ),
            batch_size=2000,
        )
        _leases_end(ballot)  # again: a lease that committed after the first took an open comparison
        ballot.status = Ballot.Status.CLOSED
        ballot.closed_at = now
        per_area = study.ranking_scope == Study.RankingScope.PER_AREA
        ballot.rescale_slope = scores.rescale_slope if ballot.number > 1 and not per_area else None
        ballot.area_rescale_slopes = area_slopes if ballot.number > 1 else {}
        ballot.save(update_fields=["status", "closed_at", "rescale_slope", "area_rescale_slopes"])
        logger.info(
            "closed %s: %d votes of %d comparisons, b = %s",
            ballot,
            len(votes),
            ballot.comparison_count,
            area_slopes or f"{scores.rescale_slope:.4f}",
        )

        if not last:
            ballot_open(study=study, number=ballot.number + 1, item_indices=survivors, now=now)
        else:
            study_finish(study=study, item_ids=item_ids, now=now)
        if study.exclude_flagged_annotators:  # after commit: it reads the scores this close stored
            enqueue_on_commit(EXCLUSION_RULES_TASK, study.pk, recovered_by=EXCLUSION_RULES_RECOVERY)
        # Stored last, to count the opening of the next ballot: the ballot row is saved closed before
        # it, as the next one may open only once this one is closed (one open ballot per study).
        ballot.close_seconds = time.perf_counter() - started
        Ballot.objects.filter(pk=ballot.pk).update(close_seconds=ballot.close_seconds)
        return ballot


def _item_scores(ballot, item_ids, indices, scores, wins, ties, appearances, survived) -> list[ItemScore]:
    """The rows of ``ItemScore`` for the items at ``indices`` (with database ids ``item_ids``)."""
    columns = zip(
        item_ids.tolist(),
        wins[indices].astype(np.int64).tolist(),
        ties[indices].astype(np.int64).tolist(),
        appearances[indices].astype(np.int64).tolist(),
        arrays.nullable(scores.win_ratio[indices]),
        arrays.nullable(scores.rescaled_score[indices]),
        arrays.nullable(scores.score[indices]),
        scores.measured[indices].astype(np.int64).tolist(),
        survived[indices].tolist(),
        strict=True,
    )
    return [
        ItemScore(
            ballot=ballot,
            item_id=item_id,
            wins=item_wins,
            ties=item_ties,
            appearances=item_appearances,
            win_ratio=win_ratio,
            rescaled_score=rescaled_score,
            score=score,
            measured=measured,
            survived=item_survived,
        )
        for item_id, item_wins, item_ties, item_appearances, win_ratio, rescaled_score, score, measured, item_survived in columns
    ]


def study_finish(*, study: Study, item_ids: np.ndarray, now: datetime) -> None:
    """Store every item's final score ȳ, its last ballot and its place in the final ranking (Eq. 5),
    and mark the study finished. Called by the close of the last ballot, inside its transaction."""
    item_count = item_ids.size
    score, last_ballot = arrays.latest_scores(study_id=study.pk, item_count=item_count)
    if study.score_model != BORDA:
        score = _model_scores(study=study, item_count=item_count)
    order = final_order(score, last_ballot)
    rank = np.empty(item_count, dtype=np.int64)
    rank[order] = np.arange(1, item_count + 1)
    # One prepared UPDATE per item, sent as a batch: bulk_update would build a CASE of 990 branches per
    # column, which took 0.3 s of the 0.8 s that the seven closes of the demo-sized study take.
    rows = zip(
        arrays.nullable(score),
        rank.tolist(),
        np.where(last_ballot > 0, last_ballot, None).tolist(),  # 0: never in a closed ballot
        item_ids.tolist(),
        strict=True,
    )
    with connection.cursor() as cursor:
        cursor.executemany(
            f"UPDATE {Item._meta.db_table} SET final_score = %s, final_rank = %s, last_ballot = %s WHERE id = %s",
            list(rows),
        )
    study.status = Study.Status.FINISHED
    study.finished_at = now
    study.save(update_fields=["status", "finished_at"])
    logger.info("finished %s", study)


def _model_scores(*, study: Study, item_count: int) -> np.ndarray:
    """Every item's score under the study's score model from the votes of all its closed ballots (the
    last one included: its row is saved closed before the finish)."""
    votes = arrays.study_votes(study_id=study.pk, closed_only=True)
    _, annotator = np.unique(votes.annotator, return_inverse=True)  # annotator codes 0 … A-1
    return scores_from_votes(
        study.score_model,
        ballot=votes.ballot,
        left=votes.left,
        right=votes.right,
        outcome=votes.outcome,
        annotator=annotator,
        item_count=item_count,
        ballot_count=int(votes.ballot.max()) if votes.ballot.size else 0,
    )


# --- housekeeping (Celery beat) ------------------------------------------------------------------


def leases_expire(*, now: datetime | None = None) -> int:
    """Return comparisons whose lease ran out to the pool; returns how many assignments expired."""
    now = now or timezone.now()
    with transaction.atomic():
        expired = Assignment.objects.filter(status=Assignment.Status.ACTIVE, expires_at__lte=now)
        Comparison.objects.filter(status=Comparison.Status.LEASED, lease_expires_at__lte=now).update(
            status=Comparison.Status.OPEN, lease_expires_at=None
        )
        return expired.update(status=Assignment.Status.EXPIRED)


def ballots_sweep(*, now: datetime | None = None) -> dict:
    """The housekeeping of the collection: expire leases, close the ballots past their deadline or
    fully voted, send again the jobs whose task was never sent. Returns the counts, for the log."""
    now = now or timezone.now()
    expired = leases_expire(now=now)
    due = Ballot.objects.filter(status=Ballot.Status.OPEN, deadline__lte=now).values_list("pk", flat=True)
    complete = Ballot.objects.filter(
        status=Ballot.Status.OPEN, votes_recorded__gte=F("comparison_count")
    ).values_list("pk", flat=True)
    closed = 0
    for ballot_id in sorted(set(due) | set(complete)):
        closed += ballot_close(ballot_id=ballot_id, now=now, when_due=True).status == Ballot.Status.CLOSED
    counts = {
        "leases_expired": expired,
        "ballots_closed": closed,
        "jobs_restarted": study_jobs_restart(now=now),
    }
    # One row, written whatever ran before it: two sweeps at once both write, the later time stays.
    SweepRun.objects.bulk_create(
        [SweepRun(name=BALLOTS_SWEEP, finished_at=timezone.now())],
        update_conflicts=True,
        unique_fields=["name"],
        update_fields=["finished_at"],
    )
    return counts


# The sweep is late when it has not run for this many of its intervals (SWEEP_SECONDS), and a minute.
SWEEP_LATE_INTERVALS = 4
SWEEP_LATE_MIN_SECONDS = 60.0
# Before this process has seen any sweep, it counts from its own start: a deployment just started is
# not late.
_process_started_at = timezone.now()


def ballots_sweep_health(*, now: datetime | None = None) -> dict:
    """When the ballots sweep last finished and whether it is late, for ``/healthz/``:
    ``{"last_run": ISO time or None, "late": bool}``, and ``"detail"`` saying what to check when late.

    Late: no run for ``SWEEP_LATE_INTERVALS`` sweep intervals and at least ``SWEEP_LATE_MIN_SECONDS``
    (counted from this process's start when no sweep ever ran). Without beat nothing closes a ballot
    whose closing message was lost, past the worker's sweep when it connects and the next lease's ask.
    """
    now = now or timezone.now()
    last_run = SweepRun.objects.filter(name=BALLOTS_SWEEP).values_list("finished_at", flat=True).first()
    waited = (now - (last_run or _process_started_at)).total_seconds()
    late_after = max(SWEEP_LATE_INTERVALS * _sweep_seconds(), SWEEP_LATE_MIN_SECONDS)
    health = {"last_run": last_run.isoformat() if last_run else None, "late": waited > late_after}
    if health["late"]:
        health["detail"] = (
            f"the ballots sweep has not run for {waited:,.0f} s (Celery beat runs it every "
            f"{_sweep_seconds():g} s): check that beat runs; until it does, a ballot whose closing message "
            "was lost waits for a worker to connect or for an annotator to ask for work"
        )
    return health

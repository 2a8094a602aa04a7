"""Where a lease starts its scan of the open ballot's comparisons, per study, in this process.

A lease takes the first open comparison by position through the partial index of open comparisons
(``comparison_open``). Leasing one leaves its entry in that index, dead, until a vacuum removes it, and
leases go in order of position: a scan from the ballot's start walks past every comparison leased since
the last vacuum. At 9,000 of 9,900 comparisons voted that was 37 index pages per lease instead of one
(migration 0025).

So the lease function (``yardstick_lease_v2``, and ``_v3`` since migration 0027) takes a ballot and a
position before which none of its comparisons was open when last read, and scans from there; called
without one for the open ballot, it reads the first open position and answers it, to be passed next time.
This module keeps those positions: one per study, read again every ``LEASES_PER_READ`` leases of the study
in this process, and at once after this process opens comparisons again (``lease_start_forget``: a lapsed
lease returned, an excluded annotator's lease released or votes set aside). A comparison that another
process opens again before the position waits at most that many of this process's leases, or until a lease
from the position finds nothing, which then scans the whole ballot: no comparison is left out, and the
order of the others is unchanged.
"""

from __future__ import annotations

LEASES_PER_READ = 100
STUDIES_KEPT = 10_000  # more studies than that at once, and every position is read again

_NONE = {"open_ballot": None, "open_from": None}
# study id -> (the open ballot, the first open position read, leases left before it is read again)
_known: dict[int, tuple[int, int, int]] = {}


def lease_start(study_id: int) -> dict:
    """The lease statement's ``open_ballot`` and ``open_from`` for the study: None when the position
    is to be read again (the statement then reads it)."""
    known = _known.get(study_id)
    if known is None or known[2] <= 0:
        return _NONE
    ballot_id, position, left = known
    _known[study_id] = (ballot_id, position, left - 1)  # threads' races cost a lease more or less
    return {"open_ballot": ballot_id, "open_from": position}


def lease_start_read(study_id: int, ballot_id: int | None, first_open: int | None) -> None:
    """Keeps the first open position a lease statement read (None: it read none, or none is open)."""
    if first_open is None or ballot_id is None:
        return
    if len(_known) >= STUDIES_KEPT and study_id not in _known:
        _known.clear()
    _known[study_id] = (ballot_id, first_open, LEASES_PER_READ)


def lease_start_forget() -> None:
    """Every study's lease reads its first open position again (comparisons were opened again)."""
    _known.clear()

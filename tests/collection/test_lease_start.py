"""collection.lease_start: the position a study's lease starts from in this process, and when it is read
again (the database's side: tests/integration/test_lease_start.py)."""

import pytest

from collection import lease_start


@pytest.fixture(autouse=True)
def _forget():
    lease_start.lease_start_forget()
    yield
    lease_start.lease_start_forget()


def test_a_position_read_is_given_to_as_many_leases_as_set_then_read_again(monkeypatch):
    monkeypatch.setattr(lease_start, "LEASES_PER_READ", 3)
    assert lease_start.lease_start(7) == {"open_ballot": None, "open_from": None}  # never read
    lease_start.lease_start_read(7, 70, 12)
    given = [lease_start.lease_start(7) for _ in range(4)]
    assert given[:3] == [{"open_ballot": 70, "open_from": 12}] * 3
    assert given[3] == {"open_ballot": None, "open_from": None}  # the next lease reads it again
    assert lease_start.lease_start(8)["open_from"] is None  # each study its own


def test_nothing_read_changes_nothing_and_forgetting_forgets_every_study():
    lease_start.lease_start_read(7, 70, 12)
    lease_start.lease_start_read(7, 70, None)  # that call read nothing, or nothing is open
    lease_start.lease_start_read(7, None, 3)  # no open ballot
    assert lease_start.lease_start(7) == {"open_ballot": 70, "open_from": 12}
    lease_start.lease_start_read(9, 90, 0)
    lease_start.lease_start_forget()
    assert lease_start.lease_start(7)["open_from"] is None and lease_start.lease_start(9)["open_from"] is None


def test_the_studies_kept_are_bounded(monkeypatch):
    monkeypatch.setattr(lease_start, "STUDIES_KEPT", 4)
    for study in range(4):
        lease_start.lease_start_read(study, 1, 5)
    lease_start.lease_start_read(2, 1, 6)  # one already kept: kept, the others too
    assert lease_start.lease_start(0)["open_from"] == 5
    lease_start.lease_start_read(4, 1, 5)  # a fifth: all read again, the new one kept
    assert [lease_start.lease_start(study)["open_from"] for study in range(5)] == [None] * 4 + [5]

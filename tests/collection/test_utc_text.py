"""collection.api.utc_text: a time in the API's bodies, as REST framework's DateTimeField writes it."""

import datetime

from hypothesis import given
from hypothesis import strategies as st
from rest_framework import serializers

from collection.api import utc_text

# Any offset to the minute within a day either way; datetime's range, less a day at each end, so that
# every instant is one UTC can write.
ZONES = st.integers(min_value=-(24 * 60 - 1), max_value=24 * 60 - 1).map(
    lambda minutes: datetime.timezone(datetime.timedelta(minutes=minutes))
)
TIMES = st.datetimes(
    min_value=datetime.datetime(1, 1, 2), max_value=datetime.datetime(9999, 12, 30), timezones=ZONES
)


def test_a_hand_worked_time():
    kolkata = datetime.timezone(datetime.timedelta(hours=5, minutes=30))
    assert (
        utc_text(datetime.datetime(2026, 11, 25, 20, 28, 19, 937239, kolkata))
        == "2026-11-25T14:58:19.937239Z"
    )
    assert (
        utc_text(datetime.datetime(2026, 11, 25, 14, 58, 19, tzinfo=datetime.UTC)) == "2026-11-25T14:58:19Z"
    )


@given(TIMES)
def test_it_writes_what_rest_frameworks_field_writes(value):
    # The project's time zone is UTC, and nothing activates another: the field writes UTC.
    assert serializers.DateTimeField().to_representation(value) == utc_text(value)

"""A judge's decisions are read from JSON rows, a CSV file or a JSONL file (told apart by content), and
every bad row is refused by its row with a message that says how to fix it (``services.judge_parse``)."""

from __future__ import annotations

import numpy as np
import pytest

from common.errors import MAX_REPORTED_ERRORS, ServiceError
from metrics.services import MAX_JUDGE_BYTES, NO_TIES, judge_parse


def parsed(data, *, source_format="file", pair_count=4, ties_allowed=True):
    return judge_parse(
        pair_count=pair_count, ties_allowed=ties_allowed, data=data, source_format=source_format
    )


def refusal(data, **options) -> ServiceError:
    with pytest.raises(ServiceError) as caught:
        parsed(data, **options)
    return caught.value


def test_a_csv_file_gives_one_decision_per_pair_in_pair_order():
    decisions, read_format = parsed(b"pair,decision\n3,left\n1,RIGHT\n2, Tie \n")
    assert read_format == "csv"
    np.testing.assert_array_equal(decisions, [0.0, 0.5, 1.0, np.nan])


def test_a_jsonl_file_is_told_from_csv_by_its_content():
    decisions, read_format = parsed(b'{"pair": 4, "decision": "left"}\n\n{"pair": 2, "decision": "right"}\n')
    assert read_format == "jsonl"
    np.testing.assert_array_equal(decisions, [np.nan, 0.0, np.nan, 1.0])


def test_json_rows_take_numbers_for_left_right_and_tie():
    rows = [{"pair": 1, "decision": 1}, {"pair": 2, "decision": 0}, {"pair": "3", "decision": 0.5}]
    decisions, read_format = parsed(rows, source_format="json")
    assert read_format == "json"
    np.testing.assert_array_equal(decisions, [1.0, 0.0, 0.5, np.nan])


def test_a_byte_order_mark_from_a_spreadsheet_is_read_past():
    decisions, _ = parsed("\ufeffpair,decision\n1,left\n".encode())
    np.testing.assert_array_equal(decisions, [1.0, np.nan, np.nan, np.nan])


def test_each_bad_row_is_named_with_what_is_wrong():
    error = refusal(
        b"pair,decision\n1,left\n9,left\nx,left\n2,maybe\n1,right\n0,left\n",
        pair_count=4,
    )
    assert error.message == "the judge has 5 problems; nothing was stored"
    assert error.errors == [
        "line 3: pair 9 is not one of the study's pairs, numbered 1 to 4",
        "line 4: pair must be a pair number (a whole number from 1 to 4), got 'x'",
        "line 5, pair 2: the decision 'maybe' is not one: write left, right or tie (or 1, 0, 0.5)",
        "line 6: pair 1 was already decided at line 2",
        "line 7: pair 0 is not one of the study's pairs, numbered 1 to 4",
    ]


def test_a_tie_in_a_study_without_ties_is_refused_by_its_row():
    error = refusal(b"pair,decision\n1,left\n2,tie\n3,0.5\n", ties_allowed=False)
    assert NO_TIES == "this study does not allow ties: decide left or right"
    assert error.errors == [f"line 3, pair 2: {NO_TIES}", f"line 4, pair 3: {NO_TIES}"]


def test_a_study_with_ties_takes_them():
    decisions, _ = parsed(b"pair,decision\n2,tie\n", ties_allowed=True)
    assert decisions[1] == 0.5


def test_jsonl_lines_that_are_not_objects_are_named():
    error = refusal(
        b'{"pair": 1, "decision": "left"}\n[1, "left"]\n{"pair": 2, \n{"pair": 3, "decision": NaN}\n'
    )
    expected = 'expected an object with pair and decision, like {"pair": 1, "decision": "left"}'
    assert error.errors == [f"line 2: {expected}", f"line 3: {expected}", f"line 4: {expected}"]


def test_json_rows_refuse_booleans_and_fractions_as_pair_numbers():
    error = refusal(
        [{"pair": True, "decision": "left"}, {"pair": 1.5, "decision": "left"}], source_format="json"
    )
    assert error.errors == [
        "decisions[0]: pair must be a pair number (a whole number from 1 to 4), got True",
        "decisions[1]: pair must be a pair number (a whole number from 1 to 4), got 1.5",
    ]


def test_a_csv_without_the_header_says_which_columns_it_needs():
    error = refusal(b"1,left\n2,right\n")
    assert error.message == (
        'the CSV needs a header with the columns pair,decision (or send JSONL: one {"pair": 1, "decision": '
        '"left"} per line); got 1, left'
    )


def test_an_empty_file_holds_no_decisions():
    assert refusal(b"pair,decision\n").message == "the judge holds no decisions"


def test_a_file_that_is_not_utf8_is_refused():
    assert refusal(b"pair,decision\n1,\xff\n").message == (
        "the file is not UTF-8 text; save it as CSV UTF-8 (or JSONL) and retry"
    )


def test_many_bad_rows_are_listed_up_to_the_limit_then_counted():
    body = "pair,decision\n" + "".join(f"{n},left\n" for n in range(100, 130))
    error = refusal(body.encode())
    assert error.message == "the judge has 30 problems; nothing was stored"
    assert len(error.errors) == MAX_REPORTED_ERRORS + 1
    assert error.errors[-1] == f"… and {30 - MAX_REPORTED_ERRORS} more"


def test_the_size_bound_holds_200000_pairs_as_jsonl():
    line = b'{"pair": 200000, "decision": "right"}\n'
    assert 200_000 * len(line) <= MAX_JUDGE_BYTES
    error = refusal(b"x" * (MAX_JUDGE_BYTES + 1))
    assert error.status == 413

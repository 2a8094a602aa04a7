"""benchmarks/count_vote_instructions.py reads callgrind's dumps: the count is its ``totals:`` line."""

import pytest

from benchmarks.count_vote_instructions import totals

# A dump as callgrind 3.19 writes it after ``callgrind_control --dump`` with counting toggled (abridged):
# its summary says 0, its totals (at the end) are what was counted.
DUMP = """# callgrind format
version: 1
creator: callgrind-3.19.0
pid: 13938
cmd:  python benchmarks/count_vote_instructions.py --judgements 200
part: 1

desc: I1 cache:
desc: Trigger: Client Request: dump

positions: line
events: Ir
summary: 0

fl=(1) ceval.c
fn=(1) _PyEval_EvalFrameDefault
15 12

totals: 734951859
"""


def test_the_count_is_the_totals_line_not_the_summary(tmp_path):
    dump = tmp_path / "callgrind.out.1"
    dump.write_text(DUMP)
    assert totals(dump) == 734_951_859


def test_a_dump_without_totals_is_an_error_not_zero(tmp_path):
    dump = tmp_path / "callgrind.out.2"
    dump.write_text(DUMP.replace("totals: 734951859\n", ""))
    with pytest.raises(RuntimeError, match="no totals"):
        totals(dump)

"""Numbers as they leave numpy for the database, JSON and templates.

PURE module: the standard library only (numpy scalars convert through ``float``), so the math modules
may use it too.
"""

from __future__ import annotations

import json
import math
from fractions import Fraction


def finite_or_none(value) -> float | None:
    """``value`` as a float, or None when it is None, NaN or infinite (an empty cell, not a number)."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def finite_json(value):
    """``value`` with every NaN or infinite float in it, at any depth of dicts, lists and tuples, as None:
    what JSON (RFC 8259) can hold. Anything else is returned as it is."""
    if isinstance(value, float):
        return finite_or_none(value)
    if isinstance(value, dict):
        return {key: finite_json(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [finite_json(item) for item in value]
    return value


class FiniteJSONEncoder(json.JSONEncoder):
    """The encoder of every JSON column that holds figures: an undefined figure (NaN) or an infinite one is
    written as null (``finite_json``), never as the ``NaN`` token that PostgreSQL's jsonb and SQLite's
    JSON_VALID refuse (``allow_nan`` is off: nothing else writes that token either)."""

    def __init__(self, **options):
        super().__init__(**{**options, "allow_nan": False})

    def iterencode(self, o, *args, **kwargs):
        return super().iterencode(finite_json(o), *args, **kwargs)


def as_entered(value: float) -> Fraction:
    """The decimal a person entered, exactly, from the float that stores it: 0.7 → 7/10.

    ``repr`` gives the shortest decimal that reads back to the same float, which is what was typed
    (0.7, not 0.6999999999999999555910790149937…), so products such as α·N round as on paper.
    """
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"a share must be a finite number, got {value!r}")
    return Fraction(repr(value))


def percent_done(done: int, total: int) -> int:
    """How much of ``total`` is done, in whole percent rounded down: 100 only once it is all done.

    Rounding to the nearest would show 199 of 200 as 100%, a ballot that looks complete and is not.
    ``total`` must be positive; the callers decide what an empty total shows.
    """
    return max(0, min(100, 100 * int(done) // int(total)))


def counted(number: int, noun: str, plural: str | None = None) -> str:
    """The number with its noun, singular for one: "1 ballot", "1,234 ballots", "0 items"."""
    return f"{number:,} {noun if number == 1 else plural or noun + 's'}"


def listed(values) -> str:
    """Values as a sentence lists them: "3", "1 and 3", "1, 3 and 5"."""
    words = [str(value) for value in values]
    return " and ".join(words) if len(words) < 3 else f"{', '.join(words[:-1])} and {words[-1]}"

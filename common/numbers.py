"""Numbers as they leave numpy for the database, JSON and templates.

PURE module: the standard library only (numpy scalars convert through ``float``), so the math modules
may use it too.
"""

from __future__ import annotations

import math


def finite_or_none(value) -> float | None:
    """``value`` as a float, or None when it is None, NaN or infinite (an empty cell, not a number)."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None

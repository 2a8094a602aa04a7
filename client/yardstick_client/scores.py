"""The bodies the client sends: score rows from a dict or an array, and CSV files."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from .errors import YardstickError

CsvSource = str | os.PathLike | bytes | IO[bytes]


def read_csv(source: CsvSource) -> bytes:
    """The bytes of a CSV given as a path, bytes, or a binary file open for reading."""
    if isinstance(source, bytes):
        return source
    if isinstance(source, str | os.PathLike):
        path = Path(source)
        if not path.is_file():
            raise YardstickError(f"no CSV file at {str(path)!r}")
        return path.read_bytes()
    if hasattr(source, "read"):
        data = source.read()
        return data.encode("utf-8") if isinstance(data, str) else data
    raise TypeError(f"a CSV is a path, bytes or an open file, not {type(source).__name__}")


def _number(value: Any) -> float:
    # numpy scalars, Decimals, ints: anything float() takes; NaN and infinity go to the server, which
    # names their rows.
    return float(value)


def score_rows(scores: Any, pairs: Sequence[Mapping] | None = None) -> list[dict]:
    """The API's score rows from a dict or a sequence of scores.

    - a mapping ``{item id: score}`` or ``{(token_a, token_b): score}``;
    - a sequence of scores (a list, or a numpy array through its ``tolist()``) in the order of ``pairs``,
      the study's items as ``Client.pairs`` lists them.
    """
    if isinstance(scores, Mapping):
        rows = []
        for key, value in scores.items():
            if isinstance(key, tuple | list) and len(key) == 2:
                rows.append({"token_a": str(key[0]), "token_b": str(key[1]), "score": _number(value)})
            elif isinstance(key, int) or (hasattr(key, "__index__") and not isinstance(key, bool)):
                rows.append({"item": int(key), "score": _number(value)})
            else:
                raise TypeError(f"a score's key is an item id or a (token_a, token_b) pair, not {key!r}")
        return rows
    if hasattr(scores, "tolist"):  # a numpy array, without importing numpy
        scores = scores.tolist()
    if isinstance(scores, str | bytes) or not isinstance(scores, Sequence):
        raise TypeError(
            "scores are a dict {item id: score}, a dict {(token_a, token_b): score}, or a list or array of "
            f"scores in the order of pairs; for a CSV file use csv=; got {type(scores).__name__}"
        )
    if pairs is None:
        raise TypeError("a list or array of scores needs the pairs it follows (pairs=client.pairs(study))")
    if any(isinstance(score, list) for score in scores):
        raise ValueError("the scores must be one number per pair (a 1-D array)")
    if len(scores) != len(pairs):
        raise ValueError(
            f"{len(scores)} scores for {len(pairs)} pairs: give one score per pair, in their order"
        )
    return [
        {"item": pair["item"], "score": _number(score)} for pair, score in zip(pairs, scores, strict=True)
    ]

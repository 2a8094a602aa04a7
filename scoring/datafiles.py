"""Data files shipped with the simulator."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

EMBEDDING_SIMILARITY_CSV = Path(__file__).resolve().parent / "data" / "underlying_sim_samearea.csv"


def read_similarity_csv(path: Path | str = EMBEDDING_SIMILARITY_CSV) -> np.ndarray:
    """The ``similarity`` column of a CSV file, in file order, as underlying similarities z_i.

    The shipped file holds the 990 word2vec cosine similarities of one semantic area (45 tokens)
    that Lombardo et al. use as their third distribution (§2.2, §4.1.1).
    """
    path = Path(path)
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            if reader.fieldnames is None or "similarity" not in reader.fieldnames:
                raise ValueError(
                    f"{path}: expected a CSV with a 'similarity' column, found {reader.fieldnames}"
                )
            values = []
            for line, row in enumerate(reader, start=2):
                try:
                    value = float(row["similarity"])
                except (TypeError, ValueError):
                    raise ValueError(f"{path}, line {line}: {row['similarity']!r} is not a number") from None
                if not -1.0 <= value <= 1.0:
                    raise ValueError(f"{path}, line {line}: similarity {value} lies outside [-1, 1]")
                values.append(value)
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text ({exc.reason})") from None
    if len(values) < 2:
        raise ValueError(f"{path}: needs at least two similarity values, found {len(values)}")
    return np.array(values)

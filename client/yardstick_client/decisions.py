"""The bodies the client sends for a judge: decision rows from a dict or a list, and decision files."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

DECISIONS = ("left", "right", "tie")


def _decision(value: Any, where: str) -> str:
    text = str(value).strip().lower()
    if text not in DECISIONS:
        raise ValueError(f"{where}: a decision is left, right or tie, not {value!r}")
    return text


def decision_rows(decisions: Any, pairs: Sequence[Mapping] | None = None) -> list[dict]:
    """The API's decision rows ``{"pair", "decision"}`` from a dict or a sequence.

    - a mapping ``{pair number: "left" | "right" | "tie"}``;
    - a sequence with one decision (or None, undecided) per pair in the order of ``pairs``, the study's
      pairs as ``Client.judge_pairs`` lists them.
    """
    if isinstance(decisions, Mapping):
        rows = []
        for key, value in decisions.items():
            if isinstance(key, bool) or not (isinstance(key, int) or hasattr(key, "__index__")):
                raise TypeError(f"a decision's key is a pair number, not {key!r}")
            rows.append({"pair": int(key), "decision": _decision(value, f"pair {int(key)}")})
        return rows
    if hasattr(decisions, "tolist"):  # a numpy array, without importing numpy
        decisions = decisions.tolist()
    if isinstance(decisions, str | bytes) or not isinstance(decisions, Sequence):
        raise TypeError(
            "decisions are a dict {pair number: 'left' | 'right' | 'tie'}, or a list in the order of the "
            f"pairs; for a CSV or JSONL file use file=; got {type(decisions).__name__}"
        )
    if pairs is None:
        raise TypeError("a list of decisions needs the pairs it follows (pairs=client.judge_pairs(study))")
    if len(decisions) != len(pairs):
        raise ValueError(
            f"{len(decisions)} decisions for {len(pairs)} pairs: give one per pair (None: undecided), in their order"
        )
    return [
        {"pair": pair["pair"], "decision": _decision(value, f"pair {pair['pair']}")}
        for pair, value in zip(pairs, decisions, strict=True)
        if value is not None
    ]

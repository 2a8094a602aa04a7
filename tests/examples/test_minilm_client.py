"""examples/rank_with_minilm.py, the model owner's client.

Every test that talks to the API runs the example against the platform on pytest-django's live server,
through the Python client of client/. Most replace only the embedding model, with fixed vectors; the
end-to-end test runs the real MiniLM model: it needs the ``examples`` extra and, with
``YARDSTICK_REQUIRE_EXAMPLES=1`` (set by .ci/run), fails when it is missing.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import sys
from pathlib import Path

import numpy as np
import pytest

EXAMPLE_PATH = Path(__file__).resolve().parents[2] / "examples" / "rank_with_minilm.py"


def _load_client():
    spec = importlib.util.spec_from_file_location("rank_with_minilm", EXAMPLE_PATH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


client = _load_client()


class FakeModel:
    """Stands in for SentenceTransformer: fixed vectors per token, and a record of each ``encode`` call."""

    def __init__(self, vectors: dict[str, tuple[float, ...]]):
        self.vectors = vectors
        self.calls: list[tuple[list[str], dict]] = []

    def encode(self, sentences, **options):
        self.calls.append((list(sentences), options))
        return np.array([self.vectors[sentence] for sentence in sentences], dtype=np.float32)


# cat·dog = 24, cat·car = 20, dog·car = 15 and every norm is 5: cosines 0.96, 0.8 and 0.6.
VECTORS = {"cat": (3.0, 4.0), "dog": (4.0, 3.0), "car": (0.0, 5.0)}
PAIRS = [
    {"item": 11, "token_a": "cat", "token_b": "dog", "area": "things"},
    {"item": 12, "token_a": "car", "token_b": "cat", "area": "things"},
    {"item": 13, "token_a": "dog", "token_b": "car", "area": "things"},
]


EVALUATION = {
    "items": 3,
    "covered": 3,
    "coverage": 1.0,
    "weight_offset": 2.0,
    "first_rank_weight": 0.4,
    "top_k": 2,
    "rho_w": {
        "value": 0.5,
        "interval": [0.25, 0.75],
        "chance_mean": 0.02,
        "chance_sd": 0.3,
        "p_value": 0.125,
    },
    "tau_w": {"value": 0.4, "interval": [0.1, 0.7], "chance_mean": 0.01, "chance_sd": 0.35, "p_value": 0.25},
    "rho": {"value": 0.5, "interval": [0.2, 0.8]},
    "tau": {"value": 1 / 3, "interval": None},
    "retrieval": {
        "k": 2,
        "relevant_count": 2,
        "precision_at_k": 0.5,
        "recall_at_k": 0.5,
        "average_precision": 0.5,
        "r_precision": 0.5,
        "ndcg_at_k": 0.6131,
        "reciprocal_rank": 1.0,
        "q_measure": 0.45,
        "bpref": 0.0,
    },
}


def test_score_pairs_is_the_cosine_of_the_two_token_vectors():
    token_vectors = client.embed_tokens(["cat", "dog", "car"], model=FakeModel(VECTORS))

    scores = client.score_pairs(PAIRS, token_vectors)

    np.testing.assert_allclose(scores, [0.96, 0.8, 0.6], rtol=1e-6)


def test_a_token_with_a_zero_vector_scores_zero():
    token_vectors = client.TokenVectors(
        index={"cat": 0, "void": 1}, vectors=np.array([[3.0, 4.0], [0.0, 0.0]])
    )

    scores = client.score_pairs([{"item": 1, "token_a": "void", "token_b": "cat"}], token_vectors)

    assert scores.tolist() == [0.0]


def test_each_distinct_token_is_embedded_once_in_one_call():
    model = FakeModel(VECTORS)
    tokens = [pair[side] for pair in PAIRS for side in ("token_a", "token_b")]

    token_vectors = client.embed_tokens(tokens, model=model, batch_size=7)

    assert [call[0] for call in model.calls] == [["car", "cat", "dog"]]
    assert model.calls[0][1]["batch_size"] == 7
    assert model.calls[0][1]["normalize_embeddings"] is True
    assert token_vectors.index == {"car": 0, "cat": 1, "dog": 2}


def test_format_evaluation_shows_intervals_chance_and_p_values():
    text = client.format_evaluation({"model_name": "mini", "evaluation": EVALUATION})

    assert text == (
        "Model 'mini': 3 of 3 items (coverage 100.0%); top-weighting n0 = 2, R(n0) = 0.400\n"
        "\n"
        "        value  95% interval      chance mean ± sd  p-value\n"
        "ρ_w     0.500  [0.250, 0.750]    0.020 ± 0.300      0.1250\n"
        "τ_w     0.400  [0.100, 0.700]    0.010 ± 0.350      0.2500\n"
        "ρ       0.500  [0.200, 0.800]    –                       –\n"
        "τ       0.333  –                 –                       –\n"
        "\n"
        "Retrieval, the human top-2 as relevant (R = 2), k = 2:\n"
        "  P@k              0.500\n"
        "  R@k              0.500\n"
        "  AP               0.500\n"
        "  R-precision      0.500\n"
        "  nDCG@k           0.613\n"
        "  reciprocal rank  1.000\n"
        "  Q-measure        0.450"
    )


# --- against the platform, with fixed vectors -----------------------------------------------------------

# One direction per animal, 0.3 rad apart: the cosine of two animals is cos(0.3 · |i - j|).
ANIMAL_VECTORS = {
    word: (np.cos(0.3 * i), np.sin(0.3 * i))
    for i, word in enumerate(["cat", "dog", "horse", "cow", "lion", "tiger", "wolf", "sheep"])
}


@pytest.fixture
def owner_token(transactional_db) -> str:
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    owner = get_user_model().objects.create_user("model-owner", password="not-used-here")
    return Token.objects.create(user=owner).key


def test_the_client_submits_every_score_and_prints_the_evaluation_and_the_board(
    live_server, finished_animal_study, owner_token, capsys
):
    from metrics.models import Submission

    arguments = [
        "--server",
        live_server.url,
        "--study",
        "animals",
        "--token",
        owner_token,
        "--model-name",
        "fixed",
    ]

    status = client.main([*arguments, "--description", "test"], model=FakeModel(ANIMAL_VECTORS))

    output = capsys.readouterr().out
    assert status == 0
    submission = Submission.objects.get(model_name="fixed")
    assert (submission.description, submission.coverage) == ("test", 1.0)
    index_of = {item.index: item for item in finished_animal_study.items.select_related("token_a", "token_b")}
    expected = [
        np.cos(0.3 * abs(ANIMALS.index(index_of[i].token_a.text) - ANIMALS.index(index_of[i].token_b.text)))
        for i in range(28)
    ]
    np.testing.assert_allclose(submission.scores, expected, rtol=1e-6)
    assert "Fetched 28 pairs of study 'animals' (8 distinct tokens)" in output
    assert f"Submitted 'fixed' as submission {submission.pk}: 28 items covered (100.0%)" in output
    assert "\nρ_w " in output
    assert "Leaderboard by τ_w (1 models):\n" in output
    assert output.rstrip().endswith("fixed (model-owner)")


def test_a_dry_run_scores_the_pairs_and_submits_nothing(
    live_server, finished_animal_study, owner_token, capsys
):
    from metrics.models import Submission

    status = client.main(
        ["--server", live_server.url, "--study", "animals", "--token", owner_token, "--dry-run"],
        model=FakeModel(ANIMAL_VECTORS),
    )

    assert status == 0
    assert not Submission.objects.exists()
    lines = capsys.readouterr().out.splitlines()
    at = lines.index("Dry run: nothing submitted. Most and least related pairs by the model:")
    # Neighbours (|i - j| = 1, seven pairs) first: cos(0.3) = 0.955; last, least related first: cat and
    # sheep (|i - j| = 7), cos(2.1) = -0.505; two pairs at 6 apart, cos(1.8) = -0.227; then 5 apart, cos(1.5) = 0.071.
    first = ["0.955"] * 5
    last = ["-0.505", "-0.227", "-0.227", "0.071", "0.071"]
    assert [line.split()[0] for line in lines[at + 1 :]] == [*first, "...", *last]


def test_a_study_that_is_not_finished_is_explained(live_server, owner_token, capsys):
    from tests.factories import make_study

    study = make_study()

    status = client.main(
        ["--server", live_server.url, "--study", study.slug, "--token", owner_token], model=FakeModel(VECTORS)
    )

    assert status == 1
    assert capsys.readouterr().err.startswith(
        f"error: study {study.slug!r} is not finished, so its items cannot be scored yet (HTTP 409: "
    )


def test_a_refused_token_says_how_to_get_one(live_server, finished_animal_study, capsys):
    status = client.main(
        ["--server", live_server.url, "--study", "animals", "--token", "WRONG"], model=FakeModel(VECTORS)
    )

    assert status == 1
    assert capsys.readouterr().err == (
        "error: the server did not accept the token (HTTP 401: Invalid token.). Check --token; a key comes "
        "from POST /api/auth/token/ with your username and password (examples/README.md).\n"
    )


def test_a_taken_model_name_suggests_another(live_server, finished_animal_study, owner_token, capsys):
    arguments = [
        "--server",
        live_server.url,
        "--study",
        "animals",
        "--token",
        owner_token,
        "--model-name",
        "twice",
    ]
    assert client.main(arguments, model=FakeModel(ANIMAL_VECTORS)) == 0
    capsys.readouterr()

    status = client.main(arguments, model=FakeModel(ANIMAL_VECTORS))

    assert status == 1
    assert capsys.readouterr().err == (
        "error: the server refused the submission (HTTP 409: you already submitted a model named 'twice' for this "
        "study; submissions are never replaced, so choose another name); --model-name NAME submits under another "
        "name\n"
    )


def test_an_unreachable_server_is_named(capsys):
    with socket.socket() as probe:  # a port that nothing listens on once the probe is closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    status = client.main(
        ["--server", f"http://127.0.0.1:{port}", "--study", "demo", "--token", "KEY"],
        model=FakeModel(VECTORS),
    )

    assert status == 1
    error = capsys.readouterr().err
    assert error.startswith(f"error: cannot reach the Yardstick server at http://127.0.0.1:{port} (")
    assert "is it running, and is the URL right?" in error


def test_a_missing_extra_names_the_install_command(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # as if it were not installed

    status = client.main(["--server", "http://127.0.0.1:9", "--study", "demo", "--token", "KEY"])

    assert status == 1
    assert "pip install -e '.[examples]'" in capsys.readouterr().err


def test_a_missing_token_is_refused(capsys, monkeypatch):
    monkeypatch.delenv("YARDSTICK_TOKEN", raising=False)

    status = client.main(["--server", "http://127.0.0.1:9", "--study", "demo"], model=FakeModel(VECTORS))

    assert status == 1
    assert capsys.readouterr().err.startswith("error: no API token: pass --token KEY or set YARDSTICK_TOKEN")


# --- end to end: the real model against the platform --------------------------------------------------

ANIMALS = ["cat", "dog", "horse", "cow", "lion", "tiger", "wolf", "sheep"]


@pytest.fixture
def examples_extra():
    """Skips without the examples extra; fails instead with YARDSTICK_REQUIRE_EXAMPLES=1 (.ci/run)."""
    missing = [name for name in client.EXTRA_MODULES if importlib.util.find_spec(name) is None]
    if not missing:
        return
    reason = f"needs the examples extra (missing: {', '.join(missing)}): pip install -e '.[examples]'"
    if os.environ.get("YARDSTICK_REQUIRE_EXAMPLES", "").strip().lower() in {"1", "true", "yes", "on"}:
        pytest.fail(f"YARDSTICK_REQUIRE_EXAMPLES=1 but the test {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture
def finished_animal_study(transactional_db):
    """A finished study of 8 animal names (28 items), voted through by 5 annotators."""
    from collection.lifecycle import study_start
    from collection.models import Study
    from collection.pools import items_generate, tokens_import
    from tests.factories import annotators, vote_until

    study = Study.objects.create(
        name="Animals",
        slug="animals",
        ballot_count=3,
        keep_fraction=0.5,
        appearances=4,
        votes_per_annotator_per_ballot=None,
    )
    tokens_import(study=study, data="token,area\n" + "".join(f"{word},animals\n" for word in ANIMALS))
    items_generate(study=study)
    study_start(study=study)
    vote_until(study, voters=annotators(study, 5))
    study.refresh_from_db()
    assert study.status == Study.Status.FINISHED
    return study


@pytest.mark.examples
def test_the_client_scores_a_finished_study_with_minilm_and_submits_it(
    examples_extra, live_server, finished_animal_study, capsys, monkeypatch
):
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    from metrics.models import Submission

    # The client sets these for huggingface_hub; here they are undone after the test.
    for name in (
        "HF_HUB_OFFLINE",
        "TRANSFORMERS_OFFLINE",
        "HF_HUB_DISABLE_TELEMETRY",
        "HF_HUB_DISABLE_PROGRESS_BARS",
    ):
        monkeypatch.setenv(name, "1")
    owner = get_user_model().objects.create_user("model-owner", password="not-used-here")
    key = Token.objects.create(user=owner).key

    status = client.main(
        [
            "--server",
            live_server.url,
            "--study",
            "animals",
            "--token",
            key,
            "--timeout",
            "120",
        ]
    )

    captured = capsys.readouterr()
    assert status == 0, captured.err
    submission = Submission.objects.get(study=finished_animal_study, owner=owner)
    assert submission.model_name == "all-MiniLM-L6-v2"
    assert submission.coverage == 1.0
    assert "\nρ_w " in captured.out
    assert "Fetched 28 pairs of study 'animals' (8 distinct tokens)" in captured.out

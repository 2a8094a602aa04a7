"""examples/rank_with_minilm.py, the model owner's client.

The unit tests run the client's real HTTP code against a small stand-in server (canned answers, every
request recorded) and replace only the embedding model, with fixed vectors. The end-to-end test runs it,
with the real MiniLM model, against the platform on pytest-django's live server; it needs the
``examples`` extra and, with ``YARDSTICK_REQUIRE_EXAMPLES=1`` (set by .ci/run), fails when it is missing.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
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


class StubServer:
    """A stand-in for the Yardstick API on 127.0.0.1: answers by (method, path with query); the last
    answer of a route repeats. Records (method, path, Authorization header, JSON body) of each request."""

    def __init__(self):
        self.routes: dict[tuple[str, str], list[tuple[int, object]]] = {}
        self.requests: list[tuple[str, str, str | None, object]] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length)) if length else None
                stub.requests.append((self.command, self.path, self.headers.get("Authorization"), body))
                answers = stub.routes.get((self.command, self.path)) or [(404, {"detail": "Not found."})]
                status, payload = answers.pop(0) if len(answers) > 1 else answers[0]
                data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _answer

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def route(self, method: str, path: str, *answers: tuple[int, object]) -> None:
        self.routes[(method, path)] = list(answers)


@pytest.fixture
def stub():
    server = StubServer()
    server.thread.start()
    yield server
    server.httpd.shutdown()
    server.httpd.server_close()


def pairs_page(pairs, *, count=None, next_url=None):
    return {
        "count": len(pairs) if count is None else count,
        "next": next_url,
        "previous": None,
        "results": pairs,
    }


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


def test_fetch_pairs_follows_next_and_sends_the_token(stub):
    first, second = "/api/studies/demo/pairs/?limit=2&offset=0", "/api/studies/demo/pairs/?limit=2&offset=2"
    stub.route("GET", first, (200, pairs_page(PAIRS[:2], count=3, next_url=stub.url + second)))
    stub.route("GET", second, (200, pairs_page(PAIRS[2:], count=3)))

    pairs = client.fetch_pairs(client.YardstickApi(stub.url, "KEY"), "demo", page_size=2)

    assert pairs == PAIRS
    assert [(method, path, auth) for method, path, auth, _ in stub.requests] == [
        ("GET", first, "Token KEY"),
        ("GET", second, "Token KEY"),
    ]


def test_a_study_that_is_not_finished_is_explained(stub):
    stub.route(
        "GET", "/api/studies/demo/pairs/?limit=500&offset=0", (409, {"detail": "The study is running."})
    )

    with pytest.raises(client.ClientError) as raised:
        client.fetch_pairs(client.YardstickApi(stub.url, "KEY"), "demo")

    assert str(raised.value) == (
        "study 'demo' is not finished, so its items cannot be scored yet (HTTP 409: The study is running.). "
        "For the demo study: python manage.py simulate_voters --study demo"
    )


def test_a_refused_token_says_how_to_get_one(stub, capsys):
    stub.route("GET", "/api/studies/demo/pairs/?limit=500&offset=0", (401, {"detail": "Invalid token."}))

    status = client.main(
        ["--server", stub.url, "--study", "demo", "--token", "WRONG"], model=FakeModel(VECTORS)
    )

    assert status == 1
    assert capsys.readouterr().err == (
        "error: the server did not accept the token (HTTP 401: Invalid token.). Check --token; a key comes "
        "from POST /api/auth/token/ with your username and password (examples/README.md).\n"
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
    assert error.startswith(f"error: cannot reach the Yardstick server at http://127.0.0.1:{port}/ (")
    assert "is it running (`make run` serves http://127.0.0.1:8000)" in error


def test_a_missing_extra_names_the_install_command_before_any_request(stub, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # as if it were not installed

    status = client.main(["--server", stub.url, "--study", "demo", "--token", "KEY"])

    assert status == 1
    assert "pip install -e '.[examples]'" in capsys.readouterr().err
    assert stub.requests == []


def test_a_missing_token_is_refused_before_any_request(stub, capsys, monkeypatch):
    monkeypatch.delenv("YARDSTICK_TOKEN", raising=False)

    status = client.main(["--server", stub.url, "--study", "demo"], model=FakeModel(VECTORS))

    assert status == 1
    assert capsys.readouterr().err.startswith("error: no API token: pass --token KEY or set YARDSTICK_TOKEN")
    assert stub.requests == []


def test_a_taken_model_name_suggests_another(stub):
    detail = "You already submitted a model named 'mini' to this study."
    stub.route("POST", "/api/studies/demo/submissions/", (409, {"detail": detail, "errors": []}))

    with pytest.raises(client.ClientError) as raised:
        client.submit(
            client.YardstickApi(stub.url, "KEY"),
            study="demo",
            model_name="mini",
            pairs=PAIRS,
            scores=np.ones(3),
        )

    assert str(raised.value) == (
        f"the server refused the submission (HTTP 409: {detail}); --model-name NAME submits under another name"
    )


def test_refused_scores_list_the_servers_errors(stub):
    errors = ["row 1: unknown item 11", "row 2: score is NaN"]
    answer = {"detail": "; ".join(errors), "errors": errors}  # the detail repeats the list: shown once
    stub.route("POST", "/api/studies/demo/submissions/", (400, answer))

    with pytest.raises(client.ClientError) as raised:
        client.submit(
            client.YardstickApi(stub.url, "KEY"),
            study="demo",
            model_name="mini",
            pairs=PAIRS,
            scores=np.ones(3),
        )

    assert str(raised.value) == (
        f"the server refused the scores: HTTP 400 on POST {stub.url}/api/studies/demo/submissions/: "
        "2 problem(s)\n  - row 1: unknown item 11\n  - row 2: score is NaN"
    )


def test_the_client_submits_every_score_follows_the_evaluation_and_prints_it(stub, capsys):
    stub.route("GET", "/api/studies/demo/pairs/?limit=500&offset=0", (200, pairs_page(PAIRS)))
    created = {
        "id": 7,
        "model_name": "mini",
        "covered": 3,
        "coverage": 1.0,
        "status": "pending",
        "progress": 0,
    }
    stub.route("POST", "/api/studies/demo/submissions/", (202, {**created, "url": "/api/submissions/7/"}))
    stub.route(
        "GET",
        "/api/submissions/7/",
        (200, {**created, "status": "running", "progress": 50, "evaluation": None}),
        (200, {**created, "status": "done", "progress": 100, "evaluation": EVALUATION}),
    )
    leaderboard = {
        "metric": "tau_w",
        "rows": [{"model_name": "mini", "owner": "ann", "value": 0.4, "interval": [0.1, 0.7], "rank": 1}],
    }
    stub.route("GET", "/api/studies/demo/leaderboard/?metric=tau_w", (200, leaderboard))
    arguments = ["--server", stub.url, "--study", "demo", "--token", "KEY", "--model-name", "mini"]

    status = client.main(
        [*arguments, "--description", "test", "--poll-seconds", "0"], model=FakeModel(VECTORS)
    )

    assert status == 0
    posted = [body for method, _, _, body in stub.requests if method == "POST"]
    assert len(posted) == 1
    assert posted[0]["model_name"] == "mini"
    assert posted[0]["description"] == "test"
    assert [row["item"] for row in posted[0]["scores"]] == [11, 12, 13]
    np.testing.assert_allclose([row["score"] for row in posted[0]["scores"]], [0.96, 0.8, 0.6], rtol=1e-6)
    output = capsys.readouterr().out
    assert "  evaluation pending, 0%\n  evaluation running, 50%\n  evaluation done, 100%\n" in output
    assert client.format_evaluation({"model_name": "mini", "evaluation": EVALUATION}) in output
    assert "Leaderboard by τ_w (1 models):\n    1 (    1)   0.400  [0.100, 0.700]    mini (ann)" in output


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


def test_a_dry_run_scores_the_pairs_and_submits_nothing(stub, capsys):
    stub.route("GET", "/api/studies/demo/pairs/?limit=500&offset=0", (200, pairs_page(PAIRS)))

    status = client.main(
        ["--server", stub.url, "--study", "demo", "--token", "KEY", "--dry-run"], model=FakeModel(VECTORS)
    )

    assert status == 0
    assert [method for method, *_ in stub.requests] == ["GET"]
    assert capsys.readouterr().out.endswith(
        "Dry run: nothing submitted. Most and least related pairs by the model:\n"
        "    0.960  cat – dog\n"
        "    0.800  car – cat\n"
        "    0.600  dog – car\n"
    )


def test_an_evaluation_that_does_not_finish_in_time_says_where_to_look(stub):
    running = {"id": 7, "status": "running", "progress": 10, "url": "/api/submissions/7/", "evaluation": None}
    stub.route("GET", "/api/submissions/7/", (200, running))

    with pytest.raises(client.ClientError) as raised:
        client.wait_for_evaluation(
            client.YardstickApi(stub.url, "KEY"), running, timeout=0, out=open(os.devnull, "w")
        )

    assert str(raised.value) == (
        f"the evaluation is still running after 0 s; it goes on on the server: GET {stub.url}/api/submissions/7/ "
        "later (with the same token), or wait longer with --timeout"
    )


def test_a_failed_evaluation_reports_the_servers_reason(stub, capsys):
    pending = {"id": 7, "status": "pending", "progress": 0, "url": "/api/submissions/7/"}
    stub.route("GET", "/api/submissions/7/", (200, {**pending, "status": "failed", "error": "worker lost"}))

    with pytest.raises(client.ClientError) as raised:
        client.wait_for_evaluation(client.YardstickApi(stub.url, "KEY"), pending, poll_seconds=0)

    assert str(raised.value) == "the server could not evaluate submission 7: worker lost"


def test_a_submission_done_at_once_is_read_from_its_page(stub, capsys):
    done = {"id": 7, "status": "done", "progress": 100, "url": "/api/submissions/7/"}  # a 201 answer
    stub.route("GET", "/api/submissions/7/", (200, {**done, "evaluation": EVALUATION}))

    submission = client.wait_for_evaluation(client.YardstickApi(stub.url, "KEY"), done, timeout=0)

    assert submission["evaluation"] == EVALUATION
    assert [(method, path) for method, path, *_ in stub.requests] == [("GET", "/api/submissions/7/")]


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
            "--poll-seconds",
            "0.2",
        ]
    )

    captured = capsys.readouterr()
    assert status == 0, captured.err
    submission = Submission.objects.get(study=finished_animal_study, owner=owner)
    assert submission.model_name == "all-MiniLM-L6-v2"
    assert submission.coverage == 1.0
    assert "\nρ_w " in captured.out
    assert "Fetched 28 pairs of study 'animals' (8 distinct tokens)" in captured.out

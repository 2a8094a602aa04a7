"""A model owner's flow through the client: the pairs, a submission from a dict, a numpy array or a CSV
file, its evaluation, the leaderboard and the instrument card."""

from __future__ import annotations

import io

import numpy as np
import pytest
from scipy import stats

from collection.models import Item
from collection.selectors import study_results
from metrics.models import StudyFigure, Submission


def index_of(study) -> dict[int, int]:
    return dict(Item.objects.filter(study=study).values_list("id", "index"))


def test_the_pairs_are_every_item_of_the_study(connect, server, owner_token, finished_study):
    pairs = connect(server, owner_token).pairs(finished_study.slug)

    assert sorted(pair["item"] for pair in pairs) == sorted(index_of(finished_study))
    assert {pair["area"] for pair in pairs} == {"Area0"}


def test_scores_from_a_dict_of_item_ids_are_stored_by_item(connect, server, owner_token, finished_study):
    indices = index_of(finished_study)
    scores = {item: 1.0 / (1 + index) for item, index in indices.items()}

    submission = connect(server, owner_token).submit(finished_study.slug, "inverse-index", scores)

    stored = Submission.objects.get(pk=submission["id"])
    assert stored.scores == [1.0 / (1 + index) for index in range(15)]
    assert (submission["status"], submission["coverage"], stored.source_format) == ("done", 1.0, "json")


def test_scores_from_a_dict_of_token_pairs(connect, server, owner_token, finished_study):
    client = connect(server, owner_token)
    pairs = client.pairs(finished_study.slug)
    scores = {(pair["token_b"], pair["token_a"]): float(pair["item"]) for pair in pairs}  # either order

    submission = client.submit(finished_study.slug, "by-tokens", scores, wait=False)

    stored = Submission.objects.get(pk=submission["id"])
    indices = index_of(finished_study)
    assert stored.scores == [float(item) for item, _ in sorted(indices.items(), key=lambda pair: pair[1])]


def test_a_numpy_array_follows_the_pairs_and_is_evaluated(connect, server, owner_token, finished_study):
    client = connect(server, owner_token)
    pairs = client.pairs(finished_study.slug)
    rng = np.random.default_rng(7)
    scores = rng.normal(size=len(pairs)).astype(np.float32)  # any array with tolist()

    submission = client.submit(finished_study.slug, "random", scores, pairs=pairs)

    indices = index_of(finished_study)
    stored = Submission.objects.get(pk=submission["id"])
    expected = [None] * 15
    for pair, score in zip(pairs, scores.tolist(), strict=True):
        expected[indices[pair["item"]]] = score
    assert stored.scores == expected
    # ρ and τ against the final scores, as scipy computes them over the same items.
    human = {row["index"]: row["final_score"] for row in study_results(study=finished_study)}
    model = [expected[index] for index in range(15)]
    final = [human[index] for index in range(15)]
    evaluation = submission["evaluation"]
    assert evaluation["rho"]["value"] == pytest.approx(stats.spearmanr(model, final).statistic, abs=1e-9)
    assert evaluation["tau"]["value"] == pytest.approx(stats.kendalltau(model, final).statistic, abs=1e-9)
    assert client.evaluation(submission["id"]) == evaluation
    assert client.evaluation(submission["id"], n0=5)["weight_offset"] == 5


def test_a_csv_file_is_uploaded_as_a_file(connect, server, owner_token, finished_study, tmp_path):
    client = connect(server, owner_token)
    pairs = client.pairs(finished_study.slug)
    path = tmp_path / "scores.csv"
    path.write_text(
        "token_a,token_b,score\n" + "".join(f"{p['token_a']},{p['token_b']},0.5\n" for p in pairs)
    )
    path.write_text(path.read_text().replace(",0.5\n", ",0.25\n", 1))  # not every score the same

    submission = client.submit(finished_study.slug, "from-csv", csv=path)

    stored = Submission.objects.get(pk=submission["id"])
    assert (stored.source_format, stored.covered) == ("csv", 15)
    assert sorted(stored.scores) == [0.25] + [0.5] * 14


def test_the_leaderboard_lists_the_submitted_models(connect, server, owner_token, finished_study):
    client = connect(server, owner_token)
    indices = index_of(finished_study)
    client.submit(finished_study.slug, "agrees", {item: -index for item, index in indices.items()})
    client.submit(finished_study.slug, "disagrees", {item: index for item, index in indices.items()})

    board = connect(server).leaderboard(finished_study.slug, metric="rho")  # public: no token

    assert board["metric"] == "rho"
    assert {(row["model_name"], row["owner"]) for row in board["rows"]} == {
        ("agrees", "ann"),
        ("disagrees", "ann"),
    }
    values = {row["model_name"]: row["value"] for row in board["rows"]}
    assert values["agrees"] == pytest.approx(-values["disagrees"])  # reversed scores, mirrored ρ


def test_the_instrument_card_is_read_as_data_and_as_markdown(connect, server, finished_study):
    stream = io.StringIO()
    client = connect(server, progress=True, progress_stream=stream)

    card = client.card(finished_study.slug)
    markdown = client.card_markdown(finished_study.slug)

    assert card["study"]["slug"] == finished_study.slug
    assert card["version"] >= 1
    assert markdown.startswith("# ")
    assert stream.getvalue() == ""  # computed in the request: nothing to wait for


def test_a_card_being_computed_is_waited_for_with_a_progress_bar(
    connect, server, finished_study, monkeypatch
):
    monkeypatch.setattr("metrics.instrument.CARD_SYNC_ITEMS", 0)  # as a study above 1000 items: 202 first
    StudyFigure.objects.filter(study=finished_study).delete()  # the card its finish computed
    stream = io.StringIO()
    client = connect(server, progress=True, progress_stream=stream)

    card = client.card(finished_study.slug, timeout=60)

    assert card["study"]["slug"] == finished_study.slug
    assert stream.getvalue().startswith(f"\rinstrument card of {finished_study.slug}     0 s  computing")
    assert stream.getvalue().endswith("\n")

"""A finished study as a Hugging Face dataset (metrics/hub.py): the folder loads with ``datasets`` as its
users load it, its figures are the study's results, its card's header is the Hub's, its annotators are
pseudonyms, and the hidden test part never leaves; the download, the API and the command offer it to
researchers only.

The world: a finished study of 42 items in two areas, 40% kept hidden, voted to the end by 7 annotators
of a crowd that disagrees (ties allowed), one of whom a researcher then excludes; the metrics tests'
finished study of 28 items without a hidden part; and a running study.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import math
import re
import threading
import zipfile
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import datasets
import numpy as np
import pyarrow.parquet as pq
import pytest
import yaml
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse
from rest_framework.authtoken.models import Token as ApiToken

from collection.exclusion import annotator_exclude
from collection.models import Annotator, Item, ItemScore, Study, Vote
from common.errors import ServiceError
from config.celery import app as celery_app
from metrics import hub, hub_card, instrument
from metrics.instrument import instrument_card
from metrics.models import StudyFigure
from scoring.score_models import BORDA, SCORE_MODELS
from scoring.selectors import study_dataset
from tests.factories import annotators, disagreeing_crowd, make_study, vote_until
from tests.metrics.conftest import study_voted_to_the_end

pytestmark = pytest.mark.django_db

MODELS_IN_ORDER = (BORDA, *(model for model in SCORE_MODELS if model != BORDA))
ITEM_COLUMNS = [
    "index",
    "token_a",
    "token_b",
    "area",
    "rank",
    "area_rank",
    "score",
    "sd",
    "lower",
    "upper",
    "last_ballot",
    # Every score model's score and rank, the study's own (rescaled Borda by default) first.
    *(f"{kind}_{model}" for model in MODELS_IN_ORDER for kind in ("score", "rank")),
]
VOTE_COLUMNS = [
    "ballot",
    "annotator",
    "simulated",
    "excluded",
    "left_index",
    "left_token_a",
    "left_token_b",
    "left_area",
    "right_index",
    "right_token_a",
    "right_token_b",
    "right_area",
    "choice",
    "response_ms",
    "created_at",
]
BALLOT_COLUMNS = [
    "number",
    "status",
    "items",
    "comparisons",
    "votes",
    "published_votes",
    "rescale_slope",
    "opened_at",
    "closed_at",
]


@pytest.fixture(scope="module")
def split_study(django_db_setup, django_db_blocker):
    yield from study_voted_to_the_end(
        django_db_blocker,
        voters=7,
        crowd_seed=3,
        after=lambda study: annotator_exclude(
            annotator=study.annotators.get(participant_id="p3"), reason="clicked at random"
        ),
        tokens=7,
        areas=2,
        ballot_count=2,
        appearances=8,
        seed=11,
        allow_ties=True,
        hidden_share=0.4,
    )


@pytest.fixture
def hidden_study(split_study, db):
    return split_study


def load(folder, config=None, *, cache):
    return datasets.load_dataset(str(folder), config, split="train", cache_dir=str(cache))


def written(study, tmp_path, name="dataset", **options):
    folder = tmp_path / name
    export = hub.hub_dataset_write(study=study, folder=folder, options=hub_card.hub_options(**options))
    return folder, export


def card_header(folder) -> dict:
    text = (folder / "README.md").read_text(encoding="utf-8")
    match = re.match(r"---\n(.*?)\n---\n", text, re.DOTALL)
    assert match, "the card starts with a YAML header between --- lines"
    return yaml.safe_load(match.group(1))


def public_votes(study) -> list[Vote]:
    """The study's votes between two public items, found from the items' flags here, not the export's query."""
    hidden = set(Item.objects.filter(study=study, hidden=True).values_list("pk", flat=True))
    votes = Vote.objects.filter(ballot__study=study).order_by("pk")
    return [vote for vote in votes if vote.left_item_id not in hidden and vote.right_item_id not in hidden]


# --- the folder, as datasets loads it ----------------------------------------------------------------


def test_load_dataset_loads_every_config_with_its_rows_and_columns(hidden_study, tmp_path):
    folder, export = written(hidden_study, tmp_path)
    cache = tmp_path / "cache"
    public_items = Item.objects.filter(study=hidden_study, hidden=False).count()
    published = public_votes(hidden_study)

    items, votes, ballots = (load(folder, name, cache=cache) for name in ("items", "votes", "ballots"))
    default = load(folder, cache=cache)

    assert (items.num_rows, votes.num_rows, ballots.num_rows) == (public_items, len(published), 2)
    assert items.column_names == ITEM_COLUMNS
    assert votes.column_names == VOTE_COLUMNS
    assert ballots.column_names == BALLOT_COLUMNS
    assert default.column_names == ITEM_COLUMNS and default.num_rows == public_items
    assert export.rows == {"items": public_items, "votes": len(published), "ballots": 2}
    assert sorted(path.relative_to(folder).as_posix() for path in folder.rglob("*") if path.is_file()) == [
        "README.md",
        "data/ballots.parquet",
        "data/items.parquet",
        "data/votes.parquet",
    ]


def test_items_carry_the_final_scores_and_ranks_of_the_results(study, tmp_path):
    # The metrics tests' finished study keeps no hidden part: the ranks are the study's own.
    folder, _ = written(study, tmp_path)
    rows = load(folder, cache=tmp_path / "cache").to_list()
    dataset = study_dataset(study=study)
    area_ranks = dataset.area_ranks()
    precision = {row["index"]: row for row in instrument_card(study=study)["precision"]["items"]}

    assert len(rows) == study.items.count() == 28
    for row in rows:
        item = Item.objects.get(study=study, index=row["index"])
        assert (row["token_a"], row["token_b"], row["area"]) == (
            item.token_a.text,
            item.token_b.text,
            "Area0",
        )
        assert row["score"] == item.final_score
        assert row["rank"] == item.final_rank
        assert row["area_rank"] == area_ranks[row["index"]]
        assert row["last_ballot"] == item.last_ballot
        assert (row["sd"], row["lower"], row["upper"]) == pytest.approx(
            (
                precision[row["index"]]["sd"],
                precision[row["index"]]["lower"],
                precision[row["index"]]["upper"],
            )
        )
    assert [row["rank"] for row in rows] == list(range(1, 29))  # first to last


def test_the_ballots_are_the_studys_with_the_published_votes_counted(hidden_study, tmp_path):
    folder, _ = written(hidden_study, tmp_path)
    rows = load(folder, "ballots", cache=tmp_path / "cache").to_list()
    published = Counter(vote.ballot.number for vote in public_votes(hidden_study))

    assert [
        (row["number"], row["status"], row["items"], row["comparisons"], row["votes"]) for row in rows
    ] == [
        (1, "closed", 42, 168, 168),
        (2, "closed", 21, 84, 84),
    ]
    assert [row["published_votes"] for row in rows] == [published[1], published[2]]
    assert rows[1]["rescale_slope"] == hidden_study.ballots.get(number=2).rescale_slope


def test_votes_are_the_public_votes_in_the_order_recorded(hidden_study, tmp_path):
    folder, _ = written(hidden_study, tmp_path)
    rows = load(folder, "votes", cache=tmp_path / "cache").to_list()
    expected = [
        (
            vote.ballot.number,
            vote.left_item.index,
            vote.left_item.token_a.text,
            vote.right_item.index,
            vote.right_item.token_b.text,
            vote.choice,
            vote.response_ms,
            vote.annotator.participant_id == "p3",
        )
        for vote in public_votes(hidden_study)
    ]

    got = [
        (
            row["ballot"],
            row["left_index"],
            row["left_token_a"],
            row["right_index"],
            row["right_token_b"],
            row["choice"],
            row["response_ms"],
            row["excluded"],
        )
        for row in rows
    ]
    assert got == expected
    assert {row["choice"] for row in rows} <= {"left", "right", "tie"}
    assert any(row["excluded"] for row in rows) and not all(row["excluded"] for row in rows)
    assert not any(row["simulated"] for row in rows)


# --- the hidden test part ----------------------------------------------------------------------------


def test_the_hidden_test_part_never_leaves(hidden_study, tmp_path):
    folder, export = written(hidden_study, tmp_path)
    cache = tmp_path / "cache"
    items = load(folder, cache=cache).to_list()
    votes = load(folder, "votes", cache=cache).to_list()
    hidden = list(Item.objects.filter(study=hidden_study, hidden=True).select_related("token_a", "token_b"))
    hidden_indices = {item.index for item in hidden}
    hidden_pairs = {(item.token_a.text, item.token_b.text) for item in hidden}
    every_vote = Vote.objects.filter(ballot__study=hidden_study).count()

    assert len(hidden) == export.withheld_items == 17  # 40% of 21 items in each of two areas: 8 + 9
    assert not hidden_indices & {row["index"] for row in items}
    assert not hidden_pairs & {(row["token_a"], row["token_b"]) for row in items}
    for side in ("left", "right"):
        assert not hidden_indices & {row[f"{side}_index"] for row in votes}
        assert not hidden_pairs & {(row[f"{side}_token_a"], row[f"{side}_token_b"]) for row in votes}
    assert export.withheld_votes == every_vote - len(votes) > 0
    readme = (folder / "README.md").read_text(encoding="utf-8")
    assert not [f"{a} – {b}" for a, b in hidden_pairs if f"{a} – {b}" in readme]
    assert "17 items (40%)" in readme and f"the {every_vote - len(votes)} votes that involve" in readme


def test_no_column_or_line_of_the_card_carries_a_hidden_items_score(hidden_study, tmp_path):
    # As tests/metrics/test_hidden_part_leaks.py does: distinctive values on the hidden items, printed
    # nowhere else, and the cached card dropped, so that any leak of a hidden score would print one. A
    # figure that prints the same digits before the values are written (a coefficient of 0.921, say) is
    # no leak: the card written first says which those are.
    before, _ = written(hidden_study, tmp_path, name="before")
    printed_before = (before / "README.md").read_text(encoding="utf-8")
    distinctive = []
    for position, item in enumerate(Item.objects.filter(study=hidden_study, hidden=True).order_by("index")):
        score = 0.90317 + 0.00611 * position
        Item.objects.filter(pk=item.pk).update(final_score=score)
        ItemScore.objects.filter(item=item).update(score=score, rescaled_score=score, win_ratio=score - 0.5)
        distinctive += [score, score - 0.5]
    StudyFigure.objects.filter(study=hidden_study).delete()
    folder, _ = written(hidden_study, tmp_path)

    for path in (folder / "data").glob("*.parquet"):
        table = pq.read_table(path)
        for column in table.column_names:
            if str(table.schema.field(column).type) == "double":
                values = [value for value in table.column(column).to_pylist() if value is not None]
                assert not np.isclose(np.asarray(values)[:, None], distinctive, atol=1e-9).any(), column
    readme = (folder / "README.md").read_text(encoding="utf-8")
    for value in distinctive:
        for text in (f"{value:.3f}", f"{value:.4f}", repr(value)):
            assert text not in readme or text in printed_before, text


def test_ranks_are_places_within_the_public_part_without_gaps(hidden_study, tmp_path):
    folder, _ = written(hidden_study, tmp_path)
    rows = load(folder, cache=tmp_path / "cache").to_list()
    public = Item.objects.filter(study=hidden_study, hidden=False).order_by("final_rank", "index")

    # The study's own ranks of the public items have gaps where hidden items stand; the dataset's have none.
    own = [item.final_rank for item in public]
    assert own != list(range(1, len(own) + 1))
    assert [row["rank"] for row in rows] == list(range(1, len(rows) + 1))
    assert [row["index"] for row in rows] == [item.index for item in public]
    for area in ("Area0", "Area1"):
        in_area = [row for row in rows if row["area"] == area]
        assert [row["area_rank"] for row in in_area] == list(range(1, len(in_area) + 1))
        assert [row["score"] for row in in_area] == [
            item.final_score for item in public if item.area.name == area
        ]


def test_a_study_ranked_per_area_keeps_each_areas_order(tmp_path):
    eager, celery_app.conf.task_always_eager = celery_app.conf.task_always_eager, True
    try:
        study = make_study(
            tokens=6,
            areas=2,
            ballot_count=2,
            appearances=6,
            seed=21,
            ranking_scope=Study.RankingScope.PER_AREA,
            hidden_share=0.3,
        )
        vote_until(study, voters=annotators(study, 6), choose=disagreeing_crowd(study, seed=2))
    finally:
        celery_app.conf.task_always_eager = eager
    study.refresh_from_db()
    assert study.status == Study.Status.FINISHED
    folder, _ = written(study, tmp_path)
    rows = load(folder, cache=tmp_path / "cache").to_list()
    dataset = study_dataset(study=study)
    own_area_rank = dataset.area_ranks()
    hidden = set(Item.objects.filter(study=study, hidden=True).values_list("index", flat=True))

    assert len(rows) == 30 - len(hidden) and hidden
    for area in ("Area0", "Area1"):
        in_area = sorted((row for row in rows if row["area"] == area), key=lambda row: row["area_rank"])
        assert [row["area_rank"] for row in in_area] == list(range(1, len(in_area) + 1))
        # The same order as the area's own final ranking, its hidden items taken out.
        own = sorted(
            (index for index in range(len(dataset)) if dataset.area[index] == area and index not in hidden),
            key=lambda index: own_area_rank[index],
        )
        assert [row["index"] for row in in_area] == own


# --- the dataset card --------------------------------------------------------------------------------


def test_the_card_has_the_hubs_yaml_header_and_the_studys_design(hidden_study, tmp_path):
    folder, export = written(hidden_study, tmp_path, license="cc-by-nc-4.0", language="de,fr")
    header = card_header(folder)
    card = instrument_card(study=hidden_study)

    assert header["license"] == "cc-by-nc-4.0"
    assert header["language"] == ["de", "fr"]
    assert header["pretty_name"] == hidden_study.name
    assert header["size_categories"] == ["n<1K"]
    assert header["task_categories"] == ["sentence-similarity"]
    assert header["configs"] == [
        {
            "config_name": "items",
            "data_files": [{"split": "train", "path": "data/items.parquet"}],
            "default": True,
        },
        {"config_name": "votes", "data_files": [{"split": "train", "path": "data/votes.parquet"}]},
        {"config_name": "ballots", "data_files": [{"split": "train", "path": "data/ballots.parquet"}]},
    ]
    readme = (folder / "README.md").read_text(encoding="utf-8")
    for fact in (
        f"- **Question**: {hidden_study.question}",
        "- **Kept after each ballot (α)**: 0.500",
        "- **Votes per item per ballot (M)**: 8",
        "- **Items per ballot**: 42, 21",
        f"- **Votes**: 252 in all, {export.rows['votes']} in this dataset",
        f"- **Annotators**: 7 in all, {export.annotators} in this dataset",
        "- **Annotators excluded**: 1",
        f"- **Precision**: mean SD of ȳ {card['precision']['mean_sd']:.3f} over 1,000 bootstrap replicates",
        f"- **Resolution**: {card['resolution']['resolution']:.3f}",
        f"- **Repeatability (Krippendorff's α)**: {card['repeatability']['krippendorff_alpha']['alpha']:.3f}",
        "## Hidden test part",
        "## Instrument card: ",
        "### 1. Measurement procedure",
        "`cc-by-nc-4.0`",
    ):
        assert fact in readme, fact
    assert "## Appendix" not in readme  # the per-item rows are the items table


def test_a_study_without_a_hidden_part_says_so_and_the_size_follows_the_rows(study, tmp_path):
    folder, export = written(study, tmp_path)

    assert card_header(folder)["license"] == "cc-by-4.0" and card_header(folder)["language"] == ["en"]
    assert "This study keeps none: every item and every vote is here." in (folder / "README.md").read_text()
    assert export.withheld_items == export.withheld_votes == 0
    assert [hub_card.size_category(rows) for rows in (999, 1000, 99_999, 100_000, 2_000_000)] == [
        "n<1K",
        "1K<n<10K",
        "10K<n<100K",
        "100K<n<1M",
        "1M<n<10M",
    ]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"license": "wtfpl"}, "license must be one of cc-by-4.0"),
        ({"language": "english"}, "language must be up to 20 ISO 639 codes"),
        ({"language": "en,"}, None),  # a trailing comma is forgiven
    ],
)
def test_options_are_checked(options, message):
    if message is None:
        assert hub_card.hub_options(**options).languages == ("en",)
        return
    with pytest.raises(ServiceError, match=message) as refused:
        hub_card.hub_options(**options)
    assert refused.value.status == 400


# --- pseudonyms --------------------------------------------------------------------------------------


def test_pseudonyms_are_stable_per_study_and_reveal_no_participant(hidden_study, study, tmp_path):
    first, _ = written(hidden_study, tmp_path, "first")
    again, _ = written(hidden_study, tmp_path, "again")
    other, _ = written(study, tmp_path, "other")
    cache = tmp_path / "cache"
    votes = load(first, "votes", cache=cache)["annotator"]
    people = Annotator.objects.filter(study=hidden_study)
    unkeyed = {  # what anyone could compute from an annotator's id or participant id without the secret
        hashlib.sha256(str(word).encode()).hexdigest()[:16]
        for p in people
        for word in (p.pk, p.participant_id)
    }

    assert votes == load(again, "votes", cache=cache)["annotator"]
    assert all(re.fullmatch(r"annotator-[0-9a-f]{16}", name) for name in votes)
    assert not any(p.participant_id in name for name in set(votes) for p in people)
    assert not {name.removeprefix("annotator-") for name in votes} & unkeyed
    # One pseudonym per annotator, carrying exactly that annotator's votes.
    per_annotator = Counter(vote.annotator_id for vote in public_votes(hidden_study))
    assert sorted(Counter(votes).values()) == sorted(per_annotator.values())
    assert len(set(votes)) == len(per_annotator) == 7
    # Another study's annotators get other names; so would this study's under another secret.
    assert not set(votes) & set(load(other, "votes", cache=cache)["annotator"])
    hidden_study.participant_secret = "another secret"
    assert not set(votes) & set(hub.annotator_pseudonyms(study=hidden_study).values())


# --- bounded ---------------------------------------------------------------------------------------


def test_votes_are_written_in_bounded_batches(hidden_study, tmp_path, monkeypatch):
    monkeypatch.setattr(hub, "BATCH_ROWS", 10)
    folder, export = written(hidden_study, tmp_path)

    row_groups = pq.ParquetFile(folder / "data" / "votes.parquet").metadata.num_row_groups
    assert row_groups == math.ceil(export.rows["votes"] / 10)
    assert load(folder, "votes", cache=tmp_path / "cache").num_rows == export.rows["votes"]


def test_a_study_that_is_not_finished_is_refused(tmp_path):
    running = make_study(tokens=4, seed=5)
    with pytest.raises(ServiceError, match="is running: only a finished study is exported") as refused:
        hub.hub_dataset_write(study=running, folder=tmp_path / "dataset")
    assert refused.value.status == 409
    assert not (tmp_path / "dataset").exists()


def test_a_folder_with_files_is_refused(study, tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(ServiceError, match="is not an empty folder"):
        hub.hub_dataset_write(study=study, folder=tmp_path)
    assert [path.name for path in tmp_path.iterdir()] == ["notes.txt"]


# --- the API and the download ------------------------------------------------------------------------


def staff_user(username="researcher", *, superuser=True):
    return get_user_model().objects.create_user(
        username, password="pw", is_staff=True, is_superuser=superuser
    )


def token_client(user) -> Client:
    return Client(headers={"Authorization": f"Token {ApiToken.objects.create(user=user).key}"})


def unzipped(content: bytes, tmp_path):
    with zipfile.ZipFile(io.BytesIO(content)) as bundle:
        names = sorted(bundle.namelist())
        bundle.extractall(tmp_path / "unzipped")
    return names


def test_the_api_gives_staff_the_zip_that_loads(hidden_study, tmp_path):
    client = token_client(staff_user())
    url = f"/api/studies/{hidden_study.slug}/hub-dataset/?license=cc0-1.0"

    response = client.get(url, HTTP_ACCEPT="application/zip")

    assert response.status_code == 200, response.content[:300]
    assert response["Content-Type"] == "application/zip"
    assert response["Content-Disposition"] == f'attachment; filename="{hidden_study.slug}-hub-dataset.zip"'
    assert response.streaming
    names = unzipped(b"".join(response.streaming_content), tmp_path)
    slug = hidden_study.slug
    assert names == [
        f"{slug}/README.md",
        *(f"{slug}/data/{n}.parquet" for n in ("ballots", "items", "votes")),
    ]
    folder = tmp_path / "unzipped" / slug
    assert card_header(folder)["license"] == "cc0-1.0"
    assert load(folder, cache=tmp_path / "cache").num_rows == 25


def test_the_api_refuses_anonymous_model_owners_and_staff_who_are_not_its_researchers(hidden_study):
    url = f"/api/studies/{hidden_study.slug}/hub-dataset/"
    owner = token_client(get_user_model().objects.create_user("owner", password="pw"))
    outsider = token_client(staff_user("staff", superuser=False))

    anonymous = Client().get(url)
    assert anonymous.status_code == 401
    assert owner.get(url).status_code == 403
    refused = outsider.get(url, HTTP_ACCEPT="application/zip")
    assert refused.status_code == 403
    assert refused["Content-Type"] == "application/json"
    assert "keeps a hidden test part" in refused.json()["detail"]


def test_the_api_says_what_is_wrong(hidden_study):
    client = token_client(staff_user())
    running = make_study(tokens=4, seed=6)

    bad = client.get(f"/api/studies/{hidden_study.slug}/hub-dataset/?license=mine")
    assert (bad.status_code, bad.json()["detail"][:25]) == (400, "license must be one of cc")
    early = client.get(f"/api/studies/{running.slug}/hub-dataset/", HTTP_ACCEPT="application/zip")
    assert early.status_code == 409
    assert early.json()["detail"] == (
        f"study {running.slug!r} is running: only a finished study is exported as a dataset; its final ranks "
        "and scores exist once its last ballot has closed"
    )
    missing = client.get("/api/studies/nothing/hub-dataset/")
    assert missing.status_code == 404


def test_the_api_answers_202_while_a_large_studys_card_is_computed(hidden_study, monkeypatch):
    # As for a study of more than CARD_SYNC_ITEMS items whose card is not stored: computed in the background.
    monkeypatch.setattr(instrument, "CARD_SYNC_ITEMS", 10)
    StudyFigure.objects.filter(study=hidden_study).delete()
    client = token_client(staff_user())

    response = client.get(f"/api/studies/{hidden_study.slug}/hub-dataset/", HTTP_ACCEPT="application/zip")

    assert response.status_code == 202
    assert response["Retry-After"] == "2"
    assert response.json() == {
        "detail": f"the instrument card of study {hidden_study.slug!r} (42 items), which the dataset's card "
        "carries, is being computed; ask again in about 2 s",
        "retry_after": 2,
    }


def test_the_schema_describes_the_zip():
    client = token_client(staff_user())
    schema = yaml.safe_load(client.get("/api/schema/").content)
    operation = schema["paths"]["/api/studies/{slug}/hub-dataset/"]["get"]

    assert operation["operationId"] == "studies_hub_dataset_retrieve"
    assert set(operation["responses"]["200"]["content"]) == {"application/zip"}
    assert {"200", "202", "400", "403", "404", "409"} <= set(operation["responses"])
    assert {parameter["name"] for parameter in operation["parameters"]} >= {"slug", "license", "language"}


def test_the_results_page_and_the_admin_link_the_download(hidden_study, client):
    client.force_login(staff_user())
    url = reverse("export-hub-dataset", args=[hidden_study.slug])

    assert url.encode() in client.get(reverse("scoring:results", args=[hidden_study.slug])).content
    assert (
        url.encode() in client.get(reverse("admin:collection_study_change", args=[hidden_study.pk])).content
    )
    download = client.get(url + "?language=it")
    assert download.status_code == 200 and download["Content-Type"] == "application/zip"
    with zipfile.ZipFile(io.BytesIO(b"".join(download.streaming_content))) as bundle:
        readme = bundle.read(f"{hidden_study.slug}/README.md").decode()
    assert "language:\n- it\n" in readme


def test_the_download_refuses_a_running_study_and_non_staff(client):
    running = make_study(tokens=4, seed=7)
    url = reverse("export-hub-dataset", args=[running.slug])

    assert client.get(url).status_code == 302  # to the admin's login
    client.force_login(staff_user())
    refused = client.get(url)
    assert refused.status_code == 409
    assert b"only a finished study is exported" in refused.content
    assert client.post(url).status_code == 405


# --- the command -------------------------------------------------------------------------------------


def test_the_command_writes_the_folder(hidden_study, tmp_path):
    out = io.StringIO()
    call_command("export_hub", hidden_study.slug, str(tmp_path / "dataset"), "--license", "odbl", stdout=out)

    votes = len(public_votes(hidden_study))
    withheld = Vote.objects.filter(ballot__study=hidden_study).count() - votes
    assert out.getvalue() == (
        f"wrote {tmp_path / 'dataset'}: items 25, votes {votes}, ballots 2 rows\n"
        f"withheld the hidden test part: 17 items and the {withheld} votes that involve them\n"
    )
    assert card_header(tmp_path / "dataset")["license"] == "odbl"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--push", "not a repo", "--token", "hf_x"], "is not a Hub repository name"),
        (["--push", "lonely", "--token", "hf_x"], "give the repository with its owner, such as 'lab/lonely'"),
        (["--push", "lab/words"], "--push needs a token"),
    ],
)
def test_the_command_checks_a_push_before_writing(study, tmp_path, monkeypatch, arguments, message):
    monkeypatch.delenv("HF_TOKEN", raising=False)
    with pytest.raises(CommandError, match=re.escape(message)):
        call_command("export_hub", study.slug, str(tmp_path / "dataset"), *arguments)
    assert not (tmp_path / "dataset").exists()


def test_the_command_refuses_an_unknown_or_running_study(tmp_path):
    running = make_study(tokens=4, seed=8)
    with pytest.raises(CommandError, match="there is no study 'nothing'"):
        call_command("export_hub", "nothing", str(tmp_path / "a"))
    with pytest.raises(CommandError, match="only a finished study is exported"):
        call_command("export_hub", running.slug, str(tmp_path / "b"))


def test_a_push_without_a_dataset_card_is_refused_before_any_request(tmp_path):
    with pytest.raises(ServiceError, match="holds no dataset card"):
        hub.hub_dataset_push(folder=tmp_path, repo_id="lab/words", token="hf_x")
    with pytest.raises(ServiceError, match="needs a token"):
        hub.hub_dataset_push(folder=tmp_path, repo_id="lab/words", token="  ")


def test_scores_are_floats_and_ranks_integers_in_parquet(hidden_study, tmp_path):
    folder, _ = written(hidden_study, tmp_path)
    schema = pq.read_schema(folder / "data" / "items.parquet")
    assert (str(schema.field("score").type), str(schema.field("rank").type)) == ("double", "int32")
    assert np.isfinite(pq.read_table(folder / "data" / "items.parquet").column("score").to_numpy()).all()


# --- the push, to a Hub on this machine ---------------------------------------------------------------


class RecordingHub(BaseHTTPRequestHandler):
    """The four calls a push makes (create the repository, validate the card's YAML, ask how to upload
    each file, commit), answered as the Hub answers them; every request recorded. Nothing leaves the
    machine: the server listens on the loopback address."""

    requests: list = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.requests.append((self.path, self.headers.get("Authorization"), body))
        base = f"http://{self.server.server_address[0]}:{self.server.server_address[1]}"
        if self.path == "/api/repos/create":
            answer = {"url": f"{base}/datasets/lab/words", "name": "lab/words", "id": "1"}
        elif self.path == "/api/validate-yaml":
            answer = {"errors": [], "warnings": []}
        elif self.path.endswith("/preupload/main"):
            files = json.loads(body)["files"]
            answer = {
                "files": [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False} for f in files]
            }
        elif self.path.endswith("/commit/main"):
            answer = {"commitUrl": f"{base}/datasets/lab/words/commit/c0ffee", "commitOid": "c0ffee"}
        else:
            self.send_error(404)
            return
        payload = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


@pytest.fixture
def local_hub():
    RecordingHub.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), RecordingHub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", RecordingHub.requests
    server.shutdown()
    server.server_close()


def test_the_command_pushes_the_folder_to_a_private_dataset_repository(study, tmp_path, local_hub):
    endpoint, requests = local_hub
    out = io.StringIO()
    folder = tmp_path / "dataset"

    call_command(
        "export_hub",
        study.slug,
        str(folder),
        "--push",
        "lab/words",
        "--token",
        "hf_secret",
        "--endpoint",
        endpoint,
        stdout=out,
    )

    assert out.getvalue().splitlines()[-1] == f"pushed to {endpoint}/datasets/lab/words/commit/c0ffee"
    paths = [path for path, _, _ in requests]
    assert paths[0] == "/api/repos/create"
    assert paths[-1] == "/api/datasets/lab/words/commit/main"
    assert {authorization for _, authorization, _ in requests} == {"Bearer hf_secret"}
    created = json.loads(requests[0][2])
    assert (created["name"], created["organization"], created["type"]) == ("words", "lab", "dataset")
    assert created.get("visibility") == "private" or created.get("private") is True
    # The commit carries every file of the folder, byte for byte.
    lines = [json.loads(line) for line in requests[-1][2].splitlines()]
    files = {
        line["value"]["path"]: base64.b64decode(line["value"]["content"])
        for line in lines
        if line["key"] == "file"
    }
    on_disk = {
        path.relative_to(folder).as_posix(): path.read_bytes() for path in folder.rglob("*") if path.is_file()
    }
    assert files == on_disk

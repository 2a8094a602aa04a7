"""A finished study as a Hugging Face dataset: a folder of Parquet tables and a dataset card that
``datasets.load_dataset(folder)`` loads, zipped for a download, or pushed to the Hub with a token.

The folder holds three tables, each a config of the card's ``configs:`` header (one ``train`` split):

* ``items`` (the default): each public item with its tokens, semantic area, final score ȳ, rank, rank
  within its area, last ballot, and the bootstrap SD and 95% interval of ȳ from the instrument card;
* ``votes``: each vote between two public items, its annotator under a pseudonym;
* ``ballots``: each ballot with its size, comparisons, votes, rescale slope and dates.

``README.md`` is the dataset card (``metrics.hub_card``): the Hub's YAML header, the study's design, the
instrument card's figures at a glance, and the whole instrument card, so that the card travels with
the data.

The export is public by intent, so it follows the public card: a study's hidden test part
(``collection.parts``) never leaves. Its items are not in ``items``; no vote that involves one is in
``votes``; and ``rank`` and ``area_rank`` are places within the public part (1, 2, 3, … without gaps),
since gaps in the study's own ranks would show where the hidden items stand. The ballots' sizes and vote
counts are the whole study's, as the public card states them. Only a finished study is exported.
"""

from __future__ import annotations

import hashlib
import hmac
import tempfile
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from huggingface_hub import HfApi
from huggingface_hub.utils import HFValidationError, validate_repo_id

from collection.models import Annotator, Study, Vote
from collection.parts import hidden_mask
from collection.selectors import study_progress
from common.errors import ServiceError, StudyStateError
from metrics.hub_card import HubExport, HubOptions, dataset_card
from metrics.instrument import card_json_data, instrument_card
from scoring.borda import ranks_within
from scoring.selectors import study_dataset
from scoring.side_by_side import study_model_scores

BATCH_ROWS = 50_000  # votes written per Parquet row group: memory stays flat however many votes
PSEUDONYM_HEX = 16  # 64 bits of HMAC-SHA256 per annotator: no collision in any crowd the limits allow
PSEUDONYM_CONTEXT = b"yardstick hub-dataset annotator pseudonyms"
NOT_FINISHED = (
    "study {slug!r} is {status}: only a finished study is exported as a dataset; its final ranks and "
    "scores exist once its last ballot has closed"
)

ITEM_SCHEMA = pa.schema(
    [
        ("index", pa.int32()),
        ("token_a", pa.string()),
        ("token_b", pa.string()),
        ("area", pa.string()),
        ("rank", pa.int32()),
        ("area_rank", pa.int32()),
        ("score", pa.float64()),
        ("sd", pa.float64()),
        ("lower", pa.float64()),
        ("upper", pa.float64()),
        ("last_ballot", pa.int16()),
    ]
)


def item_schema(models) -> pa.Schema:
    """``ITEM_SCHEMA`` and, for each score model, ``score_<model>`` and ``rank_<model>``."""
    fields = [
        pa.field(f"{kind}_{model}", pa.float64() if kind == "score" else pa.int32())
        for model in models
        for kind in ("score", "rank")
    ]
    return pa.schema([*ITEM_SCHEMA, *fields])


VOTE_SCHEMA = pa.schema(
    [
        ("ballot", pa.int16()),
        ("annotator", pa.string()),
        ("simulated", pa.bool_()),
        ("excluded", pa.bool_()),
        ("left_index", pa.int32()),
        ("left_token_a", pa.string()),
        ("left_token_b", pa.string()),
        ("left_area", pa.string()),
        ("right_index", pa.int32()),
        ("right_token_a", pa.string()),
        ("right_token_b", pa.string()),
        ("right_area", pa.string()),
        ("choice", pa.string()),
        ("response_ms", pa.int32()),
        ("created_at", pa.timestamp("us", tz="UTC")),
    ]
)
BALLOT_SCHEMA = pa.schema(
    [
        ("number", pa.int16()),
        ("status", pa.string()),
        ("items", pa.int32()),
        ("comparisons", pa.int32()),
        ("votes", pa.int32()),
        ("published_votes", pa.int32()),
        ("rescale_slope", pa.float64()),
        ("opened_at", pa.timestamp("us", tz="UTC")),
        ("closed_at", pa.timestamp("us", tz="UTC")),
    ]
)


def annotator_pseudonyms(*, study: Study) -> dict[int, str]:
    """{annotator id: pseudonym} for every annotator of the study.

    ``annotator-`` and 16 hex digits of HMAC-SHA256 of the annotator's id, keyed by a key derived from the
    study's private participant secret: the same in every export of the study, different in another
    study, and not reversible to the annotator or their participant id without the secret.
    """
    key = hmac.new(study.participant_secret.encode(), PSEUDONYM_CONTEXT, hashlib.sha256).digest()
    return {
        pk: "annotator-" + hmac.new(key, str(pk).encode(), hashlib.sha256).hexdigest()[:PSEUDONYM_HEX]
        for pk in Annotator.objects.filter(study=study).values_list("pk", flat=True)
    }


def hub_dataset_check(*, study: Study) -> None:
    """Refuse (409) a study that is not finished: it has no final ranks and scores yet."""
    if study.status != Study.Status.FINISHED:
        raise StudyStateError(NOT_FINISHED.format(slug=study.slug, status=study.get_status_display().lower()))


def hub_dataset_write(
    *, study: Study, folder: Path, options: HubOptions | None = None, card: Mapping | None = None
) -> HubExport:
    """Write the study's dataset into ``folder`` (created; it must be empty): ``data/items.parquet``,
    ``data/votes.parquet``, ``data/ballots.parquet`` and ``README.md``.

    ``card`` is the study's instrument card (``instrument_card``; computed here when not given). A study
    that is not finished is refused (409), and so is a folder that holds files (400).
    """
    hub_dataset_check(study=study)
    folder = Path(folder)
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise ServiceError(f"{folder} is not an empty folder: give a new or an empty one")
    options = options or HubOptions()
    card = card_json_data(card if card is not None else instrument_card(study=study))
    data = folder / "data"
    data.mkdir(parents=True, exist_ok=True)

    hidden = hidden_mask(study)
    items = _items_table(study, hidden, card)
    pq.write_table(items, data / "items.parquet")
    public_votes, annotators, by_ballot = _write_votes(study, data / "votes.parquet")
    ballots = _ballots_table(study, by_ballot)
    pq.write_table(ballots, data / "ballots.parquet")

    rows = {"items": items.num_rows, "votes": public_votes, "ballots": ballots.num_rows}
    export = HubExport(
        folder=folder,
        rows=rows,
        annotators=annotators,
        withheld_items=int(hidden.sum()),
        withheld_votes=int(sum(row["votes"] for row in ballots.to_pylist()) - public_votes),
    )
    dataset_card(study=study, card=card, options=options, export=export).save(folder / "README.md")
    return export


def hub_dataset_zip(*, study: Study, options: HubOptions | None = None, card: Mapping | None = None):
    """The dataset folder as a zip in a temporary file (deleted when closed), read from its start.

    Parquet is compressed already: its files are stored, the card deflated. The file lives on disk, so a
    response streams it whatever the study's size.
    """
    archive = tempfile.TemporaryFile(suffix=".zip")
    try:
        with tempfile.TemporaryDirectory(prefix="hub-dataset-") as scratch:
            folder = Path(scratch) / study.slug
            hub_dataset_write(study=study, folder=folder, options=options, card=card)
            with zipfile.ZipFile(archive, "w") as bundle:
                for path in sorted(folder.rglob("*")):
                    if path.is_file():
                        method = zipfile.ZIP_STORED if path.suffix == ".parquet" else zipfile.ZIP_DEFLATED
                        bundle.write(path, Path(study.slug) / path.relative_to(folder), compress_type=method)
    except BaseException:
        archive.close()
        raise
    archive.seek(0)
    return archive


def hub_push_check(*, repo_id: str, token: str) -> None:
    """Refuse (400) a Hub repository name that is not "owner/name" or an empty token, before any upload."""
    try:
        validate_repo_id(repo_id)
    except HFValidationError as error:
        raise ServiceError(
            f"{repo_id!r} is not a Hub repository name such as 'lab/word-relatedness': {error}"
        ) from None
    if "/" not in repo_id:
        raise ServiceError(f"give the repository with its owner, such as 'lab/{repo_id}'")
    if not token or not token.strip():
        raise ServiceError(
            "pushing to the Hub needs a token with write access (huggingface.co/settings/tokens)"
        )


def hub_dataset_push(
    *, folder: Path, repo_id: str, token: str, private: bool = True, endpoint: str | None = None
) -> str:
    """Upload a written dataset folder to the Hugging Face Hub as the dataset ``repo_id`` ("owner/name"),
    creating the repository (private unless ``private`` is False) if it does not exist; returns the
    commit's URL. ``endpoint`` is another Hub's address (default: huggingface.co, or ``HF_ENDPOINT``).
    Bad arguments are refused (400) before anything is sent (``hub_push_check``)."""
    hub_push_check(repo_id=repo_id, token=token)
    folder = Path(folder)
    if not (folder / "README.md").is_file():
        raise ServiceError(f"{folder} holds no dataset card (README.md): write the dataset first")
    api = HfApi(endpoint=endpoint, token=token.strip())
    api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
    commit = api.upload_folder(
        folder_path=folder, repo_id=repo_id, repo_type="dataset", commit_message="Yardstick study export"
    )
    return str(commit.commit_url)


# --- the tables ------------------------------------------------------------------------------------


def _items_table(study: Study, hidden: np.ndarray, card: Mapping) -> pa.Table:
    """The public items in the order of the final ranking, ranked within the public part."""
    dataset = study_dataset(study=study)
    public = ~hidden
    ranked = public & (dataset.rank > 0)
    order = dataset.order()
    public_order = order[ranked[order]]
    rank = np.zeros(len(dataset), dtype=np.int64)
    rank[public_order] = np.arange(1, public_order.size + 1)
    _, area_code = np.unique(np.asarray(dataset.area, dtype=object).astype(str), return_inverse=True)
    area_rank = ranks_within(area_code, rank)
    precision = {row["index"]: row for row in ((card.get("precision") or {}).get("items") or [])}
    shown = np.concatenate([public_order, np.flatnonzero(public & ~ranked)])  # unranked ones last
    # Every score model's score, and its place among the public items (no gap where a hidden one stands).
    side_by_side = study_model_scores(study=study)
    schema = item_schema(side_by_side.models)
    model_columns = {}
    for model in side_by_side.models:  # a loop over the score models, not items
        model_rank = np.where(public, ranks_within(hidden, side_by_side.rank[model]), 0)
        model_columns[f"score_{model}"] = side_by_side.score[model][shown]
        model_columns[f"rank_{model}"] = model_rank[shown]
    columns = {name: [] for name in ITEM_SCHEMA.names}
    for position in shown.tolist():  # a row per item, once: the table is the output
        index = int(dataset.index[position])
        figures = precision.get(index, {})
        score = float(dataset.score[position])
        columns["index"].append(index)
        columns["token_a"].append(dataset.token_a[position])
        columns["token_b"].append(dataset.token_b[position])
        columns["area"].append(dataset.area[position])
        columns["rank"].append(int(rank[position]) or None)
        columns["area_rank"].append(int(area_rank[position]) or None)
        columns["score"].append(score if np.isfinite(score) else None)
        columns["sd"].append(figures.get("sd"))
        columns["lower"].append(figures.get("lower"))
        columns["upper"].append(figures.get("upper"))
        columns["last_ballot"].append(int(dataset.last_ballot[position]) or None)
    for name, values in model_columns.items():
        columns[name] = (
            np.where(np.isfinite(values), values, None).tolist()
            if name.startswith("score_")
            else [int(value) or None for value in values.tolist()]
        )
    return pa.table(columns, schema=schema)


def _vote_batches(study: Study) -> Iterator[dict]:
    """The votes between two public items in the order recorded, as column batches of ``BATCH_ROWS``."""
    items = {
        index: (token_a, token_b, area)
        for index, token_a, token_b, area in study.items.filter(hidden=False).values_list(
            "index", "token_a__text", "token_b__text", "area__name"
        )
    }
    pseudonyms = annotator_pseudonyms(study=study)
    people = dict(Annotator.objects.filter(study=study).values_list("pk", "simulated").order_by("pk"))
    excluded = set(
        Annotator.objects.filter(study=study, excluded_at__isnull=False).values_list("pk", flat=True)
    )
    votes = (
        Vote.objects.filter(ballot__study=study, left_item__hidden=False, right_item__hidden=False)
        .order_by("pk")
        .values_list(
            "ballot__number",
            "annotator_id",
            "left_item__index",
            "right_item__index",
            "choice",
            "response_ms",
            "created_at",
        )
    )
    batch = {name: [] for name in VOTE_SCHEMA.names}
    for ballot, annotator_id, left, right, choice, response_ms, created_at in votes.iterator(
        chunk_size=BATCH_ROWS
    ):
        batch["ballot"].append(ballot)
        batch["annotator"].append(pseudonyms[annotator_id])
        batch["simulated"].append(people[annotator_id])
        batch["excluded"].append(annotator_id in excluded)
        batch["left_index"].append(left)
        batch["right_index"].append(right)
        for side, index in (("left", left), ("right", right)):
            token_a, token_b, area = items[index]
            batch[f"{side}_token_a"].append(token_a)
            batch[f"{side}_token_b"].append(token_b)
            batch[f"{side}_area"].append(area)
        batch["choice"].append(choice)
        batch["response_ms"].append(response_ms)
        batch["created_at"].append(created_at)
        if len(batch["ballot"]) == BATCH_ROWS:
            yield batch
            batch = {name: [] for name in VOTE_SCHEMA.names}
    if batch["ballot"]:
        yield batch


def _write_votes(study: Study, path: Path) -> tuple[int, int, dict[int, int]]:
    """Write the public votes; returns their count, their annotators and the count per ballot."""
    written, annotators, by_ballot = 0, set(), {}
    with pq.ParquetWriter(path, VOTE_SCHEMA) as writer:
        for batch in _vote_batches(study):
            writer.write_table(pa.table(batch, schema=VOTE_SCHEMA))
            written += len(batch["ballot"])
            annotators.update(batch["annotator"])
            numbers, counts = np.unique(np.asarray(batch["ballot"]), return_counts=True)
            for number_, votes in zip(numbers.tolist(), counts.tolist(), strict=True):
                by_ballot[number_] = by_ballot.get(number_, 0) + votes
        if not written:  # an empty table still has its columns
            writer.write_table(VOTE_SCHEMA.empty_table())
    return written, len(annotators), by_ballot


def _ballots_table(study: Study, published: dict[int, int]) -> pa.Table:
    rows = [
        {
            "number": ballot["number"],
            "status": ballot["status"],
            "items": ballot["items"],
            "comparisons": ballot["comparisons"],
            "votes": ballot["votes"],
            "published_votes": published.get(ballot["number"], 0),
            "rescale_slope": ballot["rescale_slope"],
            "opened_at": ballot["opened_at"],
            "closed_at": ballot["closed_at"],
        }
        for ballot in study_progress(study=study)
    ]
    return pa.Table.from_pylist(rows, schema=BALLOT_SCHEMA)

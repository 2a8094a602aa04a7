"""A finished study's Hugging Face dataset through the client and the command line."""

from __future__ import annotations

import io

import datasets
import pytest
from yardstick_client import ApiError, YardstickError
from yardstick_client.cli import main

from collection.models import Ballot, Vote


def loaded(folder, config: str, cache) -> datasets.Dataset:
    return datasets.load_dataset(str(folder), config, split="train", cache_dir=str(cache))


def test_a_researcher_downloads_a_finished_study_as_a_dataset(
    connect, server, staff_token, finished_study, tmp_path
):
    client = connect(server, staff_token)

    folder = client.download_dataset(finished_study.slug, tmp_path / "animals", license="cc0-1.0")

    assert sorted(str(path.relative_to(folder)) for path in folder.rglob("*") if path.is_file()) == [
        "README.md",
        "data/ballots.parquet",
        "data/items.parquet",
        "data/votes.parquet",
    ]
    items = loaded(folder, "items", tmp_path / "cache")
    assert (items.num_rows, sorted(items["rank"])) == (15, list(range(1, 16)))
    assert (
        loaded(folder, "votes", tmp_path / "cache").num_rows
        == Vote.objects.filter(ballot__study=finished_study).count()
    )
    assert (
        loaded(folder, "ballots", tmp_path / "cache").num_rows
        == Ballot.objects.filter(study=finished_study).count()
    )
    assert "license: cc0-1.0" in (folder / "README.md").read_text()


def test_the_dataset_goes_only_into_a_new_or_empty_folder(
    connect, server, staff_token, finished_study, tmp_path
):
    (tmp_path / "notes.txt").write_text("mine")

    with pytest.raises(YardstickError) as refusal:
        connect(server, staff_token).download_dataset(finished_study.slug, tmp_path)

    assert str(refusal.value) == f"{tmp_path} exists and is not an empty folder: give a new or empty one"
    assert [path.name for path in tmp_path.iterdir()] == ["notes.txt"]


def test_a_model_owner_cannot_download_the_dataset(connect, server, owner_token, finished_study, tmp_path):
    with pytest.raises(ApiError) as refusal:
        connect(server, owner_token).download_dataset(finished_study.slug, tmp_path / "d")

    assert refusal.value.status == 403
    assert not (tmp_path / "d").exists()


def test_the_command_writes_the_dataset(server, staff_token, finished_study, tmp_path):
    out, err = io.StringIO(), io.StringIO()

    status = main(
        [
            "--url",
            server,
            "--token",
            staff_token,
            "--quiet",
            "study",
            "dataset",
            finished_study.slug,
            str(tmp_path / "d"),
        ],
        out=out,
        err=err,
    )

    assert (status, err.getvalue()) == (0, "")
    assert out.getvalue() == (
        f"the dataset of {finished_study.slug!r} is in {tmp_path / 'd'}: "
        "README.md, data/ballots.parquet, data/items.parquet, data/votes.parquet\n"
    )

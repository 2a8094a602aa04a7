"""Helpers of the judge tests: decisions made from a study's own final ranking, and their files."""

from __future__ import annotations

import json

from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from collection.models import Study
from metrics.judges import judge_pairs


def reference_rows(study: Study, *, flip: bool = False) -> list[dict]:
    """Every pair decided for the item with the higher final score (left on equal scores); ``flip``
    decides the other way."""
    pairs = judge_pairs(study=study)
    final = dict(study.items.values_list("pk", "final_score"))
    ids = zip(pairs.left_id.tolist(), pairs.right_id.tolist(), strict=True)
    return [
        {"pair": number, "decision": "left" if (final[left] >= final[right]) != flip else "right"}
        for number, (left, right) in enumerate(ids, start=1)
    ]


def csv_bytes(rows: list[dict]) -> bytes:
    return ("pair,decision\n" + "".join(f"{row['pair']},{row['decision']}\n" for row in rows)).encode()


def jsonl_bytes(rows: list[dict]) -> bytes:
    return "".join(json.dumps(row) + "\n" for row in rows).encode()


def post_judge_json(client: Client, study: Study, judge_name: str, rows, **fields):
    return client.post(
        f"/api/studies/{study.slug}/judges/",
        json.dumps({"judge_name": judge_name, "decisions": rows, **fields}),
        content_type="application/json",
    )


def post_judge_file(
    client: Client, study: Study, judge_name: str, content: bytes, *, name="judge.csv", **fields
):
    upload = SimpleUploadedFile(name, content, content_type="text/csv")
    return client.post(
        f"/api/studies/{study.slug}/judges/", {"judge_name": judge_name, "file": upload, **fields}
    )

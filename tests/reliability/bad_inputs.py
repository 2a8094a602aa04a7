"""Bad inputs against the real application: every answer must be a 4xx that says what is wrong, with
nothing half-written. Runs in-process on a throwaway SQLite database; prints a Markdown table for
RELIABILITY.md.

    .venv/bin/python -m tests.reliability.bad_inputs
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _setup(data_dir: str) -> None:
    for name in ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND"):
        os.environ.pop(name, None)
    os.environ.update(
        DJANGO_SETTINGS_MODULE="config.settings", YARDSTICK_DATA_DIR=data_dir, LOG_LEVEL="ERROR"
    )
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def cases():
    """(what, callable returning a response, a check of what must not have been written)."""
    from django.contrib.auth import get_user_model
    from django.test import Client

    from collection.lifecycle import study_start
    from collection.models import Item, Study, Token, Vote
    from collection.pools import items_generate, tokens_import
    from tests.factories import tokens_csv

    users = get_user_model().objects
    staff, owner, anonymous = Client(), Client(), Client()
    staff.force_login(users.create_user("staff", password="staff-password", is_staff=True))
    owner.force_login(users.create_user("owner", password="owner-password"))

    study = Study.objects.create(name="Bad inputs", slug="bad", ballot_count=2, appearances=4)
    tokens_import(study=study, data=tokens_csv({"A": 6}))
    items_generate(study=study)
    study_start(study=study)
    big = Study.objects.create(name="Big", slug="big", ballot_count=2, appearances=4)
    tokens_import(study=big, data=tokens_csv({"A": 1000}))
    slug80 = Study.objects.create(name="N" * 200, slug="s" * 80, ballot_count=2, appearances=4)
    draft = Study.objects.create(name="Draft", slug="draft", ballot_count=2, appearances=4)
    deep = "[" * 100_000 + "]" * 100_000
    deep_object = '{"a":' * 100_000 + "1" + "}" * 100_000
    huge_limit = {"limit": "100000000000000000000"}

    def json_post(client, path, body):
        return lambda: client.post(path, body, content_type="application/json")

    yield (
        "`[[[…]]]` 100,000 deep, anonymous, `POST /api/votes/`",
        json_post(anonymous, "/api/votes/", deep),
        None,
    )
    yield (
        '`{"a":{…}}` 100,000 deep, `POST /api/auth/token/`',
        json_post(anonymous, "/api/auth/token/", deep_object),
        None,
    )
    yield (
        "an 11 MB vote body",
        json_post(anonymous, "/api/votes/", '{"assignment": 1, "choice": "' + "x" * 11_000_000 + '"}'),
        None,
    )
    yield (
        "a vote with choice `up`",
        json_post(anonymous, "/api/votes/", {"assignment": 1, "choice": "up"}),
        None,
    )
    yield (
        "a vote on assignment 2⁷⁰",
        json_post(anonymous, "/api/votes/", {"assignment": 2**70, "choice": "left"}),
        None,
    )
    yield (
        "a vote whose choice holds a lone surrogate (`left\\ud800`)",
        json_post(anonymous, "/api/votes/", json.dumps({"assignment": 1, "choice": "left\ud800"})),
        None,
    )
    voter = Client()
    voter.post("/s/bad/", {"participant": "form-voter", "consent": "yes"})
    yield (
        "the voting page's form (no JavaScript) with `assignment=9223372036854775808`",
        lambda: voter.post("/s/bad/vote/", {"assignment": str(2**63), "choice": "left"}),
        lambda: not Vote.objects.exists(),
    )
    yield "`?limit=10^20` on `/api/studies/`", lambda: staff.get("/api/studies/", huge_limit), None
    yield (
        "`?limit=10^20` on `/api/studies/<slug>/tokens/`",
        lambda: staff.get("/api/studies/bad/tokens/", huge_limit),
        None,
    )
    yield (
        "`?limit=10^20` on `/api/submissions/` (owner)",
        lambda: owner.get("/api/submissions/", huge_limit),
        None,
    )
    yield (
        "duplicate a study with an 80-character slug and a 200-character name",
        json_post(staff, f"/api/studies/{slug80.slug}/duplicate/", {}),
        None,
    )
    yield (
        "`PATCH` a draft's M to 34,724,802",
        lambda: staff.patch(
            "/api/studies/draft/", {"appearances": 34_724_802}, content_type="application/json"
        ),
        lambda: Study.objects.get(slug="draft").appearances == 4,
    )
    yield (
        "generate the items of 1,000 tokens in one area (499,500 pairs)",
        json_post(staff, "/api/studies/big/items/generate/", {}),
        lambda: not Item.objects.filter(study=big).exists(),
    )
    tokens_file = "".join(f"t{i},area\n" for i in range(200_000)).encode()
    yield (
        "import 200,000 tokens in one area (2.3 MB)",
        lambda: staff.post("/api/studies/draft/tokens/", tokens_file, content_type="text/csv"),
        lambda: not Token.objects.filter(study=draft).exists(),
    )
    tokens_limit = "".join(f"t{i},area\n" for i in range(10_001)).encode()
    yield (
        "import 10,001 tokens (under 2 MiB)",
        lambda: staff.post("/api/studies/draft/tokens/", tokens_limit, content_type="text/csv"),
        lambda: not Token.objects.filter(study=draft).exists(),
    )
    yield (
        "a tokens file that is not UTF-8",
        lambda: staff.post(
            "/api/studies/draft/tokens/", b"caf\xe9,area\nthe,area\n", content_type="text/csv"
        ),
        lambda: not Token.objects.filter(study=draft).exists(),
    )
    yield (
        "a participant id of 10,000 characters",
        lambda: anonymous.post("/s/bad/", {"participant": "p" * 10_000, "consent": "yes"}),
        None,
    )
    Study.objects.filter(slug="bad").update(require_signed_links=True)
    yield (
        "a forged participant signature on a study that requires signed links",
        lambda: Client().post("/s/bad/", {"participant": "P1", "sig": "0" * 64, "consent": "yes"}),
        lambda: not study.annotators.filter(participant_id="P1").exists(),
    )
    Study.objects.filter(slug="bad").update(require_signed_links=False)
    for attempt in range(11):
        anonymous_attempt = json_post(
            Client(), "/api/auth/token/", {"username": "owner", "password": f"wrong{attempt}"}
        )
        if attempt < 10:
            anonymous_attempt()
    yield "the 11th wrong password for one user on `POST /api/auth/token/`", anonymous_attempt, None
    yield (
        "`?format=csv&metric=nope` on a leaderboard",
        lambda: anonymous.get("/api/studies/bad/leaderboard/", {"format": "csv", "metric": "nope"}),
        None,
    )
    yield (
        "a vote nobody leased, by a stranger's session",
        json_post(anonymous, "/api/votes/", {"assignment": 1, "choice": "left"}),
        lambda: not Vote.objects.exists(),
    )


def main() -> None:
    with tempfile.TemporaryDirectory() as data_dir:
        _setup(data_dir)
        rows = []
        for what, call, nothing_written in cases():
            started = time.perf_counter()
            response = call()
            elapsed = (time.perf_counter() - started) * 1000
            body = response.content.decode(errors="replace")
            try:
                detail = json.loads(body).get("detail", body)
            except (ValueError, AttributeError):
                alert = re.search(r'role="alert">(.*?)</p>', body, flags=re.S)
                detail = " ".join((alert.group(1) if alert else body).split())
            if response.status_code in (200, 201, 302):
                detail = f"accepted: {response.get('Location') or json.loads(body).get('slug', '')}"
            held = "yes" if nothing_written is None or nothing_written() else "**no**"
            rows.append(
                (what, response.status_code, f"{elapsed:,.0f}", str(detail)[:150].replace("|", "\\|"), held)
            )
    print("| input | answer | ms | what it says | nothing written |")
    print("|---|---|---|---|---|")
    for what, status, elapsed, detail, held in rows:
        print(f"| {what} | {status} | {elapsed} | {detail} | {held} |")
    if any(status >= 500 for _, status, *_ in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()

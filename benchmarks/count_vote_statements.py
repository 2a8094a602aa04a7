"""SQL statements and requests per judgement on the vote path: the API as the voting page uses it.

    python benchmarks/count_vote_statements.py [--judgements 40]

Builds the demo-sized study (990 items, n_b = 7, α = 0.5, M = 20) in a fresh SQLite database in a
temporary folder (``DATABASE_URL`` in the environment points it at another database instead, which must
be empty), lets one annotator join through the study link, then makes ``--judgements`` judgements the way
``static/collection/vote.js`` does: ``GET /api/studies/<slug>/next/`` for the first comparison, then
``POST /api/votes/``, and ``GET next`` again only when the vote's answer does not carry the next
comparison (the protocol before issue 9). Every request is counted with Django's
``CaptureQueriesContext``; so are the two services alone (``comparison_next_for`` and ``vote_record``),
which is what the database does for a judgement whatever the identity, session and rate-limit plumbing
around it. Rate limits are raised for the run: they are not what is measured.

Statement counts do not drift with the machine; the figures are the median and the largest per request.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--judgements", type=int, default=40)
    args = parser.parse_args()

    data_dir = tempfile.mkdtemp(prefix="bench-statements-")
    os.environ.setdefault("YARDSTICK_DATA_DIR", data_dir)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ["DEBUG"] = "true"  # the embedded default: plain static files, no manifest to build
    os.environ.setdefault("SECRET_KEY", "benchmark")
    os.environ["CELERY_TASK_ALWAYS_EAGER"] = "true"
    for scope in ("NEXT_PARTICIPANT", "NEXT_ADDRESS", "VOTE_PARTICIPANT", "VOTE_ADDRESS", "JOIN_ADDRESS"):
        os.environ[f"THROTTLE_{scope}"] = "1000000/s"

    import django

    django.setup()

    from django.core.management import call_command
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from benchmarks._timing import machine
    from collection.models import Annotator, Study
    from collection.voting import comparison_next_for, vote_record

    call_command("migrate", verbosity=0)
    call_command("load_demo", slug="bench", stdout=open(os.devnull, "w"))  # noqa: SIM115
    study = Study.objects.get(slug="bench")
    Study.objects.filter(pk=study.pk).update(votes_per_annotator_per_ballot=None)
    print(f"machine: {machine()}")
    print(
        f"database: {connection.vendor}; {args.judgements} judgements by one annotator, then by the services"
    )

    client = Client()
    client.get(f"/s/{study.slug}/?participant=bench-1")
    client.post(f"/s/{study.slug}/", {"consent": "yes", "participant": "bench-1"})

    counts: dict[str, list[int]] = {"GET next": [], "POST vote": []}
    requests_per_judgement, per_judgement = [], []

    def counted(kind: str, call):
        with CaptureQueriesContext(connection) as queries:
            response = call()
        counts[kind].append(len(queries))
        return response

    next_url, vote_url = f"/api/studies/{study.slug}/next/", "/api/votes/"
    current = counted("GET next", lambda: client.get(next_url)).json()
    for number in range(args.judgements):
        body = {"assignment": current["assignment"], "choice": ("left", "right")[number % 2]}
        response = counted(
            "POST vote", lambda body=body: client.post(vote_url, body, content_type="application/json")
        )
        assert response.status_code == 201, response.content
        answer = response.json()
        if answer.get("next") is not None:
            current, requests = answer["next"], 1
        else:
            current, requests = counted("GET next", lambda: client.get(next_url)).json(), 2
        requests_per_judgement.append(requests)
        per_judgement.append(counts["POST vote"][-1] + (counts["GET next"][-1] if requests == 2 else 0))

    services: dict[str, list[int]] = {"comparison_next_for": [], "vote_record": []}
    annotator = Annotator.objects.create(study=study, participant_id="bench-2")
    for _ in range(args.judgements):
        annotator = Annotator.objects.select_related("study").get(pk=annotator.pk)
        with CaptureQueriesContext(connection) as queries:
            result = comparison_next_for(annotator=annotator)
        services["comparison_next_for"].append(len(queries))
        with CaptureQueriesContext(connection) as queries:
            vote_record(annotator=annotator, assignment_id=result.assignment.pk, choice="left")
        services["vote_record"].append(len(queries))

    print(f"requests per judgement: median {statistics.median(requests_per_judgement):g}")
    print(f"{'what':>22} {'calls':>6} {'median':>7} {'max':>4}   statements")
    for kind, values in {**counts, **services}.items():
        if values:
            print(f"{kind:>22} {len(values):>6} {statistics.median(values):>7g} {max(values):>4}")
    print(f"{'per judgement (HTTP)':>22} {len(per_judgement):>6} {statistics.median(per_judgement):>7g}")


if __name__ == "__main__":
    main()

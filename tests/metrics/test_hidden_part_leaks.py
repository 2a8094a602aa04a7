"""The hidden test part never leaks: every URL of the project, requested by each persona who is not a
researcher of the study, shows no human score, rank or win ratio of a hidden item; its researchers do see
them.

The world: a finished study and a running one, each keeping 40% of its 42 items hidden, voted by a crowd
that disagrees. After the votes, every hidden item's final score, per-ballot scores and win ratios are set
to distinctive values (0.9xx317…, 0.3xx383…) that nothing else on the site prints, and the cached figures
are dropped, so that a page, an export or the card that showed a hidden item's score would print one of
them. Besides searching every body for those values, the test reads every JSON and CSV body structurally:
no row that carries a per-item score names a hidden item.

The personas: anonymous, an annotator of the running study (consented, holding a comparison), a model
owner with a submission, a staff member with every view permission of the admin but no right on these
studies, and the studies' creator (staff, not a superuser), who must see the values.
"""

from __future__ import annotations

import csv
import io
import json
import re

import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.test import Client
from rest_framework.authtoken.models import Token as ApiToken

from collection.models import Ballot, Item, ItemScore, Study, Vote
from config.celery import app as celery_app
from metrics import services as metrics_services
from metrics.models import StudyFigure, Submission
from tests.api.test_permission_matrix import concrete, methods_of, routes
from tests.factories import annotators, disagreeing_crowd, make_study, vote_until
from tests.metrics.judge_helpers import reference_rows

pytestmark = pytest.mark.django_db

FINISHED, RUNNING = "split-finished", "split-running"
OUTSIDERS = ("anonymous", "annotator", "owner", "staff_without_rights")
SCORE_KEYS = {"score", "final_score", "final_rank", "rank", "area_rank", "win_ratio", "win_ratios", "sd"}
ITEM_KEYS = ("item", "index", "id")


def hidden_score(position: int) -> float:
    return 0.90317 + 0.00611 * position  # 0.9032, 0.9093, …: printed nowhere else


def hidden_win_ratio(position: int) -> float:
    return 0.30383 + 0.00577 * position


def _distinctive(study: Study) -> list[str]:
    """Write the distinctive values on the hidden items of ``study``; the strings a leak would print."""
    printed = []
    hidden = list(Item.objects.filter(study=study, hidden=True).order_by("index"))
    for position, item in enumerate(hidden):
        score, ratio = hidden_score(position), hidden_win_ratio(position)
        if study.status == Study.Status.FINISHED:
            Item.objects.filter(pk=item.pk).update(final_score=score, final_rank=position + 1)
        ItemScore.objects.filter(item=item).update(score=score, rescaled_score=score, win_ratio=ratio)
        printed += [repr(score), f"{score:.4f}", repr(ratio), f"{ratio:.4f}"]
    if study.status == Study.Status.FINISHED:  # the development items follow the hidden ones in rank
        development = Item.objects.filter(study=study, hidden=False).order_by("-final_score", "index")
        for rank, item in enumerate(development, start=len(hidden) + 1):
            Item.objects.filter(pk=item.pk).update(final_rank=rank)
    StudyFigure.objects.filter(study=study).delete()  # cached cards and replicates made before
    return printed


def _user(username: str, *, staff: bool) -> object:
    user = get_user_model().objects.create_user(username, password=f"{username}-password", is_staff=staff)
    if staff:  # every view permission of the project's models: the admin lists them all
        labels = ("collection", "scoring", "metrics")
        user.user_permissions.set(
            Permission.objects.filter(
                content_type__app_label__in=labels, codename__startswith="view_"
            ).exclude(codename="view_hidden_part")
        )
    return user


@pytest.fixture(scope="module")
def split_world(django_db_setup, django_db_blocker):
    eager = celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates
    celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates = True, True
    with django_db_blocker.unblock():
        creator = _user("researcher", staff=True)
        finished = make_study(
            tokens=7, areas=2, ballot_count=2, appearances=8, seed=11, allow_ties=True, hidden_share=0.4
        )
        vote_until(finished, voters=annotators(finished, 7), choose=disagreeing_crowd(finished, seed=3))
        finished.refresh_from_db()
        assert finished.status == Study.Status.FINISHED
        running = make_study(tokens=7, areas=2, ballot_count=3, appearances=4, seed=12, hidden_share=0.4)
        first = running.ballots.get(number=1)
        vote_until(
            running,
            voters=annotators(running, 6, prefix="r"),
            choose=disagreeing_crowd(running, seed=4),
            max_votes=first.comparison_count,
        )
        assert running.ballots.filter(status=Ballot.Status.CLOSED).count() == 1
        Study.objects.filter(pk=finished.pk).update(slug=FINISHED, created_by=creator)
        Study.objects.filter(pk=running.pk).update(slug=RUNNING, created_by=creator)
        finished.refresh_from_db()
        running.refresh_from_db()

        owner = _user("owner", staff=False)
        token = ApiToken.objects.create(user=owner).key
        rng = np.random.default_rng(5)
        truth = dict(finished.items.values_list("pk", "final_score"))
        rows = [{"item": pk, "score": float(score + rng.normal(0, 0.1))} for pk, score in truth.items()]
        submission = metrics_services.submission_create(
            study=finished, owner=owner, model_name="model", data=rows, source_format="json"
        )
        assert submission.status == Submission.Status.DONE, submission.error
        judge = metrics_services.judge_create(
            study=finished, owner=owner, judge_name="judge", data=reference_rows(finished), source_format="json"
        )
        assert judge.status == Submission.Status.DONE, judge.error
        printed = _distinctive(finished) + _distinctive(running)
        _user("outsider", staff=True)
    celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates = eager
    yield {"printed": printed, "token": token, "submission": submission.pk, "judge": judge.pk}
    with django_db_blocker.unblock():
        from django.core.management import call_command

        call_command("flush", interactive=False, verbosity=0)


def _logged_in(username: str) -> Client:
    client = Client()
    client.force_login(get_user_model().objects.get(username=username))
    return client


def personas(split_world) -> dict[str, tuple[Client, Client]]:
    """(client for /api/, client for the pages) of each persona."""
    annotator = Client()
    consent = annotator.post(f"/s/{RUNNING}/", {"consent": "yes"})
    assert consent.status_code == 302
    assert annotator.get(f"/api/studies/{RUNNING}/next/").status_code == 200  # it holds a comparison
    owner_api = Client(headers={"Authorization": f"Token {split_world['token']}"})
    return {
        "anonymous": (Client(), Client()),
        "annotator": (annotator, annotator),
        "owner": (owner_api, _logged_in("owner")),
        "staff_without_rights": (_logged_in("outsider"), _logged_in("outsider")),
        "researcher": (_logged_in("researcher"), _logged_in("researcher")),
    }


def _admin_object(model_path: str, study: Study) -> str:
    """The admin object to request: the study, else a row of a hidden item where the model has one."""
    app_label, model_name = model_path.split("/")
    content_type = ContentType.objects.get(app_label=app_label, model=model_name)
    model = content_type.model_class()
    if model is Study:
        return str(study.pk)
    hidden = Item.objects.filter(study=study, hidden=True)
    rows = {
        Item: hidden,
        ItemScore: ItemScore.objects.filter(item__in=hidden),
        Vote: Vote.objects.filter(left_item__in=hidden) | Vote.objects.filter(right_item__in=hidden),
    }.get(model, model._base_manager.all())
    return str(rows.order_by("pk").values_list("pk", flat=True).first() or 1)


def urls(split_world) -> list[str]:
    """Every GET route of the project, with each split study where it takes one."""
    found = []
    studies = [Study.objects.get(slug=FINISHED), Study.objects.get(slug=RUNNING)]
    for route, pattern in routes().items():
        if "GET" not in methods_of(pattern):
            continue
        for study in studies if ("slug" in route or "object_id" in route) else studies[:1]:
            values = {
                "slug": study.slug,
                "submission_id": str(split_world["submission"]),
                "judge_id": str(split_world["judge"]),
                "job_id": "1",
                "annotator_id": "1",
                "content_type_id": str(ContentType.objects.get_for_model(Study).pk),
                "object_id": str(study.pk),
                "id": str(get_user_model().objects.get(username="owner").pk),
                "app_label": "collection",
                "url": "nothing-here/",
                "language": "de",
                "key": "no-such-invitation",
            }
            admin_model = re.match(r"admin/(\w+/\w+)/<path:object_id>/", route)
            if admin_model:
                values["object_id"] = _admin_object(admin_model.group(1), study)
            found.append(concrete(route, values))
    extra = [
        f"/models/studies/{FINISHED}/leaderboard/?metric={metric}&n0={n0}"
        for metric in ("rho_w", "tau_w", "rho", "tau")
        for n0 in ("0", "10")
    ]
    extra += [
        f"/api/studies/{FINISHED}/leaderboard/?format=csv&metric=rho",
        f"/api/studies/{FINISHED}/pairs/?limit=1000",
    ]
    extra += [f"/api/submissions/{split_world['submission']}/evaluation/?k=1&n0=0"]
    extra += [
        f"/api/judges/{split_world['judge']}/evaluation/?k=1&n0=0",
        f"/api/studies/{FINISHED}/judges/leaderboard/?format=csv&metric=rho",
        f"/api/studies/{FINISHED}/judge-pairs/?limit=1000",
    ]
    extra += [
        f"/admin/collection/item/?study__id__exact={Study.objects.get(slug=FINISHED).pk}&hidden__exact=1"
    ]
    return sorted(set(found)) + extra


def shows(body: str, value: str) -> bool:
    """Whether ``body`` prints ``value`` as a number of its own (0.9032 in 0.90322580 is another number)."""
    return re.search(rf"(?<![0-9]){re.escape(value)}(?![0-9])", body) is not None


def body_of(response) -> str:
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content).decode("utf-8", "replace")
    return response.content.decode("utf-8", "replace")


def _hidden_keys() -> set[str]:
    """Every id and index of a hidden item, as text."""
    rows = Item.objects.filter(hidden=True).values_list("pk", "index", "study__slug")
    return {f"{slug}:id:{pk}" for pk, _, slug in rows} | {f"{slug}:index:{index}" for _, index, slug in rows}


def per_item_rows_naming_hidden(url: str, body: str, content_type: str) -> list:
    """The JSON objects and CSV rows that carry a per-item score and name a hidden item."""
    slug = FINISHED if FINISHED in url else RUNNING if RUNNING in url else None
    if slug is None:
        return []
    hidden = _hidden_keys()
    found = []

    def named(key: str, value) -> bool:
        kind = "index" if key == "index" else "id"
        return f"{slug}:{kind}:{value}" in hidden

    if "json" in content_type:
        try:
            data = json.loads(body)
        except ValueError:
            return []
        stack = [data]
        while stack:
            value = stack.pop()
            if isinstance(value, dict):
                if SCORE_KEYS & set(value) and any(
                    named(key, value.get(key)) for key in ITEM_KEYS if key in value
                ):
                    found.append(value)
                stack.extend(value.values())
            elif isinstance(value, list):
                stack.extend(value)
    elif "csv" in content_type:
        rows = list(csv.DictReader(io.StringIO(body)))
        for row in rows:
            if SCORE_KEYS & set(row) and any(named(key, row.get(key)) for key in ITEM_KEYS if key in row):
                found.append(row)
    return found


def test_no_page_api_export_or_card_shows_a_hidden_items_score_to_anyone_but_its_researchers(split_world):
    clients = personas(split_world)
    printed = split_world["printed"]
    assert len(printed) == 4 * Item.objects.filter(hidden=True).count() > 0
    leaks, seen = [], 0
    hidden_labels = {  # by study: the two studies' tokens share their texts
        slug: [
            f"{a} – {b}"
            for a, b in Item.objects.filter(study__slug=slug, hidden=True).values_list(
                "token_a__text", "token_b__text"
            )
        ]
        for slug in (FINISHED, RUNNING)
    }
    for url in urls(split_world):
        for name in OUTSIDERS:
            api, pages = clients[name]
            response = (api if url.startswith("/api/") else pages).get(url)
            body = body_of(response)
            seen += response.status_code == 200
            shown = [value for value in printed if shows(body, value)]
            rows = per_item_rows_naming_hidden(url, body, response.get("Content-Type", ""))
            for slug, labels in hidden_labels.items():  # the card's per-item table names items by tokens
                if "/card" in url and f"/{slug}/" in url:
                    rows += [label for label in labels if label in body]
            if shown or rows:
                leaks.append((name, url, response.status_code, shown[:3], rows[:2]))
    assert leaks == []
    assert seen > 100  # most of the URLs answered someone: the walk reached the pages, not only refusals


@pytest.mark.parametrize(
    "url",
    [
        f"/studies/{FINISHED}/export/dataset.csv",
        f"/studies/{FINISHED}/export/dataset.json",
        f"/studies/{FINISHED}/results/",
        f"/studies/{RUNNING}/results/",
        "/admin/scoring/itemscore/",
        "/admin/collection/item/",
    ],
)
def test_the_studys_researcher_sees_the_hidden_scores_that_others_do_not(split_world, url):
    clients = personas(split_world)
    researcher = clients["researcher"][1].get(url)
    outsider = clients["staff_without_rights"][1].get(url)

    assert researcher.status_code == 200
    assert any(shows(body_of(researcher), value) for value in split_world["printed"])
    assert not any(shows(body_of(outsider), value) for value in split_world["printed"])


@pytest.mark.parametrize(
    "url",
    [
        f"/studies/{FINISHED}/export/votes.csv",
        f"/api/studies/{FINISHED}/items/",
        f"/api/studies/{FINISHED}/results/",
    ],
)
def test_staff_without_rights_are_refused_the_per_item_exports_and_told_why(split_world, url):
    outsider = personas(split_world)["staff_without_rights"][0]

    response = outsider.get(url)

    assert response.status_code == 403
    assert "keeps a hidden test part" in body_of(response)
    assert "Can see the human scores of the hidden test parts" in body_of(response)


def test_a_staff_member_given_the_permission_sees_the_hidden_part(split_world):
    outsider = get_user_model().objects.get(username="outsider")
    outsider.user_permissions.add(Permission.objects.get(codename="view_hidden_part"))
    client = _logged_in("outsider")

    response = client.get(f"/studies/{FINISHED}/export/dataset.csv")

    assert response.status_code == 200
    assert any(shows(body_of(response), value) for value in split_world["printed"])
    outsider.user_permissions.remove(Permission.objects.get(codename="view_hidden_part"))


def test_the_public_card_lists_every_development_item_and_no_hidden_one(split_world):
    study = Study.objects.get(slug=FINISHED)
    labels = {
        hidden: [
            f"{a} – {b}"
            for a, b in study.items.filter(hidden=hidden).values_list("token_a__text", "token_b__text")
        ]
        for hidden in (False, True)
    }

    page = body_of(Client().get(f"/models/studies/{FINISHED}/card/"))
    card = json.loads(body_of(Client().get(f"/models/studies/{FINISHED}/card.json")))

    assert all(label in page for label in labels[False])
    assert not any(label in page for label in labels[True])
    assert sorted(row["index"] for row in card["precision"]["items"]) == sorted(
        study.items.filter(hidden=False).values_list("index", flat=True)
    )
    assert card["split"] == {"hidden_share": 0.4, "development_items": 25, "test_items": 17, "drawn": True}

"""Who may do what: every URL of the project × anonymous / annotator / owner A / owner B / staff.

The URLs come from the URL resolver, so an endpoint or page added without an entry in ``MATRIX`` fails
``test_every_url_of_the_project_has_an_entry``. Each entry gives, per method and persona, the outcome:
a status, or ``"→ <path>"`` for a redirect there (a login page, or the study's link). Routes with a
study slug are requested for each of the world's studies (finished, running, draft), and an outcome may
differ per study (``{"finished": …, "running": …, "draft": …}``). Loosen a permission and the outcome of
a persona changes from a refusal to something else: the test fails.

The personas (``tests/api/world.py``):

- anonymous: no cookie, no token;
- annotator: a browser session that opened the running study's link and gave consent;
- owner A, owner B: model owners (not staff), each with an API token for /api/ and a session for the
  pages; A's submission is requested, which B must not see (404, as for an id that does not exist);
- staff: the researcher (staff, superuser in the admin), with a token for /api/ and a session.
"""

from __future__ import annotations

import json
import re

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model
from django.contrib.contenttypes.models import ContentType
from django.test import Client
from django.urls import URLResolver, get_resolver
from rest_framework.authtoken.models import Token as ApiToken

from collection.models import Study
from tests.api.world import DRAFT, FINISHED, RUNNING

pytestmark = pytest.mark.django_db

PERSONAS = ("anonymous", "annotator", "owner_a", "owner_b", "staff")
STUDIES = (FINISHED, RUNNING, DRAFT)


def routes() -> dict[str, object]:
    """Every URL pattern of the project, as its full route text, with its pattern object."""

    def walk(patterns, prefix=""):
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                yield from walk(pattern.url_patterns, prefix + str(pattern.pattern))
            else:
                yield prefix + str(pattern.pattern), pattern

    return dict(walk(get_resolver().url_patterns))


# --- the world and the personas ---------------------------------------------------------------------


class Persona:
    """One identity: the client it uses for /api/ and the one for pages (the same for a session)."""

    def __init__(self, api: Client, pages: Client):
        self.api, self.pages = api, pages
        self.assignment = None  # the annotator's: the comparison it holds in the running study


def token_and_session(token: str) -> Persona:
    user = ApiToken.objects.get(key=token).user
    pages = Client()
    pages.force_login(user)
    return Persona(api=Client(headers={"Authorization": f"Token {token}"}), pages=pages)


@pytest.fixture
def personas(world) -> dict[str, Persona]:
    return make_personas(world)


def make_personas(world) -> dict[str, Persona]:
    anonymous = Client()
    annotator = Client()
    consent = annotator.post(f"/s/{RUNNING}/", {"consent": "yes"})
    assert (consent.status_code, consent["Location"]) == (302, f"/s/{RUNNING}/vote/")
    the_annotator = Persona(annotator, annotator)
    the_annotator.assignment = annotator.get(f"/api/studies/{RUNNING}/next/").json()["assignment"]
    return {
        "anonymous": Persona(anonymous, anonymous),
        "annotator": the_annotator,
        "owner_a": token_and_session(world.owner_a_token),
        "owner_b": token_and_session(world.owner_b_token),
        "staff": token_and_session(world.staff_token),
    }


def path_values(world, route: str, study: str | None) -> dict[str, str]:
    """A value for every parameter of ``route``: the study (by slug, or by id in the admin), owner A's
    submission, an object of the admin's model."""
    running = Study.objects.get(slug=RUNNING)
    values = {"slug": study or "", "submission_id": str(world.submission_a), "job_id": "1"}
    values["judge_id"] = str(world.judge_a)  # owner A's judge, which B must not see
    values["annotator_id"] = "999999"  # none: staff are told so (404) once the reason is given
    values["object_id"] = str(running.pk)
    admin_model = re.match(r"admin/(\w+)/(\w+)/<path:object_id>/", route)
    if admin_model:
        model = apps.get_model(admin_model.group(1), admin_model.group(2))
        if model is not Study:
            first = model._base_manager.order_by("pk").values_list("pk", flat=True).first()
            values["object_id"] = str(first or 1)  # none yet (groups, simulations): the admin says so
    values["content_type_id"] = str(ContentType.objects.get_for_model(Study).pk)
    values["id"] = str(get_user_model().objects.get(username="owner-a").pk)
    values["app_label"] = "collection"
    values["url"] = "nothing-here/"
    values["key"] = "no-such-invitation"  # an invitation link's key: a valid one is tested in test_invitations
    values["language"] = "de"
    return values


def concrete(route: str, values: dict[str, str]) -> str:
    """The URL of a route text (``path()`` converters and ``re_path()`` groups) with ``values``."""
    url = re.sub(r"\(\?P<(\w+)>[^)]*\)", lambda match: values[match.group(1)], route)
    url = re.sub(r"<(?:\w+:)?(\w+)>", lambda match: values[match.group(1)], url)
    return "/" + url.replace("^", "").replace("$", "")


def outcome(response, object_id: str) -> int | str:
    """The status, or "→ <path>" for a redirect (the admin object's id written <id>)."""
    if response.status_code in (301, 302):
        return "→ " + response["Location"].split("?")[0].replace(f"/{object_id}/", "/<id>/")
    return response.status_code


def request(client: Client, method: str, url: str, body: dict):
    if method == "GET":
        return client.get(url)
    if url.startswith("/api/"):
        return client.generic(method, url, json.dumps(body), content_type="application/json")
    return client.generic(method, url, "", content_type="application/x-www-form-urlencoded")


def body_for(route: str, personas) -> dict:
    """What unsafe API requests send: a vote on the annotator's own assignment (whoever sends it),
    otherwise nothing, so that a refusal for want of permission shows before any validation."""
    if route == "api/votes/":
        return {"assignment": personas["annotator"].assignment, "choice": "left"}
    return {}


def observed(world, personas, route: str, method: str):
    """{persona: outcome}, or {persona: {study: outcome}} for a route with a slug."""
    body = body_for(route, personas)

    def one(client, study):
        values = path_values(world, route, study)
        return outcome(request(client, method, concrete(route, values), body), values["object_id"])

    result = {}
    for name in PERSONAS:
        client = personas[name].api if route.startswith("api/") else personas[name].pages
        if "slug" in route:
            result[name] = {study: one(client, study) for study in STUDIES}
        else:
            result[name] = one(client, None)
    return result


def methods_of(pattern) -> list[str]:
    """The methods a route serves: a DRF view's own; GET and POST for a Django view (a page that does
    not take POST must refuse it, for everyone)."""
    view = getattr(pattern.callback, "cls", None)
    if view is None:
        return ["GET", "POST"]
    actions = getattr(pattern.callback, "actions", None)
    if actions:
        return sorted(method.upper() for method in actions)
    return sorted(
        method.upper()
        for method in view.http_method_names
        if hasattr(view, method) and method not in ("options", "head")
    )


ROUTES = routes()
CASES = [(route, method) for route, pattern in ROUTES.items() for method in methods_of(pattern)]


# --- the matrix -------------------------------------------------------------------------------------

ADMIN_LOGIN = "→ /admin/login/"
OWNERS_LOGIN = "→ /models/login/"


def everyone(outcome):
    return dict.fromkeys(PERSONAS, outcome)


def staff_only(staff, refused):
    """Staff get ``staff``; everybody else is ``refused``."""
    return {**dict.fromkeys(PERSONAS, refused), "staff": staff}


def staff_api(staff):
    """A staff endpoint of the API: staff get ``staff``; no credentials 401, a user who is not staff 403."""
    return {"anonymous": 401, "annotator": 401, "owner_a": 403, "owner_b": 403, "staff": staff}


def studies(finished, running, draft):
    return {FINISHED: finished, RUNNING: running, DRAFT: draft}


MATRIX = {
    "": {"GET": everyone(200), "POST": everyone(405)},
    "admin/": {"GET": staff_only(200, ADMIN_LOGIN), "POST": staff_only(200, ADMIN_LOGIN)},
    "admin/login/": {
        "GET": {"anonymous": 200, "annotator": 200, "owner_a": 200, "owner_b": 200, "staff": "→ /admin/"},
        "POST": everyone(200),
    },
    "admin/logout/": {
        "GET": {
            "anonymous": "→ /admin/",
            "annotator": "→ /admin/",
            "owner_a": "→ /admin/",
            "owner_b": "→ /admin/",
            "staff": 405,
        },
        "POST": {
            "anonymous": "→ /admin/",
            "annotator": "→ /admin/",
            "owner_a": "→ /admin/",
            "owner_b": "→ /admin/",
            "staff": 200,
        },
    },
    "admin/password_change/": {"GET": staff_only(200, ADMIN_LOGIN), "POST": staff_only(200, ADMIN_LOGIN)},
    "admin/password_change/done/": {
        "GET": staff_only(200, ADMIN_LOGIN),
        "POST": staff_only(405, ADMIN_LOGIN),
    },
    "admin/autocomplete/": {"GET": staff_only(403, ADMIN_LOGIN), "POST": staff_only(405, ADMIN_LOGIN)},
    "admin/jsi18n/": {"GET": staff_only(200, ADMIN_LOGIN), "POST": staff_only(405, ADMIN_LOGIN)},
    "admin/r/<path:content_type_id>/<path:object_id>/": {
        "GET": staff_only("→ http://testserver/s/running/", ADMIN_LOGIN),
        "POST": staff_only("→ http://testserver/s/running/", ADMIN_LOGIN),
    },
    "admin/metrics/invitation/": {"GET": staff_only(200, ADMIN_LOGIN), "POST": staff_only(200, ADMIN_LOGIN)},
    "admin/metrics/invitation/add/": {"GET": staff_only(200, ADMIN_LOGIN), "POST": staff_only(200, ADMIN_LOGIN)},
    "admin/metrics/invitation/<path:object_id>/history/": {
        "GET": staff_only("→ /admin/", ADMIN_LOGIN),
        "POST": staff_only("→ /admin/", ADMIN_LOGIN),
    },
    "admin/metrics/invitation/<path:object_id>/delete/": {
        "GET": staff_only("→ /admin/", ADMIN_LOGIN),
        "POST": staff_only("→ /admin/", ADMIN_LOGIN),
    },
    "admin/metrics/invitation/<path:object_id>/change/": {
        "GET": staff_only("→ /admin/", ADMIN_LOGIN),
        "POST": staff_only("→ /admin/", ADMIN_LOGIN),
    },
    "admin/metrics/invitation/<path:object_id>/": {
        "GET": staff_only("→ /admin/metrics/invitation/<id>/change/", ADMIN_LOGIN),
        "POST": staff_only("→ /admin/metrics/invitation/<id>/change/", ADMIN_LOGIN),
    },
    "admin/auth/group/": {"GET": staff_only(200, ADMIN_LOGIN), "POST": staff_only(200, ADMIN_LOGIN)},
    "admin/auth/group/add/": {"GET": staff_only(200, ADMIN_LOGIN), "POST": staff_only(200, ADMIN_LOGIN)},
    "admin/auth/group/<path:object_id>/history/": {
        "GET": staff_only("→ /admin/", ADMIN_LOGIN),
        "POST": staff_only("→ /admin/", ADMIN_LOGIN),
    },
    "admin/auth/group/<path:object_id>/delete/": {
        "GET": staff_only("→ /admin/", ADMIN_LOGIN),
        "POST": staff_only("→ /admin/", ADMIN_LOGIN),
    },
    "admin/auth/group/<path:object_id>/change/": {
        "GET": staff_only("→ /admin/", ADMIN_LOGIN),
        "POST": staff_only("→ /admin/", ADMIN_LOGIN),
    },
    "admin/auth/group/<path:object_id>/": {
        "GET": staff_only("→ /admin/auth/group/<id>/change/", ADMIN_LOGIN),
        "POST": staff_only("→ /admin/auth/group/<id>/change/", ADMIN_LOGIN),
    },
    "admin/auth/user/<id>/password/": {
        "GET": staff_only(200, ADMIN_LOGIN),
        "POST": staff_only(200, ADMIN_LOGIN),
    },
    "admin/auth/user/": {"GET": staff_only(200, ADMIN_LOGIN), "POST": staff_only(200, ADMIN_LOGIN)},
    "admin/auth/user/add/": {"GET": staff_only(200, ADMIN_LOGIN), "POST": staff_only(200, ADMIN_LOGIN)},
    "admin/auth/user/<path:object_id>/history/": {
        "GET": staff_only(200, ADMIN_LOGIN),
        "POST": staff_only(200, ADMIN_LOGIN),
    },
    "admin/auth/user/<path:object_id>/delete/": {
        "GET": staff_only(200, ADMIN_LOGIN),
        "POST": staff_only(200, ADMIN_LOGIN),
    },
    "admin/auth/user/<path:object_id>/change/": {
        "GET": staff_only(200, ADMIN_LOGIN),
        "POST": staff_only(200, ADMIN_LOGIN),
    },
    "admin/auth/user/<path:object_id>/": {
        "GET": staff_only("→ /admin/auth/user/<id>/change/", ADMIN_LOGIN),
        "POST": staff_only("→ /admin/auth/user/<id>/change/", ADMIN_LOGIN),
    },
    "admin/authtoken/tokenproxy/": {
        "GET": staff_only(200, ADMIN_LOGIN),
        "POST": staff_only(200, ADMIN_LOGIN),
    },
    "admin/authtoken/tokenproxy/add/": {
        "GET": staff_only(200, ADMIN_LOGIN),
        "POST": staff_only(200, ADMIN_LOGIN),
    },
    "admin/authtoken/tokenproxy/<path:object_id>/history/": {
        "GET": staff_only("→ /admin/", ADMIN_LOGIN),
        "POST": staff_only("→ /admin/", ADMIN_LOGIN),
    },
    "admin/authtoken/tokenproxy/<path:object_id>/delete/": {
        "GET": staff_only("→ /admin/", ADMIN_LOGIN),
        "POST": staff_only("→ /admin/", ADMIN_LOGIN),
    },
    "admin/authtoken/tokenproxy/<path:object_id>/change/": {
        "GET": staff_only("→ /admin/", ADMIN_LOGIN),
        "POST": staff_only("→ /admin/", ADMIN_LOGIN),
    },
    "admin/authtoken/tokenproxy/<path:object_id>/": {
        "GET": staff_only("→ /admin/authtoken/tokenproxy/<id>/change/", ADMIN_LOGIN),
        "POST": staff_only("→ /admin/authtoken/tokenproxy/<id>/change/", ADMIN_LOGIN),
    },
    "admin/scoring/simulationrun/": {
        "GET": staff_only(200, ADMIN_LOGIN),
        "POST": staff_only(200, ADMIN_LOGIN),
    },
    "admin/scoring/simulationrun/add/": {
        "GET": staff_only(403, ADMIN_LOGIN),
        "POST": staff_only(403, ADMIN_LOGIN),
    },
    "admin/scoring/simulationrun/<path:object_id>/history/": {
        "GET": staff_only("→ /admin/", ADMIN_LOGIN),
        "POST": staff_only("→ /admin/", ADMIN_LOGIN),
    },
    "admin/scoring/simulationrun/<path:object_id>/delete/": {
        "GET": staff_only("→ /admin/", ADMIN_LOGIN),
        "POST": staff_only("→ /admin/", ADMIN_LOGIN),
    },
    "admin/scoring/simulationrun/<path:object_id>/change/": {
        "GET": staff_only("→ /admin/", ADMIN_LOGIN),
        "POST": staff_only(403, ADMIN_LOGIN),
    },
    "admin/scoring/simulationrun/<path:object_id>/": {
        "GET": staff_only("→ /admin/scoring/simulationrun/<id>/change/", ADMIN_LOGIN),
        "POST": staff_only("→ /admin/scoring/simulationrun/<id>/change/", ADMIN_LOGIN),
    },
    "admin/scoring/itemscore/": {"GET": staff_only(200, ADMIN_LOGIN), "POST": staff_only(200, ADMIN_LOGIN)},
    "admin/scoring/itemscore/add/": {
        "GET": staff_only(403, ADMIN_LOGIN),
        "POST": staff_only(403, ADMIN_LOGIN),
    },
    "admin/scoring/itemscore/<path:object_id>/history/": {
        "GET": staff_only(200, ADMIN_LOGIN),
        "POST": staff_only(200, ADMIN_LOGIN),
    },
    "admin/scoring/itemscore/<path:object_id>/delete/": {
        "GET": staff_only(403, ADMIN_LOGIN),
        "POST": staff_only(403, ADMIN_LOGIN),
    },
    "admin/scoring/itemscore/<path:object_id>/change/": {
        "GET": staff_only(200, ADMIN_LOGIN),
        "POST": staff_only(403, ADMIN_LOGIN),
    },
    "admin/scoring/itemscore/<path:object_id>/": {
        "GET": staff_only("→ /admin/scoring/itemscore/<id>/change/", ADMIN_LOGIN),
        "POST": staff_only("→ /admin/scoring/itemscore/<id>/change/", ADMIN_LOGIN),
    },
    "admin/collection/study/<path:object_id>/tokens-upload/": {
        "GET": staff_only("→ /admin/collection/study/<id>/change/", ADMIN_LOGIN),
        "POST": staff_only("→ /admin/collection/study/<id>/change/", ADMIN_LOGIN),
    },
    # Checks may be added in any state (a check is never a vote): the form, for staff only.
    "admin/collection/study/<path:object_id>/checks-upload/": {
        "GET": staff_only(200, ADMIN_LOGIN),
        "POST": staff_only(200, ADMIN_LOGIN),
    },
    "admin/collection/study/<path:object_id>/items-generate/": {
        "GET": staff_only("→ /admin/collection/study/<id>/change/", ADMIN_LOGIN),
        "POST": staff_only("→ /admin/collection/study/<id>/change/", ADMIN_LOGIN),
    },
    "admin/collection/study/<path:object_id>/items-upload/": {
        "GET": staff_only("→ /admin/collection/study/<id>/change/", ADMIN_LOGIN),
        "POST": staff_only("→ /admin/collection/study/<id>/change/", ADMIN_LOGIN),
    },
    "admin/collection/study/<path:object_id>/start/": {
        "GET": staff_only("→ /admin/collection/study/<id>/change/", ADMIN_LOGIN),
        "POST": staff_only("→ /admin/collection/study/<id>/change/", ADMIN_LOGIN),
    },
    "admin/collection/study/<path:object_id>/close-ballot/": {
        "GET": staff_only(200, ADMIN_LOGIN),
        "POST": staff_only("→ /admin/collection/study/<id>/change/", ADMIN_LOGIN),
    },
    "admin/collection/study/<path:object_id>/duplicate/": {
        "GET": staff_only(200, ADMIN_LOGIN),
        "POST": staff_only(200, ADMIN_LOGIN),
    },
    "admin/collection/study/<path:object_id>/job/": {
        "GET": staff_only(200, ADMIN_LOGIN),
        "POST": staff_only(200, ADMIN_LOGIN),
    },
    "admin/collection/study/<path:object_id>/simulate/": {
        "GET": staff_only(200, ADMIN_LOGIN),
        "POST": staff_only(200, ADMIN_LOGIN),
    },
    "admin/collection/study/<path:object_id>/simulations/": {
        "GET": staff_only(200, ADMIN_LOGIN),
        "POST": staff_only(200, ADMIN_LOGIN),
    },
    "admin/collection/study/<path:object_id>/plan-target/": {
        "GET": staff_only(200, ADMIN_LOGIN),
        "POST": staff_only(200, ADMIN_LOGIN),
    },
    "admin/collection/study/<path:object_id>/plan-searches/": {
        "GET": staff_only(200, ADMIN_LOGIN),
        "POST": staff_only(200, ADMIN_LOGIN),
    },
    # Without ?search=<id> (or a posted search) there is no plan to apply: 404, saying so.
    "admin/collection/study/<path:object_id>/plan-apply/": {
        "GET": staff_only(404, ADMIN_LOGIN),
        "POST": staff_only(404, ADMIN_LOGIN),
    },
    "admin/collection/study/": {"GET": staff_only(200, ADMIN_LOGIN), "POST": staff_only(200, ADMIN_LOGIN)},
    "admin/collection/study/add/": {
        "GET": staff_only(200, ADMIN_LOGIN),
        "POST": staff_only(200, ADMIN_LOGIN),
    },
    "admin/collection/study/<path:object_id>/history/": {
        "GET": staff_only(200, ADMIN_LOGIN),
        "POST": staff_only(200, ADMIN_LOGIN),
    },
    "admin/collection/study/<path:object_id>/delete/": {
        "GET": staff_only(403, ADMIN_LOGIN),
        "POST": staff_only(403, ADMIN_LOGIN),
    },
    "admin/collection/study/<path:object_id>/change/": {
        "GET": staff_only(200, ADMIN_LOGIN),
        "POST": staff_only(200, ADMIN_LOGIN),
    },
    "admin/collection/study/<path:object_id>/": {
        "GET": staff_only("→ /admin/collection/study/<id>/change/", ADMIN_LOGIN),
        "POST": staff_only("→ /admin/collection/study/<id>/change/", ADMIN_LOGIN),
    },
    "admin/collection/studychange/": {
        "GET": staff_only(200, ADMIN_LOGIN),
        "POST": staff_only(200, ADMIN_LOGIN),
    },
    "admin/collection/studychange/add/": {
        "GET": staff_only(403, ADMIN_LOGIN),
        "POST": staff_only(403, ADMIN_LOGIN),
    },
    "admin/collection/studychange/<path:object_id>/history/": {
        "GET": staff_only("→ /admin/", ADMIN_LOGIN),
        "POST": staff_only("→ /admin/", ADMIN_LOGIN),
    },
    "admin/collection/studychange/<path:object_id>/delete/": {
        "GET": staff_only(403, ADMIN_LOGIN),
        "POST": staff_only(403, ADMIN_LOGIN),
    },
    "admin/collection/studychange/<path:object_id>/change/": {
        "GET": staff_only("→ /admin/", ADMIN_LOGIN),
        "POST": staff_only(403, ADMIN_LOGIN),
    },
    "admin/collection/studychange/<path:object_id>/": {
        "GET": staff_only("→ /admin/collection/studychange/<id>/change/", ADMIN_LOGIN),
        "POST": staff_only("→ /admin/collection/studychange/<id>/change/", ADMIN_LOGIN),
    },
    "admin/collection/semanticarea/": {
        "GET": staff_only(200, ADMIN_LOGIN),
        "POST": staff_only(200, ADMIN_LOGIN),
    },
    "admin/collection/semanticarea/add/": {
        "GET": staff_only(403, ADMIN_LOGIN),
        "POST": staff_only(403, ADMIN_LOGIN),
    },
    "admin/collection/semanticarea/<path:object_id>/history/": {
        "GET": staff_only(200, ADMIN_LOGIN),
        "POST": staff_only(200, ADMIN_LOGIN),
    },
    "admin/collection/semanticarea/<path:object_id>/delete/": {
        "GET": staff_only(403, ADMIN_LOGIN),
        "POST": staff_only(403, ADMIN_LOGIN),
    },
    "admin/collection/semanticarea/<path:object_id>/change/": {
        "GET": staff_only(200, ADMIN_LOGIN),
        "POST": staff_only(403, ADMIN_LOGIN),
    },
    "admin/collection/semanticarea/<path:object_id>/": {
        "GET": staff_only("→ /admin/collection/semanticarea/<id>/change/", ADMIN_LOGIN),
        "POST": staff_only("→ /admin/collection/semanticarea/<id>/change/", ADMIN_LOGIN),
    },
    "admin/collection/token/": {"GET": staff_only(200, ADMIN_LOGIN), "POST": staff_only(200, ADMIN_LOGIN)},
    "admin/collection/token/add/": {
        "GET": staff_only(403, ADMIN_LOGIN),
        "POST": staff_only(403, ADMIN_LOGIN),
    },
    "admin/collection/token/<path:object_id>/history/": {
        "GET": staff_only(200, ADMIN_LOGIN),
        "POST": staff_only(200, ADMIN_LOGIN),
    },
    "admin/collection/token/<path:object_id>/delete/": {
        "GET": staff_only(403, ADMIN_LOGIN),
        "POST": staff_only(403, ADMIN_LOGIN),
    },
    "admin/collection/token/<path:object_id>/change/": {
        "GET": staff_only(200, ADMIN_LOGIN),
        "POST": staff_only(403, ADMIN_LOGIN),
    },
    "admin/collection/token/<path:object_id>/": {
        "GET": staff_only("→ /admin/collection/token/<id>/change/", ADMIN_LOGIN),
        "POST": staff_only("→ /admin/collection/token/<id>/change/", ADMIN_LOGIN),
    },
    "admin/collection/item/": {"GET": staff_only(200, ADMIN_LOGIN), "POST": staff_only(200, ADMIN_LOGIN)},
    "admin/collection/item/add/": {"GET": staff_only(403, ADMIN_LOGIN), "POST": staff_only(403, ADMIN_LOGIN)},
    "admin/collection/item/<path:object_id>/history/": {
        "GET": staff_only(200, ADMIN_LOGIN),
        "POST": staff_only(200, ADMIN_LOGIN),
    },
    "admin/collection/item/<path:object_id>/delete/": {
        "GET": staff_only(403, ADMIN_LOGIN),
        "POST": staff_only(403, ADMIN_LOGIN),
    },
    "admin/collection/item/<path:object_id>/change/": {
        "GET": staff_only(200, ADMIN_LOGIN),
        "POST": staff_only(403, ADMIN_LOGIN),
    },
    "admin/collection/item/<path:object_id>/": {
        "GET": staff_only("→ /admin/collection/item/<id>/change/", ADMIN_LOGIN),
        "POST": staff_only("→ /admin/collection/item/<id>/change/", ADMIN_LOGIN),
    },
    "admin/collection/ballot/": {"GET": staff_only(200, ADMIN_LOGIN), "POST": staff_only(200, ADMIN_LOGIN)},
    "admin/collection/ballot/add/": {
        "GET": staff_only(403, ADMIN_LOGIN),
        "POST": staff_only(403, ADMIN_LOGIN),
    },
    "admin/collection/ballot/<path:object_id>/history/": {
        "GET": staff_only(200, ADMIN_LOGIN),
        "POST": staff_only(200, ADMIN_LOGIN),
    },
    "admin/collection/ballot/<path:object_id>/delete/": {
        "GET": staff_only(403, ADMIN_LOGIN),
        "POST": staff_only(403, ADMIN_LOGIN),
    },
    "admin/collection/ballot/<path:object_id>/change/": {
        "GET": staff_only(200, ADMIN_LOGIN),
        "POST": staff_only(403, ADMIN_LOGIN),
    },
    "admin/collection/ballot/<path:object_id>/": {
        "GET": staff_only("→ /admin/collection/ballot/<id>/change/", ADMIN_LOGIN),
        "POST": staff_only("→ /admin/collection/ballot/<id>/change/", ADMIN_LOGIN),
    },
    "admin/collection/annotator/": {
        "GET": staff_only(200, ADMIN_LOGIN),
        "POST": staff_only(200, ADMIN_LOGIN),
    },
    "admin/collection/annotator/add/": {
        "GET": staff_only(403, ADMIN_LOGIN),
        "POST": staff_only(403, ADMIN_LOGIN),
    },
    "admin/collection/annotator/<path:object_id>/history/": {
        "GET": staff_only(200, ADMIN_LOGIN),
        "POST": staff_only(200, ADMIN_LOGIN),
    },
    "admin/collection/annotator/<path:object_id>/delete/": {
        "GET": staff_only(403, ADMIN_LOGIN),
        "POST": staff_only(403, ADMIN_LOGIN),
    },
    "admin/collection/annotator/<path:object_id>/change/": {
        "GET": staff_only(200, ADMIN_LOGIN),
        "POST": staff_only(403, ADMIN_LOGIN),
    },
    "admin/collection/annotator/<path:object_id>/": {
        "GET": staff_only("→ /admin/collection/annotator/<id>/change/", ADMIN_LOGIN),
        "POST": staff_only("→ /admin/collection/annotator/<id>/change/", ADMIN_LOGIN),
    },
    "admin/collection/vote/": {"GET": staff_only(200, ADMIN_LOGIN), "POST": staff_only(200, ADMIN_LOGIN)},
    "admin/collection/vote/add/": {"GET": staff_only(403, ADMIN_LOGIN), "POST": staff_only(403, ADMIN_LOGIN)},
    "admin/collection/vote/<path:object_id>/history/": {
        "GET": staff_only(200, ADMIN_LOGIN),
        "POST": staff_only(200, ADMIN_LOGIN),
    },
    "admin/collection/vote/<path:object_id>/delete/": {
        "GET": staff_only(403, ADMIN_LOGIN),
        "POST": staff_only(403, ADMIN_LOGIN),
    },
    "admin/collection/vote/<path:object_id>/change/": {
        "GET": staff_only(200, ADMIN_LOGIN),
        "POST": staff_only(403, ADMIN_LOGIN),
    },
    "admin/collection/vote/<path:object_id>/": {
        "GET": staff_only("→ /admin/collection/vote/<id>/change/", ADMIN_LOGIN),
        "POST": staff_only("→ /admin/collection/vote/<id>/change/", ADMIN_LOGIN),
    },
    "admin/collection/exclusion/": {
        "GET": staff_only(200, ADMIN_LOGIN),
        "POST": staff_only(200, ADMIN_LOGIN),
    },
    "admin/collection/exclusion/add/": {
        "GET": staff_only(403, ADMIN_LOGIN),
        "POST": staff_only(403, ADMIN_LOGIN),
    },
    "admin/collection/exclusion/<path:object_id>/history/": {  # the world has none: back to the admin
        "GET": staff_only("→ /admin/", ADMIN_LOGIN),
        "POST": staff_only("→ /admin/", ADMIN_LOGIN),
    },
    "admin/collection/exclusion/<path:object_id>/delete/": {
        "GET": staff_only(403, ADMIN_LOGIN),
        "POST": staff_only(403, ADMIN_LOGIN),
    },
    "admin/collection/exclusion/<path:object_id>/change/": {
        "GET": staff_only("→ /admin/", ADMIN_LOGIN),
        "POST": staff_only(403, ADMIN_LOGIN),
    },
    "admin/collection/exclusion/<path:object_id>/": {
        "GET": staff_only("→ /admin/collection/exclusion/<id>/change/", ADMIN_LOGIN),
        "POST": staff_only("→ /admin/collection/exclusion/<id>/change/", ADMIN_LOGIN),
    },
    "admin/collection/excludedvote/": {
        "GET": staff_only(200, ADMIN_LOGIN),
        "POST": staff_only(200, ADMIN_LOGIN),
    },
    "admin/collection/excludedvote/add/": {
        "GET": staff_only(403, ADMIN_LOGIN),
        "POST": staff_only(403, ADMIN_LOGIN),
    },
    "admin/collection/excludedvote/<path:object_id>/history/": {  # the world has none: back to the admin
        "GET": staff_only("→ /admin/", ADMIN_LOGIN),
        "POST": staff_only("→ /admin/", ADMIN_LOGIN),
    },
    "admin/collection/excludedvote/<path:object_id>/delete/": {
        "GET": staff_only(403, ADMIN_LOGIN),
        "POST": staff_only(403, ADMIN_LOGIN),
    },
    "admin/collection/excludedvote/<path:object_id>/change/": {
        "GET": staff_only("→ /admin/", ADMIN_LOGIN),
        "POST": staff_only(403, ADMIN_LOGIN),
    },
    "admin/collection/excludedvote/<path:object_id>/": {
        "GET": staff_only("→ /admin/collection/excludedvote/<id>/change/", ADMIN_LOGIN),
        "POST": staff_only("→ /admin/collection/excludedvote/<id>/change/", ADMIN_LOGIN),
    },
    "admin/^(?P<app_label>auth|authtoken|axes|collection|scoring|metrics)/$": {
        "GET": staff_only(200, ADMIN_LOGIN),
        "POST": staff_only(200, ADMIN_LOGIN),
    },
    "admin/(?P<url>.*)$": {"GET": staff_only(404, ADMIN_LOGIN), "POST": staff_only(404, ADMIN_LOGIN)},
    "s/<slug:slug>/": {"GET": everyone(200), "POST": everyone(studies("→ /s/finished/", 400, "→ /s/draft/"))},
    "s/<slug:slug>/vote/": {
        "GET": {
            "anonymous": studies("→ /s/finished/", "→ /s/running/", "→ /s/draft/"),
            "annotator": studies("→ /s/finished/", 200, "→ /s/draft/"),
            "owner_a": studies("→ /s/finished/", "→ /s/running/", "→ /s/draft/"),
            "owner_b": studies("→ /s/finished/", "→ /s/running/", "→ /s/draft/"),
            "staff": studies("→ /s/finished/", "→ /s/running/", "→ /s/draft/"),
        },
        "POST": {
            "anonymous": studies("→ /s/finished/", "→ /s/running/", "→ /s/draft/"),
            "annotator": studies("→ /s/finished/", 400, "→ /s/draft/"),
            "owner_a": studies("→ /s/finished/", "→ /s/running/", "→ /s/draft/"),
            "owner_b": studies("→ /s/finished/", "→ /s/running/", "→ /s/draft/"),
            "staff": studies("→ /s/finished/", "→ /s/running/", "→ /s/draft/"),
        },
    },
    # Finish before the study's minimum of judgements (the annotator has none): 409 with how many remain.
    "s/<slug:slug>/finish/": {
        "GET": everyone(405),
        "POST": {
            **everyone(studies("→ /s/finished/", "→ /s/running/", "→ /s/draft/")),
            "annotator": studies("→ /s/finished/", 409, "→ /s/draft/"),
        },
    },
    # The lease given back: only a consented annotator's own (no assignment posted here: 400).
    "s/catalog/<str:language>.js": {"GET": everyone(200), "POST": everyone(405)},
    "admin/collection/checktranslation/": {
        "GET": staff_only(200, ADMIN_LOGIN),
        "POST": staff_only(200, ADMIN_LOGIN),
    },
    "admin/collection/checktranslation/add/": {
        "GET": staff_only(200, ADMIN_LOGIN),
        "POST": staff_only(200, ADMIN_LOGIN),
    },
    "admin/collection/checktranslation/<path:object_id>/history/": {
        "GET": staff_only("→ /admin/", ADMIN_LOGIN),
        "POST": staff_only("→ /admin/", ADMIN_LOGIN),
    },
    "admin/collection/checktranslation/<path:object_id>/delete/": {
        "GET": staff_only("→ /admin/", ADMIN_LOGIN),
        "POST": staff_only("→ /admin/", ADMIN_LOGIN),
    },
    "admin/collection/checktranslation/<path:object_id>/change/": {
        "GET": staff_only("→ /admin/", ADMIN_LOGIN),
        "POST": staff_only("→ /admin/", ADMIN_LOGIN),
    },
    "admin/collection/checktranslation/<path:object_id>/": {
        "GET": staff_only("→ /admin/collection/checktranslation/<id>/change/", ADMIN_LOGIN),
        "POST": staff_only("→ /admin/collection/checktranslation/<id>/change/", ADMIN_LOGIN),
    },
    "s/<slug:slug>/release/": {
        "GET": everyone(405),
        "POST": {**everyone(403), "annotator": studies(403, 400, 403)},
    },
    "api/studies/<slug:slug>/finish/": {
        "POST": {**everyone(403), "annotator": studies(403, 409, 403)},
    },
    "api/auth/token/": {"POST": everyone(400)},
    "api/studies/<slug:slug>/next/": {
        "GET": {
            "anonymous": 403,
            "annotator": studies(403, 200, 403),
            "owner_a": 403,
            "owner_b": 403,
            "staff": 403,
        }
    },
    "api/votes/": {
        "POST": {"anonymous": 404, "annotator": 201, "owner_a": 404, "owner_b": 404, "staff": 404}
    },
    "api/^studies/$": {"GET": staff_api(200), "POST": staff_api(400)},
    "api/^studies/(?P<slug>[-a-zA-Z0-9_]+)/$": {
        "DELETE": staff_api(studies(409, 409, 204)),
        "GET": staff_api(200),
        "PATCH": staff_api(200),
        "PUT": staff_api(400),
    },
    "api/^studies/(?P<slug>[-a-zA-Z0-9_]+)/close-ballot/$": {"POST": staff_api(studies(409, 202, 409))},
    "api/^studies/(?P<slug>[-a-zA-Z0-9_]+)/duplicate/$": {"POST": staff_api(201)},
    "api/^studies/(?P<slug>[-a-zA-Z0-9_]+)/exclusions/$": {"GET": staff_api(200)},
    # Without a body: staff get 404 for an annotator the study lacks (the reason is checked by the service).
    "api/^studies/(?P<slug>[-a-zA-Z0-9_]+)/annotators/(?P<annotator_id>[0-9]+)/exclusion/$": {
        "DELETE": staff_api(404),
        "POST": staff_api(404),
    },
    "api/^studies/(?P<slug>[-a-zA-Z0-9_]+)/items/$": {"GET": staff_api(200)},
    "api/^studies/(?P<slug>[-a-zA-Z0-9_]+)/items/generate/$": {
        "POST": staff_api(studies(409, 409, 201))
    },
    "api/^studies/(?P<slug>[-a-zA-Z0-9_]+)/items/upload/$": {"POST": staff_api(415)},
    "api/^studies/(?P<slug>[-a-zA-Z0-9_]+)/jobs/(?P<job_id>[0-9]+)/$": {"GET": staff_api(404)},
    "api/^studies/(?P<slug>[-a-zA-Z0-9_]+)/plan/$": {"GET": staff_api(200)},
    "api/^studies/(?P<slug>[-a-zA-Z0-9_]+)/progress/$": {"GET": staff_api(200)},
    "api/^studies/(?P<slug>[-a-zA-Z0-9_]+)/results/$": {"GET": staff_api(studies(200, 409, 409))},
    "api/^studies/(?P<slug>[-a-zA-Z0-9_]+)/start/$": {"POST": staff_api(studies(409, 409, 200))},
    "api/^studies/(?P<slug>[-a-zA-Z0-9_]+)/tokens/$": {
        "GET": staff_api(200),
        "POST": staff_api(415),
    },
    "api/studies/<slug:slug>/pairs/": {
        "GET": {
            "anonymous": 401,
            "annotator": 401,
            "owner_a": studies(200, 409, 409),
            "owner_b": studies(200, 409, 409),
            "staff": studies(200, 409, 409),
        }
    },
    "api/studies/<slug:slug>/submissions/": {
        "POST": {"anonymous": 401, "annotator": 401, "owner_a": 400, "owner_b": 400, "staff": 400}
    },
    # A seal may be made at any state of the study (that is its point); the body here is empty: 400.
    "api/studies/<slug:slug>/seals/": {
        "GET": {"anonymous": 401, "annotator": 401, "owner_a": 200, "owner_b": 200, "staff": 200},
        "POST": {"anonymous": 401, "annotator": 401, "owner_a": 400, "owner_b": 400, "staff": 400},
    },
    "api/studies/<slug:slug>/leaderboard/": {"GET": everyone(studies(200, 409, 409))},
    "api/studies/<slug:slug>/live/": {"GET": staff_api(200)},
    "api/studies/<slug:slug>/annotators/": {"GET": everyone(studies(200, 409, 409))},
    # Public as the card page is; a draft has no card yet (409), as the .md and .json downloads answer.
    "api/studies/<slug:slug>/card/": {"GET": everyone(studies(200, 200, 409))},
    # The public dataset is the researchers' to publish: staff only, a finished study only (409 before).
    "api/studies/<slug:slug>/hub-dataset/": {"GET": staff_api(studies(200, 409, 409))},
    "api/submissions/": {
        "GET": {"anonymous": 401, "annotator": 401, "owner_a": 200, "owner_b": 200, "staff": 200}
    },
    "api/studies/<slug:slug>/judge-pairs/": {
        "GET": {
            "anonymous": 401,
            "annotator": 401,
            "owner_a": studies(200, 409, 409),
            "owner_b": studies(200, 409, 409),
            "staff": studies(200, 409, 409),
        }
    },
    # The body here is empty: 400 before the study's state is looked at, as for submissions.
    "api/studies/<slug:slug>/judges/": {
        "POST": {"anonymous": 401, "annotator": 401, "owner_a": 400, "owner_b": 400, "staff": 400}
    },
    "api/studies/<slug:slug>/judges/leaderboard/": {"GET": everyone(studies(200, 409, 409))},
    "api/judges/": {"GET": {"anonymous": 401, "annotator": 401, "owner_a": 200, "owner_b": 200, "staff": 200}},
    "api/judges/<int:judge_id>/": {
        "GET": {"anonymous": 401, "annotator": 401, "owner_a": 200, "owner_b": 404, "staff": 404}
    },
    "api/judges/<int:judge_id>/evaluation/": {
        "GET": {"anonymous": 401, "annotator": 401, "owner_a": 200, "owner_b": 404, "staff": 404}
    },
    "api/submissions/<int:submission_id>/": {
        "GET": {"anonymous": 401, "annotator": 401, "owner_a": 200, "owner_b": 404, "staff": 404}
    },
    "api/submissions/<int:submission_id>/evaluation/": {
        "GET": {"anonymous": 401, "annotator": 401, "owner_a": 200, "owner_b": 404, "staff": 404}
    },
    "studies/<slug:slug>/results/": {
        "GET": staff_only(200, ADMIN_LOGIN),
        "POST": staff_only(200, ADMIN_LOGIN),
    },
    "studies/<slug:slug>/live/": {
        "GET": staff_only(200, ADMIN_LOGIN),
        "POST": staff_only(200, ADMIN_LOGIN),
    },
    "studies/<slug:slug>/export/dataset.csv": {
        "GET": staff_only(200, ADMIN_LOGIN),
        "POST": staff_only(200, ADMIN_LOGIN),
    },
    "studies/<slug:slug>/export/dataset.json": {
        "GET": staff_only(200, ADMIN_LOGIN),
        "POST": staff_only(200, ADMIN_LOGIN),
    },
    "studies/<slug:slug>/export/votes.csv": {
        "GET": staff_only(200, ADMIN_LOGIN),
        "POST": staff_only(200, ADMIN_LOGIN),
    },
    "studies/<slug:slug>/export/annotators.csv": {
        "GET": staff_only(200, ADMIN_LOGIN),
        "POST": staff_only(200, ADMIN_LOGIN),
    },
    "studies/<slug:slug>/export/checks.csv": {
        "GET": staff_only(200, ADMIN_LOGIN),
        "POST": staff_only(200, ADMIN_LOGIN),
    },
    "studies/<slug:slug>/export/without-excluded.csv": {
        "GET": staff_only(200, ADMIN_LOGIN),
        "POST": staff_only(200, ADMIN_LOGIN),
    },
    "studies/<slug:slug>/export/hub-dataset.zip": {
        "GET": staff_only(studies(200, 409, 409), ADMIN_LOGIN),
        "POST": staff_only(405, ADMIN_LOGIN),
    },
    "models/": {"GET": everyone(200), "POST": everyone(405)},
    "models/login/": {"GET": everyone(200), "POST": everyone(200)},
    "models/logout/": {"GET": everyone(405), "POST": everyone("→ /models/")},
    "models/join/<str:key>/": {"GET": everyone(404), "POST": everyone(404)},  # no such invitation
    "models/signup/": {"GET": everyone(404), "POST": everyone(404)},  # MODEL_OWNER_SIGNUP is off by default
    "models/studies/<slug:slug>/leaderboard/": {
        "GET": everyone(studies(200, 409, 409)),
        "POST": everyone(405),
    },
    "models/studies/<slug:slug>/leaderboard.svg": {  # public, as the leaderboard whose plot it is
        "GET": everyone(studies(200, 409, 409)),
        "POST": everyone(405),
    },
    "models/studies/<slug:slug>/submit/": {
        "GET": {
            "anonymous": OWNERS_LOGIN,
            "annotator": OWNERS_LOGIN,
            "owner_a": studies(200, 409, 409),
            "owner_b": studies(200, 409, 409),
            "staff": studies(200, 409, 409),
        },
        "POST": {
            "anonymous": OWNERS_LOGIN,
            "annotator": OWNERS_LOGIN,
            "owner_a": studies(400, 409, 409),
            "owner_b": studies(400, 409, 409),
            "staff": studies(400, 409, 409),
        },
    },
    "models/studies/<slug:slug>/judges/submit/": {
        "GET": {
            "anonymous": OWNERS_LOGIN,
            "annotator": OWNERS_LOGIN,
            "owner_a": studies(200, 409, 409),
            "owner_b": studies(200, 409, 409),
            "staff": studies(200, 409, 409),
        },
        "POST": {
            "anonymous": OWNERS_LOGIN,
            "annotator": OWNERS_LOGIN,
            "owner_a": studies(400, 409, 409),
            "owner_b": studies(400, 409, 409),
            "staff": studies(400, 409, 409),
        },
    },
    "models/studies/<slug:slug>/judge-pairs.csv": {
        "GET": {
            "anonymous": OWNERS_LOGIN,
            "annotator": OWNERS_LOGIN,
            "owner_a": studies(200, 409, 409),
            "owner_b": studies(200, 409, 409),
            "staff": studies(200, 409, 409),
        },
        "POST": {
            "anonymous": OWNERS_LOGIN,
            "annotator": OWNERS_LOGIN,
            "owner_a": 405,
            "owner_b": 405,
            "staff": 405,
        },
    },
    "models/studies/<slug:slug>/judges/leaderboard/": {
        "GET": everyone(studies(200, 409, 409)),
        "POST": everyone(405),
    },
    "models/judges/<int:judge_id>/": {
        "GET": {
            "anonymous": OWNERS_LOGIN,
            "annotator": OWNERS_LOGIN,
            "owner_a": 200,
            "owner_b": 404,
            "staff": 404,
        },
        "POST": {
            "anonymous": OWNERS_LOGIN,
            "annotator": OWNERS_LOGIN,
            "owner_a": 405,
            "owner_b": 405,
            "staff": 405,
        },
    },
    "models/studies/<slug:slug>/items.csv": {
        "GET": {
            "anonymous": OWNERS_LOGIN,
            "annotator": OWNERS_LOGIN,
            "owner_a": studies(200, 409, 409),
            "owner_b": studies(200, 409, 409),
            "staff": studies(200, 409, 409),
        },
        "POST": {
            "anonymous": OWNERS_LOGIN,
            "annotator": OWNERS_LOGIN,
            "owner_a": 405,
            "owner_b": 405,
            "staff": 405,
        },
    },
    "models/studies/<slug:slug>/card/": {"GET": everyone(200), "POST": everyone(200)},
    "models/studies/<slug:slug>/card.md": {
        "GET": everyone(studies(200, 200, 409)),
        "POST": everyone(studies(200, 200, 409)),
    },
    "models/studies/<slug:slug>/card.json": {
        "GET": everyone(studies(200, 200, 409)),
        "POST": everyone(studies(200, 200, 409)),
    },
    "models/submissions/<int:submission_id>/": {
        "GET": {
            "anonymous": OWNERS_LOGIN,
            "annotator": OWNERS_LOGIN,
            "owner_a": 200,
            "owner_b": 404,
            "staff": 404,
        },
        "POST": {
            "anonymous": OWNERS_LOGIN,
            "annotator": OWNERS_LOGIN,
            "owner_a": 405,
            "owner_b": 405,
            "staff": 405,
        },
    },
    "healthz/": {"GET": everyone(200), "POST": everyone(200)},
    "favicon.ico": {"GET": everyone("→ /static/favicon.ico"), "POST": everyone("→ /static/favicon.ico")},
    # Prometheus' scrape: a bearer token, never a login (the tests set no METRICS_TOKEN: the endpoint is off).
    "metrics": {"GET": everyone(403), "POST": everyone(405)},
    "api/schema/": {"GET": everyone(200)},
    "api/docs/": {"GET": everyone(200)},
    "api/redoc/": {"GET": everyone(200)},
    "^api/": {"GET": everyone(404), "POST": everyone(404)},
}


def read_only_admin(model: str) -> dict:
    """The routes of a django-axes record in the admin: staff list and delete them, nobody adds one (the
    world has none, so an object's page sends staff back to the admin's index)."""
    prefix = f"admin/axes/{model}/"
    return {
        prefix: {"GET": staff_only(200, ADMIN_LOGIN), "POST": staff_only(200, ADMIN_LOGIN)},
        f"{prefix}add/": {"GET": staff_only(403, ADMIN_LOGIN), "POST": staff_only(403, ADMIN_LOGIN)},
        **{
            f"{prefix}<path:object_id>/{page}/": {
                "GET": staff_only("→ /admin/", ADMIN_LOGIN),
                "POST": staff_only("→ /admin/", ADMIN_LOGIN),
            }
            for page in ("history", "delete", "change")
        },
        f"{prefix}<path:object_id>/": {
            "GET": staff_only(f"→ /{prefix}<id>/change/", ADMIN_LOGIN),
            "POST": staff_only(f"→ /{prefix}<id>/change/", ADMIN_LOGIN),
        },
    }


# The failed logins of django-axes (LOGIN_FAILURE_LIMIT), where staff lift a lockout.
for axes_model in ("accessattempt", "accesslog", "accessfailurelog"):
    MATRIX |= read_only_admin(axes_model)


def test_every_url_of_the_project_has_an_entry_and_every_method_it_serves_too():
    assert set(ROUTES) == set(MATRIX), "a new URL needs its line in MATRIX; a removed one, its line removed"
    assert {(route, method) for route, methods in MATRIX.items() for method in methods} == set(CASES)


@pytest.mark.parametrize(("route", "method"), CASES, ids=[f"{method} /{route}" for route, method in CASES])
def test_who_may_do_what(world, personas, route, method):
    expected = {
        persona: outcomes
        if "slug" not in route or isinstance(outcomes, dict)
        else dict.fromkeys(STUDIES, outcomes)
        for persona, outcomes in MATRIX[route][method].items()
    }

    assert observed(world, personas, route, method) == expected

"""The home page: the public studies with their links; for staff, drafts, results, the admin and the API."""

from datetime import UTC, datetime
from html.parser import HTMLParser

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from collection.models import Study

pytestmark = pytest.mark.django_db


class Links(HTMLParser):
    """Every link of a page as (text, href): all of them, and those of each table row with an id."""

    def __init__(self, html: str):
        super().__init__()
        self.all: list[tuple[str, str]] = []
        self.rows: dict[str, list[tuple[str, str]]] = {}
        self._row: str | None = None
        self._href: str | None = None
        self._text: list[str] = []
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "tr" and attrs.get("id"):
            self._row = attrs["id"]
            self.rows[self._row] = []
        elif tag == "a":
            self._href, self._text = attrs.get("href"), []

    def handle_data(self, data):
        if self._href is not None:
            self._text.append(data)

    def handle_endtag(self, tag):
        if tag == "a" and self._href is not None:
            link = (" ".join("".join(self._text).split()), self._href)
            self.all.append(link)
            if self._row:
                self.rows[self._row].append(link)
            self._href = None
        elif tag == "tr":
            self._row = None


def study(slug: str, status: str, **fields) -> Study:
    return Study.objects.create(name=slug.replace("-", " ").title(), slug=slug, status=status, **fields)


@pytest.fixture
def studies() -> dict[str, Study]:
    return {
        "running": study("word-pairs", Study.Status.RUNNING),
        "finished": study("old-pairs", Study.Status.FINISHED),
        "draft": study("next-pairs", Study.Status.DRAFT),
    }


@pytest.fixture
def staff_client(django_user_model) -> Client:
    client = Client()
    client.force_login(django_user_model.objects.create_user("researcher", is_staff=True))
    return client


def test_it_lists_the_running_and_finished_studies_with_their_public_links(client, studies):
    response = client.get("/")
    assert response.status_code == 200
    links = Links(response.content.decode())
    assert links.rows == {
        "study-word-pairs": [("Take part", "/s/word-pairs/")],
        "study-old-pairs": [
            ("Leaderboard", "/models/studies/old-pairs/leaderboard/"),
            ("Instrument card", "/models/studies/old-pairs/card/"),
        ],
    }


@pytest.mark.parametrize("logged_in", [False, True], ids=["anonymous", "model owner"])
def test_it_hides_drafts_and_staff_links_from_the_public(client, studies, django_user_model, logged_in):
    if logged_in:
        client.force_login(django_user_model.objects.create_user("ada"))  # a model owner, not staff
    html = client.get("/").content.decode()
    assert "Next Pairs" not in html
    hrefs = [href for _, href in Links(html).all]
    assert [href for href in hrefs if href.startswith(("/admin/", "/studies/", "/api/"))] == []


def test_staff_see_drafts_results_the_admin_and_the_api_docs(staff_client, studies):
    links = Links(staff_client.get("/").content.decode())
    for name, item in studies.items():
        row = links.rows[f"study-{item.slug}"]
        assert row[-2:] == [
            ("Results", f"/studies/{item.slug}/results/"),
            ("Admin", f"/admin/collection/study/{item.pk}/change/"),
        ], name
    assert set(links.rows) == {"study-word-pairs", "study-old-pairs", "study-next-pairs"}
    assert {("Admin", "/admin/"), ("API docs", "/api/docs/")} <= set(links.all)


def test_a_study_with_signed_links_gives_no_public_voting_link(client):
    study("invited", Study.Status.RUNNING, require_signed_links=True)
    links = Links(client.get("/").content.decode())
    assert links.rows == {"study-invited": []}


def test_it_says_so_when_there_is_no_study(client):
    html = client.get("/").content.decode()
    assert 'id="no-running-studies"' in html
    assert 'id="no-finished-studies"' in html


@pytest.mark.parametrize("who", ["anonymous", "staff"])
def test_the_number_of_queries_does_not_grow_with_the_studies(client, staff_client, who):
    visitor = staff_client if who == "staff" else client
    counts = []
    for batch in range(2):
        for number, status in enumerate(Study.Status.values * 3):
            study(f"{status}-{batch}-{number}", status)
        with CaptureQueriesContext(connection) as queries:
            assert visitor.get("/").status_code == 200
        counts.append(len(queries))
    # The studies in one query; staff add their session and user.
    assert counts == ([1, 1] if who == "anonymous" else [3, 3])


def test_the_admins_view_site_link_is_the_home_page(staff_client):
    links = Links(staff_client.get("/admin/").content.decode())
    assert ("View site", "/") in links.all
    assert staff_client.get("/").status_code == 200


def test_its_dates_are_readable_days_in_time_elements_with_the_exact_instant(staff_client, studies):
    Study.objects.filter(pk=studies["running"].pk).update(started_at=datetime(2026, 11, 2, 8, 5, tzinfo=UTC))
    Study.objects.filter(pk=studies["finished"].pk).update(
        started_at=datetime(2026, 10, 1, 9, 0, tzinfo=UTC),
        finished_at=datetime(2026, 10, 28, 17, 45, 30, tzinfo=UTC),
    )
    Study.objects.filter(pk=studies["draft"].pk).update(created_at=datetime(2026, 11, 27, 23, 59, tzinfo=UTC))
    never_started = study("stalled-pairs", Study.Status.RUNNING)

    html = staff_client.get("/").content.decode()

    def date_cell(slug: str) -> str:
        row = html[html.index(f'<tr id="study-{slug}">') :]
        return row[row.index("<td>") + 4 : row.index("</td>")]

    assert date_cell("word-pairs") == '<time datetime="2026-11-02T08:05:00+00:00">2 Nov 2026</time>'
    assert date_cell("old-pairs") == '<time datetime="2026-10-28T17:45:30+00:00">28 Oct 2026</time>'
    assert date_cell("next-pairs") == '<time datetime="2026-11-27T23:59:00+00:00">27 Nov 2026</time>'
    assert date_cell(never_started.slug) == "—"

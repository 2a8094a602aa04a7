"""One rule set for a study's settings in each state, the same in the admin and the API, and the audit
trail of every change of a started study: who, when, through which channel, from what to what."""

import threading
import time
from datetime import UTC

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.models import ProtectedError
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from collection.forms import StudyAdminForm
from collection.lifecycle import study_start
from collection.models import Study, StudyChange
from collection.serializers import StudySerializer
from collection.studies import STUDY_SETTINGS, study_update
from common.errors import StudyStateError
from metrics.card_render import card_markdown
from metrics.instrument import instrument_card
from tests.factories import annotators, make_study, vote_until

pytestmark = pytest.mark.django_db

ALL, UNTIL_FINISHED, DRAFT_ONLY = {"draft", "running", "finished"}, {"draft", "running"}, {"draft"}
# The rule table, as docs/researchers.md states it: the states in which each setting may change.
EDITABLE_IN = {
    "name": ALL,
    "slug": DRAFT_ONLY,
    "question": UNTIL_FINISHED,
    "instructions": UNTIL_FINISHED,
    "language": UNTIL_FINISHED,
    "allow_ties": DRAFT_ONLY,
    "ranking_scope": DRAFT_ONLY,
    "ballot_count": DRAFT_ONLY,
    "keep_fraction": DRAFT_ONLY,
    "appearances": DRAFT_ONLY,
    "comparison_budget": DRAFT_ONLY,
    "seconds_per_comparison": DRAFT_ONLY,
    "seed": DRAFT_ONLY,
    "lease_seconds": UNTIL_FINISHED,
    "votes_per_annotator_per_ballot": UNTIL_FINISHED,
    "ballot_deadline_hours": UNTIL_FINISHED,
    "completion_redirect_url": UNTIL_FINISHED,
    "completion_code": UNTIL_FINISHED,
    "require_signed_links": UNTIL_FINISHED,
    "no_work_code": UNTIL_FINISHED,
    "screened_out_code": UNTIL_FINISHED,
    "exclude_flagged_annotators": UNTIL_FINISHED,
    "max_wait_seconds": UNTIL_FINISHED,
    "min_judgements": UNTIL_FINISHED,
    "participant_codes": UNTIL_FINISHED,
    "pay_per_hour": UNTIL_FINISHED,
    "pay_currency": UNTIL_FINISHED,
    "minimum_coverage": ALL,
    "max_variants_per_owner": ALL,
    "relevant_top_k": ALL,
    "hidden_share": DRAFT_ONLY,
    "quality_fast_ms": ALL,
    "quality_max_fast_share": ALL,
    "quality_position_alpha": ALL,
    "quality_min_majority_agreement": ALL,
    "quality_min_self_agreement": ALL,
    "quality_max_failed_checks": ALL,
    "check_rate": UNTIL_FINISHED,
    "score_model": UNTIL_FINISHED,
}
# A valid new value of each setting of the admin form and the API, for the study of make_study()
# (15 items, n_b = 3, α = 0.5, M = 4). A budget replaces M: both change together.
CHANGES = {
    "name": {"name": "Renamed"},
    "slug": {"slug": "{slug}-renamed"},  # each study its own: a slug is unique
    "question": {"question": "Which pair is closer?"},
    "instructions": {"instructions": "Pick the closer pair."},
    "language": {"language": "de"},
    "allow_ties": {"allow_ties": True},
    "ranking_scope": {"ranking_scope": "per_area"},
    "ballot_count": {"ballot_count": 2},
    "keep_fraction": {"keep_fraction": 0.6},
    "appearances": {"appearances": 6},
    "comparison_budget": {"appearances": None, "comparison_budget": 100},
    "seconds_per_comparison": {"seconds_per_comparison": 8.0},
    "seed": {"seed": 12345},
    "lease_seconds": {"lease_seconds": 120},
    "votes_per_annotator_per_ballot": {"votes_per_annotator_per_ballot": 1},
    "ballot_deadline_hours": {"ballot_deadline_hours": 48},
    "completion_redirect_url": {"completion_redirect_url": "https://crowd.example/done?cc=C0DE"},
    "completion_code": {"completion_code": "NEWCODE"},
    "require_signed_links": {"require_signed_links": True},
    "no_work_code": {"no_work_code": "NOWORK1"},
    "screened_out_code": {"screened_out_code": "SCREEN1"},
    "exclude_flagged_annotators": {"exclude_flagged_annotators": True},
    "max_wait_seconds": {"max_wait_seconds": 600},
    "min_judgements": {"min_judgements": 40},
    "participant_codes": {"participant_codes": True},
    "pay_per_hour": {"pay_per_hour": 9.5},
    "pay_currency": {"pay_currency": "USD"},
    "minimum_coverage": {"minimum_coverage": 0.8},
    "max_variants_per_owner": {"max_variants_per_owner": 3},
    "relevant_top_k": {"relevant_top_k": 5},
    "hidden_share": {"hidden_share": 0.3},
    "quality_fast_ms": {"quality_fast_ms": 1500},
    "quality_max_fast_share": {"quality_max_fast_share": 0.1},
    "quality_position_alpha": {"quality_position_alpha": 0.01},
    "quality_min_majority_agreement": {"quality_min_majority_agreement": None},
    "quality_min_self_agreement": {"quality_min_self_agreement": 0.75},
    "quality_max_failed_checks": {"quality_max_failed_checks": 3},
    "check_rate": {"check_rate": 0.2},
    "score_model": {"score_model": "bradley_terry"},
}


@pytest.fixture
def researcher(django_user_model):
    return django_user_model.objects.create_user("grace", password="x", is_staff=True, is_superuser=True)


@pytest.fixture
def researcher_client(researcher) -> Client:
    client = Client()
    client.force_login(researcher)
    return client


def changes_for(setting: str, study: Study) -> dict:
    return {
        name: value.format(slug=study.slug) if isinstance(value, str) else value
        for name, value in CHANGES[setting].items()
    }


def study_in(state: str, **fields) -> Study:
    study = make_study(start=state != "draft", **fields)
    if state == "finished":
        vote_until(study, voters=annotators(study, 5))
        study.refresh_from_db()
    assert study.status == state
    return study


def api_url(study: Study) -> str:
    return f"/api/studies/{study.slug}/"


def change_url(study: Study) -> str:
    return reverse("admin:collection_study_change", args=[study.pk])


def settings_of(study: Study) -> dict:
    study = Study.objects.get(pk=study.pk)
    return {name: getattr(study, name) for name in STUDY_SETTINGS}


def admin_form(client: Client, study: Study):
    return client.get(change_url(study)).context["adminform"].form


def admin_post(client: Client, study: Study, changes: dict):
    """Submit the study's change page as a browser would: every field of the form, some changed."""
    form = admin_form(client, study)
    values = {name: form.initial.get(name, field.initial) for name, field in form.fields.items()}
    values.update({name: value for name, value in changes.items() if name in form.fields})
    data = {name: "" if value is None else value for name, value in values.items() if value is not False}
    data |= {"checks-TOTAL_FORMS": "0", "checks-INITIAL_FORMS": "0"}  # the inline of the study's checks
    data |= {"translations-TOTAL_FORMS": "0", "translations-INITIAL_FORMS": "0"}  # and of its translations
    return client.post(
        change_url(study), {name: "on" if value is True else value for name, value in data.items()}
    )


# --- one rule set ----------------------------------------------------------------------------------


def test_the_rule_table_is_the_one_the_readme_states():
    assert {name: set(setting.editable_in) for name, setting in STUDY_SETTINGS.items()} == EDITABLE_IN
    assert set(STUDY_SETTINGS) <= {field.name for field in Study._meta.concrete_fields}


def test_every_field_the_admin_and_the_api_can_write_has_a_rule():
    serializer = StudySerializer()
    api_writable = {name for name, field in serializer.fields.items() if not field.read_only}
    admin_writable = set(StudyAdminForm.base_fields)
    assert api_writable == admin_writable == set(CHANGES)
    assert api_writable <= set(STUDY_SETTINGS)


@pytest.mark.parametrize("state", ["draft", "running", "finished"])
@pytest.mark.parametrize("setting", list(CHANGES))
def test_the_admin_and_the_api_allow_and_refuse_the_same_settings_in_each_state(
    researcher_client, state, setting
):
    allowed = state in EDITABLE_IN[setting]
    through_api, through_admin = study_in(state), study_in(state)
    changes = {
        through_api: changes_for(setting, through_api),
        through_admin: changes_for(setting, through_admin),
    }

    response = researcher_client.patch(
        api_url(through_api), changes[through_api], content_type="application/json"
    )
    editable_in_admin = set(CHANGES[setting]) <= set(admin_form(researcher_client, through_admin).fields)
    posted = admin_post(researcher_client, through_admin, changes[through_admin])

    assert (response.status_code, editable_in_admin, posted.status_code) == (
        200 if allowed else 409,
        allowed,
        302,
    )
    for study in (through_api, through_admin):
        now = settings_of(study)
        assert {name: now[name] for name in changes[study]} == (
            changes[study] if allowed else {name: getattr(study, name) for name in changes[study]}
        )
    if not allowed:
        assert response.json()["errors"] == [
            f"{name}: cannot change now that the study is {state}: {STUDY_SETTINGS[name].frozen_because}"
            for name in CHANGES[setting]
        ]
    recorded = StudyChange.objects.filter(study__in=[through_api, through_admin])
    expected_rows = len(CHANGES[setting]) * 2 if allowed and state != "draft" else 0
    assert sorted(recorded.values_list("channel", flat=True)) == sorted(
        ["admin", "api"] * (expected_rows // 2)
    )


def test_a_refused_change_changes_nothing_even_the_settings_that_were_allowed(researcher_client):
    study = study_in("running", votes_per_annotator_per_ballot=60)

    response = researcher_client.patch(
        api_url(study),
        {"votes_per_annotator_per_ballot": 5, "appearances": 6},
        content_type="application/json",
    )

    assert response.status_code == 409
    assert response.json()["detail"] == (
        "the study is running, so appearances cannot change any more; nothing was changed. "
        "Duplicate the study to run the same items again with other values"
    )
    assert (settings_of(study)["votes_per_annotator_per_ballot"], StudyChange.objects.count()) == (60, 0)


def test_both_m_and_a_budget_are_refused_alike_by_the_admin_and_the_api(researcher_client):
    both = {"name": "Both", "slug": "both", "appearances": 20, "comparison_budget": 5000}

    response = researcher_client.post("/api/studies/", both, content_type="application/json")
    page = researcher_client.post(
        reverse("admin:collection_study_add"),
        {**both, "ballot_count": 7, "keep_fraction": 0.5, "seconds_per_comparison": 6, "lease_seconds": 300}
        | {"question": "Q?", "completion_code": "X", "minimum_coverage": 0.5},
    )

    message = (
        "give either the appearances M or a comparison budget, not both: with a budget, M is derived from it. "
        "Clear one of the two fields"
    )
    assert (response.status_code, response.json()["errors"]) == (400, [message])
    assert page.context["adminform"].form.non_field_errors() == [message[:1].upper() + message[1:] + "."]
    assert not Study.objects.exists()


def test_a_budget_without_m_creates_a_study_whose_m_is_derived_from_it(researcher_client, researcher):
    response = researcher_client.post(
        "/api/studies/",
        {"name": "Budget", "slug": "budget", "comparison_budget": 5000},
        content_type="application/json",
    )

    assert response.status_code == 201
    study = Study.objects.get(slug="budget")
    assert (study.appearances, study.comparison_budget, study.created_by, study.status) == (
        None,
        5000,
        researcher,
        "draft",
    )


def test_a_plan_impossible_for_the_drafts_items_is_refused_alike_by_the_admin_and_the_api(researcher_client):
    through_api, through_admin = study_in("draft"), study_in("draft")

    response = researcher_client.patch(
        api_url(through_api), {"ballot_count": 10}, content_type="application/json"
    )
    page = admin_post(researcher_client, through_admin, {"ballot_count": 10})

    problem = response.json()["errors"]
    assert (response.status_code, page.status_code) == (400, 200)
    assert [line.split(": ", 1)[0] for line in problem] == ["plan"]
    # The admin names the setting by its label (keep fraction), the API by its code (keep_fraction).
    assert page.context["adminform"].form.non_field_errors() == [
        "Plan: " + problem[0].split(": ", 1)[1].replace("keep_fraction", "keep fraction") + "."
    ]
    assert "keep_fraction α = 0.5" in problem[0]
    assert (settings_of(through_api)["ballot_count"], settings_of(through_admin)["ballot_count"]) == (3, 3)


def test_the_seed_of_a_draft_is_set_alike_by_the_admin_and_the_api_and_a_blank_keeps_it(researcher_client):
    through_api, through_admin = study_in("draft"), study_in("draft")
    kept = study_in("draft")

    researcher_client.patch(api_url(through_api), {"seed": 7}, content_type="application/json")
    admin_post(researcher_client, through_admin, {"seed": 7})
    admin_post(researcher_client, kept, {"seed": None, "name": "Blank seed"})

    assert (settings_of(through_api)["seed"], settings_of(through_admin)["seed"]) == (7, 7)
    assert settings_of(kept)["seed"] == kept.seed


def test_deleting_follows_one_rule_in_the_admin_and_the_api(researcher_client):
    drafts, running = [study_in("draft"), study_in("draft")], [study_in("running"), study_in("running")]

    api = [researcher_client.delete(api_url(study)).status_code for study in (drafts[0], running[0])]
    admin = [
        researcher_client.post(
            reverse("admin:collection_study_delete", args=[study.pk]), {"post": "yes"}
        ).status_code
        for study in (drafts[1], running[1])
    ]

    assert (api, admin) == ([204, 409], [302, 403])
    assert set(Study.objects.values_list("pk", flat=True)) == {study.pk for study in running}


# --- the audit trail -----------------------------------------------------------------------------


def test_the_fuzzers_cap_change_is_recorded_with_who_when_and_both_values(researcher_client, researcher):
    study = study_in("running", votes_per_annotator_per_ballot=60)
    before = timezone.now()

    response = researcher_client.patch(
        api_url(study), {"votes_per_annotator_per_ballot": 1}, content_type="application/json"
    )

    after = timezone.now()
    change = StudyChange.objects.get(study=study)
    assert response.status_code == 200
    assert (
        change.user,
        change.username,
        change.channel,
        change.study_status,
        change.setting,
        change.old_value,
        change.new_value,
    ) == (researcher, "grace", "api", "running", "votes_per_annotator_per_ballot", 60, 1)
    assert before <= change.changed_at <= after
    shown = response.json()["changes"]
    assert parse_datetime(shown[0].pop("changed_at")) == change.changed_at
    assert shown == [
        {
            "user": "grace",
            "channel": "api",
            "study_status": "running",
            "setting": "votes_per_annotator_per_ballot",
            "old_value": 60,
            "new_value": 1,
        }
    ]


def test_a_change_in_the_admin_is_recorded_with_its_user_and_only_for_what_changed(
    researcher_client, researcher
):
    study = study_in("running")

    response = admin_post(researcher_client, study, {"lease_seconds": 120, "question": "Closer?"})

    rows = list(
        StudyChange.objects.filter(study=study).values_list(
            "username", "channel", "setting", "old_value", "new_value"
        )
    )
    assert response.status_code == 302
    assert rows == [
        ("grace", "admin", "question", "Which pair of words is more closely related?", "Closer?"),
        ("grace", "admin", "lease_seconds", 300, 120),
    ]


def test_a_draft_and_a_value_set_again_leave_no_trail(researcher_client):
    draft, running = study_in("draft"), study_in("running")

    researcher_client.patch(api_url(draft), {"lease_seconds": 120}, content_type="application/json")
    researcher_client.patch(
        api_url(running), {"lease_seconds": 300, "name": running.name}, content_type="application/json"
    )
    admin_post(researcher_client, running, {})

    assert settings_of(draft)["lease_seconds"] == 120
    assert StudyChange.objects.count() == 0


def test_the_trail_explains_every_setting_a_study_has_now(researcher_client):
    # Fails if any path changes a started study's settings without recording it: replaying the trail
    # from the settings at the start must give the settings of today.
    study = study_in("running", votes_per_annotator_per_ballot=60)
    at_start = settings_of(study)
    url = api_url(study)

    researcher_client.patch(url, {"votes_per_annotator_per_ballot": 1}, content_type="application/json")
    researcher_client.patch(url, {"appearances": 6, "lease_seconds": 30}, content_type="application/json")
    representation = researcher_client.get(url).json()
    researcher_client.put(
        url, representation | {"ballot_deadline_hours": 24}, content_type="application/json"
    )
    admin_post(researcher_client, study, {"question": "Closer?", "votes_per_annotator_per_ballot": 2})
    study_update(study=study, changes={"completion_code": "LATE"}, channel=StudyChange.Channel.COMMAND)
    vote_until(study, voters=annotators(study, 5))
    researcher_client.patch(url, {"name": "Final", "question": "Too late?"}, content_type="application/json")
    researcher_client.patch(
        url, {"name": "Final name", "minimum_coverage": 0.9}, content_type="application/json"
    )

    replayed = dict(at_start)
    for change in StudyChange.objects.filter(study=study).order_by("changed_at", "pk"):
        assert replayed[change.setting] == change.old_value
        replayed[change.setting] = change.new_value
    assert replayed == settings_of(study)
    assert [(c.setting, c.study_status) for c in StudyChange.objects.filter(study=study)] == [
        ("votes_per_annotator_per_ballot", "running"),
        ("ballot_deadline_hours", "running"),
        ("question", "running"),
        ("votes_per_annotator_per_ballot", "running"),
        ("completion_code", "running"),
        ("name", "finished"),
        ("minimum_coverage", "finished"),
    ]
    plan = ("ballot_count", "keep_fraction", "appearances", "comparison_budget", "seed", "allow_ties")
    assert {name: settings_of(study)[name] for name in plan} == {name: at_start[name] for name in plan}


def test_the_database_keeps_the_trail_insert_only(researcher):
    study = study_in("running")
    study_update(
        study=study, changes={"lease_seconds": 120}, user=researcher, channel=StudyChange.Channel.API
    )
    change = StudyChange.objects.get()

    for attempt in (
        lambda: StudyChange.objects.filter(pk=change.pk).update(new_value=1),
        lambda: StudyChange.objects.filter(pk=change.pk).update(user=None, username=""),
    ):
        with pytest.raises(IntegrityError), transaction.atomic():
            attempt()
    with pytest.raises(ProtectedError):
        study.delete()
    if connection.vendor == "postgresql":  # SQLite leaves deletion to PROTECT (see migration 0006)
        with pytest.raises(IntegrityError), transaction.atomic():
            StudyChange.objects.filter(pk=change.pk).delete()
    assert StudyChange.objects.values_list("setting", "old_value", "new_value").get() == (
        "lease_seconds",
        300,
        120,
    )


def test_deleting_the_account_keeps_who_made_the_change(researcher):
    study = study_in("running")
    study_update(
        study=study, changes={"lease_seconds": 120}, user=researcher, channel=StudyChange.Channel.API
    )

    researcher.delete()

    assert StudyChange.objects.values_list("user", "username", "new_value").get() == (None, "grace", 120)


# --- where the trail is shown --------------------------------------------------------------------


def test_the_admin_lists_the_changes_and_what_the_state_freezes(researcher_client):
    study = study_in("running", votes_per_annotator_per_ballot=60)
    researcher_client.patch(
        api_url(study), {"votes_per_annotator_per_ballot": 1}, content_type="application/json"
    )

    page = researcher_client.get(change_url(study))
    html = page.content.decode()

    change = StudyChange.objects.get()
    assert page.context["study_changes"] == [change]
    assert (
        f'<tr id="change-{change.pk}">\n'
        f"        <td>{timezone.localtime(change.changed_at):%Y-%m-%d %H:%M:%S} UTC</td>\n"
        "        <td>grace</td>\n        <td>API</td>\n        <td>running</td>\n"
        '        <th scope="row">votes_per_annotator_per_ballot</th>\n        <td>60</td>\n        <td>1</td>'
    ) in html
    assert (
        "<li>Frozen now that the study is running: ballots n_b, fraction kept α, appearances M, comparison "
        "budget (the plan shaped the ballots already opened).</li>"
    ) in html


def test_a_draft_says_nothing_is_recorded_yet(researcher_client):
    html = researcher_client.get(change_url(study_in("draft"))).content.decode()

    assert "Every setting may change while the study is a draft, and nothing is recorded." in html


def test_the_card_lists_the_changes_without_who_or_private_values(researcher_client, client):
    study = study_in("running", votes_per_annotator_per_ballot=60)
    researcher_client.patch(
        api_url(study),
        {"votes_per_annotator_per_ballot": 1, "completion_code": "SECRET9"},
        content_type="application/json",
    )
    moment = StudyChange.objects.first().changed_at

    card = instrument_card(study=study)
    text = card_markdown(card)
    page = client.get(reverse("metrics:card", args=[study.slug])).content.decode()
    downloaded = client.get(reverse("metrics:card-json", args=[study.slug])).content.decode()

    assert (card["version"], card["changes"]) == (
        9,  # card version 9: the score model that made the ranking, and every model side by side
        [
            {
                "changed_at": moment.isoformat(),
                "study_status": "running",
                "setting": "votes_per_annotator_per_ballot",
                "label": "cap per annotator and ballot",
                "channel": "api",
                "private": False,
                "from": 60,
                "to": 1,
            },
            {
                "changed_at": moment.isoformat(),
                "study_status": "running",
                "setting": "completion_code",
                "label": "completion code",
                "channel": "api",
                "private": True,
                "from": None,
                "to": None,
            },
        ],
    )
    when = f"{moment.astimezone(UTC):%Y-%m-%d %H:%M}"
    assert f"| {when} | running | cap per annotator and ballot | 60 | 1 | API |" in text
    assert f"| {when} | running | completion code | not published | not published | API |" in text
    assert "Changed after the start: cap per annotator and ballot, completion code." in text
    assert '<section class="card-section" id="changes" aria-labelledby="changes-heading">' in page
    assert "<td>cap per annotator and ballot</td>" in page
    for public in (text, page, downloaded):
        assert "SECRET9" not in public and "grace" not in public


def test_the_card_says_when_nothing_changed_and_learns_of_a_change(researcher_client):
    study = study_in("running")
    before = card_markdown(instrument_card(study=study))

    researcher_client.patch(api_url(study), {"lease_seconds": 120}, content_type="application/json")
    after = instrument_card(study=Study.objects.get(pk=study.pk))

    assert (
        "No setting changed after the start: every vote was collected under the settings of section 1."
        in before
    )
    assert [change["to"] for change in after["changes"]] == [120]
    assert after["procedure"]["lease_seconds"] == 120


# --- a start racing a change ---------------------------------------------------------------------


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_a_change_waiting_for_a_start_is_judged_by_the_started_study():
    # PostgreSQL: the start holds the study's row; the change waits for it, then sees a running study.
    study = make_study(start=False)
    started, release, outcome = threading.Event(), threading.Event(), {}

    def start():
        try:
            with transaction.atomic():
                study_start(study=study)
                started.set()
                release.wait(timeout=30)
        finally:
            connection.close()

    def change():
        started.wait(timeout=30)
        try:
            study_update(study=study, changes={"appearances": 6}, channel=StudyChange.Channel.API)
        except StudyStateError as exc:
            outcome["refused"] = exc.errors
        finally:
            connection.close()

    threads = [threading.Thread(target=start), threading.Thread(target=change)]
    for thread in threads:
        thread.start()
    started.wait(timeout=30)
    time.sleep(0.5)  # the change is now waiting on the row lock
    release.set()
    for thread in threads:
        thread.join(timeout=60)

    study.refresh_from_db()
    assert outcome == {
        "refused": [
            "appearances: cannot change now that the study is running: the plan shaped the ballots already opened"
        ]
    }
    assert (study.status, study.appearances, StudyChange.objects.count()) == ("running", 4, 0)


# --- checks and the ranking scope ----------------------------------------------------------------


def gold_across_areas(study: Study):
    from collection.checks import check_create

    def area_item(area: int, a: int, b: int):
        return study.items.get(token_a__text=f"area{area}-{a}", token_b__text=f"area{area}-{b}")

    within = check_create(
        study=study, kind="gold", left_item=area_item(0, 0, 1), right_item=area_item(0, 2, 3), expected="left"
    )
    across = check_create(
        study=study, kind="gold", left_item=area_item(0, 0, 1), right_item=area_item(1, 2, 3), expected="left"
    )
    return within, across


def test_a_draft_whose_gold_checks_cross_areas_is_not_ranked_per_area_until_they_go(researcher_client):
    through_api, through_admin = study_in("draft", areas=2), study_in("draft", areas=2)
    across = {study: gold_across_areas(study)[1] for study in (through_api, through_admin)}

    response = researcher_client.patch(
        api_url(through_api), {"ranking_scope": "per_area"}, content_type="application/json"
    )
    page = admin_post(researcher_client, through_admin, {"ranking_scope": "per_area"})

    def refusal(study):
        return (
            "a study ranked per area compares items of one semantic area only, and its gold check "
            f"{across[study].pk} (area0-0 – area0-1 against area1-2 – area1-3) sets items of two areas "
            "against each other, where annotators would tell it from a comparison: delete it, or make "
            "it an instructed-response check, first"
        )

    assert (response.status_code, response.json()["errors"]) == (
        400,
        [f"ranking_scope: {refusal(through_api)}"],
    )
    assert page.status_code == 200
    message = refusal(through_admin)
    assert page.context["adminform"].form.errors["ranking_scope"] == [message[:1].upper() + message[1:] + "."]
    assert [settings_of(study)["ranking_scope"] for study in (through_api, through_admin)] == ["joint"] * 2

    for study in (through_api, through_admin):
        across[study].delete()
    response = researcher_client.patch(
        api_url(through_api), {"ranking_scope": "per_area"}, content_type="application/json"
    )
    page = admin_post(researcher_client, through_admin, {"ranking_scope": "per_area"})

    assert (response.status_code, page.status_code) == (200, 302)
    assert [settings_of(study)["ranking_scope"] for study in (through_api, through_admin)] == ["per_area"] * 2

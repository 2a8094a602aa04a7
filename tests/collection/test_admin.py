"""The researchers' admin: plan panel, pool uploads, lifecycle actions, simulations and permissions."""

import re
from html import unescape

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.messages import get_messages
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from collection.exclusion import annotator_exclude
from collection.models import (
    Check,
    CheckTranslation,
    Item,
    ItemScore,
    SemanticArea,
    Study,
    StudyChange,
    Token,
    Vote,
)
from collection.pools import MAX_UPLOAD_BYTES, tokens_import
from collection.studies import study_update
from scoring.models import SimulationRun
from tests.factories import annotators, committed_callbacks, make_study, vote_until

pytestmark = pytest.mark.django_db

CUSTOM_VIEWS = (
    "tokens_upload",
    "items_generate",
    "items_upload",
    "checks_upload",
    "start",
    "close_ballot",
    "duplicate",
    "simulate",
    "simulations",
)


def change_url(study: Study) -> str:
    return reverse("admin:collection_study_change", args=[study.pk])


def view_url(name: str, study: Study) -> str:
    return reverse(f"admin:collection_study_{name}", args=[study.pk])


def messages_of(response) -> list[str]:
    return [str(message) for message in get_messages(response.wsgi_request)]


def csv_file(content: bytes | str, name: str = "tokens.csv") -> SimpleUploadedFile:
    data = content.encode() if isinstance(content, str) else content
    return SimpleUploadedFile(name, data, content_type="text/csv")


def element(html: str, element_id: str) -> str:
    """The inner HTML of the first element with this id (the panels' elements do not nest themselves)."""
    match = re.search(rf'<(\w+)[^>]*\bid="{element_id}"[^>]*>(.*?)</\1>', html, re.S)
    assert match, f"no element with id {element_id!r}"
    return match.group(2).strip()


def draft(**fields) -> Study:
    return make_study(start=False, **fields)


@pytest.fixture
def staff_without_permissions(django_user_model):
    user = django_user_model.objects.create_user("assistant", password="pw", is_staff=True)
    client = Client()
    client.force_login(user)
    return client


# --- the plan panel ------------------------------------------------------------------------------


def test_the_change_page_shows_the_papers_plan_with_its_repeated_pairs_warning(admin_client):
    study = draft(tokens=45, ballot_count=7, keep_fraction=0.5, appearances=20)

    html = admin_client.get(change_url(study)).content.decode()

    assert element(html, "plan-items") == "990"
    assert element(html, "plan-n-comp") == "19,660"
    assert element(html, "plan-m") == "20, as given"
    assert element(html, "plan-m-top") == "140"
    assert element(html, "plan-m-unif") == "39.7"
    assert element(html, "plan-cost") == "32.8 hours of voting (19,660 comparisons × 6 s)"
    rows = re.findall(r'<tr id="plan-ballot-\d">(.*?)</tr>', html)
    assert [re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row) for row in rows] == [
        ["1", "990", "495", "9,900"],
        ["2", "495", "248", "4,950"],
        ["3", "248", "124", "2,480"],
        ["4", "124", "62", "1,240"],
        ["5", "62", "31", "620"],
        ["6", "31", "16", "310"],
        ["7", "16", "final ranking", "160"],
    ]
    assert re.findall(r"<li><strong>Warning:</strong> (.*?)</li>", element(html, "plan-warnings")) == [
        "ballot 7 holds 16 items and M = 20 &gt; 15: some pairs of items are compared more than once "
        "in that ballot, each time by a different annotator."
    ]


def test_a_comparison_budget_shows_the_m_derived_from_it(admin_client):
    study = draft(tokens=45, ballot_count=7, keep_fraction=0.5, appearances=20)
    Study.objects.filter(pk=study.pk).update(appearances=None, comparison_budget=20_000)

    html = admin_client.get(change_url(study)).content.decode()

    assert element(html, "plan-m") == (
        "20, derived from the budget of 20,000 comparisons: the largest even M whose N_comp fits, "
        "M = 2·⌊20,000 / ΣN(k)⌋ = 2·⌊20,000 / 1,966⌋"
    )
    assert element(html, "plan-n-comp") == "19,660"


def test_a_plan_within_the_recommended_ranges_says_so(admin_client):
    study = draft(tokens=45, ballot_count=6, keep_fraction=0.5, appearances=20)

    html = admin_client.get(change_url(study)).content.decode()

    assert 'id="plan-warnings"' not in html
    assert element(html, "plan-no-warnings") == "The plan lies within the ranges §2.7 recommends."


def test_a_new_draft_shows_the_next_step_where_the_plan_will_be_not_an_error(admin_client):
    study = Study.objects.create(name="Empty", slug="empty")

    html = admin_client.get(change_url(study)).content.decode()

    assert element(html, "plan-next-step") == (
        "Next: upload the tokens, then generate the items (or upload pairs). The plan is shown here once "
        "the study has two items or more."
    )
    assert 'id="plan-error"' not in html and "errornote" not in element(html, "plan")


def test_a_draft_with_tokens_and_no_items_says_to_make_the_items(admin_client):
    study = Study.objects.create(name="Tokens only", slug="tokens-only")
    tokens_import(study=study, data="lion,Animals\nmouse,Animals\nsalt,Food\npepper,Food\n")

    html = admin_client.get(change_url(study)).content.decode()

    assert unescape(element(html, "plan-next-step")) == (
        "Next: generate the items from the study's 4 tokens (or upload pairs). The plan is shown here once "
        "the study has two items or more."
    )
    assert 'id="plan-error"' not in html


def test_a_plan_that_cannot_be_computed_for_the_items_is_still_an_error(admin_client):
    study = draft(tokens=3, ballot_count=3, keep_fraction=0.5)  # 3 items: 3, 2, then a ballot of 1

    html = admin_client.get(change_url(study)).content.decode()

    assert element(html, "plan-error").startswith("The plan cannot be computed: ")
    assert 'id="plan-next-step"' not in html


def test_the_pools_panel_counts_tokens_and_items_per_area_and_links_the_annotators_page(admin_client):
    study = draft(tokens=4, areas=2)

    html = admin_client.get(change_url(study)).content.decode()

    areas = re.findall(
        r'<tr><th scope="row">(\w+)</th><td>(\d+)</td><td>(\d+)</td><td>(\d+)</td></tr>',
        element(html, "pools"),
    )
    assert areas == [("Area0", "4", "1", "6"), ("Area1", "4", "1", "6")]
    assert (element(html, "pools-tokens"), element(html, "pools-items")) == ("8", "12")
    assert element(html, "entry-link") == f"http://testserver/s/{study.slug}/"
    assert 'id="results-link"' not in html


def test_a_running_study_links_its_results_and_exports(admin_client):
    study = make_study()

    html = admin_client.get(change_url(study)).content.decode()

    assert element(html, "results-link") == f"/studies/{study.slug}/results/"
    for path in ("dataset.csv", "dataset.json", "votes.csv"):
        assert f'href="/studies/{study.slug}/export/{path}"' in html


# --- the study form ------------------------------------------------------------------------------


def study_form_data(**overrides) -> dict:
    data = {
        "name": "Relatedness",
        "slug": "relatedness",
        "question": "Which pair of words is more closely related?",
        "instructions": "Choose the pair whose words are more related.",
        "ranking_scope": "joint",
        "ballot_count": "7",
        "keep_fraction": "0.5",
        "appearances": "20",
        "comparison_budget": "",
        "seconds_per_comparison": "6",
        "lease_seconds": "300",
        "votes_per_annotator_per_ballot": "200",
        "ballot_deadline_hours": "",
        "completion_redirect_url": "",
        "completion_code": "DONE42",
        "no_work_code": "NOWORK42",
        "screened_out_code": "SCREEN42",
        "max_wait_seconds": "300",
        "min_judgements": "20",
        "pay_per_hour": "",
        "pay_currency": "GBP",
        "seed": "",
        "minimum_coverage": "0.5",
        "max_variants_per_owner": "10",
        "relevant_top_k": "",
        "hidden_share": "0",
        "language": "en",
        "score_model": "borda",
        # The change page's inline of the study's checks (none here).
        "checks-TOTAL_FORMS": "0",
        "checks-INITIAL_FORMS": "0",
        "translations-TOTAL_FORMS": "0",
        "translations-INITIAL_FORMS": "0",
    }
    data.update(overrides)
    return data


def test_adding_a_study_records_who_created_it_as_a_draft(admin_client, admin_user):
    response = admin_client.post(reverse("admin:collection_study_add"), study_form_data())

    study = Study.objects.get(slug="relatedness")
    assert response.status_code == 302
    assert (study.status, study.created_by, study.appearances, study.keep_fraction) == (
        "draft",
        admin_user,
        20,
        0.5,
    )


def test_the_study_form_refuses_both_m_and_a_budget(admin_client):
    response = admin_client.post(
        reverse("admin:collection_study_add"), study_form_data(comparison_budget="20000")
    )

    assert response.status_code == 200
    assert response.context["adminform"].form.non_field_errors() == [
        "Give either the appearances M or a comparison budget, not both: with a budget, M is derived "
        "from it. Clear one of the two fields."
    ]
    assert not Study.objects.exists()


def test_the_study_form_asks_for_m_or_a_budget(admin_client):
    response = admin_client.post(reverse("admin:collection_study_add"), study_form_data(appearances=""))

    form = response.context["adminform"].form
    assert (form.non_field_errors(), form.errors["appearances"]) == (
        [],
        [
            "The plan needs the appearances M of each item per ballot (the paper uses 20) or a comparison "
            "budget from which M is derived."
        ],
    )
    assert not Study.objects.exists()


def test_the_study_form_explains_a_keep_fraction_outside_0_1(admin_client):
    response = admin_client.post(reverse("admin:collection_study_add"), study_form_data(keep_fraction="1"))

    assert response.context["adminform"].form.errors["keep_fraction"] == [
        "α must lie strictly between 0 and 1, e.g. 0.5 keeps half of the items after each ballot."
    ]
    assert not Study.objects.exists()


@pytest.mark.parametrize(
    "field, value, message",
    [
        # Django's generic "Ensure this value is greater than or equal to 0." before
        ("appearances", "-3", "Appearances must be a whole number from 1 to 1,000."),
        ("ballot_count", "-1", "Ballot count must be a whole number from 1 to 50."),
        ("lease_seconds", "1e9", "Lease seconds must be a whole number from 10 to 86,400."),
        ("ballot_deadline_hours", "0", "Ballot deadline hours must be a whole number from 1 to 8,760."),
        ("max_variants_per_owner", "0", "Max variants per owner must be a whole number from 1 to 1,000."),
        ("quality_fast_ms", "-1", "Quality fast ms must be a whole number from 1 to 60,000."),
        ("keep_fraction", "half", "Keep fraction must be a number strictly between 0 and 1."),
        (
            "seconds_per_comparison",
            "six",
            "Seconds per comparison must be a number above 0 and at most 3,600.",
        ),
        # the field's code (hidden_share, check_rate) before
        (
            "hidden_share",
            "2",
            "Hidden share must be from 0 (no hidden test part) to 0.9 (nine items in ten hidden); 0.3 keeps "
            "three items in ten as the hidden test part.",
        ),
        (
            "check_rate",
            "0.9",
            "Check rate is the share of served comparisons that are checks, from 0 (none) to 0.5 (one in "
            "two); 0.1 serves about one check in ten comparisons.",
        ),
        ("hidden_share", "a third", "Hidden share must be a number from 0 to 0.9."),
    ],
)
def test_the_study_form_names_a_field_by_its_label_and_says_its_range(admin_client, field, value, message):
    response = admin_client.post(reverse("admin:collection_study_add"), study_form_data(**{field: value}))

    form = response.context["adminform"].form
    assert (form[field].label, form.errors[field]) == (message.split(" must")[0].split(" is")[0], [message])
    assert not Study.objects.exists()


def test_no_message_of_the_study_form_names_a_field_by_its_code_or_is_djangos_generic_one(admin_client):
    from django import forms

    from collection.forms import StudyAdminForm
    from collection.studies import STUDY_SETTINGS

    codes = [name for name in STUDY_SETTINGS if "_" in name]
    numbers = [
        name for name, field in StudyAdminForm.base_fields.items() if isinstance(field, forms.IntegerField)
    ]
    said = []
    for field in numbers:
        for value in ("-5", "0", "99999999999999999999", "x"):
            response = admin_client.post(
                reverse("admin:collection_study_add"), study_form_data(**{field: value})
            )
            if response.status_code == 200:
                form = response.context["adminform"].form
                said += [(field, value, message) for messages in form.errors.values() for message in messages]

    assert said  # the values above are refused by most fields
    assert [
        (field, value, message)
        for field, value, message in said
        if any(re.search(rf"\b{code}\b", message) for code in codes)
        or message.startswith(("Ensure this value", "Enter a"))
    ] == []


def test_the_plan_and_slug_are_read_only_once_the_study_has_started(admin_client):
    study = make_study(ballot_count=3, appearances=4)

    page = admin_client.get(change_url(study)).content.decode()
    admin_client.post(
        change_url(study),
        study_form_data(name="Renamed", slug="renamed", ballot_count="5", appearances="8"),
    )

    for field in ("slug", "ballot_count", "keep_fraction", "appearances", "comparison_budget"):
        assert f'name="{field}"' not in page
    study.refresh_from_db()
    assert (study.name, study.slug, study.ballot_count, study.appearances) == ("Renamed", study.slug, 3, 4)
    assert study.slug != "renamed"


# --- uploads ---------------------------------------------------------------------------------------


def test_uploading_tokens_creates_them_with_their_areas(admin_client):
    study = Study.objects.create(name="Words", slug="words")
    content = (
        "token,area,rare\nmachine learning,AI,0\nneural network,AI,1\nbudget,Finance,\ninvoice,Finance,no\n"
    )

    response = admin_client.post(view_url("tokens_upload", study), {"file": csv_file(content)})

    assert response.status_code == 302 and response["Location"] == change_url(study)
    assert messages_of(response) == [
        "Imported 4 tokens into “Words” (2 new semantic areas). Next: generate the items."
    ]
    assert sorted(study.tokens.values_list("text", "area__name", "rare")) == [
        ("budget", "Finance", False),
        ("invoice", "Finance", False),
        ("machine learning", "AI", False),
        ("neural network", "AI", True),
    ]


def test_replacing_the_tokens_says_what_it_removed_and_added(admin_client):
    study = Study.objects.create(name="Words", slug="words")
    admin_client.post(view_url("tokens_upload", study), {"file": csv_file("a,X\nb,X\nc,X\n")})
    admin_client.post(view_url("items_generate", study), {"max_per_area": ""})
    semicolons = csv_file("\ufefftoken;area\r\nlion;Animals\r\nmouse;Animals\r\n")

    response = admin_client.post(view_url("tokens_upload", study), {"file": semicolons, "mode": "replace"})

    assert response.status_code == 302 and response["Location"] == change_url(study)
    assert messages_of(response)[-2:] == [  # after those of the first upload and the generation
        "Replaced the pool of “Words”: removed 3 tokens and 3 items, imported 2 tokens in 1 semantic area. "
        "Next: generate the items.",
        "The tokens file is separated by semicolons, not commas: it was read that way.",
    ]
    assert sorted(study.tokens.values_list("text", "area__name")) == [
        ("lion", "Animals"),
        ("mouse", "Animals"),
    ]
    assert study.items.count() == 0


def test_a_refused_replacement_in_the_admin_changes_nothing(admin_client):
    study = Study.objects.create(name="Words", slug="words")
    admin_client.post(view_url("tokens_upload", study), {"file": csv_file("a,X\nb,X\n")})

    response = admin_client.post(
        view_url("tokens_upload", study), {"file": csv_file("lion,Animals\n"), "mode": "replace"}
    )

    assert response.status_code == 400
    assert sorted(study.tokens.values_list("text", flat=True)) == ["a", "b"]


def post_bad_tokens(client, study, content):
    response = client.post(view_url("tokens_upload", study), {"file": csv_file(content)})
    html = response.content.decode()
    lines = (
        re.findall(r"<li>(.*?)</li>", element(html, "service-error-lines"))
        if "service-error-lines" in html
        else []
    )
    return response, html, lines


def test_a_bad_tokens_file_lists_every_problem_by_line_and_imports_nothing(admin_client):
    study = Study.objects.create(name="Words", slug="words")
    content = "token,area\napple,Fruit\nbanana,Fruit\nApple,Fruit\n,Fruit\ncarrot,Vegetables\n"

    response, html, lines = post_bad_tokens(admin_client, study, content)

    assert response.status_code == 400
    assert element(html, "service-error") == "The tokens file has 3 problems; nothing was imported."
    assert lines == [
        "line 4: &#x27;Apple&#x27; repeats line 2",
        "line 5: the token is empty",
        "area &#x27;Vegetables&#x27; has 1 token; an area needs at least two tokens to form an item",
    ]
    assert (Token.objects.count(), SemanticArea.objects.count()) == (0, 0)


def test_a_tokens_file_that_is_not_utf8_is_refused_with_the_line_of_the_bad_byte(admin_client):
    study = Study.objects.create(name="Words", slug="words")

    response, html, lines = post_bad_tokens(admin_client, study, b"token,area\ncaf\xe9,Food\ntea,Food\n")

    assert response.status_code == 400
    assert element(html, "service-error") == (
        "The tokens file is not UTF-8 text (invalid byte at line 2); save it as CSV UTF-8 and retry."
    )
    assert lines == []
    assert Token.objects.count() == 0


def test_a_tokens_file_over_2_mib_is_refused_before_it_is_read(admin_client):
    study = Study.objects.create(name="Words", slug="words")
    content = b"word,Area\n" * (MAX_UPLOAD_BYTES // 10) + b"x,Area\n"

    response = admin_client.post(view_url("tokens_upload", study), {"file": csv_file(content)})

    assert response.status_code == 400
    assert response.context["form"].errors["file"] == [
        f"The file is {len(content):,} bytes; the limit is 2,097,152 bytes (2 MiB). "
        "Split it into smaller files and upload them one after the other."
    ]
    assert Token.objects.count() == 0


def test_generating_items_with_a_cap_samples_that_many_pairs_per_area(admin_client):
    study = draft(tokens=5, areas=2)  # 10 pairs per area

    response = admin_client.post(view_url("items_generate", study), {"max_per_area": "4"})

    assert response.status_code == 302
    assert messages_of(response) == [
        "Generated 8 items in “" + study.name + "”.",
        "Area 'Area0': sampled 4 of 10 pairs.",
        "Area 'Area1': sampled 4 of 10 pairs.",
    ]
    per_area = {area.name: area.items.count() for area in study.areas.all()}
    assert per_area == {"Area0": 4, "Area1": 4}
    assert sorted(study.items.values_list("index", flat=True)) == list(range(8))


def test_generating_items_without_tokens_says_what_to_do_first(admin_client):
    study = Study.objects.create(name="Empty", slug="empty")

    response = admin_client.post(view_url("items_generate", study), {"max_per_area": ""})

    assert response.status_code == 400
    assert element(response.content.decode(), "service-error") == (
        "The study needs at least two items: add tokens (two or more per area) first."
    )


def test_uploading_pairs_replaces_the_items_by_the_explicit_ones(admin_client):
    study = draft(tokens=4)  # area0-0 … area0-3, 6 items

    response = admin_client.post(
        view_url("items_upload", study),
        {"file": csv_file("token_a,token_b\narea0-0,area0-1\narea0-2,area0-3\n", "pairs.csv")},
    )

    assert messages_of(response) == [f"Imported 2 items into “{study.name}”, replacing 6 items."]
    assert [str(item) for item in study.items.order_by("index")] == ["area0-0 – area0-1", "area0-2 – area0-3"]


def test_a_bad_pairs_file_names_its_lines_and_keeps_the_items(admin_client):
    study = draft(tokens=4)

    response = admin_client.post(
        view_url("items_upload", study),
        {"file": csv_file("area0-0,area0-1\narea0-0,nowhere\narea0-1,area0-0\n", "pairs.csv")},
    )

    html = response.content.decode()
    assert response.status_code == 400
    assert re.findall(r"<li>(.*?)</li>", element(html, "service-error-lines")) == [
        "line 2: unknown token &#x27;nowhere&#x27;; import them first",
        "line 3: the pair repeats line 1",
    ]
    assert study.items.count() == 6


def test_pools_cannot_be_uploaded_once_the_study_has_started(admin_client):
    study = make_study()

    response = admin_client.post(view_url("tokens_upload", study), {"file": csv_file("a,X\nb,X\n")})

    assert response["Location"] == change_url(study)
    assert messages_of(response) == [
        f"“{study.name}” is running: its tokens cannot change any more. "
        "Duplicate it to start a new draft with the same pools and plan."
    ]
    assert study.tokens.count() == 6


# --- lifecycle -------------------------------------------------------------------------------------


def test_closing_a_ballot_one_vote_short_counts_the_comparison_left_in_words(admin_client):
    # 3 items, M = 2: 3 comparisons; 2 voted. Before: "cancels the 1 comparisons not voted".
    study = make_study(tokens=3, ballot_count=1, appearances=2)
    vote_until(study, voters=annotators(study, 2), max_votes=2)

    page = admin_client.get(view_url("close_ballot", study)).content.decode()

    intro = re.sub(r"\s+", " ", re.search(r'<p class="yardstick-intro">(.*?)</p>', page, re.S).group(1))
    assert intro.startswith(
        "Ballot 1 has 2 of 3 comparisons voted. Closing it now scores its items on these votes "
        "(Eq. 1, 5, 6) and cancels the 1 comparison not voted; this is the last ballot"
    )


def test_the_start_page_shows_the_plan_before_asking_for_confirmation(admin_client):
    study = draft()

    response = admin_client.get(view_url("start", study))

    html = response.content.decode()
    assert element(html, "plan-n-comp") == "54"
    assert 'value="Yes, start the study"' in html
    assert Study.objects.get(pk=study.pk).status == "draft"


def test_starting_opens_ballot_1_with_its_schedule(admin_client):
    study = draft()  # 15 items, n_b = 3, α = 0.5, M = 4

    response = admin_client.post(view_url("start", study))

    study.refresh_from_db()
    ballot = study.ballots.get()
    assert study.status == "running"
    assert (ballot.number, ballot.status, ballot.items.count(), ballot.comparisons.count()) == (
        1,
        "open",
        15,
        30,
    )
    assert messages_of(response) == [
        f"“{study.name}” has started: ballot 1 of 3 is open with 15 items and 30 comparisons. "
        f'Annotators vote at <a href="/s/{study.slug}/">http://testserver/s/{study.slug}/</a>.'
    ]


def test_a_study_that_cannot_start_says_why_and_stays_a_draft(admin_client):
    study = Study.objects.create(name="Empty", slug="empty")

    response = admin_client.post(view_url("start", study))

    assert messages_of(response) == [
        "“Empty” was not started. A study needs at least two items to compare, got 0."
    ]
    assert Study.objects.get(pk=study.pk).status == "draft"


def test_the_start_action_starts_every_selected_draft_and_reports_the_others(admin_client):
    ready, running = draft(), make_study()

    response = admin_client.post(
        reverse("admin:collection_study_changelist"),
        {"action": "start_studies", "_selected_action": [ready.pk, running.pk]},
    )

    assert Study.objects.get(pk=ready.pk).status == "running"
    assert sorted(messages_of(response)) == sorted(
        [
            f"“{ready.name}” has started: ballot 1 of 3 is open with 15 items and 30 comparisons. "
            f'Annotators vote at <a href="/s/{ready.slug}/">http://testserver/s/{ready.slug}/</a>.',
            f"“{running.name}” was not started. The study is already running.",
        ]
    )


@pytest.mark.django_db(transaction=True)
def test_the_close_action_closes_the_ballot_at_once_with_eager_celery_and_opens_the_next(admin_client):
    study = make_study()
    vote_until(study, voters=annotators(study, 2), max_votes=10)

    response = admin_client.post(
        reverse("admin:collection_study_changelist"),
        {"action": "close_current_ballots", "_selected_action": [study.pk]},
    )

    first, second = study.ballots.order_by("number")
    assert (first.status, first.votes_recorded, second.status, second.comparison_count) == (
        "closed",
        10,
        "open",
        16,
    )
    assert ItemScore.objects.filter(ballot=first).count() == 15
    assert messages_of(response) == [
        f"Ballot 1 of “{study.name}” is closed with 10 of 30 comparisons voted; "
        "ballot 2 is open with 16 comparisons."
    ]


def test_the_close_button_queues_the_closing_task_after_commit(admin_client):
    study = make_study()
    vote_until(study, voters=annotators(study, 2), max_votes=10)

    confirm = admin_client.get(view_url("close_ballot", study)).content.decode()
    with committed_callbacks():
        response = admin_client.post(view_url("close_ballot", study))

    assert 'value="Yes, close ballot 1 now"' in confirm
    assert messages_of(response) == [
        f"Ballot 1 of “{study.name}” is closing: the task is queued and the next ballot opens when it is done."
    ]
    assert list(study.ballots.order_by("number").values_list("number", "status")) == [
        (1, "closed"),
        (2, "open"),
    ]


def test_closing_a_study_without_an_open_ballot_says_so(admin_client):
    study = draft()

    response = admin_client.post(view_url("close_ballot", study))

    assert messages_of(response) == [
        f"Nothing to close in “{study.name}”. The study has no open ballot (it is draft)."
    ]


def test_duplicating_copies_the_items_and_plan_without_votes_and_links_the_copy(admin_client, admin_user):
    study = make_study()
    vote_until(study, voters=annotators(study, 2), max_votes=5)

    response = admin_client.post(view_url("duplicate", study), {"name": "Replication", "slug": "replication"})

    copy = Study.objects.get(slug="replication")
    assert response["Location"] == change_url(copy)
    assert (copy.name, copy.status, copy.duplicated_from, copy.created_by) == (
        "Replication",
        "draft",
        study,
        admin_user,
    )
    assert (copy.ballot_count, copy.keep_fraction, copy.appearances) == (3, 0.5, 4)
    assert list(copy.items.order_by("index").values_list("index", "token_a__text", "token_b__text")) == list(
        study.items.order_by("index").values_list("index", "token_a__text", "token_b__text")
    )
    assert (copy.ballots.count(), Vote.objects.filter(ballot__study=copy).count()) == (0, 0)
    assert messages_of(response) == [
        f'Created <a href="{change_url(copy)}">Replication</a>, a draft copy of “{study.name}” with 15 items, '
        "the same plan and no votes."
    ]


def test_duplicating_to_a_slug_in_use_is_refused(admin_client):
    study = make_study()

    response = admin_client.post(view_url("duplicate", study), {"name": "Copy", "slug": study.slug})

    assert response.status_code == 400
    assert response.context["form"].errors["slug"] == [
        f"A study with the slug “{study.slug}” exists already; choose another."
    ]
    assert Study.objects.count() == 1


def test_the_duplicate_action_names_the_copies_after_the_originals(admin_client):
    study = draft()

    admin_client.post(
        reverse("admin:collection_study_changelist"),
        {"action": "duplicate_studies", "_selected_action": [study.pk]},
    )

    copy = Study.objects.get(duplicated_from=study)
    assert (copy.name, copy.slug, copy.items.count()) == (
        f"{study.name} (replication)",
        f"{study.slug}-copy",
        15,
    )


# --- simulations -----------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_simulating_the_plan_runs_to_the_end_and_shows_uniform_against_adaptive(admin_client):
    study = draft()  # 15 items: a fast simulation

    response = admin_client.post(
        view_url("simulate", study), {"distribution": "exponential", "repetitions": "2"}
    )

    run = SimulationRun.objects.get(study=study)
    assert response["Location"] == change_url(study) + "#simulations"
    assert (run.status, run.done, run.repetitions, run.parameters["item_count"]) == ("done", 2, 2, 15)
    assert messages_of(response) == [
        f"The simulation of the plan of “{study.name}” is done: the predictions are below."
    ]
    panel = admin_client.get(view_url("simulations", study)).content.decode()
    assert "data-refresh-url" not in panel
    shown = dict(
        (metric, (uniform, adaptive))
        for metric, uniform, adaptive in re.findall(
            r'<tr data-metric="(\w+)"><th scope="row">[^<]+</th><td>([^<]+)</td><td>([^<]+)</td></tr>', panel
        )
    )
    expected = {}
    for metric in ("rho_w", "tau_w", "rho", "tau"):
        cells = []
        for protocol in ("uniform", "adaptive"):
            summary = run.result[protocol][metric]
            cells.append(f"{summary['mean']:.3f} ± {summary['sd']:.3f}")
        expected[metric] = tuple(cells)
    assert shown == expected


def test_a_simulation_in_progress_makes_the_page_refresh_its_panel(admin_client):
    study = draft()
    run = SimulationRun.objects.create(
        study=study,
        parameters={"distribution": "power_law", "item_count": 15},
        repetitions=20,
        done=5,
        status=SimulationRun.Status.RUNNING,
    )

    html = admin_client.get(change_url(study)).content.decode()
    run_page = admin_client.get(reverse("admin:scoring_simulationrun_change", args=[run.pk])).content.decode()

    assert f'id="simulations" data-refresh-url="{view_url("simulations", study)}"' in html
    assert '<progress value="5" max="20">25%</progress>' in element(html, f"simulation-{run.pk}")
    assert 'src="/static/admin-yardstick/simulations.js"' in html
    assert '<meta http-equiv="refresh" content="3">' in run_page


def test_a_simulation_the_simulator_refuses_is_explained_on_the_form(admin_client):
    study = draft()  # 15 items; the shipped similarities describe 990

    response = admin_client.post(view_url("simulate", study), {"distribution": "file", "repetitions": "2"})

    assert response.status_code == 400
    assert element(response.content.decode(), "service-error") == (
        "The shipped embedding similarities describe 990 items; this study has 15: choose the exponential or power-law distribution."
    )
    assert not SimulationRun.objects.exists()


# --- read-only lists and deletion ----------------------------------------------------------------


def test_votes_scores_ballots_and_pools_cannot_be_added_edited_or_deleted_by_hand(admin_client):
    study = make_study()
    vote_until(study, voters=annotators(study, 10))  # to the final ranking
    vote, score, item = Vote.objects.first(), ItemScore.objects.first(), Item.objects.first()

    for model, obj in (("collection/vote", vote), ("scoring/itemscore", score), ("collection/item", item)):
        assert admin_client.get(f"/admin/{model}/add/").status_code == 403
        assert admin_client.post(f"/admin/{model}/{obj.pk}/delete/", {"post": "yes"}).status_code == 403
        assert admin_client.get(f"/admin/{model}/{obj.pk}/change/").status_code == 200  # viewing is fine
    admin_client.post(f"/admin/collection/vote/{vote.pk}/change/", {"choice": "tie"})
    assert Vote.objects.get(pk=vote.pk).choice == vote.choice
    assert (Vote.objects.count(), ItemScore.objects.count()) == (54, 15 + 8 + 4)


def test_every_list_and_detail_page_of_a_finished_study_renders(admin_client):
    study = make_study()
    study_update(study=study, changes={"lease_seconds": 120}, channel=StudyChange.Channel.COMMAND)
    voters = annotators(study, 10)
    vote_until(study, voters=voters, max_votes=5)
    annotator_exclude(annotator=voters[0], reason="an exclusion and its set-aside vote")
    vote_until(study, voters=voters[1:])
    SimulationRun.objects.create(study=study, parameters={"distribution": "exponential"}, repetitions=2)
    left, right = study.items.order_by("pk")[:2]
    check = Check.objects.create(
        study=study, kind="instructed", left_item=left, right_item=right, expected="left",
        instruction="For this one, choose the pair on the left.",
    )  # fmt: skip
    CheckTranslation.objects.create(
        check_item=check, language="de", instruction="Wählen Sie bei diesem das linke Paar."
    )
    models = [model for model in admin.site._registry if model._meta.app_label in ("collection", "scoring")]

    for model in models:
        opts = model._meta
        changelist = admin_client.get(reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist"))
        detail = admin_client.get(
            reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[model.objects.first().pk])
        )
        assert (opts.model_name, changelist.status_code, detail.status_code) == (opts.model_name, 200, 200)
    assert sorted(model._meta.model_name for model in models) == [
        "annotator",
        "ballot",
        "checktranslation",
        "excludedvote",
        "exclusion",
        "item",
        "itemscore",
        "semanticarea",
        "simulationrun",
        "study",
        "studychange",
        "token",
        "vote",
    ]


def test_the_item_list_finds_items_by_token_and_shows_the_final_ranking(admin_client):
    study = make_study()
    vote_until(study, voters=annotators(study, 10))
    best = study.items.get(final_rank=1)

    response = admin_client.get(
        reverse("admin:collection_item_changelist"), {"q": best.token_a.text, "study__id__exact": study.pk}
    )

    found = list(response.context["cl"].result_list)
    assert all(best.token_a_id in (item.token_a_id, item.token_b_id) for item in found)
    assert found[0] == best
    assert len(found) == 5  # a token of 6 is in 5 pairs


def test_the_study_list_shows_items_and_the_current_ballots_progress(admin_client):
    study = make_study()
    vote_until(study, voters=annotators(study, 2), max_votes=3)

    response = admin_client.get(reverse("admin:collection_study_changelist"))

    html = response.content.decode()
    assert '<td class="field-item_count">15</td>' in html
    assert (
        '<td class="field-current_ballot"><progress value="3" max="30">10%</progress> ballot 1 of 3: 3 of 30 votes</td>'
        in html
    )


def test_a_draft_study_can_be_deleted_with_its_pools(admin_client):
    study = draft()

    response = admin_client.post(reverse("admin:collection_study_delete", args=[study.pk]), {"post": "yes"})

    assert response.status_code == 302
    assert (Study.objects.count(), Token.objects.count(), Item.objects.count()) == (0, 0, 0)


def test_a_started_study_cannot_be_deleted(admin_client):
    study = make_study()

    response = admin_client.post(reverse("admin:collection_study_delete", args=[study.pk]), {"post": "yes"})

    assert response.status_code == 403
    assert Study.objects.filter(pk=study.pk).exists()

    changelist = admin_client.get(reverse("admin:collection_study_changelist"))
    actions = [name for name, _label in changelist.context["action_form"].fields["action"].choices]
    assert actions == ["", "start_studies", "close_current_ballots", "duplicate_studies", "simulate_plans"]


# --- permissions at each boundary ----------------------------------------------------------------


@pytest.fixture
def non_staff_client(django_user_model):
    user = django_user_model.objects.create_user("annotator", password="pw")
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.parametrize("who", ["anonymous", "non-staff"])
@pytest.mark.parametrize("name", CUSTOM_VIEWS)
@pytest.mark.parametrize("method", ["get", "post"])
def test_every_custom_admin_view_sends_anonymous_and_non_staff_users_to_the_admin_login(
    client, non_staff_client, who, name, method
):
    study = draft()
    url = view_url(name, study)
    visitor = client if who == "anonymous" else non_staff_client

    response = getattr(visitor, method)(url)

    assert response.status_code == 302
    assert response["Location"] == f"/admin/login/?next={url}"
    study.refresh_from_db()
    assert (study.status, SimulationRun.objects.count(), Study.objects.count()) == ("draft", 0, 1)


@pytest.mark.parametrize("name", CUSTOM_VIEWS)
def test_staff_without_permission_on_studies_are_refused_every_custom_view(staff_without_permissions, name):
    study = draft()

    response = staff_without_permissions.post(view_url(name, study))

    assert response.status_code == 403
    assert Study.objects.get(pk=study.pk).status == "draft"


def test_custom_views_refuse_a_post_without_csrf_token(admin_user):
    study = draft()
    client = Client(enforce_csrf_checks=True)
    client.force_login(admin_user)

    response = client.post(view_url("start", study))

    assert response.status_code == 403
    assert Study.objects.get(pk=study.pk).status == "draft"


def test_a_staff_user_with_only_the_view_permission_sees_the_panels_but_no_buttons(staff_without_permissions):
    from django.contrib.auth.models import Permission

    study = draft()
    user = get_user_model().objects.get(username="assistant")
    user.user_permissions.add(Permission.objects.get(codename="view_study"))

    html = staff_without_permissions.get(change_url(study)).content.decode()

    assert element(html, "plan-n-comp") == "54"
    assert view_url("start", study) not in html and view_url("tokens_upload", study) not in html
    assert view_url("checks_upload", study) not in html

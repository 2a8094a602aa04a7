"""The annotator's language: the link's lang=, else the browser's Accept-Language, else the study's; the
study's own texts in it or the whole page in the study's language; the same exit codes in every language."""

import re

import pytest
from django.conf import settings
from django.core.exceptions import ValidationError
from django.test import Client, RequestFactory
from django.urls import reverse

from collection.exclusion import annotator_exclude
from collection.languages import StudyTexts, study_texts
from collection.leaving import annotator_finish
from collection.models import Annotator, Check, CheckTranslation, Study, StudyTranslation
from common.languages import accept_language_tags, language_asked
from common.unavailable import unavailable_response
from tests.collection.test_views import entry_url, join, page, vote_url
from tests.factories import annotators, make_study, vote_until

pytestmark = pytest.mark.django_db

SPANISH = {
    "name": "Parentesco de palabras",
    "question": "¿Qué par de palabras está más relacionado?",
    "instructions": "Verá dos pares de palabras. Elija el par cuyas palabras estén más relacionadas.",
}
GERMAN = {
    "name": "Wortverwandtschaft",
    "question": "Welches Wortpaar ist enger verwandt?",
    "instructions": "Sie sehen zwei Wortpaare. Wählen Sie das Paar, dessen Wörter enger verwandt sind.",
}
FRENCH = {
    "name": "Parenté des mots",
    "question": "Quelle paire de mots est la plus liée ?",
    "instructions": "Vous verrez deux paires de mots. Choisissez la paire dont les mots sont les plus liés.",
}
ARABIC_LETTERS = re.compile("[\u0600-\u06ff]")


def spanish_study(*translations: tuple[str, dict], **fields) -> Study:
    """A running study written in Spanish, with its texts in the other ``(language, texts)`` given."""
    study = make_study(
        language="es", question=SPANISH["question"], instructions=SPANISH["instructions"], **fields
    )
    Study.objects.filter(pk=study.pk).update(name=SPANISH["name"])
    study.refresh_from_db()
    for language, texts in translations:
        StudyTranslation.objects.create(study=study, language=language, **texts)
    return study


def shown_language(response) -> tuple[str, str]:
    """The page's <html lang dir>."""
    return re.search(r'<html lang="([^"]+)" dir="([^"]+)">', response.content.decode()).groups()


def test_accept_language_is_read_most_wanted_first():
    header = "fr-CH, fr;q=0.9, en;q=0.8, de;q=0.7, *;q=0.5, ja;q=0, it;q=oops"

    assert accept_language_tags(header) == ["fr-CH", "fr", "en", "de"]
    assert accept_language_tags("de;q=0.5, pt-BR") == ["pt-BR", "de"]
    assert accept_language_tags("") == []


def test_the_asked_language_is_the_sites_variant_of_the_first_it_speaks():
    factory = RequestFactory()

    assert language_asked(factory.get("/", HTTP_ACCEPT_LANGUAGE="ja, pt-BR;q=0.8, de;q=0.5")) == "pt"
    assert language_asked(factory.get("/", HTTP_ACCEPT_LANGUAGE="ja, zh;q=0.8")) is None
    assert language_asked(factory.get("/", {"lang": "ar-EG"}, HTTP_ACCEPT_LANGUAGE="de")) == "ar"


def test_the_link_beats_the_browser_which_beats_the_study_default():
    study = spanish_study(("de", GERMAN), ("fr", FRENCH))
    client = Client()

    by_default = client.get(entry_url(study))
    by_browser = client.get(entry_url(study), HTTP_ACCEPT_LANGUAGE="fr-CH, fr;q=0.9, de;q=0.5")
    by_link = client.get(entry_url(study), {"lang": "de"}, HTTP_ACCEPT_LANGUAGE="fr-CH, fr;q=0.9")
    remembered = client.get(entry_url(study), HTTP_ACCEPT_LANGUAGE="fr-CH, fr;q=0.9")

    assert [shown_language(response) for response in (by_default, by_browser, by_link, remembered)] == [
        ("es", "ltr"),
        ("fr", "ltr"),
        ("de", "ltr"),
        ("de", "ltr"),
    ]
    assert [page(response).text["consent-heading"] for response in (by_default, by_browser, by_link)] == [
        "Participación",
        "Participation",
        "Teilnahme",
    ]
    assert page(by_link).text["instructions-heading"] == "Anleitung"
    assert GERMAN["instructions"] in by_link.content.decode() and GERMAN["name"] in by_link.content.decode()
    assert by_link.cookies[settings.LANGUAGE_COOKIE_NAME].value == "de"
    assert (by_link["Content-Language"], by_browser["Content-Language"]) == ("de", "fr")
    assert {"Accept-Language", "Cookie"} <= {name.strip() for name in by_browser["Vary"].split(",")}


@pytest.mark.parametrize("unknown", ["xx", "klingon", "de" * 40, "", "../../etc"])
def test_an_unknown_lang_falls_back_to_the_browser_then_the_study(unknown):
    study = spanish_study(("fr", FRENCH))

    with_browser = Client().get(entry_url(study), {"lang": unknown}, HTTP_ACCEPT_LANGUAGE="fr")
    without = Client().get(entry_url(study), {"lang": unknown})

    assert (with_browser.status_code, shown_language(with_browser)) == (200, ("fr", "ltr"))
    assert (without.status_code, shown_language(without)) == (200, ("es", "ltr"))
    assert settings.LANGUAGE_COOKIE_NAME not in with_browser.cookies


def test_a_language_without_the_studys_texts_shows_the_whole_page_in_the_study_language(admin_client):
    study = spanish_study(("de", GERMAN))
    client = Client()

    shown = client.get(entry_url(study), {"participant": "p1"}, HTTP_ACCEPT_LANGUAGE="ar")
    client.post(entry_url(study), {"participant": "p1", "consent": "yes"}, HTTP_ACCEPT_LANGUAGE="ar")
    voting = client.get(vote_url(study), HTTP_ACCEPT_LANGUAGE="ar")

    for response in (shown, voting):
        assert shown_language(response) == ("es", "ltr")
        assert ARABIC_LETTERS.search(response.content.decode()) is None  # nothing of the asked language
    assert page(shown).text["instructions-heading"] == "Instrucciones"
    assert page(voting).text["question"] == SPANISH["question"]
    assert Annotator.objects.get(study=study, participant_id="p1").language_asked == "ar"
    study_page = admin_client.get(reverse("admin:collection_study_change", args=[study.pk]))
    notices = [str(message) for message in study_page.context["messages"]]
    assert (
        "1 annotator asked for Arabic, in which this study has no texts (Translations): they saw the pages "
        "in Spanish."
    ) in notices
    # The German texts, in the study page's Translations inline.
    translations = next(
        f for f in study_page.context["inline_admin_formsets"] if f.formset.prefix == "translations"
    )
    assert [form.instance.language for form in translations.formset.forms] == ["de"]


def test_a_translation_lacking_a_checks_instruction_is_not_offered_until_it_has_it(admin_client):
    study = spanish_study(("de", GERMAN))
    left, right = study.items.order_by("pk")[:2]
    check = Check.objects.create(
        study=study,
        kind=Check.Kind.INSTRUCTED,
        left_item=left,
        right_item=right,
        expected="left",
        instruction="Para esta, elija el par de la izquierda.",
    )
    admin_page = reverse("admin:collection_study_change", args=[study.pk])

    lacking = Client().get(entry_url(study), HTTP_ACCEPT_LANGUAGE="de")
    notices = [str(m) for m in admin_client.get(admin_page).context["messages"]]
    CheckTranslation.objects.create(
        check_item=check, language="de", instruction="Wählen Sie bei diesem das linke Paar."
    )
    complete = Client().get(entry_url(study), HTTP_ACCEPT_LANGUAGE="de")

    assert (shown_language(lacking), shown_language(complete)) == (("es", "ltr"), ("de", "ltr"))
    assert (
        "The German texts lack the instruction of an instructed-response check (Check translations): "
        "annotators asking for German see the pages in Spanish until every instructed check has it."
    ) in notices
    assert [str(m) for m in admin_client.get(admin_page).context["messages"]] == []
    assert study_texts(study=study, language="de") == StudyTexts(
        "de",
        GERMAN["name"],
        GERMAN["question"],
        GERMAN["instructions"],
        {"Para esta, elija el par de la izquierda.": "Wählen Sie bei diesem das linke Paar."},
    )
    assert study_texts(study=study, language="de").question_shown(check.instruction) == (
        "Wählen Sie bei diesem das linke Paar."
    )


def test_the_voting_page_and_the_api_ask_the_question_in_the_annotators_language():
    study = spanish_study(("de", GERMAN))
    client = Client()
    client.get(entry_url(study), {"participant": "p1", "lang": "de"})
    client.post(entry_url(study), {"participant": "p1", "consent": "yes"})

    voting = client.get(vote_url(study))
    following = client.get(reverse("api:study-next", args=[study.slug]))

    assert shown_language(voting) == ("de", "ltr")
    assert page(voting).text["question"] == GERMAN["question"]
    assert following.json()["question"] == GERMAN["question"]
    assert 'src="/s/catalog/de.js"' in voting.content.decode()


def test_arabic_pages_run_right_to_left_and_give_the_first_pair_the_right_arrow():
    study = spanish_study(
        (
            "ar",
            {
                "name": "ترابط الكلمات",
                "question": "أي زوج من الكلمات أشد ترابطًا؟",
                "instructions": "سترى زوجين من الكلمات.",
            },
        )
    )
    client = Client()
    client.get(entry_url(study), {"participant": "p1", "lang": "ar"})
    client.post(entry_url(study), {"participant": "p1", "consent": "yes"})

    voting = client.get(vote_url(study))

    assert shown_language(voting) == ("ar", "rtl")
    shortcuts = page(voting).attributes
    assert (
        shortcuts["choice-left"]["aria-keyshortcuts"],
        shortcuts["choice-right"]["aria-keyshortcuts"],
    ) == (
        "ArrowRight 1",
        "ArrowLeft 2",
    )


def test_the_script_catalog_is_the_pages_language_and_only_an_offered_one():
    german = Client().get(reverse("collection:catalog", args=["de"]))
    unknown = Client().get("/s/catalog/xx.js")

    assert german.status_code == 200 and "Stimme gespeichert." in german.content.decode()
    assert "max-age=3600" in german["Cache-Control"]
    assert unknown.status_code == 404


def exit_shown(client: Client, study: Study, language: str) -> dict:
    shown = page(client.get(entry_url(study), {"lang": language}))
    return {
        "outcome": shown.attributes["completion"]["data-outcome"],
        "code": shown.text["completion-code"],
        "personal": shown.text.get("personal-code"),
        "link": shown.attributes["completion-link"]["href"],
    }


def every_language(study: Study) -> None:
    for language, _name in settings.LANGUAGES:
        if language not in (study.language, "de"):
            StudyTranslation.objects.create(study=study, language=language, **GERMAN)
    StudyTranslation.objects.get_or_create(study=study, language="de", defaults=GERMAN)


def test_the_exit_codes_are_the_same_in_every_language():
    prolific = "https://app.prolific.com/submissions/complete"
    finished = spanish_study(participant_codes=True, completion_redirect_url=prolific, min_judgements=0)
    every_language(finished)
    voters = annotators(finished, 5)
    idle = Client()
    join(idle, finished, participant="idle")
    voter = Client()
    join(voter, finished, participant="p0")
    vote_until(finished, voters=voters)
    running = spanish_study(participant_codes=True, completion_redirect_url=prolific, min_judgements=0)
    every_language(running)
    excluded = Client()
    annotator_exclude(annotator=join(excluded, running, participant="x"), reason="failed the checks")
    finisher = Client()
    annotator_finish(annotator=join(finisher, running, participant="f"))
    languages = [language for language, _name in settings.LANGUAGES]

    exits = {
        name: [exit_shown(client, study, language) for language in languages]
        for name, client, study in [
            ("no_work", idle, finished),
            ("completed", voter, finished),
            ("screened_out", excluded, running),
            ("finished", finisher, running),
        ]
    }

    expected = {
        "no_work": (finished.no_work_code, finished),
        "completed": (finished.completion_code, finished),
        "screened_out": (running.screened_out_code, running),
        "finished": (running.completion_code, running),
    }
    for name, shown in exits.items():
        code, study = expected[name]
        assert [exit["code"] for exit in shown] == [code] * len(languages), name
        assert [exit["link"] for exit in shown] == [f"{prolific}?cc={code}"] * len(languages), name
        assert len({exit["personal"] for exit in shown}) == 1 and shown[0]["personal"], name
    assert [exits[name][0]["outcome"] for name in exits] == [
        "no_work",
        "completed",
        "screened_out",
        "completed",
    ]


def test_the_unavailable_page_speaks_the_browsers_language():
    request = RequestFactory().get("/s/any/", HTTP_ACCEPT_LANGUAGE="it-IT, it;q=0.9")

    response = unavailable_response(request)

    body = response.content.decode()
    assert (response.status_code, response["Content-Language"]) == (503, "it")
    assert '<html lang="it" dir="ltr">' in body and "<h1>Momentaneamente non disponibile</h1>" in body


def test_a_translation_is_of_another_language_and_has_the_instructions_the_study_has():
    study = spanish_study()

    with pytest.raises(ValidationError) as own:
        StudyTranslation(study=study, language="es", **SPANISH).full_clean()
    with pytest.raises(ValidationError) as without_instructions:
        StudyTranslation(
            study=study, language="de", name=GERMAN["name"], question=GERMAN["question"]
        ).full_clean()
    StudyTranslation(study=study, language="de", **GERMAN).full_clean()

    assert own.value.message_dict == {
        "language": ["This is the study's own language: its texts are the study's fields above."]
    }
    assert without_instructions.value.message_dict == {
        "instructions": ["The study has instructions: give them in this language too."]
    }


def test_a_studys_texts_in_another_language_are_read_once_per_version(django_assert_num_queries):
    study = spanish_study(("de", GERMAN))
    study.refresh_from_db()
    first = study_texts(study=study, language="de")
    with django_assert_num_queries(0):
        again = study_texts(study=study, language="de")
    translation = StudyTranslation.objects.get(study=study, language="de")
    translation.question = "Welches der beiden Wortpaare ist enger verwandt?"
    translation.save()
    study.refresh_from_db()

    assert (first.question, again.question) == (GERMAN["question"], GERMAN["question"])
    assert study_texts(study=study, language="de").question == "Welches der beiden Wortpaare ist enger verwandt?"

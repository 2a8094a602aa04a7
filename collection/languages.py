"""The language of an annotator's pages, and the study's own texts in it.

The language asked for: the link's ``lang=`` (kept in Django's language cookie for the browser's
session, so that the pages after the link keep it), else the first of the browser's ``Accept-Language``
that the site speaks (``settings.LANGUAGES``), else none. The language shown: the one asked for when it
is the study's language or the study has its texts in it (a ``StudyTranslation``, and every
instructed-response check's instruction in a ``CheckTranslation``); else the study's language. A page
is never mixed: its words and the study's texts are always in the one language shown.
"""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from dataclasses import dataclass, field

from django.conf import settings
from django.db.models import Count
from django.utils.cache import patch_vary_headers
from django.utils.translation import get_language_info

from collection.models import Annotator, Check, CheckTranslation, Study, StudyTranslation
from common.languages import language_asked, language_of_link


@dataclass(frozen=True)
class StudyTexts:
    """What the researcher wrote, in one language; ``check_instructions`` maps each instructed-response
    check's instruction in the study's language to this one."""

    language: str
    name: str
    question: str
    instructions: str
    check_instructions: dict[str, str] = field(default_factory=dict)

    @property
    def bidi(self) -> bool:
        return get_language_info(self.language)["bidi"]

    def question_shown(self, instruction: str) -> str:
        """Above a comparison: a check's instruction (given in the study's language), else the question."""
        if instruction:
            return self.check_instructions.get(instruction, instruction)
        return self.question


def study_own_texts(study: Study) -> StudyTexts:
    return StudyTexts(study.language, study.name, study.question, study.instructions)


# Each web process keeps the texts it read, per study version (a saved translation or check gives the study
# a new one: collection.models.study_texts_changed), so that a vote in another language costs no query.
MAX_KEPT_TEXTS = 1024
_kept_lock = threading.Lock()
_kept_texts: OrderedDict[tuple, StudyTexts | None] = OrderedDict()


def study_texts(*, study: Study, language: str) -> StudyTexts | None:
    """The study's texts in ``language``, or None when any of them is missing in it."""
    if language == study.language:
        return study_own_texts(study)
    key = (study.pk, study.settings_version, language)
    with _kept_lock:
        if key in _kept_texts:
            _kept_texts.move_to_end(key)
            return _kept_texts[key]
    texts = _study_texts_read(study=study, language=language)
    with _kept_lock:
        _kept_texts[key] = texts
        while len(_kept_texts) > MAX_KEPT_TEXTS:
            _kept_texts.popitem(last=False)
    return texts


def _study_texts_read(*, study: Study, language: str) -> StudyTexts | None:
    translation = StudyTranslation.objects.filter(study=study, language=language).first()
    if translation is None:
        return None
    instructed = dict(
        Check.objects.filter(study=study, kind=Check.Kind.INSTRUCTED).values_list("pk", "instruction")
    )
    translated = dict(
        CheckTranslation.objects.filter(check_item_id__in=instructed, language=language).values_list(
            "check_item_id", "instruction"
        )
    )
    if len(translated) < len(instructed):
        return None
    return StudyTexts(
        language,
        translation.name,
        translation.question,
        translation.instructions,
        {instructed[check_id]: instruction for check_id, instruction in translated.items()},
    )


@dataclass(frozen=True)
class AnnotatorLanguage:
    """The language an annotator asked for (None: none offered), the one their page is shown in, and
    the study's texts in it; ``from_link`` when the link's ``lang=`` named it (to be remembered)."""

    asked: str | None
    shown: str
    texts: StudyTexts
    from_link: str | None

    def study_shown(self, study: Study) -> Study:
        """A copy of ``study`` whose name, question and instructions are those shown (never saved)."""
        shown = copy.copy(study)
        shown.name, shown.question, shown.instructions = (
            self.texts.name,
            self.texts.question,
            self.texts.instructions,
        )
        return shown


def annotator_language(request, study: Study) -> AnnotatorLanguage:
    """The language of this request's page of ``study``, by the module's rules."""
    asked = language_asked(request)
    texts = study_texts(study=study, language=asked) if asked else None
    if texts is None:
        texts = study_own_texts(study)
    return AnnotatorLanguage(asked, texts.language, texts, language_of_link(request))


def language_response(response, choice: AnnotatorLanguage):
    """``response`` saying its language, varying with what chose it, and remembering a link's ``lang=``
    for the browser's session (Django's language cookie, with its settings)."""
    response.headers["Content-Language"] = choice.shown
    patch_vary_headers(response, ("Accept-Language", "Cookie"))
    if choice.from_link:
        response.set_cookie(
            settings.LANGUAGE_COOKIE_NAME,
            choice.from_link,
            max_age=settings.LANGUAGE_COOKIE_AGE,
            path=settings.LANGUAGE_COOKIE_PATH,
            domain=settings.LANGUAGE_COOKIE_DOMAIN,
            secure=settings.LANGUAGE_COOKIE_SECURE,
            httponly=settings.LANGUAGE_COOKIE_HTTPONLY,
            samesite=settings.LANGUAGE_COOKIE_SAMESITE,
        )
    return response


def annotator_language_record(*, annotator: Annotator, language: str | None) -> None:
    """Keep the language ``annotator`` asked for (at their consent), for the researcher's notice."""
    if annotator.language_asked != (language or ""):
        Annotator.objects.filter(pk=annotator.pk).update(language_asked=language or "")
        annotator.language_asked = language or ""


def study_language_notices(*, study: Study) -> list[str]:
    """What the researcher should know of the study's languages: languages annotators asked for in which
    the study has no texts (they saw the study's language), and translations lacking a check's
    instruction (not offered until complete)."""

    def name(language: str) -> str:  # in English, the admin's language
        return get_language_info(language)["name"]

    own = name(study.language)
    notices = []
    offered = {translation.language for translation in study.translations.all()}
    for language in sorted(offered):
        if study_texts(study=study, language=language) is None:
            notices.append(
                f"The {name(language)} texts lack the instruction of an instructed-response check (Check "
                f"translations): annotators asking for {name(language)} see the pages in {own} until every "
                "instructed check has it."
            )
    asked = (
        Annotator.objects.filter(study=study, simulated=False)
        .exclude(language_asked="")
        .exclude(language_asked=study.language)
        .exclude(language_asked__in=offered)
        .values("language_asked")
        .annotate(count=Count("pk"))
        .order_by("-count", "language_asked")
    )
    for row in asked:
        count, language = row["count"], name(row["language_asked"])
        people = "1 annotator" if count == 1 else f"{count:,} annotators"
        notices.append(
            f"{people} asked for {language}, in which this study has no texts (Translations): they saw "
            f"the pages in {own}."
        )
    return notices

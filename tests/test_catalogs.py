"""The annotators' catalogs (locale/): every language complete, and a new string without its translations
fails here. gettext's tools (msgfmt, msgattrib, xgettext; Debian's ``gettext``, which .ci/run installs)
read the catalogs, and Django's ``makemessages`` extracts the strings as a translator's update would."""

import shutil
import subprocess
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.test import override_settings
from django.utils import translation

ROOT = Path(__file__).resolve().parents[1]
TRANSLATED = [code for code, _name in settings.LANGUAGES if code != "en"]
DOMAINS = ("django", "djangojs")
# What makemessages reads: the code and templates, as `make` users run it from the repository's root.
SOURCES = ("collection", "common", "config", "scoring", "metrics", "templates", "static")


def gettext_tool(*arguments: str) -> str:
    """The output of a gettext program; a failure (a broken catalog) fails the test with its message."""
    done = subprocess.run(arguments, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def unfinished(catalog: Path) -> dict[str, str]:
    """The untranslated and the fuzzy entries of ``catalog``, as msgattrib prints them ("" when none)."""
    return {
        "untranslated": gettext_tool("msgattrib", "--untranslated", "--no-obsolete", str(catalog)),
        "fuzzy": gettext_tool("msgattrib", "--only-fuzzy", "--no-obsolete", str(catalog)),
    }


@pytest.mark.parametrize("domain", DOMAINS)
@pytest.mark.parametrize("language", TRANSLATED)
def test_every_catalog_is_complete_and_compiles(language, domain):
    catalog = ROOT / "locale" / language / "LC_MESSAGES" / f"{domain}.po"

    statistics = subprocess.run(
        ["msgfmt", "--check", "--statistics", "-o", "/dev/null", str(catalog)],
        capture_output=True,
        text=True,
        check=False,
    )

    assert statistics.returncode == 0, statistics.stderr  # formats, plural forms and the header are sound
    assert "fuzzy" not in statistics.stderr and "untranslated" not in statistics.stderr, statistics.stderr
    assert unfinished(catalog) == {"untranslated": "", "fuzzy": ""}


def test_arabic_says_each_of_its_six_plural_forms():
    # Arabic counts zero, one, two, a few (3-10), many (11-99) and other (100-102, ...) apart.
    with translation.override("ar"):
        said = [
            translation.ngettext("%(seconds)s second", "%(seconds)s seconds", count) % {"seconds": count}
            for count in (0, 1, 2, 3, 11, 100)
        ]

    assert said == ["0 ثانية", "ثانية واحدة", "ثانيتين", "3 ثوانٍ", "11 ثانية", "100 ثانية"]


def copy_of_the_sources(destination: Path) -> Path:
    """The sources and catalogs copied to ``destination``, where makemessages may rewrite the catalogs."""
    ignored = shutil.ignore_patterns("__pycache__", "*.pyc", "*.mo")
    for name in (*SOURCES, "locale"):
        shutil.copytree(ROOT / name, destination / name, ignore=ignored)
    return destination


def extract_into(copy: Path, monkeypatch) -> None:
    """makemessages over the copy, merging every string the code marks into the copy's catalogs (a new one
    untranslated, a changed one fuzzy), as a translator's update starts."""
    monkeypatch.chdir(copy)
    with override_settings(LOCALE_PATHS=[copy / "locale"]):
        for domain in DOMAINS:
            call_command("makemessages", all=True, domain=domain, verbosity=0, add_location="file")


def test_the_catalogs_translate_every_string_the_pages_mark(tmp_path, monkeypatch):
    copy = copy_of_the_sources(tmp_path)
    extract_into(copy, monkeypatch)

    missing = {
        f"{language}/{domain}": unfinished(copy / "locale" / language / "LC_MESSAGES" / f"{domain}.po")
        for language in TRANSLATED
        for domain in DOMAINS
    }

    assert missing == {name: {"untranslated": "", "fuzzy": ""} for name in missing}


def test_a_new_string_without_its_translations_is_found(tmp_path, monkeypatch):
    copy = copy_of_the_sources(tmp_path)
    page = copy / "templates" / "collection" / "_taking_part.html"
    page.write_text(page.read_text() + '<p>{% translate "Your answers stay anonymous." %}</p>\n')

    extract_into(copy, monkeypatch)

    for language in TRANSLATED:
        found = unfinished(copy / "locale" / language / "LC_MESSAGES" / "django.po")
        assert 'msgid "Your answers stay anonymous."' in found["untranslated"], language

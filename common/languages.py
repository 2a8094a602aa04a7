"""The language a request asks for, from its link's ``lang=``, Django's language cookie or its
``Accept-Language``; without the database, so that the unavailable page can speak it too. Which language
a study's page is shown in is ``collection.languages``'s to say."""

from __future__ import annotations

from django.conf import settings
from django.utils.translation import get_supported_language_variant

LANGUAGE_PARAMETER = "lang"

# Longer values are no language tag we could speak (BCP 47 tags in practice stay under 35 characters).
MAX_LANGUAGE_TAG_LENGTH = 35
# Browsers send a few hundred characters at most; a longer header is read up to here.
MAX_ACCEPT_LANGUAGE_LENGTH = 1000
MAX_ACCEPT_LANGUAGE_ENTRIES = 30


def supported_language(tag: str | None) -> str | None:
    """The site's language for ``tag`` ("de-AT" -> "de"), or None when the site does not speak it."""
    if not tag or len(tag) > MAX_LANGUAGE_TAG_LENGTH:
        return None
    try:
        return get_supported_language_variant(tag.strip())
    except LookupError:
        return None


def accept_language_tags(header: str) -> list[str]:
    """The language tags of an Accept-Language header, most wanted first (RFC 9110 §12.5.4); tags with
    q=0 and the wildcard left out."""
    # Django's own parser (trans_real.parse_accept_lang_header) is not public API: these few lines read it.
    weighted = []
    for position, entry in enumerate(
        header[:MAX_ACCEPT_LANGUAGE_LENGTH].split(",")[:MAX_ACCEPT_LANGUAGE_ENTRIES]
    ):
        tag, _, parameters = entry.strip().partition(";")
        quality = 1.0
        name, _, value = parameters.strip().partition("=")
        if name.strip().lower() == "q":
            try:
                quality = float(value)
            except ValueError:
                continue
        tag = tag.strip()
        if tag and tag != "*" and 0 < quality <= 1:
            weighted.append((-quality, position, tag))
    return [tag for _quality, _position, tag in sorted(weighted)]


def language_of_link(request) -> str | None:
    """The site's language named by the link's ``lang=``, or None (absent, or a language not offered)."""
    return supported_language(request.GET.get(LANGUAGE_PARAMETER))


def language_asked(request) -> str | None:
    """The language the annotator asks for: the link's, else the one remembered from a link in this
    browser session, else the browser's first that the site speaks; None when none is."""
    for tag in (request.GET.get(LANGUAGE_PARAMETER), request.COOKIES.get(settings.LANGUAGE_COOKIE_NAME)):
        if language := supported_language(tag):
            return language
    for tag in accept_language_tags(request.headers.get("Accept-Language", "")):
        if language := supported_language(tag):
            return language
    return None

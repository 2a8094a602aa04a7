"""What the admin's pages share: numbers and messages in words, progress bars, read-only lists."""

from __future__ import annotations

from django.contrib import admin
from django.utils.html import format_html

from common.numbers import counted, percent_done  # noqa: F401  (counted: the admin's pages import it here)


def sentence(text: str) -> str:
    """A service's message as a sentence: capitalised, with a final full stop."""
    text = text.strip()
    text = text[:1].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else text + "."


def progress_bar(done: int, total: int) -> str:
    percent = percent_done(done, total) if total else 0
    return format_html('<progress value="{}" max="{}">{}%</progress>', done, total or 1, percent)


class ReadOnlyAdmin(admin.ModelAdmin):
    """Lists and detail pages only: these rows change through the protocol, never by hand."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

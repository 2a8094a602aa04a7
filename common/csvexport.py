"""CSV files the project writes, safe to open in a spreadsheet.

A cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is read by Excel,
LibreOffice and Google Sheets as a formula, so a token or a model name such as ``=HYPERLINK(...)``
would run when a researcher opens the export (CSV injection). As OWASP recommends, every such *text*
cell is written with a leading apostrophe (``'=HYPERLINK(...)``), which spreadsheets show as text; the
csv module quotes any cell holding a comma, quote or line break. Numbers are written as numbers
(``-0.25`` stays a number): only ``str`` cells are escaped, so numeric columns must be passed as
``int``/``float``, never pre-formatted as text. A program that reads the CSV back can undo the escape
with ``unescape_cell``.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator

from django.http import StreamingHttpResponse

FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")


def escape_cell(value):
    """The cell as written: text that a spreadsheet would take for a formula gets a leading ``'``."""
    if value is None:
        return ""
    if isinstance(value, str) and value.startswith(FORMULA_TRIGGERS):
        return "'" + value
    return value


def unescape_cell(value: str) -> str:
    """The text of a cell written by ``escape_cell`` (for files read back, e.g. the items to score)."""
    if value.startswith("'") and value[1:].startswith(FORMULA_TRIGGERS):
        return value[1:]
    return value


def escape_row(row: Iterable) -> list:
    return [escape_cell(cell) for cell in row]


class _Echo:
    """A file-like object whose ``write`` returns the line, for ``csv.writer`` inside a generator."""

    def write(self, value: str) -> str:
        return value


def csv_lines(header: Iterable[str], rows: Iterable[Iterable]) -> Iterator[str]:
    """The header and the rows as CSV lines, every cell escaped."""
    writer = csv.writer(_Echo(), lineterminator="\n")
    yield writer.writerow(escape_row(header))
    for row in rows:
        yield writer.writerow(escape_row(row))


def csv_text(header: Iterable[str], rows: Iterable[Iterable]) -> str:
    return "".join(csv_lines(header, rows))


def csv_download(filename: str, header: Iterable[str], rows: Iterable[Iterable]) -> StreamingHttpResponse:
    """A streamed CSV attachment: memory stays flat however many rows there are."""
    response = StreamingHttpResponse(csv_lines(header, rows), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response

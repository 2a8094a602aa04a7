"""The pools of a draft study: its tokens, grouped by semantic area, and its items, pairs of tokens.

Uploads are all or nothing: a bad row refuses the whole file, with every problem listed by line. Only a
draft changes its pools (the ballots measure its items), and not while one of its jobs runs.

Files are CSV separated by commas; a file that a spreadsheet saved with semicolons or tabs (Excel does
in locales whose decimal mark is a comma) is read with its own separator, and the report says so.
"""

from __future__ import annotations

import csv
import io
import itertools
from dataclasses import dataclass, field

import numpy as np
from django.db import transaction
from django.db.models import Count

from collection import limits
from collection.models import Item, SemanticArea, Study, StudyJob, Token
from collection.pairs import area_pairs, pair_count
from common.errors import ServiceError, StudyStateError, reported_errors
from common.numbers import counted, listed

MAX_UPLOAD_BYTES = 2 * 1024 * 1024


@dataclass
class ImportReport:
    areas_created: int = 0
    tokens_created: int = 0
    items_created: int = 0
    tokens_removed: int = 0
    items_removed: int = 0
    warnings: list[str] = field(default_factory=list)


# The separators a file may use, by how a report names them; a comma unless the file says otherwise.
SEPARATORS = {",": "commas", ";": "semicolons", "\t": "tabs"}
# The rows read to tell the separator: enough to outvote a few bad lines, few enough to cost nothing.
SEPARATOR_SAMPLE_ROWS = 50


_TRUE = {"1", "true", "yes", "y", "rare", "x"}


_FALSE = {"", "0", "false", "no", "n"}


def _decode_upload(data: bytes | str, *, what: str) -> str:
    if isinstance(data, str):
        text = data
    else:
        if len(data) > MAX_UPLOAD_BYTES:
            raise ServiceError(
                f"the {what} file is {len(data):,} bytes; the limit is {MAX_UPLOAD_BYTES:,} bytes (2 MiB)",
                status=413,
            )
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            line = data[: exc.start].count(b"\n") + 1
            raise ServiceError(
                f"the {what} file is not UTF-8 text (invalid byte at line {line}); save it as CSV UTF-8 and retry"
            ) from None
    if len(text.encode("utf-8")) > MAX_UPLOAD_BYTES:
        raise ServiceError(f"the {what} file is larger than {MAX_UPLOAD_BYTES:,} bytes (2 MiB)", status=413)
    if not text.strip():
        raise ServiceError(f"the {what} file is empty")
    if "\x00" in text:  # no text CSV holds one, and PostgreSQL cannot store it
        line = text[: text.index("\x00")].count("\n") + 1
        raise ServiceError(
            f"the {what} file contains a NUL character at line {line}: it is not a text CSV; "
            "save it as CSV UTF-8 and retry"
        )
    return text


def _normalise(text: str) -> str:
    return " ".join(text.split())


def _separator(text: str, columns: int) -> str:
    """The separator of a CSV: of comma, semicolon and tab, the one that splits the most of the first
    ``SEPARATOR_SAMPLE_ROWS`` non-blank rows into at least ``columns`` fields; a comma on a tie.

    Counting rows rather than looking at the first line alone lets a few bad lines (a token without its
    area) be reported as such instead of turning the whole file into one column.
    """
    best, best_fits = ",", -1
    for separator in SEPARATORS:
        fits = 0
        try:
            reader = csv.reader(io.StringIO(text, newline=""), delimiter=separator)
            rows = (row for row in reader if any(cell.strip() for cell in row))
            fits = sum(len(row) >= columns for row in itertools.islice(rows, SEPARATOR_SAMPLE_ROWS))
        except csv.Error:  # a quote left open under this separator: it is not the file's
            pass
        if fits > best_fits:
            best, best_fits = separator, fits
    return best


def _csv_rows(
    text: str, expected: tuple[str, ...], optional: tuple[str, ...] = (), *, what: str
) -> tuple[list[tuple[int, dict]], str]:
    """Rows as dicts keyed by the expected column names, with their line numbers, and the separator.

    A first row naming the columns (any order, any case) is a header; otherwise the columns are taken
    in the order ``expected + optional``. The separator is told by ``_separator``.
    """
    separator = _separator(text, len(expected))
    lines_and_rows = _read_csv(text, separator, what=what)
    columns = expected + optional
    header = [cell.strip().lower() for cell in lines_and_rows[0][1]] if lines_and_rows else []
    if set(expected) <= set(header):
        positions = {name: header.index(name) for name in columns if name in header}
        lines_and_rows = lines_and_rows[1:]
    else:
        positions = {name: index for index, name in enumerate(columns)}
    parsed = []
    for line, row in lines_and_rows:
        if not any(cell.strip() for cell in row):
            continue
        parsed.append(
            (line, {name: (row[index] if index < len(row) else "") for name, index in positions.items()})
        )
    return parsed, separator


def _read_csv(text: str, separator: str, *, what: str) -> list[tuple[int, list[str]]]:
    """Every row of the CSV with the line it starts on (a quoted field may hold line breaks).

    Read strictly: a quote never closed, or text after a closing quote, is refused with its line
    instead of swallowing the rest of the file into one field.
    """
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=separator, strict=True)
    rows = []
    start = 1
    try:
        for row in reader:
            rows.append((start, row))
            start = reader.line_num + 1
    except csv.Error as exc:
        close = f'close it (") on line {start}, or remove it'
        if str(exc) == "unexpected end of data":
            raise ServiceError(
                f"the {what} file has a quote that is never closed: the quoted field that starts on line "
                f"{start} runs to the end of the file; {close}"
            ) from None
        if str(exc).startswith("field larger than field limit"):
            raise ServiceError(
                f"the {what} file has a field longer than {csv.field_size_limit():,} characters from line "
                f"{start} on: a quote opened on line {start} and never closed does this; {close}"
            ) from None
        raise ServiceError(
            f"the {what} file cannot be read as CSV at line {reader.line_num}: {exc}; check the quotes on "
            'that line (a quote inside a quoted field is written twice: "the ""big"" apple")'
        ) from None
    return rows


def _separator_note(separator: str, what: str) -> list[str]:
    """The report's word on a file not separated by commas (empty for a comma-separated one)."""
    if separator == ",":
        return []
    return [f"the {what} file is separated by {SEPARATORS[separator]}, not commas: it was read that way"]


def _delete(rows) -> int:
    """Delete the rows of the queryset; how many of its own model went (not counting cascades)."""
    _, deleted = rows.delete()
    return deleted.get(rows.model._meta.label, 0)


def pools_editable(study: Study) -> bool:
    """Only a draft changes its pools: once started, the ballots measure its items."""
    return study.status == Study.Status.DRAFT


def require_draft(study: Study, action: str) -> None:
    """Refuse ``action`` (409) unless the study's pools may change."""
    if not pools_editable(study):
        raise StudyStateError(
            f"cannot {action}: the study is {study.status}; only a draft study can change its pools"
        )


def require_no_job(study: Study, action: str) -> None:
    """Refuse ``action`` (409) while a job of the study is pending or running."""
    running = study.jobs.filter(status__in=(StudyJob.Status.PENDING, StudyJob.Status.RUNNING)).first()
    if running is not None:
        raise StudyStateError(
            f"cannot {action} while the study's job {running.pk} ({running.get_kind_display()}) runs; "
            "wait for it to finish"
        )


@transaction.atomic
def tokens_import(*, study: Study, data: bytes | str, replace: bool = False) -> ImportReport:
    """Add tokens from CSV rows ``token, area[, rare]`` (a header row is optional).

    With ``replace``, the file becomes the whole pool: the study's tokens, semantic areas and items are
    removed first (the items pair the old tokens: generate or upload them again).
    All or nothing: any bad row refuses the whole file, with every problem listed by line, and a refused
    replacement leaves the pool as it was.
    """
    study = Study.objects.select_for_update().get(pk=study.pk)
    action = "replace the tokens" if replace else "import tokens"
    require_draft(study, action)
    require_no_job(study, action)
    text = _decode_upload(data, what="tokens")
    rows, separator = _csv_rows(text, ("token", "area"), ("rare",), what="tokens")
    if not rows:
        raise ServiceError("the tokens file has no rows: expected lines of token, area[, rare]")
    existing_count = 0 if replace else study.tokens.count()
    if existing_count + len(rows) > limits.MAX_TOKENS:
        held = f" and the study {existing_count:,}" if existing_count else ""
        raise ServiceError(
            f"the file has {counted(len(rows), 'token')}{held}; a study holds at most "
            f"{limits.MAX_TOKENS:,} tokens (its items pair them, and it holds at most {limits.MAX_ITEMS:,} "
            "items): nothing was imported",
            status=413,
        )

    errors: list[str] = []
    existing = (
        {} if replace else {_normalise(t).casefold(): t for t in study.tokens.values_list("text", flat=True)}
    )
    seen: dict[str, int] = {}
    accepted: list[tuple[str, str, bool]] = []
    for line, row in rows:
        token = _normalise(row.get("token", ""))
        area = _normalise(row.get("area", ""))
        rare_text = row.get("rare", "").strip().lower()
        key = token.casefold()
        if not token:
            errors.append(f"line {line}: the token is empty")
        elif len(token) > Token.MAX_LENGTH:
            errors.append(
                f"line {line}: the token is {len(token)} characters long; the limit is {Token.MAX_LENGTH}"
            )
        elif key in seen:
            errors.append(f"line {line}: {token!r} repeats line {seen[key]}")
        elif key in existing:
            errors.append(f"line {line}: {token!r} is already in this study")
        if not area:
            errors.append(f"line {line}: the semantic area is empty")
        elif len(area) > 100:
            errors.append(f"line {line}: the area name is longer than 100 characters")
        if rare_text not in _TRUE | _FALSE:
            errors.append(f"line {line}: rare must be 1/0, true/false or yes/no, not {row.get('rare')!r}")
        seen.setdefault(key, line)
        accepted.append((token, area, rare_text in _TRUE))

    area_sizes: dict[str, int] = {}
    if not replace:
        for name, count in (
            SemanticArea.objects.filter(study=study).values_list("name").annotate(n=Count("tokens"))
        ):
            area_sizes[name] = count
    for _, area, _ in accepted:
        area_sizes[area] = area_sizes.get(area, 0) + 1
    for area, count in sorted(area_sizes.items()):
        if area and count < 2:
            errors.append(
                f"area {area!r} has {counted(count, 'token')}; an area needs at least two tokens to form an item"
            )
    if errors:
        raise ServiceError(
            f"the tokens file has {counted(len(errors), 'problem')}; nothing was imported",
            errors=reported_errors(errors),
        )

    report = ImportReport(warnings=_separator_note(separator, "tokens"))
    if replace:
        # Inside this transaction: should anything below fail, the old pool comes back whole.
        report.items_removed = _delete(study.items.all())
        report.tokens_removed = _delete(study.tokens.all())
        study.areas.all().delete()
        study.item_source = ""
        study.save(update_fields=["item_source"])
    areas = {a.name: a for a in study.areas.all()}
    for _, area, _ in accepted:
        if area not in areas:
            areas[area] = SemanticArea.objects.create(study=study, name=area)
            report.areas_created += 1
    Token.objects.bulk_create(
        [Token(study=study, area=areas[area], text=token, rare=rare) for token, area, rare in accepted]
    )
    report.tokens_created = len(accepted)
    return report


def _generation_sizes(study: Study, max_per_area: int | None) -> list[tuple[int, str, int, int]]:
    """(area id, area name, tokens, items it will give) for every area of the study, by name."""
    rows = (
        SemanticArea.objects.filter(study=study)
        .order_by("name")
        .values_list("pk", "name")
        .annotate(token_count=Count("tokens"))
    )
    sizes = []
    for area_id, name, token_count in rows:
        pairs = pair_count(token_count)
        sizes.append(
            (area_id, name, token_count, pairs if max_per_area is None else min(pairs, max_per_area))
        )
    return sizes


def items_generation_size(*, study: Study, max_per_area: int | None = None) -> int:
    """How many items ``items_generate`` would make; a ServiceError if the study's limits refuse it."""
    if max_per_area is not None and max_per_area < 1:
        raise ServiceError(f"the cap per area must be at least 1, got {max_per_area}")
    sizes = _generation_sizes(study, max_per_area)
    total = sum(items for *_, items in sizes)
    if total > limits.MAX_ITEMS:
        areas = max(1, sum(1 for *_, token_count, _ in sizes if token_count >= 2))
        raise ServiceError(
            f"these tokens give {total:,} items; a study holds at most {limits.MAX_ITEMS:,} (the instrument "
            f"card's bootstrap and every evaluation grow with the items): set a cap of at most "
            f"{limits.MAX_ITEMS // areas:,} pairs per area, or use fewer tokens",
            status=413,
        )
    return total


@transaction.atomic
def items_generate(
    *, study: Study, max_per_area: int | None = None, seed: int | None = None, progress=None
) -> ImportReport:
    """Replace the study's items by all pairs of distinct tokens within each area (§2.2).

    With ``max_per_area``, each area keeps a uniform random sample of that many pairs (drawn without
    listing every pair: ``collection.pairs``). Refused beyond ``limits.MAX_ITEMS`` items.
    ``progress(done, total)`` is called as the items are written.
    """
    study = Study.objects.select_for_update().get(pk=study.pk)
    require_draft(study, "generate items")
    total = items_generation_size(study=study, max_per_area=max_per_area)
    if total < 2:
        raise ServiceError("the study needs at least two items: add tokens (two or more per area) first")
    rng = np.random.default_rng(study.seed if seed is None else seed)
    tokens_by_area: dict[int, list[int]] = {}
    for area_id, token_id in (
        Token.objects.filter(study=study).order_by("area_id", "pk").values_list("area_id", "pk")
    ):
        tokens_by_area.setdefault(area_id, []).append(token_id)
    report = ImportReport()
    areas, lows, highs = [], [], []
    for area_id, name, token_count, _ in _generation_sizes(study, max_per_area):
        if token_count < 2:
            report.warnings.append(f"area {name!r} has fewer than two tokens and gives no item")
            continue
        first, second = area_pairs(token_count, max_per_area, rng)
        if max_per_area is not None and pair_count(token_count) > max_per_area:
            report.warnings.append(
                f"area {name!r}: sampled {max_per_area} of {pair_count(token_count)} pairs"
            )
        token_ids = np.asarray(tokens_by_area[area_id], dtype=np.int64)
        areas.append(np.full(first.size, area_id, dtype=np.int64))
        lows.append(token_ids[first])
        highs.append(token_ids[second])
    area_of, token_a, token_b = (np.concatenate(parts) for parts in (areas, lows, highs))
    report.items_removed = _delete(study.items.all())
    batch = 2000
    for start in range(0, area_of.size, batch):
        stop = min(start + batch, area_of.size)
        Item.objects.bulk_create(
            [
                Item(study=study, area_id=area, token_a_id=a, token_b_id=b, index=index)
                for index, area, a, b in zip(
                    range(start, stop),
                    area_of[start:stop].tolist(),
                    token_a[start:stop].tolist(),
                    token_b[start:stop].tolist(),
                    strict=True,
                )
            ]
        )
        if progress:
            progress(stop, area_of.size)
    report.items_created = int(area_of.size)
    study.item_source = (
        "all pairs of distinct tokens within each semantic area"
        if max_per_area is None
        else f"a uniform random sample of at most {counted(max_per_area, 'pair')} of distinct tokens per semantic area"
    )
    study.save(update_fields=["item_source"])
    return report


@transaction.atomic
def items_import_pairs(*, study: Study, data: bytes | str) -> ImportReport:
    """Replace the study's items by explicit pairs ``token_a, token_b`` of tokens already imported.

    Both tokens must belong to the same semantic area. All or nothing, errors listed by line.
    """
    study = Study.objects.select_for_update().get(pk=study.pk)
    require_draft(study, "import items")
    require_no_job(study, "import items")
    text = _decode_upload(data, what="items")
    rows, separator = _csv_rows(text, ("token_a", "token_b"), what="items")
    if len(rows) > limits.MAX_ITEMS:
        raise ServiceError(
            f"the file has {counted(len(rows), 'pair')}; a study holds at most {limits.MAX_ITEMS:,} items (the instrument "
            "card's bootstrap and every evaluation grow with the items): nothing was imported",
            status=413,
        )
    tokens = {_normalise(t.text).casefold(): t for t in study.tokens.all()}
    errors: list[str] = []
    seen: dict[tuple[int, int], int] = {}
    pairs: list[tuple[Token, Token]] = []
    for line, row in rows:
        names = [_normalise(row.get("token_a", "")), _normalise(row.get("token_b", ""))]
        found = [tokens.get(name.casefold()) for name in names]
        missing = [name for name, token in zip(names, found, strict=True) if token is None]
        if missing:
            errors.append(
                f"line {line}: unknown {'token' if len(missing) == 1 else 'tokens'} "
                f"{listed(repr(m) for m in missing)}; import them first"
            )
            continue
        a, b = sorted(found, key=lambda t: t.id)
        if a.id == b.id:
            errors.append(f"line {line}: an item needs two different tokens, got {names[0]!r} twice")
        elif a.area_id != b.area_id:
            errors.append(f"line {line}: {a.text!r} and {b.text!r} belong to different semantic areas")
        elif (a.id, b.id) in seen:
            errors.append(f"line {line}: the pair repeats line {seen[(a.id, b.id)]}")
        else:
            seen[(a.id, b.id)] = line
            pairs.append((a, b))
    if not errors and len(pairs) < 2:
        errors.append(f"the file gives {counted(len(pairs), 'item')}; a study needs at least two")
    if errors:
        raise ServiceError(
            f"the items file has {counted(len(errors), 'problem')}; nothing was imported",
            errors=reported_errors(errors),
        )
    items_removed = _delete(study.items.all())
    Item.objects.bulk_create(
        [
            Item(study=study, area_id=a.area_id, token_a=a, token_b=b, index=i)
            for i, (a, b) in enumerate(pairs)
        ],
        batch_size=2000,
    )
    study.item_source = "explicit pairs uploaded by the researcher"
    study.save(update_fields=["item_source"])
    return ImportReport(
        items_created=len(pairs), items_removed=items_removed, warnings=_separator_note(separator, "items")
    )

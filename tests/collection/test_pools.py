"""Tokens, semantic areas and items: uploads that are all-or-nothing and say what is wrong, by line."""

import pytest

from collection.models import Item, SemanticArea, Study, Token
from collection.pools import MAX_UPLOAD_BYTES, items_generate, items_import_pairs, tokens_import
from collection.studies import study_duplicate
from common.errors import ServiceError, StudyStateError
from tests.factories import make_study

pytestmark = pytest.mark.django_db


@pytest.fixture
def study():
    return Study.objects.create(name="Pools", slug="pools")


def test_it_imports_tokens_by_area_with_or_without_a_header(study):
    report = tokens_import(study=study, data="token,area,rare\nsales,Marketing,0\nbrand,Marketing,yes\n")
    assert (report.areas_created, report.tokens_created) == (1, 2)
    tokens_import(study=study, data=b"python,Computing\njava,Computing,1\n")
    assert list(study.tokens.order_by("text").values_list("text", "area__name", "rare")) == [
        ("brand", "Marketing", True),
        ("java", "Computing", True),
        ("python", "Computing", False),
        ("sales", "Marketing", False),
    ]


def test_a_utf8_file_with_a_byte_order_mark_is_read(study):
    tokens_import(study=study, data="\ufefftoken,area\ncafé,Food\nthé,Food\n".encode())
    assert sorted(study.tokens.values_list("text", flat=True)) == ["café", "thé"]


def test_every_problem_is_reported_by_line_and_nothing_is_imported(study):
    data = (
        "token,area,rare\nsales,M,0\n  Sales ,M,0\n,M,0\n"
        + "x" * 101
        + ",M,0\nok,,0\nfine,M,maybe\nlonely,Solo,0\n"
    )
    with pytest.raises(ServiceError) as raised:
        tokens_import(study=study, data=data)
    assert raised.value.message == "the tokens file has 6 problems; nothing was imported"
    assert raised.value.errors == [
        "line 3: 'Sales' repeats line 2",
        "line 4: the token is empty",
        "line 5: the token is 101 characters long; the limit is 100",
        "line 6: the semantic area is empty",
        "line 7: rare must be 1/0, true/false or yes/no, not 'maybe'",
        "area 'Solo' has 1 token; an area needs at least two tokens to form an item",
    ]
    assert Token.objects.count() == 0 and SemanticArea.objects.count() == 0


def test_a_token_already_in_the_study_is_a_duplicate(study):
    tokens_import(study=study, data="sales,M\nbrand,M\n")
    with pytest.raises(ServiceError) as raised:
        tokens_import(study=study, data="SALES,M\nprice,M\n")
    assert raised.value.errors == ["line 1: 'SALES' is already in this study"]
    assert study.tokens.count() == 2


def test_bytes_that_are_not_utf8_are_refused_with_the_line(study):
    with pytest.raises(ServiceError, match=r"not UTF-8 text \(invalid byte at line 2\)"):
        tokens_import(study=study, data=b"sales,M\ncaf\xe9,M\n")


def test_an_empty_or_too_large_file_is_refused(study):
    with pytest.raises(ServiceError, match="the tokens file is empty"):
        tokens_import(study=study, data=b"  \n")
    with pytest.raises(ServiceError) as raised:
        tokens_import(study=study, data=b"a,b\n" * (MAX_UPLOAD_BYTES // 4 + 1))
    assert raised.value.status == 413


def test_items_are_all_pairs_within_each_area(study):
    tokens_import(study=study, data="a,X\nb,X\nc,X\nd,Y\ne,Y\n")
    report = items_generate(study=study)
    assert report.items_created == 3 + 1
    assert sorted(study.items.values_list("index", flat=True)) == [0, 1, 2, 3]
    pairs = {(i.area.name, frozenset((i.token_a.text, i.token_b.text))) for i in study.items.all()}
    assert pairs == {
        ("X", frozenset("ab")),
        ("X", frozenset("ac")),
        ("X", frozenset("bc")),
        ("Y", frozenset("de")),
    }


def test_items_can_be_sampled_down_to_a_cap_per_area(study):
    tokens_import(study=study, data="".join(f"t{i},X\n" for i in range(10)))
    report = items_generate(study=study, max_per_area=12)
    assert report.items_created == 12 and report.warnings == ["area 'X': sampled 12 of 45 pairs"]
    assert study.items.values("token_a", "token_b").distinct().count() == 12


def test_explicit_pairs_replace_the_items_and_are_checked_by_line(study):
    tokens_import(study=study, data="a,X\nb,X\nc,X\nd,Y\ne,Y\n")
    items_import_pairs(study=study, data="token_a,token_b\na,b\nd,e\n")
    assert study.items.count() == 2
    with pytest.raises(ServiceError) as raised:
        items_import_pairs(study=study, data="a,z\na,a\na,d\nb,a\na,b\n")
    assert raised.value.errors == [
        "line 1: unknown token 'z'; import them first",
        "line 2: an item needs two different tokens, got 'a' twice",
        "line 3: 'a' and 'd' belong to different semantic areas",
        "line 5: the pair repeats line 4",
    ]
    assert study.items.count() == 2


def test_pools_are_frozen_once_the_study_runs():
    study = make_study()
    with pytest.raises(StudyStateError, match="the study is running"):
        tokens_import(study=study, data="new,Area0\nother,Area0\n")
    with pytest.raises(StudyStateError):
        items_generate(study=study)


def test_a_duplicate_has_the_same_items_and_plan_and_no_votes():
    study = make_study()
    copy = study_duplicate(study=study)
    assert copy.status == Study.Status.DRAFT and copy.duplicated_from == study and copy.seed != study.seed
    assert copy.slug == f"{study.slug}-copy" and study_duplicate(study=study).slug == f"{study.slug}-copy-2"
    original = sorted((i.index, i.token_a.text, i.token_b.text) for i in study.items.all())
    copied = sorted((i.index, i.token_a.text, i.token_b.text) for i in copy.items.all())
    assert original == copied
    assert (copy.ballot_count, copy.keep_fraction, copy.appearances) == (3, 0.5, 4)
    assert copy.ballots.count() == 0 and Item.objects.filter(study=copy).count() == 15


# --- replacing the pool ----------------------------------------------------------------------------


def pool_of(study: Study) -> list[tuple[str, str, bool]]:
    return sorted(study.tokens.values_list("text", "area__name", "rare"))


def test_a_replacement_becomes_the_whole_pool_and_says_what_it_removed(study):
    tokens_import(study=study, data="a,X\nb,X\nc,X\nd,Y\ne,Y\n")
    items_generate(study=study)
    items_import_pairs(study=study, data="a,b\nd,e\n")

    report = tokens_import(
        study=study, data="token,area,rare\nlion,Animals,1\nmouse,Animals,0\n", replace=True
    )

    assert (report.tokens_removed, report.items_removed) == (5, 2)
    assert (report.tokens_created, report.areas_created, report.items_created) == (2, 1, 0)
    assert pool_of(study) == [("lion", "Animals", True), ("mouse", "Animals", False)]
    assert list(study.areas.values_list("name", flat=True)) == ["Animals"]
    assert study.items.count() == 0
    study.refresh_from_db()
    assert study.item_source == ""  # the explicit pairs it described are gone


def test_a_replacement_may_reuse_the_tokens_it_removes(study):
    tokens_import(study=study, data="a,X\nb,X\n")

    report = tokens_import(study=study, data="A,Y\nb,Y\nc,Y\n", replace=True)

    assert (report.tokens_removed, report.tokens_created) == (2, 3)
    assert pool_of(study) == [("A", "Y", False), ("b", "Y", False), ("c", "Y", False)]


def test_a_refused_replacement_leaves_the_pool_as_it_was(study):
    tokens_import(study=study, data="a,X\nb,X\nc,X\n")
    items_generate(study=study)
    items_before = sorted(study.items.values_list("pk", "token_a__text", "token_b__text"))

    with pytest.raises(ServiceError) as raised:
        tokens_import(study=study, data="lion,Animals\nmouse,Animals\nlonely,Solo\n", replace=True)
    assert raised.value.errors == [
        "area 'Solo' has 1 token; an area needs at least two tokens to form an item"
    ]
    with pytest.raises(ServiceError, match="the tokens file is empty"):
        tokens_import(study=study, data=b"\xef\xbb\xbf\r\n", replace=True)
    with pytest.raises(ServiceError) as too_large:
        tokens_import(study=study, data=b"a,b\n" * (MAX_UPLOAD_BYTES // 4 + 1), replace=True)
    assert too_large.value.status == 413

    assert pool_of(study) == [("a", "X", False), ("b", "X", False), ("c", "X", False)]
    assert sorted(study.items.values_list("pk", "token_a__text", "token_b__text")) == items_before


def test_a_replacement_that_fails_while_writing_leaves_the_pool_as_it_was(study, monkeypatch):
    tokens_import(study=study, data="a,X\nb,X\nc,X\n")
    items_generate(study=study)

    def broken_bulk_create(*args, **kwargs):
        raise RuntimeError("the database went away half-way")

    monkeypatch.setattr(Token.objects, "bulk_create", broken_bulk_create)
    with pytest.raises(RuntimeError):
        tokens_import(study=study, data="lion,Animals\nmouse,Animals\n", replace=True)

    assert pool_of(study) == [("a", "X", False), ("b", "X", False), ("c", "X", False)]
    assert study.items.count() == 3 and list(study.areas.values_list("name", flat=True)) == ["X"]


def test_only_a_draft_replaces_its_pool():
    study = make_study()
    tokens_before = pool_of(study)

    with pytest.raises(StudyStateError) as raised:
        tokens_import(study=study, data="new,Area0\nother,Area0\n", replace=True)

    assert raised.value.message == (
        "cannot replace the tokens: the study is running; only a draft study can change its pools"
    )
    assert pool_of(study) == tokens_before and study.items.count() == 15


# --- files as spreadsheets save them ----------------------------------------------------------------


def test_quoted_fields_with_commas_and_quotes_are_one_token(study):
    data = 'token,area\n"salt, sea",Food\n"the ""big"" apple",Food\n"pepper",Food\n'

    tokens_import(study=study, data=data)

    assert pool_of(study) == [
        ("pepper", "Food", False),
        ("salt, sea", "Food", False),
        ('the "big" apple', "Food", False),
    ]


@pytest.mark.parametrize("end", ["\n", ""])  # with or without the last line's end
def test_an_unterminated_quote_is_reported_with_its_line_and_imports_nothing(study, end):
    data = 'token,area\nlion,Animals\n"tiger,Animals\nsalt,Food\npepper,Food' + end

    with pytest.raises(ServiceError) as raised:
        tokens_import(study=study, data=data)

    assert raised.value.message == (
        "the tokens file has a quote that is never closed: the quoted field that starts on line 3 runs to "
        'the end of the file; close it (") on line 3, or remove it'
    )
    assert Token.objects.count() == 0


def test_an_unterminated_quote_in_a_pairs_or_checks_file_is_reported_with_its_line(study):
    from collection.checks import checks_import

    tokens_import(study=study, data="a,X\nb,X\nc,X\n")
    items_import_pairs(study=study, data="a,b\nb,c\n")

    with pytest.raises(ServiceError) as pairs:
        items_import_pairs(study=study, data='a,b\na,"c\n')
    with pytest.raises(ServiceError) as checks:
        checks_import(study=study, data='gold,a,b,"b,c,left\n')

    assert (pairs.value.message, checks.value.message) == (
        "the items file has a quote that is never closed: the quoted field that starts on line 2 runs to "
        'the end of the file; close it (") on line 2, or remove it',
        "the checks file has a quote that is never closed: the quoted field that starts on line 1 runs to "
        'the end of the file; close it (") on line 1, or remove it',
    )
    assert study.items.count() == 2


def test_a_field_that_runs_past_the_csv_field_limit_is_reported_as_a_quote_left_open(study):
    # A quote opened early in a large file swallows more than csv's field limit (131,072 characters).
    data = "token,area\n" + '"lion,Animals\n' + "".join(f"token{i},Area\n" for i in range(15_000))

    with pytest.raises(ServiceError) as raised:
        tokens_import(study=study, data=data)

    assert raised.value.message == (
        "the tokens file has a field longer than 131,072 characters from line 2 on: a quote opened on "
        'line 2 and never closed does this; close it (") on line 2, or remove it'
    )


def test_a_quoted_token_over_two_lines_keeps_the_line_numbers_of_the_rows_after_it(study):
    data = 'token,area\n"sea\nsalt",Food\npepper,Food\n,Food\n'

    with pytest.raises(ServiceError) as raised:
        tokens_import(study=study, data=data)

    assert raised.value.errors == ["line 5: the token is empty"]


def test_text_after_a_closing_quote_is_reported_with_its_line(study):
    with pytest.raises(ServiceError) as raised:
        tokens_import(study=study, data='lion,Animals\n"tiger" cat,Animals\n')

    assert raised.value.message == (
        "the tokens file cannot be read as CSV at line 2: ',' expected after '\"'; check the quotes on "
        'that line (a quote inside a quoted field is written twice: "the ""big"" apple")'
    )


def test_a_file_from_excel_with_a_bom_and_crlf_line_ends_is_read(study):
    data = "\ufefftoken,area,rare\r\ncafé,Food,0\r\nthé,Food,1\r\n\r\n".encode()

    report = tokens_import(study=study, data=data)

    assert report.warnings == []
    assert pool_of(study) == [("café", "Food", False), ("thé", "Food", True)]


def test_a_file_with_old_mac_line_ends_is_read(study):
    tokens_import(study=study, data=b"lion,Animals\rmouse,Animals\r")

    assert pool_of(study) == [("lion", "Animals", False), ("mouse", "Animals", False)]


def test_a_semicolon_file_from_a_european_spreadsheet_is_read_and_the_report_says_so(study):
    # Excel in a German locale: "CSV UTF-8" with a BOM, semicolons, CRLF, and quotes only where needed.
    data = (
        "\ufefftoken;area;rare\r\n"
        "Bär;Tiere;0\r\n"
        '"Maus; klein";Tiere;1\r\n'
        "Salz, grob;Küche;0\r\n"
        "Pfeffer;Küche;0\r\n"
    ).encode()

    report = tokens_import(study=study, data=data)

    assert report.warnings == ["the tokens file is separated by semicolons, not commas: it was read that way"]
    assert pool_of(study) == [
        ("Bär", "Tiere", False),
        ("Maus; klein", "Tiere", True),
        ("Pfeffer", "Küche", False),
        ("Salz, grob", "Küche", False),
    ]


def test_a_tab_separated_file_is_read(study):
    report = tokens_import(study=study, data="token\tarea\nlion\tAnimals\nhouse cat\tAnimals\n")

    assert report.warnings == ["the tokens file is separated by tabs, not commas: it was read that way"]
    assert pool_of(study) == [("house cat", "Animals", False), ("lion", "Animals", False)]


def test_a_bad_line_of_a_semicolon_file_is_reported_alone(study):
    # Before, a semicolon file was read as one column: every line lacked its area.
    with pytest.raises(ServiceError) as raised:
        tokens_import(study=study, data="lion;Animals\nmouse;Animals\ntiger\nwolf;Animals\n")

    assert raised.value.errors == ["line 3: the semantic area is empty"]
    assert Token.objects.count() == 0


def test_a_file_of_one_column_reports_every_missing_area(study):
    with pytest.raises(ServiceError) as raised:
        tokens_import(study=study, data="lion\nmouse\n")

    assert raised.value.errors == ["line 1: the semantic area is empty", "line 2: the semantic area is empty"]


def test_explicit_pairs_may_be_separated_by_semicolons(study):
    tokens_import(study=study, data="a,X\nb,X\nc,X\n")

    report = items_import_pairs(study=study, data="token_a;token_b\r\na;b\r\nb;c\r\n")

    assert report.warnings == ["the items file is separated by semicolons, not commas: it was read that way"]
    assert (report.items_created, report.items_removed) == (2, 0)
    assert sorted((i.token_a.text, i.token_b.text) for i in study.items.all()) == [("a", "b"), ("b", "c")]
    assert items_import_pairs(study=study, data="a,c\nb,c\n").items_removed == 2


# --- counts in words --------------------------------------------------------------------------------


def test_the_problems_of_a_file_are_counted_in_words(study):
    # Before: "1 problem(s)", "unknown token(s)", "has 0 token", "gives 1 item(s)".
    with pytest.raises(ServiceError) as one:
        tokens_import(study=study, data="a,X\nb,X\nc,\n")
    assert one.value.message == "the tokens file has 1 problem; nothing was imported"
    SemanticArea.objects.create(study=study, name="Empty")
    with pytest.raises(ServiceError) as empty_area:
        tokens_import(study=study, data="a,X\nb,X\n")
    assert empty_area.value.errors == [
        "area 'Empty' has 0 tokens; an area needs at least two tokens to form an item"
    ]
    SemanticArea.objects.filter(name="Empty").delete()
    tokens_import(study=study, data="a,X\nb,X\nc,X\n")
    with pytest.raises(ServiceError) as unknown:
        items_import_pairs(study=study, data="a,y\nz,y\na,b\n")
    assert unknown.value.errors == [
        "line 1: unknown token 'y'; import them first",
        "line 2: unknown tokens 'z' and 'y'; import them first",
    ]
    with pytest.raises(ServiceError) as few:
        items_import_pairs(study=study, data="a,b\n")
    assert few.value.errors == ["the file gives 1 item; a study needs at least two"]


def test_the_items_say_how_they_were_made_after_each_way_of_making_them(study):
    # The instrument card reports item_source: generating after an upload of pairs must not keep
    # describing the items as uploaded pairs.
    tokens_import(study=study, data="a,X\nb,X\nc,X\nd,Y\ne,Y\n")
    items_import_pairs(study=study, data="a,b\nd,e\n")
    study.refresh_from_db()
    assert study.item_source == "explicit pairs uploaded by the researcher"
    items_generate(study=study)
    study.refresh_from_db()
    assert study.item_source == "all pairs of distinct tokens within each semantic area"
    items_generate(study=study, max_per_area=1)
    study.refresh_from_db()
    assert (
        study.item_source == "a uniform random sample of at most 1 pair of distinct tokens per semantic area"
    )

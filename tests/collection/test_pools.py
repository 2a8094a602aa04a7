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
    assert raised.value.message == "the tokens file has 6 problem(s); nothing was imported"
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
        "line 1: unknown token(s) 'z'; import them first",
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

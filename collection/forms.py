"""Forms of the researchers' admin (the study form, pool uploads and duplication) and the voting page's."""

from __future__ import annotations

import copy
import re
from functools import cached_property

from django import forms
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils.html import escape
from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy

from collection import limits
from collection.checks import check_item_key, check_item_missing, study_items_by_tokens
from collection.models import Check, Study, Token
from collection.pools import MAX_UPLOAD_BYTES
from collection.studies import STUDY_SETTINGS, study_setting_problems
from common.serializers import MAX_DATABASE_ID


def _sentence(text: str) -> str:
    text = text.strip()
    if "_" not in text.split(" ", 1)[0]:  # a field name (keep_fraction) keeps its case
        text = text[:1].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else text + "."


# A setting's code (hidden_share) in a service's message, for the admin to say by its label instead.
_SETTING_CODES = re.compile(
    r"\b("
    + "|".join(sorted((name for name in STUDY_SETTINGS if "_" in name), key=len, reverse=True))
    + r")\b"
)


def in_field_labels(text: str) -> str:
    """A service's message as the admin says it: each setting named by the label of its field ("hidden
    share"), not by the code the API uses (``hidden_share``)."""
    return _SETTING_CODES.sub(lambda match: str(Study._meta.get_field(match[1]).verbose_name), text)


# The range of a number whose rule is not all in the model's validators (a check constraint, or the
# form's own clean_<name>), in the words of the form's messages.
_RANGES_SAID = {
    "keep_fraction": "a number strictly between 0 and 1",
    "seconds_per_comparison": f"a number above 0 and at most {limits.MAX_SECONDS_PER_COMPARISON:,}",
    "minimum_coverage": "a number from 0 to 1",
    "quality_position_alpha": "a number strictly between 0 and 1",
}


def _number(value) -> str:
    return f"{int(value):,}" if float(value).is_integer() else f"{value:g}"


def _range_said(name: str, field: forms.Field) -> str:
    """What a number field of the study form allows, from the model's validators and the form field's
    bounds: "a whole number from 1 to 1,000"."""
    if name in _RANGES_SAID:
        return _RANGES_SAID[name]
    validators = Study._meta.get_field(name).validators
    lows = [v.limit_value for v in validators if isinstance(v, MinValueValidator)]
    highs = [v.limit_value for v in validators if isinstance(v, MaxValueValidator)]
    lows += [field.min_value] if getattr(field, "min_value", None) is not None else []
    highs += [field.max_value] if getattr(field, "max_value", None) is not None else []
    kind = "a number" if isinstance(field, forms.FloatField) else "a whole number"
    if lows and highs:
        return f"{kind} from {_number(max(lows))} to {_number(min(highs))}"
    if lows:
        return f"{kind}, at least {_number(max(lows))}"
    return f"{kind}, at most {_number(min(highs))}" if highs else kind


def _generic_messages(name: str) -> set[str]:
    """Django's own words for the bounds of a model field ("Ensure this value is greater than or equal to
    1."), which the form says as the field's range instead."""
    return {
        validator.message % {"limit_value": validator.limit_value}
        for validator in Study._meta.get_field(name).validators
        if isinstance(validator, MinValueValidator | MaxValueValidator)
        and validator.message == type(validator).message
    }


def _https_urls(field, **kwargs):
    # The admin rebuilds the form without a read-only declared field (a finished study's completion
    # URL) from the model's fields: assume https there too, as the declared field does.
    if isinstance(field, models.URLField):
        kwargs.setdefault("assume_scheme", "https")
    return field.formfield(**kwargs)


class StudyAdminForm(forms.ModelForm):
    """The study form: each field's shape said in words instead of failed database constraints.

    The rules between fields and of the study's state are the services' (``study_setting_problems``,
    ``STUDY_SETTINGS``): the form shows their problems beside the fields, and the admin saves through
    ``study_create`` and ``study_update``, which check them again on the locked row.
    """

    completion_redirect_url = forms.URLField(
        required=False,
        assume_scheme="https",
        max_length=Study._meta.get_field("completion_redirect_url").max_length,
        help_text=Study._meta.get_field("completion_redirect_url").help_text,
    )

    class Meta:
        model = Study
        fields = tuple(STUDY_SETTINGS)  # every setting of a study, and only those
        formfield_callback = _https_urls

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if "slug" in self.fields:  # the admin renders help texts as HTML: "<slug>" would vanish
            self.fields["slug"].help_text = escape(self.fields["slug"].help_text)
        if "seed" in self.fields:
            self.fields["seed"].required = False
            self.fields["seed"].help_text += " Blank: keep the current one (a random seed for a new study)."
        if "check_rate" in self.fields:
            self.fields["check_rate"].required = False
            self.fields["check_rate"].help_text += " Blank: 0."
        for name, field in self.fields.items():
            if isinstance(field, forms.IntegerField):  # a FloatField too
                said = f"{field.label} must be {_range_said(name, field)}."
                field.error_messages.update(invalid=said, min_value=said, max_value=said)

    def clean_question(self):
        return self.cleaned_data["question"].replace("\r\n", "\n")

    def clean_instructions(self):
        # Browsers send CRLF: unchanged text must not count as a change of a running study.
        return self.cleaned_data["instructions"].replace("\r\n", "\n")

    def clean_seed(self):
        value = self.cleaned_data["seed"]
        return self.instance.seed if value is None else value

    def clean_check_rate(self):
        value = self.cleaned_data["check_rate"]
        return 0.0 if value is None else value

    def clean_minimum_coverage(self):
        value = self.cleaned_data["minimum_coverage"]
        if value is not None and not 0 <= value <= 1:
            raise forms.ValidationError(
                "The minimum coverage is a share of the items, from 0 to 1: 0.5 refuses models that score "
                "fewer than half of them."
            )
        return value

    def clean_quality_position_alpha(self):
        value = self.cleaned_data["quality_position_alpha"]
        if value is not None and not 0 < value < 1:
            raise forms.ValidationError(_sentence(in_field_labels(limits.QUALITY_ALPHA_MESSAGE)))
        return value

    def clean_keep_fraction(self):
        value = self.cleaned_data["keep_fraction"]
        if value is not None and not 0 < value < 1:
            raise forms.ValidationError(
                "α must lie strictly between 0 and 1, e.g. 0.5 keeps half of the items after each ballot."
            )
        return value

    def clean_ballot_count(self):
        value = self.cleaned_data["ballot_count"]
        if value is not None and value < 1:
            raise forms.ValidationError("A study needs at least one ballot; §2.7 suggests 2 to 10.")
        return value

    def clean_appearances(self):
        value = self.cleaned_data["appearances"]
        if value == 0:
            raise forms.ValidationError("M must be at least 1; leave it blank to derive it from a budget.")
        return value

    def clean_seconds_per_comparison(self):
        value = self.cleaned_data["seconds_per_comparison"]
        if value is not None and value <= 0:
            raise forms.ValidationError("The time per comparison must be positive, e.g. 6 seconds.")
        return value

    def clean_lease_seconds(self):
        value = self.cleaned_data["lease_seconds"]
        if value is not None and value < 10:
            raise forms.ValidationError(
                "A lease shorter than 10 seconds takes comparisons away from people still reading them."
            )
        return value

    def clean(self):
        cleaned = super().clean()
        fields = [name for name in self.fields if name in cleaned]
        changed = fields if self.instance.pk is None else [n for n in self.changed_data if n in cleaned]
        candidate = copy.copy(self.instance)
        for name in fields:
            setattr(candidate, name, cleaned[name])
        for name, message in study_setting_problems(study=candidate, changed=changed):
            field = name if name in self.fields else None
            if field is not None and self.has_error(field):
                continue
            if field is not None and message in _generic_messages(field):
                message = f"{self.fields[field].label} must be {_range_said(field, self.fields[field])}"
            text = message if name is None or field else f"{name}: {message}"
            self.add_error(field, _sentence(in_field_labels(text)))
        return cleaned


class UploadForm(forms.Form):
    """A CSV file, read into bytes; the import service checks its encoding and rows."""

    file = forms.FileField(label="CSV file")

    def clean_file(self) -> bytes:
        upload = self.cleaned_data["file"]
        if upload.size > MAX_UPLOAD_BYTES:
            # Refused before reading: the whole point of the limit is not to load the file.
            raise forms.ValidationError(
                f"The file is {upload.size:,} bytes; the limit is {MAX_UPLOAD_BYTES:,} bytes (2 MiB). "
                "Split it into smaller files and upload them one after the other."
            )
        return upload.read()


class TokensUploadForm(UploadForm):
    file = forms.FileField(
        label="Tokens CSV",
        help_text=(
            "One token per line: token, area[, rare]. A first line naming the columns is optional; "
            "rare is 1/0, true/false or yes/no. Separated by commas (semicolons or tabs, as some "
            "spreadsheets save, are recognised too). UTF-8, at most 2 MiB."
        ),
    )
    mode = forms.ChoiceField(
        label="The file's tokens",
        choices=[
            ("add", "Add them to the study's tokens"),
            ("replace", "Replace the pool: remove the study's tokens, semantic areas and items first"),
        ],
        initial="add",
        required=False,  # a form posted without the choice adds, as the upload did before there was one
        widget=forms.RadioSelect,
        help_text="A replaced pool needs its items generated or uploaded again. A file with any problem "
        "changes nothing.",
    )

    def clean_mode(self) -> str:
        return self.cleaned_data["mode"] or "add"


class PairsUploadForm(UploadForm):
    file = forms.FileField(
        label="Pairs CSV",
        help_text=(
            "One item per line: token_a, token_b, two tokens already imported, of the same area. "
            "The study's current items are replaced. UTF-8, at most 2 MiB."
        ),
    )


class ItemsGenerateForm(forms.Form):
    max_per_area = forms.IntegerField(
        label="Cap per area",
        required=False,
        min_value=1,
        help_text=(
            "Leave blank for all pairs within each area; otherwise each area keeps a random sample of at "
            "most this many pairs. The study's current items are replaced."
        ),
    )


class DuplicateForm(forms.Form):
    name = forms.CharField(max_length=Study._meta.get_field("name").max_length)
    slug = forms.SlugField(max_length=Study._meta.get_field("slug").max_length, required=False)

    def __init__(self, *args, study: Study, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["name"].initial = f"{study.name} (replication)"
        self.fields["slug"].help_text = (
            f"The annotators' link of the copy: /s/<slug>/. Leave blank for “{study.slug}-copy” "
            "(numbered if that is taken)."
        )

    def clean_slug(self):
        slug = self.cleaned_data["slug"] or None
        if slug and Study.objects.filter(slug=slug).exists():
            raise forms.ValidationError(f"A study with the slug “{slug}” exists already; choose another.")
        return slug


class ChecksUploadForm(UploadForm):
    file = forms.FileField(
        label="Checks CSV",
        help_text=(
            "One check per line: kind, left_a, left_b, right_a, right_b, expected[, instruction]. kind is "
            "gold or instructed; each side names an item of the study by its two tokens, in either order; "
            "expected is left or right; an instructed-response check gives its instruction. A first line "
            "naming the columns is optional. The checks are added to the study's; a file with any problem "
            "adds none. UTF-8, at most 2 MiB."
        ),
    )


def _token_field(label: str) -> forms.CharField:
    return forms.CharField(label=label, max_length=Token.MAX_LENGTH)


class CheckInlineForm(forms.ModelForm):
    """A check on the study's page, each of its items named by its two tokens as in a checks file
    (``checks_import``); the model's rules (``Check.problems``) judge it."""

    left_a = _token_field("Left: token")
    left_b = _token_field("Left: other token")
    right_a = _token_field("Right: token")
    right_b = _token_field("Right: other token")

    class Meta:
        model = Check
        fields = ("kind", "left_a", "left_b", "right_a", "right_b", "expected", "instruction")

    def __init__(self, *args, study_items=None, **kwargs):
        super().__init__(*args, **kwargs)
        # The study's items by their tokens, built once for all the rows of a formset (``CheckFormSet``).
        self._study_items = study_items or (lambda: study_items_by_tokens(study=self.instance.study))
        for side in ("left", "right"):
            item = getattr(self.instance, f"{side}_item") if self.instance.pk else None
            if item is not None:
                self.initial.setdefault(f"{side}_a", item.token_a.text)
                self.initial.setdefault(f"{side}_b", item.token_b.text)

    def clean(self):
        cleaned = super().clean()
        names = {side: (cleaned.get(f"{side}_a"), cleaned.get(f"{side}_b")) for side in ("left", "right")}
        if self.instance.study_id is None or any(None in pair for pair in names.values()):
            return cleaned  # a token left out is the field's error
        items = self._study_items()
        for side, pair in names.items():
            item = items.get(check_item_key(*pair))
            if item is None:
                self.add_error(None, check_item_missing(*pair, side))
            else:
                setattr(self.instance, f"{side}_item", item)
        return cleaned


class CheckFormSet(forms.BaseInlineFormSet):
    """The checks of the study's page: the study's items are read once for all the rows."""

    def get_form_kwargs(self, index):
        return {**super().get_form_kwargs(index), "study_items": lambda: self.study_items}

    @cached_property
    def study_items(self) -> dict:
        return study_items_by_tokens(study=self.instance)


ASSIGNMENT_MISSING = gettext_lazy(
    "the form did not say which comparison you voted on; open it again and vote"
)
ASSIGNMENT_OUT_OF_RANGE = format_lazy(
    gettext_lazy(
        "the form did not name a comparison of yours (its number must be a whole number from 1 to "
        "{maximum}); open the voting page again and vote"
    ),
    maximum=f"{MAX_DATABASE_ID:,}",
)


class VoteForm(forms.Form):
    """The voting page's vote without JavaScript: the assignment's id, bounded as the API bounds it (a
    larger number names no row, and the database cannot even look it up). The choice is the service's."""

    assignment = forms.IntegerField(
        min_value=1,
        max_value=MAX_DATABASE_ID,
        error_messages={
            "required": ASSIGNMENT_MISSING,
            "invalid": ASSIGNMENT_OUT_OF_RANGE,
            "min_value": ASSIGNMENT_OUT_OF_RANGE,
            "max_value": ASSIGNMENT_OUT_OF_RANGE,
        },
    )

    def problem(self) -> str:
        """What is wrong with the form, for the page's one message (after ``is_valid()`` said False)."""
        return self.errors["assignment"][0]

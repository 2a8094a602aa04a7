"""Serializers that hold JSON bodies to the types the schema states.

DRF's fields are lenient: a CharField takes ``0``, an IntegerField ``"12"`` or ``12.0``, a BooleanField
``"yes"``. That suits form data and query strings, where everything arrives as text, but a JSON body
has types, and the schema promises that a string field wants a string. ``StrictJSONTypes`` refuses a
JSON value of another type with a 400 that names the field and both types; form data and query
strings (a ``QueryDict``) keep DRF's conversions.
"""

from __future__ import annotations

from rest_framework import serializers

# Ids are 64-bit (BigAutoField): a larger number names nothing, and SQLite cannot even look it up.
MAX_DATABASE_ID = 2**63 - 1

# The JSON types each field accepts, most specific classes first; bool is never a number here.
JSON_TYPES: list[tuple[type[serializers.Field], tuple[type, ...], str]] = [
    (serializers.BooleanField, (bool,), "true or false"),
    (serializers.IntegerField, (int,), "a whole number"),
    (serializers.FloatField, (int, float), "a number"),
    (serializers.DecimalField, (int, float), "a number"),
    (serializers.ChoiceField, (str,), "a string"),
    (serializers.CharField, (str,), "a string"),
    (serializers.DateTimeField, (str,), "a string"),
    (serializers.ListField, (list,), "an array"),
    (serializers.ListSerializer, (list,), "an array"),
    (serializers.DictField, (dict,), "an object"),
    (serializers.Serializer, (dict,), "an object"),
]


def json_type_name(value) -> str:
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, (int, float)):
        return "a number"
    return {str: "a string", list: "an array", dict: "an object"}.get(type(value), type(value).__name__)


def json_type_error(field: serializers.Field, value) -> str | None:
    """Why ``value`` (from a JSON body) is not of the type ``field`` wants, or None if it is."""
    if value is None:
        return None  # the field's own allow_null decides
    for field_class, types, wanted in JSON_TYPES:
        if isinstance(field, field_class):
            if isinstance(value, types) and not (isinstance(value, bool) and bool not in types):
                return None
            return f"must be {wanted}, got {json_type_name(value)}"
    return None  # a field of its own (file, free-form rows): it checks its input itself


class StrictJSONTypes:
    # Mixin for a Serializer: each field of a JSON body must have the JSON type the schema states.
    # (A comment, not a docstring: drf-spectacular would show it as every serializer's description.)

    def to_internal_value(self, data):
        if type(data) is dict:  # a JSON object; a QueryDict (form, query string) is a dict subclass
            errors = {}
            for name, field in self.fields.items():
                if field.read_only or name not in data:
                    continue
                problem = json_type_error(field, data[name])
                if problem is not None:
                    errors[name] = [problem]
            if errors:
                raise serializers.ValidationError(errors)
        return super().to_internal_value(data)

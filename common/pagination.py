"""Pagination with a bound: ``?limit`` is capped, so no request asks the database for 10^20 rows."""

from __future__ import annotations

from rest_framework.exceptions import ValidationError
from rest_framework.pagination import LimitOffsetPagination

MAX_PAGE_SIZE = 1000
MAX_OFFSET = 2**62


class BoundedLimitOffsetPagination(LimitOffsetPagination):
    """``?limit=`` (default 100, at most 1000) and ``?offset=``; an offset past the end gives an empty page."""

    max_limit = MAX_PAGE_SIZE

    def get_limit(self, request) -> int:
        return self._whole_number(request, self.limit_query_param, self.default_limit, 1, self.max_limit)

    def get_offset(self, request) -> int:
        # An offset past the rows gives an empty page before the database is asked for them; the bound
        # only keeps the number within a 64-bit integer.
        return self._whole_number(request, self.offset_query_param, 0, 0, MAX_OFFSET)

    @staticmethod
    def _whole_number(request, name: str, default: int, low: int, high: int) -> int:
        raw = request.query_params.get(name)
        if raw is None or raw == "":
            return default
        # Digits only: int() would also take " 6", "1_000" or "٦", which no client means as a number.
        value = int(raw) if raw.isascii() and raw.isdigit() else None
        if value is None or not low <= value <= high:
            raise ValidationError({name: f"must be a whole number from {low} to {high:,}, got {raw[:40]!r}"})
        return value

    def get_schema_operation_parameters(self, view):
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.limit_query_param:
                parameter["schema"].update({"minimum": 1, "maximum": self.max_limit})
                parameter["description"] = (
                    f"Rows per page (default {self.default_limit}, at most {self.max_limit})."
                )
            elif parameter["name"] == self.offset_query_param:
                parameter["schema"].update({"minimum": 0, "maximum": MAX_OFFSET})
        return parameters

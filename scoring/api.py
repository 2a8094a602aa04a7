"""REST API of the scoring app: the live view of a study, for staff (/api/studies/<slug>/live/)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.exceptions import PermissionDenied
from rest_framework.response import Response
from rest_framework.views import APIView

from collection.models import Study
from collection.parts import HIDDEN_PART_REFUSAL, hidden_part_visible_to
from collection.permissions import IsStaff
from common.api import error_response, get_or_404
from scoring.live import study_live


class LiveSampleSerializer(serializers.Serializer):
    at = serializers.DateTimeField()
    votes = serializers.IntegerField(help_text="Votes recorded in the study at that time.")


class LiveRateSerializer(serializers.Serializer):
    votes_per_minute = serializers.FloatField(
        allow_null=True, help_text="Votes per minute over the window; null until a sample 30 s old exists."
    )
    since = serializers.DateTimeField(allow_null=True, help_text="The start of the window measured.")
    votes = serializers.IntegerField(help_text="Votes recorded since then.")
    window_seconds = serializers.IntegerField(help_text="The longest window: the last ten minutes.")


class LiveBallotSerializer(serializers.Serializer):
    number = serializers.IntegerField()
    status = serializers.CharField(help_text="open, closed, or planned (not opened yet).")
    comparisons = serializers.IntegerField(
        allow_null=True, help_text="Its comparisons (planned ones: the plan's)."
    )
    votes = serializers.IntegerField()
    percent = serializers.IntegerField(help_text="Votes / comparisons in whole percent, rounded down.")
    opened_at = serializers.DateTimeField(allow_null=True)
    closed_at = serializers.DateTimeField(allow_null=True)
    duration_seconds = serializers.FloatField(allow_null=True, help_text="From its opening to its close.")
    close_seconds = serializers.FloatField(allow_null=True, help_text="How long its close (scoring) took.")
    expected_end = serializers.DateTimeField(
        allow_null=True,
        help_text="now + the comparisons left up to and including this ballot / the current rate "
        "(the closes not counted); null once closed, or without a rate.",
    )


class LiveAnnotatorsSerializer(serializers.Serializer):
    total = serializers.IntegerField(help_text="Annotators who opened the study link.")
    active = serializers.IntegerField(help_text="Holding a comparison now (each vote leases the next).")
    finished = serializers.IntegerField(help_text="Who pressed Finish, or reached their end.")
    flagged = serializers.IntegerField(
        allow_null=True, help_text="Past a quality threshold, judged at the last close; null before one."
    )
    flags_judged_at = serializers.DateTimeField(allow_null=True)
    excluded = serializers.IntegerField()


class LiveChecksSerializer(serializers.Serializer):
    rate = serializers.FloatField(help_text="The study's check rate.")
    answered = serializers.IntegerField()
    correct = serializers.IntegerField()
    accuracy = serializers.FloatField(allow_null=True, help_text="correct / answered; null before an answer.")


class LiveTopItemSerializer(serializers.Serializer):
    item = serializers.IntegerField()
    tokens = serializers.ListField(child=serializers.CharField())
    area = serializers.CharField()
    score = serializers.FloatField(help_text="ȳ(k) after that ballot (Eq. 5).")
    win_ratio = serializers.FloatField(allow_null=True, help_text="x(k) in that ballot (Eq. 1).")
    appearances = serializers.IntegerField()
    interval = serializers.ListField(
        child=serializers.FloatField(), allow_null=True, help_text="Wilson interval of x(k), [low, high]."
    )


class LiveTopSerializer(serializers.Serializer):
    ballot = serializers.IntegerField(help_text="The last closed ballot.")
    closed_at = serializers.DateTimeField()
    level = serializers.FloatField(help_text="The intervals' confidence level.")
    items = LiveTopItemSerializer(many=True)


class LiveSerializer(serializers.Serializer):
    study = serializers.CharField(help_text="The study's slug.")
    status = serializers.CharField()
    now = serializers.DateTimeField(help_text="When these figures were read (they are cached 5 s).")
    votes = serializers.IntegerField(help_text="Votes recorded in every ballot.")
    series = LiveSampleSerializer(
        many=True, help_text="Votes over time: a sample a minute, the last day, ≤ 240."
    )
    rate = LiveRateSerializer()
    ballots = LiveBallotSerializer(many=True)
    remaining_comparisons = serializers.IntegerField(allow_null=True)
    expected_end = serializers.DateTimeField(
        allow_null=True, help_text="now + remaining comparisons / the current rate; null without a rate."
    )
    annotators = LiveAnnotatorsSerializer()
    checks = LiveChecksSerializer()
    top = LiveTopSerializer(
        allow_null=True, help_text="The top 10 items by ȳ of the last closed ballot; null before a close."
    )


class LiveView(APIView):
    """The live view of a study: its rate, ballots, expected ends, annotators, checks and top items."""

    permission_classes = [IsStaff]

    @extend_schema(
        summary="The live view of a study: votes over time, rate, expected ends, annotators, checks, top items",
        operation_id="studies_live_retrieve",
        tags=["staff"],
        responses={
            200: LiveSerializer,
            403: error_response("Not staff; or a study with a hidden test part, and not its researcher."),
            404: error_response("No such study."),
        },
    )
    def get(self, request, slug: str):
        study = get_or_404(
            Study.objects.all(), f"there is no study {slug!r}; GET /api/studies/ lists them", slug=slug
        )
        if not hidden_part_visible_to(request.user, study):
            raise PermissionDenied(HIDDEN_PART_REFUSAL.format(slug=study.slug))
        return Response(LiveSerializer(study_live(study=study)).data)

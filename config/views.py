"""Site-wide pages: the home page, the health endpoint for load balancers, and Prometheus' /metrics.

They live in config/ because they span the apps: config imports the apps, never the reverse.
"""

import time

from django.conf import settings
from django.db import connection
from django.http import HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET
from prometheus_client.exposition import choose_encoder

from collection.lifecycle import ballots_sweep_health
from collection.models import Study
from common.observability import bearer_token_problem, scrape_registry
from config.figures import VotesRecordedCollector


@require_GET
def home(request):
    """The running and finished studies with their public links; for staff, drafts and staff links too."""
    staff = request.user.is_active and request.user.is_staff
    studies = Study.objects.only(
        "name", "slug", "status", "require_signed_links", "started_at", "finished_at", "created_at"
    ).order_by("-created_at", "name")
    if not staff:
        studies = studies.exclude(status=Study.Status.DRAFT)
    by_status = {status: [] for status in Study.Status.values}
    for study in studies:
        by_status[study.status].append(study)
    context = {
        "staff": staff,
        "running": by_status[Study.Status.RUNNING],
        "finished": by_status[Study.Status.FINISHED],
        "drafts": by_status[Study.Status.DRAFT],
    }
    return render(request, "home.html", context)


# The sweep's health as this process last read it: (time.monotonic() then, the health).
_sweep_health_read: tuple[float, dict | None] = (0.0, None)


def _sweep_health() -> dict:
    """``ballots_sweep_health``, read again at most every ``HEALTHZ_SWEEP_READ_SECONDS``: a probe (or
    bench_load.py's unit of work) stays one ``SELECT 1`` almost every time."""
    global _sweep_health_read
    read_at, health = _sweep_health_read
    now = time.monotonic()
    if health is None or now - read_at >= settings.HEALTHZ_SWEEP_READ_SECONDS:
        health = ballots_sweep_health()
        _sweep_health_read = (now, health)
    return health


def health(request):
    """Liveness and database readiness, for load balancers and the deployment smoke test.

    With a broker (not eager Celery), ``sweep`` says when the ballots sweep last ran and whether it is
    late (``collection.lifecycle.ballots_sweep_health``): a late sweep is a warning for the operator, not
    a reason to take this web process out of service, so the status stays 200.
    """
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
        body = {"status": "ok", "database": connection.vendor}
        if not settings.CELERY_TASK_ALWAYS_EAGER:
            body["sweep"] = _sweep_health()
    except Exception as exc:  # the point is to report any database failure, whatever its class
        return JsonResponse({"status": "error", "database": str(exc)}, status=503)
    return JsonResponse(body)


@require_GET
def metrics(request):
    """The Prometheus figures (common/observability.py), for a scrape that sends ``METRICS_TOKEN``."""
    problem = bearer_token_problem(request.headers.get("Authorization", ""), settings.METRICS_TOKEN)
    if problem is not None:
        status, reason = problem
        response = HttpResponse(reason, status=status, content_type="text/plain; charset=utf-8")
        if status == 401:
            response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    # The format Prometheus asks for (OpenMetrics or the text format), as prometheus_client chooses it.
    encode, content_type = choose_encoder(request.headers.get("Accept", ""))
    return HttpResponse(encode(scrape_registry(VotesRecordedCollector())), content_type=content_type)

"""Site-wide pages: the home page, and the health endpoint for load balancers.

They live in config/ because they span the apps: config imports the apps, never the reverse.
"""

from django.db import connection
from django.http import JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from collection.models import Study


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


def health(request):
    """Liveness and database readiness, for load balancers and the deployment smoke test."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:  # the point is to report any database failure, whatever its class
        return JsonResponse({"status": "error", "database": str(exc)}, status=503)
    return JsonResponse({"status": "ok", "database": connection.vendor})

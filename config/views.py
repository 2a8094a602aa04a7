"""Infrastructure endpoints."""

from django.db import connection
from django.http import JsonResponse


def health(request):
    """Liveness and database readiness, for load balancers and the deployment smoke test."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:  # the point is to report any database failure, whatever its class
        return JsonResponse({"status": "error", "database": str(exc)}, status=503)
    return JsonResponse({"status": "ok", "database": connection.vendor})

"""Top-level URL configuration."""

from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerSplitView

from config.views import health
from metrics.api import TokenObtainView

urlpatterns = [
    path("admin/", admin.site.urls),
    path("s/", include("collection.urls")),
    path("api/auth/token/", TokenObtainView.as_view(), name="api-token"),
    path("api/", include("collection.api_urls")),
    path("api/", include("metrics.api_urls")),
    path("studies/", include("scoring.urls")),
    path("models/", include("metrics.urls")),
    path("healthz/", health, name="health"),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # The split view serves its initialiser as a separate script: no inline JavaScript.
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
    path("api/redoc/", SpectacularRedocView.as_view(url_name="api-schema"), name="api-redoc"),
]

handler500 = "common.unavailable.server_error"  # a database that does not answer is 503, not 500

"""Top-level URL configuration."""

from csp.decorators import csp_update
from django.contrib import admin
from django.templatetags.static import static
from django.urls import include, path, re_path
from django.utils.functional import lazy
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerSplitView

from common.api import not_found
from config.views import health, home, metrics
from metrics.api import TokenObtainView
from metrics.hub_views import hub_dataset_download

# The API docs, served from drf-spectacular-sidecar under the site's Content-Security-Policy; our
# templates drop drf-spectacular's inline <style> (and ReDoc's Google Fonts). What each page adds:
# - Swagger UI (the split view serves its initialiser as a separate script: no inline JavaScript): its
#   stylesheet draws its icons as data: SVG images.
# - ReDoc (vendored, not ours to change) writes its styles into <style> elements at run time
#   (styled-components), which only 'unsafe-inline' for styles allows; its scripts stay 'self' only.
#   It runs its search index in a worker made from a blob: URL, draws icons as data: images, and
#   always shows Redocly's logo from their CDN (that one image, allowed by its exact URL).
api_docs = csp_update({"img-src": ["data:"]})(
    SpectacularSwaggerSplitView.as_view(url_name="api-schema", template_name="api/swagger_ui.html")
)
api_redoc = csp_update(
    {
        "style-src": ["'unsafe-inline'"],
        "img-src": ["data:", "https://cdn.redoc.ly/redoc/logo-mini.svg"],
        "worker-src": ["blob:"],
    }
)(SpectacularRedocView.as_view(url_name="api-schema", template_name="api/redoc.html"))

urlpatterns = [
    path("", home, name="home"),  # also the admin's "View site" (admin.site.site_url is "/")
    path("admin/", admin.site.urls),
    path("s/", include("collection.urls")),
    path("api/auth/token/", TokenObtainView.as_view(), name="api-token"),
    path("api/", include("collection.api_urls")),
    path("api/", include("metrics.api_urls")),
    path("api/", include("scoring.api_urls")),
    # Beside the scoring app's exports; served by the metrics app, which the dataset card needs.
    path("studies/<slug:slug>/export/hub-dataset.zip", hub_dataset_download, name="export-hub-dataset"),
    path("studies/", include("scoring.urls")),
    path("models/", include("metrics.urls")),
    # Browsers ask for /favicon.ico whatever a page links: the static file's address, which WhiteNoise serves.
    path("favicon.ico", RedirectView.as_view(url=lazy(static, str)("favicon.ico")), name="favicon"),
    path("healthz/", health, name="health"),
    path("metrics", metrics, name="metrics"),  # Prometheus' default path; a bearer token (METRICS_TOKEN)
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", api_docs, name="api-docs"),
    path("api/redoc/", api_redoc, name="api-redoc"),
    re_path(r"^api/", not_found, name="api-not-found"),  # last: any other /api/ path is a JSON 404
]

handler400 = "common.api.bad_request"  # a body refused before the view is a JSON 400 or 413 under /api/
handler500 = "common.unavailable.server_error"  # a database that does not answer is 503, not 500

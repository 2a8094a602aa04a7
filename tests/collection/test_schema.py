"""The OpenAPI schema of the REST API, and the Swagger UI served without a CDN."""

import json
import re

from django.contrib.staticfiles import finders
from django.core.management import call_command
from django.test import Client
from drf_spectacular.drainage import GENERATOR_STATS

ANNOTATOR_OPERATIONS = {
    ("/api/studies/{slug}/next/", "get"),
    ("/api/studies/{slug}/finish/", "post"),
    ("/api/votes/", "post"),
}
STAFF_OPERATIONS = {
    ("/api/studies/", "get"),
    ("/api/studies/", "post"),
    ("/api/studies/{slug}/", "get"),
    ("/api/studies/{slug}/", "put"),
    ("/api/studies/{slug}/", "patch"),
    ("/api/studies/{slug}/", "delete"),
    ("/api/studies/{slug}/tokens/", "get"),
    ("/api/studies/{slug}/tokens/", "post"),
    ("/api/studies/{slug}/items/", "get"),
    ("/api/studies/{slug}/items/generate/", "post"),
    ("/api/studies/{slug}/jobs/{job_id}/", "get"),
    ("/api/studies/{slug}/items/upload/", "post"),
    ("/api/studies/{slug}/plan/", "get"),
    ("/api/studies/{slug}/start/", "post"),
    ("/api/studies/{slug}/close-ballot/", "post"),
    ("/api/studies/{slug}/exclusions/", "get"),
    ("/api/studies/{slug}/annotators/{annotator_id}/exclusion/", "post"),
    ("/api/studies/{slug}/annotators/{annotator_id}/exclusion/", "delete"),
    ("/api/studies/{slug}/duplicate/", "post"),
    ("/api/studies/{slug}/progress/", "get"),
    ("/api/studies/{slug}/results/", "get"),
}
MODEL_OWNER_OPERATIONS = {
    ("/api/auth/token/", "post"),
    ("/api/studies/{slug}/pairs/", "get"),
    ("/api/studies/{slug}/submissions/", "post"),
    ("/api/studies/{slug}/seals/", "get"),
    ("/api/studies/{slug}/seals/", "post"),
    ("/api/submissions/", "get"),
    ("/api/submissions/{submission_id}/", "get"),
    ("/api/submissions/{submission_id}/evaluation/", "get"),
    ("/api/studies/{slug}/leaderboard/", "get"),
    ("/api/studies/{slug}/judge-pairs/", "get"),
    ("/api/studies/{slug}/judges/", "post"),
    ("/api/judges/", "get"),
    ("/api/judges/{judge_id}/", "get"),
    ("/api/judges/{judge_id}/evaluation/", "get"),
    ("/api/studies/{slug}/judges/leaderboard/", "get"),
    ("/api/studies/{slug}/annotators/", "get"),
    ("/api/studies/{slug}/card/", "get"),
    ("/api/studies/{slug}/hub-dataset/", "get"),
    ("/api/studies/{slug}/live/", "get"),
}
HTTP_METHODS = {"get", "post", "put", "patch", "delete"}


def generated_schema(tmp_path) -> dict:
    """``manage.py spectacular --validate --fail-on-warn``: raises on any warning or invalid schema."""
    GENERATOR_STATS.reset()  # warnings of schemas generated earlier in this process are not this one's
    path = tmp_path / "schema.json"
    call_command(
        "spectacular", "--validate", "--fail-on-warn", "--format", "openapi-json", "--file", str(path)
    )
    return json.loads(path.read_text())


def test_the_schema_is_valid_openapi_without_warnings_and_lists_every_endpoint(tmp_path):
    schema = generated_schema(tmp_path)

    operations = {
        (path, method)
        for path, item in schema["paths"].items()
        if path.startswith("/api/")
        for method in item
        if method in HTTP_METHODS
    }
    assert operations == ANNOTATOR_OPERATIONS | STAFF_OPERATIONS | MODEL_OWNER_OPERATIONS


def test_the_schema_documents_the_204_of_next_with_its_reason_header_and_both_upload_forms(tmp_path):
    schema = generated_schema(tmp_path)

    no_comparison = schema["paths"]["/api/studies/{slug}/next/"]["get"]["responses"]["204"]
    assert set(no_comparison["headers"]) == {"X-Yardstick-Reason", "Retry-After"}
    assert "content" not in no_comparison
    upload = schema["paths"]["/api/studies/{slug}/tokens/"]["post"]["requestBody"]["content"]
    assert set(upload) == {"multipart/form-data", "text/csv"}
    parameters = schema["paths"]["/api/studies/{slug}/tokens/"]["post"]["parameters"]
    mode = next(parameter for parameter in parameters if parameter["name"] == "mode")
    assert (mode["in"], mode["schema"]["enum"], mode["schema"]["default"]) == (
        "query",
        ["add", "replace"],
        "add",
    )
    assert schema["components"]["schemas"]["CsvUploadRequest"]["properties"]["file"] == {
        "type": "string",
        "format": "binary",
        "description": "A CSV file, UTF-8, at most 2 MiB.",
    }


def test_the_schema_names_one_token_scheme_and_the_annotators_session(tmp_path):
    schema = generated_schema(tmp_path)

    assert set(schema["components"]["securitySchemes"]) == {"tokenAuth", "cookieAuth", "annotatorSession"}
    vote = schema["paths"]["/api/votes/"]["post"]["security"]
    assert vote == [{"tokenAuth": []}, {"annotatorSession": []}, {}]  # {}: anyone, as a study link lets in


def test_the_schema_is_served_at_api_schema():
    response = Client().get("/api/schema/", {"format": "json"})

    assert response.status_code == 200
    assert "/api/studies/{slug}/next/" in json.loads(response.content)["paths"]


def test_the_api_docs_page_loads_swagger_ui_from_our_own_static_files():
    response = Client().get("/api/docs/")

    assert response.status_code == 200
    html = response.content.decode()
    assets = re.findall(r'<(?:script|link)\b[^>]*?\b(?:src|href)="([^"]+)"', html)
    assert sorted(assets) == [
        "/api/docs/?script=",  # the initialiser, served by the view itself: no inline JavaScript
        "/static/api/swagger-ui.css",  # our overrides, instead of drf-spectacular's inline <style>
        "/static/drf_spectacular_sidecar/swagger-ui-dist/favicon-32x32.png",
        "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js",
        "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-standalone-preset.js",
        "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui.css",
    ]
    assert re.findall(r"<script(?![^>]*\bsrc=)[^>]*>", html) == []  # no inline script
    for asset in assets[1:] if assets[0].startswith("/api/") else assets:
        if asset.startswith("/static/"):
            assert finders.find(asset.removeprefix("/static/")) is not None, f"{asset} is not shipped"
    initialiser = Client().get("/api/docs/?script=")
    assert initialiser.status_code == 200 and "SwaggerUIBundle" in initialiser.content.decode()
    assert re.findall(r"(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}", html) == []

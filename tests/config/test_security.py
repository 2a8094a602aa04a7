"""Production settings: a clean ``check --deploy`` behind the TLS proxy, a site that still answers over
plain HTTP without it, and the Content-Security-Policy on every response.

The settings are read from the environment at import, so each configuration is loaded in a subprocess
(as the web process would load it); the HTTP behaviour is then checked with those values in place.
"""

import json
import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import Client

REPO_ROOT = Path(__file__).resolve().parents[2]
PRODUCTION = {
    "DEBUG": "false",
    "SECRET_KEY": secrets.token_urlsafe(50),
    "ALLOWED_HOSTS": "yardstick.example.org,testserver",
}
BEHIND_PROXY = {**PRODUCTION, "BEHIND_TLS_PROXY": "true"}
SECURITY_SETTINGS = [
    "SECURE_PROXY_SSL_HEADER",
    "SECURE_SSL_REDIRECT",
    "SECURE_REDIRECT_EXEMPT",
    "SECURE_HSTS_SECONDS",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS",
    "SECURE_HSTS_PRELOAD",
    "SESSION_COOKIE_SECURE",
    "CSRF_COOKIE_SECURE",
    "SECURE_REFERRER_POLICY",
]


def run(argv: list[str], environment: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("SECURE_", "DEBUG", "BEHIND_TLS_PROXY", "SESSION_COOKIE", "CSRF_COOKIE"))
        # set for the browser tests' process (tests/browser/conftest.py), never in a deployment
        and key != "DJANGO_ALLOW_ASYNC_UNSAFE"
    }
    env.update(YARDSTICK_DATA_DIR=str(tmp_path / "var"), STATIC_ROOT=str(tmp_path / "static"), **environment)
    return subprocess.run(
        [sys.executable, *argv], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def deploy_check(environment: dict[str, str], tmp_path: Path) -> tuple[int, str]:
    result = run(["manage.py", "check", "--deploy", "--fail-level", "WARNING"], environment, tmp_path)
    return result.returncode, result.stdout + result.stderr


def loaded_settings(environment: dict[str, str], tmp_path: Path) -> dict:
    """The security settings as the web process would load them from ``environment``."""
    script = (
        "import json, django; django.setup(); from django.conf import settings; "
        f"print(json.dumps({{name: getattr(settings, name) for name in {SECURITY_SETTINGS!r}}}))"
    )
    result = run(["-c", script], {**environment, "DJANGO_SETTINGS_MODULE": "config.settings"}, tmp_path)
    assert result.returncode == 0, result.stderr
    loaded = json.loads(result.stdout)
    if loaded["SECURE_PROXY_SSL_HEADER"] is not None:
        loaded["SECURE_PROXY_SSL_HEADER"] = tuple(loaded["SECURE_PROXY_SSL_HEADER"])
    return loaded


def test_behind_the_tls_proxy_the_deploy_check_reports_nothing(tmp_path):
    returncode, output = deploy_check(BEHIND_PROXY, tmp_path)
    assert (returncode, output.strip()) == (0, "System check identified no issues (0 silenced)."), output


def test_without_the_proxy_the_deploy_check_names_what_https_would_turn_on(tmp_path):
    returncode, output = deploy_check(PRODUCTION, tmp_path)
    warnings = sorted(set(re.findall(r"\((security\.W\d+)\)", output)))
    assert returncode == 1
    assert warnings == ["security.W004", "security.W008", "security.W012", "security.W016"], output


def test_every_security_setting_can_be_overridden_from_the_environment(tmp_path):
    overridden = loaded_settings(
        {
            **BEHIND_PROXY,
            "SECURE_SSL_REDIRECT": "false",
            "SECURE_HSTS_SECONDS": "3600",
            "SECURE_HSTS_INCLUDE_SUBDOMAINS": "false",
            "SECURE_HSTS_PRELOAD": "false",
            "SESSION_COOKIE_SECURE": "false",
            "CSRF_COOKIE_SECURE": "false",
            "SECURE_REFERRER_POLICY": "no-referrer",
        },
        tmp_path,
    )
    assert overridden == {
        "SECURE_PROXY_SSL_HEADER": ("HTTP_X_FORWARDED_PROTO", "https"),
        "SECURE_SSL_REDIRECT": False,
        "SECURE_REDIRECT_EXEMPT": [r"^healthz/$", r"^metrics$"],
        "SECURE_HSTS_SECONDS": 3600,
        "SECURE_HSTS_INCLUDE_SUBDOMAINS": False,
        "SECURE_HSTS_PRELOAD": False,
        "SESSION_COOKIE_SECURE": False,
        "CSRF_COOKIE_SECURE": False,
        "SECURE_REFERRER_POLICY": "no-referrer",
    }


@pytest.mark.django_db
def test_behind_the_proxy_plain_http_is_redirected_except_the_health_check(settings, tmp_path):
    for name, value in loaded_settings(BEHIND_PROXY, tmp_path).items():
        setattr(settings, name, value)
    client = Client()  # a new client loads the middleware with these settings

    redirect = client.get("/admin/login/?next=/admin/")
    assert redirect.status_code == 301
    assert redirect["Location"] == "https://testserver/admin/login/?next=/admin/"
    assert client.get("/healthz/").status_code == 200  # the load balancer's probe speaks plain HTTP
    # Prometheus scrapes the web process on the internal network; the token is still required.
    assert client.get("/metrics").status_code == 403  # no METRICS_TOKEN configured here
    assert client.get("/metricsx").status_code == 301

    secure = client.get("/admin/login/", headers={"x-forwarded-proto": "https"})
    assert secure.status_code == 200
    assert secure["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains; preload"
    assert secure["Referrer-Policy"] == "same-origin"
    assert secure.cookies["csrftoken"]["secure"] is True


@pytest.mark.django_db
def test_without_the_proxy_the_production_site_answers_over_plain_http(settings, tmp_path):
    for name, value in loaded_settings(PRODUCTION, tmp_path).items():
        setattr(settings, name, value)
    client = Client()

    page = client.get("/admin/login/")
    assert page.status_code == 200
    assert "Strict-Transport-Security" not in page
    assert page.cookies["csrftoken"]["secure"] == ""  # the cookie comes back over HTTP
    assert client.get("/").status_code == 200
    assert client.get("/healthz/").status_code == 200


def test_every_response_carries_the_content_security_policy(client):
    policy = client.get("/healthz/")["Content-Security-Policy"]
    assert sorted(policy.split("; ")) == [
        "base-uri 'self'",
        "default-src 'self'",
        "form-action 'self' https://www.mturk.com https://workersandbox.mturk.com",
        "frame-ancestors 'none'",
        "img-src 'self'",
        "object-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
    ]


@pytest.mark.parametrize(
    ("path", "added"),
    [
        ("/api/docs/", {"img-src 'self' data:"}),
        (
            "/api/redoc/",
            {
                "style-src 'self' 'unsafe-inline'",
                "img-src 'self' data: https://cdn.redoc.ly/redoc/logo-mini.svg",
                "worker-src blob:",
            },
        ),
    ],
)
def test_the_api_docs_add_only_what_their_bundles_need(client, path, added):
    site = set(client.get("/healthz/")["Content-Security-Policy"].split("; "))
    page = set(client.get(path)["Content-Security-Policy"].split("; "))
    replaced = {directive.split()[0] for directive in added}
    assert page == {d for d in site if d.split()[0] not in replaced} | added

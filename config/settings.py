"""Django settings, read from the environment.

Nothing set gives the *embedded default*: a SQLite file under ``var/`` and Celery in eager mode,
so the whole platform runs in one process on a laptop. Setting ``DATABASE_URL`` (PostgreSQL) and
``CELERY_BROKER_URL`` or ``REDIS_URL`` gives the *full stack*: PostgreSQL, a Redis broker and
real Celery workers, as many as the load needs, on as many hosts as share the broker and database.

Every variable is listed in docs/operators.md ("Configuration").
"""

import os
import socket
from datetime import timedelta
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured
from redis.backoff import NoBackoff
from redis.retry import Retry

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()


def _rate(name: str, default: str) -> str | None:
    """A rate limit from the environment: "<count>/<period>", or "off" for none."""
    value = env.str(name, default=default).strip()
    return None if value.lower() in {"off", "none", ""} else value


DEBUG = env.bool("DEBUG", default=True)
DATA_DIR = Path(env.str("YARDSTICK_DATA_DIR", default=str(BASE_DIR / "var")))
DATA_DIR.mkdir(parents=True, exist_ok=True)  # SQLite file, beat schedule, admin password of `make run`

_DEV_SECRET_KEY = "yardstick-development-key-not-for-production"
SECRET_KEY = env.str("SECRET_KEY", default=_DEV_SECRET_KEY if DEBUG else "")
if not SECRET_KEY:
    raise ImproperlyConfigured(
        "SECRET_KEY must be set when DEBUG is off (see docs/operators.md, Configuration)."
    )

ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])
SITE_URL = env.str("SITE_URL", default="http://127.0.0.1:8000")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "axes",  # failed logins, locked by username and address together (LOGIN_FAILURE_LIMIT below)
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI and ReDoc served from here, not from a CDN
    "common",
    "collection",
    "scoring",
    "metrics",
]

MIDDLEWARE = [
    # outermost: reads what a refused request left of its body, so that its kept-alive connection goes on
    "common.parsers.UnreadBodyMiddleware",
    "common.versioning.ApiVersionMiddleware",  # X-Yardstick-API-Version on every /api/ answer, a 503 too
    "common.observability.RequestLatencyMiddleware",  # times everything below (no I/O)
    "common.unavailable.DatabaseUnavailableMiddleware",  # first: a database that does not answer is 503
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",  # Content-Security-Policy (CONTENT_SECURITY_POLICY below)
    "whitenoise.middleware.WhiteNoiseMiddleware",  # serves /static/ from gunicorn; no CDN, no extra server
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "collection.identity.AnnotatorCookieMiddleware",  # who is voting, in a signed cookie (no session row)
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "common.tasks.AfterResponseMiddleware",  # eager tasks asked for in a view run after its response
    "axes.middleware.AxesMiddleware",  # last, as django-axes asks: a locked-out login page becomes 429
]

ROOT_URLCONF = "config.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

WSGI_APPLICATION = "config.wsgi.application"

# --- database ----------------------------------------------------------------------------------
DATABASES = {
    "default": env.db_url("DATABASE_URL", default=f"sqlite:///{DATA_DIR / 'yardstick.sqlite3'}"),
}
DATABASES["default"]["ATOMIC_REQUESTS"] = False
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # IMMEDIATE transactions take SQLite's write lock at BEGIN, so two requests that read-then-write
    # inside transaction.atomic() are serialised instead of failing with "database is locked".
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "transaction_mode": "IMMEDIATE",
            "timeout": env.int("SQLITE_TIMEOUT_SECONDS", default=20),
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
    )
elif env.bool("DATABASE_POOL", default=False):
    # psycopg's pool (Django 5.1+), one per process: a request borrows a connection and gives it back.
    # The pool does not check a connection before it lends it (CONN_HEALTH_CHECKS is off here: that
    # check is a round trip per request); after a database restart each broken connection fails one
    # request with 503 and is dropped. Persistent connections
    # (CONN_MAX_AGE) must then be off.
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": 1,
        "max_size": env.int("DATABASE_POOL_MAX_SIZE", default=8),
        "timeout": 10,
    }
else:
    DATABASES["default"]["CONN_MAX_AGE"] = env.int("CONN_MAX_AGE", default=60)
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
if DATABASES["default"]["ENGINE"] != "django.db.backends.sqlite3" and env.bool("DATABASE_PREPARE", default=True):
    # psycopg binds the values on the server and prepares a statement it has run 5 times on a
    # connection: PostgreSQL plans the vote's and the lease's statements once per connection, which
    # halves its CPU per judgement. A pooler in transaction mode (PgBouncer) cannot hold them.
    DATABASES["default"].setdefault("OPTIONS", {}).update({"server_side_binding": True, "prepare_threshold": 5})

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- cache -------------------------------------------------------------------------------------
REDIS_URL = env.str("REDIS_URL", default="")
if REDIS_URL:
    # The cache holds rate-limit counts only; a Redis that does not answer must not slow requests down:
    # short timeouts and no retries, and the callers let the request through (common/throttling.py).
    CACHES = {
        "default": {
            # django-redis keeps one client per process (Django's own backend makes one per operation).
            "BACKEND": "django_redis.cache.RedisCache",
            "LOCATION": REDIS_URL,
            "OPTIONS": {
                "SOCKET_CONNECT_TIMEOUT": 0.5,
                "SOCKET_TIMEOUT": 0.5,
                "CONNECTION_POOL_KWARGS": {"retry": Retry(NoBackoff(), 0)},
            },
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# --- Celery ------------------------------------------------------------------------------------
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default=REDIS_URL)
CELERY_TASK_ALWAYS_EAGER = env.bool("CELERY_TASK_ALWAYS_EAGER", default=not CELERY_BROKER_URL)
if CELERY_TASK_ALWAYS_EAGER:
    CELERY_BROKER_URL = "memory://localhost/"
    CELERY_TASK_EAGER_PROPAGATES = True
CELERY_RESULT_BACKEND = env.str("CELERY_RESULT_BACKEND", default=REDIS_URL or None)
# A request that starts a task (the vote that completes a ballot) must not hang on a broker that is
# down: one connection attempt, bounded by BROKER_TIMEOUT_SECONDS, then the request goes on and the
# sweep below does the work later (common/tasks.py). Workers keep retrying their own connection.
BROKER_TIMEOUT_SECONDS = env.float("BROKER_TIMEOUT_SECONDS", default=1.0)
CELERY_BROKER_CONNECTION_TIMEOUT = BROKER_TIMEOUT_SECONDS
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "max_retries": 0,
    "connect_retries_timeout": BROKER_TIMEOUT_SECONDS,
    "socket_connect_timeout": BROKER_TIMEOUT_SECONDS,
    "socket_timeout": BROKER_TIMEOUT_SECONDS,  # a broker that accepts but does not answer
}
CELERY_TASK_PUBLISH_RETRY = False
CELERY_TASK_ACKS_LATE = True  # a worker that dies mid-task leaves the message to another worker
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_WORKER_SEND_TASK_EVENTS = True  # what Flower shows of the tasks (docker-compose.yml, flower)
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TIMEZONE = "UTC"
CELERY_BEAT_SCHEDULE = {
    # Expire leases, close ballots past their deadline or fully voted (a safety net for lost tasks).
    "ballots-sweep": {"task": "scoring.ballots_sweep", "schedule": env.float("SWEEP_SECONDS", default=15.0)},
    "submissions-sweep": {
        "task": "metrics.submissions_sweep",
        "schedule": env.float("SWEEP_SECONDS", default=15.0),
    },
    # A sample a minute of each running study's votes: the live view's votes over time (scoring/live.py).
    "live-samples": {"task": "scoring.live_samples_take", "schedule": 60.0},
}
# /healthz/ reads when the ballots sweep last ran at most this often per process (config/views.py).
HEALTHZ_SWEEP_READ_SECONDS = 5.0
# Beat's record of last runs; the default would be ./celerybeat-schedule, inside the code directory.
CELERY_BEAT_SCHEDULE_FILENAME = str(DATA_DIR / "celerybeat-schedule")

# --- auth, i18n, static ------------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "admin:login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
# The annotators' pages speak these (catalogs in locale/, compiled by `make install`); a study's default
# language is one of them, and its page language is chosen as docs/researchers.md ("Languages") says.
LANGUAGES = [
    ("en", "English"),
    ("de", "Deutsch"),
    ("fr", "Français"),
    ("es", "Español"),
    ("it", "Italiano"),
    ("pt", "Português"),
    ("ar", "العربية"),
]
LOCALE_PATHS = [BASE_DIR / "locale"]
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(env.str("STATIC_ROOT", default=str(BASE_DIR / "staticfiles")))
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # WhiteNoise serves from it; collectstatic fills it
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}

# --- security (production) ---------------------------------------------------------------------
# BEHIND_TLS_PROXY: the site is served over HTTPS by a proxy that terminates TLS and sets
# X-Forwarded-Proto. It turns on everything that only makes sense over HTTPS (redirect, HSTS, secure
# cookies); without it, a plain-HTTP production-like run (DEBUG off, no proxy) keeps working.
BEHIND_TLS_PROXY = env.bool("BEHIND_TLS_PROXY", default=False)
# How many proxies append to X-Forwarded-For before gunicorn: docker-compose.yml's nginx and the TLS proxy.
NUM_PROXIES = env.int("NUM_PROXIES", default=1 if BEHIND_TLS_PROXY else 0)
if not 0 <= NUM_PROXIES <= 10:
    raise ImproperlyConfigured("NUM_PROXIES must be between 0 and 10.")
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if BEHIND_TLS_PROXY else None
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=BEHIND_TLS_PROXY)
# The load balancer's probe and Prometheus (with its bearer token, on the internal network) speak plain
# HTTP to the web process.
SECURE_REDIRECT_EXEMPT = [r"^healthz/$", r"^metrics$"]
# HSTS is sent on HTTPS responses only. One year, as the preload list asks; the preload token only
# consents to a listing the domain's owner must still request (hstspreload.org).
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=365 * 24 * 3600 if BEHIND_TLS_PROXY else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=True)
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=True)
SESSION_COOKIE_SECURE = env.bool("SESSION_COOKIE_SECURE", default=BEHIND_TLS_PROXY)
CSRF_COOKIE_SECURE = env.bool("CSRF_COOKIE_SECURE", default=BEHIND_TLS_PROXY)
SECURE_REFERRER_POLICY = env.str("SECURE_REFERRER_POLICY", default="same-origin")
# Content-Security-Policy (django-csp): this site's own files only; no inline script or style, no
# plugins, no framing, no <base> elsewhere; forms submit to this site only (the crowd platform's
# completion page is reached by a plain link, which form-action does not govern). The API docs pages
# add what their vendored bundles need, and say why (config/urls.py).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "frame-ancestors": ["'none'"],
        # The exit of a worker sent by MTurk posts their assignment back to MTurk (collection/crowd.py).
        "form-action": ["'self'", "https://www.mturk.com", "https://workersandbox.mturk.com"],
    },
}
DATA_UPLOAD_MAX_MEMORY_SIZE = env.int("DATA_UPLOAD_MAX_MEMORY_SIZE", default=10 * 1024 * 1024)

# --- Prometheus figures (common/observability.py, GET /metrics) --------------------------------
# The bearer token a scrape must send; without it /metrics answers 403 to everyone.
METRICS_TOKEN = env.str("METRICS_TOKEN", default="")
# A directory that every web and worker process of the deployment shares (a volume in docker-compose.yml).
# Each host writes its processes' figures under METRICS_DIR/<host name> (prometheus_client's
# multi-process mode, turned on by PROMETHEUS_MULTIPROC_DIR, which must be set before the library is
# imported, hence here); a scrape adds up every host's. Empty: each process reports only its own.
METRICS_DIR = env.str("METRICS_DIR", default="")
if METRICS_DIR:
    _metrics_host_dir = Path(METRICS_DIR) / socket.gethostname()
    _metrics_host_dir.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("PROMETHEUS_MULTIPROC_DIR", str(_metrics_host_dir))

# --- REST API ----------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "common.schema.AutoSchema",  # documents every error status (common/schema.py)
    # The token first: missing or invalid credentials are then 401 with "WWW-Authenticate: Token" (REST
    # framework asks its first authenticator for the scheme; a session has none, which made them 403).
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "common.pagination.BoundedLimitOffsetPagination",
    "PAGE_SIZE": 100,
    # JSON only; the endpoints that take files (CSV uploads, submissions) add multipart themselves.
    "DEFAULT_PARSER_CLASSES": ["common.parsers.JSONParser"],
    "EXCEPTION_HANDLER": "common.api.exception_handler",
    # Rate limits (common/throttling.py): a rate is "<count>/<s|min|hour|day>"; "off" turns it off.
    "DEFAULT_THROTTLE_RATES": {
        "next.participant": _rate("THROTTLE_NEXT_PARTICIPANT", "120/min"),
        "next.address": _rate("THROTTLE_NEXT_ADDRESS", "1200/min"),
        "vote.participant": _rate("THROTTLE_VOTE_PARTICIPANT", "60/min"),
        "vote.address": _rate("THROTTLE_VOTE_ADDRESS", "600/min"),
        "join.address": _rate("THROTTLE_JOIN_ADDRESS", "60/hour"),
        "token.address": _rate("THROTTLE_TOKEN_ADDRESS", "30/min"),
        "submissions.user": _rate("THROTTLE_SUBMISSIONS_USER", "60/hour"),
        "accounts.address": _rate("THROTTLE_ACCOUNTS_ADDRESS", "20/hour"),  # model owners' sign-ups
    },
    # The proxies in front of gunicorn (nginx, the TLS proxy): the client's address is the one the
    # outermost of them appended to X-Forwarded-For; with none, X-Forwarded-For is ignored.
    "NUM_PROXIES": NUM_PROXIES,
}

# --- failed logins (django-axes) ---------------------------------------------------------------
# The admin's login, the model owners' page and POST /api/auth/token/ share one count of failures per
# username and client address together: the LOGIN_FAILURE_LIMIT-th failure locks that pair out for
# LOGIN_LOCKOUT_SECONDS (429 with Retry-After), so that someone elsewhere cannot lock the owner out.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",  # first: refuses a locked-out pair before the password is read
    "django.contrib.auth.backends.ModelBackend",
]
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_FAILURE_LIMIT = env.int("LOGIN_FAILURE_LIMIT", default=10)
AXES_COOLOFF_TIME = timedelta(seconds=env.int("LOGIN_LOCKOUT_SECONDS", default=15 * 60))
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False  # a lockout lasts what Retry-After says
AXES_RESET_ON_SUCCESS = True
AXES_HANDLER = "axes.handlers.database.AxesDatabaseHandler"  # counts that outlive a Redis restart
AXES_DISABLE_ACCESS_LOG = True  # the failures are what the lockout needs; successful logins are not kept
AXES_CLIENT_IP_CALLABLE = "common.throttling.login_client_address"  # behind NUM_PROXIES as the limits
AXES_USERNAME_CALLABLE = "common.throttling.login_username"  # a bounded key for an over-long username
AXES_LOCKOUT_CALLABLE = "common.throttling.login_locked_response"
AXES_VERBOSE = False  # log the username and address of a failure (cleansed), not a banner at every start
# Anyone may make a model owner's account at /models/signup/ (metrics/account_views.py); off: only
# through a study's invitation link, or by staff in the admin.
MODEL_OWNER_SIGNUP = env.bool("MODEL_OWNER_SIGNUP", default=False)

# The REST API's version (semantic versioning: a new major breaks clients, a new minor adds to the API).
# The schema publishes it; every /api/ response carries it (common/versioning.py); the Python client in
# client/ compares it with its own (yardstick_client.API_VERSION).
API_VERSION = "0.3.0"

SPECTACULAR_SETTINGS = {
    "TITLE": "Yardstick API",
    "DESCRIPTION": "Adaptive pairwise-comparison studies and top-weighted evaluation of semantic models.",
    "VERSION": API_VERSION,
    "SERVE_INCLUDE_SCHEMA": False,
    # Request bodies get their own components, so that they state what is required and non-blank
    # (minLength) and leave out read-only fields.
    "COMPONENT_SPLIT_REQUEST": True,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "ENUM_NAME_OVERRIDES": {
        "StudyStatusEnum": "collection.models.Study.Status",
        "StudyJobStatusEnum": "collection.models.StudyJob.Status",
    },
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}

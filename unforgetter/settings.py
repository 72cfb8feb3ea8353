"""Unforgetter settings: one env-driven module (12-factor, django-environ).

With no environment at all the project runs on the embedded default: SQLite (WAL) next to the
code and no broker, the serving process consolidating proposals itself. `DATABASE_URL` and
`CELERY_BROKER_URL` turn it into a fleet. Bad values fail at start-up, not at first use.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

import django_stubs_ext
import environ
from django.core.exceptions import ImproperlyConfigured

from workspaces.keys import install_keys
from workspaces.logs import PLAIN_FORMAT
from workspaces.net import parse_networks

# Django's generic classes (ModelAdmin[Model], QuerySet[Model], ...) subscriptable at run time,
# as the type annotations write them.
django_stubs_ext.monkeypatch()

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()

# numpy's BLAS (the local embedder, the vector index) on one thread per process: it embeds one
# query at a time beside the request threads, and a BLAS pool spinning on every core makes each
# call tens of times slower on a busy machine (2-3 s for a query instead of ~0.1 s under load).
# Set before anything imports numpy; an operator's own setting wins.
for _blas_threads in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_blas_threads, "1")
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

# The cores this process may run on (its affinity, as `make run` counts them for its workers).
USABLE_CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1

DEBUG = env.bool("DEBUG", default=False)
TESTING = env.bool("UNFORGETTER_TESTING", default=False)

# The public origin the server is reached at; the MCP resource identifier and the OAuth issuer
# are derived from it, so it must be exactly what clients type. Unset, it is the loopback
# address on PORT (the port `make run` serves on), so the printed URLs are the served ones.
PORT = env.int("PORT", default=8000)
PUBLIC_URL = env.str("PUBLIC_URL", default=f"http://127.0.0.1:{PORT}").rstrip("/")
_public = urlsplit(PUBLIC_URL)
if _public.scheme not in ("http", "https") or not _public.hostname:
    raise ImproperlyConfigured(f"PUBLIC_URL must be an http(s) origin, got {PUBLIC_URL!r}.")
MCP_RESOURCE_URL = f"{PUBLIC_URL}/mcp"

# The reverse proxies (addresses or CIDR blocks) whose X-Forwarded-For and X-Forwarded-Proto are
# believed, for throttles, audit and logs; none by default. Serve with uvicorn --no-proxy-headers.
try:
    TRUSTED_PROXIES = parse_networks(env.list("TRUSTED_PROXIES", default=[]))
except ValueError as exc:
    raise ImproperlyConfigured(f"TRUSTED_PROXIES: {exc}") from exc

ALLOWED_HOSTS = env.list(
    "ALLOWED_HOSTS", default=[_public.hostname, "127.0.0.1", "localhost", "[::1]", "testserver"]
)
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[PUBLIC_URL])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "drf_spectacular",
    "oauth2_provider",
    "workspaces",
    "memory",
    "mcpbridge",
    "api",
    "console",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "workspaces.headers.ContentSecurityPolicyMiddleware",
    # Innermost: a view that meets a database outage answers 503 through every middleware above.
    "workspaces.outages.DatabaseOutageMiddleware",
]

ROOT_URLCONF = "unforgetter.urls"
WSGI_APPLICATION = "unforgetter.wsgi.application"
ASGI_APPLICATION = "unforgetter.asgi.application"

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

# --- Database -------------------------------------------------------------------------------
DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}")}
_db = DATABASES["default"]
if _db["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets readers run beside the single writer; IMMEDIATE takes the write lock at BEGIN so
    # two writers queue on busy_timeout instead of failing with "database is locked" mid-way.
    # Each connection (one per request thread, kept open) has a page cache of its own; SQLite's
    # default of 2 MB filled up in every thread of a worker at 1M items, 15 MB of its memory
    # holding copies of pages the operating system's file cache keeps anyway (reads from there
    # cost no measurable time). Bulk imports widen their own (memory.imports).
    _db.setdefault("OPTIONS", {}).update(
        {
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON; "
            f"PRAGMA cache_size=-{env.int('SQLITE_PAGE_CACHE_KIB', default=256)};",
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,
        }
    )
    _db["TEST"] = {"NAME": env.str("SQLITE_TEST_PATH", default=str(BASE_DIR / "var" / "test.sqlite3"))}
elif _db["ENGINE"] in ("django.db.backends.postgresql", "django.db.backends.postgresql_psycopg2"):
    _db["ENGINE"] = "django.db.backends.postgresql"
    _db.setdefault("OPTIONS", {})["pool"] = {
        "min_size": env.int("DB_POOL_MIN", default=1),
        "max_size": env.int("DB_POOL_MAX", default=16),
        # How long a request waits for a connection (a PostgreSQL restart) before `unavailable`.
        "timeout": env.float("DB_POOL_TIMEOUT_SECONDS", default=10),
    }
    _db["CONN_MAX_AGE"] = 0  # the pool owns connection lifetime
    if env.bool("DB_PREPARED_STATEMENTS", default=True):
        # Parameters bound by the server, and each statement a connection has run twice kept
        # prepared on it (psycopg's statement cache): a call's statements are then neither
        # parsed nor planned again. Off for a pooler that moves sessions between connections
        # (PgBouncer in transaction mode), where a prepared statement may not be there.
        _db["OPTIONS"].update(server_side_binding=True, prepare_threshold=2)
else:
    raise ImproperlyConfigured(f"Unsupported database engine {_db['ENGINE']!r}: use PostgreSQL or SQLite.")

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Keys -------------------------------------------------------------------------------------
# SECRET_KEY signs sessions and encrypts cursors; LEDGER_KEY keys the proposal ledger's HMAC chain.
# Neither has a default in the repository. From the environment when set (a fleet: required on
# PostgreSQL); otherwise the install's own random keys, generated on first run into a 0600 file
# beside the SQLite database (or KEYS_FILE). Each key takes *_FALLBACKS for rotation.
_EMBEDDED = _db["ENGINE"] == "django.db.backends.sqlite3"
SECRET_KEY = env.str("SECRET_KEY", default="")
_ledger_key = env.str("LEDGER_KEY", default="")
if not (SECRET_KEY and _ledger_key):
    if not (_EMBEDDED or DEBUG or TESTING):
        raise ImproperlyConfigured(
            "SECRET_KEY and LEDGER_KEY must be set in the environment when running on PostgreSQL "
            "(generate each with: python -c 'import secrets; print(secrets.token_urlsafe(48))')."
        )
    _beside = f"{_db['NAME']}.keys" if _EMBEDDED and _db["NAME"] != ":memory:" else BASE_DIR / "var" / "keys"
    KEYS_FILE = Path(env.str("KEYS_FILE", default=str(_beside)))
    try:
        _installed = install_keys(KEYS_FILE)
    except (OSError, ValueError) as exc:
        raise ImproperlyConfigured(f"Cannot read or create the key file: {exc}") from exc
    SECRET_KEY = SECRET_KEY or _installed["SECRET_KEY"]
    _ledger_key = _ledger_key or _installed["LEDGER_KEY"]
SECRET_KEY_FALLBACKS = env.list("SECRET_KEY_FALLBACKS", default=[])

# --- Cache ------------------------------------------------------------------------------------
CACHES = {"default": env.cache("CACHE_URL", default="locmemcache://unforgetter")}
if CACHES["default"]["BACKEND"].endswith("LocMemCache"):
    # Compiled bundles (about 10 KB each) are the main tenants: 2,000 keeps the recent tasks of
    # many agents at about 20 MB per process (Django's default of 300 evicted them under load).
    CACHES["default"].setdefault("OPTIONS", {}).setdefault("MAX_ENTRIES", 2000)
elif CACHES["default"]["BACKEND"].endswith("RedisCache"):
    # A Redis that does not answer is given up on within a second: the server then caches and
    # counts in its own memory (workspaces.caches) instead of holding the request.
    _redis_options = CACHES["default"].setdefault("OPTIONS", {})
    _redis_options.setdefault("socket_connect_timeout", 1)
    _redis_options.setdefault("socket_timeout", 1)

# --- Auth, i18n, static ---------------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
# Sign-in throttling (workspaces.login): failures per account and per address before a lockout.
LOGIN_FAILURES_PER_ACCOUNT = env.int("LOGIN_FAILURES_PER_ACCOUNT", default=10)
LOGIN_FAILURES_PER_ADDRESS = env.int("LOGIN_FAILURES_PER_ADDRESS", default=50)
LOGIN_LOCKOUT = timedelta(seconds=env.int("LOGIN_LOCKOUT_SECONDS", default=15 * 60))
LOGIN_URL = "/console/login/"
LOGIN_REDIRECT_URL = "/console/"
LOGOUT_REDIRECT_URL = "/console/login/"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = env.str("STATIC_ROOT", default=str(BASE_DIR / "var" / "static"))

# Served over https (PUBLIC_URL): secure cookies, HSTS and a redirect of plain http (except the
# probes, which load balancers call over http). Behind a TLS-terminating proxy, list it in
# TRUSTED_PROXIES so its X-Forwarded-Proto tells Django the request was https.
_HTTPS = _public.scheme == "https"
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SECURE = _HTTPS
CSRF_COOKIE_SECURE = _HTTPS
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=365 * 24 * 3600 if _HTTPS else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=_HTTPS)
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=_HTTPS)
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=_HTTPS)
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"]

# --- REST API -------------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_AUTHENTICATION_CLASSES": ["rest_framework.authentication.SessionAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "EXCEPTION_HANDLER": "api.views.problem_exception_handler",
    "UNAUTHENTICATED_USER": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Unforgetter API",
    "DESCRIPTION": "Scoped read access for scripts and snapshot prefetch; the same authority as /mcp.",
    "VERSION": "1",
    # 3.1: the response schemas are JSON Schema 2020-12, the same the MCP tools publish.
    "OAS_VERSION": "3.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SERVE_AUTHENTICATION": [],
}

# --- OAuth 2.1 (django-oauth-toolkit) -----------------------------------------------------------
# DOT's models are not swapped: a Connection points at the DOT Application it was consented for,
# so access tokens stay DOT's own rows, looked up by checksum.
OAUTH2_PROVIDER_APPLICATION_MODEL = "oauth2_provider.Application"
OAUTH2_PROVIDER_ACCESS_TOKEN_MODEL = "oauth2_provider.AccessToken"  # noqa: S105
OAUTH2_PROVIDER_REFRESH_TOKEN_MODEL = "oauth2_provider.RefreshToken"  # noqa: S105
OAUTH2_PROVIDER_GRANT_MODEL = "oauth2_provider.Grant"
OAUTH2_PROVIDER_ID_TOKEN_MODEL = "oauth2_provider.IDToken"  # noqa: S105
OAUTH2_PROVIDER_DEVICE_GRANT_MODEL = "oauth2_provider.DeviceGrant"
# Redirect URIs are https or loopback http; native apps that insist on a private-use scheme
# (RFC 8252 section 7.1, e.g. cursor://) can be allowed by naming the scheme here.
OAUTH_NATIVE_REDIRECT_SCHEMES = env.list("OAUTH_NATIVE_REDIRECT_SCHEMES", default=[])
OAUTH2_PROVIDER = {
    # OAuth 2.1 for MCP clients: authorization code with PKCE (S256 only), refresh tokens rotated
    # with reuse detection, nothing else (no implicit, no password, no client credentials).
    "OAUTH2_VALIDATOR_CLASS": "workspaces.oauth.validator.UnforgetterOAuth2Validator",
    "PKCE_REQUIRED": True,
    "OAUTH2_RESPONSE_TYPES_SUPPORTED": ["code"],
    "OAUTH2_GRANT_TYPES_SUPPORTED": ["authorization_code", "refresh_token"],
    "OAUTH2_TOKEN_ENDPOINT_AUTH_METHODS_SUPPORTED": ["none", "client_secret_basic", "client_secret_post"],
    "ACCESS_TOKEN_EXPIRE_SECONDS": env.int("OAUTH_ACCESS_TOKEN_SECONDS", default=3600),
    "AUTHORIZATION_CODE_EXPIRE_SECONDS": 60,
    "REFRESH_TOKEN_EXPIRE_SECONDS": env.int("OAUTH_REFRESH_TOKEN_SECONDS", default=30 * 24 * 3600),
    "ROTATE_REFRESH_TOKEN": True,
    "REFRESH_TOKEN_REUSE_PROTECTION": True,
    "REFRESH_TOKEN_GRACE_PERIOD_SECONDS": 0,
    "SCOPES": {"memory:read": "Read memory", "memory:propose": "Propose memory changes"},
    "DEFAULT_SCOPES": ["memory:read"],
    # Always show the consent page: approving it is what creates the scoped Connection.
    "REQUEST_APPROVAL_PROMPT": "force",
    # Redirect URIs: https, or http on a loopback address (RFC 8252 native clients, any port);
    # workspaces.oauth narrows plain http to loopback hosts.
    "ALLOWED_REDIRECT_URI_SCHEMES": ["http", "https", *OAUTH_NATIVE_REDIRECT_SCHEMES],
    "ALLOW_LOCALHOST_LOOPBACK": True,
    "ALLOW_URI_WILDCARDS": False,
    # The issuer is our public origin, whatever Host a request arrived with (RFC 8414, RFC 9207).
    "OIDC_ISS_ENDPOINT": PUBLIC_URL,
    # RFC 7591 open registration (throttled per address in workspaces.oauth_views) and
    # client-ID metadata documents.
    "DCR_ENABLED": True,
    "DCR_REGISTRATION_PERMISSION_CLASSES": ("oauth2_provider.dcr.AllowAllDCRPermission",),
    "CIMD_ENABLED": True,
    # RFC 9700: enforce every best-current-practice gate DOT has.
    "COMPLIANT_BCP_RFC9700_IMPLICIT_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PASSWORD_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,
    "COMPLIANT_BCP_RFC9700_ACCESS_TOKEN_TRANSPORT": True,
    "COMPLIANT_BCP_RFC9700_AUTHZ_RESPONSE_ISS": True,
    "COMPLIANT_BCP_RFC9700_TOKEN_STORAGE": True,
    "COMPLIANT_BCP_RFC9700_REFRESH_TOKEN": True,
    "COMPLIANT_BCP_RFC9700_REDIRECT_URI_MATCHING": True,
    "COMPLIANT_BCP_RFC9700_PKCE_REQUIRED": True,
    "OAUTH2_PROTECTED_RESOURCE_NAME": "Unforgetter memory",
}
# DOT warns that http redirect URIs are allowed (RFC 9700 section 2.1): they are, only for loopback
# hosts (RFC 8252 section 7.3, what Claude Code and Codex register), which workspaces.oauth
# enforces for every client however it registered, and which the BCP permits for native apps.
SILENCED_SYSTEM_CHECKS = ["oauth2_provider.W008"]
# Open registration is throttled per client address (a fixed window in the Django cache), and
# registrations that never led to a consent are pruned after OAUTH_CLIENT_PRUNE_AFTER.
OAUTH_REGISTRATIONS_PER_WINDOW = env.int("OAUTH_REGISTRATIONS_PER_WINDOW", default=20)
OAUTH_REGISTRATION_WINDOW = timedelta(seconds=env.int("OAUTH_REGISTRATION_WINDOW_SECONDS", default=3600))
OAUTH_CLIENT_PRUNE_AFTER = timedelta(days=env.int("OAUTH_CLIENT_PRUNE_AFTER_DAYS", default=7))

# --- Celery ------------------------------------------------------------------------------------------
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default="")
if CELERY_BROKER_URL:
    # Every process with a broker to send to creates the Celery app with its settings, so that
    # @shared_task binds to it and memory.dispatch sends through it (it reads these settings only
    # when first used). Without a broker nothing needs Celery: not loading it (with kombu, click,
    # yaml, ...) keeps 5.4 MB out of every web worker.
    import unforgetter.celery  # noqa: F401
CELERY_TASK_ALWAYS_EAGER = False
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True
CELERY_TIMEZONE = "UTC"
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Redis redelivers a task not acknowledged within this many seconds (acks are late: after the
# task ran), e.g. when its worker was killed. Exactly-once comes from the database's claim, not
# from the broker, so a task that runs twice is harmless (the fleet test makes it happen).
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": env.int("CELERY_VISIBILITY_TIMEOUT_SECONDS", default=3600)
}
# One queue per deployment: two deployments sharing a broker never take each other's tasks.
CELERY_TASK_DEFAULT_QUEUE = env.str("CELERY_QUEUE", default="unforgetter")
# Beat's heartbeat: publishes every workspace at least every half cadence (memory.tasks).
CELERY_BEAT_SCHEDULE = {
    "publish-heartbeat": {
        "task": "memory.publish_heartbeat",
        "schedule": env.float("HEARTBEAT_TICK_SECONDS", default=5.0),
    },
    "prune-oauth-clients": {"task": "workspaces.prune_oauth_clients", "schedule": 24 * 3600.0},
    "purge-deleted-workspaces": {"task": "workspaces.purge_deleted_workspaces", "schedule": 3600.0},
    "embed-pending": {"task": "memory.embed_pending", "schedule": 10.0},
}

# --- Unforgetter -------------------------------------------------------------------------------------
UNFORGETTER = {
    # get_context bounds
    "CONTEXT_MAX_ITEMS": env.int("CONTEXT_MAX_ITEMS", default=40),
    "CONTEXT_MAX_CHARS": env.int("CONTEXT_MAX_CHARS", default=16_000),
    "CONTEXT_MAX_POINTERS": env.int("CONTEXT_MAX_POINTERS", default=10),
    # search_memory
    "SEARCH_PAGE_SIZE": env.int("SEARCH_PAGE_SIZE", default=10),
    # Semantic retrieval: "local" (all-MiniLM-L6-v2 from its PyPI package, on the CPU), "openai"
    # (an OpenAI-compatible /embeddings endpoint) or "off" (lexical ranking alone).
    "EMBEDDER": env.str("EMBEDDER", default="local"),
    "EMBEDDINGS_URL": env.str("EMBEDDINGS_URL", default=""),
    "EMBEDDINGS_MODEL": env.str("EMBEDDINGS_MODEL", default="text-embedding-3-small"),
    "EMBEDDINGS_API_KEY": env.str("EMBEDDINGS_API_KEY", default=""),
    # On PostgreSQL with the pgvector extension, search vectors there (memory.embeddings.pgvector).
    # Off by default: at 100,000 items the in-process index answers faster and finds more (README).
    "PGVECTOR": env.bool("PGVECTOR", default=False),
    # The local embedder: the folder its int8 model is built into once (memory.embeddings.minilm),
    # and its threads per call: where the process may run on two cores, 0, which times one and two
    # when the model loads and keeps the faster (memory.embeddings.minilm.threads_for).
    "MODELS_DIR": Path(env.str("MODELS_DIR", default=str(BASE_DIR / "var" / "models"))),
    "EMBEDDER_THREADS": env.int("EMBEDDER_THREADS", default=0 if USABLE_CORES >= 2 else 1),
    # Where the serving processes of this machine reach the one process that runs the local model
    # for all of them (memory.embeddings.shared); empty: each serving process loads the model itself.
    "EMBEDDER_SOCKET": env.str(
        "EMBEDDER_SOCKET", default="" if TESTING else str(BASE_DIR / "var" / "embedder.sock")
    ),
    "CURSOR_TTL": timedelta(seconds=env.int("CURSOR_TTL_SECONDS", default=15 * 60)),
    # The longest one ranking statement may run (memory.query_limits; 0: no limit).
    "SEARCH_STATEMENT_TIMEOUT_MS": env.int("SEARCH_STATEMENT_TIMEOUT_MS", default=2000),
    # credentials
    "TOKEN_DEFAULT_TTL": timedelta(days=env.int("TOKEN_DEFAULT_TTL_DAYS", default=90)),
    "LAST_USED_RESOLUTION": timedelta(seconds=60),
    # publishing
    "DEFAULT_PUBLISH_CADENCE": timedelta(seconds=env.int("PUBLISH_CADENCE_SECONDS", default=30)),
    # write path: the consolidator and the proposal ledger
    # With no broker the serving process consolidates and publishes itself (False: it does not).
    # Off by default under tests: a background writer would race the test database's flushes;
    # tests that need it switch it on (see tests/mcpbridge/test_propose_memory.py).
    "EMBEDDED_WORKER": env.bool("EMBEDDED_WORKER", default=not TESTING),
    # How often the heartbeat looks for workspaces due a publication (Celery beat and embedded).
    "HEARTBEAT_TICK": timedelta(seconds=env.float("HEARTBEAT_TICK_SECONDS", default=5.0)),
    "CONSOLIDATION_BATCH": env.int("CONSOLIDATION_BATCH", default=250),
    # The key of the proposal ledger's HMAC chain (see Keys above), independent of SECRET_KEY;
    # retired ledger keys stay in LEDGER_KEY_FALLBACKS so proposals attested with them verify.
    "LEDGER_KEY": _ledger_key,
    "LEDGER_KEY_FALLBACKS": env.list("LEDGER_KEY_FALLBACKS", default=[]),
    # Every agent call (MCP tools, REST), per credential (workspaces.limits): calls started per
    # second (shared through the cache; off by default under tests, whose scripted clients call
    # far faster than agents, and switched on by the tests of the limits); and, per serving
    # process, calls running at once (more wait their turn, up to CREDENTIAL_QUEUE_SECONDS) and
    # calls running or waiting. Over a limit: rate_limited with retry_after. 0: off.
    "CREDENTIAL_CALLS_PER_SECOND": env.int("CREDENTIAL_CALLS_PER_SECOND", default=0 if TESTING else 20),
    "CREDENTIAL_CONCURRENCY": env.int("CREDENTIAL_CONCURRENCY", default=1),
    "CREDENTIAL_IN_FLIGHT": env.int("CREDENTIAL_IN_FLIGHT", default=16),
    "CREDENTIAL_QUEUE_SECONDS": env.int("CREDENTIAL_QUEUE_SECONDS", default=10),
    # Server time per credential and process (workspaces.limits): milliseconds of calls' wall
    # time a credential may spend per second on average (off under tests, like the rate), and
    # the burst it may spend at once.
    "CREDENTIAL_SERVER_MS_PER_SECOND": env.int(
        "CREDENTIAL_SERVER_MS_PER_SECOND", default=0 if TESTING else 100
    ),
    "CREDENTIAL_SERVER_MS_BURST": env.int("CREDENTIAL_SERVER_MS_BURST", default=2_000),
    # Deleting a workspace removes its rows at once; exports the server made of it (in EXPORTS_DIR)
    # are kept this long, then purged by a scheduled task (the receipt says when).
    "EXPORTS_DIR": Path(env.str("EXPORTS_DIR", default=str(BASE_DIR / "var" / "exports"))),
    "DELETION_RETENTION": timedelta(days=env.int("DELETION_RETENTION_DAYS", default=30)),
    # propose_memory calls allowed per connection per minute (0: unlimited).
    "PROPOSE_RATE_PER_MINUTE": env.int("PROPOSE_RATE_PER_MINUTE", default=0),
    # /readyz fails when the oldest pending proposal has waited longer than this.
    "READY_MAX_LAG_SECONDS": env.int("READY_MAX_LAG_SECONDS", default=120),
    # MCP transport: hosts and browser origins allowed to reach /mcp (DNS-rebinding protection)
    "MCP_ALLOWED_HOSTS": env.list("MCP_ALLOWED_HOSTS", default=[]),
    "MCP_ALLOWED_ORIGINS": env.list("MCP_ALLOWED_ORIGINS", default=[]),
    # Threads per process running MCP requests' database work (mcpbridge.threads); at most
    # DB_POOL_MAX on PostgreSQL, so the console and the consolidator still find a connection.
    "MCP_REQUEST_THREADS": env.int("MCP_REQUEST_THREADS", default=8),
    # The MCP SDK's OpenTelemetry span around every message (mcpbridge.server): off unless a
    # deployment installs an OpenTelemetry SDK and exporter to collect them.
    "MCP_TRACE_SPANS": env.bool("MCP_TRACE_SPANS", default=False),
    # A stateless tools/call (either protocol era) of a credential this process has verified
    # before is answered in one unit of work, beside the SDK (mcpbridge.direct); false: the SDK.
    "MCP_DIRECT_CALLS": env.bool("MCP_DIRECT_CALLS", default=True),
    # Such a call that only reads, while the worker serves no other request, runs on the event
    # loop's own thread, without a thread hop (mcpbridge.direct); false: always a request thread.
    "MCP_CALLS_ON_LOOP": env.bool("MCP_CALLS_ON_LOOP", default=True),
}

# /metrics: a bearer token for the scraper; with none, only loopback requests are answered.
METRICS_TOKEN = env.str("METRICS_TOKEN", default="")

# LOG_FORMAT=json (the default): one JSON object per line with the request id; plain: for a terminal.
LOG_FORMAT = env.str("LOG_FORMAT", default="json")
if LOG_FORMAT not in ("json", "plain"):
    raise ImproperlyConfigured(f"LOG_FORMAT must be json or plain, got {LOG_FORMAT!r}.")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_id": {"()": "workspaces.logs.RequestIdFilter"}},
    "formatters": {
        "json": {"()": "workspaces.logs.JsonFormatter"},
        "plain": {"format": PLAIN_FORMAT},
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": LOG_FORMAT, "filters": ["request_id"]}
    },
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    "loggers": {
        "mcp": {"level": env.str("MCP_LOG_LEVEL", default="WARNING")},
        "httpx": {"level": "WARNING"},
        "uvicorn.access": {"level": env.str("ACCESS_LOG_LEVEL", default="WARNING")},
    },
}

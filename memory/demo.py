"""The demo workspace's memory: a small platform team's policies, decisions and habits."""

from __future__ import annotations

# (project slug, kind, text, source, actor, data_class or None for the project's)
DEMO_PROJECTS = [
    (
        "platform",
        "Platform",
        "internal",
        "Services, deploys, databases and on-call for the Acme platform team.",
    ),
    ("web-app", "Web app", "internal", "The customer-facing Django web application."),
    ("handbook", "Team handbook", "public", "How the team works; safe to share."),
    ("incident-review", "Incident reviews", "confidential", "Post-incident reviews with customer details."),
    ("payroll", "Payroll", "restricted", "Salaries and contracts. Never available to agents."),
]

DEMO_ITEMS = [
    (
        "platform",
        "policy",
        "Never run database migrations against production outside the Tuesday and Thursday "
        "change windows (10:00-16:00 UTC) without the on-call lead's approval in #ops.",
        "handbook/change-policy.md",
        "owner",
        None,
    ),
    (
        "platform",
        "policy",
        "Secrets live in Vault only. Never paste tokens, passwords or private keys into code, "
        "tickets, chat or memory.",
        "handbook/security.md",
        "owner",
        None,
    ),
    (
        "platform",
        "goal",
        "Q4 goal: p95 API latency under 200 ms and zero-downtime deploys for every service.",
        "okr/2026-q4.md",
        "owner",
        None,
    ),
    (
        "platform",
        "permission",
        "Agents may open pull requests and propose memory; merging to main and "
        "production deploys need a human reviewer.",
        "handbook/agents.md",
        "owner",
        None,
    ),
    (
        "platform",
        "decision",
        "We deploy with blue-green releases behind the load balancer; canary releases were "
        "dropped in 2026-03 because the traffic split hid slow memory leaks.",
        "adr/0012-blue-green.md",
        "maria@acme",
        None,
    ),
    (
        "platform",
        "decision",
        "PostgreSQL 16 is the only relational database. New services must not add MySQL or MongoDB.",
        "adr/0007-postgres-only.md",
        "maria@acme",
        None,
    ),
    (
        "platform",
        "decision",
        "Background jobs run on Celery with Redis as the broker; RabbitMQ was retired in 2026-05.",
        "adr/0015-celery-redis.md",
        "tom@acme",
        None,
    ),
    (
        "platform",
        "decision",
        "Feature flags are managed in Unleash; flags older than 90 days must be removed or made permanent.",
        "adr/0018-feature-flags.md",
        "tom@acme",
        None,
    ),
    (
        "platform",
        "convention",
        "Service names are kebab-case and match the repository name, e.g. billing-api.",
        "handbook/naming.md",
        "owner",
        None,
    ),
    (
        "platform",
        "convention",
        "Every migration must be reversible and tested with migrate/rollback in CI before it is merged.",
        "handbook/migrations.md",
        "maria@acme",
        None,
    ),
    (
        "platform",
        "convention",
        "Log lines are structured JSON with request_id, service and level; never log request bodies.",
        "handbook/logging.md",
        "owner",
        None,
    ),
    (
        "platform",
        "fact",
        "The staging cluster is staging-eu-1 in Frankfurt; production runs in eu-west-1 and us-east-2.",
        "infra/README.md",
        "sam@acme",
        None,
    ),
    (
        "platform",
        "fact",
        "On-call rotation changes every Monday at 09:00 UTC; the schedule is in PagerDuty "
        "under 'platform-primary'.",
        "handbook/on-call.md",
        "sam@acme",
        None,
    ),
    (
        "platform",
        "fact",
        "The billing-api p95 latency was 340 ms in November 2026, mostly in the invoice PDF renderer.",
        "grafana/billing-api",
        "claude-code@maria",
        None,
    ),
    (
        "platform",
        "fact",
        "Deploys take about 12 minutes end to end, 7 of them in the integration test stage.",
        "ci/metrics",
        "codex@tom",
        None,
    ),
    (
        "platform",
        "thread",
        "Should the invoice PDF renderer move to a separate worker queue to cut billing-api "
        "latency? Needs a load test first.",
        "PLAT-412",
        "claude-code@maria",
        None,
    ),
    (
        "platform",
        "thread",
        "Postgres 17 upgrade: check extension compatibility (pg_partman, pgvector) before scheduling.",
        "PLAT-398",
        "tom@acme",
        None,
    ),
    (
        "platform",
        "method",
        "How to deploy a service:\n1. Merge to main after review.\n2. Wait for the green "
        "build, then run `make release SERVICE=<name>`.\n"
        "3. Watch the blue-green switch in the deploy dashboard.\n"
        "4. If error rates rise, run `make rollback SERVICE=<name>` within 15 minutes.",
        "runbooks/deploy.md",
        "owner",
        None,
    ),
    (
        "platform",
        "method",
        "How to add a database migration:\n1. Write the migration with a reverse.\n2. Run "
        "`make migrate-check` locally.\n3. Schedule the deploy inside a change window.",
        "runbooks/migrations.md",
        "maria@acme",
        None,
    ),
    (
        "web-app",
        "decision",
        "The web app uses server-rendered Django templates with htmx; no SPA framework.",
        "adr/0003-htmx.md",
        "lea@acme",
        None,
    ),
    (
        "web-app",
        "convention",
        "Templates live under templates/<app>/ and every form has a label for each field.",
        "web-app/CONTRIBUTING.md",
        "lea@acme",
        None,
    ),
    (
        "web-app",
        "fact",
        "The login page is rate-limited to 10 attempts per minute per IP by django-axes.",
        "web-app/settings.py",
        "cursor@lea",
        None,
    ),
    (
        "web-app",
        "thread",
        "Dark mode: design tokens are ready, templates still hard-code colours.",
        "WEB-77",
        "lea@acme",
        None,
    ),
    (
        "handbook",
        "convention",
        "Write decisions down as ADRs in the adr/ folder; one page, with context, decision and consequences.",
        "handbook/adr.md",
        "owner",
        None,
    ),
    (
        "handbook",
        "fact",
        "Team rituals: planning on Mondays, demo on Fridays, retro every second Friday.",
        "handbook/rituals.md",
        "owner",
        None,
    ),
    (
        "incident-review",
        "fact",
        "INC-2026-031: a misconfigured feature flag exposed beta invoices to two customers for 14 minutes.",
        "incidents/2026-031.md",
        "sam@acme",
        None,
    ),
    ("payroll", "fact", "Salary bands are reviewed every January.", "hr/bands.md", "owner", None),
    (
        "platform",
        "fact",
        "The legacy reporting service still reads the old orders table directly; restricted "
        "details of the customer contract are in the payroll project.",
        "infra/legacy.md",
        "owner",
        "confidential",
    ),
]

"""Security headers: a CSP on every HTML page, HSTS over https, a clean `check --deploy`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.contrib.auth.models import User
from django.test import Client, override_settings

from tests.conftest import LiveServer, Tenant
from tests.processes import ROOT, process_env
from tests.workspaces.oauth_harness import HandClient, pkce_pair, session_cookies
from workspaces.keys import new_key

pytestmark = pytest.mark.django_db


def _policy(response: Any) -> str:
    assert response["Content-Type"].startswith("text/html")
    policy: str = response["Content-Security-Policy"]
    assert "script-src 'self'" in policy
    assert "unsafe-inline" not in policy.split("style-src")[0], "never inline script"
    assert "frame-ancestors 'none'" in policy
    return policy


def test_every_html_page_carries_a_content_security_policy(tenant: Tenant) -> None:
    anonymous = Client()
    _policy(anonymous.get("/console/login/"))
    _policy(anonymous.get("/admin/login/"))
    _policy(anonymous.get("/no/such/page/"))  # the 404 page
    refused = Client(enforce_csrf_checks=True).post("/console/login/", {"username": "x", "password": "y"})
    assert refused.status_code == 403
    _policy(refused)  # the CSRF failure page
    admin = Client()
    admin.force_login(User.objects.create_superuser("root", "root@example.com", "pw"))
    policy = _policy(admin.get("/admin/workspaces/connection/"))
    assert "style-src 'self' 'unsafe-inline'" in policy


@pytest.mark.django_db(transaction=True)
def test_the_oauth_consent_page_carries_a_content_security_policy(live: LiveServer, tenant: Tenant) -> None:
    client = HandClient.register(live.url)
    _, challenge = pkce_pair()
    url = client.authorize_url(code_challenge=challenge, code_challenge_method="S256", resource=live.mcp_url)
    page = httpx.get(url, cookies=session_cookies(tenant.owner), timeout=30)
    assert page.status_code == 200
    assert "<form" in page.text
    policy = page.headers["content-security-policy"]
    assert "script-src 'self'" in policy
    assert "form-action 'self'" in policy


def test_hsts_and_the_security_headers_over_https(tenant: Tenant) -> None:
    with override_settings(SECURE_HSTS_SECONDS=31536000, SECURE_HSTS_INCLUDE_SUBDOMAINS=True):
        response = Client().get("/console/login/", secure=True)
    assert response["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Referrer-Policy"] == "same-origin"
    assert response["Cross-Origin-Opener-Policy"] == "same-origin"
    assert response["X-Frame-Options"] == "DENY"
    assert "Strict-Transport-Security" not in Client().get("/console/login/"), "never over plain http"


@pytest.mark.slow
def test_check_deploy_is_clean_with_the_documented_production_settings(tmp_path: Path) -> None:
    env = process_env(
        DATABASE_URL="postgres://app@db.internal:5432/unforgetter",
        PUBLIC_URL="https://memory.example.com",
        SECRET_KEY=new_key(),
        LEDGER_KEY=new_key(),
        CELERY_BROKER_URL="redis://redis.internal:6379/0",
        CACHE_URL="redis://redis.internal:6379/1",
    )
    env.pop("UNFORGETTER_TESTING")
    done = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "check", "--deploy", "--fail-level", "WARNING"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "System check identified no issues" in done.stdout

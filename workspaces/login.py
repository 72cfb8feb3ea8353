"""Sign-in throttling for the console and the admin: per account and per client address.

After LOGIN_FAILURES_PER_ACCOUNT failed sign-ins for one username, or LOGIN_FAILURES_PER_ADDRESS
from one address (counted within LOGIN_LOCKOUT), that account or address is locked for
LOGIN_LOCKOUT: every sign-in, even with the right password, is refused with a message that says
when to retry, and the lock expires by itself (GitLab's and Sentry's behaviour). A successful
sign-in clears the account's failures. The counters live in the Django cache (shared by every
process when CACHE_URL is Redis); usernames are stored as digests.
"""

from __future__ import annotations

import hashlib
import math
import time
from typing import Any

from django import forms
from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.http import HttpRequest

from workspaces.caches import cache

THROTTLED = "throttled"


def _keys(username: str, address: str) -> list[tuple[str, int]]:
    account = hashlib.sha256(username.strip().casefold().encode()).hexdigest()[:32]
    return [
        (f"account:{account}", settings.LOGIN_FAILURES_PER_ACCOUNT),
        (f"address:{address}", settings.LOGIN_FAILURES_PER_ADDRESS),
    ]


def _lockout_seconds() -> int:
    return max(int(settings.LOGIN_LOCKOUT.total_seconds()), 1)


def login_lockout(username: str, address: str) -> int | None:
    """Seconds until a sign-in for `username` from `address` is allowed again, or None."""
    now = time.time()
    until = [cache.get(f"unforgetter:login-lock:{key}") for key, _ in _keys(username, address)]
    remaining = [u - now for u in until if u is not None and u > now]
    return math.ceil(max(remaining)) if remaining else None


def login_failed(username: str, address: str) -> None:
    """Count a failed sign-in; lock the account or the address that reached its limit."""
    lockout = _lockout_seconds()
    for key, limit in _keys(username, address):
        counter = f"unforgetter:login-failures:{key}"
        cache.add(counter, 0, timeout=lockout)
        try:
            failures = cache.incr(counter)
        except ValueError:  # expired between add() and incr()
            cache.set(counter, 1, timeout=lockout)
            failures = 1
        if failures >= limit:
            cache.set(f"unforgetter:login-lock:{key}", time.time() + lockout, timeout=lockout)
            cache.delete(counter)


def login_succeeded(username: str, address: str) -> None:
    key, _ = _keys(username, address)[0]
    cache.delete(f"unforgetter:login-failures:{key}")


def lockout_message(seconds: int) -> str:
    minutes = max(math.ceil(seconds / 60), 1)
    return (
        "Too many failed sign-ins for this account or from this address. Sign-in is locked; "
        f"try again in {minutes} minute{'s' if minutes != 1 else ''}."
    )


class ThrottledLogin(forms.Form):
    """The sign-in throttle, mixed into Django's authentication forms (console and admin)."""

    request: HttpRequest | None
    retry_after: int | None = None

    def clean(self) -> dict[str, Any]:
        username = str(self.data.get("username") or "")
        address = str(self.request.META.get("REMOTE_ADDR") or "unknown") if self.request else "unknown"
        wait = login_lockout(username, address)
        if wait is not None:
            self.retry_after = wait
            raise forms.ValidationError(lockout_message(wait), code=THROTTLED)
        try:
            cleaned: dict[str, Any] = super().clean() or {}
        except forms.ValidationError:
            if username:
                login_failed(username, address)
            raise
        login_succeeded(username, address)
        return cleaned


class ThrottledAuthenticationForm(ThrottledLogin, AuthenticationForm):
    pass


class ThrottledAdminAuthenticationForm(ThrottledLogin, AdminAuthenticationForm):
    pass

"""Sign-in throttling on the console and the admin: per account, per address, with an expiry."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client, override_settings

from tests.conftest import Tenant

pytestmark = pytest.mark.django_db

PASSWORD = "correct-horse-battery"
LOGIN = "/console/login/"


def sign_in(client: Client, username: str, password: str, address: str = "203.0.113.7") -> Any:
    return client.post(LOGIN, {"username": username, "password": password}, REMOTE_ADDR=address)


def signed_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


def test_ten_wrong_passwords_lock_the_account_even_for_the_right_one(tenant: Tenant) -> None:
    owner = tenant.owner.username
    client = Client()
    for _ in range(10):
        wrong = sign_in(client, owner, "guess")
        assert wrong.status_code == 200  # the ordinary "wrong password" page
    locked = sign_in(client, owner, PASSWORD)
    assert locked.status_code == 429
    assert 1 <= int(locked["Retry-After"]) <= 15 * 60
    assert "Too many failed sign-ins" in locked.content.decode()
    assert "try again in 15 minutes" in locked.content.decode()
    assert not signed_in(client)
    # The lock is the account's: the right password from another address is refused too.
    assert sign_in(Client(), owner, PASSWORD, address="198.51.100.20").status_code == 429


def test_the_lockout_expires_by_itself(tenant: Tenant) -> None:
    owner = tenant.owner.username
    client = Client()
    with override_settings(LOGIN_FAILURES_PER_ACCOUNT=3, LOGIN_LOCKOUT=timedelta(seconds=1)):
        for _ in range(3):
            sign_in(client, owner, "guess")
        assert sign_in(client, owner, PASSWORD).status_code == 429
        time.sleep(1.2)
        assert sign_in(client, owner, PASSWORD).status_code == 302
    assert signed_in(client)


def test_one_address_guessing_many_accounts_is_locked_out(tenant: Tenant) -> None:
    victims = [User.objects.create_user(f"user{i}", password=PASSWORD) for i in range(4)]
    with override_settings(LOGIN_FAILURES_PER_ADDRESS=3):
        for victim in victims[:3]:
            sign_in(Client(), victim.username, "guess")
        refused = sign_in(Client(), victims[3].username, PASSWORD)
        assert refused.status_code == 429
        elsewhere = Client()
        assert sign_in(elsewhere, victims[3].username, PASSWORD, address="198.51.100.20").status_code == 302
        assert signed_in(elsewhere)


def test_a_successful_sign_in_clears_the_accounts_failures(tenant: Tenant) -> None:
    owner = tenant.owner.username
    with override_settings(LOGIN_FAILURES_PER_ACCOUNT=3):
        for _ in range(2):
            sign_in(Client(), owner, "guess")
        assert sign_in(Client(), owner, PASSWORD).status_code == 302
        for _ in range(2):
            sign_in(Client(), owner, "guess")
        assert sign_in(Client(), owner, PASSWORD).status_code == 302


def test_the_admin_sign_in_is_throttled_the_same_way() -> None:
    User.objects.create_superuser("root", "root@example.com", PASSWORD)
    client = Client()
    with override_settings(LOGIN_FAILURES_PER_ACCOUNT=3):
        for _ in range(3):
            client.post("/admin/login/", {"username": "root", "password": "guess"}, REMOTE_ADDR="203.0.113.9")
        locked = client.post(
            "/admin/login/", {"username": "root", "password": PASSWORD}, REMOTE_ADDR="203.0.113.9"
        )
    assert "Too many failed sign-ins" in locked.content.decode()
    assert not signed_in(client)

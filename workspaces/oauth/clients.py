"""Registration hygiene: open registration throttled per address, never-consented clients pruned."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db.models import Exists, OuterRef
from django.utils import timezone
from oauth2_provider.models import (
    get_application_model,
    get_grant_model,
    get_refresh_token_model,
)

from workspaces.models import Connection
from workspaces.throttle import window_hit


def registration_throttle_hit(address: str) -> int | None:
    """Count one registration from `address`; the seconds to wait when over the limit, else None.

    A fixed window in the Django cache (shared by every process when CACHE_URL is Redis): at most
    OAUTH_REGISTRATIONS_PER_WINDOW registrations per address per window.
    """
    return window_hit(
        f"oauth-dcr:{address}",
        limit=settings.OAUTH_REGISTRATIONS_PER_WINDOW,
        window_seconds=int(settings.OAUTH_REGISTRATION_WINDOW.total_seconds()),
    )


def oauth_clients_prune(*, older_than: timedelta | None = None) -> int:
    """Delete self-registered clients (DCR or client-ID metadata) never consented to.

    A client is stale when it registered more than `older_than` ago (default
    OAUTH_CLIENT_PRUNE_AFTER) and has no Connection, no grant and no refresh token: nobody ever
    approved it. Its registration access token goes with it. Returns how many were deleted.
    """
    Application = get_application_model()
    cutoff = timezone.now() - (older_than if older_than is not None else settings.OAUTH_CLIENT_PRUNE_AFTER)
    stale = (
        Application.objects.filter(
            registration_source__in=[Application.RegistrationSource.DCR, Application.RegistrationSource.CIMD],
            created__lt=cutoff,
        )
        .exclude(Exists(Connection.objects.filter(oauth_application=OuterRef("pk"))))
        .exclude(Exists(get_grant_model().objects.filter(application=OuterRef("pk"))))
        .exclude(Exists(get_refresh_token_model().objects.filter(application=OuterRef("pk"))))
    )
    _, per_model = Application.objects.filter(pk__in=list(stale.values_list("pk", flat=True))).delete()
    deleted: int = per_model.get(Application._meta.label, 0)
    return deleted

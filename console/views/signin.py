"""The console's sign-in page: Django's LoginView behind the sign-in throttle (workspaces.login)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import views as auth_views
from django.http import HttpResponse

from workspaces.login import ThrottledAuthenticationForm


class SignInView(auth_views.LoginView):
    """A locked account or address is answered 429 with Retry-After and the lockout message."""

    form_class = ThrottledAuthenticationForm
    template_name = "registration/login.html"
    redirect_authenticated_user = True

    def form_invalid(self, form: Any) -> HttpResponse:
        response = super().form_invalid(form)
        if isinstance(form, ThrottledAuthenticationForm) and form.retry_after is not None:
            response.status_code = 429
            response["Retry-After"] = str(form.retry_after)
        return response

"""The owner console under /console/."""

from django.contrib.auth import views as auth_views
from django.urls import path

from console import views

app_name = "console"

urlpatterns = [
    path(
        "login/",
        views.with_csp(
            auth_views.LoginView.as_view(
                template_name="registration/login.html", redirect_authenticated_user=True
            )
        ),
        name="login",
    ),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", views.home, name="home"),
    path("w/<slug:slug>/", views.overview, name="overview"),
    path("w/<slug:slug>/review/", views.review_queue, name="queue"),
    path("w/<slug:slug>/review/bulk/", views.review_bulk, name="bulk"),
    path("w/<slug:slug>/review/<int:seq>/", views.proposal_detail, name="proposal"),
    path("w/<slug:slug>/review/<int:seq>/approve/", views.proposal_approve_view, name="approve"),
    path("w/<slug:slug>/review/<int:seq>/reject/", views.proposal_reject_view, name="reject"),
    path("w/<slug:slug>/connections/", views.connections, name="connections"),
    path("w/<slug:slug>/connections/new/", views.connection_issue, name="issue"),
    path("w/<slug:slug>/connections/<int:pk>/", views.connection_detail, name="connection"),
    path("w/<slug:slug>/connections/<int:pk>/revoke/", views.connection_revoke_view, name="revoke"),
    path("w/<slug:slug>/connections/<int:pk>/verify/", views.connection_verify, name="verify"),
    path("w/<slug:slug>/zones/", views.zones, name="zones"),
    path("w/<slug:slug>/zones/<int:pk>/", views.zone_edit, name="zone_edit"),
    path("w/<slug:slug>/memory/", views.memory, name="memory"),
    path("w/<slug:slug>/memory/new/", views.memory_new, name="memory_new"),
    path("w/<slug:slug>/memory/<str:ref>/", views.memory_item, name="item"),
    path("w/<slug:slug>/memory/<str:ref>/edit/", views.memory_edit, name="memory_edit"),
    path("w/<slug:slug>/audit/", views.audit, name="audit"),
]

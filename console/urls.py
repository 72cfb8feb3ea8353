"""The owner console under /console/."""

from django.contrib.auth import views as auth_views
from django.urls import path

from console.access import with_csp
from console.views import connections, docs, memory, overview, review, signin, workspace

app_name = "console"

urlpatterns = [
    path("login/", with_csp(signin.SignInView.as_view()), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", overview.home, name="home"),
    path("docs/mcp/", docs.quickstart, name="quickstart"),
    path("w/<slug:slug>/", overview.overview, name="overview"),
    path("w/<slug:slug>/review/", review.review_queue, name="queue"),
    path("w/<slug:slug>/review/bulk/", review.review_bulk, name="bulk"),
    path("w/<slug:slug>/review/<int:seq>/", review.proposal_detail, name="proposal"),
    path("w/<slug:slug>/review/<int:seq>/approve/", review.proposal_approve_view, name="approve"),
    path("w/<slug:slug>/review/<int:seq>/reject/", review.proposal_reject_view, name="reject"),
    path("w/<slug:slug>/connections/", connections.connections, name="connections"),
    path("w/<slug:slug>/connections/new/", connections.connection_issue, name="issue"),
    path("w/<slug:slug>/connections/<int:pk>/", connections.connection_detail, name="connection"),
    path("w/<slug:slug>/connections/<int:pk>/revoke/", connections.connection_revoke_view, name="revoke"),
    path("w/<slug:slug>/connections/<int:pk>/verify/", connections.connection_verify, name="verify"),
    path("receipts/<int:pk>/", workspace.receipt, name="receipt"),
    path("w/<slug:slug>/workspace/", workspace.settings_page, name="workspace"),
    path("w/<slug:slug>/workspace/export/", workspace.export_download, name="export"),
    path("w/<slug:slug>/workspace/delete/", workspace.delete, name="delete"),
    path("w/<slug:slug>/zones/", connections.zones, name="zones"),
    path("w/<slug:slug>/zones/new/", connections.zone_new, name="zone_new"),
    path("w/<slug:slug>/zones/<int:pk>/", connections.zone_edit, name="zone_edit"),
    path("w/<slug:slug>/memory/", memory.memory, name="memory"),
    path("w/<slug:slug>/memory/new/", memory.memory_new, name="memory_new"),
    path("w/<slug:slug>/memory/<str:ref>/", memory.memory_item, name="item"),
    path("w/<slug:slug>/memory/<str:ref>/edit/", memory.memory_edit, name="memory_edit"),
    path("w/<slug:slug>/audit/", overview.audit, name="audit"),
]

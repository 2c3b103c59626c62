"""Personal settings pages of the dashboard, beside /settings/tokens: the peer card and the audit log."""

from django.urls import path

from dashboard.views import settings

urlpatterns = [
    path("peer-card", settings.peer_card, name="dash_peer_card"),
    path("audit", settings.audit_log, name="dash_audit"),
]

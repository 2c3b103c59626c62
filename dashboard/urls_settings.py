"""Personal settings pages of the dashboard, beside /settings/tokens: the peer card and the audit log."""

from django.urls import path

from dashboard import views_review

urlpatterns = [
    path("peer-card", views_review.peer_card, name="dash_peer_card"),
    path("audit", views_review.audit_log, name="dash_audit"),
]

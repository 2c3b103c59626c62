"""`/` (included by dotted path from brain.urls, which imports no app)."""

from django.urls import path

from dashboard.views import landing

urlpatterns = [path("", landing.landing, name="landing")]

from django.contrib import admin
from django.urls import include, path

from brain import views

urlpatterns = [
    path("healthz", views.healthz, name="healthz"),
    path("readyz", views.readyz, name="readyz"),
    path("admin/", admin.site.urls),
    # Apps are included by dotted path: brain imports no app (see tests/brain/test_import_direction.py).
    path("api/v1/", include("projects.api.urls")),
    path("", include("projects.urls")),
]

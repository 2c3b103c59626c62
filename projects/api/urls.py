from django.urls import path

from projects.api import api

urlpatterns = [path("", api.urls)]

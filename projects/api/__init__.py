"""The REST API (django-ninja) under /api/v1: auth, error envelope, pagination and schemas shared by
every app's routes. The API object and its one router table are in `projects.api.urls`."""

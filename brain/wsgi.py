import os

from django.core.wsgi import get_wsgi_application

from brain.access_log import access_logged
from brain.body_guard import body_guard
from brain.lean_wsgi import LeanRoutes

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "brain.settings")
# MCP calls skip the middleware they do not use (brain/lean_wsgi.py); an unread body never becomes the next request.
application = body_guard(LeanRoutes(get_wsgi_application()))
# What `brain serve` runs under granian: the same app writing its own access line (brain/access_log.py). Web
# replicas run `application` under gunicorn, whose access logger writes theirs (brain/gunicorn_log.py).
served_application = access_logged(application)

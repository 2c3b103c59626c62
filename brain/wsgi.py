import os

from django.core.wsgi import get_wsgi_application

from brain.access_log import access_logged
from brain.body_guard import body_guard
from brain.lean_wsgi import LeanRoutes
from brain.request_activity import activity_counted

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "brain.settings")
# MCP calls skip the middleware they do not use (brain/lean_wsgi.py); an unread body never becomes the next request;
# each request is counted, so that the vector batchers run between requests (brain/request_activity.py).
application = activity_counted(body_guard(LeanRoutes(get_wsgi_application())))
# What `brain serve` runs under granian: the same app writing its own access line (brain/access_log.py). Web
# replicas run `application` under gunicorn, whose access logger writes theirs (brain/gunicorn_log.py).
served_application = access_logged(application)

import os

from django.core.wsgi import get_wsgi_application

from brain.access_log import access_logged
from brain.body_guard import body_guard

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "brain.settings")
application = body_guard(get_wsgi_application())  # an unread body never becomes the next request
# What `brain serve` runs under granian: the same app writing its own access line (brain/access_log.py). Web
# replicas run `application` under gunicorn, whose access logger writes theirs (brain/gunicorn_log.py).
served_application = access_logged(application)

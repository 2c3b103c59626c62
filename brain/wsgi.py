import os

from django.core.wsgi import get_wsgi_application

from brain.body_guard import body_guard

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "brain.settings")
application = body_guard(get_wsgi_application())  # an unread body never becomes the next request

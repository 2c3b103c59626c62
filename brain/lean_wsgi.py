"""A shorter way through the WSGI application for views that need little of Django's per-request middleware.

Every request normally passes the whole chain of `settings.MIDDLEWARE` and the URL resolver. An MCP call uses
neither the cookie session, the CSRF check, the logged-in user nor messages (a bearer token authenticates it, it
is exempt from CSRF, sets no cookie and answers JSON), yet that chain and the resolver were an eighth of the CPU a
`brain_list_projects` or `brain_log_event` call cost the web worker (docs/benchmarks.md, issue 17, fifteenth pass).

A view marked `@lean` is answered through a chain of only the middleware in `settings.MIDDLEWARE` that applies
to every answer (`SecurityMiddleware`: the HTTPS redirect and its headers; `CommonMiddleware`: the Host check
against ALLOWED_HOSTS, refused user agents, PREPEND_WWW; `XFrameOptionsMiddleware`; the page policy), built the
way Django builds its own (each layer's exceptions turned into Django's error answers), and without the URL
resolver. The request signals and the `django.request` log of 4xx/5xx answers are Django's. Every other request
goes through Django's handler unchanged. `tests/brain/test_lean_wsgi.py` holds both ways to the same answers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import Any, TypeVar

from django.conf import settings
from django.core import signals
from django.core.handlers.exception import convert_exception_to_response
from django.core.handlers.wsgi import WSGIHandler, WSGIRequest, get_path_info, get_script_name
from django.core.signals import setting_changed
from django.http import HttpRequest
from django.urls import Resolver404, resolve, set_script_prefix, set_urlconf
from django.utils.log import log_response
from django.utils.module_loading import import_string

from brain.body_guard import StartResponse

Handler = Callable[[HttpRequest], Any]
V = TypeVar("V", bound=Callable[..., Any])
LEAN = "brain_lean_view"


def lean(view: V) -> V:
    """Marks a view that needs no cookie session, user, CSRF check or messages: it authenticates the request
    itself, answers every error in its own format and sets no cookie."""
    setattr(view, LEAN, True)
    return view


# The middleware whose request or response side applies to any answer, lean or not (the rest serve cookie
# sessions, CSRF, logged-in users and messages). The page policy stays: it costs a nonce, and any HTML page Django
# renders itself for an error keeps its policy.
APPLIES_TO_EVERY_ANSWER = ("django.middleware.security.SecurityMiddleware", "brain.csp.ContentSecurityPolicyMiddleware",
                           "django.middleware.common.CommonMiddleware",
                           "django.middleware.clickjacking.XFrameOptionsMiddleware")


@lru_cache(maxsize=256)
def lean_handler(path_info: str) -> Handler | None:
    """The middleware chain around the lean view that answers `path_info` (a route without arguments), or None."""
    try:
        match = resolve(path_info)
    except Resolver404:
        return None
    if match.args or match.kwargs or not getattr(match.func, LEAN, False):
        return None
    handler = convert_exception_to_response(match.func)
    for dotted in reversed([name for name in settings.MIDDLEWARE if name in APPLIES_TO_EVERY_ANSWER]):
        handler = convert_exception_to_response(import_string(dotted)(handler))
    return handler


def _forget_chains(**kwargs: Any) -> None:
    """A changed setting (tests only) may change a route or what a middleware read when it was built."""
    lean_handler.cache_clear()


setting_changed.connect(_forget_chains)


class LeanRoutes:
    """WSGI application: lean views through their short chain (see the module), the rest through `django_app`."""

    def __init__(self, django_app: WSGIHandler) -> None:
        self.django_app = django_app

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        handler = lean_handler(get_path_info(environ))
        if handler is None:
            return self.django_app(environ, start_response)  # type: ignore[no-any-return]
        # What Django's WSGIHandler and BaseHandler.get_response do around their chain.
        set_script_prefix(get_script_name(environ))
        set_urlconf(settings.ROOT_URLCONF)
        signals.request_started.send(sender=WSGIHandler, environ=environ)
        request = WSGIRequest(environ)
        response: Any = handler(request)  # an HttpResponse: Django's stubs do not know `_resource_closers`
        response._handler_class = WSGIHandler  # close() sends request_finished
        response._resource_closers.append(request.close)
        if response.status_code >= 400:
            log_response("%s: %s", response.reason_phrase, request.path, response=response, request=request)
        cookies = [("Set-Cookie", cookie.output(header="")) for cookie in response.cookies.values()]
        start_response(f"{response.status_code} {response.reason_phrase}", [*response.items(), *cookies])
        return response

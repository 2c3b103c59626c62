"""The process's count of requests in flight, which the vector batchers wait on to run between requests."""

from __future__ import annotations

import io
from typing import Any
from wsgiref.util import setup_testing_defaults

import pytest

from brain import request_activity
from brain.request_activity import RequestActivity, activity_counted


def test_quiet_only_with_no_request_running_and_none_ended_within_the_pause() -> None:
    activity = RequestActivity()
    assert activity.quiet_for(3600)  # a process that never served a request
    activity.begin()
    activity.begin()
    assert not activity.quiet_for(0)
    activity.end()
    assert not activity.quiet_for(0)  # the other one still runs
    activity.end()
    assert activity.quiet_for(0)
    assert not activity.quiet_for(3600)  # one ended just now


def _environ(path: str) -> dict[str, Any]:
    environ: dict[str, Any] = {"PATH_INFO": path, "wsgi.input": io.BytesIO()}
    setup_testing_defaults(environ)
    return environ


@pytest.fixture
def activity(monkeypatch: pytest.MonkeyPatch) -> RequestActivity:
    """A fresh count in place of the process's, so that requests of earlier tests do not show."""
    fresh = RequestActivity()
    monkeypatch.setattr(request_activity, "REQUESTS", fresh)
    return fresh


def test_a_counted_app_is_busy_while_it_answers_and_after_it_fails(activity: RequestActivity) -> None:
    seen = []

    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        seen.append(activity.quiet_for(0))
        if environ["PATH_INFO"] == "/fails":
            raise RuntimeError("the view broke")
        start_response("200 OK", [])
        return [b"ok"]

    counted = activity_counted(app)
    assert counted(_environ("/"), lambda *args: None) == [b"ok"]
    with pytest.raises(RuntimeError):
        counted(_environ("/fails"), lambda *args: None)
    assert seen == [False, False]
    assert activity.quiet_for(0)  # both ended, the failed one too
    assert not activity.quiet_for(3600)


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["application", "served_application"])
def test_the_web_servers_applications_count_their_requests(name: str, activity: RequestActivity) -> None:
    import brain.wsgi

    statuses: list[str] = []
    body = b"".join(getattr(brain.wsgi, name)(_environ("/healthz"), lambda status, *rest: statuses.append(status)))
    assert statuses == ["200 OK"] and body
    assert activity.quiet_for(0) and not activity.quiet_for(3600)  # one request ran and ended just now

"""Durations as people read them, for every interface that prints one (the dashboard, `brain doctor`)."""

from __future__ import annotations

from datetime import timedelta


def human_duration(value: timedelta | None) -> str:
    """14 s, 5 min, 1 h 20 min; a dash when unknown."""
    if value is None:
        return "\u2013"
    seconds = int(value.total_seconds())
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min"
    return f"{seconds // 3600} h {seconds % 3600 // 60} min"

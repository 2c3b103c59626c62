"""SVG charts and display helpers: labelled for screen readers, text escaped, values drawn to scale."""

from __future__ import annotations

from datetime import date, timedelta

from brain.durations import human_duration
from dashboard import charts

AXIS = charts.day_axis(3, date(2026, 11, 30))


def test_bar_chart_scales_to_the_peak_and_describes_itself() -> None:
    svg = charts.bar_chart(title="Sessions per day", axis=AXIS, values=[0, 2, 4])
    assert svg.startswith("<svg") and 'role="img"' in svg
    assert 'aria-label="Sessions per day: total 6 over 3 days, peak 4"' in svg
    assert svg.count("<rect") == 2  # an empty day draws no bar
    heights = [float(part.split('"')[0]) for part in svg.split('height="')[1:]]
    assert heights[1] == 2 * heights[0]


def test_labels_are_escaped() -> None:
    svg = charts.funnel_chart(title="<b>x</b>", steps=[("<script>alert(1)</script>", 3)])
    assert "<script>" not in svg and "&lt;script&gt;" in svg and "<b>" not in svg


def test_line_chart_skips_missing_days() -> None:
    svg = charts.line_chart(title="Rate", axis=AXIS, top=100, series=[charts.Series("rate", [None, 50.0, 100.0])])
    assert svg.count("<circle") == 2 and "rate latest 100" in svg and "No data" not in svg
    empty = charts.line_chart(title="Rate", axis=AXIS, series=[charts.Series("rate", [None, None, None])])
    assert "No data in this period" in empty and "<circle" not in empty


def test_human_duration() -> None:
    assert [human_duration(timedelta(seconds=s)) for s in (14, 300, 4800)] == ["14 s", "5 min", "1 h 20 min"]
    assert human_duration(None) == "\u2013"

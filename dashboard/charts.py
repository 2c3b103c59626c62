"""Server-rendered SVG charts: no script, readable without colour (values are labelled), print well.

Each function returns markup built from numbers and escaped labels only, safe to mark as safe."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from html import escape

from django.utils.safestring import SafeString, mark_safe

WIDTH, HEIGHT, PAD_L, PAD_B, PAD_T = 480, 200, 36, 24, 14
ACCENT, SECOND, GRID = "#2459c9", "#1f7a3a", "#d9dee5"


@dataclass(frozen=True)
class Series:
    label: str
    values: Sequence[float | None]
    color: str = ACCENT


def day_axis(days: int, today: date) -> list[date]:
    return [today - timedelta(days=days - 1 - i) for i in range(days)]


def fill_days(axis: Sequence[date], points: dict[date, float]) -> list[float]:
    return [float(points.get(d, 0)) for d in axis]


def _frame(title: str, desc: str, body: str) -> SafeString:
    svg = (f'<svg viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escape(desc)}" class="chart" '
           f'preserveAspectRatio="xMidYMid meet"><title>{escape(title)}</title>{body}</svg>')
    return mark_safe(svg)  # noqa: S308 - built from numbers and escape()d text only


def _grid(top: float) -> str:
    lines = []
    for frac in (0.0, 0.5, 1.0):
        y = HEIGHT - PAD_B - frac * (HEIGHT - PAD_B - PAD_T)
        lines.append(f'<line x1="{PAD_L}" x2="{WIDTH}" y1="{y:.1f}" y2="{y:.1f}" stroke="{GRID}"/>'
                     f'<text x="{PAD_L - 4}" y="{y + 4:.1f}" font-size="12" text-anchor="end">'
                     f'{_fmt(top * frac)}</text>')
    return "".join(lines)


def _fmt(value: float) -> str:
    return f"{value:.0f}" if value >= 10 or value == int(value) else f"{value:.1f}"


def _x(i: int, n: int) -> float:
    return PAD_L + (WIDTH - PAD_L - 8) * (i + 0.5) / max(n, 1)


def _y(value: float, top: float) -> float:
    return HEIGHT - PAD_B - (value / top) * (HEIGHT - PAD_B - PAD_T) if top else HEIGHT - PAD_B


def _labels(axis: Sequence[date]) -> str:
    step = max(len(axis) // 4, 1)
    return "".join(
        f'<text x="{_x(i, len(axis)):.1f}" y="{HEIGHT - 6}" font-size="12" text-anchor="middle">'
        f'{d.strftime("%d %b")}</text>'
        for i, d in enumerate(axis) if i % step == 0
    )


def bar_chart(*, title: str, axis: Sequence[date], values: Sequence[float], unit: str = "") -> SafeString:
    top = max([*values, 1.0])
    width = max((WIDTH - PAD_L - 8) / max(len(values), 1) - 2, 1)
    bars = "".join(
        f'<rect x="{_x(i, len(values)) - width / 2:.1f}" y="{_y(v, top):.1f}" width="{width:.1f}" '
        f'height="{HEIGHT - PAD_B - _y(v, top):.1f}" fill="{ACCENT}"><title>{axis[i]}: {_fmt(v)}{unit}</title></rect>'
        for i, v in enumerate(values) if v
    )
    desc = f"{title}: total {_fmt(sum(values))}{unit} over {len(values)} days, peak {_fmt(max([*values, 0]))}"
    return _frame(title, desc, _grid(top) + bars + _labels(axis))


def line_chart(*, title: str, axis: Sequence[date], series: Sequence[Series], top: float | None = None,
               unit: str = "") -> SafeString:
    values = [v for s in series for v in s.values if v is not None]
    top = top or max([*values, 1.0])
    body = _grid(top) + _labels(axis)
    for s in series:
        points = [(_x(i, len(axis)), _y(v, top)) for i, v in enumerate(s.values) if v is not None]
        if points:
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
            body += f'<polyline points="{path}" fill="none" stroke="{s.color}" stroke-width="2"/>'
            body += "".join(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5" fill="{s.color}"/>' for x, y in points)
    legend = "".join(
        f'<text x="{PAD_L + 6 + 140 * i}" y="{PAD_T + 2}" font-size="13" fill="{s.color}">■ {escape(s.label)}</text>'
        for i, s in enumerate(series)
    )
    if not values:
        body += (f'<text x="{WIDTH / 2}" y="{HEIGHT / 2}" font-size="14" text-anchor="middle" fill="#5b6675">'
                 'No data in this period</text>')
    last = "; ".join(f"{s.label} latest {_fmt(_last(s.values))}{unit}" for s in series)
    return _frame(title, f"{title}: {last}", body + legend)


def _last(values: Sequence[float | None]) -> float:
    return next((v for v in reversed(values) if v is not None), 0.0)


def funnel_chart(*, title: str, steps: Sequence[tuple[str, int]]) -> SafeString:
    top = max([n for _, n in steps] + [1])
    row = (HEIGHT - 8) / max(len(steps), 1)
    body = ""
    for i, (label, n) in enumerate(steps):
        y, w = 4 + i * row, (WIDTH - 170) * n / top
        body += (f'<text x="4" y="{y + row / 2 + 4:.1f}" font-size="13">{escape(label)}</text>'
                 f'<rect x="130" y="{y + 3:.1f}" width="{max(w, 1):.1f}" height="{row - 6:.1f}" fill="{SECOND}"/>'
                 f'<text x="{136 + w:.1f}" y="{y + row / 2 + 4:.1f}" font-size="13">{n}</text>')
    desc = ", ".join(f"{label} {n}" for label, n in steps)
    return _frame(title, f"{title}: {desc}", body)

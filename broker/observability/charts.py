"""Line charts drawn on the server as inline SVG: no CDN, no build step, readable without
JavaScript. Each series is a ``<polyline>`` whose ``data-series``, ``data-last`` and
``data-points`` ("ms:value,...") carry the numbers drawn (what a test reads, and a person can
copy), with the last value in the legend and each point's value on hover (``<title>``)."""
from __future__ import annotations

from .markup import e, ms

PALETTE = ("#1f6feb", "#d1242f", "#1a7f37", "#9a6700", "#8250df", "#bf3989", "#0a7f8a", "#57606a")


def _num(v: float) -> str:
    if v >= 1e6:
        return f"{v / 1e6:.1f}M"
    if v >= 1e4:
        return f"{v / 1e3:.0f}k"
    return f"{v:.0f}" if v == int(v) or v >= 100 else f"{v:.1f}"


def line_chart(chart_id: str, title: str, series: dict[str, list[tuple[int, float]]],
               width: int = 560, height: int = 150) -> str:
    """One chart; ``series``: name -> [(time in ms, value)], oldest first."""
    pad_l, pad_r, pad_t, pad_b = 48, 12, 20, 22
    points = [p for pts in series.values() for p in pts]
    if not points:
        return (f'<figure class="chart" id="{e(chart_id)}"><figcaption>{e(title)}</figcaption>'
                f'<p class="muted">No samples yet (one every few seconds).</p></figure>')
    t0, t1 = min(p[0] for p in points), max(p[0] for p in points)
    top = max(max(p[1] for p in points), 1.0)
    span_t = max(t1 - t0, 1)
    plot_w, plot_h = width - pad_l - pad_r, height - pad_t - pad_b

    def x(t: int) -> float:
        return pad_l + (t - t0) / span_t * plot_w

    def y(v: float) -> float:
        return pad_t + plot_h - v / top * plot_h

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" aria-label="{e(title)}">',
             f'<rect x="{pad_l}" y="{pad_t}" width="{plot_w}" height="{plot_h}" fill="#fff" stroke="#dde1e8"/>']
    for frac in (0.5, 1.0):
        gy = y(top * frac)
        parts.append(f'<line x1="{pad_l}" x2="{pad_l + plot_w}" y1="{gy:.1f}" y2="{gy:.1f}" stroke="#eef0f4"/>'
                     f'<text x="{pad_l - 4}" y="{gy + 4:.1f}" text-anchor="end" font-size="10" fill="#778">'
                     f'{_num(top * frac)}</text>')
    parts.append(f'<text x="{pad_l - 4}" y="{pad_t + plot_h + 4}" text-anchor="end" font-size="10" fill="#778">0</text>')
    parts.append(f'<text x="{pad_l}" y="{height - 6}" font-size="10" fill="#778">{e(ms(t0)[11:19])}</text>'
                 f'<text x="{pad_l + plot_w}" y="{height - 6}" text-anchor="end" font-size="10" fill="#778">'
                 f'{e(ms(t1)[11:19])} UTC</text>')
    legend = []
    for i, (name, pts) in enumerate(series.items()):
        if not pts:
            continue
        color = PALETTE[i % len(PALETTE)]
        coords = " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in pts)
        data = ",".join(f"{t}:{v:g}" for t, v in pts)
        width_px = 2.5 if i == 0 else 1.5
        parts.append(f'<polyline class="series" data-series="{e(name)}" data-last="{pts[-1][1]:g}" '
                     f'data-points="{data}" points="{coords}" fill="none" stroke="{color}" stroke-width="{width_px}">'
                     f'<title>{e(name)}: last {pts[-1][1]:g}</title></polyline>')
        lt, lv = pts[-1]
        parts.append(f'<circle cx="{x(lt):.1f}" cy="{y(lv):.1f}" r="2.5" fill="{color}">'
                     f'<title>{e(name)} {e(ms(lt))} UTC: {lv:g}</title></circle>')
        legend.append(f'<span class="key"><i style="background:{color}"></i>{e(name)} '
                      f'<b data-series="{e(name)}">{_num(lv)}</b></span>')
    parts.append("</svg>")
    return (f'<figure class="chart" id="{e(chart_id)}"><figcaption>{e(title)}</figcaption>{"".join(parts)}'
            f'<div class="legend">{"".join(legend)}</div></figure>')


STYLE = """
figure.chart{display:inline-block;margin:12px 16px 12px 0;vertical-align:top}
figure.chart figcaption{font-size:12px;font-weight:bold;margin-bottom:2px}
.legend{font-size:11px;max-width:560px}.legend .key{margin-right:10px;white-space:nowrap}
.legend i{display:inline-block;width:10px;height:3px;margin-right:3px;vertical-align:middle}
"""

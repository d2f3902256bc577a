"""A group's rebalance timeline drawn as a timeline (inline SVG, readable without JavaScript):
one lane per member, one span per generation the member belonged to — from the rebalance that
made the generation (shaded while it ran, start to completion) to the next rebalance's start —
and marks where members joined, left or expired, with the reason on hover. A detail table below
names the partitions each member held in each generation; the console's table of rebalances
stays below that.

Read off it: a rebalance storm is many short spans stacked in every lane, a member that keeps
expiring is a lane of red crosses, a slow join is a wide shaded band.
"""
from __future__ import annotations

from broker.coordinator_runtime.group_timeline import Rebalance

from .markup import e, ms, table, td

LANE_H, LABEL_W, WIDTH, PAD_T, PAD_B = 26, 190, 980, 8, 22
JOIN, LEAVE, EXPIRE = "#1a7f37", "#9a6700", "#d1242f"


def _kind(reason: str) -> str:
    return "expire" if "expire" in reason.lower() else "leave"


def timeline_svg(timeline: list[Rebalance], now_ms: int) -> str:
    """The timeline (oldest rebalance first) up to ``now_ms``."""
    if not timeline:
        return ""
    members: dict[str, str] = {}     # member id -> label (client id), in order of first appearance
    for r in timeline:
        for c in r.joined:
            members.setdefault(c.member_id, c.client_id or c.member_id)
        for m in r.assignment:
            members.setdefault(m, m)
        for c in r.left:
            members.setdefault(c.member_id, c.client_id or c.member_id)
    lanes = {m: i for i, m in enumerate(members)}
    t0 = timeline[0].started_ms
    t1 = max(now_ms, max((r.completed_ms or r.started_ms) for r in timeline))
    span = max(t1 - t0, 1)
    plot_w = WIDTH - LABEL_W - 10
    height = PAD_T + LANE_H * max(len(lanes), 1) + PAD_B

    def x(t: int) -> float:
        return LABEL_W + (t - t0) / span * plot_w

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="timeline" width="{WIDTH}" height="{height}" '
           f'viewBox="0 0 {WIDTH} {height}" role="img" aria-label="rebalance timeline">']
    for m, i in lanes.items():
        y = PAD_T + i * LANE_H
        out.append(f'<g class="lane" data-member="{e(m)}"><rect x="{LABEL_W}" y="{y}" width="{plot_w}" '
                   f'height="{LANE_H - 4}" fill="{"#fff" if i % 2 == 0 else "#f6f7f9"}"/>'
                   f'<text x="{LABEL_W - 6}" y="{y + 15}" text-anchor="end" font-size="11">{e(members[m][:28])}'
                   f'<title>{e(m)}</title></text></g>')
    for n, r in enumerate(timeline):
        end = r.completed_ms if r.completed_ms is not None else now_ms
        # the rebalance itself, across every lane
        out.append(f'<rect class="rebalance" x="{x(r.started_ms):.1f}" y="{PAD_T}" '
                   f'width="{max(x(end) - x(r.started_ms), 1.5):.1f}" height="{LANE_H * len(lanes) - 4}" '
                   f'fill="#d0d7de" opacity="0.6"><title>rebalance to generation {r.generation if r.generation is not None else "(in progress)"}: '
                   f'{e("; ".join(r.reasons))} ({r.duration_ms if r.duration_ms is not None else "…"} ms)</title></rect>')
        if r.generation is not None:
            nxt = timeline[n + 1].started_ms if n + 1 < len(timeline) else now_ms
            for m, count in r.assignment.items():
                y = PAD_T + lanes[m] * LANE_H + 3
                held = ", ".join(r.held.get(m, [])) or f"{count} partitions"
                out.append(f'<rect class="span" data-member="{e(m)}" data-generation="{r.generation}" '
                           f'data-partitions="{e(",".join(r.held.get(m, [])))}" x="{x(r.started_ms):.1f}" y="{y}" '
                           f'width="{max(x(nxt) - x(r.started_ms), 3):.1f}" height="{LANE_H - 10}" rx="3" '
                           f'fill="{"#1f6feb" if r.generation % 2 else "#54aeff"}" opacity="0.85">'
                           f'<title>generation {r.generation}, {e(members[m])}: {e(held)}</title></rect>')
                if x(nxt) - x(r.started_ms) > 30:
                    out.append(f'<text x="{x(r.started_ms) + 4:.1f}" y="{y + 12}" font-size="10" fill="#fff" '
                               f'pointer-events="none">g{r.generation}</text>')
        for c in r.joined:
            y = PAD_T + lanes[c.member_id] * LANE_H + LANE_H // 2 - 2
            cx = x(r.started_ms)
            out.append(f'<path class="mark join" data-member="{e(c.member_id)}" d="M{cx - 5:.1f},{y - 6:.1f} '
                       f'L{cx + 3:.1f},{y:.1f} L{cx - 5:.1f},{y + 6:.1f} Z" fill="{JOIN}">'
                       f'<title>{e(c.client_id)} joined: {e(c.reason)} ({e(ms(r.started_ms))} UTC)</title></path>')
        for c in r.left:
            kind = _kind(c.reason)
            y = PAD_T + lanes[c.member_id] * LANE_H + LANE_H // 2 - 2
            cx = x(r.started_ms)
            out.append(f'<path class="mark {kind}" data-member="{e(c.member_id)}" d="M{cx - 5:.1f},{y - 5:.1f} '
                       f'L{cx + 5:.1f},{y + 5:.1f} M{cx - 5:.1f},{y + 5:.1f} L{cx + 5:.1f},{y - 5:.1f}" '
                       f'stroke="{EXPIRE if kind == "expire" else LEAVE}" stroke-width="2.5">'
                       f'<title>{e(c.client_id)} {"expired" if kind == "expire" else "left"}: {e(c.reason)} '
                       f'({e(ms(r.started_ms))} UTC)</title></path>')
    out.append(f'<text x="{LABEL_W}" y="{height - 6}" font-size="10" fill="#778">{e(ms(t0))} UTC</text>'
               f'<text x="{WIDTH - 10}" y="{height - 6}" font-size="10" fill="#778" text-anchor="end">'
               f'{e(ms(t1))} UTC</text></svg>')
    legend = (f'<div class="legend"><span class="key"><i style="background:#1f6feb"></i>member of a generation</span>'
              f'<span class="key"><i style="background:#d0d7de"></i>rebalancing</span>'
              f'<span class="key" style="color:{JOIN}">▶ joined</span><span class="key" style="color:{LEAVE}">✕ left</span>'
              f'<span class="key" style="color:{EXPIRE}">✕ expired</span></div>')
    detail = table(["Generation", "Member", "Partitions held"], [
        [td(r.generation, num=True), td(members.get(m, m)), td(", ".join(r.held.get(m, [])) or f"{count} partitions")]
        for r in reversed(timeline) if r.generation is not None for m, count in r.assignment.items()], "held")
    return (f'<div class="timeline-chart" id="timeline-chart">{"".join(out)}{legend}</div>'
            f'<details><summary>Partitions each member held, per generation</summary>{detail}</details>')

"""The figures the benchmark reports, and the side-by-side table (console and Markdown)."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Figure:
    key: str
    label: str
    unit: str
    higher_is_better: bool
    decimals: int = 1
    # Optional target from the issues, on the ratio ("ratio>=") or on Samsa's value ("max").
    target_ratio_min: float | None = None
    target_max: float | None = None

    def target_text(self) -> str:
        if self.target_ratio_min is not None:
            return f"≥ {self.target_ratio_min:g}× tansu"
        if self.target_max is not None:
            return f"< {self.target_max:g} {self.unit}"
        return ""


@dataclass
class Value:
    """A measured number, or None with the reason (skipped, failed, unsupported)."""
    number: float | None
    note: str = ""

    @property
    def ok(self) -> bool:
        return self.number is not None and not math.isnan(self.number)


def fmt(fig: Figure, v: Value | None) -> str:
    if v is None:
        return "–"
    if not v.ok:
        return "n/a"
    return f"{v.number:,.{fig.decimals}f}"


def ratio(fig: Figure, tansu: Value | None, samsa: Value | None) -> float | None:
    if tansu is None or samsa is None or not tansu.ok or not samsa.ok or tansu.number == 0:
        return None
    return samsa.number / tansu.number


def verdict(fig: Figure, r: float | None, samsa: Value | None) -> str:
    """Which broker did better, and whether Samsa meets the issue's target."""
    parts = []
    if r is not None:
        if abs(r - 1) < 0.02:
            parts.append("even")
        else:
            parts.append("samsa better" if (r > 1) == fig.higher_is_better else "tansu better")
    if samsa is not None and samsa.ok:
        if fig.target_ratio_min is not None and r is not None:
            parts.append("target met" if r >= fig.target_ratio_min else "target missed")
        elif fig.target_max is not None:
            parts.append("target met" if samsa.number < fig.target_max else "target missed")
    return ", ".join(parts)


def _fmt_ratio(r: float | None) -> str:
    if r is None:
        return "–"
    return f"{r:.1f}×" if r >= 10 else f"{r:.2f}×" if r >= 0.1 else f"{r:.3f}×"


def rows(figures: list[Figure], results: dict[str, dict[str, Value]]) -> list[list[str]]:
    out = []
    for fig in figures:
        t = results.get("tansu", {}).get(fig.key)
        s = results.get("samsa", {}).get(fig.key)
        if t is None and s is None:
            continue
        r = ratio(fig, t, s)
        out.append([f"{fig.label} ({fig.unit})", fmt(fig, t), fmt(fig, s),
                    _fmt_ratio(r),
                    "higher" if fig.higher_is_better else "lower",
                    fig.target_text(), verdict(fig, r, s)])
    return out


HEADER = ["figure", "tansu", "samsa", "samsa/tansu", "better is", "target (samsa)", "verdict"]


def console_table(figures: list[Figure], results: dict[str, dict[str, Value]]) -> str:
    body = rows(figures, results)
    table = [HEADER] + body
    widths = [max(len(r[i]) for r in table) for i in range(len(HEADER))]
    right = {1, 2, 3}

    def line(r: list[str]) -> str:
        return "  ".join(c.rjust(w) if i in right else c.ljust(w)
                         for i, (c, w) in enumerate(zip(r, widths))).rstrip()

    out = [line(HEADER), "  ".join("-" * w for w in widths)]
    out += [line(r) for r in body]
    return "\n".join(out)


def markdown_table(figures: list[Figure], results: dict[str, dict[str, Value]]) -> str:
    body = rows(figures, results)
    out = ["| " + " | ".join(HEADER) + " |",
           "|" + "|".join(["---", "---:", "---:", "---:", "---", "---", "---"]) + "|"]
    out += ["| " + " | ".join(c or " " for c in r) + " |" for r in body]
    return "\n".join(out)


def notes(figures: list[Figure], results: dict[str, dict[str, Value]]) -> list[str]:
    """Notes per broker: a failure or skip shared by several figures is listed once, naming
    the sections it covers; measured figures keep their own note (runs, partial results)."""
    out = []
    for broker in ("tansu", "samsa"):
        shared: dict[str, list[str]] = {}
        for fig in figures:
            v = results.get(broker, {}).get(fig.key)
            if v is None or not v.note:
                continue
            if v.ok:
                out.append(f"{broker}: {fig.label}: {v.note}")
            else:
                section = fig.key.split("_")[0]
                names = shared.setdefault(v.note, [])
                if section not in names:
                    names.append(section)
        for note, sections in shared.items():
            out.append(f"{broker}: {', '.join(sections)}: {note}")
    return out

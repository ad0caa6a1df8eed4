"""SVG charts with no plotting library: line charts (speedup against workers), grouped and
stacked bars. Each function returns one `<svg>` element as text, valid XML (tests parse it),
with a `<title>` on every mark so hovering shows the number behind it."""
from __future__ import annotations

import math
import zlib
from typing import Sequence
from xml.sax.saxutils import escape

# Colour-blind-safe palette (Okabe-Ito) then a few extras; schedulers keep their colour across
# figures because every chart uses `colour(i)` with the same ordering.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442",
           "#000000", "#999999", "#8C564B", "#7F7F7F", "#BCBD22")
MARKERS = ("circle", "square", "diamond", "triangle")
FONT = 'font-family="DejaVu Sans, Helvetica, Arial, sans-serif"'


def esc(text) -> str:
    return escape(str(text), {'"': "&quot;"})


def colour(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def fmt(v: float) -> str:
    """A short human number: 1.23, 45.6, 1234, 1.2M."""
    a = abs(v)
    if a >= 1e6:
        return f"{v / 1e6:.3g}M"
    if a >= 1e4:
        return f"{v / 1e3:.3g}k"
    if a >= 100:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def svg_open(width: float, height: float, label: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
            f'viewBox="0 0 {width:.0f} {height:.0f}" role="img" aria-label="{esc(label)}" {FONT} '
            f'font-size="12"><title>{esc(label)}</title>'
            f'<rect width="100%" height="100%" fill="#ffffff"/>')


def nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """About `n` round ticks covering [lo, hi]; never a zero-width axis (all-zero or tiny
    costs) and never more than a few dozen ticks (a span tiny next to its values)."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        lo, hi = 0.0, 1.0
    span = hi - lo
    if span <= 0 or span < 1e-300:
        span = 1.0
    elif span < abs(hi) * 1e-9:
        span = abs(hi) * 1e-6
    hi = lo + span
    raw = span / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    k0, k1 = math.floor(lo / step), math.ceil(hi / step - 1e-9)
    digits = max(0, -math.floor(math.log10(step)) + 2)
    ticks = [round(k * step, digits) for k in range(k0, max(k1, k0 + 1) + 1)]
    return ticks if ticks[-1] > ticks[0] else [lo, lo + span]


def _marker(kind: str, x: float, y: float, c: str, tip: str) -> str:
    t = f"<title>{esc(tip)}</title>"
    if kind == "square":
        return f'<rect x="{x - 4:.1f}" y="{y - 4:.1f}" width="8" height="8" fill="{c}">{t}</rect>'
    if kind == "diamond":
        return (f'<polygon points="{x:.1f},{y - 5:.1f} {x + 5:.1f},{y:.1f} {x:.1f},{y + 5:.1f} '
                f'{x - 5:.1f},{y:.1f}" fill="{c}">{t}</polygon>')
    if kind == "triangle":
        return (f'<polygon points="{x:.1f},{y - 5:.1f} {x + 5:.1f},{y + 4:.1f} {x - 5:.1f},'
                f'{y + 4:.1f}" fill="{c}">{t}</polygon>')
    return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4" fill="{c}">{t}</circle>'


def line_chart(series: Sequence[dict], *, title: str, xlabel: str, ylabel: str,
               log2_x: bool = True, width: int = 840, height: int = 380,
               y_from_zero: bool = True, unit: str = "", y_max: float | None = None) -> str:
    """`series`: [{"name", "points": [(x, y), ...], "style": "solid"|"dashed"|"dotted",
    "colour": optional, "unit": optional, "band": optional [(x, low, high), ...] shaded,
    "bounds": optional [(x, y, "≥"|"<"), ...]}]. x on a log2 axis (worker counts) by default.
    A bound is where a search stopped at its limit, not a value: drawn as a hollow arrowhead
    (up for ≥, down for <) at the plot's edge when beyond it, off the line, and left out of
    the y range, so that it neither reads as a measured point nor squashes the real ones."""
    pts = [(x, y) for s in series for x, y in s["points"] if y is not None]
    # a band that is itself an answer (a range, not a calibration band) sets the y range too
    pts += [(x, v) for s in series if s.get("band_in_range")
            for x, lo, hi in s.get("band", ()) for v in (lo, hi) if v is not None]
    pts += [(x, None) for s in series for x, _, _ in s.get("bounds", ())]
    legend_w = 300
    left, right, top, bottom = 62, legend_w + 14, 34, 46
    pw, ph = width - left - right, height - top - bottom
    xs = sorted({x for x, _ in pts}) or [1]
    fx = (lambda v: math.log2(v)) if log2_x else (lambda v: v)
    x0, x1 = fx(min(xs)), fx(max(xs))
    if x1 == x0:
        x1 = x0 + 1
    ys = [y for _, y in pts if y is not None] or [0, 1]
    ylo = 0.0 if y_from_zero else min(ys)
    top_y = max(ys) if y_max is None else min(max(ys), y_max)
    yticks = nice_ticks(ylo, top_y * 1.05 if top_y > 0 else 1)
    y0, y1 = yticks[0], yticks[-1]

    def X(v):
        return left + (fx(v) - x0) / (x1 - x0) * pw

    def Y(v):
        return top + ph - (v - y0) / (y1 - y0) * ph

    out = [svg_open(width, height, title),
           f'<text x="{left}" y="20" font-size="14" font-weight="bold">{esc(title)}</text>']
    for t in yticks:
        out.append(f'<line x1="{left}" x2="{left + pw}" y1="{Y(t):.1f}" y2="{Y(t):.1f}" '
                   f'stroke="#e3e3e3"/><text x="{left - 6}" y="{Y(t) + 4:.1f}" '
                   f'text-anchor="end">{esc(fmt(t))}</text>')
    for v in xs:
        out.append(f'<line x1="{X(v):.1f}" x2="{X(v):.1f}" y1="{top}" y2="{top + ph}" '
                   f'stroke="#f0f0f0"/><text x="{X(v):.1f}" y="{top + ph + 16}" '
                   f'text-anchor="middle">{esc(v)}</text>')
    out.append(f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" '
               f'stroke="#888"/>')
    out.append(f'<text x="{left + pw / 2:.0f}" y="{height - 8}" text-anchor="middle">'
               f'{esc(xlabel)}</text>')
    out.append(f'<text transform="translate(16 {top + ph / 2:.0f}) rotate(-90)" '
               f'text-anchor="middle">{esc(ylabel)}</text>')
    # Lines above the axis (a capped y range) leave the plot through its top edge.
    clip = f"clip{zlib.crc32(f'{title}|{len(series)}|{ylabel}'.encode()):08x}"   # stable ids
    out.append(f'<clipPath id="{clip}"><rect x="{left}" y="{top - 6}" width="{pw}" '
               f'height="{ph + 12}"/></clipPath>')
    dash = {"solid": "", "dashed": ' stroke-dasharray="7 4"', "dotted": ' stroke-dasharray="2 3"'}
    for i, s in enumerate(series):       # uncertainty bands under every line
        band = [(x, lo, hi) for x, lo, hi in s.get("band", ()) if lo is not None and hi is not None]
        if len(band) >= 2:
            c = s.get("colour") or colour(i)
            edge = [f"{X(x):.1f},{Y(min(hi, y1)):.1f}" for x, _, hi in band] + [
                f"{X(x):.1f},{Y(max(lo, y0)):.1f}" for x, lo, _ in reversed(band)]
            label = s.get("band_label", "calibration band")
            out.append(f'<polygon points="{" ".join(edge)}" fill="{c}" fill-opacity="0.13" '
                       f'stroke="none" clip-path="url(#{clip})"><title>{esc(s["name"])}: '
                       f'{esc(label)}</title></polygon>')
        if s.get("band_in_range"):
            # error bars: each x's range, also where a band of one point draws no polygon
            c = s.get("colour") or colour(i)
            for x, lo, hi in band:
                out.append(f'<line x1="{X(x):.1f}" x2="{X(x):.1f}" y1="{Y(hi):.1f}" '
                           f'y2="{Y(lo):.1f}" stroke="{c}" stroke-width="1.2">'
                           + f'<title>{esc(s["name"])}: {esc(xlabel)} {x} -> {fmt(lo)} to '
                             f'{fmt(hi)}{esc(s.get("unit", unit))} '
                             f'({esc(s.get("band_label", "range"))})</title></line>')
                for y in (lo, hi):
                    out.append(f'<line x1="{X(x) - 4:.1f}" x2="{X(x) + 4:.1f}" '
                               f'y1="{Y(y):.1f}" y2="{Y(y):.1f}" stroke="{c}" '
                               f'stroke-width="1.2"/>')
    ly = top + 4
    for i, s in enumerate(series):
        c = s.get("colour") or colour(i)
        style = s.get("style", "solid")
        p = [(x, y) for x, y in s["points"] if y is not None]
        if not p and not s.get("bounds"):
            continue
        for x, y, sign in s.get("bounds", ()):
            at = min(max(y, y0), y1)
            d = -1 if sign == "≥" else 1            # the arrowhead points past the bound
            out.append(f'<polygon points="{X(x):.1f},{Y(at) + 7 * d:.1f} '
                       f'{X(x) + 6:.1f},{Y(at) - 3 * d:.1f} {X(x) - 6:.1f},{Y(at) - 3 * d:.1f}" '
                       f'fill="white" stroke="{c}" stroke-width="1.6"><title>'
                       + esc(f'{s["name"]}: {xlabel} {x} -> {sign} {y:g}{s.get("unit", unit)}'
                             f' (the search stopped at its limit: a bound, not a value)')
                       + '</title></polygon>')
        path = " ".join(f"{X(x):.1f},{Y(y):.1f}" for x, y in p)
        width_px = 2.2 if style == "solid" else 1.6
        off = [(x, y) for x, y in p if y > y1]
        top_pt = max(off, key=lambda q: q[1]) if off else None
        name = s["name"] + (f" (↑ {fmt(top_pt[1])} at {top_pt[0]})" if off else "")
        out.append(f'<polyline points="{path}" fill="none" stroke="{c}" '
                   f'stroke-width="{width_px}"{dash[style]} clip-path="url(#{clip})">'
                   f'<title>{esc(name)}</title></polyline>')
        if style == "solid":
            m = MARKERS[i % len(MARKERS)]
            for x, y in p:
                if y > y1:
                    continue
                out.append(_marker(m, X(x), Y(y), c, f'{s["name"]}: {xlabel} {x} -> '
                                                     f'{fmt(y)}{s.get("unit", unit)}'))
        lx = left + pw + 14
        out.append(f'<line x1="{lx}" x2="{lx + 22}" y1="{ly:.1f}" y2="{ly:.1f}" stroke="{c}" '
                   f'stroke-width="{width_px}"{dash[style]}/>')
        if style == "solid":
            out.append(_marker(MARKERS[i % len(MARKERS)], lx + 11, ly, c, s["name"]))
        out.append(f'<text x="{lx + 28}" y="{ly + 4:.1f}" font-size="11">{esc(name)}</text>')
        ly += 17
    ranged = next((s for s in series if s.get("band_in_range") and s.get("band")), None)
    if ranged is not None:
        out.append(f'<text x="{left + pw + 14}" y="{ly + 4:.1f}" font-size="11">band and bars: '
                   f'{esc(ranged.get("band_label", "range"))}</text>')
        ly += 17
    if any(s.get("bounds") for s in series):
        out.append(f'<text x="{left + pw + 14}" y="{ly + 4:.1f}" font-size="11">hollow arrowhead: '
                   f'a bound (search limit)</text>')
    out.append("</svg>")
    return "".join(out)


def stacked_bars(rows: Sequence[dict], parts: Sequence[str], *, title: str, unit: str,
                 part_labels: dict | None = None, width: int = 840) -> str:
    """Horizontal stacked bars: rows [{"name", "values": {part: v}}], one colour per part."""
    part_labels = part_labels or {}
    used = [p for p in parts if any(r["values"].get(p, 0) > 0 for r in rows)]
    label_w, top = 290, 34
    bar_h, gap = 18, 8
    legend_rows = math.ceil(len(used) / 3) if used else 0
    height = top + len(rows) * (bar_h + gap) + 34 + legend_rows * 18 + 10
    pw = width - label_w - 70
    total_max = max((sum(r["values"].get(p, 0) for p in used) for r in rows), default=0) or 1
    ticks = nice_ticks(0, total_max)
    scale = pw / ticks[-1]
    out = [svg_open(width, height, title),
           f'<text x="10" y="20" font-size="14" font-weight="bold">{esc(title)}</text>']
    axis_y = top + len(rows) * (bar_h + gap)
    for t in ticks:
        x = label_w + t * scale
        out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top - 4}" y2="{axis_y}" '
                   f'stroke="#eee"/><text x="{x:.1f}" y="{axis_y + 14}" text-anchor="middle" '
                   f'font-size="11">{esc(fmt(t))}</text>')
    out.append(f'<text x="{label_w + pw / 2:.0f}" y="{axis_y + 28}" text-anchor="middle" '
               f'font-size="11">{esc(unit)}</text>')
    for i, r in enumerate(rows):
        y = top + i * (bar_h + gap)
        out.append(f'<text x="{label_w - 6}" y="{y + 13}" text-anchor="end" font-size="11">'
                   f'{esc(r["name"])}</text>')
        x = label_w
        for j, p in enumerate(used):
            v = r["values"].get(p, 0)
            if v <= 0:
                continue
            w = v * scale
            out.append(f'<rect x="{x:.1f}" y="{y}" width="{max(w, 0.5):.1f}" height="{bar_h}" '
                       f'fill="{colour(parts.index(p))}"><title>{esc(r["name"])}: '
                       f'{esc(part_labels.get(p, p))} {esc(fmt(v))} {esc(unit)}</title></rect>')
            x += w
        if not any(r["values"].get(p, 0) > 0 for p in used):
            out.append(f'<text x="{label_w + 4}" y="{y + 13}" font-size="11" fill="#666">'
                       f'nothing</text>')
    ly = axis_y + 44
    for j, p in enumerate(used):
        lx = 10 + (j % 3) * 270
        yy = ly + (j // 3) * 18
        out.append(f'<rect x="{lx}" y="{yy - 10}" width="12" height="12" '
                   f'fill="{colour(parts.index(p))}"/><text x="{lx + 17}" y="{yy}" '
                   f'font-size="11">{esc(part_labels.get(p, p))}</text>')
    out.append("</svg>")
    return "".join(out)


def grouped_bars(categories: Sequence[str], series: Sequence[dict], *, title: str, unit: str,
                 width: int = 760, height: int = 300) -> str:
    """Vertical bars: one group per category (e.g. worker 1..W), one bar per series."""
    left, right, top, bottom = 62, 20, 34, 60
    pw, ph = width - left - right, height - top - bottom
    vmax = max((v for s in series for v in s["values"]), default=0) or 1
    ticks = nice_ticks(0, vmax)
    n = max(len(categories), 1)
    gw = pw / n
    bw = max(min((gw * 0.8) / max(len(series), 1), 40), 1.5)

    def Y(v):
        return top + ph - v / ticks[-1] * ph

    out = [svg_open(width, height, title),
           f'<text x="{left}" y="20" font-size="14" font-weight="bold">{esc(title)}</text>']
    for t in ticks:
        out.append(f'<line x1="{left}" x2="{left + pw}" y1="{Y(t):.1f}" y2="{Y(t):.1f}" '
                   f'stroke="#e8e8e8"/><text x="{left - 6}" y="{Y(t) + 4:.1f}" '
                   f'text-anchor="end" font-size="11">{esc(fmt(t))}</text>')
    label_every = max(1, math.ceil(n / 32))
    for i, cat in enumerate(categories):
        gx = left + i * gw + (gw - bw * len(series)) / 2
        for j, s in enumerate(series):
            v = s["values"][i]
            out.append(f'<rect x="{gx + j * bw:.1f}" y="{Y(v):.1f}" width="{bw:.1f}" '
                       f'height="{top + ph - Y(v):.1f}" fill="{s.get("colour") or colour(j)}">'
                       f'<title>{esc(cat)}: {esc(s["name"])} {esc(fmt(v))} {esc(s.get("unit", unit))}'
                       f'</title></rect>')
        if i % label_every == 0:
            out.append(f'<text x="{left + i * gw + gw / 2:.1f}" y="{top + ph + 14}" '
                       f'text-anchor="middle" font-size="10">{esc(cat)}</text>')
    out.append(f'<text transform="translate(16 {top + ph / 2:.0f}) rotate(-90)" '
               f'text-anchor="middle" font-size="11">{esc(unit)}</text>')
    lx = left
    for j, s in enumerate(series):
        out.append(f'<rect x="{lx}" y="{height - 22}" width="12" height="12" '
                   f'fill="{s.get("colour") or colour(j)}"/><text x="{lx + 17}" '
                   f'y="{height - 12}" font-size="11">{esc(s["name"])}</text>')
        lx += 30 + 7 * len(s["name"])
    out.append("</svg>")
    return "".join(out)

#!/usr/bin/env python3
"""Benchmark runs (perf/common/harness.hpp JSON or CSV, or the older flat JSON
in perf/results/) as SVG charts, standard library only.

  perf/plot.py RUN.json|RUN.csv ... -o stages.svg                 stage GB/s, one bar per series
  perf/plot.py results.csv --chart sizes -o throughput.svg        GB/s vs input size
  perf/plot.py results.csv --chart memory -o memory.svg           peak device memory vs size
  perf/plot.py results.csv --chart table -o table.md               Markdown table, one row per configuration
  perf/plot.py ... --where rank=3 --where data=turbulent --where bound=1e-3 --title "..."

A series is one machine/backend/build: "Cuda specialized", "Cuda portable"
(KSZ_PORTABLE_ONLY=1), "OpenMP 16 thr"; prefixed by the GPU or host when the
inputs come from several machines. GB/s are over the uncompressed bytes.
"""
import argparse
import csv
import json
import math
import os
import sys
from collections import OrderedDict, defaultdict

PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f", "#bab0ac"]
CONFIG_KEYS = ("pipeline", "data", "dtype", "dims", "mode", "bound")
TOTALS = ("TOTAL kernels", "TOTAL end-to-end")
# Pipeline order of known stage names, for inputs that lost it (older JSON kept them sorted).
STAGE_ORDER = {
    "compress": ["value range", "value range+profile", "auto-tune", "auto-tune+anchors",
                 "auto-tune+anchors+coarsest level", "value range+block plan+encode", "block plan+encode", "block plan",
                 "prequantize", "predict+quantize",
                 "predict+quantize+histogram", "auto-tune+predict+quantize", "auto-tune+predict+quantize+histogram",
                 "prequant+predict+histogram (fused)", "histogram", "radius choice",
                 "outliers+codebook", "codebook", "huffman encode", "huffman encode+lossless pass", "offsets",
                 "block encode", "outliers", "lossless pass", "gather+container"],
    "decompress": ["lossless decode", "copy to device", "huffman decode", "offsets", "block decode", "outliers",
                   "lorenzo inverse+dequantize", "interp inverse"]}


# ----------------------------------------------------------------- loading

class Run:
    """One configuration measured on one series: stage seconds per op."""

    def __init__(self, meta, cfg):
        self.meta = meta
        self.cfg = cfg  # pipeline, data, dtype, dims, rank, elements, input_bytes, mode, bound, ratio, ...
        self.ops = {"compress": OrderedDict(), "decompress": OrderedDict()}  # stage -> seconds
        self.peak = {}  # op -> (bytes, ratio)
        self.series = ""

    def gbps(self, op, stage):
        s = self.ops[op].get(stage)
        return self.cfg["input_bytes"] / s / 1e9 if s else None

    def key(self):
        return tuple(self.cfg.get(k) for k in CONFIG_KEYS)


def _num(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def _dims_count(dims):
    n = 1
    for d in str(dims).split("x"):
        n *= int(d)
    return n


def load_json(path):
    with open(path) as f:
        doc = json.load(f)
    runs = []
    if "runs" in doc:  # harness schema ksz-perf/1
        meta = doc.get("meta", {})
        for r in doc["runs"]:
            run = Run(meta, {k: r.get(k) for k in ("pipeline", "data", "dtype", "dims", "rank", "elements",
                                                   "input_bytes", "output_bytes", "mode", "bound", "ratio", "psnr",
                                                   "bound_held", "max_abs_error", "abs_bound")})
            for op in ("compress", "decompress"):
                o = r.get(op, {})
                for s in o.get("stages", []):
                    run.ops[op][s["name"]] = s["seconds"]
                run.ops[op]["TOTAL kernels"] = o.get("kernels_seconds")
                run.ops[op]["TOTAL end-to-end"] = o.get("e2e_seconds")
                if "peak_device_bytes" in o:
                    run.peak[op] = (o["peak_device_bytes"], o.get("peak_ratio"))
            runs.append(run)
        return runs
    # Older flat JSON (perf/results/h100_*.json): stages as {"c:name": seconds}, totals as GB/s.
    dims = doc.get("dims", "?")
    n = _dims_count(dims)
    meta = {"backend": doc.get("backend", "?"), "host": "", "gpu_name": "",
            "series": doc.get("backend", "?") + (" portable" if "portable" in os.path.basename(path) else ""),
            "ksz_version": doc.get("version", "")}
    run = Run(meta, {"pipeline": doc.get("bench", "lorenzo"), "data": doc.get("kind", "?"), "dtype": "f32",
                     "dims": dims, "rank": len(str(dims).split("x")), "elements": n, "input_bytes": 4 * n,
                     "mode": "rel", "bound": doc.get("rel"), "ratio": doc.get("ratio")})
    for op, prefix in (("compress", "c:"), ("decompress", "d:")):
        order = STAGE_ORDER[op]
        names = [k[2:] for k in doc.get("stages", {}) if k.startswith(prefix)]
        for n in sorted(names, key=lambda n: order.index(n) if n in order else len(order)):
            run.ops[op][n] = doc["stages"][prefix + n]
    for op in ("compress", "decompress"):
        for tot, key in (("TOTAL kernels", "kernels"), ("TOTAL end-to-end", "e2e")):
            g = doc.get(f"{op}_{key}_gbps")
            if g:
                run.ops[op][tot] = run.cfg["input_bytes"] / (g * 1e9)
    return [run]


def load_csv(path):
    runs = OrderedDict()
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if row.get("date") == "date":  # a header repeated by concatenated files
                continue
            meta = {k: row[k] for k in ("date", "host", "cpu", "gpu", "backend", "concurrency", "series",
                                        "specialized", "kokkos", "git")}
            meta["gpu_name"] = meta.pop("gpu")
            cfg = {"pipeline": row["pipeline"], "data": row["data"], "dtype": row["dtype"], "dims": row["dims"],
                   "rank": int(row["rank"]), "elements": int(row["elements"]), "input_bytes": int(row["input_bytes"]),
                   "mode": row["mode"], "bound": _num(row["bound"]), "ratio": _num(row["ratio"]),
                   "psnr": _num(row["psnr"]), "bound_held": row["bound_held"] == "1",
                   "output_bytes": int(row["output_bytes"]), "max_abs_error": _num(row["max_abs_error"]),
                   "abs_bound": _num(row["abs_bound"])}
            k = (row["date"], row["host"], row["series"], row["bench"]) + tuple(cfg.get(c) for c in CONFIG_KEYS)
            run = runs.get(k)
            if run is None:
                run = runs[k] = Run(meta, cfg)
            run.ops[row["op"]][row["stage"]] = _num(row["seconds"])
            if row.get("peak_device_bytes"):
                run.peak[row["op"]] = (int(row["peak_device_bytes"]), _num(row["peak_ratio"]))
    return list(runs.values())


def load(paths):
    runs = []
    for p in paths:
        runs += load_csv(p) if p.endswith(".csv") else load_json(p)
    machines = {(r.meta.get("host", ""), r.meta.get("gpu_name", "")) for r in runs}
    pipelines = {r.cfg.get("pipeline") for r in runs}
    for r in runs:
        s = r.meta.get("series") or r.meta.get("backend", "?")
        if len(machines) > 1:
            tag = short_gpu(r.meta.get("gpu_name", "")) or r.meta.get("host", "")
            s = f"{tag} {s}" if tag else s
        if len(pipelines) > 1:
            s = f"{r.cfg.get('pipeline')}: {s}"
        r.series = s
    return runs


def short_gpu(name):
    for drop in ("NVIDIA ", "Tesla ", " 80GB HBM3", " PCIe", " SXM5", " SXM"):
        name = name.replace(drop, "")
    return name.strip()


def parse_where(items):
    out = []
    for w in items:
        if "=" not in w:
            sys.exit(f"--where {w}: expected key=value")
        k, v = w.split("=", 1)
        out.append((k, v))
    return out


def matches(run, where):
    for k, v in where:
        have = run.series if k == "series" else run.cfg.get(k, run.meta.get(k))
        if isinstance(have, (int, float)) and _num(v) is not None:
            if not math.isclose(float(have), float(v), rel_tol=1e-9):
                return False
        elif str(have) != v:
            return False
    return True


def prefer(runs, key, preferred):
    """Narrows runs to one value of cfg[key]: the preferred one if present, else the most common."""
    vals = [r.cfg.get(key) for r in runs]
    if not vals:
        return runs, None
    for p in preferred:
        if any(v == p or (isinstance(v, float) and isinstance(p, float) and math.isclose(v, p)) for v in vals):
            return [r for r in runs if r.cfg.get(key) == p or (isinstance(p, float) and r.cfg.get(key) is not None
                                                               and math.isclose(r.cfg.get(key), p))], p
    best = max(set(vals), key=vals.count)
    return [r for r in runs if r.cfg.get(key) == best], best


# ----------------------------------------------------------------- SVG

def esc(s):
    return str(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


class Svg:
    def __init__(self, w, h):
        self.w, self.h, self.parts = w, h, []

    def add(self, s):
        self.parts.append(s)

    def text(self, x, y, s, size=12, anchor="start", weight="normal", color="#222", rotate=None):
        tr = f' transform="rotate({rotate} {x:.1f} {y:.1f})"' if rotate is not None else ""
        self.add(f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" '
                 f'font-weight="{weight}" fill="{color}"{tr}>{esc(s)}</text>')

    def line(self, x1, y1, x2, y2, color="#ccc", width=1, dash=None):
        d = f' stroke-dasharray="{dash}"' if dash else ""
        self.add(f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{color}" '
                 f'stroke-width="{width}"{d}/>')

    def rect(self, x, y, w, h, color, title=None):
        t = f"<title>{esc(title)}</title>" if title else ""
        self.add(f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(w, 0):.1f}" height="{h:.1f}" fill="{color}">{t}</rect>')

    def write(self, path):
        with open(path, "w") as f:
            f.write(f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.w}" height="{self.h}" '
                    f'viewBox="0 0 {self.w} {self.h}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif">\n')
            f.write(f'<rect width="{self.w}" height="{self.h}" fill="white"/>\n')
            f.write("\n".join(self.parts))
            f.write("\n</svg>\n")


class Axis:
    """Linear or log10 mapping of [lo, hi] onto [p0, p1] pixels."""

    def __init__(self, lo, hi, p0, p1, log):
        self.log = log
        if log:
            lo, hi = 10 ** math.floor(math.log10(lo)), 10 ** math.ceil(math.log10(hi))
        else:
            lo, hi = 0.0, nice_ceil(hi)
        self.lo, self.hi, self.p0, self.p1 = lo, hi, p0, p1

    def __call__(self, v):
        if self.log:
            v = max(v, self.lo)
            t = (math.log10(v) - math.log10(self.lo)) / (math.log10(self.hi) - math.log10(self.lo))
        else:
            t = (v - self.lo) / (self.hi - self.lo)
        return self.p0 + t * (self.p1 - self.p0)

    def ticks(self):
        """Grid values; on a log axis 1-2-5 per decade, decades only beyond three decades."""
        if self.log:
            out, e = [], math.floor(math.log10(self.lo))
            wide = math.log10(self.hi / self.lo) > 3
            while 10 ** e <= self.hi * 1.0001:
                for m in ((1,) if wide else (1, 2, 5)):
                    v = m * 10 ** e
                    if self.lo * 0.9999 <= v <= self.hi * 1.0001:
                        out.append(v)
                e += 1
            return out
        step = nice_ceil(self.hi / 5)
        return [i * step for i in range(int(self.hi / step + 1e-9) + 1)]


def nice_ceil(v):
    if v <= 0:
        return 1.0
    e = 10 ** math.floor(math.log10(v))
    for m in (1, 2, 2.5, 5, 10):
        if m * e >= v * 0.9999:
            return m * e
    return 10 * e


def fmt(v):
    if v >= 100:
        return f"{v:.0f}"
    if v >= 10:
        return f"{v:.1f}".rstrip("0").rstrip(".")
    if v >= 1:
        return f"{v:.2f}".rstrip("0").rstrip(".")
    return f"{v:.2g}"


def fmt_bytes(b):
    for u in ("B", "KiB", "MiB", "GiB", "TiB"):
        if b < 1024:
            return f"{b:.3g} {u}"
        b /= 1024
    return f"{b:.3g} PiB"


def legend(svg, x, y, series, colors, styles=None, width=None):
    """One row of swatches; wraps at `width`."""
    cx, cy = x, y
    for s in series:
        w = 26 + 7 * len(s)
        if width and cx + w > x + width:
            cx, cy = x, cy + 18
        if styles:
            svg.line(cx, cy - 4, cx + 18, cy - 4, colors[s], 3, styles.get(s))
        else:
            svg.rect(cx, cy - 10, 12, 12, colors[s])
        svg.text(cx + (22 if styles else 16), cy, s, 12)
        cx += w + 10
    return cy


def describe(cfg):
    b = cfg.get("bound")
    return (f"{cfg.get('pipeline')} | {cfg.get('data')} {cfg.get('dtype')} {cfg.get('dims')} "
            f"({fmt_bytes(cfg.get('input_bytes', 0))}) | {str(cfg.get('mode', '')).upper()} {b:g}"
            if b is not None else f"{cfg.get('data')} {cfg.get('dims')}")


# ----------------------------------------------------------------- charts

def chart_stages(runs, out, title):
    # One configuration: the one most series share, then the largest, 3D, turbulent, REL 1e-3.
    by_key = defaultdict(list)
    for r in runs:
        by_key[r.key()].append(r)

    def rank(k):
        rs = by_key[k]
        c = rs[0].cfg
        return (len({r.series for r in rs}), c.get("elements") or 0, c.get("rank") == 3, c.get("data") == "turbulent",
                -abs(math.log10(c["bound"]) + 3) if c.get("bound") else 0)

    key = max(by_key, key=rank)
    chosen = by_key[key]
    if len(by_key) > 1:
        print(f"plot: {len(by_key)} configurations; showing {describe(chosen[0].cfg)} (use --where to pick)",
              file=sys.stderr)
    series = list(OrderedDict.fromkeys(r.series for r in chosen))
    per = {}
    for r in chosen:  # last run of a series wins (a CSV appended twice)
        per[r.series] = r
    colors = {s: PALETTE[i % len(PALETTE)] for i, s in enumerate(series)}

    rows = []  # (label, op, stage) with section headers
    for op in ("compress", "decompress"):
        # Union over series in pipeline order: known names by STAGE_ORDER, others after their predecessor.
        order, pos = STAGE_ORDER[op], {}
        for s in series:
            prev = -1.0
            for st in per[s].ops[op]:
                if st in TOTALS:
                    continue
                p = float(order.index(st)) if st in order else prev + 0.5
                pos.setdefault(st, p)
                prev = p
        stages = sorted(pos, key=lambda st: pos[st])
        rows.append(("header", op))
        rows += [("stage", op, st) for st in stages]
        rows += [("total", op, t) for t in TOTALS]
    vals = [per[s].gbps(r[1], r[2]) for r in rows if r[0] != "header" for s in series]
    vals = [v for v in vals if v]
    if not vals:
        sys.exit("plot: no stage times in the input")
    log = max(vals) / min(vals) > 30

    bar, gap, left, right, top = 13, 9, 300, 70, 96
    n_bars = len(series)
    height = top + sum(26 if r[0] == "header" else n_bars * bar + gap for r in rows) + 60
    width = 1000
    svg = Svg(width, height)
    x = Axis(min(vals), max(vals), left, width - right, log)
    c0 = chosen[0].cfg
    svg.text(16, 24, title or "Stage throughput (GB/s over uncompressed bytes, median)", 16, weight="bold")
    sub = describe(c0)
    if c0.get("ratio"):
        sub += f" | ratio {c0['ratio']:.2f}"
    svg.text(16, 44, sub, 12, color="#555")
    ly = legend(svg, 16, 66, series, colors, width=width - 32)
    top = max(top, ly + 20)
    plot_top = top
    y = top
    for r in rows:
        if r[0] == "header":
            svg.text(16, y + 17, r[1].upper(), 13, weight="bold")
            svg.line(16, y + 22, width - right, y + 22, "#999")
            y += 26
            continue
        _, op, st = r
        label = {"TOTAL kernels": f"{op} kernels (resident data)",
                 "TOTAL end-to-end": f"{op} end to end (host stream)"}.get(st, st)
        h = n_bars * bar
        svg.text(left - 8, y + h / 2 + 4, label, 12, "end", "bold" if r[0] == "total" else "normal")
        for i, s in enumerate(series):
            v = per[s].gbps(op, st)
            if v is None:
                continue
            x1 = x(v)
            svg.rect(left, y + i * bar, x1 - left, bar - 2, colors[s], f"{s}: {st} {v:.3g} GB/s")
            svg.text(x1 + 4, y + i * bar + bar - 4, fmt(v), 10, color="#333")
        y += h + gap
    for t in x.ticks():
        px = x(t)
        svg.line(px, plot_top, px, y, "#e3e3e3")
        svg.text(px, y + 14, fmt(t), 11, "middle", color="#555")
    svg.line(left, plot_top, left, y, "#666")
    svg.text((left + width - right) / 2, y + 32, "GB/s" + (" (log scale)" if log else ""), 12, "middle")
    foot = sorted({f"{r.meta.get('ksz_version') or r.meta.get('kokkos', '')} {r.meta.get('git', '')}".strip()
                   for r in chosen})
    svg.text(16, y + 50, "; ".join(foot)[:160], 10, color="#888")
    svg.parts.insert(0, "")
    svg.h = y + 60
    svg.write(out)


def select_sweep(runs, where):
    """Narrows a sweep to one value per config axis (except size), preferring 3D turbulent REL 1e-3."""
    keys = {k for k, _ in where}
    picked = []
    for key, pref in (("pipeline", ["lorenzo"]), ("dtype", ["f32"]), ("rank", [3]),
                      ("data", ["turbulent", "smooth"]), ("mode", ["rel"]), ("bound", [1e-3, 1e-4, 1e-2])):
        if key in keys:
            continue
        runs, v = prefer(runs, key, pref)
        if v is not None:
            picked.append(f"{key} {v:g}" if isinstance(v, float) else f"{key} {v}")
    return runs, picked


def line_chart(svg, box, xs_label, ylabel, series_lines, colors, styles, ylog, xlabels, yrange):
    """series_lines: {name: [(x_bytes, y)]}; x is log2 of bytes, ticks at the data's sizes; y over yrange."""
    x0, y0, x1, y1 = box
    allx = sorted({p[0] for pts in series_lines.values() for p in pts})
    ally = list(yrange)
    if not allx:
        return
    lx = [math.log2(v) for v in allx]
    lo, hi = min(lx), max(lx)
    if hi == lo:
        lo, hi = lo - 1, hi + 1
    fx = lambda v: x0 + (math.log2(v) - lo) / (hi - lo) * (x1 - x0)  # noqa: E731
    ya = Axis(min(ally), max(ally), y1, y0, ylog) if ylog else Axis(0, max(ally) * 1.1, y1, y0, False)
    for t in ya.ticks():
        py = ya(t)
        svg.line(x0, py, x1, py, "#e3e3e3")
        svg.text(x0 - 6, py + 4, fmt(t), 11, "end", color="#555")
    for v in allx:
        svg.line(fx(v), y0, fx(v), y1, "#f0f0f0")
        svg.text(fx(v), y1 + 16, xlabels(v), 11, "middle", color="#555")
    svg.line(x0, y1, x1, y1, "#666")
    svg.line(x0, y0, x0, y1, "#666")
    svg.text((x0 + x1) / 2, y1 + 34, xs_label, 12, "middle")
    svg.text(x0 - 44, (y0 + y1) / 2, ylabel, 12, "middle", rotate=-90)
    for name, pts in series_lines.items():
        pts = sorted(p for p in pts if p[1])
        if not pts:
            continue
        d = " ".join(f"{fx(a):.1f},{ya(b):.1f}" for a, b in pts)
        dash = f' stroke-dasharray="{styles[name]}"' if styles.get(name) else ""
        svg.add(f'<polyline points="{d}" fill="none" stroke="{colors[name]}" stroke-width="2"{dash}/>')
        for a, b in pts:
            svg.add(f'<circle cx="{fx(a):.1f}" cy="{ya(b):.1f}" r="3" fill="{colors[name]}">'
                    f'<title>{esc(name)}: {fmt_bytes(a)} {b:.3g}</title></circle>')


def chart_xy(runs, out, title, where, what):
    runs, picked = select_sweep(runs, where)
    if not runs:
        sys.exit("plot: nothing left after --where")
    series = list(OrderedDict.fromkeys(r.series for r in runs))
    colors, styles = {}, {}
    panels = []
    for op in ("compress", "decompress"):
        lines = OrderedDict()
        for i, s in enumerate(series):
            if what == "sizes":
                variants = (("kernels", "TOTAL kernels", None), ("end to end", "TOTAL end-to-end", "5,4"))
            else:
                variants = (("peak", None, None),)
            for vname, stage, dash in variants:
                name = f"{s} {vname}" if what == "sizes" else s
                pts = {}
                for r in runs:
                    if r.series != s:
                        continue
                    if what == "sizes":
                        v = r.gbps(op, stage)
                    else:
                        v = r.peak.get(op, (None, None))[1]
                    if v:
                        pts[r.cfg["input_bytes"]] = v  # last wins
                lines[name] = sorted(pts.items())
                colors[name] = PALETTE[i % len(PALETTE)]
                styles[name] = dash
        panels.append((op, lines))
    width, height = 1000, 470
    svg = Svg(width, height)
    default_title = ("Throughput vs input size (GB/s over uncompressed bytes, median)" if what == "sizes"
                     else "Peak device memory during a call / (input + output bytes)")
    svg.text(16, 24, title or default_title, 16, weight="bold")
    svg.text(16, 44, "; ".join(picked + [f"{k}={v}" for k, v in where]), 12, color="#555")
    names = list(panels[0][1].keys())
    ys = [p[1] for _, lines in panels for pts in lines.values() for p in pts if p[1]]
    if not ys:
        sys.exit(f"plot: no {'throughput' if what == 'sizes' else 'peak memory'} figures to draw")
    yrange = (min(ys), max(ys))  # shared by both panels
    ly = legend(svg, 16, 66, names, colors, styles, width=width - 32)
    top = ly + 24
    pw = (width - 120) / 2
    for i, (op, lines) in enumerate(panels):
        x0 = 70 + i * (pw + 40)
        svg.text(x0 + pw / 2, top, op, 13, "middle", "bold")
        ylabel = "GB/s (log scale)" if what == "sizes" else "peak / (input + output)"
        line_chart(svg, (x0, top + 10, x0 + pw - 20, height - 60), "input size (f32 elements x 4 B)", ylabel,
                   lines, colors, styles, what == "sizes", fmt_bytes, yrange)
        if what == "memory":  # the target
            ya = Axis(0, yrange[1] * 1.1, height - 60, top + 10, False)
            if 1.25 <= ya.hi:
                svg.line(x0, ya(1.25), x0 + pw - 20, ya(1.25), "#e15759", 1, "3,3")
                svg.text(x0 + pw - 22, ya(1.25) - 4, "target 1.25", 10, "end", color="#e15759")
    svg.write(out)


def device(r):
    """The GPU, or the CPU model and the threads the run used."""
    m = r.meta
    if m.get("gpu_name"):
        return short_gpu(m["gpu_name"])
    cpu = " ".join(str(m.get("cpu") or m.get("cpu_model") or m.get("host", "")).replace("(R)", "").split())
    return f"{cpu}, {m.get('concurrency')} thr" if m.get("concurrency") else cpu


def table(runs, out):
    """Markdown: one row per device, code path and configuration (the last measured wins)."""
    last = OrderedDict()
    for r in runs:
        last[(device(r), r.meta.get("host"), r.meta.get("backend"), r.meta.get("specialized"), r.key())] = r
    head = ["device", "backend", "code", "pipeline", "data", "dims", "dtype", "REL", "ratio", "PSNR dB",
            "max err (bound)", "compress GB/s", "decompress GB/s", "peak mem / (in+out) c, d"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    g = lambda r, op, t: f"{r.gbps(op, t):.3g}" if r.gbps(op, t) else "-"  # noqa: E731
    code = {"on": "specialized", "off": "portable"}
    generated = ("smooth", "turbulent", "noise")
    for r in sorted(last.values(), key=lambda r: (device(r), r.meta.get("backend") or "",
                                                  r.meta.get("specialized") != "on", r.cfg.get("pipeline") or "",
                                                  r.cfg.get("data") not in generated, r.cfg.get("data") or "",
                                                  -(r.cfg.get("rank") or 0), r.cfg.get("elements") or 0,
                                                  -(r.cfg.get("bound") or 0))):
        c = r.cfg
        peak = ", ".join(f"{r.peak[op][1]:.2f}" for op in ("compress", "decompress") if op in r.peak) or "-"
        psnr = f"{c['psnr']:.1f}" if c.get("psnr") is not None else "inf"
        err = f"{c['max_abs_error']:.3g} ({c['abs_bound']:.3g})" if c.get("max_abs_error") is not None else "-"
        if c.get("bound_held") is False:
            err = f"**{err} VIOLATED**"
        bound = f"{c.get('bound'):g}" if c.get("mode") == "rel" else f"ABS {c.get('bound'):g}"
        lines.append("| " + " | ".join([
            device(r), str(r.meta.get("backend", "")), code.get(r.meta.get("specialized"), "portable"),
            str(c.get("pipeline")), str(c.get("data")), str(c.get("dims")), str(c.get("dtype")), bound,
            f"{c.get('ratio') or 0:.2f}", psnr, err,
            f"{g(r, 'compress', 'TOTAL kernels')} ({g(r, 'compress', 'TOTAL end-to-end')})",
            f"{g(r, 'decompress', 'TOTAL kernels')} ({g(r, 'decompress', 'TOTAL end-to-end')})", peak]) + " |")
    text = "\n".join(lines) + "\n"
    text += ("\nGB/s over the uncompressed bytes, median of the reps: kernels on resident data "
             "(end to end, to and from a host stream, in parentheses). Peak memory: the most device memory a "
             "compress / decompress call holds (its input and output included) over input + compressed bytes.\n")
    if out == "-":
        sys.stdout.write(text)
    else:
        with open(out, "w") as f:
            f.write(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("inputs", nargs="+", help="JSON or CSV files from perf/*/bench_* (--json/--csv)")
    ap.add_argument("-o", "--output", required=True, help="SVG file to write (table: Markdown, - for stdout)")
    ap.add_argument("--chart", choices=("stages", "sizes", "memory", "table"), default="stages")
    ap.add_argument("--where", action="append", default=[], metavar="KEY=VALUE",
                    help="keep runs whose KEY (pipeline, data, dtype, dims, rank, mode, bound, series, backend, "
                         "host, ...) equals VALUE; repeatable")
    ap.add_argument("--title")
    a = ap.parse_args()
    where = parse_where(a.where)
    runs = [r for r in load(a.inputs) if matches(r, where)]
    if not runs:
        sys.exit("plot: no runs (after --where)")
    if a.chart == "table":
        table(runs, a.output)
        return
    if a.chart == "stages":
        chart_stages(runs, a.output, a.title)
    else:
        chart_xy(runs, a.output, a.title, where, a.chart)
    print(f"plot: wrote {a.output} ({len({r.series for r in runs})} series)", file=sys.stderr)


if __name__ == "__main__":
    main()

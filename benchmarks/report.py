"""Turn a pytest-benchmark JSON into ``RESULTS.md`` and scaling plots.

Usage::

    pytest benchmarks/ --benchmark-only --benchmark-json=bench.json
    python -m benchmarks.report bench.json --out benchmarks/

Without a JSON argument the newest file under ``.benchmarks/`` is used.

Each benchmark is one library's run of one case; the case is the benchmark's
``group``.  The library comes from ``extra_info["lib"]`` (set by
``benchmarks.tag``), else from a parameter or the test name containing
``cygrad``, ``numpy`` or ``torch``.  Times are the **minimum** over the rounds
by default (``--stat median`` for medians): on a small machine shared with
other work, the minimum is the closest estimate of the uncontended time, and
it is what the ratios between libraries timed at different moments need.
Ratios are cygrad's time over the peer's: below 1 means cygrad is faster.

Benchmarks whose ``extra_info`` has ``series`` and ``n`` are scaling points:
they get their own tables and one PNG per ``family`` (matplotlib optional).
A benchmark may carry ``extra_info["target"] = {"torch": 0.8}`` to state its
target; otherwise :data:`TARGETS` (from the issues) applies by group pattern.
``extra_info["ops"]`` adds a per-op time; ``bytes_per_node`` a memory column.

This module imports only the standard library (and matplotlib for plots), so
it runs where neither cygrad nor torch is installed.
"""

import argparse
import fnmatch
import glob
import json
import os
import sys
from collections import defaultdict

PEERS = ("numpy", "torch")
LIB_ORDER = ("cygrad", "numpy", "torch")

# group pattern -> {peer: largest allowed cygrad/peer ratio}, from the issues
TARGETS = [
    ("scalar_chain-*", {"torch": 0.1}, "#2, #8"),
    ("small_tensors", {"torch": 0.15}, "#2, #8"),
    ("linear_regression*", {"torch": 0.2}, "#2"),
    ("large_elementwise", {"torch": 1.0, "numpy": 1.0}, "#2, #8"),
    ("deep_chain-backward", {"torch": 0.1}, "#8"),
    ("softmax-*", {"torch": 1.0}, "#3"),
    ("log_softmax-*", {"torch": 1.0}, "#3"),
    ("logsumexp-*", {"torch": 1.0}, "#3"),
    ("mlp_step-*", {"torch": 0.8}, "#7, #8"),
    ("optim_adam", {"torch fused=True": 1.0}, "#6, #8"),
    ("optim_sgd_momentum", {"torch fused=True": 1.0}, "#6"),
    ("scale-mul-*-n=3162278", {"numpy": 1.2}, "#3 (~4e6 elements)"),
    ("scale-tanh-*-n=3162278", {"numpy": 1.2}, "#3 (~4e6 elements)"),
    ("scale-sum-*-n=3162278", {"numpy": 1.2}, "#3 (~4e6 elements)"),
]


# ---------------------------------------------------------------------------
# reading


def find_latest_json(root="."):
    """Newest pytest-benchmark JSON under ``root/.benchmarks``, or None."""
    files = glob.glob(os.path.join(root, ".benchmarks", "**", "*.json"), recursive=True)
    return max(files, key=os.path.getmtime) if files else None


def infer_lib(bench):
    """The library a benchmark ran, or None."""
    extra = bench.get("extra_info") or {}
    if extra.get("lib"):
        return str(extra["lib"])
    for value in (bench.get("params") or {}).values():
        if isinstance(value, str) and value.lower() in LIB_ORDER:
            return value.lower()
    name = (bench.get("name") or "").lower()
    for lib in LIB_ORDER:
        if lib in name:
            return lib
    if "[np" in name or "_np" in name:
        return "numpy"
    return None


STATS = ("min", "median", "mean")
STAT_WORDS = {
    "min": "minimum (closest to uncontended time on a shared machine)",
    "median": "median",
    "mean": "mean",
}


def variant_label(lib, extra):
    """``lib``, or ``"torch fused=True"`` when the run had ``options``."""
    options = extra.get("options")
    if isinstance(options, dict) and options:
        return lib + " " + " ".join(f"{k}={v}" for k, v in options.items())
    return lib


def load(path, stat="min"):
    """Return ``(data, entries)``: the JSON and one dict per benchmark.

    ``entry["time"]`` is the statistic ``stat`` of the benchmark's rounds.
    """
    if stat not in STATS:
        raise ValueError(f"Invalid stat: {stat!r} (one of {STATS})")
    with open(path) as f:
        data = json.load(f)
    entries = []
    for bench in data.get("benchmarks", []):
        stats = bench.get("stats") or {}
        if "median" not in stats:
            continue
        extra = bench.get("extra_info") or {}
        lib = infer_lib(bench) or bench.get("param") or bench.get("name")
        entries.append(
            {
                "group": bench.get("group") or bench.get("name"),
                "name": bench.get("name"),
                "lib": lib,
                "label": variant_label(lib, extra),
                "time": float(stats.get(stat, stats["median"])),
                "median": float(stats["median"]),
                "rounds": stats.get("rounds"),
                "extra": extra,
            }
        )
    return data, entries


def load_many(paths, stat="min"):
    """Merge several runs: ``(runs, entries)``, ``runs`` a list of (path, data).

    A group measured in a later JSON replaces the same group from earlier
    ones, so a short re-run of some cases updates a full run; each entry
    records its run's number (1-based) in ``entry["run"]``.
    """
    runs, by_group = [], {}
    for k, path in enumerate(paths, 1):
        data, entries = load(path, stat)
        runs.append((path, data))
        fresh = {}
        for e in entries:
            e["run"] = k
            fresh.setdefault(e["group"], []).append(e)
        by_group.update(fresh)
    return runs, [e for group in by_group.values() for e in group]


# ---------------------------------------------------------------------------
# formatting


def fmt_time(seconds):
    """Seconds as a short human string (3 significant digits)."""
    if seconds is None:
        return "—"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if seconds >= scale or unit == "ns":
            return f"{seconds / scale:.3g} {unit}"
    return "—"  # unreachable


def fmt_ratio(r):
    return "—" if r is None else f"{r:.3g}x"


def fmt_bytes(b):
    if b is None:
        return "—"
    return f"{b:.0f} B" if abs(b) < 10240 else f"{b / 1024:.0f} KiB"


def ratio(a, b):
    if a is None or b is None or b <= 0:
        return None
    return a / b


def target_for(group, extra_infos):
    """``(targets, source)`` for a group: its benchmarks' own, else TARGETS."""
    for extra in extra_infos:
        if isinstance(extra.get("target"), dict):
            return extra["target"], extra.get("target_source", "benchmark")
    for pattern, targets, source in TARGETS:
        if fnmatch.fnmatchcase(group, pattern):
            return targets, source
    return {}, ""


def check_targets(times, targets):
    """``(text, verdict)``: "met"/"MISSED"/"n/a" per target peer, and overall.

    The verdict is "met" only when every target could be checked and holds,
    "MISSED" when any checked one fails, "n/a" otherwise ("" with no target).
    """
    parts, verdicts = [], []
    for peer, limit in targets.items():
        r = ratio(times.get("cygrad"), times.get(peer))
        v = "n/a" if r is None else ("met" if r <= limit else "MISSED")
        verdicts.append(v)
        parts.append(f"≤{limit:g}x {peer}: {v}")
    if not verdicts:
        return "", ""
    if "MISSED" in verdicts:
        verdict = "MISSED"
    elif "n/a" in verdicts:
        verdict = "n/a"
    else:
        verdict = "met"
    return "; ".join(parts), verdict


# ---------------------------------------------------------------------------
# tables


def group_entries(entries):
    """{group: {label: entry}} in first-seen order; duplicates keep the fastest."""
    groups = {}
    for e in entries:
        labels = groups.setdefault(e["group"], {})
        if e["label"] not in labels or e["time"] < labels[e["label"]]["time"]:
            labels[e["label"]] = e
    return groups


def lib_times(labels):
    """``(times, notes)``: one time per library and per variant label.

    A library that ran only as variants (torch with ``foreach``/``fused``
    options) gets its fastest variant in its column, and a note says which.
    """
    times = {label: e["time"] for label, e in labels.items()}
    notes = []
    for lib in LIB_ORDER:
        if lib in times:
            continue
        variants = [label for label, e in labels.items() if e["lib"] == lib]
        if variants:
            best = min(variants, key=times.get)
            times[lib] = times[best]
            notes.append(f"{lib} column: fastest variant, {best}")
    return times, notes


def summary_rows(groups):
    """Rows of the main table (non-scaling groups)."""
    rows = []
    for group, libs in groups.items():
        times, notes = lib_times(libs)
        extras = [e["extra"] for e in libs.values()]
        targets, source = target_for(group, extras)
        ops = next((x["ops"] for x in extras if x.get("ops")), None)
        if ops:
            per_op = ", ".join(
                f"{lib} {fmt_time(times[lib] / ops)}"
                for lib in LIB_ORDER
                if lib in times
            )
            notes.append(f"per op ({ops} ops): {per_op}")
        mem = {
            e["label"]: e["extra"]["bytes_per_node"]
            for lib, e in libs.items()
            if e["extra"].get("bytes_per_node") is not None
        }
        if mem:
            notes.append(
                "memory/node: "
                + ", ".join(f"{k} {fmt_bytes(v)}" for k, v in mem.items())
            )
        for lib in sorted(set(times) - set(LIB_ORDER)):
            notes.append(
                f"{lib} {fmt_time(times[lib])} "
                f"(cygrad/{lib} {fmt_ratio(ratio(times.get('cygrad'), times[lib]))})"
            )
        status, verdict = check_targets(times, targets)
        rows.append(
            {
                "group": group,
                "times": times,
                "vs_torch": ratio(times.get("cygrad"), times.get("torch")),
                "vs_numpy": ratio(times.get("cygrad"), times.get("numpy")),
                "targets": targets,
                "target_source": source,
                "status": status,
                "verdict": verdict,
                "notes": "; ".join(notes),
            }
        )
    return rows


def md_summary(rows):
    head = (
        "| case (group) | cygrad | NumPy | torch | cygrad/torch | cygrad/NumPy "
        "| target (issue) | notes |\n|---|---:|---:|---:|---:|---:|---|---|\n"
    )
    lines = []
    for r in rows:
        t = r["times"]
        target = r["status"]
        if target:
            target += f" ({r['target_source']})"
        lines.append(
            f"| {r['group']} | {fmt_time(t.get('cygrad'))} | {fmt_time(t.get('numpy'))}"
            f" | {fmt_time(t.get('torch'))} | {fmt_ratio(r['vs_torch'])}"
            f" | {fmt_ratio(r['vs_numpy'])} | {target} | {r['notes']} |"
        )
    return head + "\n".join(lines) + "\n"


def scaling_series(entries):
    """{family: {series: {lib: [(n, time), ...]}}}, points sorted by n."""
    out = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for e in entries:
        x = e["extra"]
        if "series" in x and "n" in x:
            fam = x.get("family", "other")
            out[fam][x["series"]][e["lib"]].append((int(x["n"]), e["time"]))
    for fam in out.values():
        for libs in fam.values():
            for pts in libs.values():
                pts.sort()
    return out


def md_variants(fam, name, table, ns):
    """A scaling table whose columns are variants of one library (the thread
    counts of cygrad), with each variant's time over the first one's."""
    cols = sorted(table, key=_lib_key)
    first = cols[0]
    head = " | ".join(cols)
    ratios = " | ".join(f"{c} / {first}" for c in cols[1:])
    rule = "---:|" * (2 * len(cols))
    out = [f"#### {fam}: {name}\n\n| n | {head} | {ratios} |\n|{rule}\n"]
    for n in ns:
        times = [table[c].get(n) for c in cols]
        cells = " | ".join(fmt_time(t) for t in times)
        rs = " | ".join(fmt_ratio(ratio(t, times[0])) for t in times[1:])
        out.append(f"| {n:,} | {cells} | {rs} |\n")
    out.append("\n")
    return "".join(out)


def md_scaling(series):
    parts = []
    for fam in sorted(series):
        for name in sorted(series[fam]):
            libs = series[fam][name]
            ns = sorted({n for pts in libs.values() for n, _ in pts})
            table = {lib: dict(pts) for lib, pts in libs.items()}
            if not set(table) <= set(LIB_ORDER):
                parts.append(md_variants(fam, name, table, ns))
                continue
            parts.append(
                f"#### {fam}: {name}\n\n| n | cygrad | NumPy | torch | cygrad/torch "
                "| cygrad/NumPy |\n|---:|---:|---:|---:|---:|---:|\n"
            )
            for n in ns:
                c = table.get("cygrad", {}).get(n)
                np_ = table.get("numpy", {}).get(n)
                t = table.get("torch", {}).get(n)
                parts.append(
                    f"| {n:,} | {fmt_time(c)} | {fmt_time(np_)} | {fmt_time(t)} "
                    f"| {fmt_ratio(ratio(c, t))} | {fmt_ratio(ratio(c, np_))} |\n"
                )
            parts.append("\n")
    return "".join(parts)


def graph_linearity(series):
    """Per library: t(10^6 nodes) / t(10^5 nodes) of the chain backward."""
    out = {}
    for libs in series.get("graph", {}).values():
        for lib, pts in libs.items():
            d = dict(pts)
            if 10**5 in d and 10**6 in d:
                out[lib] = d[10**6] / d[10**5]
    return out


# ---------------------------------------------------------------------------
# machine


def md_machine(data, path):
    mi = data.get("machine_info") or {}
    cb = mi.get("cygrad_bench") or {}
    cpu = mi.get("cpu") or {}
    commit = cb.get("commit") or (data.get("commit_info") or {}).get("id", "?")
    machine = (
        f"- machine: {cb.get('cpu') or cpu.get('brand_raw', '?')}, "
        f"{cb.get('logical_cpus') or cpu.get('count', '?')} logical CPUs, "
        f"{mi.get('system', '?')} {mi.get('release', '')}, "
        f"Python {cb.get('python') or mi.get('python_version', '?')}"
    )
    threads = (
        f"- threads: {cb.get('requested', '?')} requested; torch "
        f"{cb.get('torch', '?')}, cygrad {cb.get('cygrad', '?')}"
    )
    versions = (
        f"- versions: torch {cb.get('torch_version', '?')}, NumPy "
        f"{cb.get('numpy_version', '?')}, cygrad {cb.get('cygrad_version', '?')} "
        f"at commit {commit}"
    )
    lines = [
        f"- JSON: `{os.path.basename(path)}`, run {data.get('datetime', '?')}",
        f"- command: `{' '.join(cb.get('argv', [])) or '?'}`",
        machine,
        threads,
        versions,
    ]
    pools = cb.get("threadpool_info")
    if isinstance(pools, list):
        for p in pools:
            lines.append(
                f"- {p.get('user_api')}: {p.get('internal_api')} {p.get('version') or ''}"
                f" ({p.get('architecture') or p.get('threading_layer') or ''}), "
                f"{p.get('num_threads')} threads, `{os.path.basename(p.get('filepath', ''))}`"
            )
    elif pools:
        lines.append(f"- BLAS: {pools}")
    env = cb.get("env") or {}
    if env:
        lines.append(
            "- environment: "
            + ", ".join(f"{k}={'unset' if v is None else v}" for k, v in env.items())
        )
    if cb.get("loadavg_start") is not None:
        lines.append(
            f"- load average (1 min) at start / end: {cb.get('loadavg_start')} / "
            f"{cb.get('loadavg_end', '?')} (above the thread count, other work "
            "shared the cores and timings are noisier)"
        )
    if cb.get("fast_mode"):
        lines.append("- **fast mode** (tiny sizes, one round): not real figures")
    return "\n".join(lines) + "\n"


def blas_label(data):
    pools = ((data.get("machine_info") or {}).get("cygrad_bench") or {}).get(
        "threadpool_info"
    )
    if isinstance(pools, list):
        for p in pools:
            if p.get("user_api") == "blas":
                return f"{p.get('internal_api')} {p.get('version')}"
    return "unknown BLAS"


# ---------------------------------------------------------------------------
# plots


def write_plots(series, out_dir, stat="min"):
    """One PNG per family; returns the file names, or a message string."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed: no plots (pip install matplotlib)"
    written = []
    colors = {"cygrad": "tab:red", "numpy": "tab:blue", "torch": "tab:orange"}
    for fam in sorted(series):
        names = sorted(series[fam])
        fig, axes = plt.subplots(
            1, len(names), figsize=(4.2 * len(names), 3.4), squeeze=False
        )
        for ax, name in zip(axes[0], names):
            for lib in sorted(series[fam][name], key=_lib_key):
                pts = series[fam][name][lib]
                ax.loglog(
                    [n for n, _ in pts],
                    [t for _, t in pts],
                    marker="o",
                    markersize=3,
                    label=lib,
                    color=colors.get(lib),
                )
            ax.set_title(name, fontsize=10)
            ax.set_xlabel("graph nodes" if fam == "graph" else "elements")
            ax.set_ylabel(f"{stat} time per call (s)")
            ax.grid(True, which="major", alpha=0.3)
            ax.legend(fontsize=8)
        fig.suptitle(f"{fam} scaling", fontsize=11)
        fig.tight_layout()
        fname = f"scaling_{fam}.png"
        fig.savefig(os.path.join(out_dir, fname), dpi=72)
        plt.close(fig)
        written.append(fname)
    return written


def _lib_key(lib):
    return (LIB_ORDER.index(lib) if lib in LIB_ORDER else len(LIB_ORDER), lib)


# ---------------------------------------------------------------------------


def render(runs, entries, plots, stat="min", notes=None):
    """RESULTS.md text; ``runs`` is [(path, data)], the last one the newest."""
    groups = group_entries(e for e in entries if "series" not in e["extra"])
    rows = summary_rows(groups)
    if len(runs) > 1:
        for r in rows:
            k = sorted({e["run"] for e in groups[r["group"]].values()})
            note = "run " + ", ".join(map(str, k))
            r["notes"] = f"{note}; {r['notes']}" if r["notes"] else note
    series = scaling_series(entries)
    data = runs[-1][1]
    cb = (data.get("machine_info") or {}).get("cygrad_bench") or {}
    if len(runs) == 1:
        machine = md_machine(data, runs[0][0])
    else:
        machine = "".join(
            f"Run {k}:\n\n{md_machine(d, p)}\n" for k, (p, d) in enumerate(runs, 1)
        )
    out = [
        "# cygrad benchmark results\n\n",
        (
            "Generated by `python -m benchmarks.report` from a pytest-benchmark "
            f"JSON. Times are the {STAT_WORDS[stat]} of each benchmark's rounds; "
            "ratios are cygrad's time over the peer's (below 1: cygrad is "
            "faster). NumPy is a hand-written "
            "forward and backward of the same math (no autograd overhead). "
            f"BLAS: {blas_label(data)}; threads per library: "
            f"{cb.get('requested', '?')} (cygrad reports {cb.get('cygrad', '?')}, "
            f"torch {cb.get('torch', '?')}).\n\n"
        ),
        "## Machine\n\n",
        machine,
        "\n## Cases\n\n",
        md_summary(rows) if rows else "No case benchmarks in this JSON.\n",
    ]
    by_verdict = defaultdict(list)
    for r in rows:
        if r["verdict"]:
            by_verdict[r["verdict"]].append(r["group"])
    out.append(
        f"\nTargets: {len(by_verdict['met'])} met, "
        f"{len(by_verdict['MISSED'])} missed"
        + (f" ({', '.join(by_verdict['MISSED'])})" if by_verdict["MISSED"] else "")
        + f", {len(by_verdict['n/a'])} not measurable in this run"
        + (f" ({', '.join(by_verdict['n/a'])})" if by_verdict["n/a"] else "")
        + ".\n"
    )
    if notes:
        out.append("\n## Notes\n\n" + notes.strip() + "\n")
    if series:
        out.append("\n## Scaling\n\n")
        lin = graph_linearity(series)
        if lin:
            out.append(
                "Backward time of the 10^6-node chain over the 10^5-node one "
                "(target ≤ 12x for cygrad, #8): "
                + ", ".join(f"{lib} {v:.3g}x" for lib, v in sorted(lin.items()))
                + ".\n\n"
            )
        if isinstance(plots, list):
            out.extend(f"![{p}]({p})\n\n" for p in plots)
        elif plots:
            out.append(f"_{plots}_\n\n")
        out.append(md_scaling(series))
    return "".join(out)


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.report", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "json",
        nargs="*",
        help="pytest-benchmark JSON(s); groups in later files replace earlier "
        "ones (default: newest in .benchmarks/)",
    )
    parser.add_argument(
        "--out", default="benchmarks", help="output directory (default: benchmarks/)"
    )
    parser.add_argument(
        "--stat", choices=STATS, default="min", help="statistic of the rounds"
    )
    parser.add_argument(
        "--notes", help="a Markdown file appended to RESULTS.md (analysis, profiles)"
    )
    parser.add_argument("--no-plots", action="store_true", help="write only RESULTS.md")
    args = parser.parse_args(argv)
    paths = args.json or [p for p in [find_latest_json()] if p]
    if not paths:
        parser.error("no JSON given and none found under .benchmarks/")
    runs, entries = load_many(paths, args.stat)
    os.makedirs(args.out, exist_ok=True)
    series = scaling_series(entries)
    plots = (
        [] if args.no_plots or not series else write_plots(series, args.out, args.stat)
    )
    if isinstance(plots, str):
        print(plots, file=sys.stderr)
    notes = None
    if args.notes:
        with open(args.notes) as f:
            notes = f.read()
    text = render(runs, entries, plots, args.stat, notes)
    results = os.path.join(args.out, "RESULTS.md")
    with open(results, "w") as f:
        f.write(text)
    print(
        f"wrote {results}"
        + (f" and {', '.join(plots)}" if isinstance(plots, list) and plots else "")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

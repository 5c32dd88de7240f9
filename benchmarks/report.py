#!/usr/bin/env python3
"""benchmarks/report.py - the tables of scripts/bench's report.

Usage: benchmarks/report.py TABLE ARGS...

Reads JSON-lines files (lockbench's, the peers', lock_variants',
asyncbench's, handoff_split's) and prints markdown on stdout. Python 3's
standard library only (Debian's python3). scripts/bench calls it for every
table; benchmarks/check_report.sh feeds it rows of its own.

Tables:
  lockbench_table JSONL LOG   zklock's own rows, with resident memory after each
  memory_table JSONL          the memory row, if any
  side_by_side JSONL...       every library's rows, grouped by workload
  ratios JSONL...             zklock against Curator, the best valid peer, the floor
  ratios_by_round DIR...      the ratios of every round (DIR/*.jsonl), and their median
  scale_table DIR...          contended at each session count, medians over the rounds
  threads_table DIR...        the threads workload, medians over the rounds
  lines_table DIR...          several deep lines at once (DIR/lines/*.jsonl), by round
  targets_table PROCS DIR...  issue 38's targets: across processes (PROCS, bench-procs'
                              JSON lines; a missing file leaves those rows out), the
                              scale, threads and lines studies (DIR...)
  variants_table JSONL        lock_variants' rows
  split_table JSONL           handoff_split's rows
  async_table JSONL           asyncbench's rows as three small tables
Helpers for scripts/bench:
  tag_round R                 stdin's JSON lines with "round": R added, on stdout
  variants_dat JSONL DIR      DIR/plot-VARIANT.dat per variant (N, notifications,
                              requests per hand-off); prints the variants' names

A peer's row with errors is invalid: never the best peer. Medians of an even
count are the mean of the middle two; rounding is half away from zero.
"""
import glob
import json
import math
import os
import re
import statistics
import sys

ORDER = {"uncontended": 0, "contended": 1, "independent": 2, "rwlock": 3, "semaphore": 4,
         "floor": 5, "threads": 6}
NUMERIC = re.compile(r"^[-+0-9.,/x%() ]+$")


def order(w):
    return ORDER.get(w, 9)


def num(x, k):
    """Field k of row x as a sort key: none first, as jq sorts null."""
    v = x.get(k)
    return float("-inf") if v is None else v


def r(x, n):
    """x with n decimals, rounded half away from zero; '-' for none."""
    if x is None:
        return "-"
    v = math.floor(abs(x) * 10 ** n + 0.5)
    s = ("-" if x < 0 and v else "") + str(v // 10 ** n)
    return s + ("." + str(v % 10 ** n).zfill(n) if n > 0 else "")


def s(x):
    """A value as text: whole numbers without a fraction, none as null."""
    if x is None:
        return "null"
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, float) and x.is_integer():
        return str(int(x))
    return str(x)


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def base(lib):
    """A library's name without its version."""
    return re.sub(r"-[0-9][0-9.]*$", "", lib)


def zk(row):
    return row["lib"].startswith("zklock")


def load(*paths):
    """Every JSON value of the files, in order."""
    out, dec = [], json.JSONDecoder()
    for p in paths:
        with open(p, encoding="utf-8") as f:
            text = f.read()
        i = 0
        while True:
            while i < len(text) and text[i].isspace():
                i += 1
            if i >= len(text):
                break
            v, i = dec.raw_decode(text, i)
            out.append(v)
    return out


def rows_of(values):
    return [v for v in values if isinstance(v, dict) and "ops_per_s" in v]


def dir_rows(d):
    return load(*sorted(glob.glob(os.path.join(d, "*.jsonl"))))


def md_table(rows):
    """Rows of cells (the first is the header) as an aligned markdown table;
    columns whose cells all look like numbers are right-aligned."""
    rows = [[str(c) for c in row] for row in rows]
    nf = max((len(x) for x in rows), default=0)
    rows = [x + [""] * (nf - len(x)) for x in rows]
    w = [max(3, max(len(x[i]) for x in rows)) for i in range(nf)]
    num = [len(rows) > 1 and all(x[i] == "" or NUMERIC.match(x[i]) for x in rows[1:])
           for i in range(nf)]
    out = []
    for k, x in enumerate(rows):
        out.append("|" + "".join(" " + (c.rjust(w[i]) if num[i] and k > 0 else c.ljust(w[i])) + " |"
                                 for i, c in enumerate(x)))
        if k == 0:
            out.append("|" + "".join(" " + "-" * (w[i] - 1) + (":" if num[i] else "-") + " |"
                                     for i in range(nf)))
    return "\n".join(out)


def g(x, k):
    """Field k of row x as text ("null" when missing)."""
    return s(x.get(k))


def reqop(row):
    ops, req = row.get("ops") or 0, row.get("zk_requests")
    return r(req / ops, 2) if ops > 0 and req is not None and req >= 0 else "-"


def rss_map(log):
    """{"workload/clients": rss_kb} from lockbench's "done" lines."""
    m = {}
    with open(log, encoding="utf-8", errors="replace") as f:
        for line in f:
            if not line.startswith("lockbench: done workload="):
                continue
            kv = dict(x.split("=", 1) for x in line.split() if "=" in x)
            if kv.get("workload") != "memory" and kv.get("rss_kb"):
                m[f"{kv['workload']}/{kv.get('clients', '')}"] = float(kv["rss_kb"])
    return m


def lockbench_table(jsonl, log):
    rss = rss_map(log)
    out = [["workload", "clients", "ops/s", "zk req/op", "acq p50 us", "acq p99 us", "rel p50 us",
            "rel p99 us", "min/max client ops", "errors", "RSS after (MiB)"]]
    for x in sorted(rows_of(load(jsonl)), key=lambda x: (order(x["workload"]), num(x, "clients"))):
        kb = rss.get(f"{x['workload']}/{x['clients']}")
        out.append([x["workload"], g(x, "clients"), r(x["ops_per_s"], 1), reqop(x),
                    g(x, "acquire_p50_us"), g(x, "acquire_p99_us"), g(x, "release_p50_us"),
                    g(x, "release_p99_us"), f"{g(x, 'min_client_ops')}/{g(x, 'max_client_ops')}",
                    g(x, "errors"), r(kb / 1024, 1) if kb is not None else "-"])
    print(md_table(out))


def memory_table(jsonl):
    mem = [x for x in load(jsonl) if isinstance(x, dict) and x.get("workload") == "memory"]
    if not mem:
        return
    out = [["locks held", "RSS with client (kB)", "RSS holding all (kB)", "kB per lock",
            "beyond client (MiB)", "< 4 MiB", "errors"]]
    for x in mem:
        grew = x["rss_kb_after"] - x["rss_kb_before"]
        out.append([x["locks"], x["rss_kb_before"], x["rss_kb_after"], r(x["kb_per_lock"], 2),
                    r(grew / 1024, 2), "yes" if grew < 4096 else "NO", x["errors"]])
    print(md_table(out))


def side_by_side(*files):
    out = [["workload", "clients", "lib", "ops/s", "zk req/op", "acq p50/p99 us",
            "rel p50/p99 us", "min/max client ops", "errors"]]
    rows = sorted(rows_of(load(*files)),
                  key=lambda x: (order(x["workload"]), num(x, "clients"), not zk(x), x["lib"]))
    for x in rows:
        out.append([x["workload"], g(x, "clients"), x["lib"], r(x["ops_per_s"], 1), reqop(x),
                    f"{g(x, 'acquire_p50_us')}/{g(x, 'acquire_p99_us')}",
                    f"{g(x, 'release_p50_us')}/{g(x, 'release_p99_us')}",
                    f"{g(x, 'min_client_ops')}/{g(x, 'max_client_ops')}",
                    f"{x['errors']} INVALID" if (x.get("errors") or 0) > 0 else g(x, "errors")])
    print(md_table(out))


def best_of(rows):
    """The fastest row (the last of equals), or None."""
    best = None
    for x in rows:
        if best is None or x["ops_per_s"] >= best["ops_per_s"]:
            best = x
    return best


def ratio_rows(values):
    """One dict per zklock row of one run: it, Curator's row, the best valid peer's, ratios."""
    rows = rows_of(values)
    mine = [x for x in rows if zk(x)]
    floor = next((x["ops_per_s"] for x in mine if x["workload"] == "floor"), None)
    out = []
    for me in sorted(mine, key=lambda x: (order(x["workload"]), x["clients"], x["lib"])):
        peers = [x for x in rows if x["workload"] == me["workload"] and
                 x["clients"] == me["clients"] and x["errors"] == 0 and not zk(x)]
        cur = next((x for x in peers if x["lib"].startswith("curator")), None)
        best = best_of(peers)
        out.append({"workload": me["workload"], "clients": me["clients"], "lib": base(me["lib"]),
                    "me": me, "cur": cur, "best": best,
                    "x_cur": me["ops_per_s"] / cur["ops_per_s"] if cur else None,
                    "x_best": me["ops_per_s"] / best["ops_per_s"] if best else None,
                    "x_floor": me["ops_per_s"] / floor
                    if me["workload"] == "uncontended" and floor else None})
    return out


def ratios(*files):
    out = [["workload", "clients", "zklock", "zklock ops/s", "curator ops/s", "zklock/curator",
            "best peer", "zklock/best peer", "zklock/floor", "zklock req/op", "curator req/op"]]
    for x in ratio_rows(load(*files)):
        cur, best = x["cur"], x["best"]
        out.append([x["workload"], x["clients"], x["lib"], r(x["me"]["ops_per_s"], 1),
                    r(cur["ops_per_s"] if cur else None, 1), r(x["x_cur"], 2),
                    f"{best['lib']} {r(best['ops_per_s'], 1)}" if best else "-",
                    r(x["x_best"], 2), r(x["x_floor"], 2) if x["x_floor"] else "",
                    reqop(x["me"]), reqop(cur) if cur else "-"])
    print(md_table(out))


def ratios_by_round(*dirs):
    every = [x for d in dirs for x in ratio_rows(dir_rows(d))]
    groups = {}
    for x in every:
        groups.setdefault((order(x["workload"]), x["clients"], x["lib"]), []).append(x)
    out = [["workload", "clients", "zklock", "zklock/curator by round", "median",
            "zklock/best peer by round", "median", "zklock/floor by round", "median"]]
    for _, g in sorted(groups.items()):
        unc = g[0]["workload"] == "uncontended"

        def each(k, g=g):
            return " ".join(r(x[k], 2) for x in g)
        out.append([g[0]["workload"], g[0]["clients"], g[0]["lib"],
                    each("x_cur"), r(med(x["x_cur"] for x in g), 2),
                    each("x_best"), r(med(x["x_best"] for x in g), 2),
                    each("x_floor") if unc else "",
                    r(med(x["x_floor"] for x in g), 2) if unc else ""])
    print(md_table(out))


def variants_table(jsonl):
    out = [["variant", "N", "handoffs/s", "zk req/handoff", "notif/handoff (client)",
            "notif/handoff (server)", "acq p50 us", "acq p99 us", "min/max client ops", "errors"]]
    for x in load(jsonl):
        if not isinstance(x, dict) or "variant" not in x:
            continue
        srv = x.get("server_notifications_per_handoff")
        out.append([x["variant"], x["clients"], r(x["handoffs_per_s"], 1),
                    r(x["requests_per_handoff"], 2), r(x["notifications_per_handoff"], 2),
                    "-" if srv is None or srv < 0 else r(srv, 2), x["acquire_p50_us"],
                    x["acquire_p99_us"], f"{x['min_client_ops']}/{x['max_client_ops']}",
                    x["errors"]])
    print(md_table(out))


def split_table(jsonl):
    out = [["lib", "sessions", "hand-offs", "server p50/mean us", "client p50/mean us",
            "hand-off p50/mean us", "hand-offs/s (1/mean)"]]
    rows = [x for x in load(jsonl) if isinstance(x, dict) and "handoff_mean_us" in x]
    for x in sorted(rows, key=lambda x: (x["sessions"], x["lib"])):
        mean = x["handoff_mean_us"]
        out.append([x["lib"], x["sessions"], x["handoffs"],
                    f"{x['server_p50_us']}/{x['server_mean_us']}",
                    f"{x['client_p50_us']}/{x['client_mean_us']}",
                    f"{x['handoff_p50_us']}/{mean}", r(1000000 / mean, 0) if mean > 0 else "-"])
    print(md_table(out))


def rounds_rows(dirs):
    """Every row of each round's directory, tagged with its round (from 1)."""
    return [dict(x, round=i) for i, d in enumerate(dirs, 1) for x in rows_of(dir_rows(d))]


def by_round(rows):
    groups = {}
    for x in rows:
        groups.setdefault(x["round"], []).append(x)
    return [groups[k] for k in sorted(groups)]


def round_ratio(rows):
    """zklock's first row over the best valid peer's, in one round's rows; None without both."""
    z = next((x for x in rows if zk(x)), None)
    b = best_of([x for x in rows if not zk(x) and x["errors"] == 0])
    return z["ops_per_s"] / b["ops_per_s"] if z and b else None


def high_against_low(mine):
    """zklock's contended rows: the smallest and largest session counts, and
    each round's rate and client CPU per acquire at the largest over the smallest."""
    lo = min((x["clients"] for x in mine), default=None)
    hi = max((x["clients"] for x in mine), default=None)
    rate, cpu = [], []
    for g in by_round(mine):
        a = next((x for x in g if x["clients"] == lo), None)
        b = next((x for x in g if x["clients"] == hi), None)
        if a and b and a["ops_per_s"] > 0:
            rate.append(b["ops_per_s"] / a["ops_per_s"])
            if a.get("client_cpu_us_per_op") and b.get("client_cpu_us_per_op") is not None:
                cpu.append(b["client_cpu_us_per_op"] / a["client_cpu_us_per_op"])
    return lo, hi, rate, cpu


def scale_table(*dirs):
    every = [x for x in rounds_rows(dirs) if x["workload"] == "contended"]
    libs = sorted(sorted({base(x["lib"]) for x in every}), key=lambda lib: not lib.startswith("zklock"))
    out = [["sessions"] + [f"{lib} ops/s" for lib in libs] +
           ["zklock/best peer", "zklock p99/p50", "zklock CPU us/acquire"]]
    for n in sorted({x["clients"] for x in every}):
        at = [x for x in every if x["clients"] == n]
        mine = [x for x in at if zk(x)]
        out.append([n] + [r(med(x["ops_per_s"] for x in at
                                if base(x["lib"]) == lib and x["errors"] == 0), 1) for lib in libs] +
                   [r(med(round_ratio(g) for g in by_round(at)), 2),
                    r(med(x["acquire_p99_us"] / x["acquire_p50_us"] for x in mine), 2),
                    r(med(x.get("client_cpu_us_per_op") for x in mine), 0)])
    print(md_table(out))
    print()
    lo, hi, rate, cpu = high_against_low([x for x in every if zk(x)])
    print(f"zklock at {s(hi)} sessions against {s(lo)}, by round: rate "
          f"{' '.join(r(x, 2) for x in rate)} (median {r(med(rate), 2)}); client CPU per acquire "
          f"{' '.join(r(x, 2) for x in cpu)} (median {r(med(cpu), 2)}).")


def threads_table(*dirs):
    every = [x for x in rounds_rows(dirs) if x["workload"] == "threads"]
    groups = {}
    for x in every:
        groups.setdefault(base(x["lib"]), []).append(x)
    out = [["lib", "threads", "ops/s (median)", "by round", "acq p50/p99 us", "errors"]]
    for lib in sorted(sorted(groups), key=lambda lib: not lib.startswith("zklock")):
        g = groups[lib]
        out.append([lib, g[0]["clients"], r(med(x["ops_per_s"] for x in g if x["errors"] == 0), 1),
                    " ".join(r(x["ops_per_s"], 0) for x in sorted(g, key=lambda x: x["round"])),
                    f"{s(med(x['acquire_p50_us'] for x in g))}/{s(med(x['acquire_p99_us'] for x in g))}",
                    sum(x["errors"] for x in g)])
    print(md_table(out))
    print()
    xs = [round_ratio(g) for g in by_round(every)]
    z = [x for x in every if zk(x)]

    def most(k, none=-1):
        return max((x.get(k, none) if x.get(k) is not None else none for x in z), default=none)

    z0 = z[0] if z else {}
    lat, holds, span = most("server_max_latency_ms"), most("remote_worst_local_holds"), \
        most("remote_worst_local_span_us")
    held = bool(z) and all(
        x.get("remote_worst_local_holds") is not None and
        x.get("local_handoff_max_streak") is not None and
        x["remote_worst_local_holds"] <= x["local_handoff_max_streak"] and
        x.get("remote_worst_local_span_us") is not None and x.get("local_handoff_max_ms") is not None
        and x["remote_worst_local_span_us"] <= 1000 * x["local_handoff_max_ms"] for x in z)
    print(f"zklock / best peer by round: {' '.join(r(x, 1) for x in xs)} (median {r(med(xs), 1)}). "
          f"Local hand-off bounds: {s(z0.get('local_handoff_max_streak', '-'))} holds or "
          f"{s(z0.get('local_handoff_max_ms', '-'))} ms a streak; {s(z0.get('remote_clients', 0))} other "
          f"clients contended in the same runs: {s(sum(x.get('remote_ops') or 0 for x in z))} holds, "
          f"acquire p50 {r(med(x.get('remote_acquire_p50_us') or 0 for x in z), 0)} us, worst wait "
          f"{r(most('remote_worst_wait_us', 0) / 1000, 1)} ms (worst request latency at the server in "
          f"those rows: {'-' if lat < 0 else f'{s(lat)} ms'}); holds of the threads during any one "
          f"wait of theirs: at most {'-' if holds < 0 else s(holds)}, over at most "
          f"{'-' if span < 0 else r(span / 1000, 1) + ' ms'} (the bound: one streak) "
          f"{'held' if held else 'NOT held'}; "
          f"{s(sum(x.get('local_handoffs') or 0 for x in z))} holds passed between threads.")


def lines_rows(dirs):
    """The --lines rows of each round (DIR/lines/*.jsonl), tagged with their round."""
    out = []
    for i, d in enumerate(dirs, 1):
        files = sorted(glob.glob(os.path.join(d, "lines", "*.jsonl")))
        out += [dict(x, round=i) for x in rows_of(load(*files)) if "lines" in x]
    return out


def turns(x):
    """Row x's longest acquire in turns of its line: a line's sessions over its rate."""
    per = x["clients"] / x["lines"]
    rate = x["ops_per_s"] / x["lines"]
    return x["acquire_max_us"] / 1e6 * rate / per if rate > 0 and per > 0 else None


def lines_split(rows):
    """The rows on several lines and the rows on one."""
    return [x for x in rows if x["lines"] > 1], [x for x in rows if x["lines"] == 1]


def lines_table(*dirs):
    rows = sorted(lines_rows(dirs), key=lambda x: (x["round"], -x["lines"]))
    out = [["round", "lines x sessions", "ops/s", "acquire p50 ms", "longest acquire s",
            "a line's turn s", "longest, in turns", "errors"]]
    for x in rows:
        per = x["clients"] // x["lines"]
        turn = per / (x["ops_per_s"] / x["lines"]) if x["ops_per_s"] > 0 else None
        out.append([x["round"], f"{s(x['lines'])} x {s(per)}", r(x["ops_per_s"], 1),
                    r(x["acquire_p50_us"] / 1000, 0), r(x["acquire_max_us"] / 1e6, 2), r(turn, 2),
                    r(turns(x), 2), x["errors"]])
    print(md_table(out))
    many, one = lines_split(rows)
    print()
    print(f"The longest acquire in turns of its line, median over the rounds: "
          f"{r(med(turns(x) for x in many), 2)} on {s(many[0]['lines']) if many else '-'} lines "
          f"({', '.join(r(turns(x), 2) for x in many)}), {r(med(turns(x) for x in one), 2)} on one "
          f"({', '.join(r(turns(x), 2) for x in one)}).")


def by_round_list(xs):
    """'median (a, b, c)' of the rounds' values; '-' without any."""
    xs = [x for x in xs if x is not None]
    return f"{r(med(xs), 2)} ({', '.join(r(x, 2) for x in xs)})" if xs else "-"


def procs_ratios(rows, lib):
    """N -> [lib's rate over the best valid peer's, each round], and the best peers' names."""
    out, best = {}, set()
    for g in by_round(rows):
        for n in sorted({x["processes"] for x in g}):
            at = [x for x in g if x["processes"] == n]
            mine = next((x for x in at if x["lib"] == lib and x["errors"] == 0), None)
            b = best_of([x for x in at if not zk(x) and x["errors"] == 0])
            if mine and b:
                out.setdefault(n, []).append(mine["ops_per_s"] / b["ops_per_s"])
                best.add(b["lib"])
    return out, best


def targets_table(procs, *dirs):
    out = [["target", "figure: median (by round)", "holds"]]
    best = set()

    def row(target, figures, ok):
        out.append([target, figures, "yes" if ok else "NO"])

    procs_rows = rows_of(load(procs)) if os.path.exists(procs) else []
    for lib, what in (("zklock", "zklock at least 1.5x the best peer"),
                      ("zklock-hints-off", "the same with the in-process room off")):
        ratios_n, b = procs_ratios(procs_rows, lib)
        best |= b
        if ratios_n:
            row(f"across processes, N = {', '.join(s(n) for n in ratios_n)}: {what}",
                "; ".join(f"N = {s(n)}: {by_round_list(v)}" for n, v in ratios_n.items()),
                all(med(v) >= 1.5 for v in ratios_n.values()))
    every = rounds_rows(dirs)
    cont = [x for x in every if x["workload"] == "contended"]
    per_n = {}
    for n in sorted({x["clients"] for x in cont}):
        for g in by_round([x for x in cont if x["clients"] == n]):
            per_n.setdefault(n, []).append(round_ratio(g))
            b = best_of([x for x in g if not zk(x) and x["errors"] == 0])
            if b:
                best.add(b["lib"])
    if per_n and any(v != [None] * len(v) for v in per_n.values()):
        row(f"one process, contended {', '.join(s(n) for n in per_n)} sessions: "
            f"zklock at least 1.5x the best peer",
            "; ".join(f"{s(n)}: {by_round_list(v)}" for n, v in per_n.items()),
            all(med(v) is not None and med(v) >= 1.5 for v in per_n.values()))
    lo, hi, xs, _ = high_against_low([x for x in cont if zk(x)])
    if lo != hi:
        row(f"zklock at {s(hi)} sessions against {s(lo)}: at least 0.6", by_round_list(xs),
            bool(xs) and med(xs) >= 0.6)
    th = [round_ratio(g) for g in by_round([x for x in every if x["workload"] == "threads"])]
    if any(x is not None for x in th):
        row("threads of one process on one object: zklock at least 20x the best peer",
            by_round_list(th), med(th) is not None and med(th) >= 20)
    many, one = lines_split(lines_rows(dirs))
    if many:
        xs = []
        for g in by_round(many + one):
            m, o = lines_split(g)
            if m and o and turns(m[0]) is not None and turns(o[0]):
                xs.append(turns(m[0]) / turns(o[0]))
        row(f"{s(many[0]['lines'])} deep lines at once: no acquire waits on a bound one line would not "
            f"(the longest acquire, in turns of its line, at most 2x one line's)",
            f"{by_round_list(xs)}; in turns: {s(many[0]['lines'])} lines "
            f"{by_round_list(turns(x) for x in many)}, one line {by_round_list(turns(x) for x in one)}",
            bool(xs) and med(xs) <= 2 and all(x["errors"] == 0 for x in many + one))
    print(md_table(out))
    if best:
        print()
        print(f"Best peer: {', '.join(sorted(base(b) for b in best))} (the fastest error-free peer of "
              f"each round and row).")


def upper_med(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def rnd1(x):
    return s(math.floor(abs(x) * 10 + 0.5) / 10 * (-1 if x < 0 else 1))


ASYNC_HEAD = """\
Pending waits, all started from one thread: what the process grew by while they wait, per
wait, the ZooKeeper client's own share included (goal: under 2 KiB a wait beyond it), and its
threads before and after. Heap: bytes in use (mallinfo2, every arena), run with glibc's
per-thread caches off (GLIBC_TUNABLES=glibc.malloc.tcache_count=0), whose kept chunks read as
in use. RSS: after malloc_trim. Each workload runs in a process of its own, the rounds
alternating their order; the figures are medians over the rounds. The two line workloads
first drain one wait per session on another path, so that what a session's threads touch
once (stack pages, a malloc arena) is not counted per wait. async_pending_raw and
async_line_raw are the same waits made by raw libzookeeper_mt sessions (create, list, watch
the node ahead; 3 requests a wait): the ZooKeeper client's own share, which the last column
takes off (the median of the rounds' differences). zklock's waiter next in line also watches
its own node (4 requests a wait): no hand-off without it proven there (issue 56). Every
workload reads memory once its last request's answer has had 200 ms to come back, then every
100 ms until the heap stops changing (two readings within a byte a wait): what the waits
hold, not what is still on its way through the library's threads. The first reading, with
that in it, is in brackets. A session's waits share their listings (src/requests/pending.c),
and a listing of 16 KiB or more is mapped on its own, out of the malloc arenas
(src/requests/call.c).

| workload | waits | sessions | requests per wait | heap bytes per wait (first reading) | RSS bytes per wait (by round) \
| threads before / after | line drained, grants/s | heap / RSS beyond the raw client (by round) |
|---|--:|--:|--:|--:|--:|--:|--:|--:|"""


def first_reading(g):
    """' (N)': the median heap a wait at the first reading, before the heap settled (if kept)."""
    xs = [x["heap_bytes_per_wait_unsettled"] for x in g if "heap_bytes_per_wait_unsettled" in x]
    return f" ({s(upper_med(xs))})" if xs else ""


def async_table(jsonl):
    rows = [x for x in load(jsonl) if isinstance(x, dict)]
    print(ASYNC_HEAD)
    pairs = {}  # a zklock workload: its rounds' (zklock row, raw row)
    for w in ("async_pending", "async_line"):
        pairs[w] = []
        for g in by_round([x for x in rows if x.get("workload") in (w, w + "_raw")]):
            ours = next((x for x in g if x["workload"] == w), None)
            raw = next((x for x in g if x["workload"] == w + "_raw"), None)
            if ours and raw:
                pairs[w].append((ours, raw))
    for w in ("async_pending", "async_pending_raw", "async_line", "async_line_raw"):
        g = [x for x in rows if x.get("workload") == w]
        if not g:
            continue
        beyond = "-"
        if pairs.get(w):
            d = [a["bytes_per_wait"] - b["bytes_per_wait"] for a, b in pairs[w]]
            beyond = (f"{s(upper_med(a['heap_bytes_per_wait'] - b['heap_bytes_per_wait'] for a, b in pairs[w]))}"
                      f" / {s(upper_med(d))} ({', '.join(s(x) for x in d)})")
        print(f"| {w} | {s(g[0]['waits'])} | {s(g[0]['sessions'])} | "
              f"{s(upper_med(x['requests_per_wait'] for x in g))} | "
              f"{s(upper_med(x['heap_bytes_per_wait'] for x in g))}{first_reading(g)} | "
              f"{s(upper_med(x['bytes_per_wait'] for x in g))} "
              f"({', '.join(s(x['bytes_per_wait']) for x in sorted(g, key=lambda x: x['round']))}) | "
              f"{s(g[0]['threads_before'])} / {s(g[0]['threads_after'])} | "
              f"{rnd1(upper_med(x['handoffs_per_s'] for x in g)) if w == 'async_line' else '-'} | "
              f"{beyond} |")
    print()
    print("Contended hand-offs, async (each grant released and asked again from its callback) beside")
    print("blocking (a thread each), on one path, same run, alternating which goes first:")
    print()
    print("| round | async ops/s | blocking ops/s | async / blocking |")
    print("|--:|--:|--:|--:|")
    cont = [x for x in rows if x.get("workload") in ("async_contended", "blocking_contended")]
    xs = []
    for g in by_round(cont):
        a = next((x["ops_per_s"] for x in g if x["workload"] == "async_contended"), None)
        b = next((x["ops_per_s"] for x in g if x["workload"] == "blocking_contended"), None)
        if a is None or b is None:
            continue
        xs.append(a / b)
        print(f"| {g[0]['round'] + 1} | {s(a)} | {s(b)} | {s(math.floor(a / b * 100 + 0.5) / 100)} |")
    if xs:
        print(f"\nMedian async / blocking: {s(math.floor(upper_med(xs) * 100 + 0.5) / 100)} "
              f"({len(xs)} rounds).")


def tag_round(n):
    for line in sys.stdin:
        if line.strip():
            row = json.loads(line)
            row["round"] = int(n)
            print(json.dumps(row, separators=(",", ":")))


def variants_dat(jsonl, d):
    names = []
    for x in load(jsonl):
        if isinstance(x, dict) and "variant" in x:
            v = x["variant"]
            if v not in names:
                names.append(v)
                open(os.path.join(d, f"plot-{v}.dat"), "w", encoding="utf-8").close()
            with open(os.path.join(d, f"plot-{v}.dat"), "a", encoding="utf-8") as f:
                f.write(f"{s(x['clients'])} {s(x['notifications_per_handoff'])} "
                        f"{s(x['requests_per_handoff'])}\n")
    print("\n".join(names))


TABLES = {"lockbench_table": (lockbench_table, 2, 2), "memory_table": (memory_table, 1, 1),
          "side_by_side": (side_by_side, 1, None), "ratios": (ratios, 1, None),
          "ratios_by_round": (ratios_by_round, 1, None), "scale_table": (scale_table, 1, None),
          "threads_table": (threads_table, 1, None),
          "lines_table": (lines_table, 1, None), "targets_table": (targets_table, 1, None), "variants_table": (variants_table, 1, 1),
          "split_table": (split_table, 1, 1), "async_table": (async_table, 1, 1),
          "tag_round": (tag_round, 1, 1), "variants_dat": (variants_dat, 2, 2)}


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__, file=sys.stdout if len(argv) >= 2 else sys.stderr)
        return 0 if len(argv) >= 2 else 2
    if argv[1] not in TABLES:
        print(f"report.py: unknown table '{argv[1]}' ({', '.join(TABLES)})", file=sys.stderr)
        return 2
    fn, least, most = TABLES[argv[1]]
    args = argv[2:]
    if len(args) < least or (most is not None and len(args) > most):
        print(f"report.py: {argv[1]} takes {least}{'' if most == least else ' or more'} arguments",
              file=sys.stderr)
        return 2
    try:
        fn(*args)
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"report.py: {argv[1]}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

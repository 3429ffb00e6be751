#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""fencectl deadlocks, watch, trace and stats against a live daemon, on the
situations observe-scenario sets up: a two-process deadlock found within 1 s,
a three-process cycle through merged fences, a fence that will never signal,
a traced frame pipeline (events, slices, flows from signals to the waits
they released) and its statistics, and a traced timeline stepped by a process
it was passed to. Every JSON output is checked against the
schema in docs/fencectl.md and docs/trace-format.md, member by member.

usage: fencectl-observe-test.py FENCECTL SCENARIO   (env: FENCELINE_DAEMON)
"""
import json
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import time

from fl_schema import check, failures, validate  # tests/fencectl/fl_schema.py

FENCECTL, SCENARIO = sys.argv[1], sys.argv[2]

# docs/fencectl.md, "deadlocks --json".
FENCE_REF = {"id": int, "name": str}
WAIT = {"pid": int, "comm": str, "tid": int, "thread": str, "fence": FENCE_REF,
        "waited_ms": int, "timeout_ms": int}
LINK = {"pid": int, "comm": str, "tid": int, "thread": str, "waited_ms": int, "fence": FENCE_REF,
        "timeline": {"id": int, "name": str, "value": str, "point": int}, "signallers": [int]}
CYCLE = {"kind": str, "detected_ns": int, "cycle": [LINK],
         "closed_by": {"pid": int, "tid": int, "fence": int}, "refused": bool}
NEVER = {"kind": str, "detected_ns": int, "waits": [LINK]}
# docs/fencectl.md, "watch --json" (per_s, a number or null, is checked apart).
WATCH = {"version": int, "t_ns": int, "daemon": {"pid": int}, "clients": int,
         "timelines": [{"id": int, "name": str, "value": str, "pending": int}],
         "pending": [{"id": int, "name": str, "age_ms": float, "waiting_for": str}],
         "more_pending": int,
         "waiters": [{"pid": int, "tid": int, "thread": str, "fence": int, "waited_ms": int}]}
# docs/fencectl.md, "stats --json".
HIST = {"count": int, "mean_us": float, "p50_us": float, "p90_us": float, "p99_us": float,
        "max_us": float}
GROUP = {"name": str, "fences": int, "errors": int, "waits": int, "timeouts": int,
         "wait_errors": int, "signal_latency": HIST, "wait_time": HIST}
TL_GROUP = dict(GROUP, timeline=int)
STATS = {"version": int, "since_ns": int, "now_ns": int, "timelines": [TL_GROUP], "names": [GROUP]}


def validate_deadlocks(d):
    check(isinstance(d, dict), "deadlocks JSON is an object")
    if not isinstance(d, dict):
        return
    validate({k: d[k] for k in ("version", "checked_ns", "waits") if k in d},
             {"version": int, "checked_ns": int, "waits": [WAIT]}, "$")
    for k in d:
        check(k in ("version", "checked_ns", "waits", "deadlocks", "never_signal", "history"),
              f"$.{k} documented")
    for i, f in enumerate(d.get("deadlocks", [])):
        validate(f, CYCLE, f"$.deadlocks[{i}]")
    for i, f in enumerate(d.get("never_signal", [])):
        validate(f, NEVER, f"$.never_signal[{i}]")
    for i, f in enumerate(d.get("history", [])):
        validate(f, CYCLE if f.get("kind") == "cycle" else NEVER, f"$.history[{i}]")


def fencectl(*args, timeout=30):
    return subprocess.run([FENCECTL, *args], capture_output=True, text=True, timeout=timeout)


started = []


def start(*args):
    p = subprocess.Popen([SCENARIO, *args], stdout=subprocess.PIPE, text=True,
                         start_new_session=True)
    started.append(p)
    # A scenario that failed before it was ready must not hang the test.
    ready, _, _ = select.select([p.stdout], [], [], 30)
    line = p.stdout.readline().split() if ready else ["(no answer in 30 s)"]
    check(line[:1] == ["ready"], f"{args[0]}: scenario ready ({line})")
    return p, [int(x) for x in line[1:]]


def stop(p):
    started.remove(p)
    os.killpg(p.pid, signal.SIGTERM)
    p.wait(timeout=10)
    p.stdout.close()


def deadlocks_until(pred, secs=5.0):
    """fencectl deadlocks --json until pred(report) holds (the detector runs every 250 ms)."""
    end = time.monotonic() + secs
    while True:
        r = fencectl("deadlocks", "--json")
        d = json.loads(r.stdout) if r.returncode in (0, 4) else {}
        if pred(d) or time.monotonic() > end:
            return r, d
        time.sleep(0.1)


def cycle_test(mode, n, fence_ok):
    p, pids = start(mode)
    check(len(pids) == n, f"{mode}: {n} processes")
    r, d = deadlocks_until(lambda d: d.get("deadlocks"))
    check(r.returncode == 4, f"{mode}: deadlocks exits 4 when it finds one ({r.returncode})")
    validate_deadlocks(d)
    cycles = d.get("deadlocks", [])
    check(len(cycles) == 1, f"{mode}: one cycle ({len(cycles)})")
    if cycles:
        c = cycles[0]
        check(sorted(x["pid"] for x in c["cycle"]) == sorted(pids), f"{mode}: names every process")
        for x in c["cycle"]:
            check(fence_ok(x["fence"]["name"]), f"{mode}: names the fence ({x['fence']})")
            check(x["timeline"]["name"].startswith("ring-"), f"{mode}: names the timeline")
            check(x["timeline"]["point"] == (2 if n == 3 else 1) and x["timeline"]["value"] in ("0", "1"),
                  f"{mode}: point and value ({x['timeline']})")
            check(len(x["signallers"]) == 1 and x["signallers"][0] in pids and
                  x["signallers"][0] != x["pid"], f"{mode}: only another member can signal")
            check(x["tid"] == x["pid"], f"{mode}: the waiting thread")
        check(c["closed_by"]["pid"] == pids[-1], f"{mode}: closed by the last to wait")
        check(not c["refused"], f"{mode}: nobody asked for EDEADLK")
    # Found within 1 s of the wait that closed the cycle: its age at first detection.
    first = [h for h in d.get("history", []) if h.get("kind") == "cycle" and
             sorted(x["pid"] for x in h["cycle"]) == sorted(pids)]
    check(first, f"{mode}: kept in history")
    if first:
        latency = min(x["waited_ms"] for x in first[0]["cycle"])
        print(f"{mode}: detected {latency} ms after the cycle closed")
        check(latency <= 1000, f"{mode}: detected within 1 s ({latency} ms)")
    text = fencectl("deadlocks")
    check(text.returncode == 4 and f"a cycle of {n} processes" in text.stdout,
          f"{mode}: text report")
    if n == 2:
        # watch: two refreshes, the ring's timelines still, both threads waiting.
        w = fencectl("watch", "-n", "2", "--interval", "300")
        check(w.returncode == 0 and w.stdout.count("TIMELINE") == 2, "watch: two refreshes")
        check(all(f"ring-{i} #" in w.stdout for i in range(2)), "watch: the ring's timelines")
        rates = [l.split()[3] for l in w.stdout.splitlines() if re.match(r"ring-\d #\d+ ", l)]
        check(rates[:2] == ["-", "-"] and rates[2:] == ["0.0", "0.0"],
              f"watch: no rate at first, then a standstill ({rates})")
        check(all(f"({p}) " in w.stdout for p in pids), "watch: the waiting threads")
        check(w.stdout.count("ring-0-out #") >= 2, "watch: the pending fences")
        # watch --json: a line per refresh, each checked against the schema.
        wj = fencectl("watch", "--json", "-n", "2", "--interval", "300")
        lines = wj.stdout.splitlines()
        check(wj.returncode == 0 and len(lines) == 2, "watch --json: two lines")
        for k, line in enumerate(lines):
            o = json.loads(line)
            rates = [t.pop("per_s", "absent") for t in o.get("timelines", [])]
            check(all(r is None for r in rates) if k == 0 else
                  all(isinstance(r, (int, float)) for r in rates), f"watch --json: per_s {rates}")
            validate(o, WATCH, f"watch[{k}]")
            check(sorted(x["pid"] for x in o.get("waiters", [])) == sorted(pids),
                  "watch --json: the waiters")
    dump = json.loads(fencectl("dump", "--json").stdout)
    check(sorted(w["pid"] for w in dump.get("waiters", []) if w["pid"] in pids) == sorted(pids),
          f"{mode}: dump lists the waiters")
    stop(p)
    r, d = deadlocks_until(lambda d: not d.get("deadlocks"), 30)
    check(r.returncode == 0 and not d.get("deadlocks"), f"{mode}: gone once the processes are (exit {r.returncode}: {r.stderr.strip()})")


def never_test():
    p, pids = start("never")
    r, d = deadlocks_until(lambda d: d.get("never_signal"))
    validate_deadlocks(d)
    check(r.returncode == 4, "never: exit 4")
    ns = d.get("never_signal", [])
    check(len(ns) == 1 and ns[0]["waits"][0]["pid"] == pids[0], "never: the waiter")
    if ns:
        w = ns[0]["waits"][0]
        check(w["fence"]["name"] == "orphan-fence" and w["timeline"]["name"] == "orphan",
              "never: fence and timeline")
        check(w["signallers"] == [], "never: nobody holds the timeline")
    check(not d.get("deadlocks"), "never: no cycle")
    stop(p)


def trace_test(tmp):
    path = os.path.join(tmp, "trace.json")
    t = subprocess.Popen([FENCECTL, "trace", "-o", path, "-d", "30"], stderr=subprocess.PIPE,
                         text=True)
    time.sleep(0.5)
    s = subprocess.run([SCENARIO, "pipeline", "6"], capture_output=True, text=True, timeout=60)
    check(s.returncode == 0 and "done" in s.stdout, f"pipeline ran ({s.stderr})")
    t.send_signal(signal.SIGINT)  # stops early, still writes the trace
    t.wait(timeout=30)
    t.stderr.close()
    check(t.returncode == 0, "trace: exit 0 after SIGINT")
    with open(path) as f:
        doc = json.load(f)
    validate(doc.get("otherData"), {"producer": str, "format": int, "clock": str, "start_us": float,
                                    "end_us": float, "events": int, "dropped": int,
                                    "max_events": int, "daemon_pid": int}, "$.otherData")
    check(doc.get("displayTimeUnit") == "ms", "trace: displayTimeUnit")
    ev = doc.get("traceEvents", [])
    names = {e["args"]["name"]: e["tid"] for e in ev
             if e.get("ph") == "M" and e.get("name") == "thread_name" and e.get("pid") == 10000000}
    for tl in ("camera", "gpu", "compositor", "display"):
        check(any(n.startswith(f"timeline {tl} #") for n in names), f"trace: a track for {tl}")
    sig = [e for e in ev if e.get("ph") == "i" and e.get("cat") == "signal"]
    for e in sig:
        validate(e["args"], {"timeline": int, "from": int, "value": int, "status": int,
                             "by_pid": int, "by_tid": int, "fences": [int]}, "signal.args")
    per_tl = {}
    for e in sig:
        per_tl.setdefault(e["tid"], []).append(e)
    check(len([t for t, l in per_tl.items() if len(l) >= 6]) >= 4,
          "trace: six signals on each of the four timelines")
    begins = {e["id"]: e for e in ev if e.get("ph") == "b" and e.get("cat") == "fence"}
    ends = {e["id"]: e for e in ev if e.get("ph") == "e" and e.get("cat") == "fence"}
    check(begins and set(begins) == set(ends), "trace: every fence slice begins and ends")
    merges = [e for e in begins.values() if e["args"]["kind"] == "merge"]
    check(len(merges) == 6 and all(len(m["args"]["inputs"]) == 2 for m in merges),
          "trace: six merges naming their inputs")
    check(all(ends[i]["args"]["status"] == 1 or ends[i]["ts"] >= begins[i]["ts"] for i in begins),
          "trace: fences end after they begin")
    waits = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "wait"]
    # Each blocking wait is there; how many block depends on the machine's load.
    check(len(waits) >= 1, f"trace: the compositor's and display's waits ({len(waits)})")
    starts = {e["id"]: e for e in ev if e.get("ph") == "s"}
    finishes = {e["id"]: e for e in ev if e.get("ph") == "f"}
    check(starts and set(starts) == set(finishes), "trace: flows start and finish")
    sig_at = {(e["tid"], e["ts"]) for e in sig}
    for fid, s_ev in starts.items():
        check((s_ev["tid"], s_ev["ts"]) in sig_at, f"trace: flow {fid} starts at a signal")
        f_ev = finishes.get(fid)
        if f_ev:
            check(any(w["pid"] == f_ev["pid"] and w["tid"] == f_ev["tid"] and
                      abs(w["ts"] + w["dur"] - f_ev["ts"]) < 0.01 for w in waits),
                  f"trace: flow {fid} ends where a wait ends")
            check(f_ev["ts"] >= s_ev["ts"], f"trace: flow {fid} goes forward in time")
    released = [w for w in waits if w["args"]["result"] == 0]
    check(len(starts) == len(released), "trace: one arrow per released wait")
    check(len([e for e in ev if e.get("cat") == "deadline"]) == 6, "trace: the six deadlines")
    # The late frame: the camera's third fence took over 30 ms from creation.
    cam = [b for b in begins.values() if b["name"] == "camera-3"]
    check(cam and ends[cam[0]["id"]]["ts"] - cam[0]["ts"] > 30000, "trace: camera-3 is late")
    return path


def handoff_test(tmp):
    """A timeline stepped by a process it was passed to (TIMELINE_INC through the
    daemon): each step is one signal event, by that process, and the points it
    reaches carry its time, so the arrows to the waits start at it."""
    path = os.path.join(tmp, "handoff.json")
    t = subprocess.Popen([FENCECTL, "trace", "-o", path, "-d", "30"], stderr=subprocess.PIPE,
                         text=True)
    time.sleep(0.5)
    s = subprocess.run([SCENARIO, "handoff"], capture_output=True, text=True, timeout=60)
    check(s.returncode == 0 and s.stdout.startswith("done "), f"handoff ran ({s.stderr})")
    child = int(s.stdout.split()[1]) if s.stdout.startswith("done ") else -1
    t.send_signal(signal.SIGINT)
    t.wait(timeout=30)
    t.stderr.close()
    check(t.returncode == 0, "handoff trace: exit 0 after SIGINT")
    with open(path) as f:
        ev = json.load(f).get("traceEvents", [])
    names = {e["args"]["name"]: e["tid"] for e in ev
             if e.get("ph") == "M" and e.get("name") == "thread_name" and e.get("pid") == 10000000}
    tl = [tid for n, tid in names.items() if n.startswith("timeline handoff #")]
    check(len(tl) == 1, "handoff trace: the timeline's track")
    sig = [e for e in ev if e.get("ph") == "i" and e.get("cat") == "signal" and tl and
           e["tid"] == tl[0]]
    check([(e["args"]["from"], e["args"]["value"], e["args"]["by_pid"]) for e in sig] ==
          [(0, 1, child), (1, 2, child)], f"handoff trace: two steps, by the child ({sig})")
    sig_at = {(e["tid"], e["ts"]) for e in sig}
    starts = [e for e in ev if e.get("ph") == "s"]
    released = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "wait" and
                e["args"]["result"] == 0]
    check(len(starts) == len(released) >= 1, "handoff trace: an arrow per released wait")
    for e in starts:
        check((e["tid"], e["ts"]) in sig_at, f"handoff trace: flow {e['id']} starts at a signal")


def stats_test():
    r = fencectl("stats", "--json")
    check(r.returncode == 0, "stats: exit 0")
    st = json.loads(r.stdout)
    validate(st, STATS)
    tls = {g["name"]: g for g in st.get("timelines", [])}
    for tl in ("camera", "gpu", "compositor"):  # display has no fences, only flips
        g = tls.get(tl)
        check(g and g["fences"] >= 6 and g["signal_latency"]["count"] >= 6, f"stats: {tl}")
        if g:
            h = g["signal_latency"]
            check(h["p50_us"] <= h["p90_us"] <= h["p99_us"] <= h["max_us"], f"stats: {tl} order")
    names = {g["name"]: g for g in st.get("names", [])}
    check("camera-#" in names and names["camera-#"]["fences"] >= 6, "stats: names fold digits")
    comp = tls.get("compositor")
    check(comp and comp["waits"] >= 6, "stats: the display's waits count for the compositor")
    cam = names.get("camera-#")
    check(cam and cam["signal_latency"]["max_us"] > 30000, "stats: the late camera frame")
    text = fencectl("stats", "--reset")
    check(text.returncode == 0 and "by timeline:" in text.stdout, "stats: text")
    again = json.loads(fencectl("stats", "--json").stdout)
    check(not again.get("timelines"), "stats: --reset starts afresh")


with tempfile.TemporaryDirectory() as tmp:
    os.environ["FENCELINE_SOCKET"] = os.path.join(tmp, "fl.sock")
    # Nothing runs yet: every command says so (3) and starts no daemon.
    for cmd in (["deadlocks"], ["stats"], ["watch", "-n", "1"],
                ["trace", "-o", os.path.join(tmp, "x"), "-d", "0"]):
        r = fencectl(*cmd)
        check(r.returncode == 3, f"{cmd[0]} without a daemon exits 3 ({r.returncode})")
    check(not os.path.exists(os.environ["FENCELINE_SOCKET"]), "no daemon was started")
    for bad in (["deadlocks", "--bogus"], ["stats", "-x"], ["trace"], ["trace", "-o", "x", "-d", "-1"],
                ["watch", "--interval", "5"], ["watch", "-n"]):
        check(fencectl(*bad).returncode == 2, f"usage error {bad}")
    for cmd in ("deadlocks", "stats", "trace", "watch"):
        h = fencectl(cmd, "--help")
        check(h.returncode == 0 and h.stdout.startswith(f"usage: fencectl {cmd}"), f"{cmd} --help")
    # One daemon for the whole test: with the suite's 500 ms idle exit it could go away between
    # two fencectl calls on a loaded machine, and "no daemon" is not the answer being checked.
    os.environ["FENCELINE_IDLE_MS"] = "0"
    try:
        cycle_test("cycle2", 2, lambda name: name in ("ring-0-out", "ring-1-out"))
        cycle_test("cycle3", 3, lambda name: name == "ring-merge")
        never_test()
        trace_test(tmp)
        stats_test()
        handoff_test(tmp)
    finally:
        # A failed check must not leave a deadlocked scenario behind.
        for p in started:
            os.killpg(p.pid, signal.SIGKILL)
        w = fencectl("watch", "--json", "-n", "1")
        if w.returncode == 0:
            os.kill(json.loads(w.stdout)["daemon"]["pid"], signal.SIGTERM)

if failures:
    print(f"{len(failures)} failed")
    sys.exit(1)
print("ok")

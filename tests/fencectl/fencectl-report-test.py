#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""fencectl report on synthetic traces written here to docs/trace-format.md:
the --json analysis (late frames, critical paths, roots, loops), the errors
on bad input, and the HTML page rendered by headless Chromium (lanes, the
late frame table, a hostile fence name shown as text), with a screenshot.

usage: fencectl-report-test.py FENCECTL OUTDIR
  OUTDIR gets the traces, the pages and report-example.png (the screenshot).

Chromium: Debian 12's `chromium` package (/usr/bin/chromium, CI installs it).
What works there as root in a container: `--headless --no-sandbox
--disable-gpu` (the new headless mode is the default `--headless` since
Chromium 112; the sandbox needs user namespaces root does not get), with a
scratch --user-data-dir so parallel runs do not share a profile. `--dump-dom`
prints the DOM after the page's scripts ran. Without /usr/bin/chromium the
browser checks are skipped (exit 77) after the rest passed.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

FENCECTL, OUTDIR = sys.argv[1], sys.argv[2]
CHROMIUM = "/usr/bin/chromium"
failures = []
HOSTILE = "</script><img src=x onerror=alert(1)>"


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL", what)
    return cond


class Trace:
    """A trace as `fencectl trace` writes it (docs/trace-format.md)."""

    TLPID = 10000000

    def __init__(self, start):
        self.events = []
        self.start = start
        self.values = {}  # timeline id -> (value, since)
        self.next_fence = 1
        self.names = {}

    def process(self, pid, name):
        self.events.append({"ph": "M", "name": "process_name", "pid": pid,
                            "args": {"name": f"{name} ({pid})"}})
        self.events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": pid,
                            "args": {"name": name}})

    def timeline(self, tl, name, pid, ts, value=0):
        self.events.append({"ph": "M", "name": "thread_name", "pid": self.TLPID, "tid": tl,
                            "args": {"name": f"timeline {name} #{tl}"}})
        self.events.append({"ph": "i", "s": "t", "cat": "timeline", "name": "timeline_create",
                            "pid": self.TLPID, "tid": tl, "ts": ts,
                            "args": {"timeline": tl, "name": name, "pid": pid, "value": value}})
        self.values[tl] = (value, ts)

    def fence(self, name, pid, ts, points, kind="create", inputs=None):
        fid = self.next_fence
        self.next_fence += 1
        args = {"fence": fid, "kind": kind, "points": points}
        if inputs:
            args["inputs"] = inputs
        self.events.append({"ph": "b", "cat": "fence", "name": name, "id": f"f{fid}", "pid": pid,
                            "tid": pid, "ts": ts, "args": args})
        self.names[fid] = (name, pid)
        return fid

    def fence_end(self, fid, ts, status=0, point=None):
        name, pid = self.names[fid]
        args = {"fence": fid, "status": status}
        if point:
            args["timeline"], args["value"] = point
        self.events.append({"ph": "e", "cat": "fence", "name": name, "id": f"f{fid}", "pid": pid,
                            "tid": pid, "ts": ts, "args": args})

    def deadline(self, fid, pid, ts, deadline):
        self.events.append({"ph": "i", "s": "t", "cat": "deadline", "name": "deadline", "pid": pid,
                            "tid": pid, "ts": ts, "args": {"fence": fid, "deadline_us": deadline}})

    def signal(self, tl, value, pid, ts, fences=()):
        old, since = self.values[tl]
        self.events.append({"ph": "X", "cat": "timeline", "name": f"value {old}", "pid": self.TLPID,
                            "tid": tl, "ts": since, "dur": ts - since,
                            "args": {"timeline": tl, "value": old}})
        self.events.append({"ph": "i", "s": "t", "cat": "signal", "name": "signal",
                            "pid": self.TLPID, "tid": tl, "ts": ts,
                            "args": {"timeline": tl, "from": old, "value": value, "status": 0,
                                     "by_pid": pid, "by_tid": pid, "fences": list(fences)}})
        self.values[tl] = (value, ts)

    def wait(self, fid, pid, begin, end, result=0):
        self.events.append({"ph": "X", "cat": "wait", "name": f"wait {self.names[fid][0]}",
                            "pid": pid, "tid": pid, "ts": begin, "dur": end - begin,
                            "args": {"fence": fid, "result": result, "timeout_ms": 1000}})

    DISPPID = 10000001

    def display(self, name, ts, post, **args):
        """A display service's instant on device 0's track (docs/trace-format.md, "Display")."""
        self.events.append({"ph": "i", "s": "t", "cat": "display", "name": name,
                            "pid": self.DISPPID, "tid": 1, "ts": ts,
                            "args": {"device": 0, "post": post, **args}})

    def dump(self, path, end):
        for tl, (value, since) in self.values.items():
            self.events.append({"ph": "X", "cat": "timeline", "name": f"value {value}",
                                "pid": self.TLPID, "tid": tl, "ts": since, "dur": end - since,
                                "args": {"timeline": tl, "value": value}})
        # Readers sort by time: write them in another order.
        events = self.events[::2] + self.events[1::2]
        with open(path, "w") as f:
            json.dump({"traceEvents": events, "displayTimeUnit": "ms",
                       "otherData": {"producer": "fenceline", "format": 1,
                                     "clock": "CLOCK_MONOTONIC", "start_us": self.start,
                                     "end_us": end}}, f, indent=1)


CAMERA, GPU, COMPOSITOR, DISPLAY = 1001, 1002, 1003, 1004
T0 = 5_000_000_000.0
PERIOD = 16667.0
FRAMES = 8
LATE_FRAME = 5
CAMERA_DELAY = 20000.0  # frame 5's camera image comes this late
BUDGET = 12000.0  # the display needs the composed frame this soon after the frame starts
VSYNC_PHASE = 9000.0  # the display service's vsyncs, this far into each period
N_VSYNCS = FRAMES + 4
SCREEN_POSTS = []  # (post, ready) of the display service's posts
SCREEN_FLIPS = {}  # post -> (ready, flip, vsyncs missed)


def pipeline_trace(path):
    """camera + gpu -> compositor (waits on their merge) -> display (waits on the composed
    frame, with a deadline). Frame LATE_FRAME's camera image is CAMERA_DELAY late."""
    t = Trace(T0)
    for pid, name in ((CAMERA, "camera"), (GPU, "gpu"), (COMPOSITOR, "compositor"),
                      (DISPLAY, "display")):
        t.process(pid, name)
    for tl, name, pid in ((1, "camera", CAMERA), (2, "gpu", GPU), (3, "compositor", COMPOSITOR),
                          (4, "display", DISPLAY)):
        t.timeline(tl, name, pid, T0)
    cam_free = comp_free = disp_free = T0
    for k in range(1, FRAMES + 1):
        tk = T0 + k * PERIOD
        cam = t.fence(f"camera-{k}", CAMERA, tk, [[1, k]])
        gpu = t.fence(f"gpu-{k}", GPU, tk, [[2, k]])
        comp = t.fence(f"comp-{k}", COMPOSITOR, tk, [[3, k]])
        disp = t.fence(f"present-{k}", DISPLAY, tk, [[4, k]])
        merged = t.fence(f"comp-in-{k}", COMPOSITOR, tk + 50, [[1, k], [2, k]], "merge",
                         [cam, gpu])
        t.deadline(comp, DISPLAY, tk + 60, tk + BUDGET)
        # One camera: a late image delays the next one too.
        cam_done = max(tk + 4000 + (CAMERA_DELAY if k == LATE_FRAME else 0), cam_free + 100)
        cam_free = cam_done
        gpu_done = tk + 6000
        t.signal(1, k, CAMERA, cam_done, [cam])
        t.fence_end(cam, cam_done, 0, (1, k))
        t.signal(2, k, GPU, gpu_done, [gpu])
        t.fence_end(gpu, gpu_done, 0, (2, k))
        merged_done = max(cam_done, gpu_done)
        t.fence_end(merged, merged_done, 0, (1, k) if cam_done > gpu_done else (2, k))
        wait_begin = max(tk + 100, comp_free)
        wait_end = max(wait_begin, merged_done)
        t.wait(merged, COMPOSITOR, wait_begin, wait_end)
        comp_done = wait_end + 2000
        t.signal(3, k, COMPOSITOR, comp_done, [comp])
        t.fence_end(comp, comp_done, 0, (3, k))
        comp_free = comp_done
        d_begin = max(tk + 200, disp_free)
        d_end = max(d_begin, comp_done)
        t.wait(comp, DISPLAY, d_begin, d_end)
        shown = d_end + 500
        t.signal(4, k, DISPLAY, shown, [disp])
        t.fence_end(disp, shown, 0, (4, k))
        disp_free = shown
        # The display service shows the composed frame: queued once composed, ready at once.
        t.display("post", comp_done + 10, k, pid=COMPOSITOR, buffers=1, acquire=[],
                  acquire_count=0)
        SCREEN_POSTS.append((k, comp_done + 10))
    end = T0 + (FRAMES + 2) * PERIOD
    # Its vsyncs, and each post flipped at the first one after it was ready and the one before
    # it was on screen (one flip per vsync): a post that waited past a vsync is late.
    vsyncs = [T0 + VSYNC_PHASE + n * PERIOD for n in range(N_VSYNCS)]
    for v in vsyncs:
        t.display("vsync", v, 0, interface=0)
    flipped = 0.0
    for k, ready in SCREEN_POSTS:
        flip = next(v for v in vsyncs if v > max(ready, flipped))
        flipped = flip
        t.display("flip", flip, k, interface=0, vsync_us=flip, ready_us=ready,
                  after_ready_us=flip - ready)
        if k > 1:
            t.display("release", flip, k - 1, by_post=k)
        SCREEN_FLIPS[k] = (ready, flip, sum(1 for v in vsyncs if ready < v < flip))
    # A post whose acquire fence timed out: dropped, never shown; a frame slice is skipped.
    t.display("post", T0 + 1000, 99, pid=COMPOSITOR, buffers=2, acquire=[], acquire_count=1)
    t.display("acquire_failed", T0 + 2000, 99, buffer=1, status=-62)
    t.display("drop", T0 + 2001, 99, status=-62)
    t.events.append({"ph": "X", "cat": "display", "name": "frame 1", "pid": t.DISPPID, "tid": 1,
                     "ts": T0, "dur": 5.0, "args": {"device": 0, "post": 1, "latency_us": 5.0}})
    # A fence whose name is markup, late and never signalled: the page must show it as text.
    # Its deadline is the gpu's own wish, not the display's: it delays no frame.
    hostile = t.fence(HOSTILE, GPU, T0 + 1000, [[2, 999]])
    t.deadline(hostile, GPU, T0 + 1100, T0 + 50000)
    t.fence_end(hostile, end, 1)
    # Events and members this reader does not know: skipped.
    t.events.append({"ph": "C", "name": "fps", "pid": DISPLAY, "ts": T0, "args": {"fps": 60}})
    t.events.append({"ph": "s", "cat": "flow", "name": "wake", "id": 1, "pid": t.TLPID, "tid": 4,
                     "ts": T0 + 10})
    t.events.append({"ph": "i", "s": "g", "cat": "deadlock", "name": "deadlock", "ts": T0 + 5,
                     "args": {"text": "none really", "pids": [1]}, "future": [1, 2]})
    # The gpu's context reset at the end (fl_timeline_fd_fail_pending()): named in the report.
    t.events.append({"ph": "i", "s": "t", "cat": "signal", "name": "fail", "pid": t.TLPID,
                     "tid": 2, "ts": end - 10,
                     "args": {"timeline": 2, "value": FRAMES, "status": -5, "failed": 2,
                              "by_pid": GPU, "fences": []}})
    t.dump(path, end)


def loop_trace(path):
    """A malformed trace whose chain leads back to its start: the analysis must stop."""
    t = Trace(1000.0)
    t.process(1, "a")
    t.process(2, "b")
    t.timeline(1, "ta", 1, 1000.0)
    t.timeline(2, "tb", 2, 1000.0)
    f1 = t.fence("f1", 1, 1000.0, [[1, 1]])
    f2 = t.fence("f2", 2, 1000.0, [[2, 1]])
    t.deadline(f1, 1, 1000.0, 1050.0)
    t.wait(f1, 2, 1010.0, 1070.0, -62)
    t.signal(2, 1, 2, 1080.0, [f2])
    t.fence_end(f2, 1080.0, 0, (2, 1))
    t.wait(f2, 1, 1050.0, 1080.0)
    t.signal(1, 1, 1, 1100.0, [f1])
    t.fence_end(f1, 1100.0, 0, (1, 1))
    t.dump(path, 1200.0)


# docs/fencectl.md, "## report", --json: key -> allowed types (or a nested schema).
NUM, NNUM, NINT, NSTR = (int, float), (int, float, type(None)), (int, type(None)), (str, type(None))
LINK = {"fence": NINT, "fence_name": NSTR, "timeline": NINT, "timeline_name": NSTR,
        "value": NINT, "reached_us": NNUM, "by_pid": NINT, "by_tid": int, "process": NSTR,
        "waited_on": NINT, "wait_begin_us": NNUM, "wait_end_us": NNUM}
SCHEMA = {
    "version": int,
    "trace": {"file": str, "start_us": NUM, "end_us": NUM, "duration_us": NUM, "events": int,
              "timelines": int, "signals": int, "fences": int, "waits": int, "deadlocks": int},
    "display": [{"id": int, "name": str}],
    "timelines": [{"id": int, "name": NSTR, "creator_pid": int, "display": bool,
                   "created_us": NNUM, "destroyed_us": NNUM, "first_value": NINT,
                   "last_value": NINT, "signals": int, "errors": int, "late_roots": int,
                   "frames": int, "late_frames": int}],
    "processes": [{"pid": int, "name": NSTR, "threads": [{"tid": int, "name": str}],
                   "fences": int, "waits": int, "wait_us": NUM, "late_fences": int}],
    "late_fences": [{"fence": int, "name": NSTR, "pid": int, "tid": int, "process": str,
                     "deadline_us": NUM, "done_us": NNUM, "pending": bool, "status": int,
                     "late_us": NUM, "frames": int, "chain": [LINK],
                     "root": {"kind": str, "timeline": NINT, "timeline_name": NSTR,
                              "value": NINT, "by_pid": NINT, "after_deadline_us": NNUM,
                              "text": str}}],
    "frames": int,
    "late_frames": [{"timeline": int, "timeline_name": NSTR, "value": int, "presented_us": NUM,
                     "fence": int, "fence_name": NSTR, "late_us": NUM, "root": str}],
    "deadlocks": [{"t_us": NUM, "text": str}],
    "resets": [{"t_us": NUM, "timeline": int, "timeline_name": NSTR, "value": int, "status": int,
                "failed": int, "by_pid": int}],
    "screens": [{"device": int, "posts": int, "flipped": int, "late": int, "dropped": int,
                 "acquire_failed": int, "vsyncs": int, "releases": int,
                 "latency_us": {"p50": NNUM, "p99": NNUM, "max": NNUM},
                 "frames": [{"post": int, "queued_us": NNUM, "flip_us": NUM, "vsync_us": NNUM,
                             "ready_us": NNUM, "latency_us": NNUM, "after_ready_us": NNUM,
                             "interface": int, "missed_vsyncs": int, "late": bool}],
                 "drops": [{"post": int, "what": str, "t_us": NUM, "status": int}]}],
}


def validate(value, schema, path="$"):
    if isinstance(schema, list):
        if check(isinstance(value, list), f"{path} is a list"):
            for i, v in enumerate(value):
                validate(v, schema[0], f"{path}[{i}]")
    elif isinstance(schema, dict):
        if check(isinstance(value, dict), f"{path} is an object"):
            check(set(value) == set(schema),
                  f"{path}: members {sorted(value)} are not the documented {sorted(schema)}")
            for k in schema:
                if k in value:
                    validate(value[k], schema[k], f"{path}.{k}")
    else:
        types = schema if isinstance(schema, tuple) else (schema,)
        # bool is an int in Python: only where documented.
        check(isinstance(value, types) and (bool in types or not isinstance(value, bool)),
              f"{path} is {types}: {value!r}")


def run(*args):
    return subprocess.run([FENCECTL, *args], capture_output=True, text=True, timeout=60)


def report_json(trace, *extra):
    r = run("report", trace, "--json", *extra)
    if not check(r.returncode == 0, f"report --json {trace}: exit {r.returncode}: {r.stderr}"):
        return None
    a = json.loads(r.stdout)
    validate(a, SCHEMA)
    return a


def chromium(*args):
    profile = tempfile.mkdtemp(prefix="fl-chromium-")
    try:
        return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                               "--no-first-run", "--user-data-dir=" + profile, *args],
                              capture_output=True, text=True, timeout=120)
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def main():
    os.makedirs(OUTDIR, exist_ok=True)
    pipeline = os.path.join(OUTDIR, "report-pipeline.json")
    pipeline_trace(pipeline)

    # --- the analysis ---
    a = report_json(pipeline)
    if a:
        check(a["frames"] == FRAMES, f"{FRAMES} frames on the display timeline: {a['frames']}")
        check([d["name"] for d in a["display"]] == ["display"], "display found by its name")
        # The display service's track: every post on screen, latencies, late ones, the drop.
        sc = a["screens"][0] if len(a["screens"]) == 1 else {}
        late = sorted(k for k, (_, _, missed) in SCREEN_FLIPS.items() if missed)
        check(late, f"the synthetic trace has late frames on screen: {SCREEN_FLIPS}")
        check(sc.get("posts") == FRAMES + 1 and sc.get("flipped") == FRAMES and
              sc.get("dropped") == 1 and sc.get("acquire_failed") == 1 and
              sc.get("vsyncs") == N_VSYNCS and sc.get("releases") == FRAMES - 1 and
              sc.get("late") == len(late), f"device 0's counts: {sc}")
        for f in sc.get("frames", []):
            ready, flip, missed = SCREEN_FLIPS[f["post"]]
            check(abs(f["flip_us"] - (flip - T0)) < 0.01 and abs(f["ready_us"] - (ready - T0)) < 0.01
                  and abs(f["latency_us"] - (flip - ready)) < 0.01 and
                  f["missed_vsyncs"] == missed and f["late"] == (missed > 0),
                  f"frame {f['post']}: ready {ready - T0}, flip {flip - T0}, missed {missed}: {f}")
        lats = sorted(flip - ready for ready, flip, _ in SCREEN_FLIPS.values())
        check(sc and abs(sc["latency_us"]["max"] - lats[-1]) < 0.01 and
              abs(sc["latency_us"]["p50"] - lats[(len(lats) + 1) // 2 - 1]) < 0.01,
              f"latency quantiles (nearest rank) of {lats}: {sc.get('latency_us')}")
        check(sc and [(d["post"], d["what"], d["status"]) for d in sc["drops"]] ==
              [(99, "acquire_failed", -62), (99, "drop", -62)], f"the dropped post: {sc}")
        check(len(a["late_frames"]) == 1, f"one late frame: {a['late_frames']}")
        lf = a["late_frames"][0] if a["late_frames"] else {}
        check(lf.get("value") == LATE_FRAME and lf.get("timeline_name") == "display",
              f"frame {LATE_FRAME} of display is the late one: {lf}")
        check(lf.get("fence_name") == f"comp-{LATE_FRAME}",
              f"made late by the composed frame comp-{LATE_FRAME}: {lf}")
        check("camera" in lf.get("root", ""), f"the frame's root names the camera: {lf}")
        late = {f["name"]: f for f in a["late_fences"]}
        check(set(late) == {f"comp-{LATE_FRAME}", HOSTILE}, f"late fences: {sorted(late)}")
        comp = late.get(f"comp-{LATE_FRAME}")
        if comp:
            expect_late = 4000 + CAMERA_DELAY + 2000 - BUDGET
            check(abs(comp["late_us"] - expect_late) < 0.01,
                  f"late by {expect_late} us: {comp['late_us']}")
            check(comp["frames"] == 1 and not comp["pending"], "delayed one frame, done")
            chain = comp["chain"]
            check([l["timeline_name"] for l in chain] == ["compositor", "camera"],
                  f"chain: compositor, then camera: {[l['timeline_name'] for l in chain]}")
            check([l["fence_name"] for l in chain] == [f"comp-{LATE_FRAME}",
                                                      f"comp-in-{LATE_FRAME}"],
                  f"chain's fences: the composed frame, then the merge it waited on: {chain}")
            check(chain[0]["process"] == f"compositor ({COMPOSITOR})"
                  and chain[0]["waited_on"] == chain[1]["fence"], f"first link: {chain[0]}")
            root = comp["root"]
            check(root["kind"] == "signal" and root["timeline_name"] == "camera"
                  and root["value"] == LATE_FRAME and root["by_pid"] == CAMERA,
                  f"root: camera reached {LATE_FRAME}, signalled by the camera: {root}")
            check(abs(root["after_deadline_us"] - (4000 + CAMERA_DELAY - BUDGET)) < 0.01,
                  f"root after the deadline: {root['after_deadline_us']}")
            check(root["text"] == f"timeline camera reached {LATE_FRAME} 12.0 ms past the "
                  f"deadline, signalled by camera ({CAMERA})", f"root text: {root['text']}")
        hostile = late.get(HOSTILE)
        if hostile:
            check(hostile["pending"] and hostile["root"]["kind"] == "never_reached"
                  and hostile["frames"] == 0, f"the pending late fence: {hostile}")
        tls = {t["name"]: t for t in a["timelines"]}
        check(tls["camera"]["late_roots"] == 1 and tls["gpu"]["late_roots"] == 1
              and tls["compositor"]["late_roots"] == 0, "late roots per timeline")
        check(tls["display"]["display"] and tls["display"]["late_frames"] == 1
              and tls["display"]["frames"] == FRAMES, f"display summary: {tls['display']}")
        check(tls["camera"]["signals"] == FRAMES and tls["camera"]["last_value"] == FRAMES,
              f"camera summary: {tls['camera']}")
        procs = {p["pid"]: p for p in a["processes"]}
        check(procs[COMPOSITOR]["waits"] == FRAMES and procs[COMPOSITOR]["name"] ==
              f"compositor ({COMPOSITOR})", f"compositor summary: {procs.get(COMPOSITOR)}")
        check(len(a["deadlocks"]) == 1 and a["deadlocks"][0]["text"] == "none really",
              "the deadlock report is kept")
        resets = a.get("resets", [])
        check(len(resets) == 1 and resets[0]["timeline_name"] == "gpu" and
              resets[0]["status"] == -5 and resets[0]["failed"] == 2 and
              resets[0]["by_pid"] == GPU, f"the gpu's reset is named: {resets}")
        check("fences" not in a and "waits" not in a, "--json leaves out the lanes")

    # --display picks another timeline: the camera's frames were never late by a deadline.
    a = report_json(pipeline, "--display", "camera")
    if a:
        check(a["frames"] == FRAMES and not a["late_frames"], "--display camera: no late frame")
    r = run("report", pipeline, "--json", "--display", "nosuch")
    check(r.returncode == 0 and "no timeline is named 'nosuch'" in r.stderr,
          f"--display of no timeline says so: {r.stderr}")

    # A chain that loops ends, and says so.
    loop = os.path.join(OUTDIR, "report-loop.json")
    loop_trace(loop)
    a = report_json(loop)
    if a:
        check(len(a["late_fences"]) == 1 and a["late_fences"][0]["root"]["kind"] == "loop"
              and len(a["late_fences"][0]["chain"]) == 2, f"loop: {a['late_fences']}")

    # --- bad input: clear message, exit 2 ---
    bad = os.path.join(OUTDIR, "report-bad.json")

    def bad_case(content, expect, what):
        if content is not None:
            with open(bad, "w") as f:
                f.write(content)
        r = run("report", bad if content is not None else bad + ".missing", "--json")
        check(r.returncode == 2 and expect in r.stderr and not r.stdout,
              f"{what}: exit 2 with '{expect}': got {r.returncode}: {r.stderr.strip()}")

    bad_case(None, "No such file or directory", "missing file")
    bad_case('{"traceEvents": [1,]}', "not JSON: line 1, column 20 (byte 19): a value expected",
             "not JSON")
    bad_case("", "not JSON: line 1, column 1 (byte 0)", "empty file")
    bad_case('{"traceEvents": []}', "not a fenceline trace", "a Chrome trace of something else")
    bad_case('{"traceEvents": [], "otherData": {"producer": "fenceline", "format": 2}}',
             "format 2 is newer", "a newer format")
    ok_head = '{"otherData": {"producer": "fenceline", "format": 1}, "traceEvents": ['
    bad_case(ok_head + '{"ph": "M"}, {"ph": "i", "cat": "signal", "name": "signal", "ts": 1, '
             '"args": {"timeline": 1, "value": "x", "status": 0, "by_pid": 1}}]}',
             "event 1 (signal): args.value is string, not an integer", "a malformed signal")
    bad_case(ok_head + '{"ph": "b", "cat": "fence", "name": "a", "pid": 1, "tid": 1, "ts": 1, '
             '"args": {"fence": 3}}, {"ph": "b", "cat": "fence", "name": "a", "pid": 1, '
             '"tid": 1, "ts": 2, "args": {"fence": 3}}]}', "fence 3 begins twice",
             "a fence begun twice")
    # Input that never ends (or a huge file) is refused at the cap, not read until memory runs out.
    r = run("report", "/dev/zero", "--json")
    check(r.returncode == 2 and "/dev/zero: larger than 512 MiB" in r.stderr and not r.stdout,
          f"report /dev/zero: exit 2 at the default cap: got {r.returncode}: {r.stderr.strip()}")
    r = run("report", "/dev/zero", "--json", "--max-input-mb", "1")
    check(r.returncode == 2 and "/dev/zero: larger than 1 MiB" in r.stderr,
          f"report /dev/zero --max-input-mb 1: got {r.returncode}: {r.stderr.strip()}")
    with open(bad, "w") as f:
        f.write(" " * (1 << 20) + open(pipeline).read())
    r = run("report", bad, "--json", "--max-input-mb", "1")
    check(r.returncode == 2 and "larger than 1 MiB" in r.stderr, "a file past the cap is refused")
    r = run("report", bad, "--json", "--max-input-mb", "2")
    check(r.returncode == 0 and json.loads(r.stdout), "a file within the cap is read")
    for v in ("0", "1025", "x", "-1"):
        r = run("report", pipeline, "--json", "--max-input-mb", v)
        check(r.returncode == 2 and "--max-input-mb takes 1 to 1024" in r.stderr,
              f"--max-input-mb {v}: {r.stderr.strip()}")
    r = run("report", "--help")
    check(r.returncode == 0 and "usage: fencectl report" in r.stdout, "report --help")
    r = run("report")
    check(r.returncode == 2 and "TRACE is missing" in r.stderr, "report without a trace")
    r = run("report", pipeline)
    check(r.returncode == 2 and "give -o or --json" in r.stderr, "report without -o or --json")
    r = run("--help")
    check("report TRACE" in r.stdout, "fencectl --help lists report")

    # --- the page ---
    page = os.path.join(OUTDIR, "report-pipeline.html")
    r = run("report", pipeline, "-o", page)
    if not check(r.returncode == 0 and os.path.exists(page), f"report -o: {r.stderr}"):
        return 1
    html = open(page).read()
    # The markup and code, without the data (whose strings hold the hostile name, escaped).
    code = re.sub(r'(<script type="application/json" id="fl-data">).*?(</script>)', r"\1\2",
                  html, flags=re.S)
    check(len(code) < len(html) and not re.search(
        r"<(link|img|iframe|object|embed)\b|\bsrc=|@import|url\(", code, re.I),
        "the page loads nothing: no src, link, url()")
    check(set(re.findall(r"https?://[^\s\"']+", html)) <= {"http://www.w3.org/2000/svg"},
          "no URL but the SVG namespace")
    check(HOSTILE not in html and html.count("</script>") == 2,
          "the hostile name cannot close the data's script element")
    r = run("report", pipeline, "-o", "/nonexistent-dir/x.html")
    check(r.returncode == 1 and "/nonexistent-dir/x.html" in r.stderr, "unwritable -o: exit 1")

    if failures:
        print(f"{len(failures)} failures before the browser checks")
        return 1
    if not os.path.exists(CHROMIUM):
        print(f"SKIP: {CHROMIUM} is not installed (Debian package chromium), so the page was "
              "not rendered; everything else passed")
        return 77
    r = chromium("--dump-dom", "file://" + os.path.abspath(page))
    dom = r.stdout
    check(r.returncode == 0 and "<body" in dom, f"chromium --dump-dom: {r.returncode} "
          f"{r.stderr[-2000:]}")
    for name, tl in (("camera", 1), ("gpu", 2), ("compositor", 3), ("display", 4)):
        suffix = " (display)" if name == "display" else ""
        check(f">timeline {name} #{tl}{suffix}</text>" in dom, f"a lane labelled timeline {name}")
    check(dom.count('class="lane lane-timeline"') == 4, "four timeline lanes")
    check(dom.count('class="lane lane-thread"') == 4, "four thread lanes")
    check(dom.count('class="lane lane-screen"') == 1 and ">display device 0</text>" in dom,
          "a lane for display device 0")
    n_late = sum(1 for _, _, missed in SCREEN_FLIPS.values() if missed)
    check(len(re.findall(r'class="frame late"', dom)) == n_late and
          len(re.findall(r'class="frame"', dom)) == FRAMES - n_late,
          f"its frames as bars, {n_late} late ones red")
    check(len(re.findall(r'class="vsync"', dom)) == N_VSYNCS and
          len(re.findall(r'class="drop"', dom)) == 2, "its vsyncs and the drop as ticks")
    check(len(re.findall(r'<tr class="late-screen-row"', dom)) == n_late and
          len(re.findall(r'<tr class="screen-row"', dom)) == 1, "the frames-on-screen tables")
    check(len(re.findall(r'class="step[^"]*late-frame"', dom)) == 1,
          "the late frame's step is highlighted")
    rows = re.findall(r'<tr class="late-frame-row".*?</tr>', dom, re.S)
    check(len(rows) == 1, f"one row in the late frame table: {len(rows)}")
    if rows:
        check(f">display {LATE_FRAME}<" in rows[0] and f"comp-{LATE_FRAME}" in rows[0]
              and f"timeline camera reached {LATE_FRAME}" in rows[0]
              and f"comp-in-{LATE_FRAME}" in rows[0], f"the late frame's row: {rows[0]}")
    check(len(re.findall(r'<tr class="late-fence-row"', dom)) == 2, "two late fence rows")
    escaped = HOSTILE.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    check(escaped in dom, "the hostile fence name is shown as text")
    check(not re.search(r"<img\b", dom, re.I) and not re.search(r"<[^>]*\bonerror=", dom, re.I),
          "no element came from the hostile name")
    shot = os.path.join(OUTDIR, "report-example.png")
    if os.path.exists(shot):
        os.unlink(shot)
    r = chromium("--screenshot=" + shot, "--window-size=1400,900", "--hide-scrollbars",
                 "file://" + os.path.abspath(page))
    ok = os.path.exists(shot) and open(shot, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    check(ok and os.path.getsize(shot) > 10000, f"screenshot {shot}: {r.stderr[-2000:]}")
    print("screenshot:", shot)
    print(f"{len(failures)} failures")
    return 1 if failures else 0


sys.exit(main())

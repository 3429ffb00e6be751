#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Display events in a fencectl trace (docs/trace-format.md, "Display"):
display-trace posts five frames on display 0 while a session records; the
trace must hold each post, flip, vsync, release, failed acquire and drop of
fl-displayd in order with their fields, tied to fencelined's own events
(the acquire fence by its id, the flip at a vsync the trace has, at the
present fence's timestamp). Then fencectl report: its JSON has device 0's
frames on screen (posts 1, 2, 3, 5, 6 with their queueing, flip and latency,
post 4 dropped), and the page a display lane, rendered by headless Chromium
where it is installed (the screenshot lands in OUTDIR as
display-trace-report.png).

usage: fencectl-display-trace-test.py FENCECTL DISPLAY_TRACE OUTDIR
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from fl_schema import check, failures  # tests/fencectl/fl_schema.py

FENCECTL, SCENARIO, OUTDIR = sys.argv[1:4]
DISPPID = 10000001
CHROMIUM = "/usr/bin/chromium"
ENOENT = 2


def us(ns):
    """A CLOCK_MONOTONIC time in ns as the trace writes it: µs with 3 decimals."""
    return round(ns / 1000, 3)


def main():
    os.makedirs(OUTDIR, exist_ok=True)
    path = os.path.join(OUTDIR, "display-trace.json")
    # Services of our own (started on first use), so no other test's trace session is in the way.
    tmp = tempfile.mkdtemp(prefix="fl-display-trace-")
    os.environ["FENCELINE_SOCKET"] = os.path.join(tmp, "fl.sock")
    os.environ["FENCELINE_DISPLAY_SOCKET"] = os.path.join(tmp, "displayd.sock")
    r = subprocess.run([SCENARIO, path], capture_output=True, text=True, timeout=60)
    if not check(r.returncode == 0, f"display-trace: {r.returncode} {r.stderr}"):
        return
    first = None
    present = {}
    for line in r.stdout.splitlines():
        w = line.split()
        if w[0] == "posts":
            first = int(w[1])
        elif w[0] == "present":
            present[int(w[1])] = int(w[2])
    seq = {k: first + k - 1 for k in range(1, 7)}
    with open(path) as f:
        trace = json.load(f)
    evs = [e for e in trace["traceEvents"] if e.get("cat") == "display"]
    evs.sort(key=lambda e: e["ts"])
    check(all(e["pid"] == DISPPID and e["tid"] == 1 for e in evs),
          "every display event is on device 0's track")
    meta = [e for e in trace["traceEvents"] if e.get("ph") == "M" and e.get("pid") == DISPPID]
    check(any(e["name"] == "process_name" and e["args"]["name"] == "displays" for e in meta) and
          any(e["name"] == "thread_name" and e.get("tid") == 1 and
              e["args"]["name"] == "display device 0" for e in meta),
          f"the display tracks are named: {meta}")

    def of(name, post):
        return [e for e in evs if e["name"] == name and e["args"]["post"] == seq[post]]

    fences = {e["args"]["fence"]: e["name"] for e in trace["traceEvents"]
              if e.get("cat") == "fence" and e.get("ph") == "b"}
    vsyncs = sorted(e["ts"] for e in evs if e["name"] == "vsync")
    check(len(vsyncs) >= 5, f"vsyncs recorded: {len(vsyncs)}")
    check(all(e["args"]["interface"] == 0 for e in evs if e["name"] == "vsync"),
          "vsyncs of interface 0")

    for k in (1, 2, 3, 5):
        posts, flips = of("post", k), of("flip", k)
        if not check(len(posts) == 1 and len(flips) == 1,
                     f"post {k}: one post and one flip event: {posts} {flips}"):
            continue
        p, fl = posts[0], flips[0]
        check(p["args"]["pid"] > 0 and p["args"]["buffers"] == 1,
              f"post {k}: its client and buffers: {p['args']}")
        check(p["ts"] <= fl["ts"], f"post {k} queued before it flipped")
        check(fl["args"]["interface"] == 0 and fl["args"]["vsync_us"] == fl["ts"] and
              fl["ts"] in vsyncs, f"post {k} flipped at a vsync of interface 0: {fl}")
        check(fl["args"]["ready_us"] <= fl["ts"] and
              abs(fl["args"]["after_ready_us"] - (fl["ts"] - fl["args"]["ready_us"])) < 0.002,
              f"post {k}: ready before its flip, after_ready_us its distance: {fl['args']}")
        if k in present:
            check(fl["ts"] == us(present[k]),
                  f"post {k}: the flip at its present fence's time {us(present[k])}: {fl['ts']}")
        frames = [e for e in evs if e["name"] == f"frame {seq[k]}"]
        check(len(frames) == 1 and frames[0]["ph"] == "X" and frames[0]["ts"] == p["ts"] and
              abs(frames[0]["ts"] + frames[0]["dur"] - fl["ts"]) < 0.002 and
              frames[0]["args"]["latency_us"] == frames[0]["dur"],
              f"post {k}: a frame slice from queueing to flip: {frames}")

    # Post 1 waited for acq-1: the trace names that fence, and it was ready once it signalled.
    p1 = of("post", 1)
    if p1:
        acq = p1[0]["args"]["acquire"]
        check(p1[0]["args"]["acquire_count"] == 1 and len(acq) == 1 and
              fences.get(acq[0]) == "acq-1", f"post 1's acquire fence is acq-1: {acq} {fences}")
        check(of("post", 2)[0]["args"]["acquire"] == [] if of("post", 2) else False,
              "post 2 waits for nothing")
    # Flips in order, each post on screen once; releases by the next one.
    flips = [e["args"]["post"] for e in evs if e["name"] == "flip"]
    check([p for p in flips if p in (seq[1], seq[2], seq[3], seq[5])] ==
          [seq[1], seq[2], seq[3], seq[5]], f"flips in post order: {flips}")
    for k, by in ((1, 2), (2, 3), (3, 5)):
        rel = of("release", k)
        check(len(rel) == 1 and rel[0]["args"]["by_post"] == seq[by] and
              rel[0]["ts"] == of("flip", by)[0]["ts"],
              f"post {k} released at post {by}'s flip: {rel}")
    # Post 4: its acquire fence failed, it was dropped, never flipped.
    failed, dropped = of("acquire_failed", 4), of("drop", 4)
    check(len(failed) == 1 and failed[0]["args"]["status"] == -ENOENT and
          failed[0]["args"]["buffer"] == 0, f"post 4's acquire fence failed: {failed}")
    check(len(dropped) == 1 and dropped[0]["args"]["status"] == -ENOENT and
          dropped[0]["ts"] >= failed[0]["ts"] if failed else False,
          f"post 4 dropped: {dropped}")
    check(not of("flip", 4), "post 4 never flipped")
    p4 = of("post", 4)
    check(p4 and fences.get(p4[0]["args"]["acquire"][0]) == "acq-4", f"post 4 names acq-4: {p4}")
    report(path, evs, seq)


def report(path, evs, seq):
    """fencectl report of the recorded trace: the frames on screen, as JSON and as a page."""
    r = subprocess.run([FENCECTL, "report", path, "--json"], capture_output=True, text=True,
                       timeout=60)
    if not check(r.returncode == 0, f"report --json: {r.returncode} {r.stderr}"):
        return
    a = json.loads(r.stdout)
    start = a["trace"]["start_us"]
    screens = a["screens"]
    if not check(len(screens) == 1 and screens[0]["device"] == 0, f"one screen: {screens}"):
        return
    s = screens[0]
    frames = {f["post"]: f for f in s["frames"]}
    check(set(frames) == {seq[k] for k in (1, 2, 3, 5, 6)}, f"the frames on screen: {sorted(frames)}")
    check(s["dropped"] == 1 and s["acquire_failed"] == 1 and
          [d["post"] for d in s["drops"]] == [seq[4], seq[4]], f"post 4 dropped: {s['drops']}")
    for k in (1, 2, 3, 5):
        p = [e for e in evs if e["name"] == "post" and e["args"]["post"] == seq[k]][0]
        fl = [e for e in evs if e["name"] == "flip" and e["args"]["post"] == seq[k]][0]
        f = frames.get(seq[k], {})
        check(abs(f.get("queued_us", 0) + start - p["ts"]) < 0.01 and
              abs(f.get("flip_us", 0) + start - fl["ts"]) < 0.01 and
              abs(f.get("latency_us", 0) - (fl["ts"] - p["ts"])) < 0.01,
              f"frame {k}: queued, flipped and its latency as the trace has them: {f}")
    check(s["latency_us"]["max"] == max(f["latency_us"] for f in s["frames"]),
          f"the worst latency: {s['latency_us']}")

    page = os.path.join(OUTDIR, "display-trace-report.html")
    r = subprocess.run([FENCECTL, "report", path, "-o", page], capture_output=True, text=True,
                       timeout=60)
    if not check(r.returncode == 0, f"report -o: {r.stderr}"):
        return
    if not os.path.exists(CHROMIUM):
        print(f"SKIP: the page was not rendered ({CHROMIUM} is not installed)")
        return
    profile = tempfile.mkdtemp(prefix="fl-chromium-")
    shot = os.path.join(OUTDIR, "display-trace-report.png")
    try:
        base = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                "--user-data-dir=" + profile]
        r = subprocess.run(base + ["--dump-dom", "file://" + os.path.abspath(page)],
                           capture_output=True, text=True, timeout=120)
        dom = r.stdout
        check(dom.count('class="lane lane-screen"') == 1 and ">display device 0</text>" in dom,
              "the page has a lane for display device 0")
        check(len(re.findall(r'class="frame( late)?"', dom)) == 5,
              "five frames on screen drawn as bars")
        check(len(re.findall(r'<tr class="screen-row"', dom)) == 1, "the frames-on-screen table")
        if os.path.exists(shot):
            os.unlink(shot)
        subprocess.run(base + ["--screenshot=" + shot, "--window-size=1400,900",
                               "--hide-scrollbars", "file://" + os.path.abspath(page)],
                       capture_output=True, text=True, timeout=120)
        check(os.path.exists(shot) and open(shot, "rb").read(8) == b"\x89PNG\r\n\x1a\n",
              f"screenshot {shot}")
        print("screenshot:", shot)
    finally:
        shutil.rmtree(profile, ignore_errors=True)


main()
if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("all checks passed")

#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""fencectl dump's "displays" section (docs/fencectl.md): with no display
service, nothing, and none started; with one, a post stuck on an acquire
fence whose timeline a child process holds is named with that fence, its
timeline and the child's pid, in text and in JSON (which matches the
documented schema member by member).

usage: fencectl-displays-test.py FENCECTL FL_DISPLAYD DISPLAY_STUCK HOLDER
(env: FENCELINE_DAEMON; scratch sockets in TMPDIR)
"""
import json
import os
import subprocess
import sys
import tempfile

from fl_schema import check, failures, validate  # tests/fencectl/fl_schema.py

FENCECTL, DISPLAYD, STUCK, HOLDER = sys.argv[1:5]
TIMELINE = "stuck-producer\nheld by: pid 1"  # display-stuck.c's

# docs/fencectl.md, "The displays member".
SIGNALLER = {"pid": int, "comm": str}
POINT = {"timeline": str, "timeline_id": int, "value": str, "holders": [SIGNALLER]}
FENCE_DESCRIBED = {"buffer": int, "name": str, "status": int, "points": [POINT]}
FENCE_NOT = {"buffer": int, "error": str, "points": [POINT]}


def FENCE(value, path):
    """Two shapes: described, or an "error" saying why not."""
    is_not = isinstance(value, dict) and "error" in value
    validate(value, FENCE_NOT if is_not else FENCE_DESCRIBED, path, OPTIONAL)


BUFFER = {"engine": int, "w": int, "h": int, "format": str}
POST = {"post": int, "age_ns": int, "pid": int, "failed": bool, "pending_fences": int,
        "interfaces": [int], "buffers": [BUFFER], "waits_for": [FENCE]}


def on_screen(value, path):
    if value is not None:
        validate(value, POST, path, OPTIONAL)


def mode(value, path):
    if value is not None:
        validate(value, {"w": int, "h": int, "refresh": int}, path)


INTERFACE = {"id": int, "name": str, "type": str, "primary": bool, "dpms": str,
             "connected": bool, "mode": mode, "last_vsync_ns": int}
COUNTERS = {k: int for k in ("queued", "posted", "flipped", "dropped", "fence_failures",
                             "on_screen_buffers", "vsyncs")}
DEVICE = {"id": int, "name": str, "driver": str, "interfaces": [INTERFACE],
          "on_screen": on_screen, "queue": [POST], "counters": COUNTERS}
DISPLAYS = {"version": int, "service": {"pid": int}, "devices": [DEVICE]}
OPTIONAL = {"owner": int}


def fencectl(*args):
    return subprocess.run([FENCECTL, *args], capture_output=True, text=True, timeout=60)


with tempfile.TemporaryDirectory() as tmp:
    dsock = os.path.join(tmp, "displayd.sock")
    os.environ["FENCELINE_SOCKET"] = os.path.join(tmp, "fl.sock")
    os.environ["FENCELINE_DISPLAY_SOCKET"] = dsock

    # fencelined runs (a holder keeps it), no display service: no section, none started.
    holder = subprocess.Popen([HOLDER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    check(holder.stdout.readline().startswith("ready"), "holder ready")
    r = fencectl("dump")
    check(r.returncode == 0, f"dump without a display service: exit 0 ({r.stderr})")
    check("displays:" not in r.stdout, "no displays section without a display service")
    r = fencectl("dump", "--json")
    check(r.returncode == 0, "dump --json without a display service: exit 0")
    check("displays" not in json.loads(r.stdout), "no displays member without a display service")
    check(not os.path.exists(dsock), "fencectl started no display service")

    # Its fence timeout far beyond the test's life: the post stays stuck while we look.
    displayd = subprocess.Popen([DISPLAYD, "--foreground", "--socket", dsock, "--idle-timeout",
                                 "0", "--fence-timeout", "3600000"],
                                stderr=subprocess.PIPE, text=True)
    stuck = None
    try:
        while True:
            line = displayd.stderr.readline()
            check(line != "", "fl-displayd started")
            if not line or "listening on" in line:
                break
        stuck = subprocess.Popen([STUCK], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 text=True)
        line = stuck.stdout.readline().split()
        check(line[:1] == ["ready"], "display-stuck posted")
        poster, producer = int(line[1]), int(line[2])

        r = fencectl("dump")
        check(r.returncode == 0, f"dump: exit 0 ({r.stderr})")
        text = r.stdout.split("\ndisplays:\n", 1)
        check(len(text) == 2, "the text dump has a displays section")
        section = text[-1]
        check(f"fl-displayd pid {displayd.pid}" in section, "the section names the service")
        check(f"by pid {poster}: waits for its acquire fences" in section,
              "the stuck post, its poster, and why it waits")
        check("waits for fence 'stuck-frame' (active)" in section, "the fence's name")
        # The timeline's name holds a newline and a forged "held by" line: shown as '?'.
        point = [ln for ln in section.splitlines()
                 if "timeline 'stuck-producer?held by: pid 1'" in ln]
        check(not [ln for ln in section.splitlines() if ln.startswith("held by")],
              "a name cannot forge a line of the text dump")
        check(len(point) == 1 and f"pid {producer} (" in point[0].split("held by:")[-1],
              f"the point's line names the producer pid {producer} as a holder: {point}")

        r = fencectl("dump", "--json")
        check(r.returncode == 0, "dump --json: exit 0")
        dump = json.loads(r.stdout)
        check("displays" in dump, "the JSON dump has a displays member")
        disp = dump.get("displays", {})
        validate(disp, DISPLAYS, "$.displays", OPTIONAL)
        check(disp.get("service", {}).get("pid") == displayd.pid, "the service's pid")
        queue = disp["devices"][0]["queue"] if disp.get("devices") else []
        check(len(queue) == 1, "one post queued on device 0")
        post = queue[0] if queue else {}
        check(post.get("pid") == poster and post.get("pending_fences") == 1,
              "the post's poster and its one pending fence")
        fences = post.get("waits_for", [])
        check(len(fences) == 1 and fences[0]["name"] == "stuck-frame" and fences[0]["buffer"] == 0,
              f"the fence it waits for: {fences}")
        pts = fences[0]["points"] if fences else []
        check(len(pts) == 1 and pts[0]["timeline"] == TIMELINE and pts[0]["value"] == "1",
              f"the fence's timeline and point: {pts}")
        check(pts and producer in [h["pid"] for h in pts[0]["holders"]],
              f"who should signal it: pid {producer} holds the timeline")
        tl_ids = [t["id"] for t in dump["timelines"] if t["name"] == TIMELINE]
        check(pts and tl_ids == [pts[0]["timeline_id"]], "the timeline id is fencelined's")

        # Another simple post and 5 of 56 buffers, on one fence: 282 pending, a dump describes 256.
        many = subprocess.Popen([STUCK, "many"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                text=True)
        try:
            check(many.stdout.readline().startswith("ready"), "display-stuck many posted")
            r = fencectl("dump", "--json")
            check(r.returncode == 0, "dump --json of 282 fences: exit 0")
            disp = json.loads(r.stdout).get("displays", {})
            validate(disp, DISPLAYS, "$.displays", OPTIONAL)
            fences = [f for p in disp["devices"][0]["queue"] for f in p["waits_for"]]
            named = [f for f in fences if f.get("name") == "stuck-frame"]
            cut = [f for f in fences if f.get("error", "").startswith("not described")]
            check(len(fences) == 282 and len(named) == 256 and len(cut) == 26,
                  f"256 of 282 fences described: {len(fences)}, {len(named)}, {len(cut)}")
            r = fencectl("dump")
            check(r.stdout.count("waits for a fence (not described") == 26,
                  "the text dump lists the 26 fences it does not describe")
        finally:
            many.stdin.close()
            many.wait(timeout=30)
    finally:
        if stuck:
            stuck.stdin.close()
            stuck.wait(timeout=30)
        displayd.terminate()
        displayd.wait(timeout=30)
        holder.stdin.close()
        holder.wait(timeout=30)

if failures:
    sys.exit(f"{len(failures)} checks failed")
print("fencectl-displays: ok")

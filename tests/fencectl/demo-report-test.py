#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The earlier demo (pipeline-demo-sim), traced and reported end to end: `fencectl trace` records
a janky run of it, `fencectl report` finds its late frames and
blames a producer for each, and headless Chromium renders the page with a
lane per timeline. Saves the screenshot (docs/report-example.png is one)
into the build directory.

usage: demo-report-test.py FENCECTL FENCELINED DEMO OUTDIR
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

FENCECTL, FENCELINED, DEMO, OUTDIR = sys.argv[1:5]
CHROMIUM = "/usr/bin/chromium"
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL", what)


def main():
    os.makedirs(OUTDIR, exist_ok=True)
    trace = os.path.join(OUTDIR, "demo-trace.json")
    page = os.path.join(OUTDIR, "demo-report.html")
    with tempfile.TemporaryDirectory() as tmp:
        sock = os.path.join(tmp, "fl.sock")
        os.environ["FENCELINE_SOCKET"] = sock
        # A daemon of our own first: fencectl never starts one.
        daemon = subprocess.Popen([FENCELINED, "--foreground", "--socket", sock,
                                   "--idle-timeout", "0"], stderr=subprocess.DEVNULL)
        for _ in range(100):
            if os.path.exists(sock):
                break
            time.sleep(0.05)
        tracer = subprocess.Popen([FENCECTL, "trace", "-o", trace, "-d", "60"],
                                  stderr=subprocess.PIPE, text=True)
        time.sleep(0.5)
        demo = subprocess.run([DEMO, "--frames", "90", "--jank", "0.25", "--seed", "3", "--quiet"],
                              capture_output=True, text=True, timeout=120)
        tracer.send_signal(signal.SIGINT)
        tracer.wait(timeout=60)
        tracer.stderr.close()
        daemon.terminate()
        daemon.wait(timeout=30)
    check(demo.returncode == 0, f"the demo ran: {demo.stderr[-2000:]}")
    check(tracer.returncode == 0, "fencectl trace")
    repeated = re.search(r"(\d+) vsync\(s\) repeated a frame", demo.stdout)
    print(demo.stdout)

    r = subprocess.run([FENCECTL, "report", trace, "--json"], capture_output=True, text=True,
                       timeout=120)
    check(r.returncode == 0, f"report --json: {r.stderr}")
    rep = json.loads(r.stdout) if r.returncode == 0 else {}
    names = {t["name"] for t in rep.get("timelines", [])}
    check({"camera", "gpu-render", "compositor", "display"} <= names, f"timelines: {names}")
    check([d["name"] for d in rep.get("display", [])] == ["display"], "the display timeline")
    late = rep.get("late_frames", [])
    # A jank of 0.25 misses vsyncs for sure; each miss is a late frame of the display.
    check(repeated and int(repeated.group(1)) > 0 and late, "late frames found")
    # A jank of 0.25 makes the producers late; on a loaded machine the compositor itself can
    # also be scheduled late (its own fence past the deadline while its inputs were on time),
    # and the report must then blame it, not a producer: both are right, most are producers'.
    by_producer = 0
    for f in late:
        producer = re.match(r"timeline (camera|gpu-render) reached \d+ .* signalled by "
                            r"(camera|gpu-render) \(\d+\)$", f["root"])
        itself = re.match(r"timeline compositor reached \d+ .* signalled by compositor \(\d+\)$",
                          f["root"])
        by_producer += producer is not None
        check(producer or itself, f"frame {f['value']} is blamed on a producer or the compositor: "
              f"{f['root']}")
        check(f["fence_name"].startswith("composed-f"), "the composed frame was late")
    check(late and by_producer * 2 >= len(late),
          f"most late frames are the producers' ({by_producer} of {len(late)})")
    # Each late fence's path runs compositor -> the merged frame it waited on -> a producer,
    # or stops at the compositor's own fence when it waited on nothing late.
    for lf in rep.get("late_fences", []):
        chain = lf["chain"]
        names = [c["fence_name"] for c in chain]
        via_producer = (len(chain) == 2 and chain[0]["timeline_name"] == "compositor" and
                        chain[0]["waited_on"] == chain[1]["fence"] and
                        chain[1]["fence_name"].startswith("frame-"))
        own = (len(chain) == 1 and chain[0]["timeline_name"] == "compositor" and
               not chain[0].get("waited_on"))
        check(via_producer or own, f"critical path of {lf['name']}: {names} "
              f"({[c.get('waited_on') for c in chain]})")

    r = subprocess.run([FENCECTL, "report", trace, "-o", page], capture_output=True, text=True,
                       timeout=120)
    check(r.returncode == 0, "report -o")
    if not os.path.exists(CHROMIUM):
        print("no /usr/bin/chromium (Debian: chromium): the page was not rendered")
        return 77 if not failures else 1
    profile = tempfile.mkdtemp(prefix="fl-chromium-")
    try:
        base = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                "--user-data-dir=" + profile]
        dom = subprocess.run(base + ["--dump-dom", "file://" + os.path.abspath(page)],
                             capture_output=True, text=True, timeout=120).stdout
        for name in ("camera", "gpu-render", "compositor", "display"):
            check(re.search(rf">timeline {name} #\d+( \(display\))?</text>", dom),
                  f"a lane for {name}")
        rows = re.findall(r'<tr class="late-frame-row"', dom)
        check(len(rows) == len(late), f"a table row per late frame ({len(rows)}, {len(late)})")
        shot = os.path.join(OUTDIR, "demo-report.png")
        subprocess.run(base + ["--screenshot=" + shot, "--window-size=1400,1000",
                               "--hide-scrollbars", "file://" + os.path.abspath(page)],
                       capture_output=True, timeout=120)
        check(os.path.exists(shot) and open(shot, "rb").read(8) == b"\x89PNG\r\n\x1a\n",
              "screenshot")
        print("screenshot:", shot)
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    return 1 if failures else 0


sys.exit(main())

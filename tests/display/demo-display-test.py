#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""pipeline-demo --display virtual (docs/display.md, "Choosing the output"): the demo's display
stage shows every frame it flips on the display service's virtual device through simple
buffers; the frame on screen after the run is the last frame's picture, pixel for pixel: each
producer's bar at its place for that frame number, the fates strip's newest cell on time or
late. The capture is kept as demo-display.png in FRAME_DIR.

usage: demo-display-test.py PIPELINE-DEMO FL-DISPLAYCTL FRAME_DIR
(env: FENCELINE_DAEMON, FENCELINE_DISPLAYD; a scratch dir in TMPDIR)
"""
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from displaytest import check, main, read_png  # noqa: E402

DEMO, CTL, FRAME_DIR = sys.argv[1:4]
FRAMES, PRODUCERS = 45, 3
LANES = (0x3a86ff, 0xff006e, 0xfb5607)
BACKGROUND, ON_TIME, LATE = 0x101018, 0x2ec4b6, 0xe71d36


def run(tmp):
    os.environ["FENCELINE_SOCKET"] = os.path.join(tmp, "fl.sock")
    for k in ("FENCELINE_DISPLAY_SOCKET", "FENCELINE_DISPLAY_CONFIG", "FENCELINE_DISPLAY"):
        os.environ.pop(k, None)
    # The service outlives the demo long enough to be looked at (main() stops it at the end).
    os.environ["FENCELINE_IDLE_MS"] = "600000"
    # Files, not pipes: the display service the demo starts lives on, and with
    # FENCELINE_DAEMON_STDERR (CI's sanitizer stages) it holds the demo's stderr.
    with open(os.path.join(tmp, "demo.out"), "w+") as out, open(os.path.join(tmp, "demo.err"), "w+") as err:
        rc = subprocess.run([DEMO, "--frames", str(FRAMES), "--producers", str(PRODUCERS), "--jank", "0",
                             "--display", "virtual"], stdout=out, stderr=err, timeout=120).returncode
        out.seek(0)
        err.seek(0)
        r = subprocess.CompletedProcess(DEMO, rc, out.read(), err.read())
    check(r.returncode == 0, f"pipeline-demo --display virtual: exit 0 (got {r.returncode}: {r.stderr[-300:]})")
    check("showing frames on 1920x1080 of the virtual display" in r.stderr,
          f"it says where it shows (got {r.stderr.strip()[-200:]!r})")
    m = re.search(r"screen: (\d+) frames posted to the display, (\d+) skipped", r.stdout)
    check(m is not None, "it says how many frames it posted")
    if not m:
        return
    posted, skipped = int(m.group(1)), int(m.group(2))
    check(0 < posted <= FRAMES, f"1 to {FRAMES} frames posted (got {posted})")
    # Wait until the service has flipped all it was given.
    t0, drained, st = time.monotonic(), False, None
    while not drained and time.monotonic() - t0 < 30:
        st = subprocess.run([CTL, "--display", "virtual", "stats", "0"], capture_output=True, text=True)
        q = re.search(r"queued\s+(\d+)", st.stdout)
        drained = st.returncode == 0 and q is not None and q.group(1) == "0"
        if not drained:
            time.sleep(0.05)
    check(drained, f"the service's queue drains (stats: {st.returncode}, {st.stdout!r}, {st.stderr!r})")
    png = os.path.join(tmp, "demo-display.png")
    r = subprocess.run([CTL, "--display", "virtual", "capture", "0.panel", "-o", png],
                       capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, f"capture: exit 0 ({r.stderr.strip()})")
    if r.returncode:
        return
    os.makedirs(FRAME_DIR, exist_ok=True)
    shutil.copy(png, os.path.join(FRAME_DIR, "demo-display.png"))
    w, h, ch, rows = read_png(png)
    check((w, h) == (1920, 1080), f"the panel's 1920x1080 (got {w}x{h})")

    def px(x, y):
        return rows[y][x * ch] << 16 | rows[y][x * ch + 1] << 8 | rows[y][x * ch + 2]

    # The last frame is always flipped; posted unless its buffer was still held (skipped).
    frame = FRAMES - 1
    strip = h // 8
    lanes_h = h - strip
    lane = lanes_h // PRODUCERS
    bar = w // 16
    if skipped:
        print(f"skip the pixel checks: {skipped} frames skipped, the last one may be among them")
        return
    for p in range(PRODUCERS):
        x = frame * (p + 1) * (w - bar) // 60 % (w - bar)
        y = p * lane + lane // 2
        check(px(x + bar // 2, y) == LANES[p], f"lane {p}: its bar at x {x} for frame {frame} "
              f"(got {px(x + bar // 2, y):06x})")
        away = (x + bar + w // 4) % w
        if not (x <= away < x + bar):
            check(px(away, y) == BACKGROUND, f"lane {p}: background away from the bar (got {px(away, y):06x})")
    newest = px(w // 64 * 63 + 2, lanes_h + strip // 2)
    check(newest in (ON_TIME, LATE), f"the strip's newest cell is the last frame's fate (got {newest:06x})")


main(run, "fl-demo-display-")

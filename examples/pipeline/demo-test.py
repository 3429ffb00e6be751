#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""pipeline-demo's checks that it is real (issue 19 item 7, docs/pipeline.md "The checks").

usage: demo-test.py CASE PIPELINE-DEMO PIPELINE-CHECK
CASE:
  reference    captures equal an independent rendering at the frame numbers they show;
               on the default (engine-rich) device the YUV layers go on overlays and the
               RGB ones into the client target
  poison       the same with producers poisoning every buffer before drawing it: no capture
               shows poison (no buffer is written while on screen)
  engine-poor  a device with one RGB engine: every layer composed, captures still equal
  reset        --reset-at: the app's pending frame fails with EIO, the summary names the reset,
               the other layers go on, captures still equal (the app's last good buffer)
  kill         a producer killed mid-run: the demo fails at once (no hang), names it, and
               leaves no process of its own behind
  report       reset with --report: the run traced (fencectl trace) and reported (fencectl
               report): every producer's timeline, the reset named, late acquire fences each
               with a critical path that ends at a producer's timeline
(env: FENCELINE_DAEMON, FENCELINE_DISPLAYD; a private daemon and display service in a scratch
dir, so that a config of the test's is the service's)
"""
import os
import re
import subprocess
import sys
import tempfile

import json

CASE, DEMO, CHECK = sys.argv[1:4]
CHROMIUM = "/usr/bin/chromium"
failures = []


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        failures.append(what)


POOR = """[device poor]
driver = virtual
[interface panel]
type = DSI
flags = primary
modes = 960x540@60
current-mode = 960x540@60
connected = yes
[engine only]
formats = XRGB8888, ARGB8888
interfaces = panel
"""


def layer_counts(out):
    counts = {}
    for m in re.finditer(r"^  (\w+)\s+overlay (\d+) composed (\d+)$", out, re.M):
        counts[m.group(1)] = (int(m.group(2)), int(m.group(3)))
    return counts


def children_of(pid):
    """The pids whose parent is @pid, with their comm."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                st = f.read()
        except OSError:
            continue
        comm = st[st.index("(") + 1:st.rindex(")")]
        ppid = int(st[st.rindex(")") + 2:].split()[1])
        if ppid == pid:
            out[int(d)] = comm
    return out


def kill_case():
    """SIGKILL the camera once the app has started: the demo must stop everything and fail."""
    p = subprocess.Popen([DEMO, "--seconds", "30", "--sheet", "", "--report", "", "--no-gl"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # The app's first line comes once every process runs.
    for line in p.stdout:
        if line.startswith("app: "):
            break
    kids = children_of(p.pid)
    cams = [k for k, c in kids.items() if c == "camera"]
    check(len(cams) == 1 and "compositor" in kids.values(),
          f"the demo's processes are there: {kids}")
    for k in cams:
        os.kill(k, 9)
    try:
        out, err = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        check(False, "the demo stops within a minute of a producer's death")
    sys.stdout.write(out)
    sys.stderr.write(err)
    check(p.returncode == 1, f"the demo fails (exit 1, got {p.returncode})")
    check(re.search(r"camera \(pid \d+\) was killed by signal 9", err) is not None,
          "it names the dead producer")
    left = [k for k in kids if os.path.exists(f"/proc/{k}")]
    check(not left, f"none of its processes is left: {left}")


def main():
    if CASE == "kill":
        with tempfile.TemporaryDirectory(prefix="pipeline-demo-test-") as tmp:
            os.environ["FENCELINE_SOCKET"] = os.path.join(tmp, "fl.sock")
            for k in ("FENCELINE_DISPLAY_SOCKET", "FENCELINE_DISPLAY_CONFIG",
                      "FENCELINE_DISPLAY"):
                os.environ.pop(k, None)
            kill_case()
        if failures:
            print(f"{len(failures)} check(s) failed")
            sys.exit(1)
        return
    with tempfile.TemporaryDirectory(prefix="pipeline-demo-test-") as tmp:
        os.environ["FENCELINE_SOCKET"] = os.path.join(tmp, "fl.sock")
        for k in ("FENCELINE_DISPLAY_SOCKET", "FENCELINE_DISPLAY_CONFIG", "FENCELINE_DISPLAY"):
            os.environ.pop(k, None)
        os.environ["FENCELINE_IDLE_MS"] = "2000"
        caps = os.path.join(tmp, "captures")
        os.mkdir(caps)
        args = [DEMO, "--seconds", "3", "--quiet", "--capture-dir", caps, "--capture-every",
                "20", "--sheet", os.path.join(tmp, "sheet.png"), "--jank", "0.1", "--seed", "7",
                "--report", ""]
        if CASE == "poison":
            # Two slots: each buffer a producer gets was on screen a moment ago, until its
            # release fence signalled.
            args += ["--poison", "--capture-every", "7", "--slots", "2"]
        if CASE == "engine-poor":
            cfg = os.path.join(tmp, "poor.ini")
            with open(cfg, "w") as f:
                f.write(POOR)
            os.environ["FENCELINE_DISPLAY_CONFIG"] = cfg
            # The CPU app here: both of the app's paths meet the reference.
            args.append("--no-gl")
        if CASE in ("reset", "report"):
            args += ["--reset-at", "40"]
        page = os.path.join(tmp, "report.html")
        if CASE == "report":
            args += ["--report", page, "--jank", "0.3"]
        r = subprocess.run(args, capture_output=True, text=True, timeout=120)
        sys.stdout.write(r.stdout)
        sys.stderr.write(r.stderr)
        check(r.returncode == 0, f"pipeline-demo exits 0 (got {r.returncode})")
        out = r.stdout
        m = re.search(r"fds of main: (\d+) at the start, (\d+) at the end", out)
        check(m is not None and m.group(1) == m.group(2), "main's fds are the same at the end")
        check(os.path.exists(os.path.join(tmp, "sheet.png")), "the contact sheet is written")
        m = re.search(r"^app: (OpenGL ES on .*|drawn on the CPU .*)$", out, re.M)
        check(m is not None, "the app says how it draws")
        if CASE == "engine-poor":
            check(m is not None and "--no-gl" in m.group(1), "--no-gl: the app draws on the CPU")
        counts = layer_counts(out)
        check(set(counts) == {"camera", "video", "app", "statusbar"},
              f"the summary has the HWC's decision for each layer (got {counts})")
        if CASE == "engine-poor":
            # The one engine goes to the client target once two layers are there; the first
            # layer, alone until the next one's first buffer comes, may have it to itself.
            check(all(c[1] > 0 for c in counts.values()) and
                  sum(1 for c in counts.values() if c[0] > 0) <= 1,
                  f"one engine: every layer composed, only the first ever on the engine ({counts})")
        elif counts:
            for name in ("camera", "video"):
                check(counts[name][0] > 0 and counts[name][1] == 0,
                      f"{name} on its own overlay engine, never composed ({counts[name]})")
            # One RGB engine, taken by the client target once both RGB layers are there: from
            # then on both are composed on every frame. Until then the first one may have the
            # engine to itself, for as long as the other takes to queue its first buffer (a slow
            # start, as under ASan on a loaded machine, makes that many frames).
            app, bar = counts["app"], counts["statusbar"]
            check(app[1] > 0 and app[1] == bar[1],
                  f"app and statusbar composed together into the client target ({app}, {bar})")
            check(min(app[0], bar[0]) == 0,
                  f"only the first RGB layer had an overlay to itself ({app}, {bar})")
        m = re.search(r"plan reused on (\d+) frames", out)
        check(m is not None and int(m.group(1)) > 0, "the HWC reused its plan")
        if CASE == "report":
            check(os.path.exists(page), "the report page is written")
            r = subprocess.run([os.environ["FENCECTL"], "report", page + ".json", "--json"],
                               capture_output=True, text=True, timeout=120)
            rep = json.loads(r.stdout) if r.returncode == 0 else {}
            names = {t["name"] for t in rep.get("timelines", [])}
            check({"camera", "video", "app", "statusbar"} <= names, f"timelines: {names}")
            resets = rep.get("resets", [])
            check(len(resets) == 1 and resets[0]["timeline_name"] == "app" and
                  resets[0]["status"] == -5, f"the report names the app's reset: {resets}")
            late = rep.get("late_fences", [])
            check(len(late) > 0, "late acquire fences (jank 0.3)")
            # Each late fence is a producer's acquire fence with a critical path: to its own
            # producer's slow work, or on through the release fence that producer waited for.
            # The GL app's path runs on through its GPU fences and its earlier waits, past
            # the report's 32 links ("too_long") at times.
            own = 0
            for lf in late:
                check(re.match(r"(camera|video|app|statusbar)-\d+$", lf["name"] or "")
                      is not None and lf["root"]["kind"] in ("signal", "too_long") and
                      lf["chain"] and lf["chain"][0]["fence"] == lf["fence"],
                      f"{lf['name']}: a producer's acquire fence, its path to a signal "
                      f"({lf['root']['text']})")
                own += re.match(r"timeline (camera|video|app|statusbar) reached \d+ .* signalled "
                                r"by (camera|video|app|statusbar) \(\d+\)$",
                                lf["root"]["text"]) is not None
            check(own > 0, f"some late fences are blamed on their producer's slow work ({own})")
            # The page itself names the reset, where a browser can render it.
            if os.path.exists(CHROMIUM):
                profile = tempfile.mkdtemp(prefix="fl-chromium-", dir=tmp)
                dom = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                                      "--no-first-run", "--user-data-dir=" + profile,
                                      "--dump-dom", "file://" + page],
                                     capture_output=True, text=True, timeout=120).stdout
                check(re.search(r"reset: timeline app failed 1 pending point\(s\) above \d+ "
                                r"with -5 at", dom) is not None,
                      "the page's summary names the app's reset")
            else:
                print(f"no {CHROMIUM} (Debian: chromium): the page was not rendered")
        if CASE in ("reset", "report"):
            m = re.search(r"reset: the app's buffer #\d+ failed \(Input/output error\): (\d+) of "
                          r"its buffers never shown.*; (\d+) latched after it", out)
            check(m is not None, "the summary names the app's reset")
            check("app: context reset at frame 40" in out, "the app says it reset its context")
            if m:
                check(int(m.group(2)) > 0, "the app goes on after its reset")
            for name in ("camera", "video"):
                m = re.search(r"since then %s: (\d+) latched" % name, out)
                check(m is not None and int(m.group(1)) > 10,
                      f"{name} went on after the app's reset")
        r = subprocess.run([CHECK, caps], capture_output=True, text=True, timeout=300)
        sys.stdout.write(r.stdout)
        sys.stderr.write(r.stderr)
        m = re.search(r"pipeline-check: (\d+) captures, (\d+) failed", r.stdout)
        check(r.returncode == 0 and m is not None and int(m.group(1)) >= 2,
              "every capture equals the reference rendering of the frame numbers it shows")
    if failures:
        print(f"{len(failures)} check(s) failed")
        sys.exit(1)


main()

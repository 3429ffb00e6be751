#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""fl-displayctl against a private fl-displayd (docs/fl-displayctl.md): every
command, its --help, usage errors (exit 2, no service started), runtime
failures (exit 1: bad devices, interfaces, engines, states the service
refuses), and a capture of a known pattern, read back from the PNG and
checked pixel by pixel. The PNG is kept in FRAME_DIR ($FL_TEST_FRAME_DIR
when set) for people to look at.

usage: displayctl-test.py FL-DISPLAYCTL POSTER CONFIG FRAME_DIR
(env: FENCELINE_DAEMON, FENCELINE_DISPLAYD; a scratch dir in TMPDIR)
"""
import json
import os
import re
import signal
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from displaytest import check, main, read_png  # noqa: E402

TOOL, POSTER, CONFIG = sys.argv[1], sys.argv[2], sys.argv[3]
FRAME_DIR = os.environ.get("FL_TEST_FRAME_DIR") or sys.argv[4]


def ctl(*args, env=None):
    return subprocess.run([TOOL, *args], capture_output=True, text=True, timeout=60, env=env)


def ok(*args):
    r = ctl(*args)
    check(r.returncode == 0, f"{' '.join(args)}: exit 0 (got {r.returncode}: {r.stderr.strip()})")
    return r.stdout


def fails(code, args, pattern):
    """The command exits @code and says something matching @pattern on stderr."""
    r = ctl(*args)
    check(r.returncode == code, f"{' '.join(args)}: exit {code} (got {r.returncode}: {r.stderr.strip()})")
    check(re.search(pattern, r.stderr) is not None,
          f"{' '.join(args)}: stderr matches {pattern!r} (got {r.stderr.strip()!r})")
    check(r.stdout == "", f"{' '.join(args)}: nothing on stdout")
    if code == 1:
        # One clear line, not a cascade of follow-on errors.
        check(r.stderr.count("\n") == 1, f"{' '.join(args)}: one line on stderr (got {r.stderr!r})")


def expected(x, y):
    """displayctl-poster's pattern at (x, y), as (r, g, b)."""
    return (x * 4 & 0xff, y * 5 & 0xff, (x ^ y) * 3 & 0xff)


def check_frame(path, w, h, pw, ph, what):
    """The capture at @path is @w x @h: the poster's @pw x @ph pattern at the top-left, black elsewhere."""
    fw, fh, ch, rows = read_png(path)
    check((fw, fh) == (w, h), f"{what}: {w}x{h} (got {fw}x{fh})")
    bad = []
    for y in range(min(fh, h)):
        row = rows[y]
        for x in range(min(fw, w)):
            want = expected(x, y) if x < pw and y < ph else (0, 0, 0)
            got = tuple(row[x * ch:x * ch + 3])
            if got != want and len(bad) < 5:
                bad.append(f"({x},{y}) {got} != {want}")
    check(not bad, f"{what}: every pixel as posted: {bad}")


def service_cmdline(pid, sock):
    """Whether process @pid is an fl-displayd serving @sock."""
    try:
        args = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
    except OSError:
        return False
    return bool(args) and args[0].endswith(b"fl-displayd") and sock.encode() in args


def device(listing, name):
    return next((d for d in listing["devices"] if d["name"] == name), None)


def by_name(items, name):
    return next((i for i in items if i["name"] == name), None)


def check_vsyncs(out, n, hz, what):
    """@n vsync lines, increasing, each period a whole number of frames of @hz (timestamps are the virtual panel's exact deadlines)."""
    lines = [l for l in out.splitlines() if not l.startswith("#")]
    check(len(lines) == n, f"{what}: {n} events (got {lines})")
    times = []
    for i, l in enumerate(lines):
        m = re.fullmatch(r"(\d+)\.(\d{9}) (\S+) vsync(?: period (\d+\.\d{3}) ms \((\d+) frames?\))?", l)
        if not check(m is not None and (m.group(4) is None) == (i == 0), f"{what}: line {l!r}"):
            return
        times.append(int(m.group(1)) * 10**9 + int(m.group(2)))
        if i:
            delta, frames = times[-1] - times[-2], int(m.group(5))
            check(frames >= 1 and abs(delta - frames * 10**9 / hz) < 2, f"{what}: {l!r} is {frames} frames of {hz} Hz")
            check(abs(float(m.group(4)) - delta / 1e6) < 0.0015, f"{what}: {l!r}: period printed as measured")


def run(tmp):
    os.environ["FENCELINE_SOCKET"] = os.path.join(tmp, "fl.sock")
    os.environ["FENCELINE_DISPLAY_CONFIG"] = CONFIG
    os.environ.pop("FENCELINE_DISPLAY_SOCKET", None)
    # The services this test starts stay until it stops them (stop_services()): with the
    # runner's short idle exit, a service could be gone, its socket removed, before a check
    # looks for it (seen under ASan, where the tool's exit takes longer than the idle time).
    os.environ["FENCELINE_IDLE_MS"] = "0"
    # A service that outlives the tool must not hold the tool's stderr, which the test reads
    # to its end (FENCELINE_DAEMON_STDERR hands the services the starter's stderr: .ci/run sets
    # it for the sanitizer builds; display-service keeps the services' stderr).
    os.environ.pop("FENCELINE_DAEMON_STDERR", None)
    dsock = os.path.join(tmp, "displayd.sock")

    # --help, --version, help COMMAND and each command's --help: stdout, exit 0, no service.
    out = ok("--help")
    check(out.startswith("usage: fl-displayctl") and "capture" in out, "--help: the usage")
    check(re.fullmatch(r"fl-displayctl \d+\.\d+\.\d+\n", ok("--version")) is not None, "--version")
    for cmd in ("list", "watch", "hotplug", "unplug", "blank", "mode", "attach", "detach", "capture", "stats"):
        check(f"fl-displayctl {cmd}" in ok(cmd, "--help"), f"{cmd} --help: its usage")
        check(f"fl-displayctl {cmd}" in ok("help", cmd), f"help {cmd}: its usage")

    # Usage errors: exit 2 with the reason and the usage, before any service is asked.
    for args, pattern in [
            ((), "no command"),
            (("frobnicate",), "unknown command 'frobnicate'"),
            (("--bogus", "list"), "unknown option '--bogus'"),
            (("help", "frobnicate"), "no command 'frobnicate'"),
            (("list", "extra"), "unexpected 'extra'"),
            (("watch", "--count", "0"), "bad --count '0'"),
            (("watch", "--count", "x"), "bad --count 'x'"),
            (("watch", "0.panel", "0.hdmi"), "unexpected '0.hdmi'"),
            (("blank", "0.panel", "bright"), "unknown DPMS state 'bright'"),
            (("blank", "0.panel"), "missing operands"),
            (("hotplug", "0.hdmi", "0.panel"), "too many operands"),
            (("mode", "0.hdmi", "640"), "'640' is not WxH"),
            (("mode", "0.hdmi", "640x480@"), "is not WxH"),
            (("mode", "0.hdmi", "640x480@60x"), "is not WxH"),
            (("attach", "0", "rgb32"), "missing operands"),
            (("capture", "0.panel"), "-o FILE.png is required"),
            (("stats", "--json", "0"), "unknown option '--json'"),
    ]:
        r = ctl(*args)
        check(r.returncode == 2, f"{args}: usage error exits 2 (got {r.returncode})")
        check(pattern in r.stderr and "usage: fl-displayctl" in r.stderr,
              f"{args}: says {pattern!r} and the usage (got {r.stderr!r})")
    check(not os.path.exists(dsock), "usage errors start no service")

    # The first use starts the service, as any display client does.
    out = ok("list")
    check(os.path.exists(dsock), "list started the display service on first use")
    check("device 0: phone" in out and "device 1: lab.tv" in out, f"list: both devices ({out!r})")
    check(re.search(r"0 panel +DSI\.0 +flags primary +DPMS off +connected +mode 320x240@60 +50x40 mm", out),
          "list: the panel's line")
    check(re.search(r"1 hdmi +HDMI\.0 +flags external +DPMS off +disconnected +mode none", out), "list: hdmi")
    check(re.search(r"1 link +dsi-link\.0 +flags - ", out), f"list: a driver's interface type by its name ({out!r})")
    check(re.search(r"0 rgb32 +XR24 AR24\n", out) and re.search(r"1 nv12 +NV12\n", out), "list: engines")
    check("allowed (engine->interface): rgb32->panel rgb32->hdmi rgb32->writeback nv12->panel nv12->hdmi\n" in out,
          "list: allowed attachments by name")

    # A known pattern on the panel, captured and read back pixel by pixel.
    poster = subprocess.Popen([POSTER, "64", "48"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        check(poster.stdout.readline() == "posted 64 48\n", "the poster's frame is on screen")
        os.makedirs(FRAME_DIR, exist_ok=True)
        frame = os.path.join(FRAME_DIR, "displayctl-capture.png")
        out = ok("capture", "phone.panel", "-o", frame)
        check(out == f"phone.panel: 320x240 frame written to {frame}\n", f"capture: says what it wrote ({out!r})")
        check_frame(frame, 320, 240, 64, 48, "capture phone.panel")
        print(f"frame: {frame}")
        default = os.path.join(tmp, "default.png")
        check("phone.panel" in ok("capture", "-o", default), "capture: the primary interface by default")
        check_frame(default, 320, 240, 64, 48, "capture (default)")
        wb = os.path.join(FRAME_DIR, "displayctl-writeback.png")
        ok("capture", "0.2", "-o", wb)
        check_frame(wb, 320, 240, 0, 0, "capture of the writeback (nothing posted there: black)")
        fails(1, ("capture", "phone.hdmi", "-o", os.path.join(tmp, "x.png")), r"capture of phone\.hdmi: ")
        fails(1, ("capture", "0.panel", "-o", os.path.join(tmp, "no", "such", "dir.png")),
              r"writing .*dir\.png: ")

        # list --json: the schema of docs/fl-displayctl.md.
        listing = json.loads(ok("list", "--json"))
        phone, tv = device(listing, "phone"), device(listing, "lab.tv")
        check(phone and phone["id"] == 0 and tv and tv["id"] == 1, "list --json: devices and ids")
        panel = by_name(phone["interfaces"], "panel")
        check(panel == {"id": 0, "name": "panel", "type": "DSI", "type_id": 0, "idx": 0, "flags": ["primary"],
                        "dpms": "off", "connected": True, "width_mm": 50, "height_mm": 40,
                        "current_mode": {"name": "320x240", "width": 320, "height": 240, "refresh": 60,
                                         "clock_khz": panel["current_mode"]["clock_khz"], "interlaced": False},
                        "modes": [panel["current_mode"]]}, f"list --json: the panel ({panel})")
        hdmi = by_name(phone["interfaces"], "hdmi")
        check(hdmi["current_mode"] is None and hdmi["modes"] == [] and not hdmi["connected"]
              and hdmi["flags"] == ["external"], "list --json: hdmi unplugged")
        check(by_name(phone["interfaces"], "writeback")["type"] == "memory", "list --json: writeback")
        link = by_name(tv["interfaces"], "link")
        check(link["type"] == "dsi-link" and link["type_id"] == 128 and link["idx"] == 0,
              f"list --json: a driver's interface type by its name ({link})")
        check(phone["engines"] == [{"id": 0, "name": "rgb32", "formats": ["XR24", "AR24"]},
                                   {"id": 1, "name": "nv12", "formats": ["NV12"]}], "list --json: engines")
        check(phone["allowed"] == [{"engine": 0, "interface": i} for i in (0, 1, 2)]
              + [{"engine": 1, "interface": i} for i in (0, 1)], "list --json: allowed")
        check(phone["attached"] == [], "list --json: nothing attached")

        # blank: each state, the service's -EBUSY as a runtime failure.
        check(ok("blank", "phone.panel", "on") == "phone.panel DPMS on\n", "blank on")
        fails(1, ("blank", "phone.panel", "on"), r"phone\.panel is in DPMS on already")
        for state in ("standby", "suspend", "off", "on"):
            ok("blank", "0.0", state)
            dpms = by_name(device(json.loads(ok("list", "--json")), "phone")["interfaces"], "panel")["dpms"]
            check(dpms == state, f"blank {state}: list says {dpms}")

        # watch: vsyncs of the lit panel at 60 Hz; of lab.tv at 50 Hz (a device name with a dot).
        check_vsyncs(ok("watch", "--count", "5", "phone.panel"), 5, 60, "watch phone.panel")
        ok("blank", "lab.tv.out", "on")
        check_vsyncs(ok("watch", "--count", "3", "lab.tv.0"), 3, 50, "watch lab.tv.0")
        # Every interface of every device when none is named.
        out = ok("watch", "--count", "4")
        heads = [l for l in out.splitlines() if l.startswith("#")]
        check(heads == ["# watching phone.panel", "# watching phone.hdmi", "# watching phone.writeback",
                        "# watching lab.tv.out", "# watching lab.tv.link"], f"watch: every interface ({heads})")
        events = [l for l in out.splitlines() if not l.startswith("#")]
        check(len(events) == 4 and all(re.fullmatch(r"\d+\.\d{9} (phone\.panel|lab\.tv\.out) vsync.*", l)
                                       for l in events), f"watch: vsyncs of the lit interfaces ({events})")

        # hotplug while watching: the event, then the mode list.
        w = subprocess.Popen([TOOL, "watch", "--count", "1", "phone.hdmi"], stdout=subprocess.PIPE, text=True)
        check(w.stdout.readline() == "# watching phone.hdmi\n", "watch: subscribed")
        check(ok("hotplug", "phone.hdmi") == "phone.hdmi connected\n", "hotplug")
        line = w.stdout.readline()
        check(re.fullmatch(r"\d+\.\d{9} phone\.hdmi hotplug connected\n", line) is not None,
              f"watch: the hotplug event ({line!r})")
        check(w.wait(timeout=30) == 0, "watch --count 1 ends after one event")
        fails(1, ("hotplug", "phone.hdmi"), r"phone\.hdmi is connected already")
        hdmi = by_name(device(json.loads(ok("list", "--json")), "phone")["interfaces"], "hdmi")
        check(hdmi["connected"] and [(m["width"], m["height"], m["refresh"]) for m in hdmi["modes"]]
              == [(640, 480, 60), (320, 240, 30)], f"hotplug: the configured modes ({hdmi['modes']})")

        # mode: by size, by size and refresh; one the interface lacks.
        check(ok("mode", "phone.hdmi", "320x240") == "phone.hdmi mode 320x240@30\n", "mode WxH")
        cur = by_name(device(json.loads(ok("list", "--json")), "phone")["interfaces"], "hdmi")["current_mode"]
        check((cur["width"], cur["height"], cur["refresh"]) == (320, 240, 30), f"mode: current ({cur})")
        ok("mode", "0.1", "640x480@60")
        fails(1, ("mode", "phone.hdmi", "320x240@60"),
              r"phone\.hdmi has no mode 320x240@60 \(its modes: 640x480@60 320x240@30\)")

        check(ok("unplug", "phone.hdmi") == "phone.hdmi disconnected\n", "unplug")
        fails(1, ("unplug", "phone.hdmi"), r"phone\.hdmi is disconnected already")
        hdmi = by_name(device(json.loads(ok("list", "--json")), "phone")["interfaces"], "hdmi")
        check(not hdmi["connected"] and hdmi["modes"] == [], "unplug: no modes")

        # attach and detach, by name and by id; ADF's errors with the service's reasons.
        check(ok("attach", "phone", "rgb32", "hdmi") == "phone: engine rgb32 attached to interface hdmi\n", "attach")
        ok("attach", "0", "1", "panel")
        check(device(json.loads(ok("list", "--json")), "phone")["attached"]
              == [{"engine": 0, "interface": 1}, {"engine": 1, "interface": 0}], "attach: list shows both")
        fails(1, ("attach", "phone", "rgb32", "hdmi"), r"attach phone: engine rgb32, interface hdmi: .*already")
        fails(1, ("attach", "phone", "nv12", "writeback"), r"attach phone: engine nv12, interface writeback: .+")
        check(ok("detach", "phone", "rgb32", "hdmi") == "phone: engine rgb32 detached from interface hdmi\n", "detach")
        fails(1, ("detach", "phone", "rgb32", "hdmi"), r"detach phone: engine rgb32, interface hdmi: .+")
        fails(1, ("attach", "phone", "yuv", "panel"), r"device phone has no overlay engine 'yuv'")
        fails(1, ("attach", "phone", "rgb32", "dvi"), r"device phone has no interface 'dvi'")

        # stats: the poster's post is on screen.
        out = ok("stats", "phone")
        stats = dict((k, int(v)) for k, v in re.findall(r"^  (\w+) +(\d+)$", out, re.M))
        check(out.startswith("device 0: phone\n") and set(stats) == {
            "queued", "posted", "flipped", "dropped", "fence_failures", "on_screen_buffers", "vsyncs"},
            f"stats: every counter ({out!r})")
        check(stats.get("posted") == 1 and stats.get("flipped") == 1 and stats.get("on_screen_buffers") == 1
              and stats.get("queued") == 0 and stats.get("vsyncs", 0) >= 5, f"stats: the poster's post ({stats})")
        check(re.search(r"^  posted +0$", ok("stats", "lab.tv"), re.M), "stats lab.tv: nothing posted")

        # Bad devices and interfaces: exit 1 and say which.
        fails(1, ("stats", "nosuch"), r"no display device 'nosuch'")
        fails(1, ("stats", "7"), r"no display device '7'")
        fails(1, ("blank", "nosuch.panel", "on"), r"no display device in 'nosuch\.panel'")
        fails(1, ("blank", "phone.nosuch", "on"), r"device phone has no interface 'nosuch'")
        fails(1, ("hotplug", "phone.9"), r"device phone has no interface '9'")
        fails(1, ("watch", "9.panel"), r"no display device in '9\.panel'")
        fails(1, ("capture", "lab.panel", "-o", os.path.join(tmp, "x.png")), r"no display device in 'lab\.panel'")
        fails(2, ("blank", "panel", "on"), r"'panel' names no interface: write DEVICE\.INTERFACE")

        # The service dies under a running watch: it says so and exits 1, it does not hang.
        w = subprocess.Popen([TOOL, "watch", "phone.panel"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        check(w.stdout.readline() == "# watching phone.panel\n", "watch until the service dies: subscribed")
        # The service forks away from the process that listened (SO_PEERCRED's): find it by its command line.
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit() and
                service_cmdline(p, dsock)]
        check(len(pids) == 1, f"one service serves {dsock} ({pids})")
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
        try:
            _, err = w.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            w.kill()
            _, err = w.communicate()
        check(w.returncode == 1 and "fl-displayctl: watching phone.panel: " in err,
              f"watch: the service's death is a failure (exit {w.returncode}, {err!r})")
    finally:
        poster.stdin.close()
        check(poster.wait(timeout=30) == 0, "the poster exits cleanly")

    # --socket: another service, started there.
    other = os.path.join(tmp, "other.sock")
    r = ctl("--socket", other, "stats", "0")
    check(r.returncode == 0 and os.path.exists(other), "--socket: a service started at that path")
    check(re.search(r"^  posted +0$", r.stdout, re.M), "--socket: a fresh service, nothing posted")
    # A service that cannot be started: a runtime failure that says so.
    env = dict(os.environ, FENCELINE_DISPLAYD="/nonexistent/fl-displayd",
               FENCELINE_DISPLAY_SOCKET=os.path.join(tmp, "none.sock"))
    r = ctl("list", env=env)
    check(r.returncode == 1 and r.stdout == "" and
          "fl-displayctl: listing display devices: no display service could be started" in r.stderr, f"no service: exit 1 with a reason ({r.returncode}, {r.stderr!r})")


main(run, "displayctl-test.")

#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The window driver under Xvfb (docs/display.md, "The window driver"):
fl-displayd shows its 320 x 240 panel in a window of an Xvfb the test
starts; fl-recovery draws on it through libadf's simple buffers, unchanged.
Every pixel of the window (xwd) is checked against the panel's frame
captured by fl-displayctl: 1:1, then in a window resized to 800 x 480 (the
frame at 2x, centred, black bars). Keys typed with xdotool reach
fl-recovery as the display's key events. Closing the window (the window
manager's WM_DELETE_WINDOW message) unplugs the interface (a HOTPLUG event);
plugging it again brings the window back. Screenshots and captures are kept
as PNG.

usage: window-test.py sdl2|no-sdl2 FL-DISPLAYD FL-RECOVERY FL-DISPLAYCTL KEYS-READ CONFIG FRAME-DIR"""
import ctypes
import os
import shutil
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from displaytest import check, main, read_png, wait_for_path, write_png  # noqa: E402

HAVE, DISPLAYD, RECOVERY, CTL, KEYS_READ, CONFIG = sys.argv[1:7]
FRAME_DIR = os.environ.get("FL_TEST_FRAME_DIR") or sys.argv[7]

# xdotool's keys and the key events they must give (evdev code, mods, character): what the
# terminal driver sends for the same keys (docs/display.md), so a program cannot tell them apart.
SHIFT, ALT, CTRL = 1, 2, 4
KEYS = [("a", 30, 0, ord("a")), ("shift+a", 30, SHIFT, ord("A")), ("1", 2, 0, ord("1")),
        ("shift+1", 2, SHIFT, ord("!")), ("minus", 12, 0, ord("-")), ("slash", 53, 0, ord("/")),
        ("space", 57, 0, ord(" ")), ("Return", 28, 0, 13), ("KP_Enter", 96, 0, 13),
        ("Tab", 15, 0, 9), ("shift+Tab", 15, SHIFT, 9), ("Escape", 1, 0, 27),
        ("BackSpace", 14, 0, 0), ("ctrl+c", 46, CTRL, 0), ("alt+x", 45, ALT, ord("x")),
        ("Up", 103, 0, 0), ("Down", 108, 0, 0), ("Left", 105, 0, 0), ("Right", 106, 0, 0),
        ("Home", 102, 0, 0), ("End", 107, 0, 0), ("Delete", 111, 0, 0), ("Page_Down", 109, 0, 0),
        ("F1", 59, 0, 0), ("F5", 63, 0, 0), ("F12", 88, 0, 0), ("ctrl+Up", 103, CTRL, 0),
        ("eacute", 0, 0, 0xe9)]  # a character of no key of its own (xdotool maps a spare key)
TITLE = "fl-window-test"

if HAVE != "sdl2":
    print("SKIP: built without SDL2 (meson setup did not find sdl2: install libsdl2-dev)")
    sys.exit(77)
for tool, pkg in (("Xvfb", "xvfb"), ("xdotool", "xdotool"), ("xwd", "x11-apps"), ("xwininfo", "x11-utils")):
    if not shutil.which(tool):
        print(f"SKIP: {tool} is not installed (Debian {pkg})")
        sys.exit(77)


def xwd_rgb(data):
    """(w, h, rows of RGB bytes) of an xwd dump (ZPixmap, 24/32 bits a pixel, TrueColor)."""
    hdr = struct.unpack(">25I", data[:100])
    size, fmt, w, h, order, bpp, bpl = hdr[0], hdr[2], hdr[4], hdr[5], hdr[7], hdr[11], hdr[12]
    masks, ncolors = hdr[14:17], hdr[19]
    assert fmt == 2 and bpp == 32, f"xwd: ZPixmap of 32 bits a pixel, not {fmt}/{bpp}"
    shifts = [(m & -m).bit_length() - 1 for m in masks]
    pos, rows = size + ncolors * 12, []
    for y in range(h):
        line = data[pos + y * bpl:pos + y * bpl + w * 4]
        px = struct.unpack(("<" if order == 0 else ">") + f"{w}I", line)
        rows.append(bytes(b for p in px for b in ((p & masks[0]) >> shifts[0],
                                                   (p & masks[1]) >> shifts[1],
                                                   (p & masks[2]) >> shifts[2])))
    return w, h, rows


def screenshot(win):
    r = subprocess.run(["xwd", "-id", str(win), "-silent"], capture_output=True, timeout=30)
    return xwd_rgb(r.stdout) if r.returncode == 0 else None


def reference(png, ww, wh):
    """The window of ww x wh the driver must show of a frame: fitted, aspect kept, centred, black
    around, each pixel the nearest frame pixel (the sizes used here are whole multiples)."""
    w, h, ch, data = png
    if w * wh >= h * ww:
        dw, dh = ww, (h * ww + w // 2) // w
    else:
        dh, dw = wh, (w * wh + h // 2) // h
    x0, y0 = (ww - dw) // 2, (wh - dh) // 2
    rows = []
    for y in range(wh):
        row = bytearray(ww * 3)
        if y0 <= y < y0 + dh:
            src = data[(y - y0) * h // dh]
            for x in range(x0, x0 + dw):
                sx = (x - x0) * w // dw
                row[x * 3:x * 3 + 3] = src[sx * ch:sx * ch + 3]
        rows.append(bytes(row))
    return rows


def compare(win, name, ww, wh):
    """Wait (a few frames at most) until the window shows the panel's frame as the driver must."""
    path = os.path.join(FRAME_DIR, name + "-panel.png")
    r = subprocess.run([CTL, "capture", "-o", path], capture_output=True, timeout=60)
    check(r.returncode == 0, f"{name}: the panel captured ({r.stderr.strip()})")
    png = read_png(path)
    want = reference(png, ww, wh)
    got, bad = None, None
    for _ in range(50):
        got = screenshot(win)
        if got and got[0] == ww and got[1] == wh:
            bad = [(x, y) for y in range(wh) if got[2][y] != want[y]
                   for x in range(ww) if got[2][y][x * 3:x * 3 + 3] != want[y][x * 3:x * 3 + 3]]
            if not bad:
                break
        time.sleep(0.1)
    if got:
        write_png(os.path.join(FRAME_DIR, name + "-window.png"), got[0], got[1], got[2])
    check(got is not None and (got[0], got[1]) == (ww, wh),
          f"{name}: the window is {ww}x{wh} ({got and got[:2]})")
    check(bad == [], f"{name}: all {ww}x{wh} pixels of the window are the panel's frame "
          f"({len(bad or [])} differ, first {(bad or [])[:3]})")
    # Not a black screen that equals a black frame: the menu is there.
    check(any(any(r) for r in png[3]), f"{name}: the frame shows something (fl-recovery's menu)")
    return png


def xdotool(*args):
    return subprocess.run(["xdotool", *args], capture_output=True, text=True, timeout=30)


def wm_delete(win):
    """What a window manager sends when the user closes a window: WM_PROTOCOLS/WM_DELETE_WINDOW."""
    x = ctypes.CDLL("libX11.so.6")
    x.XOpenDisplay.restype = ctypes.c_void_p
    x.XOpenDisplay.argtypes = [ctypes.c_char_p]
    x.XInternAtom.restype = ctypes.c_ulong
    x.XInternAtom.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
    x.XSendEvent.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.c_int, ctypes.c_long,
                             ctypes.c_void_p]
    x.XFlush.argtypes = x.XCloseDisplay.argtypes = [ctypes.c_void_p]

    class ClientMessage(ctypes.Structure):
        _fields_ = [("type", ctypes.c_int), ("serial", ctypes.c_ulong), ("send_event", ctypes.c_int),
                    ("display", ctypes.c_void_p), ("window", ctypes.c_ulong),
                    ("message_type", ctypes.c_ulong), ("format", ctypes.c_int),
                    ("l", ctypes.c_long * 5), ("pad", ctypes.c_long * 16)]  # an XEvent's 24 longs
    d = x.XOpenDisplay(None)
    e = ClientMessage(type=33, send_event=1, display=d, window=win, format=32,
                      message_type=x.XInternAtom(d, b"WM_PROTOCOLS", 0))
    e.l[0] = x.XInternAtom(d, b"WM_DELETE_WINDOW", 0)
    ok = x.XSendEvent(d, win, 0, 0, ctypes.byref(e))
    x.XFlush(d)
    x.XCloseDisplay(d)
    return ok


def mapped(win):
    r = subprocess.run(["xwininfo", "-id", str(win)], capture_output=True, text=True, timeout=30)
    return "IsViewable" in r.stdout


def start(tmp, config):
    """fl-displayd on @config, and fl-recovery on it: (service, console, window id or None)."""
    err = open(os.path.join(tmp, "displayd.err"), "a")
    displayd = subprocess.Popen([DISPLAYD, "--foreground", "--config", config],
                                stdout=subprocess.DEVNULL, stderr=err)
    wait_for_path(os.path.join(tmp, "displayd.sock"))
    rec = subprocess.Popen([RECOVERY, "--no-evdev"], stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    r = xdotool("search", "--sync", "--name", TITLE)
    wins = r.stdout.split()
    check(len(wins) == 1, f"the window appeared ({r.stdout!r} {r.stderr!r})")
    return displayd, rec, int(wins[0]) if len(wins) == 1 else None


def stop(proc):
    """SIGTERM, and SIGKILL for one that does not end within a minute (a hung service)."""
    if proc and proc.poll() is None:
        proc.terminate()
    if proc:
        try:
            proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()


def run(tmp):
    os.makedirs(FRAME_DIR, exist_ok=True)
    # A display number nobody uses: Xvfb picks it and says which on a pipe.
    rfd, wfd = os.pipe()
    xvfb = subprocess.Popen(["Xvfb", "-displayfd", str(wfd), "-screen", "0", "1024x768x24", "-noreset",
                             "-nolisten", "tcp"], pass_fds=(wfd,), stderr=subprocess.DEVNULL)
    os.close(wfd)
    num = b""
    while not num.endswith(b"\n"):
        c = os.read(rfd, 16)
        if not c:
            break
        num += c
    os.close(rfd)
    displayd = rec = None
    try:
        check(num.strip().isdigit(), f"Xvfb started ({num!r})")
        os.environ.update(DISPLAY=":" + num.decode().strip(),
                          FENCELINE_SOCKET=os.path.join(tmp, "fl.sock"),
                          FENCELINE_DISPLAY_SOCKET=os.path.join(tmp, "displayd.sock"),
                          FENCELINE_IDLE_MS="0")
        os.environ.pop("FENCELINE_DAEMON_STDERR", None)
        # In a sanitizer build, fl-displayd's leak check is off here only: SDL leaves about
        # 1 KB in libdbus and Mesa's driver, which SDL unloads, so no suppression can name
        # the frames. The driver's own memory is checked by valgrind (docs/display.md).
        # (The later of two settings wins; other builds ignore the variable.)
        os.environ["ASAN_OPTIONS"] = os.environ.get("ASAN_OPTIONS", "") + ":detect_leaks=0"
        displayd, rec, win = start(tmp, CONFIG)
        if not win:
            return
        first = compare(win, "window", 320, 240)

        # Keys typed in the window come to fl-recovery as the display's events.
        xdotool("windowfocus", "--sync", str(win))
        xdotool("key", "--delay", "50", "Down", "Down")
        time.sleep(0.3)
        selected = compare(win, "window-selected", 320, 240)
        check(selected[3] != first[3], "the keys moved fl-recovery's selection")

        # A resize scales the picture: 2x, aspect kept, black bars left and right.
        xdotool("windowmove", "--sync", str(win), "0", "0")  # the whole window on the screen
        xdotool("windowsize", "--sync", str(win), "800", "480")
        compare(win, "window-scaled", 800, 480)

        # Blanked, the interface has no vsync and the driver nothing to present: its keys are read
        # when the X connection is readable, not only after a present.
        r = subprocess.run([CTL, "blank", "desk.screen", "off"], capture_output=True, text=True,
                           timeout=60)
        check(r.returncode == 0, f"blanked ({r.stderr.strip()})")
        xdotool("windowfocus", "--sync", str(win))
        xdotool("key", "--delay", "50", "Return", "q")
        try:
            out, err_ = rec.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            out, err_ = "(still running after 30 s)", ""
        check(rec.returncode == 0 and "-- Wipe data/factory reset" in out and "result: leave" in out,
              f"keys from the blanked window: Down Down Return selected, q left ({out!r} {err_!r})")
        subprocess.run([CTL, "blank", "desk.screen", "on"], capture_output=True, timeout=60)

        # Every kind of key, as a subscribed client reads it: one event a key, modifiers alone none.
        reader = subprocess.Popen([KEYS_READ, str(len(KEYS))], stdout=subprocess.PIPE, text=True)
        check(reader.stdout.readline() == "ready\n", "a client subscribed to the key events")
        xdotool("windowfocus", "--sync", str(win))
        xdotool("key", "--delay", "20", *[k[0] for k in KEYS])
        try:
            out, _ = reader.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            reader.kill()
            out, _ = reader.communicate()
        got = [tuple(int(v) for v in line.split()) for line in out.splitlines()]
        want = [k[1:] for k in KEYS]
        check(got == want, "the keys reach the client as evdev keys with modifiers and characters"
              + "".join(f"\n     {k[0]}: want {k[1:]}, got {g}" for k, g in zip(KEYS, got + [None] * 99)
                        if k[1:] != g))
        rec = None

        # Closing the window unplugs the interface; plugging it in again shows the window again.
        watch = subprocess.Popen([CTL, "watch", "desk.screen"], stdout=subprocess.PIPE, text=True)
        try:
            watch.stdout.readline()  # "# watching desk.screen": it is subscribed
            check(wm_delete(win) != 0, "WM_DELETE_WINDOW sent")
            seen = ""
            for _ in range(1000):
                line = watch.stdout.readline()
                if not line or "hotplug" in line:
                    seen = line
                    break
            check("hotplug disconnected" in seen, f"closing the window unplugged it ({seen!r})")
        finally:
            watch.kill()
            watch.communicate()
        r = subprocess.run([CTL, "list"], capture_output=True, text=True, timeout=60)
        check(" disconnected " in r.stdout, "fl-displayctl list: the interface is disconnected")
        check(not mapped(win), "the closed window is gone from the screen")
        r = subprocess.run([CTL, "hotplug", "desk.screen"], capture_output=True, text=True,
                           timeout=60)
        check(r.returncode == 0, f"plugged in again ({r.stderr.strip()})")
        for _ in range(50):
            if mapped(win):
                break
            time.sleep(0.1)
        check(mapped(win), "plugged in again: the window is back")
        compare(win, "window-replugged", 800, 480)
        check(displayd.poll() is None, "fl-displayd still runs")

        # The driver's probe: in use here; elsewhere, why not.
        r = subprocess.run([CTL, "drivers"], capture_output=True, text=True, timeout=60)
        check(any(line.split()[:3] == ["window", "in", "use"] for line in r.stdout.splitlines()),
              f"fl-displayctl drivers: window in use ({r.stdout!r})")
        for name, env, why in (
                ("no display", {}, "no X11 or Wayland display: $DISPLAY and $WAYLAND_DISPLAY are unset"),
                ("no X server", {"DISPLAY": ":" + str(int(num) + 1000)}, "SDL_Init: ")):
            e = {k: v for k, v in os.environ.items()
                 if k not in ("DISPLAY", "WAYLAND_DISPLAY", "SDL_VIDEODRIVER")}
            e.update(env, FENCELINE_DISPLAY_SOCKET=os.path.join(tmp, "probe.sock"))
            r = subprocess.run([DISPLAYD, "--foreground", "--display", "window"], env=e,
                               capture_output=True, text=True, timeout=60)
            check(r.returncode != 0 and "the window driver cannot run here: " + why in r.stderr,
                  f"--display window with {name}: refused, saying why ({r.returncode}, {r.stderr!r})")

        # Options: scale=2 opens the window at twice the mode, each pixel 2 x 2; bad ones refuse
        # the device.
        stop(displayd)
        displayd = None
        text = open(CONFIG).read()
        for bad in ("scale=0", "scale=9", "scale=2x", "scale=-1", "interface=1x", "interface=4294967296"):
            cfg = os.path.join(tmp, "bad.ini")
            with open(cfg, "w") as f:
                f.write(text.replace("title=fl-window-test", "title=fl-window-test, " + bad))
            r = subprocess.run([DISPLAYD, "--foreground", "--config", cfg], capture_output=True,
                               text=True, timeout=60)
            check(r.returncode != 0 and "the window driver failed: Invalid argument" in r.stderr,
                  f"options = {bad}: the device refused ({r.returncode}, {r.stderr.strip()!r})")
        cfg = os.path.join(tmp, "scale.ini")
        with open(cfg, "w") as f:
            f.write(text.replace("title=fl-window-test", "title=fl-window-test, scale=2"))
        displayd, rec, win = start(tmp, cfg)
        if win:
            compare(win, "window-scale-2", 640, 480)

        # The X server goes: Xlib would end the service (exit(1)); it runs on, the interface
        # unplugged, and still ends cleanly.
        xvfb.terminate()
        xvfb.wait(timeout=60)
        line = ""
        for _ in range(100):
            if displayd.poll() is not None:
                break
            r = subprocess.run([CTL, "list"], capture_output=True, text=True, timeout=60)
            line = next((x for x in r.stdout.splitlines() if " screen " in x), "")
            if " disconnected " in line:
                break
            time.sleep(0.1)
        check(displayd.poll() is None and " disconnected " in line,
              f"the X server gone: fl-displayd runs on, its interface unplugged ({line!r}, "
              f"{displayd.poll()})")
        displayd.terminate()
        try:
            rc = displayd.wait(timeout=30)
        except subprocess.TimeoutExpired:
            rc = "still running after 30 s"
            displayd.kill()
            displayd.wait()
        check(rc == 0, f"the X server gone: fl-displayd ends cleanly on SIGTERM ({rc})")
    finally:
        if rec:
            rec.kill()
            rec.communicate()
        stop(displayd)
        print(open(os.path.join(tmp, "displayd.err")).read(), end="")
        xvfb.terminate()
        xvfb.wait(timeout=60)


main(run, "window-test.")

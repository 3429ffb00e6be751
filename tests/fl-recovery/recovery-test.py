#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""fl-recovery on the virtual driver (docs/fl-recovery.md): keys from a pipe
and from a terminal (a pty, raw mode restored at exit), the menu and the log
pane checked in a capture of the panel (fl-displayctl capture): the
highlight bar on the selected item only, one log line per line logged, and
each logged item name drawn with the same glyphs as the menu draws it; the
exits; an RGB565-only device; no display.

usage: recovery-test.py FL-RECOVERY FL-DISPLAYCTL CONFIG FRAME-DIR
(env: FENCELINE_DAEMON, FENCELINE_DISPLAYD; a scratch dir in TMPDIR)"""
import os
import pty
import subprocess
import sys
import termios
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from displaytest import check, main, read_png  # noqa: E402

RECOVERY, CTL, CONFIG = sys.argv[1:4]
FRAME_DIR = os.environ.get("FL_TEST_FRAME_DIR") or sys.argv[4]
HIGHLIGHT, LOG = (0x00, 0x40, 0xa0), (0x00, 0xc0, 0x00)


def recovery(keys, *args):
    """Run fl-recovery with @keys on a pipe as stdin; (exit status, stdout, stderr)."""
    r = subprocess.run([RECOVERY, "--no-evdev", "--layout", *args], input=keys,
                       capture_output=True, timeout=60)
    return r.returncode, r.stdout.decode(), r.stderr.decode()


def layout(out):
    """The rects --layout printed: {('item', i): (x, y, w, h), ('log', i): ...} and the screen."""
    rects, screen = {}, None
    for line in out.splitlines():
        f = line.split()
        if f and f[0] in ("item", "log"):
            rects[(f[0], int(f[1]))] = tuple(int(v) for v in f[2:6])
        elif f and f[0] == "screen":
            screen = (int(f[1]), int(f[2]), int(f[4]), f[6])
    return rects, screen


def capture(name, *args):
    path = os.path.join(FRAME_DIR, name + ".png")
    r = subprocess.run([CTL, "capture", *args, "-o", path], capture_output=True, timeout=60)
    check(r.returncode == 0, f"{name}: captured ({r.stderr.decode().strip()})")
    return read_png(path)


def pixel(png, x, y):
    w, h, ch, rows = png
    return tuple(rows[y][x * ch:x * ch + 3])


def near(a, b, tol=0):
    return all(abs(p - q) <= tol for p, q in zip(a, b))


def mask(png, rect, colour, skip_cells, scale, tol=0):
    """Which pixels of @rect, from @skip_cells cells in, are @colour: the glyphs drawn there."""
    x, y, w, h = rect
    x0 = x + skip_cells * 6 * scale
    return [[near(pixel(png, xx, yy), colour, tol) for xx in range(x0, x + w)] for yy in range(y, y + h)]


def check_screen(png, rects, scale, selected, n_log, what, tol=0):
    # The highlight bar: at the right end of the selected item's rect only (no text there).
    for (kind, i), (x, y, w, h) in sorted(rects.items()):
        if kind != "item":
            continue
        got = near(pixel(png, x + w - 2, y + h // 2), HIGHLIGHT, tol)
        check(got == (i == selected), f"{what}: item {i} {'is' if i == selected else 'is not'} highlighted")
    # One log line per line logged, nothing below.
    for (kind, i), rect in sorted(rects.items()):
        if kind != "log":
            continue
        lit = any(any(row) for row in mask(png, rect, LOG, 0, scale, tol))
        check(lit == (i < n_log), f"{what}: log line {i} {'has' if i < n_log else 'has no'} text")


def run(tmp):
    os.environ["FENCELINE_SOCKET"] = os.path.join(tmp, "fl.sock")
    os.environ["FENCELINE_DISPLAY_SOCKET"] = os.path.join(tmp, "displayd.sock")
    os.environ["FENCELINE_DISPLAY_CONFIG"] = CONFIG
    os.environ["FENCELINE_IDLE_MS"] = "0"
    os.environ.pop("FENCELINE_DAEMON_STDERR", None)
    os.makedirs(FRAME_DIR, exist_ok=True)

    r = subprocess.run([RECOVERY, "--help"], capture_output=True)
    check(r.returncode == 0 and b"Usage: fl-recovery" in r.stdout, "--help")
    r = subprocess.run([RECOVERY, "--bogus"], capture_output=True)
    check(r.returncode == 2, "an unknown option: exit 2")

    # Keys on a pipe: down twice, select, down, select, then the pipe's end.
    code, out, err = recovery(b"jj\rj\r")
    check(code == 0, f"pipe: exit 0 ({err.strip()})")
    rects, screen = layout(out)
    check(screen is not None and screen[:2] == (480, 320) and screen[3] == "XRGB8888",
          f"pipe: --layout gives the screen ({screen})")
    check("-- Wipe data/factory reset" in out and "-- Wipe cache partition" in out,
          "pipe: the selections are logged on stdout")
    png = capture("recovery-pipe")
    scale = screen[2]
    # Logged: the greeting, and two lines per selection.
    check_screen(png, rects, scale, 3, 5, "pipe")
    # "-- Wipe data/factory reset" in log line 1 is the menu's "Wipe data/factory reset"
    # (item 2), glyph for glyph, three cells to the right.
    item = mask(png, rects[("item", 2)], (0xc0, 0xc0, 0xc0), 1, scale)
    logged = mask(png, rects[("log", 1)], LOG, 3, scale)
    width = 23 * 6 * scale
    check([row[:width] for row in item] == [row[:width] for row in logged] and any(map(any, item)),
          "pipe: the logged item name has the menu's glyphs")

    # Keys from a terminal: arrows (CSI sequences), Enter, then q; raw mode undone at exit.
    master, slave = pty.openpty()
    before = termios.tcgetattr(slave)
    p = subprocess.Popen([RECOVERY, "--no-evdev"], stdin=slave, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    time.sleep(0.5)
    os.write(master, b"\x1b[B\x1b[B\x1b[A\r")
    time.sleep(0.5)
    os.write(master, b"q")
    try:
        out, err = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
    check(p.returncode == 0, f"pty: exit 0 ({err.decode().strip()})")
    out = out.decode()
    check("-- Apply update from ADB" in out and "result: leave" in out,
          f"pty: arrows moved, Enter selected, q left ({out!r})")
    after = termios.tcgetattr(slave)
    check(after == before, "pty: the terminal's mode is restored")
    check(before[3] & termios.ICANON and before[3] & termios.ECHO, "pty: it was a cooked terminal")
    os.close(master)
    os.close(slave)
    png = capture("recovery-pty")
    check_screen(png, rects, scale, 1, 3, "pty")

    # The exits: End, Enter on "Power off"; Home, Enter on "Reboot system now".
    code, out, _ = recovery(b"\x1b[F\r")
    check(code == 0 and "result: Power off" in out, "End, Enter: Power off")
    code, out, _ = recovery(b"\x1b[H\r")
    check(code == 0 and "result: Reboot system now" in out, "Home, Enter: Reboot system now")

    # A device whose only engine is RGB565: found, drawn in it, colours within 565's steps.
    code, out, err = recovery(b"j", "--device", "1")
    rects565, screen565 = layout(out)
    check(code == 0 and screen565 is not None and screen565[3] == "RGB565",
          f"RGB565: found and used ({screen565}, {err.strip()})")
    if screen565:
        png = capture("recovery-rgb565", "old.lcd")
        check_screen(png, rects565, screen565[2], 1, 1, "RGB565", tol=8)

    # No display service: one clear line, exit 1.
    env = dict(os.environ, FENCELINE_DISPLAYD="/nonexistent/fl-displayd",
               FENCELINE_DISPLAY_SOCKET=os.path.join(tmp, "none.sock"))
    r = subprocess.run([RECOVERY, "--no-evdev"], input=b"", capture_output=True, env=env, timeout=60)
    last = r.stderr.decode().strip().splitlines()[-1:] or [""]
    check(r.returncode == 1 and last[0].startswith("fl-recovery: no display devices: "),
          f"no display: exit 1, a reason ({r.stderr.decode().strip()!r})")


main(run, "recovery-test.")

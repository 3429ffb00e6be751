#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The terminal driver in tmux (docs/display.md, "The terminal driver"):
fl-displayd runs in a tmux pane with the driver showing its panel there;
fl-recovery draws on it through libadf's simple buffers. Every cell of the
pane (tmux capture-pane -e) is checked against the panel's frame captured
by fl-displayctl, averaged as the driver must; after a resize too. Keys
sent to the pane (tmux send-keys) reach fl-recovery as the display's key
events. The pane is kept as a PNG (one pixel per half cell).

usage: terminal-test.py FL-DISPLAYD FL-RECOVERY FL-DISPLAYCTL CONFIG FRAME-DIR"""
import os
import re
import shutil
import struct
import subprocess
import sys
import time
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from displaytest import check, main, read_png, wait_for_path  # noqa: E402

DISPLAYD, RECOVERY, CTL, CONFIG = sys.argv[1:5]
FRAME_DIR = os.environ.get("FL_TEST_FRAME_DIR") or sys.argv[5]


def tmux(sock, *args):
    return subprocess.run(["tmux", "-S", sock, *args], capture_output=True, text=True, timeout=30)


def pane_cells(text, cols, rows):
    """tmux capture-pane -e text: each cell's (upper, lower) colour, None where never drawn."""
    cells = [[None] * cols for _ in range(rows)]
    # capture-pane -e carries the attributes from one line to the next.
    fg, bg = (255, 255, 255), (0, 0, 0)
    for r, line in enumerate(text.split("\n")[:rows]):
        c, i = 0, 0
        while i < len(line) and c < cols:
            if line[i] == "\x1b":
                m = re.match(r"\x1b\[([0-9;]*)m", line[i:])
                i += len(m.group(0))
                p = [int(x) for x in m.group(1).split(";") if x] or [0]
                j = 0
                while j < len(p):
                    if p[j] == 0:
                        fg, bg = (255, 255, 255), (0, 0, 0)
                    elif p[j] in (38, 48) and p[j + 1] == 2:
                        col = tuple(p[j + 2:j + 5])
                        fg, bg = (col, bg) if p[j] == 38 else (fg, col)
                        j += 4
                    elif p[j] == 39:
                        fg = (255, 255, 255)
                    elif p[j] == 49:
                        bg = (0, 0, 0)
                    j += 1
                continue
            ch = line[i]
            cells[r][c] = (fg, bg) if ch == "\u2580" else (bg, bg) if ch == " " else ("?", ch)
            c += 1
            i += 1
    return cells


def reference(png, cols, rows):
    """The picture the driver must show of a frame in a terminal of cols x rows: fit, average."""
    w, h, ch, data = png
    W, H = cols, rows * 2
    if w * H >= h * W:
        pw, ph = W, max(1, (h * W + w // 2) // w)
    else:
        ph, pw = H, max(1, (w * H + h // 2) // h)
    rx, ry = (W - pw) // 2, (H - ph) // 2
    pic = [[(0, 0, 0)] * W for _ in range(H)]
    for ty in range(ph):
        y0, y1 = ty * h // ph, max(ty * h // ph + 1, (ty + 1) * h // ph)
        for tx in range(pw):
            x0, x1 = tx * w // pw, max(tx * w // pw + 1, (tx + 1) * w // pw)
            n = (x1 - x0) * (y1 - y0)
            s = [0, 0, 0]
            for y in range(y0, y1):
                row = data[y]
                for x in range(x0, x1):
                    for k in range(3):
                        s[k] += row[x * ch + k]
            pic[ry + ty][rx + tx] = tuple((v + n // 2) // n for v in s)
    return [[(pic[2 * r][c], pic[2 * r + 1][c]) for c in range(W)] for r in range(rows)]


def write_png(path, cells):
    rows, cols = len(cells), len(cells[0])
    raw = b""
    for r in range(rows * 2):
        raw += b"\0" + b"".join(bytes((cells[r // 2][c] or ((0, 0, 0), (0, 0, 0)))[r % 2])
                                 if cells[r // 2][c] and cells[r // 2][c][0] != "?" else b"\xff\0\xff"
                                 for c in range(cols))

    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", cols, rows * 2, 8, 2, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def compare(sock, name, cols, rows):
    """Wait (a few frames at most) until the pane shows the panel's frame as the driver must."""
    path = os.path.join(FRAME_DIR, name + "-panel.png")
    r = subprocess.run([CTL, "capture", "-o", path], capture_output=True, timeout=60)
    check(r.returncode == 0, f"{name}: the panel captured ({r.stderr.strip()})")
    want = reference(read_png(path), cols, rows)
    bad = []
    for _ in range(50):
        got = pane_cells(tmux(sock, "capture-pane", "-e", "-N", "-p", "-t", "fl").stdout, cols, rows)
        bad = [(r_, c, got[r_][c], want[r_][c]) for r_ in range(rows) for c in range(cols)
               if got[r_][c] != want[r_][c]]
        if not bad:
            break
        time.sleep(0.1)
    write_png(os.path.join(FRAME_DIR, name + "-pane.png"), got)
    check(not bad, f"{name}: all {cols}x{rows} cells are the panel's frame ({len(bad)} differ: {bad[:3]})")


def run(tmp):
    if not shutil.which("tmux"):
        print("SKIP: tmux is not installed")
        return
    os.makedirs(FRAME_DIR, exist_ok=True)
    sock = os.path.join(tmp, "tmux.sock")
    os.environ.update(FENCELINE_SOCKET=os.path.join(tmp, "fl.sock"),
                      FENCELINE_DISPLAY_SOCKET=os.path.join(tmp, "displayd.sock"),
                      FENCELINE_IDLE_MS="0")
    os.environ.pop("FENCELINE_DAEMON_STDERR", None)
    cmd = f"{DISPLAYD} --foreground --config {CONFIG} 2>{tmp}/displayd.err; sleep 60"
    r = tmux(sock, "new-session", "-d", "-s", "fl", "-x", "100", "-y", "30", cmd)
    check(r.returncode == 0, f"tmux started ({r.stderr.strip()})")
    try:
        wait_for_path(os.path.join(tmp, "displayd.sock"))
        rec = subprocess.Popen([RECOVERY, "--no-evdev"], stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(0.5)
        compare(sock, "terminal", 100, 30)
        # Keys typed in the pane come to fl-recovery as the display's events.
        tmux(sock, "send-keys", "-t", "fl", "Down", "Down", "Enter")
        time.sleep(0.5)
        compare(sock, "terminal-selected", 100, 30)
        # A resize lays the picture out again, whole.
        tmux(sock, "resize-window", "-t", "fl", "-x", "60", "-y", "20")
        time.sleep(0.3)
        compare(sock, "terminal-resized", 60, 20)
        tmux(sock, "send-keys", "-t", "fl", "q")
        out, err = rec.communicate(timeout=60)
        check(rec.returncode == 0 and "-- Wipe data/factory reset" in out and "result: leave" in out,
              f"keys from the pane: Down Down Enter selected, q left ({out!r} {err!r})")
        # The service dies under a console that waits for the display's keys: it says so and ends.
        rec = subprocess.Popen([RECOVERY, "--no-evdev"], stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(0.5)
        pane_pid = tmux(sock, "display-message", "-p", "-t", "fl", "#{pane_pid}").stdout.strip()
        subprocess.run(["pkill", "-KILL", "-P", pane_pid, "-f", "fl-displayd"])
        try:
            out, err = rec.communicate(timeout=30)
            check(rec.returncode == 1 and "the display went away" in err,
                  f"the service killed: fl-recovery ends with the reason ({rec.returncode}, {err!r})")
        except subprocess.TimeoutExpired:
            rec.kill()
            rec.communicate()
            check(False, "the service killed: fl-recovery ends (it was still running after 30 s)")
    finally:
        tmux(sock, "kill-server")


main(run, "terminal-test.")

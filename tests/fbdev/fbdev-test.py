#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""fenceline-fbdev (docs/fbdev.md): /dev/fb0 for unmodified fbdev programs
on the virtual driver. Debian's fbset -i reads the geometry and timings;
fbdraw (an fbdev program of this test, <linux/fb.h> only) draws two pages,
pans, switches the format, is refused a bad one, blanks, waits for vsync,
sets the palette, each checked in a capture of the panel; Debian's fbcat,
another process, reads back what the display shows; Debian's fbi shows an
image 1:1, where a virtual console lets it run.

usage: fbdev-test.py FENCELINE-FBDEV LIBFBDEV FBDRAW FL-DISPLAYCTL CONFIG FRAME-DIR"""
import fcntl
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from displaytest import check, main, read_png  # noqa: E402

WRAPPER, LIB, FBDRAW, CTL, CONFIG = sys.argv[1:6]
FRAME_DIR = os.environ.get("FL_TEST_FRAME_DIR") or sys.argv[6]
W, H = 320, 240


def fb(*args, **kw):
    return subprocess.run(["sh", WRAPPER, *args], capture_output=True, timeout=60, **kw)


def capture(name):
    path = os.path.join(FRAME_DIR, name + ".png")
    r = subprocess.run([CTL, "capture", "-o", path], capture_output=True, timeout=60)
    check(r.returncode == 0, f"{name}: captured ({r.stderr.decode().strip()})")
    return read_png(path)


def pattern(which, x, y):
    if which == 0:
        return (x * 4 & 0xff, y * 5 & 0xff, (x ^ y) * 3 & 0xff)
    return (255 - (x & 0xff), (x + y) % 256, y * 7 & 0xff)


def wrong_pixels(png, want):
    w, h, ch, rows = png
    bad = []
    for y in range(h):
        for x in range(w):
            got = tuple(rows[y][x * ch:x * ch + 3])
            if got != want(x, y):
                bad.append((x, y, got, want(x, y)))
                if len(bad) > 3:
                    return bad
    return bad


def dpms():
    out = subprocess.run([CTL, "list", "--json"], capture_output=True, timeout=60).stdout
    dev = json.loads(out)["devices"][0]
    return next(i for i in dev["interfaces"] if i["name"] == "panel")["dpms"]


def have(prog):
    if shutil.which(prog):
        return True
    print(f"SKIP {prog}: not installed (Debian package {'fbi' if prog == 'fbi' else prog})")
    return False


def vt_usable():
    """Whether fbi could run on virtual console 1 here (a machine's console, not a container)."""
    try:
        fd = os.open("/dev/tty1", os.O_RDWR)
    except OSError:
        return False
    try:
        fcntl.ioctl(fd, 0x5603, bytes(6))  # VT_GETSTATE
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def run(tmp):
    os.environ["FENCELINE_SOCKET"] = os.path.join(tmp, "fl.sock")
    os.environ["FENCELINE_DISPLAY_SOCKET"] = os.path.join(tmp, "displayd.sock")
    os.environ["FENCELINE_DISPLAY_CONFIG"] = CONFIG
    os.environ["FENCELINE_FBDEV"] = LIB
    os.environ["FENCELINE_IDLE_MS"] = "0"
    os.environ.pop("FENCELINE_DAEMON_STDERR", None)
    os.makedirs(FRAME_DIR, exist_ok=True)

    r = fb("--help")
    check(r.returncode == 0 and b"usage: fenceline-fbdev" in r.stdout, "--help")
    r = subprocess.run(["sh", WRAPPER], capture_output=True)
    check(r.returncode == 2, "no program: exit 2")

    if have("fbset"):
        r = fb("fbset", "-i")
        out = r.stdout.decode()
        check(r.returncode == 0, f"fbset -i: exit 0 ({r.stderr.decode().strip()})")
        check(f"geometry {W} {H} {W} {2 * H} 32" in out, "fbset -i: the geometry, two pages")
        check("rgba 8/16,8/8,8/0,0/0" in out and "Name        : fenceline" in out,
              "fbset -i: XRGB8888 and the fix")
        check("# D: 10.260 MHz" in out and "V: 60.00" in out, "fbset -i: the mode's clock and refresh")

    # fbdraw: each step is captured before it goes on.
    p = subprocess.Popen(["sh", WRAPPER, FBDRAW], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    seen = {}

    def until(step):
        lines = []
        while True:
            line = p.stdout.readline()
            if not line:
                check(False, f"fbdraw: reached step {step} ({p.stderr.read().strip()})")
                return lines
            line = line.strip()
            if line == f"step {step}":
                return lines
            lines.append(line)
            seen[line.split()[0]] = line

    def go():
        p.stdin.write("\n")
        p.stdin.flush()

    until("info")
    check(seen.get("var") == f"var {W} {H} {W} {2 * H} 32 r16/8 g8/8 b0/8", f"fbdraw: {seen.get('var')}")
    check(seen.get("fix", "").startswith("fix fenceline "), f"fbdraw: {seen.get('fix')}")
    go()
    until("page0")
    bad = wrong_pixels(capture("fbdev-page0"), lambda x, y: pattern(0, x, y))
    check(not bad, f"page 0 on screen, every pixel: {bad}")
    go()
    until("page1")
    check(seen.get("pan") == "pan 0", "FBIOPAN_DISPLAY to page 1")
    bad = wrong_pixels(capture("fbdev-page1"), lambda x, y: pattern(1, x, y))
    check(not bad, f"page 1 on screen after the pan: {bad}")
    go()
    until("xbgr")
    check(seen.get("xbgr") == "xbgr 0 red 0 blue 16", f"FBIOPUT_VSCREENINFO XBGR8888: {seen.get('xbgr')}")
    bad = wrong_pixels(capture("fbdev-xbgr"), lambda x, y: tuple(reversed(pattern(1, x, y))))
    check(not bad, f"the same memory read as XBGR8888: red and blue swap: {bad}")
    go()
    until("bad")
    check(seen.get("bad", "").startswith("bad -1 Invalid argument bpp 32 xres 320"),
          f"a 24-bit var refused, the var given back as it was: {seen.get('bad')}")
    check(seen.get("badsize", "").startswith("badsize -1 Invalid argument bpp 32 xres 320"),
          f"a size of no mode refused, the var given back as it was: {seen.get('badsize')}")
    check(seen.get("after") == "after 32 320 red 0", f"the var unchanged: {seen.get('after')}")
    go()
    until("blank")
    check(seen.get("blank") == "blank 0" and dpms() == "off", "FBIOBLANK powerdown: DPMS off")
    go()
    until("unblank")
    check(seen.get("unblank") == "unblank 0" and dpms() == "on", "FBIOBLANK unblank: DPMS on")
    go()
    until("vsync")
    check(seen.get("vsync") == "vsync 0 0 crtc1 -1 No such device",
          f"FBIO_WAITFORVSYNC: {seen.get('vsync')}")
    go()
    until("cmap")
    check(seen.get("cmap") == "cmap 0 0 same", f"FBIOPUTCMAP, FBIOGETCMAP: {seen.get('cmap')}")
    go()
    p.wait(timeout=60)
    check(p.returncode == 0, "fbdraw: exit 0")

    # The services fbdraw started run without the preload (nor a second libfenceline in them).
    services = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            args = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
            maps = open(f"/proc/{pid}/maps").read()
        except OSError:
            continue
        if args and (args[0].endswith(b"fl-displayd") or args[0].endswith(b"fencelined")) and \
                any(a.startswith(tmp.encode()) for a in args):
            services.append((args[0].decode(), "libfenceline-fbdev" in maps))
    check(len(services) == 2 and not any(m for _, m in services),
          f"the services started under the preload run without it: {services}")

    # Another process reads the framebuffer: what the display shows (fbdraw's page 1, XBGR).
    if have("fbcat"):
        r = fb("fbcat")
        check(r.returncode == 0, f"fbcat: exit 0 ({r.stderr.decode().strip()})")
        head, _, px = r.stdout.partition(b"\n")
        check(head == f"P6 {W} {H} 255".encode(), f"fbcat: {head}")
        shown = capture("fbdev-fbcat")
        bad = wrong_pixels(shown, lambda x, y: tuple(px[(y * W + x) * 3:(y * W + x) * 3 + 3]))
        check(not bad and len(px) == W * H * 3, f"fbcat: what the display shows: {bad}")

    # fbi shows a PPM of the panel's size 1:1: on a machine with a virtual console only.
    if have("fbi"):
        if not vt_usable():
            print("SKIP fbi: no usable virtual console here (/dev/tty1)")
        else:
            img = os.path.join(tmp, "image.ppm")
            with open(img, "wb") as f:
                f.write(f"P6\n{W} {H}\n255\n".encode())
                f.write(bytes(v for y in range(H) for x in range(W) for v in pattern(0, x, y)))
            q = subprocess.Popen(["sh", WRAPPER, "fbi", "-T", "1", "--noverbose", "-t", "30", "-1", img],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            # fbi draws when it has loaded the image: look until it has, for 20 s at most.
            for _ in range(40):
                bad = wrong_pixels(capture("fbdev-fbi"), lambda x, y: pattern(0, x, y))
                if not bad:
                    break
                time.sleep(0.5)
            check(not bad, f"fbi: the image on screen, every pixel: {bad}")
            q.terminate()
            q.wait(timeout=30)

    # No display service: open() fails with the reason, the program is told.
    env = dict(os.environ, FENCELINE_DISPLAYD="/nonexistent/fl-displayd",
               FENCELINE_DISPLAY_SOCKET=os.path.join(tmp, "none", "displayd.sock"))
    os.makedirs(os.path.join(tmp, "none"), mode=0o700)
    r = subprocess.run(["sh", WRAPPER, FBDRAW], capture_output=True, env=env, input=b"", timeout=60)
    err = r.stderr.decode()
    check(r.returncode == 1 and "open /dev/fb0" in err, f"no display: open fails ({err.strip()!r})")


main(run, "fbdev-test.")

#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Choosing the output (docs/display.md, "Choosing the output"): --display
and FENCELINE_DISPLAY pick the driver of the built-in device and a service
of their own (displayd-CHOICE.sock); fl-displayctl names the driver in use
and why each other one cannot run here; bad choices are usage errors that
start nothing; fl-displayd refuses a config and a choice together; "auto"
takes what can run and says what it passed over; fl-recovery and
fenceline-fbdev take --display too.

usage: choice-test.py FL-DISPLAYCTL FL-DISPLAYD FL-RECOVERY FENCELINE-FBDEV
(env: FENCELINE_DAEMON, FENCELINE_DISPLAYD; a scratch dir in TMPDIR)
"""
import json
import os
import pty
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from displaytest import check, main  # noqa: E402

TOOL, DISPLAYD, RECOVERY, FBDEV = sys.argv[1:5]
DRIVERS = ("window", "kms", "terminal", "virtual")


def ctl(*args, env=None):
    return subprocess.run([TOOL, *args], capture_output=True, text=True, timeout=60, env=env)


def drivers(*choice):
    """fl-displayctl [--display C] drivers, as {name: line}."""
    r = ctl(*choice, "drivers")
    check(r.returncode == 0, f"{' '.join(choice)} drivers: exit 0 (got {r.returncode}: {r.stderr.strip()})")
    got = {}
    for line in r.stdout.splitlines():
        name, _, rest = line.partition(" ")
        got[name] = rest.strip()
    check(set(got) == set(DRIVERS), f"every driver is listed once (got {sorted(got)})")
    return got


def run(tmp):
    os.environ["FENCELINE_SOCKET"] = os.path.join(tmp, "fl.sock")
    for k in ("FENCELINE_DISPLAY_SOCKET", "FENCELINE_DISPLAY_CONFIG", "FENCELINE_DISPLAY",
              "FENCELINE_DAEMON_STDERR", "DISPLAY", "WAYLAND_DISPLAY"):
        os.environ.pop(k, None)
    os.environ["FENCELINE_IDLE_MS"] = "0"

    # Bad choices: usage errors, nothing started.
    for bad in ("bogus", "virtual:/dev/null", "kms:", "terminal:relative", "window:x", ""):
        r = ctl("--display", bad, "list")
        check(r.returncode == 2, f"--display {bad!r}: exit 2 (got {r.returncode}: {r.stderr.strip()})")
        check("auto, virtual, window, terminal[:TTY], kms[:CARD]" in r.stderr,
              f"--display {bad!r}: the message lists the choices (got {r.stderr.strip()!r})")
    check(not [f for f in os.listdir(tmp) if f.startswith("displayd")],
          "no service was started for a bad choice")

    # virtual: its own service and socket, the driver named in list and list --json.
    r = ctl("--display", "virtual", "list")
    check(r.returncode == 0 and re.search(r"^device 0: phone \(driver virtual\)$", r.stdout, re.M),
          f"--display virtual list names the driver (got {r.stdout[:80]!r} {r.stderr.strip()})")
    check(os.path.exists(os.path.join(tmp, "displayd-virtual.sock")), "displayd-virtual.sock is its socket")
    check(not os.path.exists(os.path.join(tmp, "displayd.sock")), "the default service was not started")
    r = ctl("--display", "virtual", "list", "--json")
    check(r.returncode == 0 and json.loads(r.stdout)["devices"][0]["driver"] == "virtual",
          "list --json has \"driver\": \"virtual\"")
    got = drivers("--display", "virtual")
    check(got["virtual"] == "in use (1 device)", f"virtual: in use (got {got['virtual']!r})")
    for name in ("window", "kms"):
        # Not built, or no display / no card here ($DISPLAY is unset, no /dev/dri in CI): a reason.
        line = got[name]
        check(line == "available" or re.match(r"unavailable: \S.{8,}", line),
              f"{name}: available, or unavailable with a reason (got {line!r})")
    check(got["terminal"].startswith("unavailable: no terminal"),
          f"terminal: the service has no terminal, said so (got {got['terminal']!r})")

    # The same through the environment, as every display client reads it.
    env = dict(os.environ, FENCELINE_DISPLAY="virtual")
    r = ctl("list", env=env)
    check(r.returncode == 0 and "(driver virtual)" in r.stdout, "FENCELINE_DISPLAY=virtual: the same service")

    # auto: the first that can run, the others' reasons on the service's log.
    r = ctl("--display", "auto", "list")
    m = re.search(r"^device 0: \S+ \(driver (\w+)\)$", r.stdout, re.M)
    check(r.returncode == 0 and m is not None, f"--display auto list (got {r.stdout[:80]!r} {r.stderr.strip()})")
    chosen = m.group(1) if m else None
    got = drivers("--display", "auto")
    check(chosen in got and got[chosen].startswith("in use"), f"auto's choice {chosen} is in use")
    for name in ("window", "kms"):
        if name == chosen:
            break
        check(got[name].startswith("unavailable: "), f"auto passed over {name} for a reason: {got[name]!r}")
    r = subprocess.run([DISPLAYD, "--foreground", "--display", "auto", "--socket",
                        os.path.join(tmp, "auto-fg.sock"), "--idle-timeout", "1"],
                       capture_output=True, text=True, timeout=60)
    check(re.search(r"--display auto: " + str(chosen) + "$", r.stderr, re.M) is not None,
          f"fl-displayd --display auto logs its choice (got {r.stderr.strip()!r})")
    for name in ("window", "kms"):
        if name == chosen:
            break
        check(re.search(r"--display auto: not " + name + r": \S", r.stderr) is not None,
              f"fl-displayd --display auto logs why not {name}")

    # A terminal by its path: a pty of ours.
    master, slave = pty.openpty()
    path = os.ttyname(slave)
    r = ctl("--display", "terminal:" + path, "list")
    check(r.returncode == 0 and "(driver terminal)" in r.stdout,
          f"--display terminal:{path}: the terminal driver (got {r.stdout[:60]!r} {r.stderr.strip()})")
    sock = "displayd-terminal" + path.replace("/", "-") + ".sock"
    check(os.path.exists(os.path.join(tmp, sock)), f"{sock} is its socket")
    got = drivers("--display", "terminal:" + path)
    check(got["terminal"] == "in use (1 device)", f"terminal: in use (got {got['terminal']!r})")
    # "terminal" alone is the caller's terminal; without one, a usage error naming the fix.
    r = ctl("--display", "terminal", "list")
    check(r.returncode == 2 and "terminal:/dev/pts/N" in r.stderr,
          f"--display terminal without a terminal on stdin: exit 2, says how (got {r.stderr.strip()!r})")

    # kms on a machine without it: the service does not start, the tool says how to learn why.
    if not os.path.isdir("/dev/dri"):
        r = ctl("--display", "kms", "list")
        check(r.returncode == 1 and "fl-displayd --foreground --display kms" in r.stderr,
              f"--display kms without a card: exit 1 and the way to see why (got {r.stderr.strip()!r})")
        r = subprocess.run([DISPLAYD, "--foreground", "--display", "kms", "--socket",
                            os.path.join(tmp, "kms-fg.sock")], capture_output=True, text=True, timeout=60)
        check(r.returncode != 0 and "the kms driver cannot run here: " in r.stderr,
              f"fl-displayd --display kms says why it cannot run (got {r.stderr.strip()!r})")

    # A config and a choice exclude each other; a bad FENCELINE_DISPLAY is a usage error.
    r = subprocess.run([DISPLAYD, "--foreground", "--config", "/dev/null", "--display", "virtual"],
                       capture_output=True, text=True, timeout=60)
    check(r.returncode == 2 and "exclude each other" in r.stderr,
          f"fl-displayd --config with --display: exit 2 (got {r.returncode}: {r.stderr.strip()})")
    r = subprocess.run([DISPLAYD, "--foreground"], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, FENCELINE_DISPLAY="kms:"))
    check(r.returncode == 2 and "bad display choice 'kms:'" in r.stderr,
          f"fl-displayd with FENCELINE_DISPLAY=kms: exit 2 (got {r.returncode}: {r.stderr.strip()})")

    # fl-recovery and fenceline-fbdev take the choice too.
    r = subprocess.run([RECOVERY, "--display", "bogus"], capture_output=True, text=True, timeout=60)
    check(r.returncode == 2 and "not a display choice" in r.stderr, "fl-recovery --display bogus: exit 2")
    # The preload itself is not what is tested (and an ASan build's cannot be preloaded into sh).
    r = subprocess.run(["sh", FBDEV, "--display", "virtual", "sh", "-c", "echo $FENCELINE_DISPLAY"],
                       capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, FENCELINE_FBDEV="/dev/null"))
    check(r.returncode == 0 and r.stdout.strip() == "virtual",
          f"fenceline-fbdev --display virtual sets FENCELINE_DISPLAY (got {r.stdout.strip()!r})")
    os.close(master)
    os.close(slave)


main(run, "fl-choice-")

#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""fl-displayd under valgrind while clients watch its events: every byte it
writes to a client (VSYNC and HOTPLUG events into handles' pipes, replies)
is initialised, and it leaks nothing it should have freed at exit. The
service is started by the library, through FENCELINE_DISPLAYD pointing at a
wrapper that runs it under valgrind.

usage: service-valgrind-test.py FL-DISPLAYCTL FL-DISPLAYD CONFIG"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from displaytest import check, main  # noqa: E402

CTL, DISPLAYD, CONFIG = sys.argv[1:4]


def run(tmp):
    logs = os.path.join(tmp, "vg")
    os.mkdir(logs)
    wrapper = os.path.join(tmp, "displayd-under-valgrind")
    with open(wrapper, "w") as f:
        f.write("#!/bin/sh\nexec valgrind -q --leak-check=full --errors-for-leak-kinds=definite "
                f"--log-file={logs}/vg.%p.log {DISPLAYD} \"$@\"\n")
    os.chmod(wrapper, 0o755)
    os.environ.update(FENCELINE_SOCKET=os.path.join(tmp, "fl.sock"),
                      FENCELINE_DISPLAY_SOCKET=os.path.join(tmp, "displayd.sock"),
                      FENCELINE_DISPLAY_CONFIG=CONFIG, FENCELINE_DISPLAYD=wrapper,
                      FENCELINE_IDLE_MS="0")
    os.environ.pop("FENCELINE_DAEMON_STDERR", None)

    def ctl(*args):
        return subprocess.run([CTL, *args], capture_output=True, text=True, timeout=120)

    watch = subprocess.Popen([CTL, "watch", "--count", "6"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    # The watcher subscribes first (its "# watching" lines), then events come.
    for _ in range(3):
        watch.stdout.readline()
    check(ctl("blank", "phone.panel", "on").returncode == 0, "the panel turned on")
    check(ctl("hotplug", "phone.hdmi").returncode == 0, "the HDMI plugged")
    out, _ = watch.communicate(timeout=120)
    check("hotplug connected" in out and out.count("vsync") >= 4, f"events seen ({out!r})")
    check(ctl("unplug", "phone.hdmi").returncode == 0, "the HDMI unplugged")
    # SIGTERM: the service exits, and valgrind writes its leak summary.
    from displaytest import stop_services
    stop_services(tmp)
    errors = []
    for name in os.listdir(logs):
        text = open(os.path.join(logs, name)).read()
        if text.strip():
            errors.append(text[:3000])
    check(not errors, "valgrind found nothing in the service:\n" + "\n".join(errors))


main(run, "service-valgrind-test.")

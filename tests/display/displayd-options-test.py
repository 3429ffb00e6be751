#!/usr/bin/env python3
"""fl-displayd refuses a device whose config gives a driver option that its
driver did not ask for (docs/display.md, "The config file"): the typo is named
with the device's line, and the service does not start.

usage: displayd-options-test.py FL_DISPLAYD
"""
import os
import subprocess
import sys
import tempfile

CONFIG = """[device phone]
driver = virtual
options = card=/dev/dri/card0
[interface dsi]
type = DSI
"""


def main():
    displayd = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        ini = os.path.join(tmp, "displays.ini")
        with open(ini, "w") as f:
            f.write(CONFIG)
        p = subprocess.run([displayd, "-f", "-s", os.path.join(tmp, "d.sock"), "-c", ini],
                           stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
        want = f"{ini}:1: the virtual driver takes no option 'card'"
        if p.returncode == 0 or want not in p.stderr:
            print(f"FAIL options_a_driver_did_not_ask_for_are_refused: rc {p.returncode}, "
                  f"stderr {p.stderr!r}, want {want!r}")
            return 1
        if os.path.exists(os.path.join(tmp, "d.sock")):
            print("FAIL options_a_driver_did_not_ask_for_are_refused: the service listened")
            return 1
    print("ok options_a_driver_did_not_ask_for_are_refused")
    return 0


if __name__ == "__main__":
    sys.exit(main())

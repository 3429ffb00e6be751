#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
#
# Writes the seed corpora of the display fuzz targets:
#   corpus-display-config/  configs (fuzz-display-config.c): the default,
#                           every key and section kind, and a few errors;
#   corpus-display-buffer/  buffers (fuzz-display-buffer.c): one exact fit
#                           per plane layout, each quirk, and 32-bit edges.
#
# usage: make-display-corpus.py   (from anywhere; writes next to itself)
import os
import shutil
import struct

HERE = os.path.dirname(os.path.abspath(__file__))

CONFIGS = {
    "minimal.ini": "[device d]\ndriver = virtual\n",
    "full.ini": """[device phone]
driver = virtual
padding = unpadded
[interface panel]
type = DSI
flags = primary, external
modes = 1920x1080@60, 1280x720@30
current-mode = 1280x720@30
size-mm = 121x68
connected = yes
[interface lvds]
type = custom:LVDS
connected = no
modes = 800x600@60
[engine video]
formats = NV12, YUV420, fourcc:T16x
interfaces = lvds, panel
[device two]
driver = other
[interface wb]
type = memory
flags = none
""",
    "gang.ini": """[device tablet]
driver = virtual
[interface left]
type = DSI
modes = 960x1080@60
current-mode = 960x1080@60
connected = yes
gang = panel
gang-tile = 0,0
background = 0x102040
[interface right]
type = DSI
modes = 960x1080@60
current-mode = 960x1080@60
connected = yes
gang = panel
gang-tile = 1,0
[engine rgb]
formats = XRGB8888, fourcc:XT44
interfaces = left, right
""",
    "err-gang-hole.ini": "[device d]\ndriver = v\n[interface a]\ntype = DSI\ngang = g\n"
                         "gang-tile = 0,0\n[interface b]\ntype = DSI\ngang = g\n"
                         "gang-tile = 1,1\n",
    "crlf-comments.ini": "; comment\r\n[device d] # x\r\ndriver = v ; y\r\n"
                         "[engine e]\r\nformats = RGB565\r\n",
    "err-mode.ini": "[device d]\ndriver = v\n[interface i]\ntype = HDMI\n"
                    "modes = 1920x1080@60, 1920x1080\n",
    "err-resolve.ini": "[device d]\ndriver = v\n[engine e]\nformats = XRGB8888\n"
                       "interfaces = nowhere\n",
}

# flags, format index, fourcc, w, h, n_planes, offset[4], pitch[4], size[4], delta[4]
def buf(flags, fmt, w, h, planes, pitch, size=(0, 0, 0, 0), offset=(0, 0, 0, 0),
        fourcc=0, delta=(0, 0, 0, 0)):
    return (struct.pack("<BBIIII", flags, fmt, fourcc, w, h, planes) +
            struct.pack("<4I", *offset) + struct.pack("<4I", *pitch) +
            struct.pack("<4Q", *size) + struct.pack("<4b", *delta))

# Format indexes in src/display/format.c's table: XRGB8888 23, NV12 44, YUV410 48, YUV420 52.
BUFFERS = {
    "xrgb-exact": buf(2, 23, 64, 32, 1, (256, 0, 0, 0)),
    "xrgb-short": buf(2, 23, 64, 32, 1, (256, 0, 0, 0), delta=(-1, 0, 0, 0)),
    "xrgb-unpadded": buf(3, 23, 64, 32, 1, (260, 0, 0, 0), offset=(7, 0, 0, 0)),
    "nv12-exact": buf(2, 44, 64, 32, 2, (64, 64, 0, 0)),
    "yuv410-exact": buf(2, 48, 64, 32, 3, (64, 16, 16, 0)),
    "yuv420-pitch": buf(2, 52, 64, 32, 3, (64, 31, 32, 0)),
    "wrap32": buf(0, 23, 1, 0x10001, 1, (0x10000, 0, 0, 0), size=(0x10000, 0, 0, 0)),
    "max": buf(2, 23, 0x3fffffff, 0xffffffff, 1, (0xffffffff, 0, 0, 0),
               offset=(0xffffffff, 0, 0, 0)),
    "custom": buf(2, 255, 16, 16, 1, (64, 0, 0, 0), fourcc=0x78363154),
}


def rewrite(name, files, mode):
    path = os.path.join(HERE, name)
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    for fname, data in files.items():
        with open(os.path.join(path, fname), mode) as f:
            f.write(data)


def main():
    configs = dict(CONFIGS)
    with open(os.path.join(HERE, "..", "..", "data", "displays.ini")) as f:
        configs["default.ini"] = f.read()
    rewrite("corpus-display-config", configs, "w")
    rewrite("corpus-display-buffer", BUFFERS, "wb")


if __name__ == "__main__":
    main()

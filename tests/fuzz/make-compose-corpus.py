#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
#
# Writes the seed corpus of fuzz-display-compose.c, corpus-display-compose/:
# frames the compositor accepts (each format, blend, transform, scaling,
# damage), so that mutants start on the drawing path, and a few it refuses.
#
# usage: make-compose-corpus.py   (from anywhere; writes next to itself)
import os
import shutil
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus-display-compose")

FMT = {"AR24": 0, "XR24": 1, "AB24": 2, "XB24": 3, "RA24": 4, "RX24": 5, "BA24": 6,
       "BX24": 7, "RG24": 8, "BG24": 9, "RG16": 10, "BG16": 11, "NV12": 12, "YU12": 13,
       "YV12": 14, "YUYV": 15}


def px(v):
    """Pixels to the target's u16 units (16.16 >> 6)."""
    return int(v * 1024)


def frame(target="AR24", tw=32, th=24, layers=(), damage=None, bg=(0, 0, 0, 0xffff),
          pitch_delta=0, size_delta=0):
    nd = 255 if damage is None else len(damage)
    out = struct.pack("<BBBbbBB4H", FMT[target], tw, th, pitch_delta, size_delta,
                      len(layers), nd, *bg)
    rects = list(damage or [])
    rects += [(0, 0, 0, 0)] * (4 - len(rects))
    for r in rects:
        out += struct.pack("<bbBB", *r)
    for l in layers:
        out += layer(**l)
    return out


def layer(fmt="AR24", w=16, h=12, src=None, dst=(0, 0, 16, 12), z=0, blend=1,
          alpha=0xffff, transform=0, filt=0, pitch=(0, 0, 0), size=(0, 0, 0), off=(0, 0, 0)):
    src = src or (0, 0, w, h)
    return struct.pack("<BBB3b3b3B4HbbBBBBHBB", FMT[fmt], w, h, *pitch, *size, *off,
                       *(px(v) for v in src), *dst, z, blend, alpha, transform, filt)


SEEDS = {
    "empty": frame(),
    "one-layer": frame(layers=[{}]),
    "scaled-bilinear": frame(layers=[{"src": (1.5, 2.25, 10.5, 7), "dst": (-3, 2, 30, 20)}]),
    "nearest-turned": frame(layers=[{"transform": 5, "filt": 1, "dst": (4, 4, 12, 16)}]),
    "coverage-alpha": frame(layers=[{"blend": 2, "alpha": 0x8000}]),
    "nv12": frame(target="XR24", layers=[{"fmt": "NV12", "w": 16, "h": 12, "off": (3, 5, 0)}]),
    "yuv420": frame(layers=[{"fmt": "YU12", "w": 18, "h": 10, "pitch": (2, 1, 3),
                             "dst": (2, 2, 18, 10), "transform": 2}]),
    "four-layers-damage": frame(
        layers=[{"fmt": f, "z": z, "dst": (z * 3, z * 2, 16, 12)}
                for z, f in enumerate(["XR24", "RG16", "BG24", "BA24"])],
        damage=[(2, 2, 10, 10), (5, 5, 20, 3), (-4, 20, 30, 30)]),
    "target-565": frame(target="RG16", layers=[{"blend": 0}], bg=(0x100, 0x200, 0x300, 0x400)),
    "refused-pitch": frame(layers=[{"pitch": (-1, 0, 0)}]),
    "refused-size": frame(layers=[{"size": (-1, 0, 0)}]),
    "refused-src": frame(layers=[{"src": (8, 0, 9, 12)}]),
    "refused-format": frame(layers=[{"fmt": "YUYV"}]),
}

shutil.rmtree(OUT, ignore_errors=True)
os.makedirs(OUT)
for name, data in SEEDS.items():
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)

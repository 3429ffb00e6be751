#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
#
# Writes corpus-proto-display/, the seeds of fuzz-proto-display.c: one valid
# request of every op of the display protocol (docs/protocol.md, "The
# display service"), with the fds it comes with, and a few near misses.
# Each file is: byte 0 the fd count, byte 1 the stashed count / 2 (bit 7:
# truncated), then the packet.
#
# usage: make-proto-display-corpus.py   (from anywhere; writes next to itself)
import os
import shutil
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus-proto-display")


def pkt(op, body, flags=0):
    return struct.pack("<4I", op, flags, 1, len(body)) + body


def buf(planes=1, acquire=False, engine=0, w=64, h=64, fourcc=0x34325258):
    return struct.pack("<6I4I4I", engine, w, h, fourcc, planes, 1 if acquire else 0,
                       *([0] * 4), *([256] * planes + [0] * (4 - planes)))


def post(intfs, bufs, custom=b"", flags=0, fence=2, tail=b""):
    body = struct.pack("<6I", 0, flags, fence, len(intfs), len(bufs), len(custom))
    body += b"".join(struct.pack("<I", i) for i in intfs) + b"".join(bufs) + custom + tail
    return pkt(141, body)


# POST's wire flags: bit 31, a layer per buffer follows; bit 30, a writeback.
LAYERS = 1 << 31
WRITEBACK = 1 << 30


def layer(z=0):
    # flags, src x y w h (16.16), dst x y w h, zpos, blend, alpha, transform, filter, reserved[2]
    return struct.pack("<5I2i9I", 1, 0, 0, 64 << 16, 64 << 16, 10, 20, 128, 128, z, 1, 0x8000,
                       1, 0, 0, 0)


def writeback(pad=0):
    return struct.pack("<6I", 0x34325258, 1920, 1080, 0, 7680, pad)


MODE = struct.pack("<I5H5H3I32s", 148500, 1920, 2008, 2052, 2200, 0, 1080, 1084, 1089, 1125,
                   0, 60, 5, 64, b"1920x1080")

SEEDS = {
    "hello": (0, 0, pkt(128, struct.pack("<2I", 1, 0))),
    "hello-v0": (0, 0, pkt(128, struct.pack("<2I", 0, 0))),
    "devices": (0, 0, pkt(129, b"")),
    "open-device": (0, 0, pkt(130, struct.pack("<4I", 0, 0, 0, 0))),
    "open-interface": (0, 0, pkt(130, struct.pack("<4I", 1, 0, 2, 0))),
    "close": (0, 0, pkt(131, struct.pack("<2I", 3, 0))),
    "device-data": (0, 0, pkt(132, struct.pack("<2I", 0, 0))),
    "interface-data": (0, 0, pkt(133, struct.pack("<2I", 1, 0))),
    "engine-data": (0, 0, pkt(134, struct.pack("<2I", 2, 0))),
    "attach": (0, 0, pkt(135, struct.pack("<4I", 0, 0, 0, 0))),
    "detach": (0, 0, pkt(136, struct.pack("<4I", 0, 1, 1024, 0))),
    "blank": (0, 0, pkt(137, struct.pack("<2I", 1, 255))),
    "set-mode": (0, 0, pkt(138, struct.pack("<2I", 1, 0) + MODE)),
    "set-event": (0, 0, pkt(139, struct.pack("<4I", 1, 0, 1, 0))),
    "simple-alloc": (0, 0, pkt(140, struct.pack("<4I", 1, 1920, 1080, 0x34325258))),
    "post-one": (1, 0, post([0], [buf()])),
    "post-acquire": (2, 0, post([0, 2], [buf(acquire=True)], b"\x01\x02\x03")),
    "post-nv12": (2, 0, post([0], [buf(planes=2, fourcc=0x3231564e)])),
    "post-test-only": (1, 0, post([0], [buf()], flags=1, fence=0)),
    "post-stashed": (3, 1, post([0], [buf(planes=4, acquire=True)])),
    "post-too-few-fds": (0, 0, post([0], [buf()])),
    "post-layers": (2, 0, post([0], [buf(), buf()], flags=LAYERS, tail=layer(1) + layer(2))),
    "post-writeback": (2, 0, post([2], [buf()], flags=WRITEBACK, tail=writeback())),
    "post-layers-writeback": (2, 0, post([2], [buf()], b"\x07", flags=LAYERS | WRITEBACK | 1,
                                         tail=layer() + writeback())),
    "post-writeback-pad": (2, 0, post([2], [buf()], flags=WRITEBACK, tail=writeback(pad=1))),
    "post-fds": (5, 0, pkt(142, b"")),
    "simple-post": (2, 0, pkt(143, struct.pack("<2I", 1, 1) + buf(acquire=True))),
    "set-connected": (0, 0, pkt(144, struct.pack("<2I", 1, 1))),
    "stats": (0, 0, pkt(145, struct.pack("<2I", 0, 0))),
    "capture": (0, 0, pkt(146, struct.pack("<2I", 1, 0x34325258))),
    "dump": (0, 0, pkt(147, struct.pack("<2I", 0, 0))),
    "dump-json": (0, 0, pkt(147, struct.pack("<2I", 1, 0))),
    "dump-bad-flags": (0, 0, pkt(147, struct.pack("<2I", 2, 0))),
    "dump-pad": (0, 0, pkt(147, struct.pack("<2I", 1, 1))),
    "dump-fd": (1, 0, pkt(147, struct.pack("<2I", 1, 0))),
    # SET_SOURCE (150): handle, type, w, h, format, reserved[3], a layer; a STREAM's one fd.
    "set-source-pattern": (0, 0, pkt(150, struct.pack("<8I", 2, 1, 320, 240, 0x34325258, 0, 0, 0)
                                     + layer())),
    "set-source-stream": (1, 0, pkt(150, struct.pack("<8I", 2, 2, 64, 48, 0x34325258, 0, 0, 0)
                                    + layer())),
    "set-source-stream-no-fd": (0, 0, pkt(150, struct.pack("<8I", 2, 2, 64, 48, 0x34325258,
                                                           0, 0, 0) + layer())),
    "set-source-reserved": (0, 0, pkt(150, struct.pack("<8I", 2, 0, 0, 0, 0, 0, 1, 0)
                                      + layer())),
    "set-source-type-3": (0, 0, pkt(150, struct.pack("<8I", 2, 3, 1, 1, 0, 0, 0, 0) + layer())),
    "device-info": (0, 0, pkt(148, struct.pack("<2I", 1, 0))),
    "device-info-pad": (0, 0, pkt(148, struct.pack("<2I", 1, 1))),
    "type-name": (0, 0, pkt(149, struct.pack("<2I", 2, 0))),
    "type-name-fd": (1, 0, pkt(149, struct.pack("<2I", 2, 0))),
    "flags": (0, 0, pkt(129, b"", flags=1)),
    "short": (0, 0, struct.pack("<3I", 129, 0, 1)),
}

shutil.rmtree(OUT, ignore_errors=True)
os.makedirs(OUT)
for name, (nfds, stashed, data) in SEEDS.items():
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(bytes([nfds, stashed]) + data)

#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
#
# Writes corpus-proto-bufferqueue/, the seeds of fuzz-proto-bufferqueue.c:
# one valid request of every op of the buffer queue protocol
# (docs/protocol.md, "Buffer queues"), one valid reply of every op and the
# event, and a few near misses. Each file is: byte 0 the fd count (bits
# 0-1), bit 6 a packet of the consumer's, bit 7 truncated; then the packet.
#
# usage: make-proto-bufferqueue-corpus.py   (from anywhere; writes next to itself)
import os
import shutil
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus-proto-bufferqueue")
REPLY = 0x80000000
XR24 = 0x34325258


def pkt(op, body, seq=1):
    return struct.pack("<4I", op, 0, seq, len(body)) + body


def usage(s):
    return s.encode().ljust(64, b"\0")


def rect(x, y, w, h):
    return struct.pack("<4i", x, y, w, h)


seeds = {
    "hello": (0, pkt(160, struct.pack("<4I", 1, 0, 1234, 0))),
    "hello-v2": (0, pkt(160, struct.pack("<4I", 2, 0, 1234, 0))),
    "dequeue": (0, pkt(161, struct.pack("<4I", 64, 64, XR24, 0) + usage("gpu-render"))),
    "dequeue-unterminated": (0, pkt(161, struct.pack("<4I", 64, 64, XR24, 0) + b"x" * 64)),
    "queue": (0, pkt(162, struct.pack("<IIQII", 0, 0, 0, 0, 0))),
    "queue-fence-damage": (1, pkt(162, struct.pack("<IIQII", 1, 1, 16666667, 2, 0)
                                  + rect(0, 0, 10, 10) + rect(5, 5, 1, 1))),
    "queue-bad-rect": (0, pkt(162, struct.pack("<IIQII", 1, 0, 0, 1, 0) + rect(-1, 0, 1, 1))),
    "cancel": (0, pkt(163, struct.pack("<II", 0, 0))),
    "cancel-fence": (1, pkt(163, struct.pack("<II", 3, 1))),
    "unknown": (0, pkt(166, b"")),
    "short": (0, b"\xa0\0\0\0\0\0"),
    "r-hello": (0x40, pkt(160 | REPLY, struct.pack("<iI4I", 0, 0, 1, 3, 1, 0)
                          + b"queue".ljust(32, b"\0"))),
    "r-dequeue": (0x42, pkt(161 | REPLY, struct.pack("<iI6IQ4I4I", 0, 0, 2, 3, 64, 64, XR24, 1,
                                                     16384, 0, 0, 0, 0, 256, 0, 0, 0))),
    "r-dequeue-nv12": (0x40, pkt(161 | REPLY, struct.pack("<iI6IQ4I4I", 0, 0, 1, 0, 64, 64,
                                                          0x3231564e, 2, 6144, 0, 4096, 0, 0,
                                                          64, 64, 0, 0))),
    "r-queue": (0x40, pkt(162 | REPLY, struct.pack("<iIQ", 0, 0, 7))),
    "r-cancel": (0x40, pkt(163 | REPLY, struct.pack("<iI", 0, 0))),
    "r-error": (0x40, pkt(161 | REPLY, struct.pack("<iI", -11, 0))),
    "r-refusal": (0x40, pkt(160 | REPLY, struct.pack("<iI", -16, 0), seq=0)),
    "e-slot-free": (0x40, pkt(164, b"", seq=0)),
}

shutil.rmtree(OUT, ignore_errors=True)
os.makedirs(OUT)
for name, (b0, data) in seeds.items():
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(bytes([b0]) + data)

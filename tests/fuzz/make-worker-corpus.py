#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes corpus-heap-worker/: well-formed messages of the heap pool's worker
protocol (src/heap/worker-proto.h), each after fuzz-heap-worker.c's first
byte (bit 0: 0 request, 1 reply; bits 1-7: the fds that came along)."""
import os
import struct
import sys

VERSION = 0x666C6802
SETUP, WORK = 1, 2
MEMFD, HUGETLB, THP, DMA_HEAP = 1, 2, 3, 4


def req(kind, nclose=0, make=(), how=MEMFD, name=b"system"):
    name = b"fl-heap:" + name
    body = struct.pack("<IIII", VERSION, kind, nclose, len(make))
    for i in range(8):
        size, count = make[i] if i < len(make) else (0, 0)
        body += struct.pack("<QII", size, count, 0)
    body += struct.pack("<IIiI40s", how, 0, -1, 0, name)
    return body


def made(size, asked, n, error=0):
    body = struct.pack("<IiQII", VERSION, error, size, asked, n)
    for i in range(16):
        body += struct.pack("<QQ", 0x2d if i < n else 0, 1000 + i if i < n else 0)
    return body


def main():
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus-heap-worker")
    os.makedirs(out, exist_ok=True)
    seeds = {
        "setup-memfd": (0, req(SETUP)),
        "setup-thp": (0, req(SETUP, how=THP, name=b"contig")),
        "setup-dma-heap": (1, req(SETUP, how=DMA_HEAP, name=b"system")),
        "work-close-and-make": (3, req(WORK, nclose=3, make=[(4096, 32), (1 << 20, 5)])),
        "work-make-only": (0, req(WORK, make=[(33 << 20, 7)])),
        "made-full": (16, made(4096, 16, 16)),
        "made-some-then-enomem": (2, made(4096, 5, 2, error=-12)),
        "made-none": (0, made(8 << 20, 4, 0, error=-24)),
    }
    for name, (nfds, body) in seeds.items():
        first = (nfds << 1) | (1 if name.startswith("made") else 0)
        with open(os.path.join(out, name), "wb") as f:
            f.write(bytes([first]) + body)
    return 0


if __name__ == "__main__":
    sys.exit(main())

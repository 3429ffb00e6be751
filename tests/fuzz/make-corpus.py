#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Write the seed corpus of fuzz-protocol: valid requests of every op, and a few
invalid ones (named *-bad-*) next to the rule they break.

usage: make-corpus.py [OUTDIR]    (default: corpus/ next to this script)

Each file is one fuzz input: a first byte giving the number of fds that came
with the packet (fuzz-protocol.c: bits 0-3 modulo 6; bits 4-7 clear: not
truncated), then the packet as docs/protocol.md lays it out. Integers are
written little-endian, the byte order of the machines we fuzz on (the
protocol itself uses host byte order). Run it again after changing the
protocol, and commit the result.
"""
import os
import struct
import sys

VERSION = 9
# HELLO's services[8]: sync version 2, heap 1, observe 2, the rest unspoken.
SERVICES = (2, 1, 2, 0, 0, 0, 0, 0)
NAME_LEN = 32

# core 1..15, sync 16..63, heap 64..95, observe 96..127
HELLO, PING = 1, 2
TIMELINE_CREATE, TIMELINE_INC, TIMELINE_GET_VALUE = 16, 17, 18
FENCE_CREATE, FENCE_MERGE, FENCE_INFO = 19, 20, 21
TIMELINE_BIND, POOL_FILL, FENCE_NEW, TIMELINE_SIGNAL = 22, 23, 24, 25
TIMELINE_SYNC, FENCE_SET_DEADLINE, FENCE_GET_DEADLINE, FENCE_IMPORT = 26, 27, 28, 29
FENCE_RETURN = 30
TIMELINE_INC_AT, TIMELINE_FAIL = 31, 32
KICK_ACK = 50
FENCE_MERGE_INTO, FENCE_HINT_DEADLINE = 40, 41
HEAP_ALLOC, HEAP_FREE, HEAP_INFO = 64, 65, 66
DUMP, WAIT_BEGIN, WAIT_END, TRACE, TRACE_EVENT = 96, 97, 98, 99, 100
F_FENCE = 16
F_NOTIFY = 8
DUMP_HEAPS = 32
F_REPLY = 1
F_KEPT = 2
F_AFTER_CLOSES = 4
SW_SYNC_32BIT = 1
MERGE_WAIT_ALL = 1
MERGE_MAINLINE = 2
POOL_F_SIGNAL_ENDS = 1
POOL_F_INODES = 2


def name(s):
    b = s.encode()
    assert len(b) < NAME_LEN
    return b.ljust(NAME_LEN, b"\0")


def packet(nfds, op, seq, body, flags=0):
    hdr = struct.pack("<IIII", op, flags, seq, len(body))
    return bytes([nfds]) + hdr + body


SEEDS = {
    "hello": packet(0, HELLO, 0, struct.pack("<II8I", VERSION, 0, *SERVICES)),
    # A newer client: versions and services this daemon does not know.
    "hello-newer-services": packet(0, HELLO, 0,
                                   struct.pack("<II8I", VERSION, 0, 3, 1, 7, 2, 0, 0, 0, 9)),
    "hello-bad-flags": packet(0, HELLO, 0, struct.pack("<II8I", VERSION, 1, *SERVICES)),
    # Core version 8's HELLO: shorter, refused for its version.
    "hello-bad-v8": packet(0, HELLO, 0, struct.pack("<II", 8, 0)),
    "timeline-create": packet(0, TIMELINE_CREATE, 1,
                              name("sw_sync") + struct.pack("<II", 0, 0)),
    "timeline-create-32bit": packet(0, TIMELINE_CREATE, 2,
                                    name("wrap") + struct.pack("<II", SW_SYNC_32BIT, 0)),
    "timeline-inc": packet(1, TIMELINE_INC, 3, struct.pack("<Q", 1)),
    "timeline-inc-at": packet(1, TIMELINE_INC_AT, 48, struct.pack("<QQ", 1, 1000)),
    # Invalid: no time (-EINVAL).
    "timeline-inc-at-bad-zero": packet(1, TIMELINE_INC_AT, 49, struct.pack("<QQ", 1, 0)),
    "timeline-fail": packet(1, TIMELINE_FAIL, 53, struct.pack("<iI", -5, 0)),
    # Invalid: a status that is no error (-EINVAL).
    "timeline-fail-bad-status": packet(1, TIMELINE_FAIL, 54, struct.pack("<iI", 0, 0)),
    "kick-ack": packet(0, KICK_ACK, 55, struct.pack("<Q", 3)),
    "timeline-get-value": packet(1, TIMELINE_GET_VALUE, 4, b""),
    "fence-create": packet(3, FENCE_CREATE, 5, struct.pack("<Q", 1) + name("frame")),
    "fence-create-reply": packet(3, FENCE_CREATE, 6, struct.pack("<Q", 2) + name(""),
                                 flags=F_REPLY),
    "fence-merge": packet(2, FENCE_MERGE, 7,
                          name("merged") + struct.pack("<II", MERGE_WAIT_ALL, 0)),
    "fence-merge-into": packet(2, FENCE_MERGE_INTO, 55,
                               name("merged") + struct.pack("<II", MERGE_WAIT_ALL, 3)),
    # Invalid: an unknown flag (-EINVAL).
    "fence-merge-into-bad-flags": packet(2, FENCE_MERGE_INTO, 56,
                                         name("m") + struct.pack("<II", 4, 0)),
    "fence-hint-deadline": packet(1, FENCE_HINT_DEADLINE, 57, struct.pack("<Q", 1000)),
    "fence-merge-mainline": packet(2, FENCE_MERGE, 20, name("") + struct.pack(
        "<II", MERGE_WAIT_ALL | MERGE_MAINLINE, 0)),
    # Invalid: an unknown merge flag (-EINVAL).
    "fence-merge-bad-flag": packet(2, FENCE_MERGE, 21, name("m") + struct.pack("<II", 4, 0)),
    "fence-set-deadline": packet(1, FENCE_SET_DEADLINE, 22, struct.pack("<Q", 123456789)),
    "fence-get-deadline": packet(1, FENCE_GET_DEADLINE, 23, b""),
    "fence-import": packet(1, FENCE_IMPORT, 24, name("gpu")),
    # Invalid: a name without a NUL (-EINVAL).
    "fence-import-bad-name": packet(1, FENCE_IMPORT, 25, b"x" * NAME_LEN),
    "dump": packet(0, DUMP, 28, struct.pack("<II", 0, 0)),
    "dump-json": packet(0, DUMP, 29, struct.pack("<II", 1, 0)),
    "dump-fds-pid": packet(0, DUMP, 31, struct.pack("<II", 2 | 1, 4242)),
    # Invalid: an unknown dump flag; a pid without FDS (-EINVAL).
    "dump-bad-flag": packet(0, DUMP, 30, struct.pack("<II", 64, 0)),
    "dump-deadlocks": packet(0, DUMP, 33, struct.pack("<II", 4 | 1, 0)),
    "dump-stats-reset": packet(0, DUMP, 34, struct.pack("<II", 8 | 16, 0)),
    "dump-bad-two-views": packet(0, DUMP, 35, struct.pack("<II", 4 | 8, 0)),
    "dump-bad-reset": packet(0, DUMP, 36, struct.pack("<II", 16, 0)),
    "wait-begin": packet(1, WAIT_BEGIN, 37, struct.pack("<QIi", 1, 4242, -1)),
    "wait-begin-notify": packet(2, WAIT_BEGIN, 38, struct.pack("<QIi", 2, 4242, 100),
                                flags=F_NOTIFY),
    "wait-begin-bad-timeout": packet(1, WAIT_BEGIN, 39, struct.pack("<QIi", 3, 1, -2)),
    "wait-begin-bad-nfds": packet(1, WAIT_BEGIN, 40, struct.pack("<QIi", 4, 1, 0),
                                  flags=F_NOTIFY),
    "wait-end": packet(0, WAIT_END, 41, struct.pack("<QiI", 1, -62, 0)),
    "wait-end-bad-result": packet(0, WAIT_END, 42, struct.pack("<QiI", 1, 1, 0)),
    "trace-start": packet(0, TRACE, 43, struct.pack("<II", 1, 1000)),
    "trace-stop": packet(0, TRACE, 44, struct.pack("<II", 2, 0)),
    "trace-bad-cmd": packet(0, TRACE, 45, struct.pack("<II", 3, 0)),
    "dump-bad-pid": packet(0, DUMP, 32, struct.pack("<II", 1, 4242)),
    "fence-info": packet(1, FENCE_INFO, 8, struct.pack("<II", 0, 64)),
    "ping": packet(0, PING, 9, b""),
    "ping-after-closes": packet(0, PING, 26, b"", flags=F_AFTER_CLOSES),
    # Invalid: AFTER_CLOSES is for PING only (-EINVAL).
    "timeline-inc-bad-after-closes": packet(1, TIMELINE_INC, 27, struct.pack("<Q", 1),
                                            flags=F_AFTER_CLOSES),
    "timeline-bind": packet(1, TIMELINE_BIND, 10, b""),
    "pool-fill": packet(0, POOL_FILL, 11, struct.pack("<II", 32, 0)),
    "pool-fill-signal-ends": packet(0, POOL_FILL, 15,
                                    struct.pack("<II", 4, POOL_F_SIGNAL_ENDS)),
    "pool-fill-inodes": packet(0, POOL_FILL, 16,
                               struct.pack("<II", 8, POOL_F_SIGNAL_ENDS | POOL_F_INODES)),
    "fence-new": packet(0, FENCE_NEW, 12, struct.pack("<Q", 1) + name("frame") +
                        struct.pack("<II", 0, 0)),
    "fence-new-reply": packet(0, FENCE_NEW, 13, struct.pack("<Q", 3) + name("") +
                              struct.pack("<II", 1, 5), flags=F_REPLY),
    "fence-new-kept": packet(0, FENCE_NEW, 18, struct.pack("<Q", 4) + name("own") +
                             struct.pack("<II", 0, 6), flags=F_KEPT | F_REPLY),
    # Invalid: KEPT is for FENCE_NEW only (-EINVAL).
    "fence-create-bad-kept": packet(3, FENCE_CREATE, 19, struct.pack("<Q", 1) + name(""),
                                    flags=F_KEPT),
    "timeline-signal": packet(0, TIMELINE_SIGNAL, 14, struct.pack("<QII", 1, 0, 0)),
    "dump-heaps": packet(0, DUMP, 33, struct.pack("<II", DUMP_HEAPS, 0)),
    "dump-heaps-json": packet(0, DUMP, 34, struct.pack("<II", DUMP_HEAPS | 1, 0)),
    # Invalid: HEAPS and FDS together (-EINVAL).
    "dump-bad-heaps-fds": packet(0, DUMP, 35, struct.pack("<II", DUMP_HEAPS | 2, 0)),
    "heap-alloc": packet(0, HEAP_ALLOC, 36, name("system") + struct.pack("<QII", 4096, 0, 0)),
    "heap-alloc-group": packet(0, HEAP_ALLOC, 37,
                               name("carveout") + struct.pack("<QII", 1 << 20, 0, 7)),
    # Invalid: an empty heap name (-EINVAL).
    "heap-alloc-bad-name": packet(0, HEAP_ALLOC, 38, name("") + struct.pack("<QII", 1, 0, 0)),
    "heap-free": packet(1, HEAP_FREE, 39, struct.pack("<II", 0, 0)),
    "heap-free-group": packet(0, HEAP_FREE, 40, struct.pack("<II", 7, 0)),
    # Invalid: a group and an fd (-EINVAL); no group and no fd (-EINVAL).
    "heap-free-bad-both": packet(1, HEAP_FREE, 41, struct.pack("<II", 7, 0)),
    "heap-free-bad-none": packet(0, HEAP_FREE, 42, struct.pack("<II", 0, 0)),
    "heap-info": packet(0, HEAP_INFO, 43, name("carveout")),
    "heap-info-all": packet(0, HEAP_INFO, 44, name("")),
    "fence-return": packet(1, FENCE_RETURN, 46, b""),
    # Invalid: no fd (-EINVAL).
    "fence-return-bad-nfds": packet(0, FENCE_RETURN, 47, b""),
    # Invalid: an op past the last (-EOPNOTSUPP).
    "unknown-op-25": packet(0, 25, 45, b""),
    # A display service's flip for the trace: type FLIP (4), interface 0, device 0, post 7.
    "trace-event-flip": packet(0, TRACE_EVENT, 50,
                               struct.pack("<HHIQQQQiI", 4, 0, 0, 7, 2000, 2000, 1000, 0, 0)),
    # An ACQUIRE (2) with its fence.
    "trace-event-acquire": packet(1, TRACE_EVENT, 51,
                                  struct.pack("<HHIQQQQiI", 2, 0, 0, 7, 1000, 0, 0, 0, 0),
                                  F_FENCE),
    # Invalid: type 8 (-EINVAL).
    "trace-event-bad-type": packet(0, TRACE_EVENT, 52,
                                   struct.pack("<HHIQQQQiI", 8, 0, 0, 7, 1000, 0, 0, 0, 0)),
    "timeline-sync": packet(0, TIMELINE_SYNC, 16, struct.pack("<II", 0, 0)),
    # Invalid: pad must be 0 (-EINVAL).
    "timeline-sync-bad-pad": packet(0, TIMELINE_SYNC, 17, struct.pack("<II", 0, 1)),
}


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(
        os.path.abspath(__file__)), "corpus")
    os.makedirs(out, exist_ok=True)
    for fname, data in sorted(SEEDS.items()):
        with open(os.path.join(out, fname), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()

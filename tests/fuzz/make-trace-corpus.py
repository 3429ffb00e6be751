#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Write the seed corpus of fuzz-trace-json: small fenceline traces
(docs/trace-format.md) using every event kind, a few refused ones (named
bad-*) and plain JSON edge cases. Each file stays under 4096 bytes, what
fuzz-main.c reads of a seed.

usage: make-trace-corpus.py [OUTDIR]    (default: corpus-trace/ next to this script)
"""
import json
import os
import sys

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__),
                                                          "corpus-trace")
TL = 10000000


def trace(events, **other):
    o = {"producer": "fenceline", "format": 1, "clock": "CLOCK_MONOTONIC", "start_us": 0,
         "end_us": 100}
    o.update(other)
    return json.dumps({"traceEvents": events, "displayTimeUnit": "ms", "otherData": o},
                      separators=(",", ":"))


def meta():
    return [
        {"ph": "M", "name": "process_name", "pid": 7, "args": {"name": "cam (7)"}},
        {"ph": "M", "name": "thread_name", "pid": 7, "tid": 7, "args": {"name": "cam"}},
        {"ph": "M", "name": "thread_name", "pid": TL, "tid": 1,
         "args": {"name": "timeline cam #1"}},
        {"ph": "M", "name": "thread_name", "pid": TL, "tid": 2,
         "args": {"name": "timeline display #2"}},
    ]


def tl(i, name, pid):
    return {"ph": "i", "s": "t", "cat": "timeline", "name": "timeline_create", "pid": TL,
            "tid": i, "ts": 0, "args": {"timeline": i, "name": name, "pid": pid, "value": 0}}


def sig(i, v, pid, ts, fences):
    return {"ph": "i", "s": "t", "cat": "signal", "name": "signal", "pid": TL, "tid": i,
            "ts": ts, "args": {"timeline": i, "from": v - 1, "value": v, "status": 0,
                               "by_pid": pid, "by_tid": pid, "fences": fences}}


def fb(fid, name, pid, ts, points, kind="create", inputs=None):
    a = {"fence": fid, "kind": kind, "points": points}
    if inputs:
        a["inputs"] = inputs
    return {"ph": "b", "cat": "fence", "name": name, "id": f"f{fid}", "pid": pid, "tid": pid,
            "ts": ts, "args": a}


def fe(fid, name, pid, ts, status=0, point=None):
    a = {"fence": fid, "status": status}
    if point:
        a["timeline"], a["value"] = point
    return {"ph": "e", "cat": "fence", "name": name, "id": f"f{fid}", "pid": pid, "tid": pid,
            "ts": ts, "args": a}


def wait(fid, pid, ts, dur, result=0):
    return {"ph": "X", "cat": "wait", "name": "wait f", "pid": pid, "tid": pid, "ts": ts,
            "dur": dur, "args": {"fence": fid, "result": result, "timeout_ms": 100}}


def dl(fid, pid, ts, d):
    return {"ph": "i", "s": "t", "cat": "deadline", "name": "deadline", "pid": pid, "tid": pid,
            "ts": ts, "args": {"fence": fid, "deadline_us": d}}


def disp(name, ts, post, **args):
    return {"ph": "i", "s": "t", "cat": "display", "name": name, "pid": 10000001, "tid": 1,
            "ts": ts, "args": {"device": 0, "post": post, **args}}


def screen():
    """A display service's track: two posts flipped (the second late), vsyncs, a drop."""
    return [disp("vsync", 10, 0, interface=0), disp("post", 12, 1, pid=7, buffers=1),
            disp("post", 13, 2, pid=7, buffers=1), disp("vsync", 26, 0, interface=0),
            disp("flip", 26, 1, interface=0, vsync_us=26, ready_us=12),
            disp("vsync", 42, 0, interface=0),
            disp("flip", 42, 2, interface=0, vsync_us=42, ready_us=13),
            disp("release", 42, 1, by_post=2), disp("post", 43, 3, pid=7, buffers=1),
            disp("acquire_failed", 44, 3, buffer=0, status=-62), disp("drop", 44, 3, status=-62)]


def pipeline():
    return meta() + [
        tl(1, "cam", 7), tl(2, "display", 8),
        fb(1, "img", 7, 1, [[1, 1]]), fb(2, "m", 8, 2, [[1, 1]], "merge", [1]),
        dl(2, 8, 2, 10), sig(1, 1, 7, 20, [1, 2]), fe(1, "img", 7, 20, 0, [1, 1]),
        fe(2, "m", 8, 20, 0, [1, 1]), wait(2, 8, 3, 17),
        sig(2, 1, 8, 22, []),
        {"ph": "X", "cat": "timeline", "name": "value 0", "pid": TL, "tid": 1, "ts": 0,
         "dur": 20, "args": {"timeline": 1, "value": 0}},
        {"ph": "X", "cat": "timeline", "name": "value 1", "pid": TL, "tid": 1, "ts": 20,
         "dur": 80, "args": {"timeline": 1, "value": 1}},
        {"ph": "s", "cat": "flow", "name": "wake", "id": 1, "pid": TL, "tid": 1, "ts": 20},
        {"ph": "f", "bp": "e", "cat": "flow", "name": "wake", "id": 1, "pid": 8, "tid": 8,
         "ts": 20},
        {"ph": "i", "s": "t", "cat": "timeline", "name": "timeline_destroy", "pid": TL,
         "tid": 1, "ts": 99, "args": {"timeline": 1, "value": 1}},
    ]


CORPUS = {
    "pipeline": trace(pipeline()),
    "screen": trace(screen()),
    # Invalid: a drop whose status is not -errno.
    "bad-screen-status": trace([disp("drop", 1, 3, status=1)]),
    "pending": trace(meta() + [tl(1, "cam", 7), fb(1, "x", 7, 1, [[1, 5]]), dl(1, 7, 1, 5),
                               fe(1, "x", 7, 100, 1)]),
    "failed": trace([tl(1, "a", 7), fb(1, "x", 7, 1, [[1, 1]]), dl(1, 7, 1, 5),
                     {"ph": "i", "s": "t", "cat": "signal", "name": "signal", "ts": 9,
                      "args": {"timeline": 1, "from": 0, "value": 1, "status": -5,
                               "by_pid": 7, "by_tid": 0, "fences": [1]}},
                     fe(1, "x", 7, 9, -5)]),
    "loop": trace([fb(1, "a", 1, 0, [[1, 1]]), fb(2, "b", 2, 0, [[2, 1]]), dl(1, 1, 0, 5),
                   wait(1, 2, 1, 6, -62), sig(2, 1, 2, 8, [2]), wait(2, 1, 5, 3),
                   sig(1, 1, 1, 10, [1]), fe(1, "a", 1, 10, 0, [1, 1])]),
    "merge-inputs": trace([fb(1, "a", 1, 0, [[1, 1]]), fb(2, "b", 1, 0, [[2, 2]]),
                           fb(3, "m", 1, 0, [], "merge", [1, 2]), dl(3, 1, 0, 1),
                           sig(1, 1, 1, 4, [1]), sig(2, 2, 1, 6, [2]), fe(3, "m", 1, 6)]),
    "deadlock": trace([{"ph": "i", "s": "g", "cat": "deadlock", "name": "deadlock", "ts": 3,
                        "args": {"text": "a waits b \u00e9", "pids": [1, 2]}}]),
    "unknown-events": trace([{"ph": "C", "name": "c", "ts": 1, "args": {"v": 1}},
                             {"ph": "Q"}, {"ph": "i", "cat": "x", "ts": 2, "new": [True]}]),
    "empty": trace([]),
    "bad-producer": json.dumps({"traceEvents": [], "otherData": {"producer": "chrome"}}),
    "bad-format": trace([], format=9),
    "bad-signal": trace([{"ph": "i", "cat": "signal", "name": "signal", "ts": 1,
                          "args": {"timeline": 1, "value": 1.5, "status": 0, "by_pid": 1}}]),
    "bad-twice": trace([fb(1, "a", 1, 0, []), fb(1, "a", 1, 1, [])]),
    "bad-points": trace([fb(1, "a", 1, 0, [[1]])]),
    "json-strings": '["\\u00e9\\ud83d\\ude00\\n\\"\\\\\\/", "caf\u00e9", ""]',
    "json-numbers": "[0, -0, 1e5, -1.25E-3, 9223372036854775807, 9223372036854775808, 1e308]",
    "json-nested": "[" * 60 + "{}" + "]" * 60,
    "json-bad-deep": "[" * 70 + "]" * 70,
    "json-bad-surrogate": '"\\ud800"',
    "json-bad-utf8": b'"\xc0\xaf"'.decode("latin-1"),
    "json-bad-trailing": '{"a": 1,}',
}


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, text in CORPUS.items():
        data = text.encode("latin-1" if name == "json-bad-utf8" else "utf-8")
        assert len(data) < 4096, name
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)


main()

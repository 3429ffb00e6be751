#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""fencectl against a live daemon: the dump's JSON matches docs/fencectl.md's
schema and names the processes holding each fd; text mode, --help, usage
errors; and no daemon is started just to look.

usage: fencectl-test.py FENCECTL HOLDER   (env: FENCELINE_DAEMON, a scratch dir in TMPDIR)
"""
import json
import os
import subprocess
import sys
import tempfile

from fl_schema import check, failures, validate  # tests/fl_schema.py


FENCECTL, HOLDER = sys.argv[1], sys.argv[2]


# The schema of docs/fencectl.md, "dump --json": key -> type (or a nested schema).
POINT = {"timeline": str, "timeline_id": int, "value": str, "status": int, "timestamp_ns": int}
HOLDER_S = {"pid": int, "comm": str}
TIMELINE = {"id": int, "name": str, "driver": str, "value": str, "dead": bool,
            "pending": [str], "holders": [HOLDER_S]}
FENCE = {"id": int, "name": str, "status": int, "timestamp_ns": int, "created_ns": int, "points": [POINT],
         "holders": [HOLDER_S]}
CLIENT = {"pid": int, "uid": int, "comm": str, "timelines": int, "fences": int}
WAITER = {"pid": int, "comm": str, "tid": int, "thread": str,
          "fence": {"id": int, "name": str}, "waited_ms": int, "timeout_ms": int}
DUMP = {"version": int, "daemon": {"pid": int}, "clients": [CLIENT], "timelines": [TIMELINE],
        "fences": [FENCE], "waiters": [WAITER]}
OPTIONAL = {"owner": int}  # timelines with a shared counter whose creator is connected
# fds --json: "objects" hold two shapes, told apart by "kind".
HELD_FENCE = {"kind": str, "name": str, "status": int, "age_ns": int}
HELD_TIMELINE = {"kind": str, "name": str, "value": str}
def held_objects(value, path):
    """fds objects hold two shapes, told apart by "kind"."""
    check(isinstance(value, list), f"{path} is a list")
    for i, v in enumerate(value if isinstance(value, list) else []):
        kind = v.get("kind") if isinstance(v, dict) else None
        check(kind in ("fence", "timeline"), f"{path}[{i}].kind")
        validate(v, HELD_FENCE if kind == "fence" else HELD_TIMELINE, f"{path}[{i}]")


PROCESS = {"pid": int, "comm": str, "fences": int, "pending": int, "timelines": int,
           "objects": held_objects}
FDS = {"samples": int, "interval_ms": int, "growing": [int],
       "last": {"version": int, "processes": [PROCESS]}}




def fencectl(*args):
    return subprocess.run([FENCECTL, *args], capture_output=True, text=True, timeout=30)


with tempfile.TemporaryDirectory() as tmp:
    sock = os.path.join(tmp, "fl.sock")
    os.environ["FENCELINE_SOCKET"] = sock

    # Looking must not start a daemon.
    r = fencectl("dump")
    check(r.returncode == 3 and "no fenceline daemon" in r.stderr, "no daemon: exit 3")
    check(not os.path.exists(sock), "no daemon started by fencectl")

    holder = subprocess.Popen([HOLDER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        line = holder.stdout.readline().split()
        check(line[:1] == ["ready"], "holder ready")
        pid = int(line[1])

        r = fencectl("dump", "--json")
        check(r.returncode == 0, "dump --json: exit 0")
        dump = json.loads(r.stdout)
        validate(dump, DUMP, optional=OPTIONAL)
        tls = {t["name"]: t for t in dump["timelines"]}
        fences = {f["name"]: f for f in dump["fences"]}
        check(set(tls) >= {"gpu", 'disp"lay'}, "both timelines, the quoted name intact")
        check(tls["gpu"]["value"] == "2" and tls["gpu"]["pending"] == ["5"],
              "the owner's signal is seen (the daemon caught up)")
        check(tls["gpu"].get("owner") == pid, "owner is the creator")
        check(pid in [h["pid"] for h in tls["gpu"]["holders"]], "timeline holder")
        check(set(fences) >= {"frame-1", "vblank", "both"}, "three fences")
        check(len(fences["both"]["points"]) == 2, "merged fence has two points")
        check(all(f["status"] == 0 for f in fences.values()), "all pending")
        check(pid in [h["pid"] for h in fences["both"]["holders"]], "fence holder")
        check(any(c["pid"] == pid and c["fences"] >= 3 for c in dump["clients"]), "client listed")

        r = fencectl("dump")
        check(r.returncode == 0 and f"held by: pid {pid} (" in r.stdout, "text dump names holders")
        check("timelines:" in r.stdout and "fences:" in r.stdout, "text dump sections")

        # fds: what each process holds; a leaking one grows at every look.
        leaker = subprocess.Popen([HOLDER, "leak"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        try:
            lpid = int(leaker.stdout.readline().split()[1])
            r = fencectl("fds", str(pid))
            check(r.returncode == 0 and
                  f"pid {pid} (fencectl-holder): 3 fences (3 pending), 2 timelines" in r.stdout,
                  "fds PID: the holder's counts")
            check(f"pid {lpid} " not in r.stdout, "fds PID: only that process")
            check("fence frame-1: active, age " in r.stdout, "fds lists fences with age")
            r = fencectl("fds", "--samples", "3", "--interval", "300")
            check(r.returncode == 0 and f"growing: pid {lpid} " in r.stdout, "leaker flagged")
            check(f"growing: pid {pid} " not in r.stdout, "steady holder not flagged")
            r = fencectl("fds", "--json", "--samples", "3", "--interval", "300")
            check(r.returncode == 0, "fds --json: exit 0")
            fds = json.loads(r.stdout)
            validate(fds, FDS)
            check(fds["growing"] == [lpid], "fds --json: growing is the leaker")
            procs = {p["pid"]: p for p in fds["last"]["processes"]}
            check(procs.get(pid, {}).get("pending") == 3, "fds --json: pending count")
        finally:
            leaker.stdin.close()
            leaker.wait(timeout=30)
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)

    for args, code in ((["--help"], 0), (["help", "dump"], 0), (["dump", "--help"], 0),
                       (["help", "fds"], 0), (["fds", "--help"], 0), (["fds", "--samples", "0"], 2),
                       (["fds", "x"], 2), (["bogus"], 2), (["dump", "--bogus"], 2), ([], 2)):
        r = fencectl(*args)
        check(r.returncode == code, f"fencectl {' '.join(args)}: exit {code}")
        check("usage: fencectl" in (r.stdout + r.stderr), f"fencectl {' '.join(args)}: usage")

print("ok" if not failures else f"{len(failures)} failed")
sys.exit(1 if failures else 0)

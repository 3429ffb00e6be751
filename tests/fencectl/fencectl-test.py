#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""fencectl against a live daemon: the dump's JSON matches docs/fencectl.md's
schema and names the processes holding each fd; text mode, --help, usage
errors; and no daemon is started just to look.

usage: fencectl-test.py FENCECTL HOLDER   (env: FENCELINE_DAEMON, a scratch dir in TMPDIR)
"""
import json
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time

from fl_schema import check, failures, validate  # tests/fencectl/fl_schema.py


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
DUMP = {"version": int, "daemon": {"pid": int, "passes": int}, "clients": [CLIENT], "timelines": [TIMELINE],
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

        # Pending fences whose every fd was closed leave the daemon, as a kernel sync_pt
        # goes with its last reference, though their timeline lives on and never gets there.
        abandoner = subprocess.Popen([HOLDER, "abandon"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        try:
            check(abandoner.stdout.readline().split()[:1] == ["ready"], "abandoner ready")
            left = None
            for _ in range(100):  # a liveness bound: the daemon's sweeps release closed fds
                dump = json.loads(fencectl("dump", "--json").stdout)
                tl = [t for t in dump["timelines"] if t["name"] == "abandon"]
                left = (len(tl[0]["pending"]) if tl else -1,
                        sum(f["name"] == "abandoned" for f in dump["fences"]))
                if left == (0, 0):
                    break
                time.sleep(0.1)
            check(left == (0, 0), f"abandoned pending fences freed (pending points, fences: {left})")
        finally:
            abandoner.stdin.close()
            abandoner.wait(timeout=30)
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)

    # A daemon that does not answer: --timeout gives up on it (here a listener nobody serves).
    silent = os.path.join(tmp, "silent.sock")
    lsock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    lsock.bind(silent)
    lsock.listen(4)
    r = fencectl("--socket", silent, "--timeout", "0.3", "dump")
    check(r.returncode == 1 and "did not answer" in r.stderr, "--timeout: a silent daemon")
    lsock.close()
    r = fencectl("--timeout", "soon", "dump")
    check(r.returncode == 2 and "bad --timeout" in r.stderr, "--timeout: a bad value")

    # A daemon started with a low fd limit keeps it for everyone: its log and fencectl say so.
    # As root it would raise its limit (CAP_SYS_RESOURCE), so it runs as nobody, serving us.
    def low_limit_nobody():
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
        if os.geteuid() == 0:
            os.setgid(65534)
            os.setuid(65534)

    lowdir = os.path.join(tmp, "low")
    os.mkdir(lowdir)
    os.chmod(tmp, 0o755)
    os.chmod(lowdir, 0o777)
    low = os.path.join(lowdir, "low.sock")
    lowd = subprocess.Popen(
        [os.environ["FENCELINE_DAEMON"], "--foreground", "--socket", low, "--idle-timeout", "0",
         "--allow-uid", str(os.geteuid())],
        stderr=subprocess.PIPE, text=True, preexec_fn=low_limit_nobody)
    os.environ["FENCELINE_DAEMON_UID"] = "65534"
    try:
        logged = ""
        while "listening on" not in logged:
            line = lowd.stderr.readline()
            check(line != "", "low-limit daemon starts")
            if not line:
                break
            logged += line
        check("warning: fd limit 256 is low" in logged, "low fd limit: warned in the daemon's log")
        r = fencectl("--socket", low, "stats")
        check(r.returncode == 0 and "may hold only 256 fds" in r.stderr,
              "low fd limit: fencectl warns")
        # An empty daemon: nothing to list is no error (the views sort empty lists).
        for view in (["dump"], ["dump", "--json"], ["fds"], ["deadlocks"]):
            r = fencectl("--socket", low, *view)
            check(r.returncode == 0, f"an empty daemon: {view} ({r.returncode}: {r.stderr.strip()})")
        r = fencectl("dump")
        check("may hold only" not in r.stderr, "a daemon with a normal limit: no warning")
    finally:
        lowd.terminate()
        lowd.wait(timeout=30)
        del os.environ["FENCELINE_DAEMON_UID"]

    for args, code in ((["--help"], 0), (["help", "dump"], 0), (["dump", "--help"], 0),
                       (["help", "fds"], 0), (["fds", "--help"], 0), (["fds", "--samples", "0"], 2),
                       (["fds", "x"], 2), (["bogus"], 2), (["dump", "--bogus"], 2), ([], 2)):
        r = fencectl(*args)
        check(r.returncode == code, f"fencectl {' '.join(args)}: exit {code}")
        check("usage: fencectl" in (r.stdout + r.stderr), f"fencectl {' '.join(args)}: usage")

print("ok" if not failures else f"{len(failures)} failed")
sys.exit(1 if failures else 0)

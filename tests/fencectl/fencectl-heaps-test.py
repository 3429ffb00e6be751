#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""fencectl heaps against a live daemon: the JSON matches docs/fencectl.md's
"heaps" schema and counts the holder's buffers, the text names it like ION's
debugfs files, a client's accounting goes when it exits, and usage errors.

usage: fencectl-heaps-test.py FENCECTL HOLDER   (env: FENCELINE_DAEMON)
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

from fl_schema import check, failures, validate  # tests/fencectl/fl_schema.py

FENCECTL, HOLDER = sys.argv[1], sys.argv[2]
PAGE = os.sysconf("SC_PAGESIZE")
MIB = 1 << 20


# docs/fencectl.md, "heaps": key -> type (or a nested schema).
ACCOUNT = {"pid": int, "comm": str, "bytes": int, "buffers": int, "peak_bytes": int,
           "peak_buffers": int}
POOL_SIZE = {"size": int, "pooled": bool, "state": str, "pooled_ns": int, "bare_ns": int,
             "ratio_permille": int, "worker_ns": int, "samples": int, "offs": int,
             "why": str}
POOL = {"max": int, "buffers": int, "hits": int, "misses": int, "sizes": [POOL_SIZE]}
HEAP = {"name": str, "kind": str, "id": int, "capacity": int, "allocated": int,
        "peak_allocated": int, "buffers": int, "peak_buffers": int, "allocations": int,
        "failures": int, "free_blocks": int, "largest_free": int, "pool": POOL,
        "clients": [ACCOUNT]}
CLIENT = dict(ACCOUNT, refused=int)
HEAPS = {"version": int, "daemon": {"pid": int, "client_limit": int}, "heaps": [HEAP],
         "clients": [CLIENT]}




def fencectl(*args):
    return subprocess.run([FENCECTL, *args], capture_output=True, text=True, timeout=30)


def heaps_json():
    r = fencectl("heaps", "--json")
    check(r.returncode == 0, "heaps --json: exit 0")
    doc = json.loads(r.stdout)
    validate(doc, HEAPS)
    return doc


with tempfile.TemporaryDirectory() as tmp:
    sock = os.path.join(tmp, "fl.sock")
    os.environ["FENCELINE_SOCKET"] = sock

    r = fencectl("heaps")
    check(r.returncode == 3 and "no fenceline daemon" in r.stderr, "no daemon: exit 3")
    check(not os.path.exists(sock), "no daemon started by fencectl heaps")

    holder = subprocess.Popen([HOLDER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        line = holder.stdout.readline().split()
        check(line[:1] == ["ready"], "holder ready")
        pid = int(line[1])

        doc = heaps_json()
        heaps = {h["name"]: h for h in doc["heaps"]}
        check(set(heaps) == {"system", "carveout"}, "both heaps")
        carve, system = heaps["carveout"], heaps["system"]
        check(carve["kind"] == "carveout" and carve["id"] == 2, "carveout kind and id")
        check(system["kind"] == "system" and system["id"] == 0, "system kind and id")
        check(carve["capacity"] == 64 * MIB and system["capacity"] == 0, "capacities")
        check(carve["allocated"] == MIB and carve["buffers"] == 1, "carveout totals")
        check(carve["free_blocks"] == 1 and carve["largest_free"] == 63 * MIB, "free blocks")
        check(system["allocated"] == PAGE and system["peak_allocated"] == 4 * PAGE,
              "system total and high-water mark")
        check(system["allocations"] == 2, "system allocations")
        mine = [c for c in system["clients"] if c["pid"] == pid]
        check(len(mine) == 1 and mine[0]["comm"] == "heap-holder" and
              mine[0]["bytes"] == PAGE and mine[0]["buffers"] == 1 and
              mine[0]["peak_bytes"] == 4 * PAGE and mine[0]["peak_buffers"] == 2,
              "the holder's share of the system heap")
        total = [c for c in doc["clients"] if c["pid"] == pid]
        check(len(total) == 1 and total[0]["bytes"] == MIB + PAGE and
              total[0]["buffers"] == 2 and total[0]["refused"] == 0, "the holder's total")
        check(doc["daemon"]["client_limit"] == 0, "no limit by default")

        r = fencectl("heaps")
        check(r.returncode == 0, "heaps: exit 0")
        check("heap 'carveout' (carveout, id 2)" in r.stdout, "text: carveout heading")
        check(any(l.split()[:3] == ["heap-holder", str(pid), str(MIB)]
                  for l in r.stdout.splitlines()), "text: client, pid, size")
        check(f"capacity {64 * MIB}, free {63 * MIB} in 1 blocks" in r.stdout,
              "text: carveout free space")
        check("clients (all heaps):" in r.stdout, "text: per-client totals")
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    check(holder.returncode == 0, "holder exit 0")

    # The holder's connection ended: its buffers are freed, its row gone.
    for _ in range(200):
        doc = heaps_json()
        if not doc["clients"] and all(h["allocated"] == 0 for h in doc["heaps"]):
            break
        time.sleep(0.05)
    check(all(h["allocated"] == 0 and h["buffers"] == 0 for h in doc["heaps"]),
          "a dead client's buffers are freed")
    check(all(c["pid"] != pid for c in doc["clients"]), "a dead client is not listed")

    for args, code in ((["help", "heaps"], 0), (["heaps", "--help"], 0),
                       (["heaps", "--bogus"], 2)):
        r = fencectl(*args)
        check(r.returncode == code, f"fencectl {' '.join(args)}: exit {code}")
        check("usage: fencectl heaps" in (r.stdout + r.stderr), f"fencectl {' '.join(args)}: usage")

# A daemon whose system heap has a pool, with fixed costs (docs/env-vars.md):
# one page does not pay (1.1x a bare memfd), two pages do (0.5x). The
# holder churns both until the gate has decided (each decision needs 16
# pool hits, which come as the pool's worker delivers), then fencectl heaps
# says which size is pooled, and why.
with tempfile.TemporaryDirectory() as tmp:
    os.environ["FENCELINE_SOCKET"] = os.path.join(tmp, "fl.sock")
    os.environ["FENCELINE_HEAP_POOL_MAX"] = str(1 << 30)
    os.environ["FENCELINE_HEAP_POOL_COST"] = f"{PAGE}:1100/1000,{2 * PAGE}:500/1000"
    # The daemon the first holder starts must outlive the gaps between holders, however
    # slow the machine (the suite's 500 ms idle exit lost it under a loaded ASan run);
    # it is stopped at the end.
    idle = os.environ.get("FENCELINE_IDLE_MS")
    os.environ["FENCELINE_IDLE_MS"] = "60000"

    def states():
        system = [h for h in heaps_json()["heaps"] if h["name"] == "system"][0]
        return {g["size"]: g for g in system.get("pool", {}).get("sizes", [])}

    for _ in range(200):
        for pages in (1, 2):
            # stderr not captured: the daemon the first holder starts keeps it with
            # FENCELINE_DAEMON_STDERR (CI's sanitizer stages), and run() would wait for it.
            r = subprocess.run([HOLDER, "churn", str(pages), "16"], stdout=subprocess.PIPE,
                               text=True, timeout=30)
            check(r.returncode == 0 and r.stdout == "done\n", "holder churn")
        gates = states()
        if (gates.get(PAGE, {}).get("state") == "off" and
                gates.get(2 * PAGE, {}).get("state") == "on"):
            break
    one, two = gates.get(PAGE, {}), gates.get(2 * PAGE, {})
    check(one.get("state") == "off" and one.get("pooled") is False and one.get("offs") == 1,
          "one page: turned off")
    check(one.get("pooled_ns") == 1100 and one.get("bare_ns") == 1000, "one page: its figures")
    check(two.get("state") == "on" and two.get("pooled") is True, "two pages: pooled")
    r = fencectl("heaps")
    check(r.returncode == 0, "heaps with a pool: exit 0")
    lines = r.stdout.splitlines()
    check(any(l.split()[:2] == [str(PAGE), "no"] and
              "does not pay: pooled 1.10x a bare memfd" in l for l in lines),
          "text: one page not pooled, and why")
    check(any(l.split()[:2] == [str(2 * PAGE), "yes"] and
              "pays: pooled 0.50x a bare memfd" in l for l in lines),
          "text: two pages pooled, and why")
    check(any(l.split()[:1] == ["pool"] and f"max {1 << 30}" in l for l in lines),
          "text: the pool line")
    # Nothing was lost: every buffer the holders had is back.
    system = [h for h in heaps_json()["heaps"] if h["name"] == "system"][0]
    check(system["allocated"] == 0 and system["buffers"] == 0, "no buffer left behind")
    os.kill(heaps_json()["daemon"]["pid"], signal.SIGTERM)
    del os.environ["FENCELINE_HEAP_POOL_MAX"], os.environ["FENCELINE_HEAP_POOL_COST"]
    if idle is None:
        del os.environ["FENCELINE_IDLE_MS"]
    else:
        os.environ["FENCELINE_IDLE_MS"] = idle

print("ok" if not failures else f"{len(failures)} failed")
sys.exit(1 if failures else 0)

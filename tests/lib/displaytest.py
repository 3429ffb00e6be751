# SPDX-License-Identifier: MIT
"""What the Python tests of the display tools share: check() and the
main() that runs a test in a scratch directory and stops the services it
started there, whatever happens; a PNG reader (the captures they check
pixel by pixel) and writer (the pictures they keep)."""
import os
import shutil
import signal
import struct
import sys
import tempfile
import time
import zlib

failures = 0


def check(cond, what):
    """Say whether @what holds ("ok" or "FAIL" on stdout), count the failures; return @cond."""
    global failures
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures += 1
    return cond


def main(run, prefix):
    """run(tmp) in a new scratch directory; exit 1 if a check failed."""
    tmp = tempfile.mkdtemp(prefix=prefix)
    try:
        run(tmp)
    finally:
        # Whatever happened, no service of this test outlives it.
        stop_services(tmp)
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print(f"{failures} failures", file=sys.stderr)
        sys.exit(1)
    print("ok")


def read_png(path):
    """(width, height, channels, rows of bytes) of an 8-bit RGB or RGBA PNG: zlib and the filters."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "PNG signature"
    pos, idat, hdr = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        assert zlib.crc32(kind + body) == struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])[0], "CRC"
        if kind == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
        pos += 12 + n
    w, h, depth, ctype, _, _, interlace = hdr
    assert depth == 8 and ctype in (2, 6) and interlace == 0, f"8-bit RGB(A), not interlaced: {hdr}"
    ch = 3 if ctype == 2 else 4
    raw, stride, rows, prev = zlib.decompress(idat), w * ch, [], bytearray(w * ch)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - ch] if i >= ch else 0
            b, c = prev[i], prev[i - ch] if i >= ch else 0
            if f == 1:
                line[i] = (line[i] + a) & 0xff
            elif f == 2:
                line[i] = (line[i] + b) & 0xff
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xff
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xff
        rows.append(line)
        prev = line
    return w, h, ch, rows


def wait_for_path(path, secs=5):
    """Wait until @path exists (a service's socket), @secs at most; return whether it does."""
    for _ in range(int(secs * 20)):
        if os.path.exists(path):
            return True
        time.sleep(0.05)
    return os.path.exists(path)


def write_png(path, w, h, rows):
    """An 8-bit RGB PNG of @rows (@h bytes-likes of @w x 3 bytes), unfiltered."""
    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    raw = b"".join(b"\0" + bytes(r) for r in rows)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def stop_services(tmp):
    """SIGTERM every fencelined and fl-displayd serving a socket in @tmp, and wait until they are gone."""
    pids = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            args = open(f"/proc/{p}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue
        # A service run under a wrapper (valgrind) has it as args[0]: any argument names it.
        if any(a.endswith(b"fl-displayd") or a.endswith(b"fencelined") for a in args) and \
                any(a.startswith(tmp.encode()) for a in args):
            pids.append(int(p))
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    for pid in pids:
        for _ in range(3000):
            try:
                if open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] == "Z":
                    break
            except OSError:
                break
            time.sleep(0.01)

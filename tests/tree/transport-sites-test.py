#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""One transport (docs/architecture.md): exactly one file under src/ and
tools/ passes fds over a socket, src/proto/transport.c. A file does when its
code (comments and string literals left out) calls sendmsg(), recvmsg(),
sendmmsg() or recvmmsg(), or names SCM_RIGHTS or a CMSG_ macro.

usage: transport-sites-test.py SOURCE_ROOT
"""
import os
import re
import sys

THE_ONE = 'src/proto/transport.c'
SITE = re.compile(r'\b(?:(?:send|recv)m?msg\s*\(|SCM_RIGHTS\b|CMSG_[A-Z]+\b)')
# Comments and literals, in one pass so that a quote in a comment (or a
# comment opener in a string) is read as what it is.
NOISE = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)


def code_of(text):
    return NOISE.sub(lambda m: ' ' if m.group(0)[0] == '/' else '""', text)


def sites(root):
    found = []
    for top in ('src', 'tools'):
        for d, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if not f.endswith(('.c', '.h')):
                    continue
                path = os.path.join(d, f)
                with open(path, encoding='utf-8', errors='replace') as fh:
                    m = SITE.search(code_of(fh.read()))
                if m:
                    found.append((os.path.relpath(path, root), m.group(0)))
    return sorted(found)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else '.'
    found = sites(root)
    others = [(p, what) for p, what in found if p != THE_ONE]
    for p, what in others:
        print(f'{p}: {what.strip()}: fds go through {THE_ONE} '
              '(fl__proto_send(), fl__proto_recv())', file=sys.stderr)
    if THE_ONE not in [p for p, _ in found]:
        print(f'{THE_ONE} makes no sendmsg()/recvmsg() call: has the transport moved?',
              file=sys.stderr)
        return 1
    return 1 if others else 0


if __name__ == '__main__':
    sys.exit(main())

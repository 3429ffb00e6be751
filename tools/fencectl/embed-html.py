#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Turn tools/fencectl/report.html into a C file defining fencectl_report_html
(report-html.h), so that fencectl writes the page without reading any file.

usage: embed-html.py INPUT.html OUTPUT.c
"""
import sys

MARKER = "@FENCELINE_REPORT_DATA@"


def c_string(chunk):
    out = []
    for b in chunk:
        c = chr(b)
        if c == '"' or c == "\\":
            out.append("\\" + c)
        elif c == "\n":
            out.append("\\n")
        elif c == "\t":
            out.append("\\t")
        elif 0x20 <= b < 0x7F and c != "?":  # no trigraphs
            out.append(c)
        else:
            out.append("\\%03o" % b)
    return "".join(out)


def main():
    src, dst = sys.argv[1], sys.argv[2]
    data = open(src, "rb").read()
    if data.count(MARKER.encode()) != 1:
        sys.exit(f"{src}: the marker {MARKER} must appear exactly once")
    lines = data.split(b"\n")
    with open(dst, "w") as out:
        out.write("/* Generated from report.html by embed-html.py: edit that file. */\n")
        out.write('#include "report-html.h"\n\n')
        out.write("const char fencectl_report_html[] =\n")
        for i, line in enumerate(lines):
            nl = b"\n" if i + 1 < len(lines) else b""
            out.write('\t"%s"\n' % c_string(line + nl))
        out.write("\t;\n")
        out.write("const size_t fencectl_report_html_len = sizeof(fencectl_report_html) - 1;\n")


main()

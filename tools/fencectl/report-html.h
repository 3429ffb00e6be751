/* SPDX-License-Identifier: MIT */
/* tools/fencectl/report.html, compiled in by embed-html.py. */
#ifndef FENCECTL_REPORT_HTML_H
#define FENCECTL_REPORT_HTML_H

#include <stddef.h>

extern const char fencectl_report_html[];
extern const size_t fencectl_report_html_len;

/* Where in the template the analysis's JSON goes. */
#define REPORT_HTML_MARKER "@FENCELINE_REPORT_DATA@"

#endif

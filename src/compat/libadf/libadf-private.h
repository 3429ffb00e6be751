/* SPDX-License-Identifier: MIT */
/*
 * What libadf's table of handles (adf.c) lends libadfhwc (adfhwc.c): the
 * reaping of handles no fd refers to any more.
 */
#ifndef FL_COMPAT_LIBADF_PRIVATE_H
#define FL_COMPAT_LIBADF_PRIVATE_H

/* Close the native handles whose files no fd of the process refers to any more. */
void fl__adf_reap(void);

#endif

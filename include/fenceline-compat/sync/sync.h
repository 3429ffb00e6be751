/* SPDX-License-Identifier: MIT */
/*
 * The historical include path of libsync; Android makes it a symlink to
 * <android/sync.h>, so it has exactly the same content.
 */
#include "../android/sync.h"

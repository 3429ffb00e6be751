/* SPDX-License-Identifier: MIT */
/*
 * The kms display driver (docs/display.md, "The kms driver"): a DRM/KMS
 * card through libdrm, atomic only. Built when meson finds libdrm; only
 * fl-displayd links it.
 */
#ifndef FL_DISPLAY_KMS_H
#define FL_DISPLAY_KMS_H

#define FL_USE_UNSTABLE_DRIVER_API
#include <fenceline/driver/display.h>

extern const struct fl_display_driver_ops fl__display_kms_ops;

#endif /* FL_DISPLAY_KMS_H */

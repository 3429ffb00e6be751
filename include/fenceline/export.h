/* SPDX-License-Identifier: MIT */
/*
 * Symbol visibility and C++ linkage helpers shared by the public headers.
 * Nothing in here is meant to be used by applications directly.
 */
#ifndef FENCELINE_EXPORT_H
#define FENCELINE_EXPORT_H

#if defined(FL_BUILDING_LIBRARY) && defined(__GNUC__)
#define FL_EXPORT __attribute__((visibility("default")))
#else
#define FL_EXPORT
#endif

/*
 * An old name kept for one release so that programs built against it still
 * link and run; using it warns at compile time with @msg.
 */
#if defined(__GNUC__)
#define FL_DEPRECATED(msg) __attribute__((deprecated(msg)))
#else
#define FL_DEPRECATED(msg)
#endif

#ifdef __cplusplus
#define FL_BEGIN_DECLS extern "C" {
#define FL_END_DECLS   }
#else
#define FL_BEGIN_DECLS
#define FL_END_DECLS
#endif

#endif /* FENCELINE_EXPORT_H */

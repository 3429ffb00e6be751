/* SPDX-License-Identifier: MIT */
/**
 * DOC: the hardware composer
 *
 * The HWC role between a compositor and the display service
 * (docs/hwc.md): for one interface of one display device, each frame's
 * layers are assigned to the device's overlay engines or composed in
 * software into a client target buffer, the plan is checked with the
 * display's TEST_ONLY posts, and the frame is posted. It gives back the
 * frame's present fence and, for every buffer the frame let go, that
 * buffer's release fence.
 *
 * In libfenceline-hwc (pkg-config fenceline-hwc), which links libfenceline
 * and pixman. An HWC is not thread-safe: one thread drives it (as
 * SurfaceFlinger's main thread drives HWComposer). Every call returns 0 or
 * a negative errno and, when given a struct fl_display_error, says why in
 * it; a refused frame changes nothing and posts nothing.
 */
#ifndef FENCELINE_HWC_H
#define FENCELINE_HWC_H

#include <stddef.h>
#include <stdint.h>

#include <fenceline/display.h>
#include <fenceline/export.h>

FL_BEGIN_DECLS

/* Most layers in one frame. */
#define FL_HWC_MAX_LAYERS 32
/* Most damage rects of one layer. */
#define FL_HWC_MAX_DAMAGE 16
/* Most client target buffers (fl_hwc_options.n_targets). */
#define FL_HWC_MAX_TARGETS 3

/**
 * struct fl_hwc_options - how an HWC is made (all fields 0: the defaults)
 * @n_targets: client target buffers, 2 or 3 (0: 3)
 * @acquire_timeout_ms: how long a composed layer's acquire fence, and a
 *	client target's release, is waited for before the frame goes on
 *	without it (0: 1000 ms; negative is refused: no wait is unbounded)
 * @flags: FL_HWC_NO_OVERLAYS to compose every layer (a reference, or a
 *	device whose overlays are not to be trusted)
 * @reserved: 0
 */
struct fl_hwc_options {
	uint32_t n_targets;
	int32_t acquire_timeout_ms;
	uint32_t flags;
	uint32_t reserved[5];
};

#define FL_HWC_NO_OVERLAYS 1u

/* A rectangle of a layer's buffer, pixels. */
struct fl_hwc_rect {
	int32_t x, y;
	uint32_t w, h;
};

/**
 * struct fl_hwc_layer - one layer of a frame
 * @id: the caller's name for the layer, stable from frame to frame (its
 *	buffer queue, say); unique in a frame, any value
 * @buffer_id: the identity of @buffer's memory, non-zero: the same value
 *	as long as the layer shows the same buffer, a new one when the
 *	producer queued another (BufferQueue's slot and frame number, say).
 *	The HWC never compares fds: a @buffer_id it knows with memory other
 *	than it had (another file) is refused. Unique in a frame.
 * @buffer: the buffer: @w, @h, @format, @n_planes and per plane @fd
 *	(borrowed: the HWC keeps copies while it needs them), @offset,
 *	@pitch; @engine must be 0 (the HWC chooses); @acquire_fence: a
 *	fenceline fence fd that says the buffer is written (borrowed), or -1
 * @layer: where and how it is shown, the display's layer
 *	(FL_DISPLAY_LAYER_ENABLED set, as fl_display_post() checks it); the
 *	destination rect may reach past the interface's edges only when
 *	composed: a TEST_ONLY refusal then sends the layer to composition
 * @damage: what changed in this buffer since the layer's previous one,
 *	rects of buffer pixels; NULL: all of it (unknown); with @n_damage 0
 *	and @damage not NULL: nothing changed. Rects reaching outside the
 *	buffer are clipped. With the layer's previous @buffer_id, only rects
 *	count (@n_damage > 0): the buffer was written in place.
 * @n_damage: 0 to FL_HWC_MAX_DAMAGE
 */
struct fl_hwc_layer {
	uint64_t id;
	uint64_t buffer_id;
	struct fl_display_buffer buffer;
	struct fl_display_layer layer;
	const struct fl_hwc_rect *damage;
	size_t n_damage;
};

/* Where a layer went (struct fl_hwc_layer_result's @composition). */
enum fl_hwc_composition {
	FL_HWC_COMPOSITION_DEVICE = 1, /* its own overlay engine, @engine */
	FL_HWC_COMPOSITION_CLIENT = 2, /* composed into the client target */
};

/**
 * struct fl_hwc_layer_result - what became of one layer
 * @composition: an enum fl_hwc_composition
 * @engine: the overlay engine it (DEVICE) or the client target (CLIENT)
 *	is on
 * @acquire_status: 0; or the error of its acquire fence (failed, or
 *	-ETIME: not signalled within the options' bound) when it was
 *	waited for or had failed already: the layer then shows its previous
 *	buffer, or nothing when it has none, and this frame's buffer is
 *	released at once (in @released, fence -1)
 */
struct fl_hwc_layer_result {
	uint32_t composition;
	uint32_t engine;
	int32_t acquire_status;
};

/**
 * struct fl_hwc_release - a buffer the HWC let go
 * @layer_id, @buffer_id: which (the ids it was given with)
 * @fence: a fence fd, the caller's, that signals when the buffer may be
 *	written again; -1: it may be at once
 */
struct fl_hwc_release {
	uint64_t layer_id;
	uint64_t buffer_id;
	int fence;
};

/* struct fl_hwc_result's @flags. */
#define FL_HWC_FRAME_POSTED   1u /* a post was made (a present fence is there) */
#define FL_HWC_FRAME_PLANNED  2u /* the scene changed: TEST_ONLY posts chose a new plan */
#define FL_HWC_FRAME_COMPOSED 4u /* pixels were drawn into a client target */

/**
 * struct fl_hwc_result - what a frame did
 * @flags: FL_HWC_FRAME_*
 * @present_fence: the caller's fence fd that signals when the frame is on
 *	screen, with the vsync's time; -1 when nothing was posted (the frame
 *	was the one on screen already)
 * @n_tests: TEST_ONLY posts this frame made
 * @n_composed: layers composed into the client target (0: none used)
 * @target_engine: the client target's engine, when @n_composed > 0
 * @composed_pixels: pixels redrawn in the client target (its damage)
 * @layers: per layer of the call, in its order
 * @n_released: entries of @released
 * @released: the buffers this frame let go, each with its release fence
 *	(the caller closes every fence)
 */
struct fl_hwc_result {
	uint32_t flags;
	int present_fence;
	uint32_t n_tests;
	uint32_t n_composed;
	uint32_t target_engine;
	uint64_t composed_pixels;
	struct fl_hwc_layer_result layers[FL_HWC_MAX_LAYERS];
	size_t n_released;
	struct fl_hwc_release released[FL_HWC_MAX_LAYERS];
};

/**
 * struct fl_hwc_stats - an HWC's counters since it was made
 * @frames: fl_hwc_present() calls that succeeded
 * @posts: frames posted
 * @unchanged: frames that changed nothing and posted nothing
 * @test_only: TEST_ONLY posts made
 * @test_only_refused: of those, refused by the display
 * @plans: plans chosen (the scene changed)
 * @plans_reused: frames that reused the plan without a TEST_ONLY post
 * @composed_frames: frames that drew into a client target
 * @composed_pixels: pixels drawn into client targets
 * @acquire_failures: acquire fences that failed or timed out
 */
struct fl_hwc_stats {
	uint64_t frames;
	uint64_t posts;
	uint64_t unchanged;
	uint64_t test_only;
	uint64_t test_only_refused;
	uint64_t plans;
	uint64_t plans_reused;
	uint64_t composed_frames;
	uint64_t composed_pixels;
	uint64_t acquire_failures;
};

/* A hardware composer for one interface. */
struct fl_hwc;

/**
 * fl_hwc_create() - an HWC for interface @intf of display device @device
 * @device, @intf: the ids (fl_display_devices())
 * @opts: NULL, or struct fl_hwc_options
 * @ret: the HWC, the caller's (fl_hwc_destroy())
 * @e: NULL, or the reason on failure
 *
 * Reads what the device offers: its overlay engines, their formats and
 * which may feed @intf (the allowed attachments), and attaches those not
 * attached yet; the interface's current mode. Allocates the client
 * targets: display simple buffers of the mode's size in XRGB8888 (or
 * ARGB8888 when no engine lists XRGB8888). The interface's DPMS state is
 * the caller's (fl_hwc_get_interface()).
 * Return: 0; -EINVAL (@ret NULL, bad options); -ENODEV (no such device or
 * interface, or it has no mode); the display's errors; -ENOMEM.
 */
FL_EXPORT int fl_hwc_create(uint32_t device, uint32_t intf, const struct fl_hwc_options *opts,
			    struct fl_hwc **ret, struct fl_display_error *e);

/**
 * fl_hwc_destroy() - free @hwc: its handles, client targets, its copies of
 * layer buffers and fences. What is on screen stays there until the next
 * post of the device; the engines it attached stay attached. NULL is
 * ignored.
 */
FL_EXPORT void fl_hwc_destroy(struct fl_hwc *hwc);

/**
 * fl_hwc_get_interface() - @hwc's interface handle (borrowed: valid until
 * fl_hwc_destroy()), for its VSYNC and HOTPLUG events and DPMS
 */
FL_EXPORT struct fl_display_handle *fl_hwc_get_interface(struct fl_hwc *hwc);

/**
 * fl_hwc_present() - show a frame of @n layers (validate and present in
 * one call)
 * @hwc: the HWC
 * @layers: the layers (read; fds and fences borrowed), any order
 * @n: 0 to FL_HWC_MAX_LAYERS
 * @res: filled (the caller's); its fences are the caller's to close
 * @e: NULL, or the reason on failure
 *
 * Plans the frame (docs/hwc.md, "Strategy") unless its geometry is the
 * last plan's, composes what the plan composes within its damage, and
 * posts it asking for a PRESENT fence. A frame whose buffers, damage and
 * geometry are the frame on screen posts nothing. Composed layers' acquire
 * fences are waited for here (bounded); overlay layers' go to the display.
 * Buffers let go (replaced, or their layer gone) are in @res->released: one
 * that was on an overlay is released by this frame's present fence (the
 * display holds it until this frame replaces it on screen); one that was
 * only composed, at once (-1), since composition is done when this returns;
 * one composed since it left an overlay, by the present fence of the post
 * that took it off the overlay. A composed layer's buffer is read in this
 * process: memory its producer may shrink should be sealed against it.
 * Return: 0; -EINVAL (a layer the rules refuse: ids, sizes, formats
 * neither an engine nor the compositor takes, rects, damage; named in @e);
 * -EBADF (a plane fd not open); -E2BIG (@n too large); -ENOSPC (no plan
 * the display accepts, even all composed); the display's errors (the
 * post refused: the plan is dropped and the next frame plans again);
 * -ENOMEM. On failure nothing was posted, no fence is in @res, and the
 * previous frame's buffers are still held.
 */
FL_EXPORT int fl_hwc_present(struct fl_hwc *hwc, const struct fl_hwc_layer *layers, size_t n,
			     struct fl_hwc_result *res, struct fl_display_error *e);

/**
 * fl_hwc_get_stats() - @hwc's counters
 * Return: 0; -EINVAL (@hwc or @ret NULL).
 */
FL_EXPORT int fl_hwc_get_stats(const struct fl_hwc *hwc, struct fl_hwc_stats *ret);

FL_END_DECLS

#endif /* FENCELINE_HWC_H */

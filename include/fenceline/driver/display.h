/* SPDX-License-Identifier: MIT */
/**
 * DOC: display drivers
 *
 * A display driver makes a device of the display service (docs/display.md)
 * real: it scans buffers out, paces vsync, blanks, switches modes and
 * reports hotplug. The service does everything else: the object model and
 * ADF's rules, the generic buffer check, the post queue, the acquire-fence
 * waits, the flip at vsync, the release and present fences, events and
 * clients. A driver fills one const struct fl_display_driver_ops; what it
 * can do is data (its @caps), never something the service guesses from its
 * name.
 *
 * Calling contexts: every op is called on the service's loop thread, one at
 * a time per device (ADF's per-device client lock), and must not block: a
 * driver waits for its hardware with the fds and timers the service lends
 * it (struct fl_display_host). No op may call a struct fl_display_host
 * function other than those marked "from ops too".
 *
 * This API may change between releases; define FL_USE_UNSTABLE_DRIVER_API
 * to acknowledge it.
 */
#ifndef FENCELINE_DRIVER_DISPLAY_H
#define FENCELINE_DRIVER_DISPLAY_H

#ifndef FL_USE_UNSTABLE_DRIVER_API
#error "The fenceline driver API is unstable: define FL_USE_UNSTABLE_DRIVER_API to use it"
#endif

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <fenceline/display.h>

FL_BEGIN_DECLS

/**
 * struct fl_display_driver_buffer - one buffer of a post, as a driver sees it
 * @engine: the overlay engine id it is posted to
 * @w, @h: its size in pixels
 * @format: DRM fourcc
 * @n_planes: planes the poster gave (at most FL_DISPLAY_MAX_PLANES)
 * @offset, @pitch: per plane, bytes
 * @size: per plane, the size in bytes of the memory it lives in (the
 *	service resolved it from the plane's fd)
 * @fd: per plane, the memory (borrowed from the service for the life of
 *	the post's state; -1 past @n_planes, and in checks made without fds)
 * @in_fence: -1, or (a driver with FL_DISPLAY_CAP_IN_FENCES only) the
 *	buffer's acquire fence, a kernel sync_file the service did not wait
 *	for: the driver's commit of the post in post() must hold the flip
 *	until it signals (KMS: the plane's IN_FENCE_FD); a TEST_ONLY check
 *	needs none. Borrowed like @fd, for the life of the post's state.
 *
 * ADF's struct adf_buffer, with the fds resolved to what a check needs.
 */
struct fl_display_driver_buffer {
	uint32_t engine;
	uint32_t w, h;
	uint32_t format;
	uint32_t n_planes;
	uint32_t offset[FL_DISPLAY_MAX_PLANES];
	uint32_t pitch[FL_DISPLAY_MAX_PLANES];
	uint64_t size[FL_DISPLAY_MAX_PLANES];
	int fd[FL_DISPLAY_MAX_PLANES];
	int in_fence;
};

/**
 * struct fl_display_driver_post - a post that passed the generic checks
 * @intfs, @n_intfs: the interface ids it names
 * @bufs, @n_bufs: its buffers
 * @custom, @custom_size: its custom data (the driver's to judge)
 * @layers: NULL, or @n_bufs layers, @layers[i] describing @bufs[i] (those
 *	without FL_DISPLAY_LAYER_ENABLED have none); the service has checked
 *	them (rects inside the buffer and the modes, distinct z orders,
 *	blend, transform, filter); only valid during validate: a driver keeps
 *	a copy in its state
 * @writeback: NULL, or the destination of the post's frame on its memory
 *	interface (one RGB plane: fd, offset, pitch, size, format, w, h; the
 *	service checked it against the interface's mode and the memory's
 *	size). Its fd is the service's, lent for the life of the post's
 *	state; the driver writes the frame there in @post, before the
 *	service signals the post's PRESENT fence.
 */
struct fl_display_driver_post {
	const uint32_t *intfs;
	size_t n_intfs;
	const struct fl_display_driver_buffer *bufs;
	size_t n_bufs;
	const void *custom;
	size_t custom_size;
	const struct fl_display_layer *layers;
	const struct fl_display_driver_buffer *writeback;
};

/* What a driver can do (struct fl_display_driver_ops' @caps). */
enum fl_display_driver_cap {
	/* It calls fl_display_host's vsync() for every ON interface with a mode. */
	FL_DISPLAY_CAP_VSYNC = 1u << 0,
	/* Its interfaces can be plugged and unplugged (hotplug()). */
	FL_DISPLAY_CAP_HOTPLUG = 1u << 1,
	/* It allocates simple buffers (alloc_simple_buffer). */
	FL_DISPLAY_CAP_SIMPLE_BUFFERS = 1u << 2,
	/* It scans out whatever it is given as soon as it is asked: no queue of its own. */
	FL_DISPLAY_CAP_IMMEDIATE_FLIP = 1u << 3,
	/*
	 * Its post() only starts a flip that the hardware completes later (KMS's
	 * non-blocking commit, shown at the next vblank): the service calls
	 * post() as soon as the queue's head is ready and no post is in flight,
	 * keeps at most one in flight, and takes the flip as done when the
	 * driver calls the host's flipped() (docs/display.md, "The kms driver").
	 */
	FL_DISPLAY_CAP_ASYNC_FLIP = 1u << 4,
	/*
	 * With FL_DISPLAY_CAP_ASYNC_FLIP: it can hand the hardware kernel fences
	 * to wait for (KMS's IN_FENCE_FD). A post whose pending acquire fences
	 * are all kernel sync_files is then given to validate and post() at once,
	 * each such fence as its buffer's @in_fence, and the kernel holds the
	 * flip until they signal; any fenceline fence among them, and every
	 * fence of a driver without this cap, the service waits for first.
	 */
	FL_DISPLAY_CAP_IN_FENCES = 1u << 5,
};

/**
 * struct fl_display_driver_interface - an interface the hardware has
 * (struct fl_display_driver_objects)
 * @name: its name (a KMS connector's, "Virtual-1"), unique in the device
 * @type: an enum fl_display_intf_type; FL_DISPLAY_INTF_CUSTOM for a type
 *	ADF has no name for, named by @type_name
 * @type_name: a custom type's name ("Virtual"); "" for the others
 * @flags: FL_DISPLAY_INTF_*
 * @width_mm, @height_mm: physical size, 0 when unknown
 * @connected: whether something is plugged in now
 * @modes, @n_modes: its modes when connected (at most FL_DISPLAY_MAX_MODES)
 * @current: the index in @modes of the mode it starts with, -1 for none
 */
struct fl_display_driver_interface {
	char name[FL_DISPLAY_NAME_LEN];
	uint32_t type;
	char type_name[FL_DISPLAY_NAME_LEN];
	uint32_t flags;
	uint16_t width_mm, height_mm;
	bool connected;
	struct fl_display_mode modes[FL_DISPLAY_MAX_MODES];
	size_t n_modes;
	int current;
};

/* The most formats an engine of struct fl_display_driver_engine lists. */
#define FL_DISPLAY_DRIVER_MAX_FORMATS 128
/* The most interfaces, and engines, struct fl_display_driver_objects has. */
#define FL_DISPLAY_DRIVER_MAX_OBJECTS 64

/**
 * struct fl_display_driver_engine - an overlay engine the hardware has
 * @name: its name (the kms driver's "primary-31"), unique in the device
 * @formats, @n_formats: the standard fourccs it scans out
 * @intfs, @n_intfs: the indexes (into the interfaces of the same struct
 *	fl_display_driver_objects) of the interfaces it may be attached to
 */
struct fl_display_driver_engine {
	char name[FL_DISPLAY_NAME_LEN];
	uint32_t formats[FL_DISPLAY_DRIVER_MAX_FORMATS];
	size_t n_formats;
	uint32_t intfs[FL_DISPLAY_DRIVER_MAX_OBJECTS];
	size_t n_intfs;
};

/**
 * struct fl_display_driver_objects - the objects a driver found on its
 * hardware (its objects() op): the service builds the device's model from
 * them, ids in this order, when the config describes none
 * @intfs, @n_intfs: its interfaces
 * @engines, @n_engines: its overlay engines
 *
 * The arrays are the driver's, valid until its destroy(); the service
 * copies them.
 */
struct fl_display_driver_objects {
	const struct fl_display_driver_interface *intfs;
	size_t n_intfs;
	const struct fl_display_driver_engine *engines;
	size_t n_engines;
};

/**
 * struct fl_display_driver_stat - one of a driver's counters, for the
 * service's dump (its stats() op)
 * @name: a word ("copied_frames"), static
 * @value: its value now
 */
struct fl_display_driver_stat {
	const char *name;
	uint64_t value;
};

/* The most interfaces a gang may have (a panel's links: 2 for dual DSI, 4 for a quad). */
#define FL_DISPLAY_GANG_MAX 8

/**
 * struct fl_display_gang - an interface's place in a gang (docs/display.md,
 * "Ganged interfaces"): interfaces that scan out one panel together, each
 * a tile of it, as KMS's TILE connector property describes them
 * @n_members: how many interfaces the gang has (2 to FL_DISPLAY_GANG_MAX)
 * @members: their ids, in increasing order; @members[0] is the gang's
 *	first interface, which names it
 * @col, @row: the asking interface's tile in the grid (TILE's h_loc, v_loc)
 * @cols, @rows: the grid (TILE's num_h_tile, num_v_tile). Every member
 *	has the same current mode, so the panel is @cols × hdisplay by
 *	@rows × vdisplay, and the tile starts at (@col × hdisplay,
 *	@row × vdisplay) of it.
 */
struct fl_display_gang {
	uint32_t n_members;
	uint32_t members[FL_DISPLAY_GANG_MAX];
	uint32_t col, row, cols, rows;
};

struct fl_display_host;
/* A timer or fd the service's loop runs for a driver (opaque). */
struct fl_display_source;

/**
 * struct fl_display_host - what the service lends a driver
 * @data: the service's, passed back to every function
 * @device: the model's id of the driver's device
 *
 * The loop: the driver's timers fire and its fds are watched on the
 * service's loop thread, so their callbacks run in the same context as the
 * ops (and may call every function here).
 *
 * @now: CLOCK_MONOTONIC ns (from ops too).
 * @timer_add: a timer that calls @fn(@fn_data), not armed. Return: it, or
 *	NULL without memory.
 * @timer_arm: fire once at @deadline_ns (CLOCK_MONOTONIC; 0 disarms).
 *	From ops too.
 * @fd_add: call @fn(@fd, @events, @fn_data) when @fd is ready for the
 *	epoll @events. @fd stays the driver's; remove the source before
 *	closing it. Return: the source, or NULL with errno set.
 * @source_remove: removes a timer or fd source (NULL: nothing). From ops too.
 * @intf_state: the model's current mode of interface @intf and whether it
 *	is connected (from ops too). Return: 0, -ENOENT for an unknown
 *	interface.
 * @vsync: interface @intf's vsync happened at @timestamp_ns (the time the
 *	scan-out started the frame, not the time the driver learnt it): the
 *	service flips what is ready and sends VSYNC events. Not from ops.
 * @hotplug: interface @intf was plugged (@connected, with its @n_modes
 *	@modes, copied) or unplugged: the service replaces the model's state
 *	and sends HOTPLUG events. Not from ops, except set_connected (a
 *	simulated plug is its caller's request, visible when the call
 *	returns). Return: 0 or the model's error.
 * @config_modes: the modes the config gives interface @intf, which it
 *	offers when plugged in: up to @cap into @modes (from ops too).
 *	Return: how many there are, or -ENOENT for an unknown interface.
 * @compose: composes @n_bufs buffers (their planes' fds the driver's,
 *	mapped read-only here) into the RGB destination @dst (its fd, offset,
 *	pitch, format, w and h in a struct fl_display_driver_buffer of one
 *	plane, mapped writable here), over opaque black where nothing covers
 *	it. A buffer with a layer (@layers non-NULL and its entry
 *	FL_DISPLAY_LAYER_ENABLED) is drawn as the layer says; one without
 *	is drawn at the top-left corner at its own size, blended as
 *	premultiplied when its format has alpha, below every buffer with a
 *	layer, in the order given (the first at the bottom). Software
 *	composition for drivers that have no hardware to do it (from ops
 *	too). Return: 0, -EINVAL (a buffer or format the compositor refuses),
 *	-ENOMEM, or mmap()'s -errno.
 * @layout: the plane count and bytes per pixel of each plane of the
 *	standard format @fourcc (from ops too). Return: 0, -EINVAL for a
 *	format that is not standard.
 * @gang: interface @intf's gang (from ops too). Return: 0, -ENODATA when
 *	it is not ganged, -ENOENT for an unknown interface.
 * @background: the colour the config gives interface @intf where no
 *	buffer covers its frame, as ARGB8888 with alpha 0xff (from ops too;
 *	opaque black for an unknown interface).
 * @compose_over: @compose with @background (ARGB8888) instead of opaque
 *	black where nothing covers @dst (from ops too). Same returns.
 * @event: a driver event of @type (FL_DISPLAY_EVENT_DEVICE_CUSTOM to
 *	FL_DISPLAY_EVENT_TYPE_MAX - 1) on object @id of @kind (the device
 *	itself: FL_DISPLAY_OBJ_DEVICE and 0) happened: the
 *	service sends it, the header (struct fl_display_event) followed by
 *	the @len bytes of @payload (copied), to every handle of that object
 *	subscribed to @type (set_event() was told when the first one
 *	subscribed), appended whole to each handle's ring or dropped for a
 *	handle whose ring lacks room, as ADF's. From ops too. Return: 0
 *	(also when nobody is subscribed); -EINVAL for a type outside the
 *	driver range, or an event longer than FL_DISPLAY_EVENT_RING bytes
 *	with its header; -ENOENT for an object the device lacks.
 * @flipped: the oldest post that the driver's post() started is on screen
 *	since @timestamp_ns (the hardware's time of the vblank that showed it,
 *	CLOCK_MONOTONIC): the service signals its present point at that time,
 *	lets the post before it go (its release point, its buffers, its state)
 *	and posts the next ready one. Only for a driver with
 *	FL_DISPLAY_CAP_ASYNC_FLIP, which reports each post() once, in order.
 *	Not from ops.
 * @option: the value the device's config gives the driver option @key
 *	("options = KEY=VALUE, ...": which card, which tty), or NULL when
 *	it gives none; the string is the host's, for the life of the
 *	device (from create and ops). A driver asks in create for every
 *	option it takes: the service refuses a device whose config gives
 *	an option that its driver did not ask for during create, naming it,
 *	so a typo in a key is an error and no driver checks for unknown keys.
 */
struct fl_display_host {
	void *data;
	uint32_t device;
	uint64_t (*now)(const struct fl_display_host *host);
	struct fl_display_source *(*timer_add)(const struct fl_display_host *host,
					       void (*fn)(void *fn_data), void *fn_data);
	void (*timer_arm)(struct fl_display_source *timer, uint64_t deadline_ns);
	struct fl_display_source *(*fd_add)(const struct fl_display_host *host, int fd,
					    uint32_t events,
					    void (*fn)(int fd, uint32_t events, void *fn_data),
					    void *fn_data);
	void (*source_remove)(struct fl_display_source *source);
	int (*intf_state)(const struct fl_display_host *host, uint32_t intf,
			  struct fl_display_mode *ret_mode, bool *ret_connected);
	void (*vsync)(const struct fl_display_host *host, uint32_t intf, uint64_t timestamp_ns);
	int (*hotplug)(const struct fl_display_host *host, uint32_t intf, bool connected,
		       const struct fl_display_mode *modes, size_t n_modes);
	int (*config_modes)(const struct fl_display_host *host, uint32_t intf,
			    struct fl_display_mode *modes, size_t cap);
	int (*compose)(const struct fl_display_host *host,
		       const struct fl_display_driver_buffer *bufs,
		       const struct fl_display_layer *layers, size_t n_bufs,
		       const struct fl_display_driver_buffer *dst);
	int (*layout)(const struct fl_display_host *host, uint32_t fourcc, unsigned int *ret_planes,
		      unsigned int ret_cpp[FL_DISPLAY_MAX_PLANES]);
	int (*gang)(const struct fl_display_host *host, uint32_t intf, struct fl_display_gang *ret);
	uint32_t (*background)(const struct fl_display_host *host, uint32_t intf);
	int (*compose_over)(const struct fl_display_host *host,
			    const struct fl_display_driver_buffer *bufs,
			    const struct fl_display_layer *layers, size_t n_bufs,
			    const struct fl_display_driver_buffer *dst, uint32_t background);
	int (*event)(const struct fl_display_host *host, enum fl_display_object_kind kind,
		     uint32_t id, uint32_t type, const void *payload, size_t len);
	const char *(*option)(const struct fl_display_host *host, const char *key);
	void (*flipped)(const struct fl_display_host *host, uint64_t timestamp_ns);
};

/**
 * struct fl_display_driver_ops - a display driver
 *
 * @name: mandatory; the config's "driver = NAME", at most 31 bytes.
 * @caps: FL_DISPLAY_CAP_* bits.
 * @event_objects: the object kinds that have driver events, a bit
 *	(1u << enum fl_display_object_kind) each: subscribing on another
 *	kind's object is -EOPNOTSUPP (ADF's object without supports_event),
 *	before set_event() is asked; interfaces keep VSYNC and HOTPLUG.
 *
 * @create: mandatory. Make the driver's state for a device the service is
 *	about to build from the config; its interfaces, engines and
 *	attachments are made right after, all interfaces DPMS OFF, so create
 *	may call @host's now(), timer_add() and option() only. @host is the service's
 *	and outlives the state. Return: 0 and *@ret_data, or a negative errno
 *	(the device is not made).
 * @destroy: mandatory. Free the state, its timers and fds.
 * @probe: whether this machine can run the driver, asked without making a
 *	device (by the service before create, for "--display auto", and
 *	for fl_display_drivers()): cheap, never blocking (no connection that
 *	may hang), leaving nothing behind. @where: the display choice's place
 *	(a card's or terminal's path, "kms:card1" gives "/dev/dri/card1"),
 *	NULL for the driver's default. Return: 0, or a negative errno with
 *	a one-line reason a person can act on in @why (@len bytes, e.g. "no
 *	X11 or Wayland display: $DISPLAY and $WAYLAND_DISPLAY are unset").
 *	NULL: the driver runs everywhere.
 * @objects: the interfaces and engines the hardware has (a KMS card's
 *	connectors and planes), into *@ret, called right after create when
 *	the config's device lists no [interface] and no [engine]; the service
 *	makes the device's model from them (ids in their order). NULL: a
 *	device needs them in its config. Return: 0 or a negative errno (the
 *	device is not made).
 * @stats: up to @cap of the driver's counters into @ret, for the service's
 *	dump (the kms driver's buffer copies). NULL: none. Return: how many.
 *
 * The model's ops (ADF's struct adf_device_ops and friends); each optional
 * unless said otherwise. A negative errno is the caller's, with the model
 * naming the objects; nothing changes then.
 * @attach, @detach: may veto an attachment or detachment of an allowed
 *	pair (NULL: always allowed).
 * @blank: puts interface @intf in DPMS @state (valid, not the current
 *	one). NULL: blanking is refused with -EOPNOTSUPP.
 * @modeset: switches interface @intf to @mode (not necessarily one of its
 *	list: the driver decides). NULL: -EOPNOTSUPP.
 * @validate_custom_format: checks a buffer whose fourcc is not standard
 *	(the driver's own formats); may explain in @e. NULL: such buffers are
 *	refused, and an engine may not list such a fourcc.
 * @custom_data: writes at most FL_DISPLAY_MAX_CUSTOM_DATA bytes of
 *	driver-private description of object @id of @kind to @buf and sets
 *	*@size. NULL: no custom data.
 *
 * The post ops (ADF's validate, post, state_free):
 * @validate: mandatory. Judge a post that passed the generic checks
 *	(routing, scaling, what the hardware can do), without side effects:
 *	it may come with the TEST_ONLY flag and never be posted. Return: 0
 *	and *@ret_state (the driver's, may be NULL), or a negative errno,
 *	explained in @e.
 * @post: mandatory. Put @state on screen now; called at the vsync the
 *	service flips at (or at once on an interface without vsync), and
 *	write a writeback destination's frame before returning. Cannot fail:
 *	what could fail was validate's to find. With FL_DISPLAY_CAP_ASYNC_FLIP:
 *	start showing @state and call the host's flipped() when it shows (and
 *	a writeback destination holds the frame); the service calls it with
 *	no other post in flight, except when a flush (blank, modeset) drains
 *	the queue: then the driver waits for the one in flight itself.
 * @state_free: frees a state that validate made, once the post is off
 *	the screen or was never posted. NULL: states need no freeing.
 *
 * Simple buffers (ADF's alloc_simple_buffer, describe_simple_post):
 * @alloc_simple_buffer: a buffer of @w × @h in RGB format @format that
 *	interface @intf can scan out: *@ret_fd (the caller's), *@ret_offset,
 *	*@ret_pitch. NULL: -EOPNOTSUPP.
 * @describe_simple_post: the custom data (at most
 *	FL_DISPLAY_MAX_CUSTOM_DATA bytes, into @buf, *@size) that a post of
 *	the one buffer @buf_desc on interface @intf needs. NULL: none.
 *
 * @set_connected: plug (@connected) or unplug interface @intf, for a
 *	driver whose connectors can be simulated (fl-displayctl, tests); it
 *	reports the change with hotplug() before it returns, so that the
 *	model shows the plug when fl_display_set_connected() returns. Return:
 *	0, -EALREADY when it is in that state, or hotplug()'s error (nothing
 *	changed). NULL: -EOPNOTSUPP.
 *
 * @capture: write what interface @intf shows now into @dst (one RGB
 *	plane of the interface's current mode's size, its fd borrowed): the
 *	one observer of a driver's output, so a driver that composes in
 *	software does it here and never for a post nobody looks at. NULL:
 *	-EOPNOTSUPP.
 *
 * @set_source: feed engine @eng from live source @src (struct
 *	fl_display_source, checked by the service: type, size, format the
 *	engine lists, layer; for a STREAM @src->fd is a SOCK_STREAM socket
 *	that becomes the driver's to close, also on failure), replacing any
 *	source it had; type NONE removes it. The driver reads the stream
 *	without ever blocking (a hostile feeder must not stall the service),
 *	and bounds the memory its sources hold. The service removes a
 *	source (type NONE, @e NULL: it cannot fail) when the client that set
 *	it goes. Return: 0, or a negative errno explained in @e. NULL: live
 *	sources are refused with -EOPNOTSUPP.
 *
 * @set_event: turn delivery of driver events of @type (128 to 254) on object
 *	@id of @kind on or off
 *	(the service counts the subscribers; this is called at the first one
 *	and after the last). The driver then sends them with the host's
 *	event(). It decides which types an object of @event_objects has,
 *	with ADF's answer for the others, which the subscriber gets: -EINVAL
 *	(the service answers -EOPNOTSUPP and -EALREADY itself). NULL, or no
 *	@event_objects: only VSYNC and HOTPLUG, which the service
 *	delivers by itself from vsync() and hotplug(); others are refused with
 *	-EOPNOTSUPP.
 */
struct fl_display_driver_ops {
	const char *name;
	uint32_t caps;
	uint32_t event_objects;
	int (*create)(const struct fl_display_host *host, void **ret_data);
	void (*destroy)(void *data);
	int (*probe)(const char *where, char *why, size_t len);
	int (*objects)(void *data, struct fl_display_driver_objects *ret);
	size_t (*stats)(void *data, struct fl_display_driver_stat *ret, size_t cap);

	int (*attach)(void *data, uint32_t eng, uint32_t intf);
	int (*detach)(void *data, uint32_t eng, uint32_t intf);
	int (*blank)(void *data, uint32_t intf, enum fl_display_dpms state);
	int (*modeset)(void *data, uint32_t intf, const struct fl_display_mode *mode);
	int (*validate_custom_format)(void *data, const struct fl_display_driver_buffer *buf,
				      size_t index, struct fl_display_error *e);
	int (*custom_data)(void *data, enum fl_display_object_kind kind, uint32_t id, void *buf,
			   size_t *size);

	int (*validate)(void *data, const struct fl_display_driver_post *post, void **ret_state,
			struct fl_display_error *e);
	void (*post)(void *data, void *state);
	void (*state_free)(void *data, void *state);

	int (*alloc_simple_buffer)(void *data, uint32_t intf, uint32_t w, uint32_t h,
				   uint32_t format, int *ret_fd, uint32_t *ret_offset,
				   uint32_t *ret_pitch);
	int (*describe_simple_post)(void *data, uint32_t intf,
				    const struct fl_display_driver_buffer *buf_desc, void *buf,
				    size_t *size);

	int (*set_connected)(void *data, uint32_t intf, bool connected);
	int (*capture)(void *data, uint32_t intf, const struct fl_display_driver_buffer *dst);

	int (*set_event)(void *data, enum fl_display_object_kind kind, uint32_t id, uint32_t type,
			 bool enabled);
	int (*set_source)(void *data, uint32_t eng, const struct fl_display_source *src,
			  struct fl_display_error *e);
};

FL_END_DECLS

#endif /* FENCELINE_DRIVER_DISPLAY_H */

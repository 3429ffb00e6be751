/* SPDX-License-Identifier: MIT */
/*
 * The window test's key reader (window-test.py): subscribes to the first
 * display device's key events (type 129, the terminal driver's, which the
 * window driver sends too) through libadf, says "ready", then prints each
 * key as "code mods ch" until @N keys came.
 *
 * usage: keys-read N
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <adf/adf.h>

struct key_event {
	struct adf_event base;
	uint16_t code, mods;
	uint32_t ch;
};

int main(int argc, char **argv)
{
	struct adf_device dev;
	adf_id_t *ids;
	ssize_t n;
	int left = argc == 2 ? atoi(argv[1]) : 0, r;

	if (left <= 0) {
		fprintf(stderr, "usage: keys-read N\n");
		return 2;
	}
	n = adf_devices(&ids);
	if (n <= 0) {
		fprintf(stderr, "keys-read: no display device (%zd)\n", n);
		return 1;
	}
	r = adf_device_open(ids[0], O_RDWR, &dev);
	free(ids);
	if (r < 0 || (r = adf_set_event(dev.fd, ADF_EVENT_DEVICE_CUSTOM + 1, true)) < 0) {
		fprintf(stderr, "keys-read: %s\n", strerror(-r));
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	while (left) {
		struct adf_event *e;

		r = adf_read_event(dev.fd, &e);
		if (r < 0) {
			fprintf(stderr, "keys-read: %s\n", strerror(-r));
			return 1;
		}
		if (e->type == ADF_EVENT_DEVICE_CUSTOM + 1 &&
		    e->length == sizeof(struct key_event)) {
			const struct key_event *k = (const struct key_event *)e;

			printf("%u %u %u\n", k->code, k->mods, k->ch);
			fflush(stdout);
			left--;
		}
		free(e);
	}
	adf_device_close(&dev);
	return 0;
}

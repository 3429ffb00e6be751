/* SPDX-License-Identifier: MIT */
/*
 * A stand-in for libFuzzer's main(), so that every compiler builds and runs
 * the fuzz targets: gcc has no libFuzzer.
 *
 * usage: fuzz-protocol-replay [-n N] [-s SEED] [-m MAXLEN] [FILE|DIR]...
 *
 * Feeds every FILE, and every regular file in each DIR, to
 * LLVMFuzzerTestOneInput() once, then N more inputs (default 20000) made
 * by a PRNG with a fixed seed: mutants of those files (bits flipped,
 * bytes set, inserted or cut, runs filled, 32-bit fields set) and random
 * bytes, at most MAXLEN (default 256, at most 4096) long. The same
 * arguments always run the same inputs, so a failure reproduces. A target reports a bug by
 * crashing (it traps), which fails the test; so does an unreadable file.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

/* Generated inputs are at most gen_max (-m, default 256) bytes long, up to GEN_MAX. */
#define GEN_MAX 4096
static size_t gen_max = 256;

struct input {
	uint8_t *data;
	size_t size;
};

static struct input *inputs;
static size_t ninputs, cap_inputs;
static uint64_t rng_state;

/* splitmix64: small, and the same sequence everywhere. */
static uint64_t rng(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static size_t below(size_t n)
{
	return n ? (size_t)(rng() % n) : 0;
}

static int run_file(const char *path)
{
	uint8_t buf[4096], *copy;
	size_t n;
	FILE *f = fopen(path, "rb");

	if (!f) {
		fprintf(stderr, "fuzz-main: %s: %s\n", path, strerror(errno));
		return -1;
	}
	n = fread(buf, 1, sizeof(buf), f);
	if (ferror(f)) {
		fprintf(stderr, "fuzz-main: %s: read error\n", path);
		fclose(f);
		return -1;
	}
	fclose(f);
	/* An exact-size copy, as libFuzzer gives, so ASan sees over-reads. */
	copy = malloc(n ? n : 1);
	if (!copy)
		return -1;
	memcpy(copy, buf, n);
	LLVMFuzzerTestOneInput(copy, n);
	if (ninputs == cap_inputs) {
		struct input *more;

		cap_inputs = cap_inputs ? 2 * cap_inputs : 16;
		more = realloc(inputs, cap_inputs * sizeof(*inputs));
		if (!more) {
			free(copy);
			return -1;
		}
		inputs = more;
	}
	inputs[ninputs].data = copy;
	inputs[ninputs].size = n;
	ninputs++;
	return 0;
}

static int compare_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A directory's regular files, in name order so runs repeat exactly. */
static int run_dir(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	char **names = NULL;
	size_t n = 0, cap = 0;
	int r = 0;

	if (!d) {
		fprintf(stderr, "fuzz-main: %s: %s\n", path, strerror(errno));
		return -1;
	}
	while ((e = readdir(d))) {
		char full[4096];
		struct stat st;

		if (e->d_name[0] == '.')
			continue;
		snprintf(full, sizeof(full), "%s/%s", path, e->d_name);
		if (stat(full, &st) < 0 || !S_ISREG(st.st_mode))
			continue;
		if (n == cap) {
			char **more;

			cap = cap ? 2 * cap : 16;
			more = realloc(names, cap * sizeof(*names));
			if (!more) {
				r = -1;
				break;
			}
			names = more;
		}
		names[n] = strdup(full);
		if (!names[n]) {
			r = -1;
			break;
		}
		n++;
	}
	closedir(d);
	if (r == 0 && n)
		qsort(names, n, sizeof(*names), compare_names);
	for (size_t i = 0; i < n; i++) {
		if (r == 0)
			r = run_file(names[i]);
		free(names[i]);
	}
	free(names);
	return r;
}

/* One generated input into @buf; returns its size. */
static size_t generate(uint8_t *buf)
{
	const struct input *seedin;
	size_t n, edits;

	if (!ninputs || below(8) == 0) {
		n = below(gen_max / 4);
		for (size_t i = 0; i < n; i++)
			buf[i] = (uint8_t)rng();
		return n;
	}
	seedin = &inputs[below(ninputs)];
	n = seedin->size < gen_max ? seedin->size : gen_max;
	memcpy(buf, seedin->data, n);
	/* Few edits: most mutants stay close to a valid packet. */
	edits = 1 + below(3);
	for (size_t k = 0; k < edits; k++) {
		size_t at = below(n + 1);

		switch (below(8)) {
		case 0: /* flip a bit */
			if (n)
				buf[below(n)] ^= (uint8_t)(1u << below(8));
			break;
		case 1: /* set a byte to an edge value */
			if (n) {
				static const uint8_t edges[] = { 0x00, 0x01, 0x7f, 0x80, 0xff };

				buf[below(n)] = edges[below(sizeof(edges))];
			}
			break;
		case 2: /* random byte */
			if (n)
				buf[below(n)] = (uint8_t)rng();
			break;
		case 3: /* insert a byte */
			if (n < gen_max) {
				memmove(buf + at + 1, buf + at, n - at);
				buf[at] = (uint8_t)rng();
				n++;
			}
			break;
		case 4: /* cut the tail */
			n = at;
			break;
		case 5: /* fill a run, often exactly over a name field */
			if (n) {
				uint8_t v = (uint8_t)(1 + below(255));

				/* 1 + 16 (+ 8): where the bodies' names start. */
				if (below(2))
					at = 17 + 8 * below(2);

				for (size_t j = at, end = at + 1 + below(40); j < end && j < n; j++)
					buf[j] = v;
			}
			break;
		case 6: /* set a 32-bit field of the packet (after the first byte) */
			if (n >= 5) {
				static const uint32_t words[] = { 0,	       1,	   2,  3,
								  8,	       40,	   64, 65,
								  0x80000000u, 0xffffffffu };
				uint32_t w = below(2) ? words[below(sizeof(words) / 4)]
						      : (uint32_t)rng();

				memcpy(buf + 1 + 4 * below((n - 1) / 4), &w, sizeof(w));
			}
			break;
		default: /* change how it arrived (the first byte) */
			if (n)
				buf[0] = (uint8_t)rng();
			break;
		}
	}
	return n;
}

int main(int argc, char **argv)
{
	unsigned long long runs = 20000, seed = 1, max = 256;
	uint8_t buf[GEN_MAX];
	int i;

	i = 1;
	while (i < argc && argv[i][0] == '-') {
		char *end;

		if (!strcmp(argv[i], "--")) {
			i++;
			break;
		}
		if ((strcmp(argv[i], "-n") && strcmp(argv[i], "-s") && strcmp(argv[i], "-m")) ||
		    i + 1 == argc) {
			fprintf(stderr, "usage: %s [-n RUNS] [-s SEED] [-m MAXLEN] [FILE|DIR]...\n",
				argv[0]);
			return 2;
		}
		errno = 0;
		*(argv[i][1] == 'n'   ? &runs
		  : argv[i][1] == 's' ? &seed
				      : &max) = strtoull(argv[i + 1], &end, 0);
		if (errno || *end || end == argv[i + 1] || max == 0 || max > GEN_MAX) {
			fprintf(stderr, "fuzz-main: bad number '%s'\n", argv[i + 1]);
			return 2;
		}
		i += 2;
	}
	rng_state = seed;
	gen_max = (size_t)max;
	for (; i < argc; i++) {
		struct stat st;
		int r;

		if (stat(argv[i], &st) < 0) {
			fprintf(stderr, "fuzz-main: %s: %s\n", argv[i], strerror(errno));
			return 1;
		}
		r = S_ISDIR(st.st_mode) ? run_dir(argv[i]) : run_file(argv[i]);
		if (r < 0)
			return 1;
	}
	for (unsigned long long k = 0; k < runs; k++) {
		size_t n = generate(buf);
		uint8_t *copy = malloc(n ? n : 1);

		if (!copy)
			return 1;
		memcpy(copy, buf, n);
		LLVMFuzzerTestOneInput(copy, n);
		free(copy);
	}
	printf("fuzz-main: %zu files and %llu generated inputs passed (seed %llu)\n", ninputs, runs,
	       seed);
	for (size_t k = 0; k < ninputs; k++)
		free(inputs[k].data);
	free(inputs);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * raid_test.h - what the RAID's tests share: a seeded generator, the seed
 * taken from argv or WTIO_RAID_SEED (printed, to replay), and CHECK.
 */
#ifndef WTIO_RAID_TEST_H
#define WTIO_RAID_TEST_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int raid_test_failures;

/* On failure: say where and what, count it, return -1. */
#define CHECK(cond, ...) do { \
	if (!(cond)) { \
		fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
		fprintf(stderr, __VA_ARGS__); \
		fputc('\n', stderr); \
		raid_test_failures++; \
		return -1; \
	} \
} while (0)

/* splitmix64 */
static inline uint64_t rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* argv[1], else WTIO_RAID_SEED, else the clock and pid. */
static inline uint64_t raid_test_seed(int argc, char **argv)
{
	const char *env = getenv("WTIO_RAID_SEED");

	if (argc > 1)
		return strtoull(argv[1], NULL, 0);
	if (env && *env)
		return strtoull(env, NULL, 0);
	return (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 20);
}

#endif

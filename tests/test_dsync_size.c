/* SPDX-License-Identifier: MIT */
/*
 * test_dsync_size.c - an extending WTIO_DSYNC write leaves the backing
 * file at its exact new size, as O_DSYNC does, in every write mode: a
 * log appended in 100-byte records must not be seen by other programs,
 * or found after a crash, ending in zeros up to the next block.
 *
 * Checked twice: through the kernel (stat) after each append, and after a
 * simulated crash: on the fault backend, the record is replayed (several
 * seeds, torn unflushed writes included) at the point each append was
 * acknowledged; the file must be exactly the records so far, size and
 * bytes. Between two acknowledgements (a crash inside an append) it holds
 * at least the records acknowledged and is never longer than the tail
 * block of the one in flight.
 */
#include "helpers.h"
#include "t_fault.h"

#define REC 100
#define NR 40

#define SEEDS 6

static uint64_t replays, torn_replays, window_replays, window_long;

/* Replay the record of path up to nr events (seed) into dst; returns the
 * replayed bytes (malloc'd) and their count. */
static uint8_t *replay(struct wtio_fault *fault, const char *path,
		       const char *dst, uint64_t nr, uint64_t seed,
		       size_t *len)
{
	struct wtio_fault_replay_info ri;
	uint8_t *d = t_fault_replay_read(fault, path, dst, nr, seed, len, &ri);

	replays++;
	torn_replays += ri.writes_torn > 0;
	return d;
}

static void appends(const char *path, unsigned int flags, const char *what)
{
	const char *dst = t_tmpfile("dsync-replay");
	struct wtio_fault *fault = wtio_fault_create();
	uint8_t log[NR * REC];
	uint64_t ack[NR], n, s;
	struct wtio_config cfg;
	struct wtio_ctx *ctx;
	struct wtio_file *f;
	struct stat st;
	int i;

	CHECK(fault);
	t_fault_config(&cfg, 4096, 256);
	ctx = t_fault_ctx_create(&cfg, fault);
	/* A new, empty file: the replay starts from an empty file. */
	CHECK_OK(wtio_open(ctx, path, O_RDWR | O_CREAT | O_TRUNC, 0644, 0, &f));
	for (i = 0; i < NR; i++) {
		memset(log + i * REC, 'a' + i % 26, REC);
		CHECK_EQ(wtio_pwrite(f, log + i * REC, REC, (off_t)i * REC,
				     flags), REC);
		ack[i] = wtio_fault_nr_events(fault);
		/* What another program sees now, through the kernel. */
		CHECK_OK(stat(path, &st));
		CHECKF(st.st_size == (off_t)(i + 1) * REC, "%s: after record "
		       "%d the file is %lld bytes, want %d", what, i,
		       (long long)st.st_size, (i + 1) * REC);
	}
	CHECK_OK(wtio_close(f));
	CHECK_OK(wtio_ctx_destroy(ctx));

	/* Crashes: at every event; acknowledged points must be exact. */
	for (i = 0, n = 0; n <= ack[NR - 1]; n++) {
		size_t lo, hi;

		while (i < NR && ack[i] < n)
			i++;
		/* Records 0..i-1 acknowledged before n; record i's events
		 * end at ack[i] (== n: acknowledged exactly here). */
		lo = (size_t)(i < NR && ack[i] == n ? i + 1 : i) * REC;
		hi = i < NR ? (size_t)(i + 1) * REC : lo;
		if (hi > lo)
			hi = (hi + 4095) & ~(size_t)4095;
		for (s = 0; s < SEEDS; s++) {
			size_t len;
			uint8_t *d = replay(fault, path, dst, n, s, &len);

			CHECKF(len >= lo && len <= hi, "%s: crash after %llu "
			       "events (%zu bytes acknowledged), seed %llu: "
			       "the file is %zu bytes, want %zu%s%zu", what,
			       (unsigned long long)n, lo,
			       (unsigned long long)s, len, lo,
			       hi > lo ? "..": " (exact), max ", hi);
			CHECKF(t_memdiff(d, log, lo) < 0, "%s: crash after %llu "
			       "events, seed %llu: acknowledged record byte "
			       "%lld lost", what, (unsigned long long)n,
			       (unsigned long long)s, t_memdiff(d, log, lo));
			if (hi > lo) {
				window_replays++;
				window_long += len > (size_t)(i + 1) * REC;
			}
			free(d);
		}
	}
	wtio_fault_destroy(fault);
	printf("%s: exact size after each of %d appends, through the kernel "
	       "and after a crash at each acknowledgement (%d seeds)\n",
	       what, NR, SEEDS);
}

int main(void)
{
	char path[64];

	t_require_odirect();
	snprintf(path, sizeof(path), "dsync_size.%d", (int)getpid());
	appends(path, WTIO_DSYNC, "write-back DSYNC");
	appends(path, WTIO_WRITETHROUGH | WTIO_DSYNC, "write-through DSYNC");
	appends(path, WTIO_WRITETHROUGH | WTIO_DONTCACHE | WTIO_DSYNC,
		"write-through drop-behind DSYNC");
	unlink(path);
	printf("%llu replays (%llu torn); %llu inside an append, %llu of them "
	       "longer than the records written (tail block): PASS\n",
	       (unsigned long long)replays, (unsigned long long)torn_replays,
	       (unsigned long long)window_replays,
	       (unsigned long long)window_long);
	return T_EXIT_PASS;
}

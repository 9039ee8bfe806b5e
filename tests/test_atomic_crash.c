/* SPDX-License-Identifier: MIT */
/*
 * test_atomic_crash.c - WTIO_ATOMIC writes never tear across a crash, and
 * the replay does tear what is not atomic.
 *
 * On an XFS loop image (RWF_ATOMIC; exits 77 with the reason where it
 * cannot be made or has no atomic unit of SLOT bytes) a file of NSLOT
 * slots of SLOT bytes: even slots are written only whole with WTIO_ATOMIC
 * (a quarter with WTIO_DSYNC too), odd slots only whole with
 * WTIO_WRITETHROUGH (one multi-block I/O each, not atomic); fsyncs here
 * and there. Then wtio_ctx_crash(), and every prefix of the record is
 * replayed with several seeds (the replay tears unflushed non-atomic
 * writes at block granularity, lands RWF_ATOMIC ones whole or not at all):
 *
 *  - every atomic slot holds exactly one version (zeros or one write),
 *    never older than its newest durable one (fsync'd, or DSYNC-acked);
 *  - every write-through slot holds, block by block, its durable version
 *    or a later one; torn images (blocks of different versions) are
 *    counted, and the test fails if the replay never produced one, so the
 *    atomic check cannot pass by the replay never tearing.
 */
#include "helpers.h"
#include "t_fault.h"
#include "xfs_loop.h"

/* wtio_ctx_crash() leaks the handles still open, on purpose. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
	return "leak:wtio_file_open\n";
}

#define SLOT	16384u
#define NSLOT	12
#define BLK	4096u
#define MAXV	24
#define SEEDS	6

struct slot {
	int nv;
	uint64_t seed[MAXV];
	uint64_t issued_at[MAXV];	/* events recorded before it began */
	uint64_t durable_at[MAXV];	/* from this prefix on it is durable */
};

static struct slot slots[NSLOT];

/* Which version of slot s fills [off, off + len) of have: -1 zeros, v a
 * write's pattern, -2 none. */
static int which_version(const struct slot *sl, const uint8_t *have,
			 off_t off, size_t len, uint8_t *exp)
{
	int v;

	memset(exp, 0, len);
	if (!memcmp(have, exp, len))
		return -1;
	for (v = sl->nv - 1; v >= 0; v--) {
		t_fill(exp, len, sl->seed[v], (uint64_t)off);
		if (!memcmp(have, exp, len))
			return v;
	}
	return -2;
}

int main(void)
{
	struct wtio_fault *fault;
	struct wtio_config cfg;
	struct wtio_file_info info;
	struct wtio_ctx *ctx;
	struct wtio_file *f;
	struct t_rng rng = { 2026 };
	const char *path, *rpath;
	uint8_t *buf = t_malloc(SLOT), *rb = t_malloc(NSLOT * SLOT),
		*exp = t_malloc(SLOT);
	uint64_t nev, n, seed, replays = 0, torn_images = 0, torn_replays = 0,
		 atomic_seen = 0, atomic_writes = 0, wt_writes = 0, syncs = 0;
	int op, i, rfd, ret;

	setvbuf(stdout, NULL, _IOLBF, 0);
	t_watchdog(110, "FAIL: atomic_crash hung (watchdog)\n");
	ret = xl_setup("atomic-crash", "");
	if (ret == XL_SKIP)
		t_skip("XFS loop image: %s", xl.why);
	CHECKF(ret == XL_OK, "%s", xl.why);
	path = t_dir_file(xl.mnt, "slots");
	rpath = t_dir_file(xl.mnt, "replay");

	fault = wtio_fault_create();
	CHECK(fault);
	t_fault_config(&cfg, 4096, 1024);
	ctx = t_fault_ctx_create(&cfg, fault);
	f = t_open(ctx, path, O_RDWR);
	CHECK_OK(wtio_file_info(f, &info));
	if (info.atomic_unit_min > SLOT || info.atomic_unit_max < SLOT) {
		t_remove_dir_files();
		xl_cleanup();
		t_skip("no %u-byte atomic writes on this XFS (statx: %u..%u)",
		       SLOT, info.atomic_unit_min, info.atomic_unit_max);
	}

	for (op = 0; op < 90; op++) {
		int s = (int)t_rand_below(&rng, NSLOT);
		struct slot *sl = &slots[s];
		bool atomic = !(s & 1);
		bool dsync = atomic && t_rand_below(&rng, 4) == 0;
		unsigned int flags;

		if (t_rand_below(&rng, 10) == 0) {
			uint64_t at;

			CHECK_OK(wtio_fsync(f));
			syncs++;
			at = wtio_fault_nr_events(fault);
			for (i = 0; i < NSLOT; i++)
				for (int v = 0; v < slots[i].nv; v++)
					if (slots[i].durable_at[v] > at)
						slots[i].durable_at[v] = at;
			continue;
		}
		if (sl->nv == MAXV)
			continue;
		flags = atomic ? WTIO_ATOMIC | (dsync ? WTIO_DSYNC : 0) :
			WTIO_WRITETHROUGH;
		sl->seed[sl->nv] = 100000 + (uint64_t)op;
		sl->issued_at[sl->nv] = wtio_fault_nr_events(fault);
		t_fill(buf, SLOT, sl->seed[sl->nv], (uint64_t)s * SLOT);
		CHECK_EQ(wtio_pwrite(f, buf, SLOT, (off_t)s * SLOT, flags),
			 (long long)SLOT);
		sl->durable_at[sl->nv] = dsync ? wtio_fault_nr_events(fault) :
				       UINT64_MAX;
		sl->nv++;
		if (atomic)
			atomic_writes++;
		else
			wt_writes++;
	}
	wtio_ctx_crash(ctx);
	nev = wtio_fault_nr_events(fault);

	rfd = open(rpath, O_RDWR);
	CHECK(rfd >= 0);
	for (n = 0; n <= nev; n++) {
		for (seed = 0; seed < SEEDS; seed++) {
			struct wtio_fault_replay_info ri;
			ssize_t got;
			bool torn = false;

			CHECK_OK(ftruncate(rfd, 0));
			CHECK_OK(wtio_fault_replay_ex(fault, path, n, seed, rfd,
						      &ri));
			memset(rb, 0, NSLOT * SLOT);
			got = pread(rfd, rb, NSLOT * SLOT, 0);
			CHECK(got >= 0);
			atomic_seen += ri.atomic_writes;
			for (i = 0; i < NSLOT; i++) {
				const struct slot *sl = &slots[i];
				const uint8_t *have = rb + (size_t)i * SLOT;
				int v, w, min_v = -1;
				uint32_t b;

				for (v = 0; v < sl->nv; v++)
					if (sl->durable_at[v] <= n)
						min_v = v;
				w = which_version(sl, have, (off_t)i * SLOT,
						  SLOT, exp);
				if (!(i & 1)) {
					CHECKF(w != -2, "atomic slot %d torn "
					       "after %llu of %llu events, seed "
					       "%llu", i, (unsigned long long)n,
					       (unsigned long long)nev,
					       (unsigned long long)seed);
					CHECKF(w >= min_v, "atomic slot %d: "
					       "version %d after %llu events, "
					       "but version %d was durable", i,
					       w, (unsigned long long)n, min_v);
					CHECKF(w < 0 || sl->issued_at[w] < n,
					       "atomic slot %d: version %d "
					       "before it was issued", i, w);
					continue;
				}
				if (w == -2)
					torn = true;
				/* Block by block: durable or later, issued
				 * within the prefix. */
				for (b = 0; b < SLOT; b += BLK) {
					off_t o = (off_t)i * SLOT + b;
					int bv = which_version(sl, have + b, o,
							       BLK, exp);

					CHECKF(bv != -2 && bv >= min_v &&
					       (bv < 0 || sl->issued_at[bv] < n),
					       "write-through slot %d block %u: "
					       "version %d after %llu events "
					       "seed %llu (durable %d)", i,
					       b / BLK, bv,
					       (unsigned long long)n,
					       (unsigned long long)seed, min_v);
				}
				torn_images += w == -2;
			}
			torn_replays += torn;
			replays++;
		}
	}
	close(rfd);
	printf("%llu atomic and %llu write-through slot writes, %llu fsyncs, "
	       "%llu events; %llu replays (every prefix x %d seeds): atomic "
	       "slots never torn (%llu unflushed atomic writes replayed), "
	       "%llu torn write-through slots in %llu replays\n",
	       (unsigned long long)atomic_writes,
	       (unsigned long long)wt_writes, (unsigned long long)syncs,
	       (unsigned long long)nev, (unsigned long long)replays, SEEDS,
	       (unsigned long long)atomic_seen,
	       (unsigned long long)torn_images,
	       (unsigned long long)torn_replays);
	CHECKF(torn_replays > 0, "the replay never tore a write-through slot: "
	       "the atomic check proves nothing");
	CHECKF(atomic_seen > 0, "no unflushed atomic write was replayed");
	wtio_fault_destroy(fault);
	t_remove_dir_files();
	CHECKF(xl_umount() == XL_OK, "%s", xl.why);
	xl_cleanup();
	free(buf);
	free(rb);
	free(exp);
	printf("PASS\n");
	return T_EXIT_PASS;
}

/* SPDX-License-Identifier: MIT */
/*
 * test_io_sync_reap.c - wtio_io_sync never returns while its request is
 * still in flight, whatever the backend's reap returns meanwhile. It
 * used to return a hard reap error at once, leaving the request with the
 * backend, whose later completion wrote into the returned caller's
 * stack frame. A backend of the test's own holds the request, fails its
 * first reaps with hard errors (-EIO, -EFAULT, -ENOMEM) and only then
 * completes it.
 */
#include "helpers.h"
#include "io/ops.h"

static struct wtio_io_req *held;
static int reaps, failures;
static bool completed;

static int fake_submit(struct wtio_io_backend *be, struct wtio_io_req **reqs,
		       unsigned int nr)
{
	(void)be;
	CHECK(nr == 1 && !held);
	held = reqs[0];
	return 0;
}

static int fake_reap(struct wtio_io_backend *be, unsigned int min,
		     const struct timespec *ts)
{
	static const int errs[] = { -EIO, -EFAULT, -ENOMEM, -EIO };
	struct wtio_io_req *r;

	(void)be; (void)min; (void)ts;
	reaps++;
	if (failures < (int)(sizeof(errs) / sizeof(errs[0])))
		return errs[failures++];
	r = held;
	if (!r)
		return 0;
	held = NULL;
	completed = true;
	r->end_io(r, 4096);
	return 1;
}

static unsigned int fake_inflight(struct wtio_io_backend *be)
{
	(void)be;
	return held != NULL;
}

static int fake_setup(struct wtio_io_backend *be)
{
	(void)be;
	return 0;
}

static void fake_teardown(struct wtio_io_backend *be)
{
	(void)be;
}

static const struct wtio_io_ops fake_ops = {
	.version = WTIO_IO_OPS_VERSION,
	.name = "fake",
	.setup = fake_setup,
	.teardown = fake_teardown,
	.submit = fake_submit,
	.reap = fake_reap,
	.inflight = fake_inflight,
	.set_size = wtio_io_ftruncate,
};

int main(void)
{
	struct wtio_io_backend be;
	static char buf[4096];
	struct iovec v = { buf, sizeof(buf) };
	struct wtio_io_req req = {
		/* Any valid descriptor: the fake backend never uses it. */
		.op = WTIO_IO_WRITE, .fd = 0, .off = 0, .iov = &v, .iovcnt = 1,
	};
	ssize_t res;

	CHECK_OK(wtio_io_backend_setup(&be, &fake_ops, NULL, NULL, 0, 0));
	t_watchdog(60, "wtio_io_sync never returned\n");
	res = wtio_io_sync(&be, &req);
	CHECKF(completed, "wtio_io_sync returned %zd with its request still "
	       "held by the backend", res);
	CHECK_EQ(res, 4096);
	CHECK(held == NULL);
	CHECK_EQ(failures, 4);
	printf("wtio_io_sync waited through %d hard reap errors (%d reaps) "
	       "and returned the request's own result\n", failures, reaps);
	wtio_io_backend_exit(&be);
	return T_EXIT_PASS;
}

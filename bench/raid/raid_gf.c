/* SPDX-License-Identifier: MIT */
/*
 * raid_gf.c - P/Q parity and two-erasure recovery (H. Peter Anvin, "The
 * mathematics of RAID-6"), with a 64 KiB multiplication table built once.
 */
#include "raid_gf.h"

#include <pthread.h>
#include <string.h>

static uint8_t gf_exp[512];
static uint8_t gf_log[256];
static uint8_t gf_mul_tab[256][256];
static pthread_once_t gf_once = PTHREAD_ONCE_INIT;

static void gf_build(void)
{
	unsigned int x = 1, i, j;

	for (i = 0; i < 255; i++) {
		gf_exp[i] = (uint8_t)x;
		gf_log[x] = (uint8_t)i;
		x <<= 1;
		if (x & 0x100)
			x ^= 0x11d;
	}
	for (i = 255; i < 512; i++)
		gf_exp[i] = gf_exp[i - 255];
	for (i = 0; i < 256; i++)
		for (j = 0; j < 256; j++)
			gf_mul_tab[i][j] = (i && j) ?
				gf_exp[gf_log[i] + gf_log[j]] : 0;
}

static void gf_init(void)
{
	pthread_once(&gf_once, gf_build);
}

static uint8_t gf_pow2(unsigned int d)
{
	return gf_exp[d % 255];
}

static uint8_t gf_inv(uint8_t a)
{
	return gf_exp[255 - gf_log[a]];
}

void raid_xor(uint8_t *dst, const uint8_t *src, size_t len)
{
	uint64_t *d = (uint64_t *)dst;
	const uint64_t *s = (const uint64_t *)src;
	size_t i;

	for (i = 0; i < len / 8; i++)
		d[i] ^= s[i];
}

/* dst ^= c * src */
static void gf_muladd(uint8_t *dst, const uint8_t *src, uint8_t c, size_t len)
{
	const uint8_t *t = gf_mul_tab[c];
	size_t i;

	if (c == 1) {
		raid_xor(dst, src, len);
		return;
	}
	for (i = 0; i < len; i++)
		dst[i] ^= t[src[i]];
}

/* dst = c * dst */
static void gf_scale(uint8_t *dst, uint8_t c, size_t len)
{
	const uint8_t *t = gf_mul_tab[c];
	size_t i;

	for (i = 0; i < len; i++)
		dst[i] = t[dst[i]];
}

void raid_q_add(uint8_t *dst, const uint8_t *src, unsigned int d, size_t len)
{
	gf_init();
	gf_muladd(dst, src, gf_pow2(d), len);
}

void raid_gen_parity(uint8_t *const *data, unsigned int nd, size_t off,
		     uint8_t *p, uint8_t *q, size_t len)
{
	unsigned int d;

	gf_init();
	memcpy(p, data[0] + off, len);
	for (d = 1; d < nd; d++)
		raid_xor(p, data[d] + off, len);
	if (!q)
		return;
	/* Horner: Q = (((D[nd-1]) * 2 ^ D[nd-2]) * 2 ...) ^ D[0] */
	memcpy(q, data[nd - 1] + off, len);
	for (d = nd - 1; d-- > 0;) {
		gf_scale(q, 2, len);
		raid_xor(q, data[d] + off, len);
	}
}

/* The P or Q of the data blocks, the lost ones counted as zero. */
static void partial_syndrome(uint8_t *const *blk, unsigned int nd,
			     const unsigned int *fail, unsigned int nfail,
			     size_t off, uint8_t *out, int want_q, size_t len)
{
	unsigned int d, f;

	memset(out, 0, len);
	for (d = 0; d < nd; d++) {
		int lost = 0;

		for (f = 0; f < nfail; f++)
			lost |= fail[f] == d;
		if (lost)
			continue;
		if (want_q)
			gf_muladd(out, blk[d] + off, gf_pow2(d), len);
		else
			raid_xor(out, blk[d] + off, len);
	}
}

void raid_recover(uint8_t *const *blk, unsigned int nd, unsigned int np,
		  const unsigned int *fail, unsigned int nfail, size_t off,
		  size_t len)
{
	unsigned int x = fail[0], y = nfail > 1 ? fail[1] : nd + np;
	uint8_t *P = blk[nd] + off, *Q = np > 1 ? blk[nd + 1] + off : NULL;

	gf_init();
	if (x < nd && y >= nd) {
		/* One data block lost: from P if P survives, else from Q:
		 * D_x = (Q ^ Q_x) / 2^x, Q_x being Q without D_x. */
		int from_q = y == nd;

		partial_syndrome(blk, nd, fail, 1, off, blk[x] + off, from_q,
				 len);
		raid_xor(blk[x] + off, from_q ? Q : P, len);
		if (from_q)
			gf_scale(blk[x] + off, gf_inv(gf_pow2(x)), len);
	}
	if (x >= nd || y >= nd) {
		/* The data is whole now: recompute the lost parity. */
		if (x == nd || y == nd)
			partial_syndrome(blk, nd, NULL, 0, off, P, 0, len);
		if (Q && (x == nd + 1 || y == nd + 1))
			partial_syndrome(blk, nd, NULL, 0, off, Q, 1, len);
		return;
	}
	/* Two data blocks x < y. Pxy = P ^ P', Qxy = Q ^ Q';
	 * D_x = A * Pxy ^ B * Qxy, D_y = Pxy ^ D_x, with
	 * A = 2^(y-x) / (2^(y-x) ^ 1), B = 2^-x / (2^(y-x) ^ 1). */
	{
		uint8_t gyx = gf_pow2(y - x);
		uint8_t den = gf_inv((uint8_t)(gyx ^ 1));
		uint8_t A = gf_mul_tab[gyx][den];
		uint8_t B = gf_mul_tab[gf_inv(gf_pow2(x))][den];
		uint8_t *Dx = blk[x] + off, *Dy = blk[y] + off;
		size_t i;

		partial_syndrome(blk, nd, fail, 2, off, Dy, 0, len);
		raid_xor(Dy, P, len);		/* Dy = Pxy for now */
		partial_syndrome(blk, nd, fail, 2, off, Dx, 1, len);
		raid_xor(Dx, Q, len);		/* Dx = Qxy for now */
		for (i = 0; i < len; i++) {
			uint8_t pxy = Dy[i], qxy = Dx[i];

			Dx[i] = gf_mul_tab[A][pxy] ^ gf_mul_tab[B][qxy];
			Dy[i] = pxy ^ Dx[i];
		}
	}
}

/* SPDX-License-Identifier: MIT */
/*
 * raid_gf.h - parity arithmetic of the user-space RAID: XOR (P) and the
 * GF(2^8) Reed-Solomon syndrome (Q), and recovery of up to two lost blocks.
 * Lengths are multiples of 8 and buffers 8-byte aligned.
 */
#ifndef WTIO_RAID_GF_H
#define WTIO_RAID_GF_H

#include <stddef.h>
#include <stdint.h>

/* dst ^= src */
void raid_xor(uint8_t *dst, const uint8_t *src, size_t len);
/* dst ^= 2^d * src in GF(2^8): a Q update for data chunk d. */
void raid_q_add(uint8_t *dst, const uint8_t *src, unsigned int d, size_t len);
/*
 * P (and Q, when q is not NULL) of nd data blocks, each at data[i] + off.
 */
void raid_gen_parity(uint8_t *const *data, unsigned int nd, size_t off,
		     uint8_t *p, uint8_t *q, size_t len);
/*
 * blk[0..nd-1] data, blk[nd] P, blk[nd+1] Q (when np == 2), each read at
 * offset off: rebuild the nfail (1 or 2) blocks listed in fail (ascending)
 * from the others, in place.
 */
void raid_recover(uint8_t *const *blk, unsigned int nd, unsigned int np,
		  const unsigned int *fail, unsigned int nfail, size_t off,
		  size_t len);

#endif /* WTIO_RAID_GF_H */

/* SPDX-License-Identifier: MIT */
/*
 * holder_nop.c - an empty library for wtio-run --preload: the holder's
 * own test (shim-holder.sh) runs its client without the shim.
 */
int wtio_holder_test_nop;

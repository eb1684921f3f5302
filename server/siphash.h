/* SPDX-License-Identifier: GPL-2.0-only */
/* SipHash-2-4 (Aumasson and Bernstein): a keyed 64-bit MAC for short inputs. */
#ifndef ORFS_SERVER_SIPHASH_H
#define ORFS_SERVER_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

uint64_t siphash24(const uint8_t key[16], const void *data, size_t len);

#endif

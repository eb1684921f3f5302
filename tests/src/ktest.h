/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Helpers of the programs that drive knet through /dev/knet_test
 * (knet-test, regcache-test): connect, and block I/O on a volume whose
 * data is kernel memory of a chosen kind or the caller's own memory.
 */
#ifndef ORFS_TOOLS_KTEST_H
#define ORFS_TOOLS_KTEST_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "tests/kmod/knet_test.h"

/*
 * Open /dev/knet_test and connect to volume NAME at ADDR (IPv4 text), as a
 * completion group of QUEUES endpoints when QUEUES > 1. The environment
 * picks the transport (KTEST_TRANSPORT: rdma, the default, tcp or auto)
 * and, over TCP, the digests (KTEST_DIGEST: none, header, data or both)
 * and the port (KTEST_PORT, default knet's).
 * Returns the descriptor, or -1 with a message; *REFUSED is set when the
 * server refused (its reason printed).
 */
int ktest_connect(const char *addr, const char *name, int service, int queues,
		  struct knet_test_connect *cn, int *refused);

/*
 * One block request: OP is MXBD_OP_READ or MXBD_OP_WRITE at byte OFF.
 * MEM is a KNET_TEST_MEM_* kind; for user memory, IOV/NR_IOV (when
 * NR_IOV > 0) describe it instead of BUF, and SKIP bytes are skipped.
 * Returns the bytes the reply carried inline (>= 0), -1 with errno set
 * when the kernel refused the call, or -2 when the server answered an
 * error (errno set to it).
 */
int ktest_block_io(int fd, uint16_t op, uint64_t off, void *buf, uint32_t len, int mem,
		   uint32_t skip, const struct iovec *iov, unsigned int nr_iov);

/* Byte I of the test pattern SEED. */
static inline uint8_t ktest_byte(uint64_t seed, size_t i)
{
	return (uint8_t)(i * 131 + seed * 7 + 1 + (i >> 12));
}

void ktest_fill(void *buf, size_t len, uint64_t seed);

/* Index of the first byte of BUF that is not pattern SEED, or LEN. */
size_t ktest_check(const void *buf, size_t len, uint64_t seed);

#endif

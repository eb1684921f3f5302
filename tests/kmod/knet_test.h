/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause */
/*
 * /dev/knet_test: a test-only device (knet_test.ko, loaded by the tests
 * alone) through which a userspace program drives knet against a real
 * server: connect an endpoint, and send requests whose data is kernel
 * memory (a kmalloc buffer) or pages, copied from and to the caller, or
 * the caller's own memory, which knet pins through regcache (zero copy).
 */
#ifndef _UAPI_KNET_TEST_H
#define _UAPI_KNET_TEST_H

#include <linux/ioctl.h>
#include <linux/types.h>

struct knet_test_connect {
	__be32	addr;		/* IPv4, network order */
	__u16	port;		/* host order */
	__u8	service;
	__u8	queues;		/* endpoints of a completion group; 0 or 1: one */
	char	name[40];	/* NUL-terminated */
	__s32	reason;		/* out: reject reason */
	__u32	credits;	/* out: limits */
	__u32	inline_max;
	__u32	max_io;
	__u32	transport;	/* enum knet_transport_sel: 0 rdma, 1 tcp, 2 auto */
	__u32	digests;	/* over TCP: KNET_CMF_HDGST, KNET_CMF_DDGST */
};

#define KNET_TEST_MEM_KVEC	0
#define KNET_TEST_MEM_PAGES	1
#define KNET_TEST_MEM_USER	2	/* the caller's memory, cached registration */
#define KNET_TEST_MEM_USER_NOCACHE 3	/* the caller's memory, pinned per request */

struct knet_test_call {
	__u16	opcode;
	__u16	mem_type;	/* KNET_TEST_MEM_* */
	__u32	dir;		/* 0 none, 1 to the server, 2 from the server */
	__u64	body;		/* user pointer */
	__u32	body_len;
	__u32	data_len;
	__u64	data;		/* user pointer */
	/* pages: where the data starts in the first page; user memory: bytes skipped */
	__u32	page_offset;
	__u32	timeout_ms;
	__u64	reply;		/* user pointer */
	__u32	reply_max;
	__u32	reply_len;	/* out */
	__u32	status;		/* out: the server's answer */
	__u32	inline_len;	/* out */
	__u32	nr_iov;		/* user memory: DATA is an array of NR_IOV iovecs */
	/*
	 * Kernel memory: once the call is over, fill the data with a canary,
	 * wait this long and count the bytes changed meanwhile (late_changed),
	 * with the call's result in error; the ioctl then returns 0.
	 */
	__u32	late_check_ms;
	__u32	late_changed;	/* out */
	__s32	error;		/* out, with late_check_ms: knet_call()'s result */
};

/*
 * A batch of block requests kept DEPTH deep with knet_submit(): writes a
 * pattern over COUNT blocks from OFFSET on (MXBD volumes), then reads them
 * back and compares in the kernel. MODE 0 collects the ends with
 * knet_ep_wait_any(), mode 1 with callbacks, mode 2 spreads the requests
 * over the completion group of a connect with QUEUES > 1, one kernel
 * thread per endpoint collecting its ends with knet_ep_wait_any().
 */
struct knet_test_batch {
	__u32	bs;
	__u32	count;
	__u32	depth;
	__u16	mem_type;
	__u16	mode;
	__u32	page_offset;
	__u32	reserved;
	__u64	offset;
	__u64	elapsed_ns;	/* out */
	__u32	errors;		/* out: requests that failed */
	__u32	mismatches;	/* out: blocks read back wrong */
	__u32	busy;		/* out: times knet said -EAGAIN (no credit) */
	__u32	min_served;	/* out, mode 2: fewest requests one thread collected */
	__u64	write_ns;	/* out: of elapsed_ns, the write pass */
};

#define KNET_TEST_CONNECT	_IOWR('k', 1, struct knet_test_connect)
#define KNET_TEST_CALL		_IOWR('k', 2, struct knet_test_call)
#define KNET_TEST_BATCH		_IOWR('k', 3, struct knet_test_batch)

#endif /* _UAPI_KNET_TEST_H */

/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause */
/*
 * /dev/knet_test: a test-only device (knet_test.ko, loaded by the tests
 * alone) through which a userspace program drives knet against a real
 * server: connect an endpoint, and send requests whose data is kernel
 * memory (a kmalloc buffer) or pages, copied from and to the caller.
 */
#ifndef _UAPI_KNET_TEST_H
#define _UAPI_KNET_TEST_H

#include <linux/ioctl.h>
#include <linux/types.h>

struct knet_test_connect {
	__be32	addr;		/* IPv4, network order */
	__u16	port;		/* host order */
	__u8	service;
	__u8	reserved;
	char	name[40];	/* NUL-terminated */
	__s32	reason;		/* out: reject reason */
	__u32	credits;	/* out: limits */
	__u32	inline_max;
	__u32	max_io;
};

#define KNET_TEST_MEM_KVEC	0
#define KNET_TEST_MEM_PAGES	1

struct knet_test_call {
	__u16	opcode;
	__u16	mem_type;	/* KNET_TEST_MEM_* */
	__u32	dir;		/* 0 none, 1 to the server, 2 from the server */
	__u64	body;		/* user pointer */
	__u32	body_len;
	__u32	data_len;
	__u64	data;		/* user pointer */
	__u32	page_offset;	/* pages: where the data starts in the first page */
	__u32	timeout_ms;
	__u64	reply;		/* user pointer */
	__u32	reply_max;
	__u32	reply_len;	/* out */
	__u32	status;		/* out: the server's answer */
	__u32	inline_len;	/* out */
};

#define KNET_TEST_CONNECT	_IOWR('k', 1, struct knet_test_connect)
#define KNET_TEST_CALL		_IOWR('k', 2, struct knet_test_call)

#endif /* _UAPI_KNET_TEST_H */

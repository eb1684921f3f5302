// SPDX-License-Identifier: GPL-2.0-only
/* Helpers of the programs that drive knet through /dev/knet_test. */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "ktest.h"
#include "mxbd/uapi/mxbd_proto.h"
#include "server/proto.h"

int ktest_connect(const char *addr, const char *name, int service, int queues,
		  struct knet_test_connect *cn, int *refused)
{
	struct in_addr in;
	const char *t;
	int fd, e;

	*refused = 0;
	memset(cn, 0, sizeof(*cn));
	if (inet_pton(AF_INET, addr, &in) != 1 || strlen(name) >= sizeof(cn->name)) {
		fprintf(stderr, "ktest: bad address or name\n");
		return -1;
	}
	fd = open("/dev/knet_test", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "ktest: /dev/knet_test: %s (is knet_test.ko loaded?)\n",
			strerror(errno));
		return -1;
	}
	cn->addr = in.s_addr;
	/* The transport and port come from the environment, for every tool. */
	t = getenv("KTEST_TRANSPORT");
	if (t && *t) {
		if (!strcmp(t, "tcp"))
			cn->transport = 1;
		else if (!strcmp(t, "auto"))
			cn->transport = 2;
		else if (strcmp(t, "rdma")) {
			fprintf(stderr, "ktest: KTEST_TRANSPORT=%s: rdma, tcp or auto\n", t);
			close(fd);
			return -1;
		}
	}
	t = getenv("KTEST_DIGEST");
	if (t && *t) {
		if (!strcmp(t, "header"))
			cn->digests = KNET_CMF_HDGST;
		else if (!strcmp(t, "data"))
			cn->digests = KNET_CMF_DDGST;
		else if (!strcmp(t, "both"))
			cn->digests = KNET_CMF_DIGESTS;
		else if (strcmp(t, "none")) {
			fprintf(stderr, "ktest: KTEST_DIGEST=%s: none, header, data or both\n", t);
			close(fd);
			return -1;
		}
	}
	t = getenv("KTEST_PORT");
	if (t && *t)
		cn->port = (uint16_t)strtoul(t, NULL, 10);
	cn->service = (uint8_t)service;
	cn->queues = (uint8_t)queues;
	strcpy(cn->name, name);
	if (ioctl(fd, KNET_TEST_CONNECT, cn)) {
		e = errno;
		printf("connect: %s", strerror(e));
		if (cn->reason)
			printf(", rejected: %s", proto_reject_str(cn->reason));
		printf("\n");
		close(fd);
		*refused = e == ECONNREFUSED;
		return -1;
	}
	return fd;
}

int ktest_block_io(int fd, uint16_t op, uint64_t off, void *buf, uint32_t len, int mem,
		   uint32_t skip, const struct iovec *iov, unsigned int nr_iov)
{
	struct mxbd_io io = { htole64(off), htole32(len), 0 };
	struct knet_test_call c = {
		.opcode = op, .mem_type = (uint16_t)mem,
		.dir = op == MXBD_OP_WRITE ? 1 : 2,
		.body = (uintptr_t)&io, .body_len = sizeof(io),
		.data = nr_iov ? (uintptr_t)iov : (uintptr_t)buf, .data_len = len,
		.page_offset = skip, .nr_iov = nr_iov,
	};

	if (ioctl(fd, KNET_TEST_CALL, &c))
		return -1;
	if (c.status) {
		errno = (int)c.status;
		return -2;
	}
	return (int)c.inline_len;
}

void ktest_fill(void *buf, size_t len, uint64_t seed)
{
	uint8_t *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = ktest_byte(seed, i);
}

size_t ktest_check(const void *buf, size_t len, uint64_t seed)
{
	const uint8_t *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != ktest_byte(seed, i))
			break;
	return i;
}

// SPDX-License-Identifier: GPL-2.0-only
/*
 * knet-test: drives the kernel's knet through /dev/knet_test (the test-only
 * knet_test.ko) against orfs-server: connect, NOP round trips, and verified
 * block I/O whose data knet moves from kernel memory of a chosen kind.
 *
 *   knet-test -a ADDR -n NAME [-s file|block] -w connect
 *   knet-test -a ADDR -n VOLUME -s block -w nop -N COUNT
 *   knet-test -a ADDR -n VOLUME -s block -w verify -b BYTES -N COUNT [-m kvec|pages] [-o OFFSET]
 *   knet-test -a ADDR -n VOLUME -s block -w batch|batch-cb -b BYTES -N COUNT -q DEPTH [-o OFFSET]
 *
 * Exit status: 0 as expected, 1 failure, 2 usage, 3 connection refused.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "knet/uapi/knet_test.h"
#include "mxbd/uapi/mxbd_proto.h"
#include "server/proto.h"

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int call(int fd, struct knet_test_call *c)
{
	if (ioctl(fd, KNET_TEST_CALL, c)) {
		fprintf(stderr, "knet-test: request %u: %s\n", c->opcode, strerror(errno));
		return -1;
	}
	return 0;
}

static int block_io(int fd, uint16_t op, uint64_t off, void *buf, uint32_t len, int mem,
		    uint32_t page_off)
{
	struct mxbd_io io = { htole64(off), htole32(len), 0 };
	struct knet_test_call c = {
		.opcode = op, .mem_type = (uint16_t)mem,
		.dir = op == MXBD_OP_WRITE ? 1 : 2,
		.body = (uintptr_t)&io, .body_len = sizeof(io),
		.data = (uintptr_t)buf, .data_len = len, .page_offset = page_off,
	};

	if (call(fd, &c))
		return -1;
	if (c.status) {
		fprintf(stderr, "knet-test: %s at %llu: %s\n", op == MXBD_OP_WRITE ? "write" : "read",
			(unsigned long long)off, strerror((int)c.status));
		return -1;
	}
	return (int)c.inline_len;
}

int main(int argc, char **argv)
{
	const char *addr = NULL, *name = NULL, *what = "connect";
	struct knet_test_connect cn = { 0 };
	int opt, fd, mem = KNET_TEST_MEM_PAGES, service = KNET_SVC_BLOCK;
	unsigned long count = 1, bs = 65536, page_off = 0, depth = 4;
	struct in_addr in;

	while ((opt = getopt(argc, argv, "a:n:s:w:N:b:m:o:q:h")) != -1) {
		switch (opt) {
		case 'a': addr = optarg; break;
		case 'n': name = optarg; break;
		case 's': service = !strcmp(optarg, "file") ? KNET_SVC_FILE : KNET_SVC_BLOCK; break;
		case 'w': what = optarg; break;
		case 'N': count = strtoul(optarg, NULL, 0); break;
		case 'b': bs = strtoul(optarg, NULL, 0); break;
		case 'm': mem = !strcmp(optarg, "kvec") ? KNET_TEST_MEM_KVEC : KNET_TEST_MEM_PAGES; break;
		case 'o': page_off = strtoul(optarg, NULL, 0); break;
		case 'q': depth = strtoul(optarg, NULL, 0); break;
		default:
			fprintf(stderr, "usage: knet-test -a ADDR -n NAME [-s file|block] [-w connect|nop|verify]\n"
				"                 [-N COUNT] [-b BYTES] [-m kvec|pages] [-o PAGE_OFFSET]\n");
			return 2;
		}
	}
	if (!addr || !name || strlen(name) >= sizeof(cn.name) || inet_pton(AF_INET, addr, &in) != 1 ||
	    !bs || bs % 512 || bs > (1UL << 20))
		return fprintf(stderr, "knet-test: bad arguments\n"), 2;
	fd = open("/dev/knet_test", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return fprintf(stderr, "knet-test: /dev/knet_test: %s (is knet_test.ko loaded?)\n",
			       strerror(errno)), 1;
	cn.addr = in.s_addr;
	cn.service = (uint8_t)service;
	strcpy(cn.name, name);
	if (ioctl(fd, KNET_TEST_CONNECT, &cn)) {
		int e = errno;

		printf("connect: %s", strerror(e));
		if (cn.reason)
			printf(", rejected: %s", proto_reject_str(cn.reason));
		printf("\n");
		return e == ECONNREFUSED ? 3 : 1;
	}
	printf("connected: credits %u inline_max %u max_io %u\n", cn.credits, cn.inline_max,
	       cn.max_io);
	if (!strcmp(what, "connect"))
		return 0;

	if (!strcmp(what, "nop")) {
		double t0 = now_us();
		unsigned long i;

		for (i = 0; i < count; i++) {
			struct knet_test_call c = { .opcode = KNET_OP_NOP };

			if (call(fd, &c) || c.status)
				return 1;
		}
		printf("%lu NOPs: mean %.1f us\n", count, (now_us() - t0) / (double)count);
		return 0;
	}

	if (!strcmp(what, "verify")) {
		uint8_t *w = malloc(bs), *r = malloc(bs);
		unsigned long i, j, inl = 0;
		double t0;

		if (!w || !r)
			return 1;
		t0 = now_us();
		for (i = 0; i < count; i++) {
			uint64_t off = (uint64_t)i * bs;
			int n;

			for (j = 0; j < bs; j++)
				w[j] = (uint8_t)(j * 131 + i * 7 + 1);
			memset(r, 0, bs);
			n = block_io(fd, MXBD_OP_WRITE, off, w, (uint32_t)bs, mem, (uint32_t)page_off);
			if (n >= 0)
				n = block_io(fd, MXBD_OP_READ, off, r, (uint32_t)bs, mem,
					     (uint32_t)page_off);
			if (n < 0)
				return 1;
			inl += n > 0;
			if (memcmp(w, r, bs)) {
				for (j = 0; j < bs && w[j] == r[j]; j++)
					;
				fprintf(stderr, "knet-test: block %lu differs at byte %lu\n", i, j);
				return 1;
			}
		}
		printf("verified %lu blocks of %lu bytes (%s, page offset %lu): %lu read inline, %.1f MB/s\n",
		       count, bs, mem == KNET_TEST_MEM_KVEC ? "kvec" : "pages", page_off, inl,
		       2.0 * (double)count * (double)bs / (now_us() - t0));
		return 0;
	}
	if (!strcmp(what, "batch") || !strcmp(what, "batch-cb")) {
		struct knet_test_batch b = {
			.bs = (uint32_t)bs, .count = (uint32_t)count, .depth = (uint32_t)depth,
			.mem_type = (uint16_t)mem, .mode = !strcmp(what, "batch-cb"),
			.page_offset = (uint32_t)page_off,
		};

		if (ioctl(fd, KNET_TEST_BATCH, &b)) {
			fprintf(stderr, "knet-test: batch: %s\n", strerror(errno));
			return 1;
		}
		printf("batch %s: %u blocks of %u bytes, depth %u: %.1f MB/s, %.1f us per request, %u errors, %u mismatches, %u credit waits\n",
		       b.mode ? "callbacks" : "wait-any", b.count, b.bs, b.depth,
		       2.0 * b.count * (double)b.bs / ((double)b.elapsed_ns / 1e3),
		       (double)b.elapsed_ns / 1e3 / (2.0 * b.count), b.errors, b.mismatches, b.busy);
		return b.errors || b.mismatches ? 1 : 0;
	}
	fprintf(stderr, "knet-test: unknown -w %s\n", what);
	return 2;
}

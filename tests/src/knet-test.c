// SPDX-License-Identifier: GPL-2.0-only
/*
 * knet-test: drives the kernel's knet through /dev/knet_test (the test-only
 * knet_test.ko) against orfs-server: connect, NOP round trips, and verified
 * block I/O whose data knet moves from kernel memory of a chosen kind or
 * straight from this program's memory (one buffer or scattered pieces).
 *
 *   knet-test -a ADDR -n NAME [-s file|block] -w connect
 *   knet-test -a ADDR -n VOLUME -s block -w nop -N COUNT
 *   knet-test -a ADDR -n VOLUME -s block -w verify -b BYTES -N COUNT
 *             [-m kvec|pages|user|user-nocache] [-o OFFSET] [-V PIECES]
 *   knet-test -a ADDR -n VOLUME -s block -w batch|batch-cb -b BYTES -N COUNT -q DEPTH [-o OFFSET]
 *   knet-test -a ADDR -n VOLUME -s block -w batch-groups -Q QUEUES -b BYTES -N COUNT -q DEPTH
 *   knet-test -a ADDR -n VOLUME -s block -w reuse|fresh -b BYTES -N COUNT -m user|user-nocache
 *   knet-test -a ADDR -n VOLUME -s block -w hold -b BYTES -N COUNT -m user
 *   knet-test -a ADDR -n VOLUME -s block -w late -b BYTES -N TIMEOUT_MS [-m kvec|pages]
 *
 * Exit status: 0 as expected, 1 failure, 2 usage, 3 connection refused.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "ktest.h"
#include "mxbd/uapi/mxbd_proto.h"
#include "server/proto.h"

/* SPAN bytes of private, populated memory for user-memory modes. */
static uint8_t *user_buffer(size_t span, int mem, const char *what)
{
	uint8_t *buf;

	if (mem < KNET_TEST_MEM_USER) {
		fprintf(stderr, "knet-test: %s needs -m user|user-nocache\n", what);
		return NULL;
	}
	buf = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
		   -1, 0);
	if (buf == MAP_FAILED) {
		fprintf(stderr, "knet-test: mmap %zu bytes: %s\n", span, strerror(errno));
		return NULL;
	}
	memset(buf, 0x5a, span);
	return buf;
}

/* COUNT reads of BS bytes into BUF: all into one buffer, or SPREAD side by side. */
static int user_reads(int fd, uint8_t *buf, unsigned long count, unsigned long bs, int spread,
		      int mem)
{
	unsigned long i;

	for (i = 0; i < count; i++) {
		uint8_t *p = buf + (spread ? i * bs : 0);

		if (ktest_block_io(fd, MXBD_OP_READ, (uint64_t)(i % 64) * bs, p, (uint32_t)bs, mem,
				   0, NULL, 0) < 0) {
			fprintf(stderr, "knet-test: read: %s\n", strerror(errno));
			return -1;
		}
	}
	return 0;
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static const char *mem_name(int mem)
{
	static const char *const names[] = { "kvec", "pages", "user", "user-nocache" };

	return names[mem];
}

static int parse_mem(const char *s)
{
	int i;

	for (i = 0; i <= KNET_TEST_MEM_USER_NOCACHE; i++)
		if (!strcmp(s, mem_name(i)))
			return i;
	return -1;
}

/*
 * The data of a verified transfer: one buffer, or for user memory NR
 * pieces in separate page-aligned allocations (the first starting SKIP
 * bytes into its allocation, the others on a page boundary), as a
 * scattered direct I/O would be.
 */
struct vbuf {
	struct iovec	iov[16];
	unsigned int	nr;
	uint8_t		*flat;		/* the data as one buffer */
	uint32_t	skip;
};

static int vbuf_init(struct vbuf *v, unsigned long bs, unsigned int pieces, uint32_t skip)
{
	unsigned long per = ((bs / pieces + 4095) / 4096) * 4096, left = bs;

	memset(v, 0, sizeof(*v));
	v->skip = skip;
	v->flat = aligned_alloc(4096, ((bs + skip) / 4096 + 1) * 4096);
	if (!v->flat)
		return -1;
	if (pieces <= 1)
		return 0;
	while (left && v->nr < 16) {
		unsigned long n = v->nr ? per : per - skip;
		uint32_t lead = v->nr ? 0 : skip;

		if (n > left || v->nr == 15)
			n = left;
		v->iov[v->nr].iov_base = aligned_alloc(4096, ((n + lead) / 4096 + 1) * 4096);
		if (!v->iov[v->nr].iov_base)
			return -1;
		v->iov[v->nr].iov_len = n + lead;
		v->nr++;
		left -= n;
	}
	return 0;
}

/* Copy between the flat buffer and the pieces. */
static void vbuf_sync(struct vbuf *v, int to_pieces)
{
	size_t done = 0;
	unsigned int i;

	for (i = 0; i < v->nr; i++) {
		uint8_t *p = (uint8_t *)v->iov[i].iov_base + (i ? 0 : v->skip);
		size_t n = v->iov[i].iov_len - (i ? 0 : v->skip);

		if (to_pieces)
			memcpy(p, v->flat + v->skip + done, n);
		else
			memcpy(v->flat + v->skip + done, p, n);
		done += n;
	}
}

static int vbuf_io(int fd, struct vbuf *v, uint16_t op, uint64_t off, uint32_t len, int mem)
{
	int n;

	if (mem < KNET_TEST_MEM_USER)
		n = ktest_block_io(fd, op, off, v->flat + v->skip, len, mem, v->skip, NULL, 0);
	else
		n = ktest_block_io(fd, op, off, v->nr ? NULL : v->flat, len, mem, v->skip,
				   v->iov, v->nr);
	if (n == -1)
		fprintf(stderr, "knet-test: %s at %llu: %s\n", op == MXBD_OP_WRITE ? "write" : "read",
			(unsigned long long)off, strerror(errno));
	else if (n == -2)
		fprintf(stderr, "knet-test: server: %s at %llu: %s\n",
			op == MXBD_OP_WRITE ? "write" : "read", (unsigned long long)off, strerror(errno));
	return n;
}

int main(int argc, char **argv)
{
	const char *addr = NULL, *name = NULL, *what = "connect";
	struct knet_test_connect cn;
	int opt, fd, mem = KNET_TEST_MEM_PAGES, service = KNET_SVC_BLOCK, refused;
	unsigned long count = 1, bs = 65536, page_off = 0, depth = 4, pieces = 1, queues = 1;

	while ((opt = getopt(argc, argv, "a:n:s:w:N:b:m:o:q:V:Q:h")) != -1) {
		switch (opt) {
		case 'a': addr = optarg; break;
		case 'n': name = optarg; break;
		case 's': service = !strcmp(optarg, "file") ? KNET_SVC_FILE : KNET_SVC_BLOCK; break;
		case 'w': what = optarg; break;
		case 'N': count = strtoul(optarg, NULL, 0); break;
		case 'b': bs = strtoul(optarg, NULL, 0); break;
		case 'm': mem = parse_mem(optarg); break;
		case 'o': page_off = strtoul(optarg, NULL, 0); break;
		case 'q': depth = strtoul(optarg, NULL, 0); break;
		case 'V': pieces = strtoul(optarg, NULL, 0); break;
		case 'Q': queues = strtoul(optarg, NULL, 0); break;
		default:
			fprintf(stderr, "usage: knet-test -a ADDR -n NAME [-s file|block] [-w connect|nop|verify|batch|batch-cb|late]\n"
				"                 [-N COUNT] [-b BYTES] [-m kvec|pages|user|user-nocache]\n"
				"                 [-o OFFSET] [-V PIECES] [-q DEPTH] [-Q QUEUES]\n");
			return 2;
		}
	}
	if (!addr || !name || mem < 0 || !bs || bs % 512 || bs > (1UL << 20) || page_off >= 4096 ||
	    !pieces || pieces > 16 || (pieces > 1 && mem < KNET_TEST_MEM_USER) || !queues ||
	    queues > 16)
		return fprintf(stderr, "knet-test: bad arguments\n"), 2;
	fd = ktest_connect(addr, name, service, (int)queues, &cn, &refused);
	if (fd < 0)
		return refused ? 3 : 1;
	printf("connected: credits %u inline_max %u max_io %u\n", cn.credits, cn.inline_max,
	       cn.max_io);
	if (!strcmp(what, "connect"))
		return 0;

	if (!strcmp(what, "nop")) {
		double t0 = now_us();
		unsigned long i;

		for (i = 0; i < count; i++) {
			struct knet_test_call c = { .opcode = KNET_OP_NOP };

			if (ioctl(fd, KNET_TEST_CALL, &c) || c.status) {
				fprintf(stderr, "knet-test: NOP: %s\n",
					c.status ? strerror((int)c.status) : strerror(errno));
				return 1;
			}
		}
		printf("%lu NOPs: mean %.1f us\n", count, (now_us() - t0) / (double)count);
		return 0;
	}

	if (!strcmp(what, "verify")) {
		struct vbuf w, r;
		unsigned long i, inl = 0;
		size_t bad;
		double t0;

		if (vbuf_init(&w, bs, (unsigned int)pieces, (uint32_t)page_off) ||
		    vbuf_init(&r, bs, (unsigned int)pieces, (uint32_t)page_off))
			return fprintf(stderr, "knet-test: out of memory\n"), 1;
		t0 = now_us();
		for (i = 0; i < count; i++) {
			uint64_t off = (uint64_t)i * bs;
			int n;

			ktest_fill(w.flat + w.skip, bs, i);
			vbuf_sync(&w, 1);
			memset(r.flat, 0, bs + r.skip);
			vbuf_sync(&r, 1);
			n = vbuf_io(fd, &w, MXBD_OP_WRITE, off, (uint32_t)bs, mem);
			if (n >= 0)
				n = vbuf_io(fd, &r, MXBD_OP_READ, off, (uint32_t)bs, mem);
			if (n < 0)
				return 1;
			inl += n > 0;
			vbuf_sync(&r, 0);
			bad = ktest_check(r.flat + r.skip, bs, i);
			if (bad != bs) {
				fprintf(stderr, "knet-test: block %lu differs at byte %zu\n", i, bad);
				return 1;
			}
		}
		printf("verified %lu blocks of %lu bytes (%s, page offset %lu, %lu pieces): %lu read inline, %.1f MB/s\n",
		       count, bs, mem_name(mem), page_off, pieces, inl,
		       2.0 * (double)count * (double)bs / (now_us() - t0));
		return 0;
	}
	if (!strcmp(what, "reuse") || !strcmp(what, "fresh")) {
		/*
		 * The cost of user memory per request: COUNT reads into one
		 * buffer (reuse: the registration cache hits) or into COUNT
		 * buffers never used before (fresh: every one pins and maps).
		 * Reads, because the server always reaches user memory for
		 * them (small writes travel inline, copied).
		 */
		int fresh = !strcmp(what, "fresh");
		size_t span = fresh ? count * bs : bs;
		uint8_t *buf = user_buffer(span, mem, what);
		double t0;

		if (!buf)
			return 2;
		t0 = now_us();
		if (user_reads(fd, buf, count, bs, fresh, mem))
			return 1;
		printf("%s %s %lu x %lu bytes: mean %.1f us per request\n", what, mem_name(mem),
		       count, bs, (now_us() - t0) / (double)count);
		return 0;
	}
	if (!strcmp(what, "hold")) {
		/*
		 * Reads into COUNT buffers, which stay cached while the
		 * program waits for SIGUSR1 (the test puts the cache under
		 * memory pressure meanwhile); then reads them again and
		 * compares with the first time.
		 */
		size_t span = count * bs;
		uint8_t *buf = user_buffer(span, mem, what);
		uint8_t *first = malloc(span);
		sigset_t usr1;
		int sig;

		if (!buf || !first)
			return fprintf(stderr, "knet-test: hold: no memory\n"), 2;
		sigemptyset(&usr1);
		sigaddset(&usr1, SIGUSR1);
		if (sigprocmask(SIG_BLOCK, &usr1, NULL))
			return fprintf(stderr, "knet-test: sigprocmask: %s\n", strerror(errno)), 1;
		if (user_reads(fd, buf, count, bs, 1, mem))
			return 1;
		memcpy(first, buf, span);
		memset(buf, 0xa5, span);
		printf("holding %lu buffers of %lu bytes\n", count, bs);
		fflush(stdout);
		if (sigwait(&usr1, &sig))
			return fprintf(stderr, "knet-test: sigwait failed\n"), 1;
		if (user_reads(fd, buf, count, bs, 1, mem))
			return 1;
		if (memcmp(first, buf, span))
			return fprintf(stderr, "knet-test: hold: the second reads differ\n"), 1;
		printf("read again %lu buffers: same data\n", count);
		return 0;
	}
	if (!strcmp(what, "late")) {
		/*
		 * Against a server that writes into a READ's memory and never
		 * answers (-F, ORFS_SERVER_FAULT=late-write): the read times
		 * out after COUNT ms, then the kernel watches its memory for
		 * 3 s. Not one byte may change once the call has returned.
		 */
		struct mxbd_io io = { 0, htole32((uint32_t)bs), 0 };
		uint8_t *buf = malloc(bs);
		struct knet_test_call c = {
			.opcode = MXBD_OP_READ, .mem_type = (uint16_t)mem, .dir = 2,
			.body = (uintptr_t)&io, .body_len = sizeof(io),
			.data = (uintptr_t)buf, .data_len = (uint32_t)bs,
			.page_offset = (uint32_t)page_off, .timeout_ms = (uint32_t)count,
			.late_check_ms = 3000,
		};

		if (!buf || mem >= KNET_TEST_MEM_USER)
			return fprintf(stderr, "knet-test: late: kernel memory (kvec, pages) only\n"), 2;
		if (ioctl(fd, KNET_TEST_CALL, &c))
			return fprintf(stderr, "knet-test: late: %s\n", strerror(errno)), 1;
		printf("late: the read ended with %s; %u bytes of its memory changed in the 3 s after\n",
		       c.error ? strerror(-c.error) : "an answer", c.late_changed);
		return c.error && !c.late_changed ? 0 : 1;
	}
	if (!strcmp(what, "batch") || !strcmp(what, "batch-cb") || !strcmp(what, "batch-groups")) {
		struct knet_test_batch b = {
			.bs = (uint32_t)bs, .count = (uint32_t)count, .depth = (uint32_t)depth,
			.mem_type = (uint16_t)mem, .page_offset = (uint32_t)page_off,
			.mode = !strcmp(what, "batch-cb") ? 1 : !strcmp(what, "batch-groups") ? 2 : 0,
		};
		static const char *const modes[] = { "wait-any", "callbacks", "groups" };

		if (ioctl(fd, KNET_TEST_BATCH, &b)) {
			fprintf(stderr, "knet-test: batch: %s\n", strerror(errno));
			return 1;
		}
		if (b.mode == 2)
			printf("groups: %lu endpoints, one thread each; the least busy collected %u\n",
			       queues, b.min_served);
		printf("batch %s: %u blocks of %u bytes, depth %u: %.1f MB/s, %.1f us per request, %u errors, %u mismatches, %u credit waits\n",
		       modes[b.mode], b.count, b.bs, b.depth,
		       2.0 * b.count * (double)b.bs / ((double)b.elapsed_ns / 1e3),
		       (double)b.elapsed_ns / 1e3 / (2.0 * b.count), b.errors, b.mismatches, b.busy);
		printf("passes: write %.1f MB/s, read %.1f MB/s\n",
		       b.count * (double)b.bs / ((double)b.write_ns / 1e3),
		       b.count * (double)b.bs / ((double)(b.elapsed_ns - b.write_ns) / 1e3));
		return b.errors || b.mismatches ? 1 : 0;
	}
	fprintf(stderr, "knet-test: unknown -w %s\n", what);
	return 2;
}

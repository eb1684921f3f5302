// SPDX-License-Identifier: GPL-2.0-only
/*
 * regcache-test: registration cache correctness, checked by data. Each
 * scenario moves this program's own memory through knet (zero copy, the
 * pages pinned and cached by regcache) to and from a volume of the real
 * server, changes the mapping under the cache, and checks every byte: on
 * the server through the kernel-copy path (which never uses regcache) and
 * in this process's memory.
 *
 *   regcache-test -a ADDR -n VOLUME SCENARIO...
 *
 * Scenarios: remap mremap mprotect dontneed fork exit twoproc unmap-race
 * memlock huge. Each prints "ok NAME" or "FAIL NAME: why".
 * Exit status: 0 all passed, 1 a scenario failed, 2 usage.
 */
#include <errno.h>
#include <pthread.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ktest.h"
#include "mxbd/uapi/mxbd_proto.h"

#define KB	1024UL
#define MB	(1024 * KB)

struct ctx {
	const char	*addr;
	const char	*name;
	int		fd;
	uint64_t	base;		/* volume offset of the running scenario */
	const char	*scenario;
};

#define FAIL(c, ...) do {						\
	fprintf(stderr, "FAIL %s: ", (c)->scenario);			\
	fprintf(stderr, __VA_ARGS__);					\
	fputc('\n', stderr);						\
	return -1;							\
} while (0)

static int io(struct ctx *c, uint16_t op, uint64_t off, void *p, size_t len, int mem)
{
	int n = ktest_block_io(c->fd, op, c->base + off, p, (uint32_t)len, mem, 0, NULL, 0);

	return n < 0 ? -1 : 0;
}

/* From this process's memory to the volume, through regcache. */
static int uwrite(struct ctx *c, uint64_t off, void *p, size_t len)
{
	if (io(c, MXBD_OP_WRITE, off, p, len, KNET_TEST_MEM_USER))
		FAIL(c, "write from user memory at %llu: %s", (unsigned long long)off,
		     strerror(errno));
	return 0;
}

static int uread(struct ctx *c, uint64_t off, void *p, size_t len)
{
	if (io(c, MXBD_OP_READ, off, p, len, KNET_TEST_MEM_USER))
		FAIL(c, "read into user memory at %llu: %s", (unsigned long long)off,
		     strerror(errno));
	return 0;
}

/* Put pattern SEED on the volume through kernel memory (no regcache). */
static int kput(struct ctx *c, uint64_t off, size_t len, uint64_t seed)
{
	uint8_t *b = malloc(len);
	int ret;

	if (!b)
		FAIL(c, "out of memory");
	ktest_fill(b, len, seed);
	ret = io(c, MXBD_OP_WRITE, off, b, len, KNET_TEST_MEM_KVEC);
	free(b);
	if (ret)
		FAIL(c, "kernel-memory write at %llu: %s", (unsigned long long)off,
		     strerror(errno));
	return 0;
}

/* Check that the volume holds pattern SEED, read through kernel memory. */
static int kcheck(struct ctx *c, uint64_t off, size_t len, uint64_t seed)
{
	uint8_t *b = malloc(len);
	size_t bad;

	if (!b)
		FAIL(c, "out of memory");
	if (io(c, MXBD_OP_READ, off, b, len, KNET_TEST_MEM_KVEC)) {
		free(b);
		FAIL(c, "kernel-memory read at %llu: %s", (unsigned long long)off,
		     strerror(errno));
	}
	bad = ktest_check(b, len, seed);
	free(b);
	if (bad != len)
		FAIL(c, "the volume at %llu is not pattern %llu from byte %zu: stale pages were sent",
		     (unsigned long long)off, (unsigned long long)seed, bad);
	return 0;
}

static int mcheck(struct ctx *c, const void *p, size_t len, uint64_t seed, const char *what)
{
	size_t bad = ktest_check(p, len, seed);

	if (bad != len)
		FAIL(c, "%s: memory is not pattern %llu from byte %zu", what,
		     (unsigned long long)seed, bad);
	return 0;
}

static void *map(void *at, size_t len)
{
	void *p = mmap(at, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | (at ? MAP_FIXED : 0), -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

#define LEN	(64 * KB)

/* munmap then mmap at the same address: both directions see the new pages. */
static int t_remap(struct ctx *c)
{
	uint8_t *p = map(NULL, LEN), *q;

	if (!p)
		FAIL(c, "mmap: %s", strerror(errno));
	ktest_fill(p, LEN, 1);
	if (uwrite(c, 0, p, LEN) || uwrite(c, 0, p, LEN) || kcheck(c, 0, LEN, 1))
		return -1;
	munmap(p, LEN);
	q = map(p, LEN);
	if (q != p)
		FAIL(c, "mmap at the same address: %s", strerror(errno));
	ktest_fill(q, LEN, 2);
	if (uwrite(c, 0, q, LEN) || kcheck(c, 0, LEN, 2))
		return -1;

	if (kput(c, LEN, LEN, 3) || uread(c, LEN, q, LEN))
		return -1;
	munmap(q, LEN);
	q = map(p, LEN);
	if (q != p)
		FAIL(c, "mmap at the same address: %s", strerror(errno));
	if (uread(c, LEN, q, LEN))
		return -1;
	return mcheck(c, q, LEN, 3, "read after munmap/mmap");
}

/* mremap moves the pages: the old address gets new ones, the new address the old. */
static int t_mremap(struct ctx *c)
{
	uint8_t *p = map(NULL, LEN), *hole = map(NULL, LEN), *n, *q;

	if (!p || !hole)
		FAIL(c, "mmap: %s", strerror(errno));
	ktest_fill(p, LEN, 4);
	if (uwrite(c, 0, p, LEN))
		return -1;
	n = mremap(p, LEN, LEN, MREMAP_MAYMOVE | MREMAP_FIXED, hole);
	if (n != hole)
		FAIL(c, "mremap: %s", strerror(errno));
	q = map(p, LEN);
	if (q != p)
		FAIL(c, "mmap at the old address: %s", strerror(errno));
	ktest_fill(q, LEN, 5);
	if (uwrite(c, 0, q, LEN) || kcheck(c, 0, LEN, 5))
		return -1;
	if (uwrite(c, LEN, n, LEN) || kcheck(c, LEN, LEN, 4))
		return -1;
	/* Reading into the moved buffer lands where the process sees it. */
	if (kput(c, 2 * LEN, LEN, 6) || uread(c, 2 * LEN, n, LEN))
		return -1;
	return mcheck(c, n, LEN, 6, "read into the moved buffer");
}

/* mprotect: a read-only buffer is never written by the device. */
static int t_mprotect(struct ctx *c)
{
	uint8_t *p = map(NULL, LEN);

	if (!p)
		FAIL(c, "mmap: %s", strerror(errno));
	if (kput(c, 0, LEN, 7) || uread(c, 0, p, LEN))
		return -1;
	ktest_fill(p, LEN, 8);
	if (mprotect(p, LEN, PROT_READ))
		FAIL(c, "mprotect: %s", strerror(errno));
	if (!io(c, MXBD_OP_READ, 0, p, LEN, KNET_TEST_MEM_USER))
		FAIL(c, "a read into a read-only buffer succeeded (a cached writable registration was used)");
	if (errno != EFAULT)
		FAIL(c, "a read into a read-only buffer: %s, expected EFAULT", strerror(errno));
	if (mcheck(c, p, LEN, 8, "read-only buffer after a refused read"))
		return -1;
	/* Reading it (sending it) is still allowed. */
	if (uwrite(c, LEN, p, LEN) || kcheck(c, LEN, LEN, 8))
		return -1;
	if (mprotect(p, LEN, PROT_READ | PROT_WRITE))
		FAIL(c, "mprotect: %s", strerror(errno));
	if (uread(c, 0, p, LEN))
		return -1;
	return mcheck(c, p, LEN, 7, "read after write access came back");
}

/* madvise(DONTNEED) drops the pages: new ones appear on the next touch. */
static int t_dontneed(struct ctx *c)
{
	uint8_t *p = map(NULL, LEN);

	if (!p)
		FAIL(c, "mmap: %s", strerror(errno));
	ktest_fill(p, LEN, 9);
	if (uwrite(c, 0, p, LEN))
		return -1;
	if (madvise(p, LEN, MADV_DONTNEED))
		FAIL(c, "madvise: %s", strerror(errno));
	ktest_fill(p, LEN, 10);
	if (uwrite(c, 0, p, LEN) || kcheck(c, 0, LEN, 10))
		return -1;
	if (kput(c, LEN, LEN, 11) || uread(c, LEN, p, LEN))
		return -1;
	if (madvise(p, LEN, MADV_DONTNEED))
		FAIL(c, "madvise: %s", strerror(errno));
	if (uread(c, LEN, p, LEN))
		return -1;
	return mcheck(c, p, LEN, 11, "read after DONTNEED");
}

static int wait_child(struct ctx *c, pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid)
		FAIL(c, "waitpid: %s", strerror(errno));
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		FAIL(c, "a child process failed");
	return 0;
}

/* fork: parent and child write their copies; each sends and gets its own. */
static int t_fork(struct ctx *c)
{
	uint8_t *p = map(NULL, LEN);
	pid_t pid;

	if (!p)
		FAIL(c, "mmap: %s", strerror(errno));
	ktest_fill(p, LEN, 12);
	if (uwrite(c, 0, p, LEN) || kput(c, LEN, LEN, 13) || uread(c, LEN, p, LEN))
		return -1;
	pid = fork();
	if (pid < 0)
		FAIL(c, "fork: %s", strerror(errno));
	if (!pid) {
		ktest_fill(p, LEN, 14);
		if (uwrite(c, 2 * LEN, p, LEN) || mcheck(c, p, LEN, 14, "child after its send"))
			_exit(1);
		if (uread(c, LEN, p, LEN) || mcheck(c, p, LEN, 13, "child's read"))
			_exit(1);
		_exit(0);
	}
	ktest_fill(p, LEN, 15);
	if (uwrite(c, 3 * LEN, p, LEN))
		return -1;
	if (wait_child(c, pid))
		return -1;
	if (mcheck(c, p, LEN, 15, "parent after the child wrote its copy"))
		return -1;
	if (kcheck(c, 2 * LEN, LEN, 14) || kcheck(c, 3 * LEN, LEN, 15))
		return -1;
	if (kput(c, 4 * LEN, LEN, 16) || uread(c, 4 * LEN, p, LEN))
		return -1;
	return mcheck(c, p, LEN, 16, "parent's read after fork");
}

/* A process exits with entries cached; the caller checks the cache empties. */
static int t_exit(struct ctx *c)
{
	pid_t pid = fork();
	int i;

	if (pid < 0)
		FAIL(c, "fork: %s", strerror(errno));
	if (!pid) {
		for (i = 0; i < 8; i++) {
			uint8_t *p = map(NULL, LEN);

			if (!p)
				_exit(1);
			ktest_fill(p, LEN, 20 + i);
			if (uwrite(c, (uint64_t)i * LEN, p, LEN) || uread(c, (uint64_t)i * LEN, p, LEN))
				_exit(1);
		}
		_exit(0);	/* no munmap: the mm's teardown invalidates */
	}
	if (wait_child(c, pid))
		return -1;
	for (i = 0; i < 8; i++)
		if (kcheck(c, (uint64_t)i * LEN, LEN, 20 + i))
			return -1;
	return 0;
}

/* Two processes use the same addresses for different data at the same time. */
static int t_twoproc(struct ctx *c)
{
	void *at = (void *)0x5a0000000000UL;
	pid_t pid[2];
	int k, i;

	for (k = 0; k < 2; k++) {
		pid[k] = fork();
		if (pid[k] < 0)
			FAIL(c, "fork: %s", strerror(errno));
		if (pid[k])
			continue;
		uint8_t *p = mmap(at, LEN, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

		if (p != at)
			_exit(1);
		for (i = 0; i < 40; i++) {
			uint64_t seed = 100 + k * 1000 + i, off = (uint64_t)(k * 4 + i % 4) * LEN;

			ktest_fill(p, LEN, seed);
			if (uwrite(c, off, p, LEN))
				_exit(1);
			memset(p, 0, LEN);
			if (uread(c, off, p, LEN) || mcheck(c, p, LEN, seed, "read back"))
				_exit(1);
		}
		_exit(0);
	}
	for (k = 0; k < 2; k++)
		if (wait_child(c, pid[k]))
			return -1;
	for (k = 0; k < 2; k++)
		for (i = 36; i < 40; i++)
			if (kcheck(c, (uint64_t)(k * 4 + i % 4) * LEN, LEN, 100 + k * 1000 + i))
				return -1;
	return 0;
}

struct racer {
	struct ctx	*c;
	uint8_t		*p;
	int		ret;
	int		err;
	int		over;		/* the read returned */
};

static void *race_read(void *arg)
{
	struct racer *r = arg;

	r->ret = io(r->c, MXBD_OP_READ, 0, r->p, MB, KNET_TEST_MEM_USER);
	r->err = errno;
	__atomic_store_n(&r->over, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * Another thread unmaps the buffer while the device writes it: the data
 * lands in the old (still pinned) pages or the read fails; memory mapped
 * afterwards, which may reuse freed pages, is never written.
 */
static int t_unmap_race(struct ctx *c)
{
	size_t sl = 8 * MB;
	unsigned int seed = 1, round, done = 0, failed = 0, inflight = 0;

	if (kput(c, 0, MB, 30))
		return -1;
	for (round = 0; round < 24; round++) {
		struct racer r = { .c = c };
		pthread_t th;
		uint8_t *sent;
		size_t i;

		r.p = map(NULL, MB);
		if (!r.p)
			FAIL(c, "mmap: %s", strerror(errno));
		memset(r.p, 0, MB);
		if (pthread_create(&th, NULL, race_read, &r))
			FAIL(c, "pthread_create failed");
		usleep((useconds_t)(rand_r(&seed) % 30000));
		inflight += !__atomic_load_n(&r.over, __ATOMIC_ACQUIRE);
		munmap(r.p, MB);
		sent = map(NULL, sl);
		if (!sent)
			FAIL(c, "mmap: %s", strerror(errno));
		memset(sent, 0xa5, sl);
		pthread_join(th, NULL);
		if (r.ret && r.err != EFAULT)
			FAIL(c, "the racing read failed with %s", strerror(r.err));
		r.ret ? failed++ : done++;
		for (i = 0; i < sl; i++)
			if (sent[i] != 0xa5)
				FAIL(c, "memory mapped after the munmap was written at byte %zu", i);
		munmap(sent, sl);
	}
	printf("unmap-race: %u unmapped before the read returned; %u reads completed, %u refused\n",
	       inflight, done, failed);
	if (!inflight)
		FAIL(c, "no unmap came while a read was in flight: nothing was tested");
	return kcheck(c, 0, MB, 30);
}

/* RLIMIT_MEMLOCK bounds the pinned pages of a process without CAP_IPC_LOCK. */
static int t_memlock(struct ctx *c)
{
	pid_t pid = fork();

	if (pid < 0)
		FAIL(c, "fork: %s", strerror(errno));
	if (!pid) {
		struct rlimit rl = { 64 * KB, 64 * KB };
		uint8_t *big = map(NULL, MB);
		int i;

		if (!big || setrlimit(RLIMIT_MEMLOCK, &rl))
			_exit(1);
		if (getuid() == 0 && (setgroups(0, NULL) || setgid(65534) || setuid(65534)))
			_exit(1);
		ktest_fill(big, MB, 40);
		if (!io(c, MXBD_OP_WRITE, 0, big, MB, KNET_TEST_MEM_USER) || errno != ENOMEM) {
			fprintf(stderr, "FAIL memlock: 1 MiB pinned over a 64 KiB limit (%s)\n",
				strerror(errno));
			_exit(1);
		}
		/* Sixteen 16 KiB buffers: our own idle entries make room. */
		for (i = 0; i < 16; i++) {
			uint8_t *p = big + (size_t)i * 64 * KB;

			ktest_fill(p, 16 * KB, 41 + i);
			if (uwrite(c, (uint64_t)i * 16 * KB, p, 16 * KB))
				_exit(1);
		}
		_exit(0);
	}
	if (wait_child(c, pid))
		return -1;
	return kcheck(c, 15 * 16 * KB, 16 * KB, 41 + 15);
}

/* A transfer that spans two transparent huge pages, at an odd offset. */
static int t_huge(struct ctx *c)
{
	size_t len = 6 * MB, n = MB + 4096;
	uint8_t *raw = map(NULL, len), *al, *p;

	if (!raw)
		FAIL(c, "mmap: %s", strerror(errno));
	al = (uint8_t *)(((uintptr_t)raw + 2 * MB - 1) & ~(2 * MB - 1));
	if (madvise(al, 4 * MB, MADV_HUGEPAGE))
		FAIL(c, "madvise(HUGEPAGE): %s", strerror(errno));
	memset(al, 0, 4 * MB);
	p = al + 2 * MB - MB / 2 + 100;
	n = MB;
	ktest_fill(p, n, 50);
	if (uwrite(c, 0, p, n) || kcheck(c, 0, n, 50))
		return -1;
	if (kput(c, MB, n, 51) || uread(c, MB, p, n))
		return -1;
	return mcheck(c, p, n, 51, "read across huge pages");
}

static const struct {
	const char *name;
	int (*fn)(struct ctx *c);
} scenarios[] = {
	{ "remap", t_remap }, { "mremap", t_mremap }, { "mprotect", t_mprotect },
	{ "dontneed", t_dontneed }, { "fork", t_fork }, { "exit", t_exit },
	{ "twoproc", t_twoproc }, { "unmap-race", t_unmap_race }, { "memlock", t_memlock },
	{ "huge", t_huge },
};

int main(int argc, char **argv)
{
	struct knet_test_connect cn;
	struct ctx c = { 0 };
	int opt, i, refused, failed = 0;
	size_t k;

	while ((opt = getopt(argc, argv, "a:n:h")) != -1) {
		switch (opt) {
		case 'a': c.addr = optarg; break;
		case 'n': c.name = optarg; break;
		default:
			fprintf(stderr, "usage: regcache-test -a ADDR -n VOLUME SCENARIO...\n");
			return 2;
		}
	}
	if (!c.addr || !c.name || optind == argc)
		return fprintf(stderr, "regcache-test: bad arguments\n"), 2;
	c.fd = ktest_connect(c.addr, c.name, KNET_SVC_BLOCK, 1, &cn, &refused);
	if (c.fd < 0)
		return 1;
	for (i = optind; i < argc; i++) {
		for (k = 0; k < sizeof(scenarios) / sizeof(scenarios[0]); k++)
			if (!strcmp(argv[i], scenarios[k].name))
				break;
		if (k == sizeof(scenarios) / sizeof(scenarios[0]))
			return fprintf(stderr, "regcache-test: no scenario %s\n", argv[i]), 2;
		c.scenario = scenarios[k].name;
		c.base = (uint64_t)k * 4 * MB;
		if (scenarios[k].fn(&c)) {
			failed = 1;
			continue;
		}
		printf("ok %s\n", c.scenario);
		fflush(stdout);
	}
	return failed;
}

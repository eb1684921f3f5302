// SPDX-License-Identifier: GPL-2.0-only
/*
 * orfs-fsx: a seeded sequence of random operations applied alike to files
 * in two directories, an ORFS mount and a local reference file system
 * (best the export's own, which has the same operations and errors), with
 * each step's answers, sizes and contents compared.
 *
 *   orfs-fsx [-m MODE] [-l MAXSIZE] [-n FILES] [-L LOG] [-R LOG]
 *            DIR_A DIR_B SEED STEPS [DIR_A_SERVER]
 *
 * Every file stays open across steps, as a program's would (and as the
 * file-system test suites' fsx does): what write-back sent unstable is held
 * for a COMMIT until a step syncs or reopens the file, so the operations
 * meet write-back held as well as done. The operations: writes and reads
 * in the MODE's way, truncates up and down, fallocate() in every mode
 * (allocate, keep size, punch, zero, collapse, insert, unshare),
 * copy_file_range(), clone and dedupe ranges, shared mappings stored to
 * and read, several writes and a mapped store before one close, renames,
 * chmod, unlink, fsync, and a close and reopen. MODE says how data is
 * written and read:
 *   buffered  pwrite()/pread(), with mapped stores and loads and some
 *             O_DIRECT ones beside them (the default)
 *   mmap      through shared mappings only
 *   direct    O_DIRECT, in aligned blocks
 *   aio       Linux AIO (io_submit()) on O_DIRECT, several blocks in flight
 *   uring     io_uring, buffered, several pieces in flight
 *
 * After every step: the answers of both sides agree (an error must be the
 * same error); the size of each file the step touched is the same through
 * fstat() on the open file, lseek(SEEK_END) and stat() of its name on both
 * sides; its contents are the same (read through the open file, which
 * commits nothing); SEEK_DATA and SEEK_HOLE answer what its contents
 * allow. Every file is compared every FULL_EVERY steps and after the last.
 * With DIR_A_SERVER (DIR_A's directory on the server, read there without
 * ORFS), a file that a step synced or reopened is compared with the
 * server's copy too, and every file once the last step closed them all.
 *
 * -L LOG writes each step's operation as one line before it runs; -R LOG
 * runs the operations of such a log (or of a file written by hand in its
 * form) instead of random ones, SEED and STEPS ignored past the log's end:
 * a failing sequence replays exactly. A line:
 *
 *   KIND f=F g=G off=OFF to=TO len=LEN mode=MODE seed=SEED
 *
 * Prints "ok STEPS steps" or the first difference, with the step, its
 * operation and the size error in fsx's words ("expected X stat Y seek
 * Z"). Exit status: 0 same, 1 a difference or an error, 2 usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <limits.h>
#include <liburing.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAXFILES	8
#define MAXLEN		65536
#define BLK		4096	/* O_DIRECT, collapse, insert, clone and dedupe alignment */
#define FULL_EVERY	8	/* every file compared whole this often */
#define SEEK_EVERY	4	/* SEEK_DATA and SEEK_HOLE checked this often */
#define PIECES		4	/* AIO and io_uring requests in flight for one operation */

/* The data kinds first, in pairs: each way's write, then its read (data_io()). */
enum kind {
	K_WRITE, K_READ, K_MWRITE, K_MREAD, K_DWRITE, K_DREAD, K_AWRITE, K_AREAD,
	K_UWRITE, K_UREAD, K_TRUNC, K_FALLOC, K_COPY, K_CLONE, K_DEDUPE, K_SCATTER,
	K_RENAME, K_CHMOD, K_UNLINK, K_FSYNC, K_REOPEN, K_NKINDS
};

static const char *const kind_name[K_NKINDS] = {
	"write", "read", "mwrite", "mread", "dwrite", "dread", "awrite", "aread",
	"uwrite", "uread", "truncate", "fallocate", "copy", "clone", "dedupe", "scatter",
	"rename", "chmod", "unlink", "fsync", "reopen",
};

/* fallocate() modes, by the operation's mode field. */
static const int falloc_modes[] = {
	0, FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
	FALLOC_FL_ZERO_RANGE, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE,
	FALLOC_FL_COLLAPSE_RANGE, FALLOC_FL_INSERT_RANGE,
	FALLOC_FL_UNSHARE_RANGE, FALLOC_FL_UNSHARE_RANGE | FALLOC_FL_KEEP_SIZE,
};
#define NFALLOC		(int)(sizeof(falloc_modes) / sizeof(falloc_modes[0]))

static const char *const falloc_name[NFALLOC] = {
	"allocate", "keep-size", "punch", "zero", "zero-keep-size", "collapse", "insert",
	"unshare", "unshare-keep-size",
};

/* One operation, all that replaying it needs. */
struct op {
	enum kind	kind;
	int		f, g;		/* the file, and the other one (copy, clone, rename) */
	long long	off, to, len;
	unsigned int	mode;		/* fallocate's index; flags for the others */
	unsigned long long seed;	/* of the data written */
};

/* How a mode mixes the operations: weights by kind. */
struct mix {
	const char	*name;
	unsigned int	w[K_NKINDS];
};

/* The operations every mode has, beside its own writes and reads. */
#define COMMON_OPS	[K_TRUNC] = 4, [K_FALLOC] = 8, [K_COPY] = 3, [K_CLONE] = 2,	\
			[K_DEDUPE] = 2, [K_RENAME] = 1, [K_CHMOD] = 1, [K_UNLINK] = 1,	\
			[K_FSYNC] = 2, [K_REOPEN] = 2

static const struct mix mixes[] = {
	{ "buffered", { [K_WRITE] = 12, [K_READ] = 6, [K_MWRITE] = 4, [K_MREAD] = 2,
			[K_DWRITE] = 2, [K_DREAD] = 1, [K_SCATTER] = 3, COMMON_OPS } },
	{ "mmap", { [K_MWRITE] = 14, [K_MREAD] = 8, [K_SCATTER] = 2, COMMON_OPS } },
	{ "direct", { [K_DWRITE] = 14, [K_DREAD] = 8, COMMON_OPS } },
	{ "aio", { [K_AWRITE] = 14, [K_AREAD] = 8, COMMON_OPS } },
	{ "uring", { [K_UWRITE] = 14, [K_UREAD] = 8, COMMON_OPS } },
};

/* One directory's files, each open for as long as it exists. */
struct side {
	const char	*dir;
	int		fd[MAXFILES];	/* O_RDWR; -1: no such file */
	int		dfd[MAXFILES];	/* O_DIRECT, opened when first needed */
	aio_context_t	aio;
	struct io_uring	ring;
	int		ring_ok;
};

struct fsx {
	struct side	side[2];
	const char	*server;	/* DIR_A on the server, or NULL */
	const struct mix *mix;
	unsigned int	w[K_NKINDS], wsum;	/* the mix, less what the reference lacks */
	unsigned int	falloc_ok;		/* the fallocate modes it has, by index */
	int		nfiles;
	long long	maxsize;
	uint64_t	rng;
	unsigned long	step, steps, last_full;
	long long	res;		/* both sides' answer to the last call */
	/* Operations that succeeded and failed (alike), by kind and by fallocate mode. */
	unsigned long	done[K_NKINDS + NFALLOC][2];
	FILE		*log, *replay;
	char		op[200];
	char		where[48];
	uint8_t		*buf;
	uint8_t		*cmp[3];
};

static uint64_t xorshift(uint64_t *s)
{
	/* xorshift64*: the same sequence for the same seed */
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ULL;
}

static uint64_t rnd(struct fsx *x)
{
	return xorshift(&x->rng);
}

/* LEN bytes of data from SEED, eight from each number. */
static void fill(uint8_t *buf, size_t len, unsigned long long seed)
{
	uint64_t s = seed | 1, v;
	size_t i;

	for (i = 0; i < len; i += sizeof(v)) {
		v = xorshift(&s);
		memcpy(buf + i, &v, len - i < sizeof(v) ? len - i : sizeof(v));
	}
}

static const char *path(const char *dir, int f, char *out, size_t len)
{
	snprintf(out, len, "%s/f%d", dir, f);
	return out;
}

static int fail(struct fsx *x, const char *what)
{
	fprintf(stderr, "orfs-fsx: step %lu (%s)%s: %s (errno %s)\n", x->step, x->op, x->where,
		what, strerror(errno));
	return -1;
}

/* Run CALL on both sides (SIDE, S); both must succeed or fail alike. */
#define BOTH(x, call) do {						\
	long long _r[2];						\
	int _e[2], side;						\
	for (side = 0; side < 2; side++) {				\
		struct side *s = &(x)->side[side];			\
		(void)s;						\
		errno = 0;						\
		_r[side] = (call);					\
		_e[side] = _r[side] < 0 ? errno : 0;			\
	}								\
	if (_r[0] != _r[1] || _e[0] != _e[1]) {				\
		fprintf(stderr, "orfs-fsx: ORFS answered %lld (%s), the reference %lld (%s)\n", \
			_r[0], strerror(_e[0]), _r[1], strerror(_e[1]));	\
		errno = _e[0];						\
		return fail(x, "the two sides answered differently");	\
	}								\
	(x)->res = _r[0];						\
} while (0)

/* The file's descriptor, opened (and created) when it is not yet. */
static int fd_of(struct side *s, int f)
{
	char p[4096];

	if (s->fd[f] < 0)
		s->fd[f] = open(path(s->dir, f, p, sizeof(p)), O_RDWR | O_CREAT, 0644);
	return s->fd[f];
}

static int dfd_of(struct side *s, int f)
{
	char p[4096];

	if (fd_of(s, f) < 0)
		return -1;
	if (s->dfd[f] < 0)
		s->dfd[f] = open(path(s->dir, f, p, sizeof(p)), O_RDWR | O_DIRECT);
	return s->dfd[f];
}

static int close_file(struct side *s, int f)
{
	int ret = 0;

	if (s->dfd[f] >= 0 && close(s->dfd[f]))
		ret = -1;
	if (s->fd[f] >= 0 && close(s->fd[f]))
		ret = -1;
	s->fd[f] = s->dfd[f] = -1;
	return ret;
}

static long long size_of(int fd)
{
	struct stat st;

	return fstat(fd, &st) ? -1 : (long long)st.st_size;
}

/* Whole writes and reads: a short one on either side shows in the answers. */
static long long rw(int fd, int write, uint8_t *buf, long long len, long long off)
{
	return write ? pwrite(fd, buf, (size_t)len, off) : pread(fd, buf, (size_t)len, off);
}

/* Up to PIECES aligned pieces of LEN bytes at OFF in flight at once, by Linux AIO. */
static long long aio_rw(struct side *s, int fd, int write, uint8_t *buf, long long len,
			long long off)
{
	struct iocb cb[PIECES], *cbs[PIECES];
	struct io_event ev[PIECES];
	long long piece = ((len / PIECES) + BLK - 1) / BLK * BLK, done = 0, at;
	int n = 0, i, got = 0;

	if (!s->aio && syscall(SYS_io_setup, PIECES, &s->aio))
		return -1;
	for (at = 0; at < len && n < PIECES; at += piece, n++) {
		memset(&cb[n], 0, sizeof(cb[n]));
		cb[n].aio_fildes = (uint32_t)fd;
		cb[n].aio_lio_opcode = write ? IOCB_CMD_PWRITE : IOCB_CMD_PREAD;
		cb[n].aio_buf = (uint64_t)(uintptr_t)(buf + at);
		cb[n].aio_nbytes = (uint64_t)(len - at < piece || n == PIECES - 1 ? len - at : piece);
		cb[n].aio_offset = off + at;
		cb[n].aio_data = (uint64_t)n;
		cbs[n] = &cb[n];
	}
	if (syscall(SYS_io_submit, s->aio, (long)n, cbs) != n)
		return -1;
	while (got < n) {
		long r = syscall(SYS_io_getevents, s->aio, 1L, (long)(n - got), ev + got, NULL);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		got += (int)r;
	}
	/* A read may end short at the end of the file: what came counts up to the first gap. */
	for (i = 0; i < n; i++) {
		if ((long long)ev[i].res < 0) {
			errno = (int)-(long long)ev[i].res;
			return -1;
		}
	}
	for (i = 0; i < n; i++) {
		int k;

		for (k = 0; k < n && ev[k].data != (uint64_t)i; k++)
			;
		done += (long long)ev[k].res;
		if (ev[k].res < (long long)cb[i].aio_nbytes)
			break;
	}
	return done;
}

/* The same by io_uring, buffered: pieces of any length. */
static long long uring_rw(struct side *s, int fd, int write, uint8_t *buf, long long len,
			  long long off)
{
	long long piece = (len + PIECES - 1) / PIECES, at, res[PIECES], done = 0;
	int n = 0, i, ret;

	if (!s->ring_ok) {
		ret = io_uring_queue_init(PIECES * 2, &s->ring, 0);
		if (ret) {
			errno = -ret;
			return -1;
		}
		s->ring_ok = 1;
	}
	for (at = 0; at < len && n < PIECES; at += piece, n++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&s->ring);
		unsigned int l = (unsigned int)(len - at < piece ? len - at : piece);

		if (!sqe) {
			errno = EBUSY;
			return -1;
		}
		if (write)
			io_uring_prep_write(sqe, fd, buf + at, l, (uint64_t)(off + at));
		else
			io_uring_prep_read(sqe, fd, buf + at, l, (uint64_t)(off + at));
		io_uring_sqe_set_data64(sqe, (uint64_t)n);
	}
	ret = io_uring_submit_and_wait(&s->ring, (unsigned int)n);
	if (ret < 0) {
		errno = -ret;
		return -1;
	}
	for (i = 0; i < n; i++) {
		struct io_uring_cqe *cqe;

		ret = io_uring_wait_cqe(&s->ring, &cqe);
		if (ret) {
			errno = -ret;
			return -1;
		}
		res[io_uring_cqe_get_data64(cqe)] = cqe->res;
		io_uring_cqe_seen(&s->ring, cqe);
	}
	for (i = 0; i < n; i++)
		if (res[i] < 0) {
			errno = (int)-res[i];
			return -1;
		}
	for (i = 0; i < n; i++) {
		done += res[i];
		if (res[i] < (len - (long long)i * piece < piece ? len - (long long)i * piece : piece))
			break;
	}
	return done;
}

/*
 * A store of LEN bytes at OFF through a shared mapping; the file grows to
 * take it first (as fsx does), and with MSYNC the mapping is synced.
 */
static long long map_write(int fd, const uint8_t *src, long long len, long long off, int msync_it)
{
	long long size = size_of(fd), pg = off & ~(long long)(BLK - 1);
	uint8_t *m;
	int ret = 0;

	if (size < 0)
		return -1;
	if (off + len > size && ftruncate(fd, off + len))
		return -1;
	m = mmap(NULL, (size_t)(off + len - pg), PROT_READ | PROT_WRITE, MAP_SHARED, fd, pg);
	if (m == MAP_FAILED)
		return -1;
	memcpy(m + (off - pg), src, (size_t)len);
	if (msync_it)
		ret = msync(m, (size_t)(off + len - pg), MS_SYNC);
	if (munmap(m, (size_t)(off + len - pg)))
		ret = -1;
	return ret ? -1 : len;
}

/* A load of up to LEN bytes at OFF through a mapping, within the file. */
static long long map_read(int fd, uint8_t *dst, long long len, long long off)
{
	long long size = size_of(fd), pg = off & ~(long long)(BLK - 1);
	uint8_t *m;

	if (size < 0)
		return -1;
	if (off >= size)
		return 0;
	if (len > size - off)
		len = size - off;
	m = mmap(NULL, (size_t)(off + len - pg), PROT_READ, MAP_SHARED, fd, pg);
	if (m == MAP_FAILED)
		return -1;
	memcpy(dst, m + (off - pg), (size_t)len);
	munmap(m, (size_t)(off + len - pg));
	return len;
}

static long long copy_range(int in, int out, long long off, long long to, long long len)
{
	loff_t o = off, t = to;
	long long done = 0;
	ssize_t n;

	while (done < len) {
		n = copy_file_range(in, &o, out, &t, (size_t)(len - done), 0);
		if (n < 0)
			return -1;
		if (!n)
			break;
		done += n;
	}
	return done;
}

static long long clone_range(int in, int out, long long off, long long to, long long len)
{
	struct file_clone_range r = {
		.src_fd = in, .src_offset = (uint64_t)off, .src_length = (uint64_t)len,
		.dest_offset = (uint64_t)to,
	};

	return ioctl(out, FICLONERANGE, &r);
}

/*
 * Dedupe of one range: its bytes and its status (same or differ) folded
 * into one answer. With one destination its error is the call's: a file
 * system without the operation fails the ioctl, while on a mount whose
 * client has it (and whose server's file system has not) the ioctl
 * succeeds with the error in the range's status, as the VFS reports it.
 */
static long long dedupe_range(int in, int out, long long off, long long to, long long len)
{
	struct {
		struct file_dedupe_range r;
		struct file_dedupe_range_info i;
	} d = {
		.r = { .src_offset = (uint64_t)off, .src_length = (uint64_t)len, .dest_count = 1 },
		.i = { .dest_fd = out, .dest_offset = (uint64_t)to },
	};

	if (ioctl(in, FIDEDUPERANGE, &d))
		return -1;
	if (d.i.status < 0) {
		errno = -d.i.status;
		return -1;
	}
	return (long long)d.i.bytes_deduped * 2 + d.i.status;
}

/*
 * N writes near OFF before one close, through a descriptor of their own:
 * after the first, with MAP, a store of 200 bytes through a shared mapping
 * in the page before the one it starts in (in the same large folio, often,
 * but not in the pages the write dirtied). Nothing between the write and
 * the store may write back, or the store would find the folio clean.
 */
static long long scatter(struct fsx *x, struct side *s, const struct op *o)
{
	uint64_t r = o->seed | 1;
	int n = 2 + (int)(xorshift(&r) % 4), map = (int)(xorshift(&r) % 2), i;
	long long moff = (long long)(xorshift(&r) % (BLK - 200)), base = -1;
	char p[4096];
	int fd = open(path(s->dir, o->f, p, sizeof(p)), O_RDWR | O_CREAT, 0644), ret = 0;

	if (fd < 0)
		return -1;
	for (i = 0; i < n && !ret; i++) {
		long long at = o->off + (long long)(xorshift(&r) % 262144);
		size_t len = 1 + xorshift(&r) % 16384;

		if (pwrite(fd, x->buf + i * 12288, len, at) != (ssize_t)len)
			ret = -1;
		if (!i)
			base = (at & ~(long long)(BLK - 1)) - BLK;
		if (!ret && !i && map && base >= 0 &&
		    map_write(fd, x->buf + 50000, 200, base + moff, 1) < 0)
			ret = -1;
	}
	if (close(fd))
		ret = -1;
	return ret;
}

/* Aligned down to BLK. */
static long long down(long long v)
{
	return v & ~(long long)(BLK - 1);
}

/* A random operation of the mode's mix, its numbers fit for the reference's file. */
static void gen(struct fsx *x, struct op *o)
{
	unsigned int w = (unsigned int)(rnd(x) % x->wsum), k;
	long long size;

	memset(o, 0, sizeof(*o));
	for (k = 0; w >= x->w[k]; k++)
		w -= x->w[k];
	o->kind = (enum kind)k;
	o->f = (int)(rnd(x) % (uint64_t)x->nfiles);
	o->g = (int)(rnd(x) % (uint64_t)x->nfiles);
	o->off = (long long)(rnd(x) % (uint64_t)x->maxsize);
	o->to = (long long)(rnd(x) % (uint64_t)x->maxsize);
	o->len = 1 + (long long)(rnd(x) % MAXLEN);
	o->seed = rnd(x);
	o->mode = (unsigned int)(rnd(x) % 1024);
	size = x->side[1].fd[o->f] >= 0 ? size_of(x->side[1].fd[o->f]) : 0;
	if (size < 0)
		size = 0;
	/* Most reads and range operations within the file, as fsx does. */
	if (size && (o->kind == K_READ || o->kind == K_MREAD || o->kind == K_DREAD ||
		     o->kind == K_AREAD || o->kind == K_UREAD || o->kind == K_COPY ||
		     o->kind == K_CLONE || o->kind == K_DEDUPE) && o->mode % 8)
		o->off %= size;
	switch (o->kind) {
	case K_WRITE:
	case K_MWRITE:
	case K_UWRITE:
		if (o->off + o->len > x->maxsize)
			o->len = x->maxsize - o->off;
		break;
	case K_DWRITE:
	case K_DREAD:
	case K_AWRITE:
	case K_AREAD:
		o->off = down(o->off);
		o->len = down(o->len + BLK - 1);
		if (o->off + o->len > x->maxsize)
			o->off = down(x->maxsize - o->len);
		break;
	case K_TRUNC:
		o->off = (long long)(rnd(x) % (uint64_t)(x->maxsize + 1));
		break;
	case K_FALLOC:
		o->mode %= NFALLOC;
		while (!(x->falloc_ok & (1U << o->mode)))
			o->mode = (o->mode + 1) % NFALLOC;
		if (falloc_modes[o->mode] & (FALLOC_FL_COLLAPSE_RANGE | FALLOC_FL_INSERT_RANGE)) {
			/* Aligned, and mostly within the file (the rest is refused alike). */
			o->len = BLK * (1 + (long long)(rnd(x) % 16));
			if (size > BLK && rnd(x) % 8)
				o->off = down(o->off % size);
			o->off = down(o->off);
			/* No growth past MAXSIZE: at the end, which both refuse. */
			if ((falloc_modes[o->mode] & FALLOC_FL_INSERT_RANGE) &&
			    size + o->len > x->maxsize)
				o->off = down(size + BLK - 1);
		} else if (o->off + o->len > x->maxsize) {
			o->len = x->maxsize - o->off;
		}
		break;
	case K_COPY:
		if (o->to + o->len > x->maxsize)
			o->len = x->maxsize - o->to;
		break;
	case K_CLONE:
	case K_DEDUPE:
		o->off = down(o->off);
		o->to = down(o->to);
		o->len = down(o->len + BLK - 1);
		/* To the end of the source, which may not be aligned (a clone's len 0). */
		if (size > o->off && o->mode % 4 == 0)
			o->len = o->kind == K_CLONE ? 0 : size - o->off;
		if (o->to + (o->len ? o->len : size) > x->maxsize)
			o->to = 0;
		/* A dedupe of ranges alike: the source's range copied first (flag 1). */
		if (o->kind == K_DEDUPE)
			o->mode %= 2;
		break;
	case K_SCATTER:
		o->off %= x->maxsize > 262144 + 16384 ? x->maxsize - 262144 - 16384 : 1;
		break;
	default:
		break;
	}
	if (o->len < 0)
		o->len = 0;
}

static void describe(const struct op *o, char *out, size_t len)
{
	snprintf(out, len, "%s f=%d g=%d off=%#llx to=%#llx len=%#llx mode=%x seed=%#llx",
		 kind_name[o->kind], o->f, o->g, o->off, o->to, o->len, o->mode, o->seed);
}

/* The next operation of the replayed log: 1, 0 at its end, -1 for a bad line. */
static int parse(struct fsx *x, struct op *o)
{
	char line[512], name[32];
	int k;

	do {
		if (!fgets(line, sizeof(line), x->replay))
			return 0;
	} while (line[0] == '#' || line[0] == '\n');
	memset(o, 0, sizeof(*o));
	if (sscanf(line, "%31s f=%d g=%d off=%lli to=%lli len=%lli mode=%x seed=%llx", name,
		   &o->f, &o->g, &o->off, &o->to, &o->len, &o->mode, &o->seed) != 8)
		goto bad;
	for (k = 0; k < K_NKINDS && strcmp(name, kind_name[k]); k++)
		;
	if (k == K_NKINDS || o->f < 0 || o->f >= x->nfiles || o->g < 0 || o->g >= x->nfiles ||
	    o->off < 0 || o->to < 0 || o->len < 0 || o->len > x->maxsize ||
	    (k <= K_UREAD && o->len > MAXLEN) ||
	    (k == K_FALLOC && o->mode >= (unsigned int)NFALLOC))
		goto bad;
	o->kind = (enum kind)k;
	return 1;
bad:
	fprintf(stderr, "orfs-fsx: a line of the log is not an operation: %s", line);
	return -1;
}

/* The files an operation touches, as a mask. */
static unsigned int touched(const struct op *o)
{
	unsigned int m = 1U << o->f;

	if (o->kind == K_COPY || o->kind == K_CLONE || o->kind == K_DEDUPE || o->kind == K_RENAME)
		m |= 1U << o->g;
	return m;
}

/* Do the two sides' last reads (N bytes each, in cmp[0] and cmp[1]) agree? */
static int same_read(struct fsx *x, long long n)
{
	long long i;

	if (n <= 0 || !memcmp(x->cmp[0], x->cmp[1], (size_t)n))
		return 0;
	for (i = 0; x->cmp[0][i] == x->cmp[1][i]; i++)
		;
	fprintf(stderr, "orfs-fsx: the read differs at its byte %lld\n", i);
	return fail(x, "a read gave other bytes on ORFS than on the reference");
}

/*
 * A write or a read of SIDE's file (S) in its kind's way: the data kinds
 * come in pairs, the write then the read, of pwrite()/pread(), mappings,
 * O_DIRECT, Linux AIO and io_uring. A read goes to cmp[SIDE].
 */
static long long data_io(struct fsx *x, struct side *s, int side, const struct op *o)
{
	int write = !(o->kind % 2);
	uint8_t *buf = write ? x->buf : x->cmp[side];

	switch (o->kind / 2) {
	case K_WRITE / 2:
		return fd_of(s, o->f) < 0 ? -1 : rw(s->fd[o->f], write, buf, o->len, o->off);
	case K_MWRITE / 2:
		if (fd_of(s, o->f) < 0)
			return -1;
		return write ? map_write(s->fd[o->f], buf, o->len, o->off, o->mode & 1) :
			       map_read(s->fd[o->f], buf, o->len, o->off);
	case K_DWRITE / 2:
		return dfd_of(s, o->f) < 0 ? -1 : rw(s->dfd[o->f], write, buf, o->len, o->off);
	case K_AWRITE / 2:
		return dfd_of(s, o->f) < 0 ? -1 :
		       aio_rw(s, s->dfd[o->f], write, buf, o->len, o->off);
	default:
		return fd_of(s, o->f) < 0 ? -1 : uring_rw(s, s->fd[o->f], write, buf, o->len, o->off);
	}
}

static int apply(struct fsx *x, const struct op *o)
{
	char p[4096], q[4096];
	int fm;

	if (o->kind <= K_UREAD) {
		if (!(o->kind % 2))
			fill(x->buf, (size_t)o->len, o->seed);
		BOTH(x, data_io(x, s, side, o));
		return o->kind % 2 ? same_read(x, x->res) : 0;
	}
	/* A scatter's pieces lie apart in the buffer. */
	if (o->kind == K_SCATTER)
		fill(x->buf, MAXLEN + 50200, o->seed);
	switch (o->kind) {
	case K_TRUNC:
		BOTH(x, fd_of(s, o->f) < 0 ? -1 : ftruncate(s->fd[o->f], o->off));
		break;
	case K_FALLOC:
		fm = falloc_modes[o->mode];
		BOTH(x, fd_of(s, o->f) < 0 ? -1 : fallocate(s->fd[o->f], fm, o->off, o->len));
		break;
	case K_COPY:
		BOTH(x, fd_of(s, o->f) < 0 || fd_of(s, o->g) < 0 ? -1 :
			copy_range(s->fd[o->f], s->fd[o->g], o->off, o->to, o->len));
		break;
	case K_CLONE:
		BOTH(x, fd_of(s, o->f) < 0 || fd_of(s, o->g) < 0 ? -1 :
			clone_range(s->fd[o->f], s->fd[o->g], o->off, o->to, o->len));
		break;
	case K_DEDUPE:
		/* Flag 1: the range copied first, so that the two are alike. */
		if (o->mode & 1)
			BOTH(x, fd_of(s, o->f) < 0 || fd_of(s, o->g) < 0 ? -1 :
				copy_range(s->fd[o->f], s->fd[o->g], o->off, o->to, o->len));
		BOTH(x, fd_of(s, o->f) < 0 || fd_of(s, o->g) < 0 ? -1 :
			dedupe_range(s->fd[o->f], s->fd[o->g], o->off, o->to, o->len));
		break;
	case K_SCATTER:
		BOTH(x, fd_of(s, o->f) < 0 ? -1 : scatter(x, s, o));
		break;
	case K_RENAME:
		/* The name replaced is closed first: its file goes with it. */
		if (o->f != o->g)
			BOTH(x, close_file(s, o->g));
		BOTH(x, rename(path(s->dir, o->f, p, sizeof(p)), path(s->dir, o->g, q, sizeof(q))));
		if (o->f != o->g) {
			for (fm = 0; fm < 2; fm++) {
				struct side *s = &x->side[fm];

				s->fd[o->g] = s->fd[o->f];
				s->dfd[o->g] = s->dfd[o->f];
				s->fd[o->f] = s->dfd[o->f] = -1;
			}
		}
		break;
	case K_CHMOD:
		BOTH(x, chmod(path(s->dir, o->f, p, sizeof(p)), (mode_t)(0600 | (o->mode & 077))));
		break;
	case K_UNLINK:
		BOTH(x, close_file(s, o->f));
		BOTH(x, unlink(path(s->dir, o->f, p, sizeof(p))));
		break;
	case K_FSYNC:
		BOTH(x, fd_of(s, o->f) < 0 ? -1 :
			(o->mode & 1 ? fdatasync(s->fd[o->f]) : fsync(s->fd[o->f])));
		break;
	case K_REOPEN:
		BOTH(x, close_file(s, o->f));
		BOTH(x, fd_of(s, o->f) < 0 ? -1 : 0);
		break;
	default:
		break;
	}
	return 0;
}

static int zeroes(const uint8_t *buf, off_t from, off_t to)
{
	for (; from < to; from++)
		if (buf[from])
			return 0;
	return 1;
}

/*
 * lseek() to data and to holes of one file (FD, SIZE bytes, read into BUF)
 * from two offsets, checked against what any file system must answer
 * (where it keeps holes is its own): SEEK_DATA passes over zeroes only, or
 * says ENXIO when only zeroes are left; SEEK_HOLE stops within the file,
 * at its end at the latest, and a hole reads as zeroes; from the end on,
 * both say ENXIO.
 */
static int check_seek(struct fsx *x, const char *dir, int fd, off_t size, const uint8_t *buf)
{
	const off_t at[2] = { 0, (off_t)((x->step * 2654435761ULL) % (uint64_t)(size + 1)) };
	off_t d, h;
	int i;

	for (i = 0; i < 2; i++) {
		errno = 0;
		d = lseek(fd, at[i], SEEK_DATA);
		if (d < 0 && errno != ENXIO)
			return fail(x, "SEEK_DATA");
		if (at[i] >= size ? d >= 0 :
		    d < 0 ? !zeroes(buf, at[i], size) :
		    d < at[i] || d >= size || !zeroes(buf, at[i], d)) {
			fprintf(stderr, "orfs-fsx: SEEK_DATA from %lld of %lld bytes: %lld in %s\n",
				(long long)at[i], (long long)size, (long long)d, dir);
			return fail(x, "SEEK_DATA passed over data, or found it where none is");
		}
		errno = 0;
		h = lseek(fd, at[i], SEEK_HOLE);
		if (h < 0 && errno != ENXIO)
			return fail(x, "SEEK_HOLE");
		if (at[i] >= size ? h >= 0 : h < at[i] || h > size || (h < size && buf[h])) {
			fprintf(stderr, "orfs-fsx: SEEK_HOLE from %lld of %lld bytes: %lld in %s\n",
				(long long)at[i], (long long)size, (long long)h, dir);
			return fail(x, "SEEK_HOLE found a hole outside the file, or one that has data");
		}
	}
	return 0;
}

/* Read bytes [LO, HI) of FD into BUF at LO. */
static int read_all(int fd, uint8_t *buf, long long lo, long long hi)
{
	long long done = lo;
	ssize_t n;

	while (done < hi) {
		n = pread(fd, buf + done, (size_t)(hi - done), done);
		if (n <= 0)
			return -1;
		done += n;
	}
	return 0;
}

/*
 * The bytes of file F that operation O may have changed or read, [*LO,
 * *HI), with a block's margin: those are compared after the step, and the
 * whole file every FULL_EVERY steps. All of it after a shift (what
 * follows moved), a rename, a sync or a reopen, or without O.
 */
static void window(const struct op *o, int f, long long *lo, long long *hi)
{
	long long a = 0, b = LLONG_MAX;

	switch (o ? o->kind : K_NKINDS) {
	case K_WRITE: case K_READ: case K_MWRITE: case K_MREAD: case K_DWRITE: case K_DREAD:
	case K_AWRITE: case K_AREAD: case K_UWRITE: case K_UREAD:
		a = o->off;
		b = o->off + o->len;
		break;
	case K_SCATTER:
		/* its writes, and the store in the page before the first */
		a = o->off - BLK;
		b = o->off + 262144 + 16384;
		break;
	case K_TRUNC:
		a = o->off - MAXLEN;
		b = o->off + MAXLEN;
		break;
	case K_FALLOC:
		a = o->off;
		if (!(falloc_modes[o->mode] & (FALLOC_FL_COLLAPSE_RANGE | FALLOC_FL_INSERT_RANGE)))
			b = o->off + o->len;
		break;
	case K_COPY: case K_CLONE: case K_DEDUPE:
		a = f == o->g ? o->to : o->off;
		if (f == o->f && f == o->g && o->off < a)
			a = o->off;
		if (o->len)
			b = (o->off > o->to ? o->off : o->to) + o->len;
		break;
	default:
		break;
	}
	*lo = a > BLK ? down(a) - BLK : 0;
	*hi = b >= LLONG_MAX - 2 * BLK ? LLONG_MAX : down(b) + 2 * BLK;
}

static int differ(struct fsx *x, int f, int a, int b, long long lo, long long hi,
		  const char *where, const char *what)
{
	long long i;

	if (hi <= lo || !memcmp(x->cmp[a] + lo, x->cmp[b] + lo, (size_t)(hi - lo)))
		return 0;
	for (i = lo; x->cmp[a][i] == x->cmp[b][i]; i++)
		;
	fprintf(stderr, "orfs-fsx: f%d differs at byte %lld (%#llx) in %s\n", f, i, i, where);
	return fail(x, what);
}

/*
 * compare() - the files in MASK (bit F for file F) alike on both sides:
 * existence, mode, size by fstat(), lseek(SEEK_END) and stat(), contents
 * read through the open files (what operation O may have changed, or all
 * without O); SEEK_DATA and SEEK_HOLE checked on file SEEK_F (none: -1);
 * the files in SERVER with the server's copy too. A difference found in a
 * pass over every file names the steps since the last such pass.
 */
static int compare(struct fsx *x, unsigned int mask, const struct op *o, int seek_f,
		   unsigned int server)
{
	int f, side;

	if (mask == (1U << x->nfiles) - 1)
		snprintf(x->where, sizeof(x->where), " (or a step after %lu)", x->last_full);
	for (f = 0; f < x->nfiles; f++) {
		struct stat st[3];
		long long fsz[2] = { -1, -1 }, seek[2] = { -1, -1 }, lo, hi;
		int ok[3];
		char p[4096];

		if (!(mask & (1U << f)))
			continue;
		for (side = 0; side < 2; side++)
			ok[side] = !stat(path(x->side[side].dir, f, p, sizeof(p)), &st[side]);
		if (ok[0] != ok[1])
			return fail(x, "a file exists on one side only");
		if (!ok[0])
			continue;
		for (side = 0; side < 2; side++) {
			int fd = fd_of(&x->side[side], f);

			if (fd < 0)
				return fail(x, "open for comparison");
			fsz[side] = size_of(fd);
			seek[side] = lseek(fd, 0, SEEK_END);
		}
		if (fsz[1] > x->maxsize + 16 * MAXLEN) {
			fprintf(stderr, "orfs-fsx: f%d grew to %#llx bytes\n", f, fsz[1]);
			return fail(x, "a file grew past what the comparison buffers hold");
		}
		if (fsz[0] != fsz[1] || seek[0] != fsz[1] || (long long)st[0].st_size != fsz[1] ||
		    (long long)st[1].st_size != fsz[1]) {
			fprintf(stderr, "orfs-fsx: f%d size error: expected %#llx stat %#llx seek %#llx (by name %#llx)\n",
				f, fsz[1], fsz[0], seek[0], (long long)st[0].st_size);
			return fail(x, "sizes differ");
		}
		if ((st[0].st_mode & 07777) != (st[1].st_mode & 07777)) {
			fprintf(stderr, "orfs-fsx: f%d modes %o and %o\n", f,
				(unsigned int)(st[0].st_mode & 07777),
				(unsigned int)(st[1].st_mode & 07777));
			return fail(x, "modes differ");
		}
		/* All of it for SEEK's checks, or for the server's copy. */
		window(f == seek_f || (server & (1U << f)) ? NULL : o, f, &lo, &hi);
		if (hi > fsz[1])
			hi = fsz[1];
		for (side = 0; side < 2; side++) {
			int fd = x->side[side].fd[f];

			if (read_all(fd, x->cmp[side], lo, hi))
				return fail(x, "read for comparison");
			/* One file a step: each SEEK on ORFS asks the server. */
			if (f == seek_f &&
			    check_seek(x, x->side[side].dir, fd, (off_t)fsz[1], x->cmp[side]))
				return -1;
		}
		if (differ(x, f, 0, 1, lo, hi, x->side[1].dir, "contents differ"))
			return -1;
		if (x->server && (server & (1U << f))) {
			int fd = open(path(x->server, f, p, sizeof(p)), O_RDONLY);

			if (fd < 0 || fstat(fd, &st[2])) {
				if (fd >= 0)
					close(fd);
				return fail(x, "the server's copy of a synced file");
			}
			if ((long long)st[2].st_size != fsz[1]) {
				close(fd);
				fprintf(stderr, "orfs-fsx: f%d is %#llx bytes on the server, %#llx on ORFS\n",
					f, (long long)st[2].st_size, fsz[1]);
				return fail(x, "the server's copy of a synced file has another size");
			}
			if (read_all(fd, x->cmp[2], 0, fsz[1])) {
				close(fd);
				return fail(x, "read the server's copy");
			}
			close(fd);
			if (differ(x, f, 0, 2, 0, fsz[1], x->server,
				   "the server's copy of a synced file differs from what ORFS shows"))
				return -1;
		}
	}
	return 0;
}

static int one_step(struct fsx *x)
{
	struct op o;
	unsigned int mask, server = 0;
	int ret, seek_f;

	if (x->replay) {
		ret = parse(x, &o);
		if (ret <= 0)
			return ret < 0 ? -1 : 1;
	} else {
		gen(x, &o);
	}
	describe(&o, x->op, sizeof(x->op));
	if (x->log) {
		fprintf(x->log, "%s\n", x->op);
		fflush(x->log);
	}
	x->where[0] = '\0';
	if (apply(x, &o))
		return -1;
	x->done[o.kind == K_FALLOC ? K_NKINDS + (int)o.mode : (int)o.kind][x->res < 0]++;
	mask = touched(&o);
	/* What a sync or a close sent is on the server now. */
	if (o.kind == K_FSYNC || o.kind == K_REOPEN || o.kind == K_SCATTER)
		server = 1U << o.f;
	/* SEEK on ORFS asks the server: one file every SEEK_EVERY steps. */
	seek_f = x->step % SEEK_EVERY ? -1 : o.f;
	if (x->step % FULL_EVERY == 0 || x->step == x->steps) {
		if (compare(x, (1U << x->nfiles) - 1, NULL, seek_f, server))
			return -1;
		x->last_full = x->step;
		return 0;
	}
	return compare(x, mask, &o, seek_f, server);
}

/*
 * What the reference's file system lacks (EOPNOTSUPP) is left out of the
 * random operations, as fsx does: where ORFS's server lacks it too, the
 * VFS may check a range before ORFS can ask the server, and answer
 * another error for the same call. Replayed operations run as logged.
 */
static int probe(struct fsx *x)
{
	char p[4096], q[4096];
	int a, b, i, ret = 0;

	memcpy(x->w, x->mix->w, sizeof(x->w));
	snprintf(p, sizeof(p), "%s/.probe-a", x->side[1].dir);
	snprintf(q, sizeof(q), "%s/.probe-b", x->side[1].dir);
	a = open(p, O_RDWR | O_CREAT | O_TRUNC, 0644);
	b = open(q, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (a < 0 || b < 0 || pwrite(a, x->cmp[0], 4 * BLK, 0) != 4 * BLK ||
	    pwrite(b, x->cmp[0], 4 * BLK, 0) != 4 * BLK || fsync(a) || fsync(b)) {
		fprintf(stderr, "orfs-fsx: %s: %s\n", x->side[1].dir, strerror(errno));
		ret = -1;
		goto out;
	}
	if (clone_range(a, b, 0, BLK, BLK) < 0 && errno == EOPNOTSUPP) {
		x->w[K_CLONE] = 0;
		printf("the reference has no clone: left out\n");
	}
	if (dedupe_range(a, b, 0, 0, BLK) < 0 && errno == EOPNOTSUPP) {
		x->w[K_DEDUPE] = 0;
		printf("the reference has no dedupe: left out\n");
	}
	for (i = 0; i < NFALLOC; i++) {
		if (fallocate(a, falloc_modes[i], BLK, BLK) < 0 && errno == EOPNOTSUPP)
			printf("the reference has no fallocate-%s: left out\n", falloc_name[i]);
		else
			x->falloc_ok |= 1U << i;
	}
	if (!x->falloc_ok)
		x->w[K_FALLOC] = 0;
out:
	if (a >= 0)
		close(a);
	if (b >= 0)
		close(b);
	unlink(p);
	unlink(q);
	return ret;
}

static int usage(void)
{
	fprintf(stderr, "usage: orfs-fsx [-m buffered|mmap|direct|aio|uring] [-l MAXSIZE[K|M]] [-n FILES]\n"
			"                [-L LOG] [-R LOG] DIR_A DIR_B SEED STEPS [DIR_A_SERVER]\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct fsx x = { .maxsize = 1024 * 1024, .nfiles = 6, .mix = &mixes[0] };
	unsigned int i, k;
	char *end;
	int c, side, f;

	while ((c = getopt(argc, argv, "m:l:n:L:R:")) != -1) {
		switch (c) {
		case 'm':
			for (i = 0; i < sizeof(mixes) / sizeof(mixes[0]) &&
				    strcmp(optarg, mixes[i].name); i++)
				;
			if (i == sizeof(mixes) / sizeof(mixes[0]))
				return usage();
			x.mix = &mixes[i];
			break;
		case 'l':
			x.maxsize = strtoll(optarg, &end, 0);
			if (*end == 'K' || *end == 'k')
				x.maxsize <<= 10, end++;
			else if (*end == 'M' || *end == 'm')
				x.maxsize <<= 20, end++;
			if (*end || x.maxsize < 512 * 1024 || x.maxsize > 64LL << 20)
				return fprintf(stderr, "orfs-fsx: -l from 512K to 64M\n"), 2;
			break;
		case 'n':
			x.nfiles = atoi(optarg);
			if (x.nfiles < 1 || x.nfiles > MAXFILES)
				return fprintf(stderr, "orfs-fsx: -n from 1 to %d\n", MAXFILES), 2;
			break;
		case 'L':
			x.log = fopen(optarg, "w");
			if (!x.log)
				return fprintf(stderr, "orfs-fsx: %s: %s\n", optarg, strerror(errno)), 1;
			break;
		case 'R':
			x.replay = fopen(optarg, "r");
			if (!x.replay)
				return fprintf(stderr, "orfs-fsx: %s: %s\n", optarg, strerror(errno)), 1;
			break;
		default:
			return usage();
		}
	}
	if (argc - optind != 4 && argc - optind != 5)
		return usage();
	x.side[0].dir = argv[optind];
	x.side[1].dir = argv[optind + 1];
	x.rng = strtoull(argv[optind + 2], NULL, 0) | 1;
	x.steps = strtoul(argv[optind + 3], NULL, 0);
	x.server = argc - optind == 5 ? argv[optind + 4] : NULL;
	for (side = 0; side < 2; side++)
		for (f = 0; f < MAXFILES; f++)
			x.side[side].fd[f] = x.side[side].dfd[f] = -1;
	x.buf = aligned_alloc(BLK, MAXLEN + 50200 + BLK);
	for (i = 0; i < 3; i++)
		x.cmp[i] = aligned_alloc(BLK, (size_t)x.maxsize + 16 * MAXLEN + BLK);
	if (!x.buf || !x.cmp[0] || !x.cmp[1] || !x.cmp[2])
		return fprintf(stderr, "orfs-fsx: out of memory\n"), 1;
	memset(x.cmp[0], 0x5a, 4 * BLK);
	if (probe(&x))
		return 1;
	for (k = 0; k < K_NKINDS; k++)
		x.wsum += x.w[k];
	for (x.step = 1; x.step <= x.steps; x.step++) {
		c = one_step(&x);
		if (c < 0) {
			if (x.log)
				fprintf(stderr, "orfs-fsx: the operations are in the log; -R replays them\n");
			return 1;
		}
		if (c > 0)
			break;	/* the replayed log's end */
	}
	if (x.step > x.steps)
		x.step = x.steps;
	else
		x.steps = --x.step;
	/* Closed, so written back and committed: the server holds what ORFS showed. */
	snprintf(x.op, sizeof(x.op), "closing every file");
	for (side = 0; side < 2; side++)
		for (f = 0; f < x.nfiles; f++)
			if (close_file(&x.side[side], f) && side == 0)
				return fail(&x, "close"), 1;
	if (compare(&x, (1U << x.nfiles) - 1, NULL, 0, (1U << x.nfiles) - 1))
		return 1;
	for (side = 0; side < 2; side++)
		for (f = 0; f < x.nfiles; f++)
			close_file(&x.side[side], f);
	/* What ran, so that a caller can tell that each operation did succeed. */
	for (k = 0; k < K_NKINDS + NFALLOC; k++) {
		if (k == K_FALLOC)
			continue;
		if (k < K_NKINDS)
			printf("%s", kind_name[k]);
		else
			printf("fallocate-%s", falloc_name[k - K_NKINDS]);
		printf(" %lu ok %lu failed\n", x.done[k][0], x.done[k][1]);
	}
	printf("ok %lu steps\n", x.steps);
	return 0;
}

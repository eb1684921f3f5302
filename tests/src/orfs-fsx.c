// SPDX-License-Identifier: GPL-2.0-only
/*
 * orfs-fsx: the same seeded sequence of random operations applied to two
 * directories (an ORFS mount and a local file system), with contents and
 * metadata compared after every step (the files the step touched, and every
 * file every FULL_EVERY steps and after the last): buffered writes at random offsets,
 * O_DIRECT writes and reads, truncates, renames, shared mmap writes,
 * fallocate() (allocation, holes, zeroed ranges), copy_file_range()
 * between files, chmod and unlink, on a handful of files; and several writes near each
 * other before one close, some through a shared mapping, so that one
 * write-back gathers what they dirtied. After each step, the lseek(SEEK_DATA)
 * and lseek(SEEK_HOLE) answers for the file it touched first are checked
 * against its contents on each side.
 *
 *   orfs-fsx DIR_A DIR_B SEED STEPS [DIR_A_SERVER]
 *
 * With DIR_A_SERVER (the directory DIR_A is on the server, read there
 * without ORFS), every step also compares what the server holds: a step
 * closes its files, and close writes back, so what DIR_A shows from its
 * page cache must be on the server too.
 *
 * Prints "ok STEPS steps" or the first difference, with the step and the
 * operation that led to it. Exit status: 0 same, 1 a difference or an
 * error, 2 usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define NFILES		6
#define MAXSIZE		(1024 * 1024)
#define DIO_ALIGN	4096
/*
 * A step's own files are compared after it; all of them this often too, so
 * that a step that harms a file it did not name is caught within as many
 * steps (comparing every file after every step spent most of the run).
 */
#define FULL_EVERY	8

struct fsx {
	const char	*dir[3];	/* ORFS, the reference, the server's copy of ORFS's */
	int		ndirs;
	uint64_t	rng;
	unsigned long	step, steps;
	unsigned long	last_full;	/* the last step after which every file compared */
	char		op[160];
	char		where[48];	/* which steps a difference may come from */
	uint8_t		*buf;
	uint8_t		*cmp[3];
};

static uint64_t rnd(struct fsx *x)
{
	/* xorshift64*: the same sequence for the same seed */
	x->rng ^= x->rng >> 12;
	x->rng ^= x->rng << 25;
	x->rng ^= x->rng >> 27;
	return x->rng * 2685821657736338717ULL;
}

static const char *path(struct fsx *x, int side, int f, char *out, size_t len)
{
	snprintf(out, len, "%s/f%d", x->dir[side], f);
	return out;
}

static int fail(struct fsx *x, const char *what)
{
	fprintf(stderr, "orfs-fsx: step %lu (%s)%s: %s (errno %s)\n", x->step, x->op, x->where,
		what, strerror(errno));
	return -1;
}

/* Run OP on both sides; both must succeed or fail alike. */
#define BOTH(x, call) do {						\
	int _r[2], _e[2], side;						\
	for (side = 0; side < 2; side++) {				\
		errno = 0;						\
		_r[side] = (call) < 0 ? -1 : 0;				\
		_e[side] = errno;					\
	}								\
	if (_r[0] != _r[1] || (_r[0] && _e[0] != _e[1])) {		\
		errno = _e[0];						\
		return fail(x, "the two sides answered differently");	\
	}								\
} while (0)

static int do_write(struct fsx *x, int side, int f, off_t off, size_t len, int direct)
{
	char p[4096];
	int fd = open(path(x, side, f, p, sizeof(p)), O_WRONLY | O_CREAT | (direct ? O_DIRECT : 0),
		      0644);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = pwrite(fd, x->buf, len, off);
	close(fd);
	return n == (ssize_t)len ? 0 : -1;
}

static int do_dio_read(struct fsx *x, int side, int f, off_t off, size_t len)
{
	char p[4096];
	int fd = open(path(x, side, f, p, sizeof(p)), O_RDONLY | O_DIRECT);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = pread(fd, x->cmp[side], len, off);
	close(fd);
	return n < 0 ? -1 : (int)n;
}

static int do_fallocate(struct fsx *x, int side, int f, int mode, off_t off, size_t len)
{
	char p[4096];
	int fd = open(path(x, side, f, p, sizeof(p)), O_WRONLY | O_CREAT, 0644), ret;

	if (fd < 0)
		return -1;
	ret = fallocate(fd, mode, off, (off_t)len);
	close(fd);
	return ret;
}

/* copy_file_range() of LEN bytes from F at OFF to G at TO, until done or the end of F. */
static int do_copy(struct fsx *x, int side, int f, int g, off_t off, off_t to, size_t len)
{
	char p[4096];
	int in = open(path(x, side, f, p, sizeof(p)), O_RDONLY), out, ret = 0;
	ssize_t n;

	if (in < 0)
		return -1;
	out = open(path(x, side, g, p, sizeof(p)), O_WRONLY | O_CREAT, 0644);
	if (out < 0) {
		close(in);
		return -1;
	}
	while (len) {
		n = copy_file_range(in, &off, out, &to, len, 0);
		if (n <= 0) {
			ret = n < 0 ? -1 : 0;
			break;
		}
		len -= (size_t)n;
	}
	close(out);
	close(in);
	return ret;
}

/* Store LEN bytes of SRC at OFF in a shared mapping of MAPLEN bytes of FD from AT, synced. */
static int map_store(int fd, off_t at, size_t maplen, size_t off, const void *src, size_t len)
{
	uint8_t *m = mmap(NULL, maplen, PROT_READ | PROT_WRITE, MAP_SHARED, fd, at);
	int ret;

	if (m == MAP_FAILED)
		return -1;
	memcpy(m + off, src, len);
	ret = msync(m, maplen, MS_SYNC);
	munmap(m, maplen);
	return ret;
}

static int do_mmap_write(struct fsx *x, int side, int f, off_t off, size_t len)
{
	char p[4096];
	struct stat st;
	int fd = open(path(x, side, f, p, sizeof(p)), O_RDWR), ret;

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || st.st_size == 0) {
		close(fd);
		return 0;	/* nothing to map: the same on both sides */
	}
	if (off >= st.st_size)
		off = 0;
	if ((off_t)len > st.st_size - off)
		len = (size_t)(st.st_size - off);
	ret = map_store(fd, 0, (size_t)st.st_size, (size_t)off, x->buf, len);
	close(fd);
	return ret;
}

/*
 * N writes of up to 16 KiB at offsets within 256 KiB from OFF, before one
 * close; with MAP, after the first, a store of 200 bytes through a shared
 * mapping at MOFF in the page before the one it starts in: in the same
 * large folio, often, but not in the pages the write dirtied. That page is
 * inside the file once the write is done. Nothing between the write and
 * the store may write back (an fstat() on ORFS does), or the store would
 * find the folio clean.
 */
static int do_scatter(struct fsx *x, int side, int f, off_t off, const off_t *offs,
		      const size_t *lens, int n, int map, off_t moff)
{
	off_t base = ((off + offs[0]) & ~(off_t)4095) - 4096;
	char p[4096];
	int fd = open(path(x, side, f, p, sizeof(p)), O_RDWR | O_CREAT, 0644);
	int i, ret = 0;

	if (fd < 0)
		return -1;
	for (i = 0; i < n && !ret; i++) {
		if (pwrite(fd, x->buf + i * 12288, lens[i], off + offs[i]) != (ssize_t)lens[i])
			ret = -1;
		else if (!i && map && base >= 0)
			ret = map_store(fd, base, (size_t)moff + 200, (size_t)moff, x->buf + 50000,
					200);
	}
	if (close(fd))
		ret = -1;
	return ret;
}

/* Compare every file of every directory: existence, size, mode, contents. */
/* Are the bytes [FROM, TO) of BUF all zero? */
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
static int check_seek(struct fsx *x, int side, int fd, off_t size, const uint8_t *buf)
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
				(long long)at[i], (long long)size, (long long)d, x->dir[side]);
			return fail(x, "SEEK_DATA passed over data, or found it where none is");
		}
		errno = 0;
		h = lseek(fd, at[i], SEEK_HOLE);
		if (h < 0 && errno != ENXIO)
			return fail(x, "SEEK_HOLE");
		if (at[i] >= size ? h >= 0 : h < at[i] || h > size || (h < size && buf[h])) {
			fprintf(stderr, "orfs-fsx: SEEK_HOLE from %lld of %lld bytes: %lld in %s\n",
				(long long)at[i], (long long)size, (long long)h, x->dir[side]);
			return fail(x, "SEEK_HOLE found a hole outside the file, or one that has data");
		}
	}
	return 0;
}

/*
 * compare() - the files in MASK (bit F for file F) alike on every side;
 * SEEK_DATA and SEEK_HOLE checked on file SEEK_F. A difference found in a
 * pass over every file names the steps since the last such pass.
 */
static int compare(struct fsx *x, unsigned int mask, int seek_f)
{
	int f, side;

	if (mask == (1U << NFILES) - 1)
		snprintf(x->where, sizeof(x->where), " (or a step after %lu)", x->last_full);
	for (f = 0; f < NFILES; f++) {
		struct stat st[3];
		int ok[3];
		char p[4096];

		if (!(mask & (1U << f)))
			continue;

		for (side = 0; side < x->ndirs; side++)
			ok[side] = !stat(path(x, side, f, p, sizeof(p)), &st[side]);
		for (side = 1; side < x->ndirs; side++) {
			if (ok[0] != ok[side])
				return fail(x, side == 1 ? "a file exists on one side only" :
					    "the server's copy and ORFS disagree on a file's existence");
			if (!ok[0])
				continue;
			if (st[0].st_size != st[side].st_size) {
				fprintf(stderr, "orfs-fsx: f%d sizes %lld and %lld in %s\n", f,
					(long long)st[0].st_size, (long long)st[side].st_size,
					x->dir[side]);
				return fail(x, "sizes differ");
			}
			if ((st[0].st_mode & 07777) != (st[side].st_mode & 07777)) {
				fprintf(stderr, "orfs-fsx: f%d modes %o and %o in %s\n", f,
					(unsigned int)(st[0].st_mode & 07777),
					(unsigned int)(st[side].st_mode & 07777), x->dir[side]);
				return fail(x, "modes differ");
			}
		}
		if (!ok[0])
			continue;
		for (side = 0; side < x->ndirs; side++) {
			int fd = open(path(x, side, f, p, sizeof(p)), O_RDONLY);
			ssize_t n;

			if (fd < 0)
				return fail(x, "open for comparison");
			n = pread(fd, x->cmp[side], (size_t)st[0].st_size, 0);
			if (n != st[0].st_size) {
				close(fd);
				return fail(x, "read for comparison");
			}
			/* One file a step: each SEEK on ORFS asks the server. */
			if (f == seek_f &&
			    check_seek(x, side, fd, st[0].st_size, x->cmp[side])) {
				close(fd);
				return -1;
			}
			close(fd);
		}
		for (side = 1; side < x->ndirs; side++) {
			size_t i;

			if (!memcmp(x->cmp[0], x->cmp[side], (size_t)st[0].st_size))
				continue;
			for (i = 0; x->cmp[0][i] == x->cmp[side][i]; i++)
				;
			fprintf(stderr, "orfs-fsx: f%d differs at byte %zu in %s\n", f, i,
				x->dir[side]);
			return fail(x, side == 1 ? "contents differ" :
				    "the server's copy differs from what ORFS shows");
		}
	}
	return 0;
}

static int one_step(struct fsx *x)
{
	static const int modes[] = {
		0, FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		FALLOC_FL_ZERO_RANGE, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE,
	};
	int f = (int)(rnd(x) % NFILES), g = (int)(rnd(x) % NFILES), op = (int)(rnd(x) % 12);
	off_t off = (off_t)(rnd(x) % MAXSIZE);
	size_t len = 1 + rnd(x) % 65536, i;
	char p[4096], q[4096];
	int n[2];
	unsigned int mask = 1U << f;

	x->where[0] = '\0';
	for (i = 0; i < len; i++)
		x->buf[i] = (uint8_t)rnd(x);
	switch (op) {
	case 0:
	case 1:
		snprintf(x->op, sizeof(x->op), "write f%d %lld+%zu", f, (long long)off, len);
		BOTH(x, do_write(x, side, f, off, len, 0));
		break;
	case 2:
		off &= ~(off_t)(DIO_ALIGN - 1);
		len = (len + DIO_ALIGN - 1) & ~(size_t)(DIO_ALIGN - 1);
		snprintf(x->op, sizeof(x->op), "O_DIRECT write f%d %lld+%zu", f, (long long)off,
			 len);
		BOTH(x, do_write(x, side, f, off, len, 1));
		break;
	case 3:
		off &= ~(off_t)(DIO_ALIGN - 1);
		len = (len + DIO_ALIGN - 1) & ~(size_t)(DIO_ALIGN - 1);
		snprintf(x->op, sizeof(x->op), "O_DIRECT read f%d %lld+%zu", f, (long long)off, len);
		for (i = 0; i < 2; i++)
			n[i] = do_dio_read(x, (int)i, f, off, len);
		if (n[0] != n[1] || (n[0] > 0 && memcmp(x->cmp[0], x->cmp[1], (size_t)n[0])))
			return fail(x, "O_DIRECT reads differ");
		break;
	case 4:
		snprintf(x->op, sizeof(x->op), "truncate f%d to %lld", f, (long long)off);
		BOTH(x, truncate(path(x, side, f, p, sizeof(p)), off));
		break;
	case 5:
		snprintf(x->op, sizeof(x->op), "rename f%d to f%d", f, g);
		BOTH(x, rename(path(x, side, f, p, sizeof(p)), path(x, side, g, q, sizeof(q))));
		mask |= 1U << g;
		break;
	case 6:
		snprintf(x->op, sizeof(x->op), "mmap write f%d %lld+%zu", f, (long long)off, len);
		BOTH(x, do_mmap_write(x, side, f, off, len));
		break;
	case 8: {
		off_t offs[5];
		size_t lens[5];
		int k, nw = 2 + (int)(rnd(x) % 4), map = (int)(rnd(x) % 2);
		off_t moff = (off_t)(rnd(x) % (4096 - 200));
		int at;

		off %= MAXSIZE - 262144;	/* the file stays within the buffers */
		at = snprintf(x->op, sizeof(x->op), "%d writes f%d near %lld", nw, f,
			      (long long)off);
		if (map)
			at += snprintf(x->op + at, sizeof(x->op) - (size_t)at,
				       " (a mapped store at %lld in the page before the first)",
				       (long long)moff);
		at += snprintf(x->op + at, sizeof(x->op) - (size_t)at, ":");
		for (k = 0; k < nw; k++) {
			offs[k] = (off_t)(rnd(x) % 262144);
			lens[k] = 1 + rnd(x) % 16384;
			if (at > 0 && (size_t)at < sizeof(x->op))
				at += snprintf(x->op + at, sizeof(x->op) - (size_t)at, " +%lld/%zu",
					       (long long)offs[k], lens[k]);
		}
		BOTH(x, do_scatter(x, side, f, off, offs, lens, nw, map, moff));
		break;
	}
	case 9: {
		int mode = modes[rnd(x) % (sizeof(modes) / sizeof(modes[0]))];

		snprintf(x->op, sizeof(x->op), "fallocate f%d mode %#x %lld+%zu", f,
			 (unsigned int)mode, (long long)off, len);
		BOTH(x, do_fallocate(x, side, f, mode, off, len));
		break;
	}
	case 10: {
		off_t to = (off_t)(rnd(x) % MAXSIZE);

		snprintf(x->op, sizeof(x->op), "copy_file_range f%d %lld to f%d %lld, %zu", f,
			 (long long)off, g, (long long)to, len);
		BOTH(x, do_copy(x, side, f, g, off, to, len));
		mask |= 1U << g;
		break;
	}
	case 7:
		snprintf(x->op, sizeof(x->op), "chmod f%d %o", f, (unsigned int)(0600 | (off & 077)));
		BOTH(x, chmod(path(x, side, f, p, sizeof(p)), (mode_t)(0600 | (off & 077))));
		break;
	default:
		if (rnd(x) % 3)
			goto out;	/* unlink less often than the rest */
		snprintf(x->op, sizeof(x->op), "unlink f%d", f);
		BOTH(x, unlink(path(x, side, f, p, sizeof(p))));
		break;
	}
out:
	if (x->step % FULL_EVERY == 0 || x->step == x->steps) {
		if (compare(x, (1U << NFILES) - 1, f))
			return -1;
		x->last_full = x->step;
		return 0;
	}
	return compare(x, mask, f);
}

int main(int argc, char **argv)
{
	struct fsx x = { 0 };

	if (argc != 5 && argc != 6)
		return fprintf(stderr, "usage: orfs-fsx DIR_A DIR_B SEED STEPS [DIR_A_SERVER]\n"), 2;
	x.dir[0] = argv[1];
	x.dir[1] = argv[2];
	x.dir[2] = argc == 6 ? argv[5] : NULL;
	x.ndirs = argc == 6 ? 3 : 2;
	x.rng = strtoull(argv[3], NULL, 0) | 1;
	x.steps = strtoul(argv[4], NULL, 0);
	x.buf = aligned_alloc(DIO_ALIGN, 65536 + DIO_ALIGN);
	x.cmp[0] = aligned_alloc(DIO_ALIGN, MAXSIZE + 65536 + DIO_ALIGN);
	x.cmp[1] = aligned_alloc(DIO_ALIGN, MAXSIZE + 65536 + DIO_ALIGN);
	x.cmp[2] = aligned_alloc(DIO_ALIGN, MAXSIZE + 65536 + DIO_ALIGN);
	if (!x.buf || !x.cmp[0] || !x.cmp[1] || !x.cmp[2])
		return fprintf(stderr, "orfs-fsx: out of memory\n"), 1;
	for (x.step = 1; x.step <= x.steps; x.step++)
		if (one_step(&x))
			return 1;
	printf("ok %lu steps\n", x.steps);
	return 0;
}

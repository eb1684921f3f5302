// SPDX-License-Identifier: GPL-2.0-only
/*
 * log-replay: reads the log that the device mapper's log-writes target
 * kept of a device's writes, and replays it onto a copy of the device as
 * it was when logging started: the device as a power cut would have left
 * it, at the end of the log or at any earlier flush point.
 *
 *   log-replay -l LOG             list the entries, one a line
 *   log-replay -n LOG             print the number of flush points
 *   log-replay [-p N] LOG DEV     replay onto DEV, up to flush point N
 *                                 (1 is the first; default: the end)
 *   log-replay -m MARK LOG DEV    replay onto DEV, up to the mark MARK
 *                                 (dmsetup message DEV 0 mark MARK)
 *   log-replay -a LOG DEV         replay every entry, durable or not
 *
 * The log (Documentation/admin-guide/device-mapper/log-writes.rst): its
 * first block holds the super block (magic, version, the number of
 * entries, the block size); each entry follows in a block of its own
 * (the target sector and count in blocks, flags, a length of inline
 * data such as a mark's name), then the written data, one block a
 * sector, unless it is a discard. A write is logged once a flush made it
 * durable, a FUA write when it completes, and the super block's count
 * moves at each flush: entries past it were not durable yet.
 *
 * A flush point is an entry with the FLUSH or FUA flag. Replaying to
 * point N writes every entry up to the last FLUSH at or before it, then
 * the FUA writes after that FLUSH up to point N: the other writes after
 * the FLUSH had no promise yet, and a power cut may lose them all.
 *
 * Exit status: 0 done, 1 an error (named on standard error), 2 usage.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LW_MAGIC	0x6a736677736872ULL
#define LW_VERSION	1
#define LW_FLUSH	(1U << 0)
#define LW_FUA		(1U << 1)
#define LW_DISCARD	(1U << 2)
#define LW_MARK		(1U << 3)
#define LW_METADATA	(1U << 4)
#define LW_KNOWN	(LW_FLUSH | LW_FUA | LW_DISCARD | LW_MARK | LW_METADATA)
#define LW_BLOCK_MAX	65536

/* The super block and an entry's header as they are on the log, little-endian. */
struct lw_super {
	uint64_t	magic;
	uint64_t	version;
	uint64_t	nr_entries;
	uint32_t	sectorsize;
} __attribute__((packed));

struct lw_entry {
	uint64_t	sector;
	uint64_t	nr_sectors;
	uint64_t	flags;
	uint64_t	data_len;
};

/* One entry, in host order, with where its data is in the log. */
struct entry {
	uint64_t	sector, nr_sectors, flags, data_len;
	off_t		data;		/* offset of its data in the log */
	char		*mark;		/* a mark's name */
};

struct replay {
	const char	*log_path, *dev_path;
	int		log, dev;
	uint32_t	bs;		/* the log's block size */
	uint64_t	n;		/* entries counted in the super block */
	struct entry	*e;
	char		*buf;		/* one block */
};

static int fail(const char *what, const char *path)
{
	fprintf(stderr, "log-replay: %s %s: %s\n", what, path, strerror(errno));
	return -1;
}

static int read_at(struct replay *r, void *buf, size_t len, off_t off)
{
	ssize_t got = pread(r->log, buf, len, off);

	if (got == (ssize_t)len)
		return 0;
	if (got >= 0)
		errno = EIO;	/* the log ends early */
	return fail("reading", r->log_path);
}

/* The super block, then every entry it counts, into R. */
static int load(struct replay *r)
{
	struct lw_super sb;
	struct lw_entry le;
	char *head;
	off_t off;
	uint64_t i;

	if (read_at(r, &sb, sizeof(sb), 0))
		return -1;
	r->bs = le32toh(sb.sectorsize);
	r->n = le64toh(sb.nr_entries);
	if (le64toh(sb.magic) != LW_MAGIC || le64toh(sb.version) != LW_VERSION ||
	    r->bs < 512 || r->bs > LW_BLOCK_MAX || (r->bs & (r->bs - 1))) {
		fprintf(stderr, "log-replay: %s is not a log-writes log (version %d)\n",
			r->log_path, LW_VERSION);
		return -1;
	}
	r->e = calloc(r->n ? r->n : 1, sizeof(*r->e));
	r->buf = calloc(1, r->bs);
	if (!r->e || !r->buf) {
		fprintf(stderr, "log-replay: out of memory for %" PRIu64 " entries\n", r->n);
		return -1;
	}
	off = r->bs;
	for (i = 0; i < r->n; i++) {
		struct entry *e = &r->e[i];

		if (read_at(r, r->buf, r->bs, off))
			return -1;
		memcpy(&le, r->buf, sizeof(le));
		head = r->buf + sizeof(le);
		e->sector = le64toh(le.sector);
		e->nr_sectors = le64toh(le.nr_sectors);
		e->flags = le64toh(le.flags);
		e->data_len = le64toh(le.data_len);
		if ((e->flags & ~(uint64_t)LW_KNOWN) || e->data_len > r->bs - sizeof(le) ||
		    e->nr_sectors > (UINT64_MAX - (uint64_t)off) / r->bs) {
			fprintf(stderr, "log-replay: %s: entry %" PRIu64 " makes no sense (flags %#" PRIx64 ", %" PRIu64 " blocks, %" PRIu64 " bytes inline)\n",
				r->log_path, i, e->flags, e->nr_sectors, e->data_len);
			return -1;
		}
		if (e->flags & LW_MARK) {
			e->mark = strndup(head, e->data_len);
			if (!e->mark) {
				fprintf(stderr, "log-replay: out of memory\n");
				return -1;
			}
		}
		off += r->bs;
		e->data = off;
		if (!(e->flags & LW_DISCARD))
			off += (off_t)(e->nr_sectors * r->bs);
	}
	return 0;
}

static int is_point(const struct entry *e)
{
	return !!(e->flags & (LW_FLUSH | LW_FUA));
}

static void list(const struct replay *r)
{
	uint64_t i;

	printf("block %u entries %" PRIu64 "\n", r->bs, r->n);
	for (i = 0; i < r->n; i++) {
		const struct entry *e = &r->e[i];

		printf("%" PRIu64 " sector %" PRIu64 " blocks %" PRIu64 "%s%s%s%s%s%s\n", i,
		       e->sector, e->nr_sectors, e->flags & LW_FLUSH ? " flush" : "",
		       e->flags & LW_FUA ? " fua" : "", e->flags & LW_DISCARD ? " discard" : "",
		       e->flags & LW_METADATA ? " metadata" : "",
		       e->flags & LW_MARK ? " mark " : "", e->mark ? e->mark : "");
	}
}

/* Entry E onto the device: its data block by block, or zeros for a discard. */
static int apply(struct replay *r, const struct entry *e)
{
	uint64_t k;

	for (k = 0; k < e->nr_sectors; k++) {
		off_t to = (off_t)((e->sector + k) * r->bs);

		if (e->flags & LW_DISCARD)
			memset(r->buf, 0, r->bs);
		else if (read_at(r, r->buf, r->bs, e->data + (off_t)(k * r->bs)))
			return -1;
		if (pwrite(r->dev, r->buf, r->bs, to) != (ssize_t)r->bs)
			return fail("writing", r->dev_path);
	}
	return 0;
}

/*
 * Replay up to flush point POINT, or else up to mark MARK, or else to the
 * end of the log; every entry with ALL.
 */
static int replay(struct replay *r, uint64_t point, const char *mark, int all)
{
	uint64_t i, end = r->n, durable = 0, seen = 0;

	if (mark) {
		for (i = 0; i < r->n && !(r->e[i].mark && !strcmp(r->e[i].mark, mark)); i++)
			;
		if (i == r->n) {
			fprintf(stderr, "log-replay: %s has no mark '%s'\n", r->log_path, mark);
			return -1;
		}
		end = i;
	}
	if (point) {
		for (i = 0; i < r->n && seen < point; i++)
			seen += is_point(&r->e[i]);
		if (seen < point) {
			fprintf(stderr, "log-replay: %s has %" PRIu64 " flush points, not %" PRIu64 "\n",
				r->log_path, seen, point);
			return -1;
		}
		end = i;
	}
	/* Entries before DURABLE were made durable by a FLUSH (the last one's). */
	for (i = 0; i < end; i++)
		if (r->e[i].flags & LW_FLUSH)
			durable = i + 1;
	for (i = 0; i < end; i++) {
		const struct entry *e = &r->e[i];

		/* After the last FLUSH, only what FUA made durable. */
		if (!all && i >= durable && !(e->flags & LW_FUA))
			continue;
		if (e->nr_sectors && apply(r, e))
			return -1;
	}
	if (fsync(r->dev))
		return fail("syncing", r->dev_path);
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: log-replay -l LOG | -n LOG | [-p POINT | -m MARK | -a] LOG DEVICE\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct replay r = { .log = -1, .dev = -1 };
	int opt, mode = 'r', ret = 1, all = 0;
	uint64_t point = 0, i, points = 0;
	const char *mark = NULL;
	char *end;

	while ((opt = getopt(argc, argv, "alm:np:")) != -1) {
		switch (opt) {
		case 'l':
		case 'n':
			mode = opt;
			break;
		case 'a':
			all = 1;
			break;
		case 'm':
			mark = optarg;
			break;
		case 'p':
			errno = 0;
			point = strtoull(optarg, &end, 10);
			if (errno || *end || !point || optarg[0] == '-')
				return usage();
			break;
		default:
			return usage();
		}
	}
	if (argc - optind != (mode == 'r' ? 2 : 1) || (!!point + !!mark + all) > 1)
		return usage();
	r.log_path = argv[optind];
	r.log = open(r.log_path, O_RDONLY | O_CLOEXEC);
	if (r.log < 0) {
		fail("opening", r.log_path);
		goto out;
	}
	if (load(&r))
		goto out;
	switch (mode) {
	case 'l':
		list(&r);
		break;
	case 'n':
		for (i = 0; i < r.n; i++)
			points += is_point(&r.e[i]);
		printf("%" PRIu64 "\n", points);
		break;
	default:
		r.dev_path = argv[optind + 1];
		r.dev = open(r.dev_path, O_WRONLY | O_CLOEXEC);
		if (r.dev < 0) {
			fail("opening", r.dev_path);
			goto out;
		}
		if (replay(&r, point, mark, all))
			goto out;
		break;
	}
	ret = 0;
out:
	if (r.dev >= 0 && close(r.dev))
		ret = fail("closing", r.dev_path) ? 1 : ret;
	if (r.log >= 0)
		close(r.log);
	for (i = 0; r.e && i < r.n; i++)
		free(r.e[i].mark);
	free(r.e);
	free(r.buf);
	return ret;
}

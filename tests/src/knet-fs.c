// SPDX-License-Identifier: GPL-2.0-only
/*
 * knet-fs: a userspace client of the ORFS file service of orfs-server, for
 * tests and for poking at an export by hand. It connects to an export,
 * opens a session, and runs commands, one from its arguments or one a line
 * from a script (-f FILE, - for standard input), each printing one result
 * line: "ok ..." or "error NAME: text".
 *
 * Paths are walked from the export's root with LOOKUP, one component at a
 * time, as a kernel client does. File data moves the server-driven way:
 * the client's buffer is registered for remote access and named in the
 * request's segments; up to -I bytes travel inline instead. -t picks the
 * transport: RDMA (libfabric), TCP, or auto.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "orfs/uapi/orfs_proto.h"
#include "tests/src/kclient.h"

#define MSG_SIZE	8192
#define DEPTH		4
#define DATA_SIZE	(1U << 20)

struct fsc {
	struct kc_fabric	f;
	struct kc_conn		k;
	struct auth_secret	secret;		/* -K: the connection authenticates */
	struct kc_mr		mr;
	char			*mem;		/* DEPTH rx, one tx, then DATA_SIZE data */
	struct fi_context	ctx[DEPTH + 1];
	uint64_t		xid;
	uint64_t		client_id;
	uint32_t		uid, gid;
	uint32_t		groups[ORFS_MAX_GROUPS];
	uint16_t		ngroups;
	uint32_t		inline_io;	/* largest data sent inline */
	struct orfs_fh		root;
	/* The last reply. */
	uint32_t		status;
	const uint8_t		*body;
	uint32_t		body_len;
	const uint8_t		*inl;
	uint32_t		inl_len;
	uint32_t		last_len;	/* of the last request, still in the send buffer */
};

static char *rxb(struct fsc *c, int i)
{
	return c->mem + (size_t)i * MSG_SIZE;
}

static char *txb(struct fsc *c)
{
	return c->mem + (size_t)DEPTH * MSG_SIZE;
}

static char *data(struct fsc *c)
{
	return c->mem + (size_t)(DEPTH + 1) * MSG_SIZE;
}

static int post_recv(struct fsc *c, int i)
{
	return kc_recv(&c->k, &c->mr, rxb(c, i), MSG_SIZE, &c->ctx[i]);
}

/* A request under construction in the send buffer. */
struct msg {
	struct fsc	*c;
	uint32_t	len;
	uint16_t	nsegs;
	uint32_t	inl;
};

static void m_start(struct msg *m, struct fsc *c, uint16_t op)
{
	struct knet_hdr h;
	struct orfs_req r;
	int i;

	m->c = c;
	c->xid++;
	proto_hdr_init(&h, op, (uint32_t)c->xid, 0);
	memcpy(txb(c), &h, sizeof(h));
	memset(&r, 0, sizeof(r));
	r.xid = htole64(c->xid);
	r.cred.uid = htole32(c->uid);
	r.cred.gid = htole32(c->gid);
	r.cred.ngroups = htole16(c->ngroups);
	for (i = 0; i < c->ngroups; i++)
		r.cred.groups[i] = htole32(c->groups[i]);
	memcpy(txb(c) + sizeof(h), &r, sizeof(r));
	m->len = sizeof(h) + sizeof(r);
	m->nsegs = 0;
	m->inl = 0;
}

static void m_put(struct msg *m, const void *p, uint32_t n)
{
	memcpy(txb(m->c) + m->len, p, n);
	m->len += n;
}

static void m_name(struct msg *m, const char *s)
{
	m->len += (uint32_t)proto_put_name((uint8_t *)txb(m->c) + m->len, s);
}

static void m_blob(struct msg *m, const void *p, uint32_t len)
{
	m->len += (uint32_t)proto_put_blob((uint8_t *)txb(m->c) + m->len, p, len);
}

/*
 * End the body; name LEN bytes of the data buffer as one segment, which
 * the server reads (TO_SERVER) or writes.
 */
static int m_seg(struct msg *m, uint32_t len, int to_server)
{
	struct knet_hdr h;
	struct knet_seg sg;

	memcpy(&h, txb(m->c), sizeof(h));
	h.body_len = htole32(m->len - sizeof(h));
	sg = kc_seg(&m->c->k, &m->c->mr, data(m->c), data(m->c), len);
	m_put(m, &sg, sizeof(sg));
	h.nsegs = htole16(1);
	memcpy(txb(m->c), &h, sizeof(h));
	m->nsegs = 1;
	return kc_lend(&m->c->k, le32toh(h.tag), data(m->c), len, to_server);
}

/* End the body; inline data follows. */
static void m_inline(struct msg *m, const void *p, uint32_t len)
{
	struct knet_hdr h;

	memcpy(&h, txb(m->c), sizeof(h));
	h.body_len = htole32(m->len - sizeof(h));
	h.inline_len = htole32(len);
	memcpy(txb(m->c), &h, sizeof(h));
	m_put(m, p, len);
	m->inl = len;
}

/* Send and wait for the reply; returns its status (an errno), -1 if the link failed. */
static int m_call(struct msg *m)
{
	struct fsc *c = m->c;
	struct knet_hdr h;
	int got_send = 0, got_recv = 0;

	if (!m->nsegs && !m->inl)
		m_inline(m, NULL, 0);
	c->last_len = m->len;
	if (c->k.credits < 1) {
		fprintf(stderr, "knet-fs: no credit\n");
		return -1;
	}
	if (kc_send(&c->k, &c->mr, txb(c), m->len, &c->ctx[DEPTH]))
		return -1;
	c->k.credits--;
	/* 30 s for the reply; a server that closes the connection ends it now. */
	for (int waited = 0; !got_send || !got_recv;) {
		struct kc_event e;
		int n = kc_wait(&c->f, &e, 1, 100);
		int i;

		if (n == 0 && (waited += 100) < 30000)
			continue;
		if (n == 0) {
			fprintf(stderr, "knet-fs: no reply within 30 s\n");
			return -1;
		}
		if (n < 0)
			return -1;
		if (e.err == FI_ENOTCONN) {
			fprintf(stderr, "knet-fs: the server closed the connection\n");
			return -1;
		}
		if (e.err) {
			fprintf(stderr, "knet-fs: completion error: %s\n", fi_strerror(e.err));
			return -1;
		}
		if (e.ctx == &c->ctx[DEPTH]) {
			got_send = 1;
			continue;
		}
		i = (int)((struct fi_context *)e.ctx - c->ctx);
		memcpy(&h, rxb(c, i), sizeof(h));
		if (knet_hdr_check(&h, (uint32_t)e.len, 0) != KNET_HDR_OK ||
		    !(h.flags & KNET_HF_REPLY) || le32toh(h.tag) != (uint32_t)c->xid) {
			fprintf(stderr, "knet-fs: malformed reply\n");
			return -1;
		}
		c->k.credits += le16toh(h.credits);
		c->status = le32toh(h.status);
		c->body = (const uint8_t *)rxb(c, i) + sizeof(h);
		c->body_len = le32toh(h.body_len);
		c->inl = c->body + c->body_len;
		c->inl_len = le32toh(h.inline_len);
		got_recv = 1;
		/* The reply stays readable: the receive is posted again before the next call. */
		if (post_recv(c, i))
			return -1;
	}
	return (int)c->status;
}

static int call_fh(struct fsc *c, uint16_t op, const struct orfs_fh *fh, uint32_t size,
		   uint32_t flags)
{
	struct orfs_fhop_req r = { .fh = *fh, .size = htole32(size), .flags = htole32(flags) };
	struct msg m;

	m_start(&m, c, op);
	m_put(&m, &r, sizeof(r));
	return m_call(&m);
}

static int lookup(struct fsc *c, const struct orfs_fh *dir, const char *name,
		  struct orfs_entry_rep *out)
{
	struct msg m;
	int st;

	m_start(&m, c, ORFS_OP_LOOKUP);
	m_put(&m, dir, sizeof(*dir));
	m_name(&m, name);
	st = m_call(&m);
	if (!st)
		memcpy(out, c->body, sizeof(*out));
	return st;
}

/*
 * Walk PATH from the root. With PARENT, stop at the last component and
 * return it in *LAST (a pointer into a static copy of PATH).
 */
static int walk(struct fsc *c, const char *path, int parent, struct orfs_entry_rep *out,
		const char **last)
{
	static char buf[4096];
	char *p, *save = NULL, *next;
	struct orfs_entry_rep cur;
	int st;

	snprintf(buf, sizeof(buf), "%s", path);
	memset(&cur, 0, sizeof(cur));
	cur.fh = c->root;
	if (last)
		*last = NULL;
	p = strtok_r(buf, "/", &save);
	while (p) {
		next = strtok_r(NULL, "/", &save);
		if (parent && !next) {
			*last = p;
			break;
		}
		st = lookup(c, &cur.fh, p, &cur);
		if (st)
			return st;
		p = next;
	}
	if (parent && !*last)
		return EINVAL;
	*out = cur;
	if (!parent && cur.attr.mode == 0)
		return call_fh(c, ORFS_OP_GETATTR, &cur.fh, 0, 0) ? (int)c->status :
			(memcpy(&out->attr, c->body, sizeof(out->attr)), 0);
	return 0;
}

static const char *type_name(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return "file";
	case S_IFDIR: return "dir";
	case S_IFLNK: return "symlink";
	case S_IFIFO: return "fifo";
	case S_IFSOCK: return "socket";
	case S_IFCHR: return "chr";
	case S_IFBLK: return "blk";
	default: return "other";
	}
}

static void print_attr(const struct orfs_attr *a)
{
	printf("ok type=%s mode=%o size=%llu nlink=%u uid=%u gid=%u ino=%llu mtime=%llu\n",
	       type_name(le32toh(a->mode)), le32toh(a->mode) & 07777,
	       (unsigned long long)le64toh(a->size), le32toh(a->nlink), le32toh(a->uid),
	       le32toh(a->gid), (unsigned long long)le64toh(a->ino),
	       (unsigned long long)le64toh(a->mtime.sec));
}

static int make(struct fsc *c, uint16_t op, const char *path, uint32_t mode, uint32_t flags,
		const char *target)
{
	struct orfs_entry_rep dir;
	struct orfs_create_req r;
	const char *name;
	struct msg m;
	int st = walk(c, path, 1, &dir, &name);

	if (st)
		return st;
	memset(&r, 0, sizeof(r));
	r.dir = dir.fh;
	r.mode = htole32(mode);
	r.flags = htole32(flags);
	/* A character device is the null device, 1:3 (0:0 is a whiteout). */
	if (S_ISCHR(mode))
		r.rdev = htole64(1ULL << 32 | 3);
	m_start(&m, c, op);
	m_put(&m, &r, sizeof(r));
	m_name(&m, name);
	if (target)
		m_blob(&m, target, (uint32_t)strlen(target));
	st = m_call(&m);
	if (!st)
		print_attr(&((const struct orfs_entry_rep *)c->body)->attr);
	return st;
}

static int dirop(struct fsc *c, uint16_t op, const char *path)
{
	struct orfs_entry_rep dir;
	const char *name;
	struct msg m;
	int st = walk(c, path, 1, &dir, &name);

	if (st)
		return st;
	m_start(&m, c, op);
	m_put(&m, &dir.fh, sizeof(dir.fh));
	m_name(&m, name);
	st = m_call(&m);
	if (!st)
		printf("ok\n");
	return st;
}

/* Read or write LEN bytes at OFF of FH through the data buffer. */
static int io(struct fsc *c, uint16_t op, const struct orfs_fh *fh, uint64_t off, uint32_t len,
	      uint32_t flags, uint32_t *count)
{
	struct orfs_io_req r;
	struct msg m;
	int st;

	memset(&r, 0, sizeof(r));
	r.fh = *fh;
	r.offset = htole64(off);
	r.length = htole32(len);
	r.flags = htole32(flags);
	m_start(&m, c, op);
	m_put(&m, &r, sizeof(r));
	if (len <= c->inline_io && len <= c->k.inline_max)
		m_inline(&m, op == ORFS_OP_WRITE ? data(c) : NULL, op == ORFS_OP_WRITE ? len : 0);
	else if (m_seg(&m, len, op == ORFS_OP_WRITE))
		return -1;
	st = m_call(&m);
	if (st)
		return st;
	*count = le32toh(((const struct orfs_io_rep *)c->body)->count);
	if (op == ORFS_OP_READ && c->inl_len)
		memcpy(data(c), c->inl, c->inl_len);
	return 0;
}

static int cmd_put(struct fsc *c, const char *local, const char *path, uint32_t flags)
{
	struct orfs_entry_rep e;
	FILE *f = fopen(local, "rb");
	uint64_t off = 0;
	uint32_t count;
	size_t n;
	int st;

	if (!f)
		return errno;
	st = make(c, ORFS_OP_CREATE, path, 0644, 0, NULL);
	if (!st)
		st = walk(c, path, 0, &e, NULL);
	while (!st && (n = fread(data(c), 1, DATA_SIZE, f)) > 0) {
		st = io(c, ORFS_OP_WRITE, &e.fh, off, (uint32_t)n, flags, &count);
		off += count;
	}
	fclose(f);
	if (!st)
		printf("ok wrote %llu\n", (unsigned long long)off);
	return st;
}

static int cmd_get(struct fsc *c, const char *path, const char *local, uint32_t chunk)
{
	struct orfs_entry_rep e;
	FILE *f = strcmp(local, "-") ? fopen(local, "wb") : stdout;
	uint64_t off = 0;
	uint32_t count = 0;
	int st;

	if (!f)
		return errno;
	st = walk(c, path, 0, &e, NULL);
	while (!st) {
		st = io(c, ORFS_OP_READ, &e.fh, off, chunk, 0, &count);
		if (st || !count)
			break;
		if (fwrite(data(c), 1, count, f) != count)
			st = EIO;
		off += count;
	}
	if (f != stdout)
		fclose(f);
	if (!st && f != stdout)
		printf("ok read %llu\n", (unsigned long long)off);
	return st;
}

static int cmd_ls(struct fsc *c, const char *path)
{
	struct orfs_entry_rep e;
	struct orfs_readdir_req r;
	uint64_t cookie = 0;
	int st, eof = 0, total = 0, calls = 0;

	st = walk(c, path, 0, &e, NULL);
	while (!st && !eof) {
		const struct orfs_readdir_rep *rep;
		uint32_t off, k;
		struct msg m;

		memset(&r, 0, sizeof(r));
		r.dir = e.fh;
		r.cookie = htole64(cookie);
		r.max_bytes = htole32(1024);	/* small: every listing resumes by cookie */
		m_start(&m, c, ORFS_OP_READDIR);
		m_put(&m, &r, sizeof(r));
		st = m_call(&m);
		if (st)
			break;
		calls++;
		rep = (const struct orfs_readdir_rep *)c->body;
		eof = (int)le32toh(rep->eof);
		off = sizeof(*rep);
		for (k = 0; k < le32toh(rep->count); k++) {
			struct orfs_dirent d;

			memcpy(&d, c->body + off, sizeof(d));
			printf("%.*s\n", le16toh(d.name_len), (const char *)c->body + off + sizeof(d));
			cookie = le64toh(d.cookie);
			off += (uint32_t)((sizeof(d) + le16toh(d.name_len) + 7) & ~7UL);
			total++;
		}
	}
	if (!st)
		printf("ok %d entries in %d calls\n", total, calls);
	return st;
}

static void hex(const void *p, size_t n, char *out)
{
	const uint8_t *b = p;
	size_t i;

	for (i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
}

static int unhex(const char *s, void *p, size_t n)
{
	uint8_t *b = p;
	size_t i;

	if (strlen(s) != 2 * n)
		return EINVAL;
	for (i = 0; i < n; i++) {
		unsigned int v;

		if (sscanf(s + 2 * i, "%2x", &v) != 1)
			return EINVAL;
		b[i] = (uint8_t)v;
	}
	return 0;
}

/* One command; returns 0 or an errno (printed by the caller). */
static int run_cmd(struct fsc *c, int argc, char **argv)
{
	struct orfs_entry_rep e, e2;
	const char *name;
	struct msg m;
	int st;

#define ARGS(n) do { if (argc != (n)) return EINVAL; } while (0)
	if (!strcmp(argv[0], "stat")) {
		ARGS(2);
		st = walk(c, argv[1], 0, &e, NULL);
		if (!st)
			print_attr(&e.attr);
		return st;
	}
	if (!strcmp(argv[0], "ls")) {
		ARGS(2);
		return cmd_ls(c, argv[1]);
	}
	if (!strcmp(argv[0], "mkdir")) {
		ARGS(3);
		return make(c, ORFS_OP_MKDIR, argv[1], (uint32_t)strtoul(argv[2], NULL, 8), 0, NULL);
	}
	if (!strcmp(argv[0], "create")) {
		if (argc != 3 && argc != 4)
			return EINVAL;
		return make(c, ORFS_OP_CREATE, argv[1], (uint32_t)strtoul(argv[2], NULL, 8),
			    argc == 4 && !strcmp(argv[3], "excl") ? ORFS_CREATE_EXCL : 0, NULL);
	}
	if (!strcmp(argv[0], "mknod")) {
		ARGS(3);
		return make(c, ORFS_OP_MKNOD, argv[1],
			    (!strcmp(argv[2], "fifo") ? S_IFIFO : !strcmp(argv[2], "sock") ? S_IFSOCK :
			     S_IFCHR) | 0644, 0, NULL);
	}
	if (!strcmp(argv[0], "symlink")) {
		ARGS(3);
		return make(c, ORFS_OP_SYMLINK, argv[2], 0777, 0, argv[1]);
	}
	if (!strcmp(argv[0], "rm")) {
		ARGS(2);
		return dirop(c, ORFS_OP_UNLINK, argv[1]);
	}
	if (!strcmp(argv[0], "rmdir")) {
		ARGS(2);
		return dirop(c, ORFS_OP_RMDIR, argv[1]);
	}
	if (!strcmp(argv[0], "put")) {
		if (argc != 3 && argc != 4)
			return EINVAL;
		return cmd_put(c, argv[1], argv[2], argc == 4 ? ORFS_WRITE_SYNC : 0);
	}
	if (!strcmp(argv[0], "get")) {
		if (argc != 3 && argc != 4)
			return EINVAL;
		return cmd_get(c, argv[1], argv[2], argc == 4 ? (uint32_t)atoi(argv[3]) : DATA_SIZE);
	}
	if (!strcmp(argv[0], "readlink")) {
		ARGS(2);
		st = walk(c, argv[1], 0, &e, NULL);
		if (!st)
			st = call_fh(c, ORFS_OP_READLINK, &e.fh, 0, 0);
		if (!st)
			printf("ok %.*s\n", (int)(c->body_len - 4), (const char *)c->body + 4);
		return st;
	}
	if (!strcmp(argv[0], "mv")) {
		struct orfs_rename_req r;
		const char *newname;
		char oldname[256];

		if (argc != 3 && argc != 4)
			return EINVAL;
		st = walk(c, argv[1], 1, &e, &name);
		if (st)
			return st;
		snprintf(oldname, sizeof(oldname), "%s", name);
		st = walk(c, argv[2], 1, &e2, &newname);
		if (st)
			return st;
		memset(&r, 0, sizeof(r));
		r.olddir = e.fh;
		r.newdir = e2.fh;
		if (argc == 4)
			r.flags = htole32(!strcmp(argv[3], "noreplace") ? ORFS_RENAME_NOREPLACE :
					  !strcmp(argv[3], "exchange") ? ORFS_RENAME_EXCHANGE : 0xff);
		m_start(&m, c, ORFS_OP_RENAME);
		m_put(&m, &r, sizeof(r));
		m_name(&m, oldname);
		m_name(&m, newname);
		st = m_call(&m);
		if (!st)
			printf("ok\n");
		return st;
	}
	if (!strcmp(argv[0], "link")) {
		struct orfs_link_req r;

		ARGS(3);
		st = walk(c, argv[1], 0, &e, NULL);
		if (!st)
			st = walk(c, argv[2], 1, &e2, &name);
		if (st)
			return st;
		r.fh = e.fh;
		r.dir = e2.fh;
		m_start(&m, c, ORFS_OP_LINK);
		m_put(&m, &r, sizeof(r));
		m_name(&m, name);
		st = m_call(&m);
		if (!st)
			print_attr((const struct orfs_attr *)c->body);
		return st;
	}
	if (!strcmp(argv[0], "chmod") || !strcmp(argv[0], "truncate") ||
	    !strcmp(argv[0], "utime") || !strcmp(argv[0], "chown")) {
		struct orfs_setattr_req r;

		if (argc != (strcmp(argv[0], "chown") ? 3 : 4))
			return EINVAL;
		st = walk(c, argv[argc - 1], 0, &e, NULL);
		if (st)
			return st;
		memset(&r, 0, sizeof(r));
		r.fh = e.fh;
		if (argv[0][1] == 'h' && argv[0][2] == 'm') {
			r.valid = htole32(ORFS_SET_MODE);
			r.mode = htole32((uint32_t)strtoul(argv[1], NULL, 8));
		} else if (argv[0][0] == 't') {
			r.valid = htole32(ORFS_SET_SIZE);
			r.size = htole64(strtoull(argv[1], NULL, 0));
		} else if (argv[0][0] == 'u') {
			r.valid = htole32(ORFS_SET_MTIME | ORFS_SET_ATIME);
			r.mtime.sec = r.atime.sec = htole64(strtoull(argv[1], NULL, 0));
		} else {
			r.valid = htole32(ORFS_SET_UID | ORFS_SET_GID);
			r.uid = htole32((uint32_t)atoi(argv[1]));
			r.gid = htole32((uint32_t)atoi(argv[2]));
		}
		m_start(&m, c, ORFS_OP_SETATTR);
		m_put(&m, &r, sizeof(r));
		st = m_call(&m);
		if (!st)
			print_attr((const struct orfs_attr *)c->body);
		return st;
	}
	if (!strcmp(argv[0], "statfs")) {
		const struct orfs_statfs_rep *sf;

		ARGS(1);
		st = call_fh(c, ORFS_OP_STATFS, &c->root, 0, 0);
		sf = (const struct orfs_statfs_rep *)c->body;
		if (!st)
			printf("ok bsize=%u blocks=%llu bfree=%llu files=%llu namelen=%u\n",
			       le32toh(sf->bsize), (unsigned long long)le64toh(sf->blocks),
			       (unsigned long long)le64toh(sf->bfree),
			       (unsigned long long)le64toh(sf->files), le32toh(sf->namelen));
		return st;
	}
	if (!strcmp(argv[0], "fsync")) {
		ARGS(2);
		st = walk(c, argv[1], 0, &e, NULL);
		if (!st)
			st = call_fh(c, ORFS_OP_FSYNC, &e.fh, 0, 0);
		if (!st)
			printf("ok\n");
		return st;
	}
	if (!strcmp(argv[0], "setxattr") || !strcmp(argv[0], "getxattr") ||
	    !strcmp(argv[0], "rmxattr") || !strcmp(argv[0], "listxattr")) {
		struct orfs_fhop_req r;
		int set = argv[0][0] == 's', list = argv[0][0] == 'l';

		if (argc != (set ? 4 : list ? 2 : 3))
			return EINVAL;
		st = walk(c, argv[1], 0, &e, NULL);
		if (st)
			return st;
		memset(&r, 0, sizeof(r));
		r.fh = e.fh;
		r.size = htole32(4000);
		m_start(&m, c, set ? ORFS_OP_SETXATTR : list ? ORFS_OP_LISTXATTR :
			 argv[0][0] == 'g' ? ORFS_OP_GETXATTR : ORFS_OP_REMOVEXATTR);
		m_put(&m, &r, sizeof(r));
		if (!list)
			m_name(&m, argv[2]);
		if (set)
			m_blob(&m, argv[3], (uint32_t)strlen(argv[3]));
		st = m_call(&m);
		if (st)
			return st;
		if (argv[0][0] == 'g') {
			printf("ok %.*s\n", (int)le32toh(((const struct orfs_xattr_rep *)c->body)->size),
			       (const char *)c->body + 8);
		} else if (list) {
			uint32_t n = le32toh(((const struct orfs_xattr_rep *)c->body)->size), i;

			printf("ok");
			for (i = 0; i < n; i += (uint32_t)strlen((const char *)c->body + 8 + i) + 1)
				printf(" %s", (const char *)c->body + 8 + i);
			printf("\n");
		} else {
			printf("ok\n");
		}
		return 0;
	}
	if (!strcmp(argv[0], "fh")) {
		char out[2 * ORFS_FH_SIZE + 1];

		ARGS(2);
		st = walk(c, argv[1], 0, &e, NULL);
		if (!st) {
			hex(&e.fh, sizeof(e.fh), out);
			printf("ok %s\n", out);
		}
		return st;
	}
	if (!strcmp(argv[0], "stat-fh")) {
		ARGS(2);
		if (unhex(argv[1], &e.fh, sizeof(e.fh)))
			return EINVAL;
		st = call_fh(c, ORFS_OP_GETATTR, &e.fh, 0, 0);
		if (!st)
			print_attr((const struct orfs_attr *)c->body);
		return st;
	}
	if (!strcmp(argv[0], "raw-lookup")) {
		/* No client-side checks: what a hostile client could send. */
		ARGS(2);
		st = lookup(c, &c->root, argv[1], &e);
		if (!st)
			print_attr(&e.attr);
		return st;
	}
	if (!strcmp(argv[0], "again")) {
		/* A retransmission: the last request again, byte for byte. */
		ARGS(1);
		m.c = c;
		m.len = c->last_len;
		m.nsegs = 0;
		m.inl = 1;	/* already complete */
		st = m_call(&m);
		if (!st && c->body_len >= sizeof(struct orfs_entry_rep))
			print_attr(&((const struct orfs_entry_rep *)c->body)->attr);
		else if (!st)
			printf("ok\n");
		return st;
	}
	if (!strcmp(argv[0], "as")) {
		ARGS(3);
		c->uid = (uint32_t)atoi(argv[1]);
		c->gid = (uint32_t)atoi(argv[2]);
		printf("ok\n");
		return 0;
	}
	return EINVAL;
#undef ARGS
}

static const char *errname(int e)
{
	static const struct { int e; const char *n; } names[] = {
		{ ENOENT, "ENOENT" }, { EEXIST, "EEXIST" }, { EACCES, "EACCES" }, { EPERM, "EPERM" },
		{ EINVAL, "EINVAL" }, { ENOTDIR, "ENOTDIR" }, { EISDIR, "EISDIR" },
		{ ENOTEMPTY, "ENOTEMPTY" }, { EROFS, "EROFS" }, { ESTALE, "ESTALE" },
		{ EXDEV, "EXDEV" }, { ELOOP, "ELOOP" }, { ENODATA, "ENODATA" },
		{ EOPNOTSUPP, "EOPNOTSUPP" }, { ENAMETOOLONG, "ENAMETOOLONG" }, { ENOSPC, "ENOSPC" },
		{ EINPROGRESS, "EINPROGRESS" }, { EBADMSG, "EBADMSG" },
	};
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].e == e)
			return names[i].n;
	return "E?";
}

/* One step of the authentication (kc_auth()): a bare KNET_OP_AUTH request. */
static int auth_call(void *ctx, const void *body, uint32_t len, void *rep, uint32_t *rep_len)
{
	struct fsc *c = ctx;
	struct knet_hdr h;
	struct msg m;
	int st;

	m.c = c;
	c->xid++;
	proto_hdr_init(&h, KNET_OP_AUTH, (uint32_t)c->xid, 0);
	memcpy(txb(c), &h, sizeof(h));
	m.len = sizeof(h);
	m.nsegs = 0;
	m.inl = 0;
	m_put(&m, body, len);
	st = m_call(&m);
	*rep_len = 0;
	if (st >= 0 && c->body_len <= sizeof(struct knet_auth_rep)) {
		memcpy(rep, c->body, c->body_len);
		*rep_len = c->body_len;
	}
	return st;
}

static int open_fsc(struct fsc *c, enum kc_transport tr, const char *addr, const char *port,
		    const char *prov, const char *name)
{
	size_t size = (size_t)(DEPTH + 1) * MSG_SIZE + DATA_SIZE;
	struct orfs_session_req s = { htole64(c->client_id) };
	struct orfs_entry_rep rep;
	struct msg m;
	int ret, i;

	if (kc_open(&c->f, tr, addr, port, prov, 32) || kc_ep_open(&c->f, &c->k, NULL, 8, DEPTH))
		return 1;
	if (posix_memalign((void **)&c->mem, 4096, size))
		return 1;
	if (kc_mr_reg(&c->f, &c->mr, c->mem, size, 1))
		return 1;
	for (i = 0; i < DEPTH; i++)
		if (post_recv(c, i))
			return 1;
	ret = kc_connect(&c->f, &c->k, KNET_PROTO_VERSION, KNET_SVC_FILE, name, DEPTH,
			 MSG_SIZE - sizeof(struct knet_hdr), &c->secret, 0);
	if (ret)
		return ret;
	if (c->k.auth) {
		ret = kc_auth(&c->secret, KNET_SVC_FILE, name, auth_call, c);
		if (ret)
			return ret < 0 ? 1 : 3;
	}
	m_start(&m, c, ORFS_OP_SESSION);
	m_put(&m, &s, sizeof(s));
	if (m_call(&m)) {
		fprintf(stderr, "knet-fs: session: %s\n", strerror((int)c->status));
		return 1;
	}
	m_start(&m, c, ORFS_OP_GETROOT);
	if (m_call(&m)) {
		fprintf(stderr, "knet-fs: getroot: %s\n", strerror((int)c->status));
		return 1;
	}
	memcpy(&rep, c->body, sizeof(rep));
	c->root = rep.fh;
	return 0;
}

int main(int argc, char **argv)
{
	const char *addr = NULL, *name = NULL, *script = NULL, *prov = "verbs", *secret = NULL;
	static struct fsc c;
	char port[16], line[4096];
	enum kc_transport tr = KC_RDMA;
	int opt, ret = 0, i;

	snprintf(port, sizeof(port), "%d", KNET_DEFAULT_PORT);
	c.client_id = (uint64_t)time(NULL) * 2654435761u ^ (uint64_t)getpid();
	c.inline_io = 4096;
	if (kc_transport_env(&tr))
		return 2;
	while ((opt = getopt(argc, argv, "a:p:n:u:g:f:c:I:P:K:t:h")) != -1) {
		switch (opt) {
		case 'a': addr = optarg; break;
		case 'p': snprintf(port, sizeof(port), "%s", optarg); break;
		case 'n': name = optarg; break;
		case 'u': c.uid = (uint32_t)atoi(optarg); break;
		case 'g': c.gid = (uint32_t)atoi(optarg); break;
		case 'f': script = optarg; break;
		case 'c': c.client_id = strtoull(optarg, NULL, 0); break;
		case 'I': c.inline_io = (uint32_t)atoi(optarg); break;
		case 'P': prov = optarg; break;
		case 'K': secret = optarg; break;
		case 't':
			if (kc_transport_parse(optarg, &tr))
				return 2;
			break;
		case 'h':
		default:
			fprintf(opt == 'h' ? stdout : stderr,
				"usage: knet-fs -a ADDRESS -n EXPORT [-u UID] [-g GID] [-c CLIENT_ID] [-I INLINE] [-K SECRET_FILE]\n"
				"               [-t rdma|tcp|auto] [-P PROVIDER]\n"
				"               (-f SCRIPT | COMMAND [ARG]...)\n");
			return opt == 'h' ? 0 : 2;
		}
	}
	if (!addr || !name || (!script && optind == argc)) {
		fprintf(stderr, "knet-fs: -a, -n and a command or -f are needed\n");
		return 2;
	}
	if (kc_load_secret(secret, &c.secret))
		return 2;
	ret = open_fsc(&c, tr, addr, port, prov, name);
	if (ret)
		goto out;
	if (!script) {
		ret = run_cmd(&c, argc - optind, argv + optind);
		if (ret > 0)
			printf("error %s: %s\n", errname(ret), strerror(ret));
		ret = ret ? 1 : 0;
		goto out;
	}
	{
		FILE *f = strcmp(script, "-") ? fopen(script, "r") : stdin;

		if (!f) {
			perror(script);
			ret = 2;
			goto out;
		}
		while (fgets(line, sizeof(line), f)) {
			char *words[8], *save = NULL, *w;
			int n = 0;

			for (w = strtok_r(line, " \t\n", &save); w && n < 8;
			     w = strtok_r(NULL, " \t\n", &save))
				words[n++] = w;
			if (!n || words[0][0] == '#')
				continue;
			printf("> ");
			for (i = 0; i < n; i++)
				printf("%s%s", words[i], i == n - 1 ? "\n" : " ");
			i = run_cmd(&c, n, words);
			if (i < 0) {
				ret = 1;
				break;
			}
			if (i)
				printf("error %s: %s\n", errname(i), strerror(i));
			fflush(stdout);
		}
		if (f != stdin)
			fclose(f);
	}
out:
	kc_ep_close(&c.k);
	kc_mr_close(&c.mr);
	kc_close(&c.f);
	free(c.mem);
	return ret;
}

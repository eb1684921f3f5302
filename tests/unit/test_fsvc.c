// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests of the file service (server/fsvc.c): requests are built as a
 * client would, decoded and executed on a scratch export. Needs root (file
 * handles and credential switching), as the server does.
 */
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "server/fdcache.h"
#include "server/fsvc.h"
#include "server/proto.h"
#include "tests/unit/unit.h"

static char root[] = "/var/tmp/orfs-unit-fsXXXXXX";
static struct fsvc_export fx = { .root_fd = -1 }, fx_ro = { .root_fd = -1 },
			  fx_sq = { .root_fd = -1 }, fx_other = { .root_fd = -1 };
static const uint8_t key[16] = "0123456789abcdef";

/* ---- a client's request builder -------------------------------------- */

struct rb {
	uint8_t		buf[8192];
	uint32_t	len;
	uint32_t	inl;
};

static void rb_start(struct rb *b, uint16_t op, uint32_t uid, uint32_t gid)
{
	struct knet_hdr h;
	struct orfs_req r;

	memset(b, 0, sizeof(*b));
	proto_hdr_init(&h, op, 1, 0);
	memcpy(b->buf, &h, sizeof(h));
	memset(&r, 0, sizeof(r));
	r.xid = htole64(7);
	r.cred.uid = htole32(uid);
	r.cred.gid = htole32(gid);
	memcpy(b->buf + sizeof(h), &r, sizeof(r));
	b->len = sizeof(h) + sizeof(r);
}

/* The request is made with the supplementary group G too. */
static void rb_group(struct rb *b, uint32_t g)
{
	struct orfs_req r;

	memcpy(&r, b->buf + sizeof(struct knet_hdr), sizeof(r));
	r.cred.ngroups = htole16(1);
	r.cred.groups[0] = htole32(g);
	memcpy(b->buf + sizeof(struct knet_hdr), &r, sizeof(r));
}

static void rb_put(struct rb *b, const void *p, uint32_t n)
{
	if (n)		/* memcpy() from NULL is undefined, even of nothing */
		memcpy(b->buf + b->len, p, n);
	b->len += n;
}

static void rb_name(struct rb *b, const char *s)
{
	b->len += (uint32_t)proto_put_name(b->buf + b->len, s);
}

static void rb_blob(struct rb *b, const void *p, uint32_t len)
{
	b->len += (uint32_t)proto_put_blob(b->buf + b->len, p, len);
}

/* Close the body; INL bytes of inline data follow it. */
static void rb_inline(struct rb *b, const void *p, uint32_t n)
{
	struct knet_hdr h;

	memcpy(&h, b->buf, sizeof(h));
	h.body_len = htole32(b->len - sizeof(h));
	h.inline_len = htole32(n);
	memcpy(b->buf, &h, sizeof(h));
	rb_put(b, p, n);
}

/*
 * Decode and execute with *FD as the directory kept open (-1: none); the
 * reply body lands in OUT. The thread stays in the request's credentials,
 * as a worker does. Returns the errno.
 */
/* The change counts the requests see (NULL: none, the ctime alone). */
static struct fsvc_chg *test_chg;
/* The write verifier the requests see. */
static _Atomic uint64_t test_verf;

static int exec_fd(const struct fsvc_export *x, struct rb *b, int *fd, void *out,
		   uint32_t *out_len)
{
	static uint8_t scratch[8192];
	struct fsvc_req rq;
	uint32_t n;
	int err;

	if (!le32toh(((struct knet_hdr *)b->buf)->body_len))
		rb_inline(b, NULL, 0);
	CU_ASSERT_EQUAL_FATAL(knet_hdr_check((struct knet_hdr *)b->buf, b->len, KNET_MAX_SEGS),
			      KNET_HDR_OK);
	err = fsvc_decode(x, b->buf, b->len, 4096, &rq);
	if (err)
		return err;
	rq.chg = test_chg;
	rq.verf = &test_verf;
	return fsvc_execute(x, &rq, fd, out ? out : scratch, 4352, out_len ? out_len : &n);
}

/* Execute with nothing kept open; the thread is root again afterwards. */
static int run(const struct fsvc_export *x, struct rb *b, void *out, uint32_t *out_len)
{
	int fd = -1, err = exec_fd(x, b, &fd, out, out_len);

	if (fd >= 0)
		close(fd);
	CU_ASSERT_EQUAL_FATAL(fsvc_cred_reset(), 0);
	return err;
}

/* ---- helpers for common calls ----------------------------------------- */

static struct orfs_fh rootfh(const struct fsvc_export *x)
{
	struct orfs_entry_rep rep;
	struct rb b;
	uint32_t n;

	rb_start(&b, ORFS_OP_GETROOT, 0, 0);
	CU_ASSERT_EQUAL(run(x, &b, &rep, &n), 0);
	CU_ASSERT_EQUAL(n, sizeof(rep));
	return rep.fh;
}

static int create(const struct fsvc_export *x, uint16_t op, const struct orfs_fh *dir,
		  const char *name, uint32_t mode, uint32_t uid, struct orfs_entry_rep *rep)
{
	struct orfs_create_req c;
	struct rb b;
	uint32_t n;

	memset(&c, 0, sizeof(c));
	c.dir = *dir;
	c.mode = htole32(mode);
	rb_start(&b, op, uid, uid);
	rb_put(&b, &c, sizeof(c));
	rb_name(&b, name);
	if (op == ORFS_OP_SYMLINK)
		rb_blob(&b, "/etc", 4);
	return run(x, &b, rep, &n);
}

static int lookup(const struct fsvc_export *x, const struct orfs_fh *dir, const char *name,
		  uint32_t uid, struct orfs_entry_rep *rep)
{
	struct rb b;
	uint32_t n;

	rb_start(&b, ORFS_OP_LOOKUP, uid, uid);
	rb_put(&b, dir, sizeof(*dir));
	rb_name(&b, name);
	return run(x, &b, rep, &n);
}

static int dirop(uint16_t op, const struct orfs_fh *dir, const char *name)
{
	struct rb b;

	rb_start(&b, op, 0, 0);
	rb_put(&b, dir, sizeof(*dir));
	rb_name(&b, name);
	return run(&fx, &b, NULL, NULL);
}

/* ---- suite ------------------------------------------------------------ */

static int setup(void)
{
	char p[256];

	if (geteuid() != 0) {
		fprintf(stderr, "the file service tests need root, as the server does\n");
		return -1;
	}
	umask(0);
	if (!mkdtemp(root) || chmod(root, 0755))
		return -1;
	if (fsvc_export_open(&fx, "data", root, 0, 0, key, 1) ||
	    fsvc_export_open(&fx_ro, "data", root, 1, 0, key, 1) ||
	    fsvc_export_open(&fx_sq, "data", root, 0, 1, key, 1) ||
	    fsvc_export_open(&fx_other, "other", root, 0, 0, key, 1))
		return -1;
	snprintf(p, sizeof(p), "%s/pub", root);
	if (mkdir(p, 01777))
		return -1;
	return 0;
}

static int teardown(void)
{
	char cmd[300];

	fsvc_export_close(&fx);
	fsvc_export_close(&fx_ro);
	fsvc_export_close(&fx_sq);
	fsvc_export_close(&fx_other);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	return system(cmd) ? -1 : 0;
}

static void test_handles(void)
{
	struct orfs_fh r = rootfh(&fx), bad;
	struct orfs_entry_rep e, e2;

	CU_ASSERT_EQUAL(create(&fx, ORFS_OP_CREATE, &r, "f1", 0644, 0, &e), 0);
	CU_ASSERT_EQUAL(le32toh(e.attr.mode), S_IFREG | 0644);
	CU_ASSERT_EQUAL(lookup(&fx, &r, "f1", 0, &e2), 0);
	CU_ASSERT_EQUAL(memcmp(&e.fh, &e2.fh, sizeof(e.fh)), 0);	/* stable */
	CU_ASSERT_EQUAL(le64toh(e2.attr.ino), le64toh(e.attr.ino));
	/* A flipped bit anywhere, or another export's name: stale. */
	bad = e.fh;
	bad.data[10] ^= 1;
	CU_ASSERT_EQUAL(lookup(&fx, &bad, "x", 0, &e2), ESTALE);
	bad = e.fh;
	bad.data[60] ^= 0x80;
	CU_ASSERT_EQUAL(lookup(&fx, &bad, "x", 0, &e2), ESTALE);
	CU_ASSERT_EQUAL(lookup(&fx_other, &r, "f1", 0, &e2), ESTALE);
	/*
	 * The same name (and key) given to another directory, as a reload
	 * that re-points or narrows an export does: the old handles, of its
	 * old root and of a directory beneath, open no more.
	 */
	{
		struct fsvc_export moved = { .root_fd = -1 };
		struct orfs_entry_rep pub;
		struct orfs_fh mr;
		char p[300];

		CU_ASSERT_EQUAL(lookup(&fx, &r, "pub", 0, &pub), 0);
		snprintf(p, sizeof(p), "%s/pub", root);
		CU_ASSERT_EQUAL_FATAL(fsvc_export_open(&moved, "data", p, 0, 0, key, 1), 0);
		CU_ASSERT_EQUAL(lookup(&moved, &r, "f1", 0, &e2), ESTALE);
		CU_ASSERT_EQUAL(lookup(&moved, &pub.fh, "x", 0, &e2), ESTALE);
		mr = rootfh(&moved);
		CU_ASSERT_EQUAL(lookup(&moved, &mr, "x", 0, &e2), ENOENT);
		fsvc_export_close(&moved);
	}
	/* Not a directory. */
	CU_ASSERT_EQUAL(lookup(&fx, &e.fh, "x", 0, &e2), ENOTDIR);
	CU_ASSERT_EQUAL(lookup(&fx, &r, "nosuch", 0, &e2), ENOENT);
	CU_ASSERT_EQUAL(dirop(ORFS_OP_UNLINK, &r, "f1"), 0);
	/* The handle of a removed file is stale. */
	CU_ASSERT_EQUAL(create(&fx, ORFS_OP_CREATE, &e.fh, "y", 0644, 0, &e2), ESTALE);
}

static int getattr(const struct fsvc_export *x, const struct orfs_fh *fh)
{
	struct orfs_fhop_req q = { .fh = *fh };
	struct orfs_attr a;
	struct rb b;
	uint32_t n;

	rb_start(&b, ORFS_OP_GETATTR, 0, 0);
	rb_put(&b, &q, sizeof(q));
	return run(x, &b, &a, &n);
}

/* "mkdir -p" of ROOT/REL. */
static void mkdirs(const char *rel)
{
	char p[300];

	snprintf(p, sizeof(p), "mkdir -p '%s/%s'", root, rel);
	CU_ASSERT_EQUAL_FATAL(system(p), 0);
}

/*
 * An attacker who holds the handle key forges handles for files outside
 * the export, on the export's file system. A directory's handle never
 * opens outside; on a subtree_check export nothing does: a file's handle
 * opens only while the file is beneath the export.
 */
static void test_subtree_check(void)
{
	struct fsvc_export plain = { .root_fd = -1 }, checked = { .root_fd = -1 };
	struct orfs_entry_rep a, f, b, g, d;
	struct orfs_fh r, forged_dir, forged_file, bare;
	char p[300];
	int out;

	mkdirs("st/in");
	mkdirs("st/out/d");
	snprintf(p, sizeof(p), "%s/st/out/secret", root);
	out = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	CU_ASSERT_FATAL(out >= 0);
	close(out);
	snprintf(p, sizeof(p), "%s/st/in", root);
	CU_ASSERT_EQUAL_FATAL(fsvc_export_open(&plain, "st", p, 0, 0, key, 1), 0);
	CU_ASSERT_EQUAL_FATAL(fsvc_export_open(&checked, "st", p, 0, 0, key, 1), 0);
	checked.subtree_check = 1;
	snprintf(p, sizeof(p), "%s/st/out", root);
	out = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CU_ASSERT_FATAL(out >= 0);

	/* Without subtree_check: a directory outside is refused, a file is not. */
	CU_ASSERT_EQUAL(fsvc_make_fh(&plain, out, "d", &forged_dir), 0);
	CU_ASSERT_EQUAL(fsvc_make_fh(&plain, out, "secret", &forged_file), 0);
	CU_ASSERT_EQUAL(getattr(&plain, &forged_dir), ESTALE);
	CU_ASSERT_EQUAL(lookup(&plain, &forged_dir, "x", 0, &a), ESTALE);
	CU_ASSERT_EQUAL(getattr(&plain, &forged_file), 0);

	/* With it: neither, whatever directory the forged handle names. */
	CU_ASSERT_EQUAL(fsvc_make_fh(&checked, out, "d", &forged_dir), 0);
	CU_ASSERT_EQUAL(fsvc_make_fh(&checked, out, "secret", &forged_file), 0);
	CU_ASSERT_EQUAL(getattr(&checked, &forged_dir), ESTALE);
	CU_ASSERT_EQUAL(getattr(&checked, &forged_file), ESTALE);
	CU_ASSERT_EQUAL(fsvc_make_fh(&checked, out, "", &forged_dir), 0);
	CU_ASSERT_EQUAL(getattr(&checked, &forged_dir), ESTALE);
	snprintf(p, sizeof(p), "%s/st/out/secret", root);
	out = open(p, O_RDONLY | O_CLOEXEC);
	CU_ASSERT_FATAL(out >= 0);
	CU_ASSERT_EQUAL(fsvc_make_fh(&checked, out, "", &bare), 0);	/* no directory in it */
	CU_ASSERT_EQUAL(getattr(&checked, &bare), ESTALE);
	close(out);

	/* What the server hands out works: files, links, directories. */
	r = rootfh(&checked);
	CU_ASSERT_EQUAL(getattr(&checked, &r), 0);
	CU_ASSERT_EQUAL(create(&checked, ORFS_OP_MKDIR, &r, "a", 0755, 0, &a), 0);
	CU_ASSERT_EQUAL(create(&checked, ORFS_OP_MKDIR, &r, "b", 0755, 0, &b), 0);
	CU_ASSERT_EQUAL(create(&checked, ORFS_OP_CREATE, &a.fh, "f", 0644, 0, &f), 0);
	CU_ASSERT_EQUAL(getattr(&checked, &f.fh), 0);
	CU_ASSERT_EQUAL(lookup(&checked, &a.fh, "f", 0, &d), 0);
	CU_ASSERT_EQUAL(memcmp(&d.fh, &f.fh, sizeof(d.fh)), 0);
	CU_ASSERT_EQUAL(create(&checked, ORFS_OP_MKDIR, &a.fh, "sub", 0755, 0, &d), 0);
	CU_ASSERT_EQUAL(getattr(&checked, &d.fh), 0);
	/* A second link in b: its handle names b, found by a walk of b. */
	snprintf(p, sizeof(p), "%s/st/in/a/f", root);
	{
		char q[300];

		snprintf(q, sizeof(q), "%s/st/in/b/g", root);
		CU_ASSERT_EQUAL_FATAL(link(p, q), 0);
	}
	CU_ASSERT_EQUAL(lookup(&checked, &b.fh, "g", 0, &g), 0);
	CU_ASSERT_NOT_EQUAL(memcmp(&g.fh, &f.fh, sizeof(g.fh)), 0);
	CU_ASSERT_EQUAL(getattr(&checked, &g.fh), 0);
	CU_ASSERT_EQUAL(getattr(&checked, &f.fh), 0);
	/* Moved out of the export, by either link: stale, however it is named. */
	CU_ASSERT_EQUAL(unlink(p), 0);
	CU_ASSERT_EQUAL(getattr(&checked, &f.fh), 0);	/* b/g is still beneath */
	snprintf(p, sizeof(p), "%s/st/in/b/g", root);
	{
		char q[300];

		snprintf(q, sizeof(q), "%s/st/out/g", root);
		CU_ASSERT_EQUAL_FATAL(rename(p, q), 0);
	}
	CU_ASSERT_EQUAL(getattr(&checked, &f.fh), ESTALE);
	CU_ASSERT_EQUAL(getattr(&checked, &g.fh), ESTALE);
	CU_ASSERT_EQUAL(getattr(&plain, &g.fh), 0);	/* the seal is the same: only the check */
	/* A handle with a bit flipped in the directory part is refused by the seal. */
	bare = g.fh;
	bare.data[20] ^= 1;
	CU_ASSERT_EQUAL(getattr(&checked, &bare), ESTALE);

	fsvc_export_close(&plain);
	fsvc_export_close(&checked);
}

static void test_containment(void)
{
	struct orfs_fh r = rootfh(&fx);
	struct orfs_entry_rep e, e2;
	struct rb b;

	/* Names that are not one component never reach the file system. */
	CU_ASSERT_EQUAL(lookup(&fx, &r, "..", 0, &e), EINVAL);
	CU_ASSERT_EQUAL(lookup(&fx, &r, ".", 0, &e), EINVAL);
	CU_ASSERT_EQUAL(lookup(&fx, &r, "a/b", 0, &e), EINVAL);
	CU_ASSERT_EQUAL(lookup(&fx, &r, "/etc", 0, &e), EINVAL);
	CU_ASSERT_EQUAL(create(&fx, ORFS_OP_CREATE, &r, "../escape", 0644, 0, &e), EINVAL);
	rb_start(&b, ORFS_OP_LOOKUP, 0, 0);
	rb_put(&b, &r, sizeof(r));
	rb_name(&b, "a");
	b.buf[b.len - 1] = '\0';	/* a NUL inside the name */
	CU_ASSERT_EQUAL(run(&fx, &b, &e, NULL), EINVAL);

	/* A symlink to /etc is looked up as itself and never followed. */
	CU_ASSERT_EQUAL(create(&fx, ORFS_OP_SYMLINK, &r, "etc", 0777, 0, &e), 0);
	CU_ASSERT_TRUE(S_ISLNK(le32toh(e.attr.mode)));
	CU_ASSERT_EQUAL(lookup(&fx, &r, "etc", 0, &e2), 0);
	CU_ASSERT_TRUE(S_ISLNK(le32toh(e2.attr.mode)));
	CU_ASSERT_NOT_EQUAL(lookup(&fx, &e2.fh, "passwd", 0, &e), 0);
	CU_ASSERT_NOT_EQUAL(create(&fx, ORFS_OP_CREATE, &e2.fh, "owned", 0644, 0, &e), 0);
	CU_ASSERT_EQUAL(access("/etc/owned", F_OK), -1);
	CU_ASSERT_EQUAL(dirop(ORFS_OP_UNLINK, &r, "etc"), 0);
}

static void test_namespace_ops(void)
{
	struct orfs_fh r = rootfh(&fx);
	struct orfs_entry_rep d, f, g, l;
	struct orfs_rename_req rn;
	struct orfs_link_req lk;
	struct rb b;
	uint8_t out[4352];
	uint32_t n;

	CU_ASSERT_EQUAL(create(&fx, ORFS_OP_MKDIR, &r, "dir", 0755, 0, &d), 0);
	CU_ASSERT_TRUE(S_ISDIR(le32toh(d.attr.mode)));
	CU_ASSERT_EQUAL(create(&fx, ORFS_OP_MKDIR, &r, "dir", 0755, 0, &d), EEXIST);
	CU_ASSERT_EQUAL(create(&fx, ORFS_OP_CREATE, &d.fh, "a", 0600, 0, &f), 0);
	CU_ASSERT_EQUAL(create(&fx, ORFS_OP_CREATE, &d.fh, "a", 0600, 0, &g), 0);	/* not EXCL */
	CU_ASSERT_EQUAL(memcmp(&f.fh, &g.fh, sizeof(f.fh)), 0);
	CU_ASSERT_EQUAL(create(&fx, ORFS_OP_CREATE, &d.fh, "b", 0600, 0, &g), 0);
	CU_ASSERT_EQUAL(create(&fx, ORFS_OP_MKNOD, &d.fh, "fifo", S_IFIFO | 0600, 0, &l), 0);
	CU_ASSERT_TRUE(S_ISFIFO(le32toh(l.attr.mode)));
	CU_ASSERT_EQUAL(create(&fx, ORFS_OP_MKNOD, &d.fh, "sock", S_IFSOCK | 0600, 0, &l), 0);
	CU_ASSERT_EQUAL(create(&fx, ORFS_OP_MKNOD, &d.fh, "dev", S_IFDIR | 0600, 0, &l), EPERM);

	/* Symlink and readlink. */
	CU_ASSERT_EQUAL(create(&fx, ORFS_OP_SYMLINK, &d.fh, "ln", 0777, 0, &l), 0);
	rb_start(&b, ORFS_OP_READLINK, 0, 0);
	{
		struct orfs_fhop_req fo = { .fh = l.fh };

		rb_put(&b, &fo, sizeof(fo));
	}
	CU_ASSERT_EQUAL(run(&fx, &b, out, &n), 0);
	CU_ASSERT_EQUAL(n, 4 + 4);
	CU_ASSERT_EQUAL(memcmp(out + 4, "/etc", 4), 0);
	/* A symlink's own times are set (touch -h), never its target's; it has no mode. */
	{
		struct orfs_setattr_req sa;
		struct stat st, etc;
		char p[64];

		CU_ASSERT_EQUAL_FATAL(stat("/etc", &etc), 0);
		memset(&sa, 0, sizeof(sa));
		sa.fh = l.fh;
		sa.valid = htole32(ORFS_SET_MTIME | ORFS_SET_ATIME);
		sa.mtime.sec = htole64(1000000000);
		sa.atime.sec = htole64(1000000001);
		rb_start(&b, ORFS_OP_SETATTR, 0, 0);
		rb_put(&b, &sa, sizeof(sa));
		CU_ASSERT_EQUAL(run(&fx, &b, out, &n), 0);
		CU_ASSERT_EQUAL(le64toh(((struct orfs_attr *)out)->mtime.sec), 1000000000);
		snprintf(p, sizeof(p), "%s/dir/ln", root);
		CU_ASSERT_EQUAL(lstat(p, &st), 0);
		CU_ASSERT_EQUAL(st.st_mtime, 1000000000);
		CU_ASSERT_EQUAL(st.st_atime, 1000000001);
		CU_ASSERT_EQUAL(stat("/etc", &st), 0);
		CU_ASSERT_EQUAL(st.st_mtime, etc.st_mtime);
		sa.valid = htole32(ORFS_SET_MODE);
		sa.mode = htole32(0600);
		rb_start(&b, ORFS_OP_SETATTR, 0, 0);
		rb_put(&b, &sa, sizeof(sa));
		CU_ASSERT_EQUAL(run(&fx, &b, out, &n), EOPNOTSUPP);
	}

	/* Hard link: nlink goes to 2. */
	lk.fh = f.fh;
	lk.dir = r;
	rb_start(&b, ORFS_OP_LINK, 0, 0);
	rb_put(&b, &lk, sizeof(lk));
	rb_name(&b, "a-link");
	CU_ASSERT_EQUAL(run(&fx, &b, out, &n), 0);
	CU_ASSERT_EQUAL(le32toh(((struct orfs_attr *)out)->nlink), 2);
	/* Of a symbolic link: the link itself, as link(2) does. */
	lk.fh = l.fh;
	rb_start(&b, ORFS_OP_LINK, 0, 0);
	rb_put(&b, &lk, sizeof(lk));
	rb_name(&b, "ln-link");
	CU_ASSERT_EQUAL(run(&fx, &b, out, &n), 0);
	CU_ASSERT_EQUAL(le32toh(((struct orfs_attr *)out)->nlink), 2);
	CU_ASSERT_TRUE(S_ISLNK(le32toh(((struct orfs_attr *)out)->mode)));
	{
		char p[64], t[16];

		snprintf(p, sizeof(p), "%s/ln-link", root);
		CU_ASSERT_EQUAL(readlink(p, t, sizeof(t)), 4);
		CU_ASSERT_EQUAL(memcmp(t, "/etc", 4), 0);
	}

	/* Rename: NOREPLACE refuses, EXCHANGE swaps, plain replaces. */
	memset(&rn, 0, sizeof(rn));
	rn.olddir = d.fh;
	rn.newdir = d.fh;
	rn.flags = htole32(ORFS_RENAME_NOREPLACE);
	rb_start(&b, ORFS_OP_RENAME, 0, 0);
	rb_put(&b, &rn, sizeof(rn));
	rb_name(&b, "a");
	rb_name(&b, "b");
	CU_ASSERT_EQUAL(run(&fx, &b, NULL, NULL), EEXIST);
	rn.flags = htole32(ORFS_RENAME_EXCHANGE);
	memcpy(b.buf + sizeof(struct knet_hdr) + sizeof(struct orfs_req), &rn, sizeof(rn));
	CU_ASSERT_EQUAL(run(&fx, &b, NULL, NULL), 0);
	CU_ASSERT_EQUAL(lookup(&fx, &d.fh, "b", 0, &l), 0);
	CU_ASSERT_EQUAL(memcmp(&l.fh, &f.fh, sizeof(f.fh)), 0);	/* the old "a" */
	rn.flags = htole32(ORFS_RENAME_NOREPLACE | ORFS_RENAME_EXCHANGE);
	memcpy(b.buf + sizeof(struct knet_hdr) + sizeof(struct orfs_req), &rn, sizeof(rn));
	CU_ASSERT_EQUAL(run(&fx, &b, NULL, NULL), EINVAL);

	/* Removal. */
	CU_ASSERT_EQUAL(dirop(ORFS_OP_RMDIR, &r, "dir"), ENOTEMPTY);
	CU_ASSERT_EQUAL(dirop(ORFS_OP_UNLINK, &r, "dir"), EISDIR);
	CU_ASSERT_EQUAL(dirop(ORFS_OP_RMDIR, &d.fh, "a"), ENOTDIR);
	CU_ASSERT_EQUAL(system("rm -rf /var/tmp/orfs-unit-fs*/dir/*") == 0, 1);
	CU_ASSERT_EQUAL(dirop(ORFS_OP_RMDIR, &r, "dir"), 0);
	CU_ASSERT_EQUAL(dirop(ORFS_OP_UNLINK, &r, "a-link"), 0);
	CU_ASSERT_EQUAL(dirop(ORFS_OP_UNLINK, &r, "ln-link"), 0);
}

static void test_attrs_and_io(void)
{
	struct orfs_fh r = rootfh(&fx);
	struct orfs_entry_rep f;
	struct orfs_setattr_req sa;
	struct orfs_io_req io;
	struct orfs_io_rep *rep;
	struct rb b;
	uint8_t out[4352];
	uint32_t n;

	CU_ASSERT_EQUAL(create(&fx, ORFS_OP_CREATE, &r, "io", 0644, 0, &f), 0);
	memset(&io, 0, sizeof(io));
	io.fh = f.fh;
	io.offset = htole64(100);
	io.length = htole32(11);
	rb_start(&b, ORFS_OP_WRITE, 0, 0);
	rb_put(&b, &io, sizeof(io));
	rb_inline(&b, "hello world", 11);
	CU_ASSERT_EQUAL(run(&fx, &b, out, &n), 0);
	rep = (struct orfs_io_rep *)out;
	CU_ASSERT_EQUAL(le32toh(rep->count), 11);
	CU_ASSERT_EQUAL(le64toh(rep->attr.size), 111);

	io.length = htole32(64);
	rb_start(&b, ORFS_OP_READ, 0, 0);
	rb_put(&b, &io, sizeof(io));
	CU_ASSERT_EQUAL(run(&fx, &b, out, &n), 0);
	CU_ASSERT_EQUAL(le32toh(rep->count), 11);	/* short at the end */
	CU_ASSERT_EQUAL(n, sizeof(*rep) + 11);		/* the data goes with the reply */
	CU_ASSERT_EQUAL(le32toh(rep->eof), 1);
	CU_ASSERT_EQUAL(memcmp(out + sizeof(*rep), "hello world", 11), 0);
	/* Inline data that does not match the length is refused. */
	rb_start(&b, ORFS_OP_WRITE, 0, 0);
	rb_put(&b, &io, sizeof(io));
	rb_inline(&b, "short", 5);
	CU_ASSERT_EQUAL(run(&fx, &b, out, &n), EINVAL);

	memset(&sa, 0, sizeof(sa));
	sa.fh = f.fh;
	sa.valid = htole32(ORFS_SET_MODE | ORFS_SET_SIZE | ORFS_SET_MTIME);
	sa.mode = htole32(0600);
	sa.size = htole64(5);
	sa.mtime.sec = htole64(1000000000);
	rb_start(&b, ORFS_OP_SETATTR, 0, 0);
	rb_put(&b, &sa, sizeof(sa));
	CU_ASSERT_EQUAL(run(&fx, &b, out, &n), 0);
	CU_ASSERT_EQUAL(le32toh(((struct orfs_attr *)out)->mode), S_IFREG | 0600);
	CU_ASSERT_EQUAL(le64toh(((struct orfs_attr *)out)->size), 5);
	CU_ASSERT_EQUAL(le64toh(((struct orfs_attr *)out)->mtime.sec), 1000000000);
	sa.valid = htole32(0x100);
	memcpy(b.buf + sizeof(struct knet_hdr) + sizeof(struct orfs_req), &sa, sizeof(sa));
	CU_ASSERT_EQUAL(run(&fx, &b, out, &n), EINVAL);

	/* xattrs. */
	{
		struct orfs_fhop_req fo = { .fh = f.fh };

		rb_start(&b, ORFS_OP_SETXATTR, 0, 0);
		rb_put(&b, &fo, sizeof(fo));
		rb_name(&b, "user.color");
		rb_blob(&b, "blue", 4);
		CU_ASSERT_EQUAL(run(&fx, &b, out, &n), 0);
		fo.size = htole32(64);
		rb_start(&b, ORFS_OP_GETXATTR, 0, 0);
		rb_put(&b, &fo, sizeof(fo));
		rb_name(&b, "user.color");
		CU_ASSERT_EQUAL(run(&fx, &b, out, &n), 0);
		CU_ASSERT_EQUAL(le32toh(((struct orfs_xattr_rep *)out)->size), 4);
		CU_ASSERT_EQUAL(memcmp(out + 8, "blue", 4), 0);
		rb_start(&b, ORFS_OP_LISTXATTR, 0, 0);
		rb_put(&b, &fo, sizeof(fo));
		CU_ASSERT_EQUAL(run(&fx, &b, out, &n), 0);
		CU_ASSERT_PTR_NOT_NULL(memmem(out + 8, n - 8, "user.color", 11));
		rb_start(&b, ORFS_OP_REMOVEXATTR, 0, 0);
		rb_put(&b, &fo, sizeof(fo));
		rb_name(&b, "user.color");
		CU_ASSERT_EQUAL(run(&fx, &b, out, &n), 0);
		CU_ASSERT_EQUAL(run(&fx, &b, out, &n), ENODATA);
	}
	CU_ASSERT_EQUAL(dirop(ORFS_OP_UNLINK, &r, "io"), 0);
}

/* The change attribute moves at each change through the server, within a clock tick too. */
/*
 * What the server adds to A's ctime in its change attribute: a kernel
 * with fine-grained ctimes (multigrain, 6.13 on) moves the ctime at each
 * change, 6.1 and 6.12 once a clock tick, so the count is what a test
 * can tell apart on any kernel.
 */
static uint64_t attr_count(const struct orfs_attr *a)
{
	return le64toh(a->change) - (le64toh(a->ctime.sec) * 1000000000ULL +
				     le32toh(a->ctime.nsec));
}

static void test_change_counts(void)
{
	static struct fsvc_chg chg;
	struct orfs_fh r = rootfh(&fx);
	uint64_t c[5], k[4];
	struct orfs_entry_rep f;
	struct orfs_setattr_req sa;
	struct orfs_io_req io;
	struct orfs_attr attr;
	struct rb b;
	uint8_t out[4352];
	uint32_t n;
	int i;

	test_chg = &chg;
	CU_ASSERT_EQUAL(create(&fx, ORFS_OP_CREATE, &r, "chg", 0644, 0, &f), 0);
	memset(&io, 0, sizeof(io));
	io.fh = f.fh;
	io.length = htole32(1);
	for (i = 0; i < 3; i++) {
		rb_start(&b, ORFS_OP_WRITE, 0, 0);
		rb_put(&b, &io, sizeof(io));
		rb_inline(&b, "x", 1);
		CU_ASSERT_EQUAL(run(&fx, &b, out, &n), 0);
		c[i] = le64toh(((struct orfs_io_rep *)out)->attr.change);
		k[i] = attr_count(&((struct orfs_io_rep *)out)->attr);
	}
	memset(&sa, 0, sizeof(sa));
	sa.fh = f.fh;
	sa.valid = htole32(ORFS_SET_MODE);
	sa.mode = htole32(0600);
	rb_start(&b, ORFS_OP_SETATTR, 0, 0);
	rb_put(&b, &sa, sizeof(sa));
	CU_ASSERT_EQUAL(run(&fx, &b, out, &n), 0);
	c[3] = le64toh(((struct orfs_attr *)out)->change);
	k[3] = attr_count((struct orfs_attr *)out);
	/* Reading it changes nothing. */
	rb_start(&b, ORFS_OP_GETATTR, 0, 0);
	rb_put(&b, &(struct orfs_fhop_req){ .fh = f.fh }, sizeof(struct orfs_fhop_req));
	CU_ASSERT_EQUAL(run(&fx, &b, &attr, &n), 0);
	c[4] = le64toh(attr.change);
	CU_ASSERT(c[0] < c[1] && c[1] < c[2] && c[2] < c[3]);
	CU_ASSERT_EQUAL(c[4], c[3]);
	/* The count alone, whatever the ctime's grain. */
	CU_ASSERT(k[1] == k[0] + 1 && k[2] == k[1] + 1 && k[3] == k[2] + 1);
	io.length = htole32(8);
	rb_start(&b, ORFS_OP_READ, 0, 0);
	rb_put(&b, &io, sizeof(io));
	CU_ASSERT_EQUAL(run(&fx, &b, out, &n), 0);
	CU_ASSERT_EQUAL(le64toh(((struct orfs_io_rep *)out)->attr.change), c[3]);
	test_chg = NULL;
	CU_ASSERT_EQUAL(dirop(ORFS_OP_UNLINK, &r, "chg"), 0);
}

/* DIR's change attribute as a client's GETATTR sees it, into *CHANGE, and its count. */
static uint64_t dir_count(const struct orfs_fh *dir, uint64_t *change)
{
	struct orfs_attr attr;
	struct rb b;
	uint32_t n;

	rb_start(&b, ORFS_OP_GETATTR, 0, 0);
	rb_put(&b, &(struct orfs_fhop_req){ .fh = *dir }, sizeof(struct orfs_fhop_req));
	CU_ASSERT_EQUAL(run(&fx, &b, &attr, &n), 0);
	*change = le64toh(attr.change);
	return attr_count(&attr);
}

/*
 * Each change of a directory's entries moves its change attribute, also
 * within one clock tick of its ctime (a client keeps negative entries
 * while it stays): the count goes one up. A failed change and a lookup
 * leave it.
 */
static void test_dir_change_counts(void)
{
	static struct fsvc_chg chg;
	struct orfs_fh r = rootfh(&fx);
	struct orfs_entry_rep d, e, f;
	struct orfs_rename_req rn;
	struct orfs_link_req lk;
	uint64_t c, c2, k, k2, d0, dk;
	struct rb b;
	uint8_t out[4352];
	uint32_t n;

	test_chg = &chg;
	CU_ASSERT_EQUAL_FATAL(create(&fx, ORFS_OP_MKDIR, &r, "cd", 0755, 0, &d), 0);
	k = dir_count(&d.fh, &c);
#define MOVES(call) do {						\
		CU_ASSERT_EQUAL(call, 0);				\
		k2 = dir_count(&d.fh, &c2);				\
		CU_ASSERT_EQUAL(k2, k + 1);				\
		CU_ASSERT(c2 > c);					\
		c = c2;							\
		k = k2;							\
	} while (0)
	MOVES(create(&fx, ORFS_OP_CREATE, &d.fh, "f", 0644, 0, &f));
	MOVES(create(&fx, ORFS_OP_MKDIR, &d.fh, "sub", 0755, 0, &e));
	MOVES(create(&fx, ORFS_OP_MKNOD, &d.fh, "fifo", S_IFIFO | 0600, 0, &e));
	MOVES(create(&fx, ORFS_OP_SYMLINK, &d.fh, "ln", 0777, 0, &e));
	lk.fh = f.fh;
	lk.dir = d.fh;
	rb_start(&b, ORFS_OP_LINK, 0, 0);
	rb_put(&b, &lk, sizeof(lk));
	rb_name(&b, "f2");
	MOVES(run(&fx, &b, out, &n));
	memset(&rn, 0, sizeof(rn));
	rn.olddir = d.fh;
	rn.newdir = d.fh;
	rb_start(&b, ORFS_OP_RENAME, 0, 0);
	rb_put(&b, &rn, sizeof(rn));
	rb_name(&b, "f2");
	rb_name(&b, "f3");
	MOVES(run(&fx, &b, NULL, NULL));
	MOVES(dirop(ORFS_OP_UNLINK, &d.fh, "f3"));
	MOVES(dirop(ORFS_OP_UNLINK, &d.fh, "fifo"));
	MOVES(dirop(ORFS_OP_RMDIR, &d.fh, "sub"));
	/* A rename between directories moves both. */
	dk = dir_count(&r, &d0);
	rn.newdir = r;
	rb_start(&b, ORFS_OP_RENAME, 0, 0);
	rb_put(&b, &rn, sizeof(rn));
	rb_name(&b, "ln");
	rb_name(&b, "cd-ln");
	MOVES(run(&fx, &b, NULL, NULL));
	CU_ASSERT_EQUAL(dir_count(&r, &c2), dk + 1);
	CU_ASSERT(c2 > d0);
#undef MOVES
	/* Failing, reading or not creating leave it. */
	CU_ASSERT_EQUAL(create(&fx, ORFS_OP_MKDIR, &d.fh, "f", 0755, 0, &e), EEXIST);
	CU_ASSERT_EQUAL(create(&fx, ORFS_OP_CREATE, &d.fh, "f", 0644, 0, &e), 0);
	CU_ASSERT_EQUAL(lookup(&fx, &d.fh, "f", 0, &e), 0);
	CU_ASSERT_EQUAL(dirop(ORFS_OP_UNLINK, &d.fh, "nothing"), ENOENT);
	CU_ASSERT_EQUAL(dir_count(&d.fh, &c2), k);
	CU_ASSERT_EQUAL(c2, c);
	test_chg = NULL;
	CU_ASSERT_EQUAL(dirop(ORFS_OP_UNLINK, &r, "cd-ln"), 0);
	CU_ASSERT_EQUAL(dirop(ORFS_OP_UNLINK, &d.fh, "f"), 0);
	CU_ASSERT_EQUAL(dirop(ORFS_OP_RMDIR, &r, "cd"), 0);
}

static void test_readdir(void)
{
	struct orfs_fh r = rootfh(&fx);
	struct orfs_entry_rep d, e;
	struct orfs_readdir_req rd;
	static char seen[300];
	char name[32];
	uint8_t out[4352];
	uint64_t cookie = 0;
	int i, calls = 0, total = 0, eof = 0;

	CU_ASSERT_EQUAL_FATAL(create(&fx, ORFS_OP_MKDIR, &r, "big", 0755, 0, &d), 0);
	for (i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "entry-%03d", i);
		CU_ASSERT_EQUAL(create(&fx, ORFS_OP_CREATE, &d.fh, name, 0644, 0, &e), 0);
	}
	while (!eof && calls < 100) {
		struct orfs_readdir_rep *rep = (struct orfs_readdir_rep *)out;
		uint32_t n, off, k;
		struct rb b;

		memset(&rd, 0, sizeof(rd));
		rd.dir = d.fh;
		rd.cookie = htole64(cookie);
		rd.max_bytes = htole32(1000);	/* ~25 entries a call */
		rb_start(&b, ORFS_OP_READDIR, 0, 0);
		rb_put(&b, &rd, sizeof(rd));
		CU_ASSERT_EQUAL_FATAL(run(&fx, &b, out, &n), 0);
		calls++;
		eof = (int)le32toh(rep->eof);
		off = sizeof(*rep);
		for (k = 0; k < le32toh(rep->count); k++) {
			struct orfs_dirent de;

			memcpy(&de, out + off, sizeof(de));
			memcpy(name, out + off + sizeof(de), le16toh(de.name_len));
			name[le16toh(de.name_len)] = '\0';
			CU_ASSERT_EQUAL(sscanf(name, "entry-%d", &i), 1);
			if (i >= 0 && i < 300)
				seen[i]++;
			cookie = le64toh(de.cookie);
			off += (uint32_t)((sizeof(de) + le16toh(de.name_len) + 7) & ~7UL);
			total++;
		}
	}
	CU_ASSERT_TRUE(eof);
	CU_ASSERT_TRUE(calls > 5);	/* it really resumed */
	CU_ASSERT_EQUAL(total, 300);
	for (i = 0; i < 300; i++)
		if (seen[i] != 1) {
			CU_FAIL("an entry was missed or seen twice");
			break;
		}
	CU_ASSERT_EQUAL(system("rm -rf /var/tmp/orfs-unit-fs*/big"), 0);
}

static void test_credentials(void)
{
	struct orfs_fh r = rootfh(&fx);
	struct orfs_entry_rep pub, e;
	struct stat st;
	char p[300];

	/* A user cannot create in root's 0755 directory, can in a 1777 one. */
	CU_ASSERT_EQUAL(create(&fx, ORFS_OP_CREATE, &r, "u1", 0644, 1000, &e), EACCES);
	CU_ASSERT_EQUAL(lookup(&fx, &r, "pub", 1000, &pub), 0);
	CU_ASSERT_EQUAL(create(&fx, ORFS_OP_CREATE, &pub.fh, "u1", 0600, 1000, &e), 0);
	CU_ASSERT_EQUAL(le32toh(e.attr.uid), 1000);
	CU_ASSERT_EQUAL(le32toh(e.attr.gid), 1000);
	/* Another user may not remove it (sticky) nor read it (0600). */
	{
		struct orfs_io_req io = { .fh = e.fh, .offset = 0, .length = htole32(1) };
		struct rb b;

		rb_start(&b, ORFS_OP_READ, 1001, 1001);
		rb_put(&b, &io, sizeof(io));
		CU_ASSERT_EQUAL(run(&fx, &b, NULL, NULL), EACCES);
		rb_start(&b, ORFS_OP_UNLINK, 1001, 1001);
		rb_put(&b, &pub.fh, sizeof(pub.fh));
		rb_name(&b, "u1");
		CU_ASSERT_EQUAL(run(&fx, &b, NULL, NULL), EPERM);
		/* The owner may read. */
		rb_start(&b, ORFS_OP_READ, 1000, 1000);
		rb_put(&b, &io, sizeof(io));
		CU_ASSERT_EQUAL(run(&fx, &b, NULL, NULL), 0);
	}
	/* Root squash: root's files belong to nobody; plain export keeps root. */
	CU_ASSERT_EQUAL(create(&fx_sq, ORFS_OP_CREATE, &pub.fh, "squashed", 0644, 0, &e), 0);
	CU_ASSERT_EQUAL(le32toh(e.attr.uid), 65534);
	CU_ASSERT_EQUAL(create(&fx_sq, ORFS_OP_CREATE, &r, "sq-in-root", 0644, 0, &e), EACCES);
	snprintf(p, sizeof(p), "%s/pub/squashed", root);
	CU_ASSERT_EQUAL(stat(p, &st), 0);
	CU_ASSERT_EQUAL(st.st_uid, 65534);
	/* all_squash: every caller, root or not, as the anonymous ids it names. */
	{
		struct fsvc_export all = fx_sq;

		all.squash = FSVC_SQUASH_ALL;
		all.anon_uid = 1500;
		all.anon_gid = 1600;
		CU_ASSERT_EQUAL(create(&all, ORFS_OP_CREATE, &pub.fh, "all-root", 0644, 0, &e), 0);
		CU_ASSERT_EQUAL(le32toh(e.attr.uid), 1500);
		CU_ASSERT_EQUAL(le32toh(e.attr.gid), 1600);
		CU_ASSERT_EQUAL(create(&all, ORFS_OP_CREATE, &pub.fh, "all-user", 0644, 1000, &e), 0);
		CU_ASSERT_EQUAL(le32toh(e.attr.uid), 1500);
		all.squash = FSVC_SQUASH_ROOT;
		CU_ASSERT_EQUAL(create(&all, ORFS_OP_CREATE, &pub.fh, "anon-root", 0644, 0, &e), 0);
		CU_ASSERT_EQUAL(le32toh(e.attr.uid), 1500);
		CU_ASSERT_EQUAL(create(&all, ORFS_OP_CREATE, &pub.fh, "anon-user", 0644, 1000, &e), 0);
		CU_ASSERT_EQUAL(le32toh(e.attr.uid), 1000);
	}
	/* Root's request after the users': made as root. */
	CU_ASSERT_EQUAL(create(&fx, ORFS_OP_CREATE, &r, "back-to-root", 0644, 0, &e), 0);
	CU_ASSERT_EQUAL(le32toh(e.attr.uid), 0);
	CU_ASSERT_EQUAL(dirop(ORFS_OP_UNLINK, &r, "back-to-root"), 0);
}

/*
 * A name operation in DIR (kept open in *FD) by UID, with the supplementary
 * group GROUP if not 0; a CREATE's entry in *E.
 */
static int name_op_g(uint16_t op, const struct orfs_fh *dir, int *fd, const char *name,
		     uint32_t uid, uint32_t group, struct orfs_entry_rep *e)
{
	struct orfs_create_req c;
	struct rb b;
	uint32_t n;

	rb_start(&b, op, uid, uid);
	if (group)
		rb_group(&b, group);
	if (op == ORFS_OP_CREATE) {
		memset(&c, 0, sizeof(c));
		c.dir = *dir;
		c.mode = htole32(0644);
		rb_put(&b, &c, sizeof(c));
	} else {
		rb_put(&b, dir, sizeof(*dir));
	}
	rb_name(&b, name);
	return exec_fd(&fx, &b, fd, e, &n);
}

static int name_op(uint16_t op, const struct orfs_fh *dir, int *fd, const char *name,
		   uint32_t uid, struct orfs_entry_rep *e)
{
	return name_op_g(op, dir, fd, name, uid, 0, e);
}

/*
 * A worker keeps its last caller's credentials and gets directories already
 * open: whatever the order of callers and the descriptor's origin (root),
 * each request is checked with its own credentials.
 */
static void test_kept_credentials(void)
{
	struct orfs_fh r = rootfh(&fx);
	struct orfs_entry_rep pub, e;
	int pfd = -1, rfd = -1, fd = -1;

	CU_ASSERT_EQUAL(lookup(&fx, &r, "pub", 0, &pub), 0);
	/* The directory a name operation opened is handed back to be kept. */
	CU_ASSERT_EQUAL(name_op(ORFS_OP_CREATE, &pub.fh, &pfd, "k1", 1000, &e), 0);
	CU_ASSERT_FATAL(pfd >= 0);
	CU_ASSERT_EQUAL(le32toh(e.attr.uid), 1000);
	CU_ASSERT_EQUAL((uint32_t)syscall(SYS_setfsuid, -1), 1000);	/* still 1000's */
	/* Through it: 1001 may not remove 1000's file (sticky), root may. */
	CU_ASSERT_EQUAL(name_op(ORFS_OP_UNLINK, &pub.fh, &pfd, "k1", 1001, NULL), EPERM);
	CU_ASSERT_EQUAL(name_op(ORFS_OP_CREATE, &pub.fh, &pfd, "k2", 1001, &e), 0);
	CU_ASSERT_EQUAL(le32toh(e.attr.uid), 1001);
	CU_ASSERT_EQUAL(name_op(ORFS_OP_UNLINK, &pub.fh, &pfd, "k2", 1001, NULL), 0);
	CU_ASSERT_EQUAL(name_op(ORFS_OP_UNLINK, &pub.fh, &pfd, "k1", 0, NULL), 0);
	/* Root's 0755 directory, opened by root's request: a user still may not write. */
	CU_ASSERT_EQUAL(name_op(ORFS_OP_CREATE, &r, &rfd, "k3", 0, &e), 0);
	CU_ASSERT_FATAL(rfd >= 0);
	CU_ASSERT_EQUAL(le32toh(e.attr.uid), 0);
	CU_ASSERT_EQUAL(name_op(ORFS_OP_CREATE, &r, &rfd, "k4", 1000, &e), EACCES);
	CU_ASSERT_EQUAL(name_op(ORFS_OP_UNLINK, &r, &rfd, "k3", 1000, NULL), EACCES);
	/* From a user's credentials, a handle opens as root again. */
	CU_ASSERT_EQUAL(name_op(ORFS_OP_UNLINK, &r, &fd, "k3", 0, NULL), 0);
	CU_ASSERT(fd >= 0 && fd != rfd);
	/* Same uid and gid, other groups: switched too. */
	{
		struct orfs_entry_rep g;
		char p[300];
		int gfd = -1;

		snprintf(p, sizeof(p), "%s/grp", root);
		CU_ASSERT_FATAL(!mkdir(p, 0770) && !chown(p, 0, 2000));
		CU_ASSERT_EQUAL(lookup(&fx, &r, "grp", 0, &g), 0);
		CU_ASSERT_EQUAL(name_op_g(ORFS_OP_CREATE, &g.fh, &gfd, "g1", 1000, 2000, &e), 0);
		CU_ASSERT_EQUAL(name_op(ORFS_OP_CREATE, &g.fh, &gfd, "g2", 1000, &e), EACCES);
		CU_ASSERT_EQUAL(name_op_g(ORFS_OP_UNLINK, &g.fh, &gfd, "g1", 1000, 2000, NULL), 0);
		close(gfd);
		CU_ASSERT_EQUAL(fsvc_cred_reset(), 0);
		CU_ASSERT_EQUAL(rmdir(p), 0);
	}
	/* A file's handle is not handed back. */
	CU_ASSERT_EQUAL(create(&fx, ORFS_OP_CREATE, &r, "k5", 0644, 0, &e), 0);
	{
		struct orfs_fhop_req op = { .fh = e.fh };
		struct rb b;
		int ffd = -1;

		rb_start(&b, ORFS_OP_GETATTR, 1000, 1000);
		rb_put(&b, &op, sizeof(op));
		CU_ASSERT_EQUAL(exec_fd(&fx, &b, &ffd, NULL, NULL), 0);
		CU_ASSERT_EQUAL(ffd, -1);
	}
	CU_ASSERT_EQUAL(dirop(ORFS_OP_UNLINK, &r, "k5"), 0);
	close(pfd);
	close(rfd);
	close(fd);
	CU_ASSERT_EQUAL(fsvc_cred_reset(), 0);
	CU_ASSERT_EQUAL((uint32_t)syscall(SYS_setfsuid, -1), 0);
}

/* Build a request on DIR, named NAME, by UID (and its group 0 if ROOT_GROUP). */
static void fixed_req(struct rb *b, uint16_t op, const struct orfs_fh *dir, const char *name,
		      uint32_t uid, int root_group)
{
	struct orfs_create_req c;

	rb_start(b, op, uid, uid);
	if (root_group)
		rb_group(b, 0);
	if (op == ORFS_OP_CREATE) {
		memset(&c, 0, sizeof(c));
		c.dir = *dir;
		c.mode = htole32(0644);
		rb_put(b, &c, sizeof(c));
	} else if (op == ORFS_OP_GETATTR) {
		struct orfs_fhop_req f = { .fh = *dir };

		rb_put(b, &f, sizeof(f));
	} else {
		rb_put(b, dir, sizeof(*dir));
	}
	if (name)
		rb_name(b, name);
	rb_inline(b, NULL, 0);
}

/* May a fixed thread run the request here, and what does running it give? */
static int fixed_run(const struct fsvc_export *x, struct rb *b, int *here)
{
	static uint8_t out[8192];
	struct fsvc_req rq;
	uint32_t n;
	int fd = -1, err;

	err = fsvc_decode(x, b->buf, b->len, 4096, &rq);
	if (err)
		return err;
	*here = fsvc_runs_here(x, &rq);
	err = fsvc_execute(x, &rq, &fd, out, sizeof(out), &n);
	if (fd >= 0)
		close(fd);
	return err;
}

/* OP on DIR/NAME by UID on X, run on this thread: fixed_run()'s answer. */
static int here_run(const struct fsvc_export *x, uint16_t op, const struct orfs_fh *dir,
		    const char *name, uint32_t uid, int *here)
{
	struct rb b;

	fixed_req(&b, op, dir, name, uid, 0);
	return fixed_run(x, &b, here);
}

static int exists(const char *name)
{
	char p[300];

	snprintf(p, sizeof(p), "%s/%s", root, name);
	return !access(p, F_OK);
}

/* X as if in memory: what runs here is decided by the export's kind. */
static struct fsvc_export in_memory(const struct fsvc_export *x)
{
	struct fsvc_export m = *x;

	m.in_memory = 1;
	return m;
}

/* REL under the export's root, with more data than a removal here may free; its path in P. */
static void make_big(char *p, size_t len, const char *rel)
{
	int fd;

	snprintf(p, len, "%s/%s", root, rel);
	fd = open(p, O_CREAT | O_WRONLY, 0644);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(posix_fallocate(fd, 0, FSVC_HERE_MAX * 4), 0);
	close(fd);
}

/* FN on a thread of its own (credentials are per thread), given the root's handle. */
static void on_thread(void *(*fn)(void *))
{
	struct orfs_fh r = rootfh(&fx);
	pthread_t t;

	CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, fn, &r), 0);
	CU_ASSERT_EQUAL(pthread_join(t, NULL), 0);
}

static void *fixed_thread(void *arg)
{
	const struct orfs_fh *r = arg;
	struct fsvc_export mem = in_memory(&fx), mem_sq = in_memory(&fx_sq);
	struct rb b;
	char p[300];
	int here = -1;

	CU_ASSERT_EQUAL_FATAL(fsvc_cred_fix(), 0);
	CU_ASSERT_EQUAL(fsvc_cred_reset(), EPERM);

	/* Root, with or without its own group as a supplementary one: here. */
	fixed_req(&b, ORFS_OP_CREATE, r, "fx1", 0, 1);
	CU_ASSERT_EQUAL(fixed_run(&mem, &b, &here), 0);
	CU_ASSERT_EQUAL(here, 1);
	CU_ASSERT(exists("fx1"));
	fixed_req(&b, ORFS_OP_LOOKUP, r, "fx1", 0, 0);
	CU_ASSERT_EQUAL(fixed_run(&mem, &b, &here), 0);
	CU_ASSERT_EQUAL(here, 1);
	/* The same export on a device: a worker's. */
	fixed_req(&b, ORFS_OP_LOOKUP, r, "fx1", 0, 0);
	fixed_run(&fx, &b, &here);
	CU_ASSERT_EQUAL(here, 0);

	/* Another user: not here, and running it here does nothing. */
	fixed_req(&b, ORFS_OP_CREATE, r, "fx2", 1000, 0);
	CU_ASSERT_EQUAL(fixed_run(&mem, &b, &here), FSVC_ELSEWHERE);
	CU_ASSERT_EQUAL(here, 0);
	CU_ASSERT(!exists("fx2"));
	fixed_req(&b, ORFS_OP_UNLINK, r, "fx1", 1000, 0);
	CU_ASSERT_EQUAL(fixed_run(&mem, &b, &here), FSVC_ELSEWHERE);
	CU_ASSERT(exists("fx1"));
	/* Root squashed is another user too. */
	fixed_req(&b, ORFS_OP_CREATE, r, "fx2", 0, 0);
	CU_ASSERT_EQUAL(fixed_run(&mem_sq, &b, &here), FSVC_ELSEWHERE);
	CU_ASSERT_EQUAL(here, 0);
	CU_ASSERT(!exists("fx2"));
	/* Attributes need no caller's credentials: anyone's run here. */
	fixed_req(&b, ORFS_OP_GETATTR, r, NULL, 1000, 0);
	CU_ASSERT_EQUAL(fixed_run(&mem, &b, &here), 0);
	CU_ASSERT_EQUAL(here, 1);
	/* A directory read is a worker's, whoever asks. */
	{
		struct orfs_readdir_req rd;
		struct fsvc_req rq;

		memset(&rd, 0, sizeof(rd));
		rd.dir = *r;
		rd.max_bytes = htole32(4096);
		rb_start(&b, ORFS_OP_READDIR, 0, 0);
		rb_put(&b, &rd, sizeof(rd));
		rb_inline(&b, NULL, 0);
		CU_ASSERT_EQUAL_FATAL(fsvc_decode(&mem, b.buf, b.len, 4096, &rq), 0);
		CU_ASSERT_EQUAL(fsvc_runs_here(&mem, &rq), 0);
	}

	/* Removing a big file frees its pages: a worker's, untouched here. */
	make_big(p, sizeof(p), "big");
	fixed_req(&b, ORFS_OP_UNLINK, r, "big", 0, 0);
	CU_ASSERT_EQUAL(fixed_run(&mem, &b, &here), FSVC_ELSEWHERE);
	CU_ASSERT_EQUAL(here, 1);
	CU_ASSERT(exists("big"));
	CU_ASSERT_EQUAL(unlink(p), 0);
	/* A small one goes here. */
	fixed_req(&b, ORFS_OP_UNLINK, r, "fx1", 0, 0);
	CU_ASSERT_EQUAL(fixed_run(&mem, &b, &here), 0);
	CU_ASSERT_EQUAL(here, 1);
	CU_ASSERT(!exists("fx1"));
	/* Still in the credentials it started with. */
	CU_ASSERT_EQUAL((uint32_t)syscall(SYS_setfsuid, -1), 0);
	CU_ASSERT_EQUAL((uint32_t)syscall(SYS_setfsgid, -1), 0);
	return NULL;
}

static uint32_t owner_of(const char *name)
{
	char p[300];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", root, name);
	return stat(p, &st) ? (uint32_t)-1 : st.st_uid;
}

static void *switching_thread(void *arg)
{
	const struct orfs_fh *r = arg;
	struct fsvc_export mem = in_memory(&fx), mem_sq = in_memory(&fx_sq);
	struct orfs_entry_rep pub;
	char p[300];
	int here = -1;

	CU_ASSERT_EQUAL_FATAL(fsvc_cred_progress(), 0);
	CU_ASSERT_EQUAL_FATAL(lookup(&mem, r, "pub", 0, &pub), 0);

	/* A user's requests run here, in the user's credentials. */
	CU_ASSERT_EQUAL(here_run(&mem, ORFS_OP_CREATE, &pub.fh, "sw1", 1000, &here), 0);
	CU_ASSERT_EQUAL(here, 1);
	CU_ASSERT_EQUAL(owner_of("pub/sw1"), 1000);
	CU_ASSERT_EQUAL(here_run(&mem, ORFS_OP_CREATE, r, "sw2", 1000, &here), EACCES);
	CU_ASSERT_EQUAL(here, 1);
	CU_ASSERT(!exists("sw2"));
	/* Root's next: back in root's. */
	CU_ASSERT_EQUAL(here_run(&mem, ORFS_OP_CREATE, r, "sw2", 0, &here), 0);
	CU_ASSERT_EQUAL(owner_of("sw2"), 0);
	/* Root squashed: the anonymous user's rights. */
	CU_ASSERT_EQUAL(here_run(&mem_sq, ORFS_OP_CREATE, r, "sw3", 0, &here), EACCES);
	CU_ASSERT_EQUAL(here, 1);
	CU_ASSERT(!exists("sw3"));
	CU_ASSERT_EQUAL(here_run(&mem, ORFS_OP_UNLINK, r, "sw2", 1000, &here), EACCES);
	CU_ASSERT(exists("sw2"));
	CU_ASSERT_EQUAL(here_run(&mem, ORFS_OP_UNLINK, &pub.fh, "sw1", 1000, &here), 0);
	CU_ASSERT(!exists("pub/sw1"));
	/* An export on a device still goes to a worker. */
	here_run(&fx, ORFS_OP_LOOKUP, r, "sw2", 1000, &here);
	CU_ASSERT_EQUAL(here, 0);

	/* Removing a big file is a worker's, whoever asks. */
	make_big(p, sizeof(p), "pub/big");
	CU_ASSERT_EQUAL(here_run(&mem, ORFS_OP_UNLINK, &pub.fh, "big", 1000, &here),
			FSVC_ELSEWHERE);
	CU_ASSERT(exists("pub/big"));
	CU_ASSERT_EQUAL(unlink(p), 0);

	/* It stays in its last caller's, and goes back to root's on demand. */
	CU_ASSERT_EQUAL((uint32_t)syscall(SYS_setfsuid, -1), 1000);
	CU_ASSERT_EQUAL(fsvc_cred_reset(), 0);
	CU_ASSERT_EQUAL((uint32_t)syscall(SYS_setfsuid, -1), 0);
	snprintf(p, sizeof(p), "%s/sw2", root);
	CU_ASSERT_EQUAL(unlink(p), 0);
	return NULL;
}

/* A thread without CAP_SETUID and CAP_SETGID: fsvc_cred_progress() fixes it. */
static void *unswitchable_thread(void *arg)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];
	const struct orfs_fh *r = arg;
	struct fsvc_export mem = in_memory(&fx);
	int here = -1;

	CU_ASSERT_EQUAL_FATAL(syscall(SYS_capget, &h, d), 0);
	d[0].effective &= ~((1U << CAP_SETUID) | (1U << CAP_SETGID));
	CU_ASSERT_EQUAL_FATAL(syscall(SYS_capset, &h, d), 0);
	CU_ASSERT_EQUAL_FATAL(fsvc_cred_progress(), 0);
	CU_ASSERT_EQUAL(fsvc_cred_reset(), EPERM);
	/* A user's request: not here, and running it here does nothing. */
	CU_ASSERT_EQUAL(here_run(&mem, ORFS_OP_CREATE, r, "un1", 1000, &here), FSVC_ELSEWHERE);
	CU_ASSERT_EQUAL(here, 0);
	CU_ASSERT(!exists("un1"));
	/* Root's still runs here, as on a fixed thread. */
	CU_ASSERT_EQUAL(here_run(&mem, ORFS_OP_CREATE, r, "un2", 0, &here), 0);
	CU_ASSERT_EQUAL(here, 1);
	CU_ASSERT_EQUAL(owner_of("un2"), 0);
	CU_ASSERT_EQUAL(here_run(&mem, ORFS_OP_UNLINK, r, "un2", 0, &here), 0);
	CU_ASSERT(!exists("un2"));
	return NULL;
}

/* A process that may not switch credentials keeps its TCP threads fixed. */
static void test_unswitchable_thread(void)
{
	on_thread(unswitchable_thread);
}

/*
 * A progress thread that may switch (a TCP shard's) runs anyone's bounded
 * requests on exports in memory, each in its caller's credentials.
 */
static void test_switching_thread(void)
{
	on_thread(switching_thread);
}

/*
 * A fixed thread (the server's progress thread) runs only requests that
 * need its own credentials, on exports in memory, and never switches.
 */
static void test_fixed_thread(void)
{
	on_thread(fixed_thread);
}

/* The open-file cache (server/fdcache.c) on files of the scratch export. */
static void test_fdcache(void)
{
	static struct fdcache fc;
	struct orfs_fh r = rootfh(&fx);
	const uint32_t groups[2] = { 5, 6 };
	struct fdc_key k, other;
	struct fdc_entry *e, *held[FDC_ENTRIES];
	struct orfs_entry_rep f;
	char path[128];
	int fd, i;

	CU_ASSERT_EQUAL(create(&fx, ORFS_OP_CREATE, &r, "fc", 0644, 0, &f), 0);
	snprintf(path, sizeof(path), "%s/fc", root);
	fdc_init(&fc);
	fdc_key(&k, &fx, &f.fh, O_RDONLY, 1000, 1000, 2, groups);
	CU_ASSERT_PTR_NULL(fdc_get(&fc, &k, 100));
	fd = open(path, O_RDONLY);
	CU_ASSERT_FATAL(fd >= 0);
	e = fdc_add(&fc, &k, fd, 100);
	CU_ASSERT_PTR_NOT_NULL_FATAL(e);
	fdc_put(e);
	/* Found again by the same export, file, flags and credentials only. */
	e = fdc_get(&fc, &k, 101);
	CU_ASSERT_PTR_NOT_NULL_FATAL(e);
	CU_ASSERT_EQUAL(e->fd, fd);
	fdc_put(e);
	other = k;
	other.uid = 1001;
	CU_ASSERT_PTR_NULL(fdc_get(&fc, &other, 101));
	fdc_key(&other, &fx, &f.fh, O_RDONLY, 1000, 1000, 1, groups);
	CU_ASSERT_PTR_NULL(fdc_get(&fc, &other, 101));
	fdc_key(&other, &fx, &f.fh, O_WRONLY, 1000, 1000, 2, groups);
	CU_ASSERT_PTR_NULL(fdc_get(&fc, &other, 101));
	fdc_key(&other, &fx_ro, &f.fh, O_RDONLY, 1000, 1000, 2, groups);
	CU_ASSERT_PTR_NULL(fdc_get(&fc, &other, 101));
	CU_ASSERT_EQUAL(fc.hits, 1);
	/* Too old: opened again. */
	CU_ASSERT_PTR_NULL(fdc_get(&fc, &k, 100 + FDC_SECONDS));
	CU_ASSERT_EQUAL(fcntl(fd, F_GETFD), -1);	/* closed, nobody used it */

	/* A change of permissions, held by a request: closed after it. */
	fd = open(path, O_RDONLY);
	e = fdc_add(&fc, &k, fd, 200);
	CU_ASSERT_PTR_NOT_NULL_FATAL(e);
	CU_ASSERT_EQUAL(chmod(path, 0600), 0);
	CU_ASSERT_PTR_NULL(fdc_get(&fc, &k, 200));
	CU_ASSERT(fcntl(fd, F_GETFD) >= 0);		/* still in use */
	fdc_put(e);
	CU_ASSERT_EQUAL(fcntl(fd, F_GETFD), -1);

	/* Forgotten with its export; not a regular file: not kept. */
	fd = open(path, O_RDONLY);
	fdc_put(fdc_add(&fc, &k, fd, 300));
	fdc_forget(&fc, &fx, 1);
	CU_ASSERT_PTR_NULL(fdc_get(&fc, &k, 300));
	fd = open(root, O_RDONLY | O_DIRECTORY);
	CU_ASSERT_PTR_NULL(fdc_add(&fc, &k, fd, 300));
	close(fd);

	/* A file without a name any more is not served. */
	fd = open(path, O_RDONLY);
	fdc_put(fdc_add(&fc, &k, fd, 400));
	CU_ASSERT_EQUAL(unlink(path), 0);
	CU_ASSERT_PTR_NULL(fdc_get(&fc, &k, 400));

	/* Bounded: with every entry in use there is no room; then LRU. */
	CU_ASSERT_EQUAL(create(&fx, ORFS_OP_CREATE, &r, "fc2", 0644, 0, &f), 0);
	snprintf(path, sizeof(path), "%s/fc2", root);
	for (i = 0; i < FDC_ENTRIES; i++) {
		other = k;
		other.uid = (uint32_t)i;
		held[i] = fdc_add(&fc, &other, open(path, O_RDONLY), 500);
		CU_ASSERT_PTR_NOT_NULL_FATAL(held[i]);
	}
	other.uid = FDC_ENTRIES;
	fd = open(path, O_RDONLY);
	CU_ASSERT_PTR_NULL(fdc_add(&fc, &other, fd, 500));
	for (i = 0; i < FDC_ENTRIES; i++)
		fdc_put(held[i]);
	other.uid = 0;
	e = fdc_get(&fc, &other, 501);			/* uid 0: added first, used last */
	CU_ASSERT_PTR_NOT_NULL_FATAL(e);
	fdc_put(e);
	other.uid = FDC_ENTRIES;
	e = fdc_add(&fc, &other, fd, 501);		/* takes the place of uid 1 */
	CU_ASSERT_PTR_NOT_NULL_FATAL(e);
	fdc_put(e);
	other.uid = 1;
	CU_ASSERT_PTR_NULL(fdc_get(&fc, &other, 501));
	other.uid = 2;
	CU_ASSERT_PTR_NOT_NULL(e = fdc_get(&fc, &other, 501));
	if (e)
		fdc_put(e);
	fdc_forget(&fc, NULL, 0);

	/* Directories, opened O_PATH: kept across metadata changes, not files. */
	snprintf(path, sizeof(path), "%s/fcdir", root);
	CU_ASSERT_EQUAL_FATAL(mkdir(path, 0755), 0);
	fdc_key(&k, &fx, &f.fh, O_PATH, 0, 0, 0, groups);
	fd = open(path, O_PATH | O_DIRECTORY);
	e = fdc_add(&fc, &k, fd, 600);
	CU_ASSERT_PTR_NOT_NULL_FATAL(e);
	fdc_put(e);
	snprintf(path, sizeof(path), "%s/fc2", root);
	fd = open(path, O_PATH);
	CU_ASSERT_PTR_NULL(fdc_add(&fc, &k, fd, 600));	/* a file is not kept O_PATH */
	close(fd);
	fdc_key(&other, &fx, &f.fh, O_RDONLY, 0, 0, 0, groups);
	fdc_put(fdc_add(&fc, &other, open(path, O_RDONLY), 600));
	fdc_forget(&fc, &fx, 1);
	CU_ASSERT_PTR_NULL(fdc_get(&fc, &other, 600));
	i = (int)fc.dir_hits;
	e = fdc_get(&fc, &k, 601);
	CU_ASSERT_PTR_NOT_NULL_FATAL(e);
	CU_ASSERT_EQUAL(fc.dir_hits, (unsigned long)i + 1);
	fdc_put(e);
	/* A removed directory is not served; its export's end forgets all. */
	snprintf(path, sizeof(path), "%s/fcdir", root);
	CU_ASSERT_EQUAL(rmdir(path), 0);
	CU_ASSERT_PTR_NULL(fdc_get(&fc, &k, 601));
	CU_ASSERT_EQUAL_FATAL(mkdir(path, 0755), 0);
	fdc_put(fdc_add(&fc, &k, open(path, O_PATH | O_DIRECTORY), 700));
	fdc_forget(&fc, &fx, 0);
	CU_ASSERT_PTR_NULL(fdc_get(&fc, &k, 700));
	CU_ASSERT_EQUAL(rmdir(path), 0);
}

/*
 * Operation OP with body BODY (LEN bytes) as UID on export X; a successful
 * reply of REP_LEN bytes into REP (or nowhere). Returns the errno.
 */
static int body_op(const struct fsvc_export *x, uint16_t op, uint32_t uid, const void *body,
		   uint32_t len, void *rep, uint32_t rep_len)
{
	uint8_t scratch[4352];
	struct rb b;
	uint32_t n;
	int err;

	rb_start(&b, op, uid, uid);
	rb_put(&b, body, len);
	err = run(x, &b, scratch, &n);
	if (!err) {
		CU_ASSERT_EQUAL(n, rep_len);
		if (rep)
			memcpy(rep, scratch, rep_len);
	}
	return err;
}

/*
 * Write verifiers: a WRITE with ORFS_WRITE_VERF and an FSYNC with
 * ORFS_FSYNC_VERF answer the verifier; a lost sync changes it, never to 0;
 * unknown flags are refused.
 */
static void test_write_verifier(void)
{
	struct orfs_fh r = rootfh(&fx);
	struct orfs_write_rep *wrep;
	struct orfs_fhop_req fo;
	struct orfs_entry_rep f;
	struct orfs_verf_rep v;
	struct orfs_io_req io;
	uint8_t out[4352];
	uint64_t before;
	struct rb b;
	uint32_t n;
	int i;

	fsvc_verf_init(&test_verf, 0x1234);
	CU_ASSERT_EQUAL(fsvc_verf(&test_verf), 0x1234);
	CU_ASSERT_EQUAL(create(&fx, ORFS_OP_CREATE, &r, "verf", 0644, 0, &f), 0);
	memset(&io, 0, sizeof(io));
	io.fh = f.fh;
	io.length = htole32(4);
	io.flags = htole32(ORFS_WRITE_VERF);
	rb_start(&b, ORFS_OP_WRITE, 0, 0);
	rb_put(&b, &io, sizeof(io));
	rb_inline(&b, "abcd", 4);
	CU_ASSERT_EQUAL(run(&fx, &b, out, &n), 0);
	wrep = (struct orfs_write_rep *)out;
	CU_ASSERT_EQUAL(n, sizeof(*wrep));
	CU_ASSERT_EQUAL(le32toh(wrep->io.count), 4);
	CU_ASSERT_EQUAL(le64toh(wrep->v.verf), 0x1234);
	/* Without the flag, the reply is as it always was. */
	io.flags = 0;
	rb_start(&b, ORFS_OP_WRITE, 0, 0);
	rb_put(&b, &io, sizeof(io));
	rb_inline(&b, "abcd", 4);
	CU_ASSERT_EQUAL(run(&fx, &b, out, &n), 0);
	CU_ASSERT_EQUAL(n, sizeof(struct orfs_io_rep));
	/* No verifier for a READ, and no unknown write flag. */
	io.flags = htole32(ORFS_WRITE_VERF);
	rb_start(&b, ORFS_OP_READ, 0, 0);
	rb_put(&b, &io, sizeof(io));
	CU_ASSERT_EQUAL(run(&fx, &b, out, &n), EINVAL);
	io.flags = htole32(0x8);
	rb_start(&b, ORFS_OP_WRITE, 0, 0);
	rb_put(&b, &io, sizeof(io));
	rb_inline(&b, "abcd", 4);
	CU_ASSERT_EQUAL(run(&fx, &b, out, &n), EINVAL);

	memset(&fo, 0, sizeof(fo));
	fo.fh = f.fh;
	fo.flags = htole32(ORFS_FSYNC_VERF | ORFS_FSYNC_DATA);
	CU_ASSERT_EQUAL(body_op(&fx, ORFS_OP_FSYNC, 0, &fo, sizeof(fo), &v, sizeof(v)), 0);
	CU_ASSERT_EQUAL(le64toh(v.verf), 0x1234);
	fo.flags = 0;
	CU_ASSERT_EQUAL(body_op(&fx, ORFS_OP_FSYNC, 0, &fo, sizeof(fo), NULL, 0), 0);
	fo.flags = htole32(0x4);
	CU_ASSERT_EQUAL(body_op(&fx, ORFS_OP_FSYNC, 0, &fo, sizeof(fo), NULL, 0), EINVAL);

	/* A lost sync moves it; a verifier is never 0. */
	for (i = 0; i < 1000; i++) {
		before = fsvc_verf(&test_verf);
		fsvc_verf_lost(&test_verf);
		CU_ASSERT_NOT_EQUAL(fsvc_verf(&test_verf), before);
		CU_ASSERT_NOT_EQUAL(fsvc_verf(&test_verf), 0);
	}
	fsvc_verf_init(&test_verf, 0);
	CU_ASSERT_EQUAL(fsvc_verf(&test_verf), 1);
	CU_ASSERT_EQUAL(fsvc_verf(NULL), 1);
}

/* FALLOCATE of FH as UID on export X; the attributes after it into *A. */
static int falloc_op(const struct fsvc_export *x, const struct orfs_fh *fh, uint32_t uid,
		     uint32_t mode, uint64_t off, uint64_t len, uint32_t reserved,
		     struct orfs_attr *a)
{
	struct orfs_fallocate_req fa = {
		.fh = *fh,
		.offset = htole64(off),
		.length = htole64(len),
		.mode = htole32(mode),
		.reserved = htole32(reserved),
	};

	return body_op(x, ORFS_OP_FALLOCATE, uid, &fa, sizeof(fa), a, sizeof(*a));
}

/*
 * FALLOCATE: allocation that grows the file or keeps its size, a hole and
 * a zeroed range that read as zeros (the bytes around them kept), an
 * unshared range where the file system has it, the
 * caller's right to write, modes the kernel refuses, a read-only export;
 * each change counted in the change attribute.
 */
static void test_fallocate(void)
{
	static struct fsvc_chg chg;
	struct orfs_fh r = rootfh(&fx);
	struct orfs_entry_rep f, d;
	struct orfs_attr a;
	char p[300], buf[16384];
	uint64_t k;
	int fd, zr, i, ok, err;

	test_chg = &chg;
	CU_ASSERT_EQUAL_FATAL(create(&fx, ORFS_OP_CREATE, &r, "fa", 0644, 0, &f), 0);
	snprintf(p, sizeof(p), "%s/fa", root);
	fd = open(p, O_RDWR);
	CU_ASSERT_FATAL(fd >= 0);
	memset(buf, 'a', sizeof(buf));
	CU_ASSERT_EQUAL(pwrite(fd, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	/* Mode 0 grows the file, allocated; KEEP_SIZE allocates past its end. */
	CU_ASSERT_EQUAL(falloc_op(&fx, &f.fh, 0, 0, 0, 1 << 20, 0, &a), 0);
	CU_ASSERT_EQUAL(le64toh(a.size), 1 << 20);
	CU_ASSERT(le64toh(a.blocks) >= (1 << 20) / 512);
	k = attr_count(&a);
	CU_ASSERT_EQUAL(falloc_op(&fx, &f.fh, 0, ORFS_FALLOC_KEEP_SIZE, 0, 2 << 20, 0, &a), 0);
	CU_ASSERT_EQUAL(le64toh(a.size), 1 << 20);
	CU_ASSERT(le64toh(a.blocks) >= (2 << 20) / 512);
	CU_ASSERT_EQUAL(attr_count(&a), k + 1);
	/* A hole: its bytes read as zeros, the others stay. */
	CU_ASSERT_EQUAL(falloc_op(&fx, &f.fh, 0, ORFS_FALLOC_PUNCH_HOLE | ORFS_FALLOC_KEEP_SIZE,
				  4096, 8192, 0, &a), 0);
	CU_ASSERT_EQUAL(le64toh(a.size), 1 << 20);
	CU_ASSERT_EQUAL(pread(fd, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	for (i = 0, ok = 1; i < (int)sizeof(buf); i++)
		ok &= buf[i] == (i >= 4096 && i < 12288 ? 0 : 'a');
	CU_ASSERT(ok);
	/* A zeroed range, where the file system has it (tmpfs has not). */
	zr = fallocate(fd, FALLOC_FL_ZERO_RANGE, 0, 1) ? errno : 0;
	CU_ASSERT_EQUAL(falloc_op(&fx, &f.fh, 0, ORFS_FALLOC_ZERO_RANGE, 12288, 100, 0, &a), zr);
	if (!zr) {
		CU_ASSERT_EQUAL(pread(fd, buf, 200, 12288), 200);
		for (i = 0, ok = 1; i < 200; i++)
			ok &= buf[i] == (i < 100 ? 0 : 'a');
		CU_ASSERT(ok);
	}
	/* Unsharing goes to the kernel too: reflink file systems have it. */
	zr = fallocate(fd, FALLOC_FL_UNSHARE_RANGE, 0, 4096) ? errno : 0;
	CU_ASSERT_EQUAL(falloc_op(&fx, &f.fh, 0, ORFS_FALLOC_UNSHARE_RANGE, 0, 4096, 0, &a), zr);
	close(fd);
	/* What the kernel refuses, what the wire does not know. */
	CU_ASSERT_EQUAL(falloc_op(&fx, &f.fh, 0, ORFS_FALLOC_PUNCH_HOLE, 0, 1, 0, NULL),
			EOPNOTSUPP);
	CU_ASSERT_EQUAL(falloc_op(&fx, &f.fh, 0, 0x100, 0, 4096, 0, NULL), EOPNOTSUPP);
	/* Collapse and insert go to the kernel, which refuses them with keep-size. */
	err = falloc_op(&fx, &f.fh, 0, ORFS_FALLOC_COLLAPSE_RANGE | ORFS_FALLOC_KEEP_SIZE, 0,
			4096, 0, NULL);
	CU_ASSERT(err == EINVAL || err == EOPNOTSUPP);
	err = falloc_op(&fx, &f.fh, 0, ORFS_FALLOC_INSERT_RANGE | ORFS_FALLOC_KEEP_SIZE, 0, 4096,
			0, NULL);
	CU_ASSERT(err == EINVAL || err == EOPNOTSUPP);
	CU_ASSERT_EQUAL(falloc_op(&fx, &f.fh, 0, 0, 0, 0, 0, NULL), EINVAL);
	CU_ASSERT_EQUAL(falloc_op(&fx, &f.fh, 0, 0, 0, 4096, 1, NULL), EINVAL);
	CU_ASSERT_EQUAL(falloc_op(&fx, &f.fh, 0, 0, 1ULL << 63, 4096, 0, NULL), EINVAL);
	/* The caller's right to write it; a directory; a read-only export. */
	CU_ASSERT_EQUAL(falloc_op(&fx, &f.fh, 1000, 0, 0, 4096, 0, NULL), EACCES);
	CU_ASSERT_EQUAL(create(&fx, ORFS_OP_MKDIR, &r, "fa-dir", 0777, 0, &d), 0);
	CU_ASSERT_EQUAL(falloc_op(&fx, &d.fh, 0, 0, 0, 4096, 0, NULL), EISDIR);
	CU_ASSERT_EQUAL(falloc_op(&fx_ro, &f.fh, 0, 0, 0, 4096, 0, NULL), EROFS);
	test_chg = NULL;
	CU_ASSERT_EQUAL(dirop(ORFS_OP_RMDIR, &r, "fa-dir"), 0);
	CU_ASSERT_EQUAL(dirop(ORFS_OP_UNLINK, &r, "fa"), 0);
}

/* SEEK of FH as UID; the place found into *AT. */
static int seek_op(const struct orfs_fh *fh, uint32_t uid, uint32_t whence, uint64_t off,
		   uint32_t reserved, uint64_t *at)
{
	struct orfs_seek_req sk = {
		.fh = *fh,
		.offset = htole64(off),
		.whence = htole32(whence),
		.reserved = htole32(reserved),
	};
	struct orfs_seek_rep rep;
	int err = body_op(&fx, ORFS_OP_SEEK, uid, &sk, sizeof(sk), &rep, sizeof(rep));

	if (!err)
		*at = le64toh(rep.offset);
	return err;
}

/*
 * SEEK: data and holes of a sparse file as lseek(2) finds them on the
 * export (the test compares with it: a file system may see a hole only
 * in whole blocks), ENXIO at the end, the caller's right to read, what
 * the decoder refuses.
 */
static void test_seek(void)
{
	struct orfs_fh r = rootfh(&fx);
	struct orfs_entry_rep f, d;
	uint64_t at = 0;
	char p[300];
	int fd;

	CU_ASSERT_EQUAL_FATAL(create(&fx, ORFS_OP_CREATE, &r, "sparse", 0600, 0, &f), 0);
	snprintf(p, sizeof(p), "%s/sparse", root);
	fd = open(p, O_RDWR);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(pwrite(fd, "head", 4, 0), 4);
	CU_ASSERT_EQUAL(pwrite(fd, "tail", 4, 4 << 20), 4);
	CU_ASSERT_EQUAL(fsync(fd), 0);
	CU_ASSERT_EQUAL(seek_op(&f.fh, 0, ORFS_SEEK_HOLE, 0, 0, &at), 0);
	CU_ASSERT_EQUAL(at, (uint64_t)lseek(fd, 0, SEEK_HOLE));
	CU_ASSERT(at >= 4 && at < 4 << 20);
	CU_ASSERT_EQUAL(seek_op(&f.fh, 0, ORFS_SEEK_DATA, at, 0, &at), 0);
	CU_ASSERT_EQUAL(at, (uint64_t)lseek(fd, 1 << 20, SEEK_DATA));
	CU_ASSERT(at > 4 && at <= 4 << 20);
	CU_ASSERT_EQUAL(seek_op(&f.fh, 0, ORFS_SEEK_HOLE, 4 << 20, 0, &at), 0);
	CU_ASSERT_EQUAL(at, (4 << 20) + 4);
	CU_ASSERT_EQUAL(seek_op(&f.fh, 0, ORFS_SEEK_DATA, (4 << 20) + 4, 0, &at), ENXIO);
	CU_ASSERT_EQUAL(seek_op(&f.fh, 0, ORFS_SEEK_HOLE, 5 << 20, 0, &at), ENXIO);
	close(fd);
	/* Refused: other whences, a reserved field, a negative offset, rights, a directory. */
	CU_ASSERT_EQUAL(seek_op(&f.fh, 0, 2, 0, 0, &at), EINVAL);
	CU_ASSERT_EQUAL(seek_op(&f.fh, 0, ORFS_SEEK_DATA, 0, 1, &at), EINVAL);
	CU_ASSERT_EQUAL(seek_op(&f.fh, 0, ORFS_SEEK_DATA, 1ULL << 63, 0, &at), EINVAL);
	CU_ASSERT_EQUAL(seek_op(&f.fh, 1000, ORFS_SEEK_DATA, 0, 0, &at), EACCES);
	CU_ASSERT_EQUAL(create(&fx, ORFS_OP_MKDIR, &r, "seek-dir", 0755, 0, &d), 0);
	CU_ASSERT_EQUAL(seek_op(&d.fh, 0, ORFS_SEEK_DATA, 0, 0, &at), EISDIR);
	CU_ASSERT_EQUAL(dirop(ORFS_OP_RMDIR, &r, "seek-dir"), 0);
	CU_ASSERT_EQUAL(dirop(ORFS_OP_UNLINK, &r, "sparse"), 0);
}

/* COPY from SRC to DST as UID on export X; the reply into *REP. */
static int copy_op(const struct fsvc_export *x, const struct orfs_fh *src,
		   const struct orfs_fh *dst, uint32_t uid, uint64_t soff, uint64_t doff,
		   uint64_t len, uint32_t flags, struct orfs_copy_rep *rep)
{
	struct orfs_copy_req cp = {
		.src = *src,
		.dst = *dst,
		.src_offset = htole64(soff),
		.dst_offset = htole64(doff),
		.length = htole64(len),
		.flags = htole32(flags),
	};

	return body_op(x, ORFS_OP_COPY, uid, &cp, sizeof(cp), rep, sizeof(*rep));
}

/*
 * COPY: bytes copied on the server into the middle and past the end of
 * the destination, fewer at the source's end, ORFS_COPY_MAX at most a
 * request; the caller's rights on both files; what the decoder and the
 * kernel refuse; the destination's change counted.
 */
static void test_copy(void)
{
	static struct fsvc_chg chg;
	const uint64_t big = ORFS_COPY_MAX + 4096ULL;
	struct orfs_fh r = rootfh(&fx);
	struct orfs_entry_rep s, d, dir;
	struct orfs_copy_rep rep;
	char p[300], buf[64];
	uint64_t k;
	int fd;

	test_chg = &chg;
	CU_ASSERT_EQUAL_FATAL(create(&fx, ORFS_OP_CREATE, &r, "csrc", 0600, 0, &s), 0);
	CU_ASSERT_EQUAL_FATAL(create(&fx, ORFS_OP_CREATE, &r, "cdst", 0644, 0, &d), 0);
	snprintf(p, sizeof(p), "%s/csrc", root);
	fd = open(p, O_WRONLY);
	CU_ASSERT_EQUAL(pwrite(fd, "0123456789", 10, 0), 10);
	close(fd);
	snprintf(p, sizeof(p), "%s/cdst", root);
	fd = open(p, O_RDWR);
	CU_ASSERT_EQUAL(pwrite(fd, "abcdefgh", 8, 0), 8);
	CU_ASSERT_EQUAL(copy_op(&fx, &s.fh, &d.fh, 0, 2, 3, 4, 0, &rep), 0);
	CU_ASSERT_EQUAL(le64toh(rep.copied), 4);
	CU_ASSERT_EQUAL(le64toh(rep.attr.size), 8);
	k = attr_count(&rep.attr);
	CU_ASSERT_EQUAL(pread(fd, buf, 8, 0), 8);
	CU_ASSERT_EQUAL(memcmp(buf, "abc2345h", 8), 0);
	/* Past the destination's end, and cut at the source's. */
	CU_ASSERT_EQUAL(copy_op(&fx, &s.fh, &d.fh, 0, 6, 10, 100, 0, &rep), 0);
	CU_ASSERT_EQUAL(le64toh(rep.copied), 4);
	CU_ASSERT_EQUAL(le64toh(rep.attr.size), 14);
	CU_ASSERT_EQUAL(attr_count(&rep.attr), k + 1);
	CU_ASSERT_EQUAL(pread(fd, buf, 14, 0), 14);
	CU_ASSERT_EQUAL(memcmp(buf, "abc2345h\0\0" "6789", 14), 0);
	CU_ASSERT_EQUAL(copy_op(&fx, &s.fh, &d.fh, 0, 10, 0, 5, 0, &rep), 0);
	CU_ASSERT_EQUAL(le64toh(rep.copied), 0);
	CU_ASSERT_EQUAL(attr_count(&rep.attr), k + 1);	/* nothing copied, nothing counted */
	/* ORFS_COPY_MAX at most in one request. */
	snprintf(p, sizeof(p), "%s/csrc", root);
	CU_ASSERT_EQUAL(truncate(p, (off_t)big), 0);
	CU_ASSERT_EQUAL(copy_op(&fx, &s.fh, &d.fh, 0, 0, 0, big, 0, &rep), 0);
	CU_ASSERT_EQUAL(le64toh(rep.copied), ORFS_COPY_MAX);
	close(fd);
	/* Rights: read the source (0600, root's), write the destination (0644). */
	CU_ASSERT_EQUAL(copy_op(&fx, &s.fh, &d.fh, 1000, 0, 0, 4, 0, NULL), EACCES);
	snprintf(p, sizeof(p), "%s/csrc", root);
	CU_ASSERT_EQUAL(chmod(p, 0644), 0);
	CU_ASSERT_EQUAL(copy_op(&fx, &s.fh, &d.fh, 1000, 0, 0, 4, 0, NULL), EACCES);
	/* Refused: flags, the same range of one file, a directory, a read-only export. */
	CU_ASSERT_EQUAL(copy_op(&fx, &s.fh, &d.fh, 0, 0, 0, 4, 1, NULL), EINVAL);
	CU_ASSERT_EQUAL(copy_op(&fx, &d.fh, &d.fh, 0, 0, 2, 4, 0, NULL), EINVAL);
	CU_ASSERT_EQUAL(create(&fx, ORFS_OP_MKDIR, &r, "cdir", 0755, 0, &dir), 0);
	CU_ASSERT_EQUAL(copy_op(&fx, &s.fh, &dir.fh, 0, 0, 0, 4, 0, NULL), EISDIR);
	CU_ASSERT_EQUAL(copy_op(&fx_ro, &s.fh, &d.fh, 0, 0, 0, 4, 0, NULL), EROFS);
	test_chg = NULL;
	CU_ASSERT_EQUAL(dirop(ORFS_OP_RMDIR, &r, "cdir"), 0);
	CU_ASSERT_EQUAL(dirop(ORFS_OP_UNLINK, &r, "csrc"), 0);
	CU_ASSERT_EQUAL(dirop(ORFS_OP_UNLINK, &r, "cdst"), 0);
}

/* CLONE from SRC to DST as UID on X, FLAGS ORFS_CLONE_*. */
static int clone_op(const struct fsvc_export *x, const struct orfs_fh *src,
		    const struct orfs_fh *dst, uint32_t uid, uint64_t len, uint32_t flags,
		    struct orfs_copy_rep *rep)
{
	struct orfs_copy_req cp = {
		.src = *src,
		.dst = *dst,
		.length = htole64(len),
		.flags = htole32(flags),
	};
	struct orfs_copy_rep spare;

	return body_op(x, ORFS_OP_CLONE, uid, &cp, sizeof(cp), rep ? rep : &spare, sizeof(spare));
}

/*
 * CLONE: the export's file system decides (blocks shared, or its error:
 * this test's directory may be on any); the caller's rights on both
 * files, flags, directories and a read-only export are ours to refuse.
 */
static void test_clone(void)
{
	struct orfs_fh r = rootfh(&fx);
	struct orfs_entry_rep s, d, dir;
	struct orfs_copy_rep rep;
	char p[300], buf[8192];
	int fd, err;

	CU_ASSERT_EQUAL_FATAL(create(&fx, ORFS_OP_CREATE, &r, "ksrc", 0600, 0, &s), 0);
	CU_ASSERT_EQUAL_FATAL(create(&fx, ORFS_OP_CREATE, &r, "kdst", 0644, 0, &d), 0);
	memset(buf, 'k', sizeof(buf));
	snprintf(p, sizeof(p), "%s/ksrc", root);
	fd = open(p, O_WRONLY);
	CU_ASSERT_EQUAL(write(fd, buf, sizeof(buf)), (ssize_t)sizeof(buf));
	close(fd);
	err = clone_op(&fx, &s.fh, &d.fh, 0, 0, 0, &rep);
	CU_ASSERT(err == 0 || err == EOPNOTSUPP || err == EXDEV || err == EINVAL);
	if (!err) {
		CU_ASSERT_EQUAL(le64toh(rep.attr.size), sizeof(buf));
		err = clone_op(&fx, &s.fh, &d.fh, 0, sizeof(buf), ORFS_CLONE_DEDUPE, &rep);
		CU_ASSERT_EQUAL(err, 0);
		CU_ASSERT_EQUAL(le64toh(rep.copied), sizeof(buf));
	}
	/* Rights: read the source (0600, root's), write the destination (0644). */
	CU_ASSERT_EQUAL(clone_op(&fx, &s.fh, &d.fh, 1000, 0, 0, NULL), EACCES);
	CU_ASSERT_EQUAL(chmod(p, 0644), 0);
	CU_ASSERT_EQUAL(clone_op(&fx, &s.fh, &d.fh, 1000, 0, 0, NULL), EACCES);
	/* Refused: unknown flags, a directory, a read-only export. */
	CU_ASSERT_EQUAL(clone_op(&fx, &s.fh, &d.fh, 0, 0, 2, NULL), EINVAL);
	CU_ASSERT_EQUAL(create(&fx, ORFS_OP_MKDIR, &r, "kdir", 0755, 0, &dir), 0);
	CU_ASSERT_EQUAL(clone_op(&fx, &s.fh, &dir.fh, 0, 0, 0, NULL), EISDIR);
	CU_ASSERT_EQUAL(clone_op(&fx_ro, &s.fh, &d.fh, 0, 0, 0, NULL), EROFS);
	CU_ASSERT_EQUAL(dirop(ORFS_OP_RMDIR, &r, "kdir"), 0);
	CU_ASSERT_EQUAL(dirop(ORFS_OP_UNLINK, &r, "ksrc"), 0);
	CU_ASSERT_EQUAL(dirop(ORFS_OP_UNLINK, &r, "kdst"), 0);
}

static void test_read_only(void)
{
	struct orfs_fh r = rootfh(&fx_ro);
	struct orfs_entry_rep e;

	CU_ASSERT_EQUAL(create(&fx_ro, ORFS_OP_CREATE, &r, "nope", 0644, 0, &e), EROFS);
	CU_ASSERT_EQUAL(create(&fx_ro, ORFS_OP_MKDIR, &r, "nope", 0755, 0, &e), EROFS);
	CU_ASSERT_EQUAL(lookup(&fx_ro, &r, "pub", 0, &e), 0);
}

/* An xattr request OP on FH as UID on X: NAME, with VALUE (SETXATTR) of its length. */
static int xattr_op(const struct fsvc_export *x, uint16_t op, const struct orfs_fh *fh,
		    uint32_t uid, const char *name, const char *value)
{
	struct orfs_fhop_req fo = { .fh = *fh, .size = htole32(64) };
	uint8_t out[128];
	struct rb b;
	uint32_t n;

	rb_start(&b, op, uid, uid);
	rb_put(&b, &fo, sizeof(fo));
	if (name)
		rb_name(&b, name);
	if (value)
		rb_blob(&b, value, (uint32_t)strlen(value));
	return run(x, &b, out, &n);
}

/* The calling thread's effective capabilities, from /proc. */
static uint64_t cap_eff(void)
{
	char line[128];
	uint64_t v = ~0ULL;
	FILE *f = fopen("/proc/thread-self/status", "r");

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %" SCNx64, &v) == 1)
			break;
	fclose(f);
	return v;
}

/*
 * Privileged xattrs: a user, or root on a squashed export, sets no
 * trusted.* or security.* xattr (file capabilities) on a file it may
 * write, even root's, and reads no trusted.*; root may. The thread acting
 * for a user holds no capability but those to switch back.
 */
static void test_privileged_xattrs(void)
{
	struct orfs_fh r = rootfh(&fx), rsq = rootfh(&fx_sq);
	struct orfs_entry_rep e, esq;
	uint64_t full = cap_eff();
	struct rb b;
	uint32_t n;
	int fd = -1;

	/* Root's file, writable by all: a user's write rights, no more. */
	CU_ASSERT_EQUAL_FATAL(create(&fx, ORFS_OP_CREATE, &r, "rootfile", 0666, 0, &e), 0);
	CU_ASSERT_EQUAL(lookup(&fx_sq, &rsq, "rootfile", 0, &esq), 0);
	CU_ASSERT_EQUAL(xattr_op(&fx, ORFS_OP_SETXATTR, &e.fh, 1000, "user.ok", "1"), 0);
	CU_ASSERT_EQUAL(xattr_op(&fx, ORFS_OP_SETXATTR, &e.fh, 1000, "trusted.evil", "1"), EPERM);
	CU_ASSERT_EQUAL(xattr_op(&fx, ORFS_OP_SETXATTR, &e.fh, 1000, "security.capability",
				 "\x01\x02\x03\x04"), EPERM);
	CU_ASSERT_EQUAL(xattr_op(&fx, ORFS_OP_SETXATTR, &e.fh, 1000, "security.evil", "1"), EPERM);
	CU_ASSERT_EQUAL(xattr_op(&fx_sq, ORFS_OP_SETXATTR, &esq.fh, 0, "trusted.evil", "1"), EPERM);
	CU_ASSERT_EQUAL(xattr_op(&fx_sq, ORFS_OP_SETXATTR, &esq.fh, 0, "security.evil", "1"),
			EPERM);
	CU_ASSERT_EQUAL(xattr_op(&fx, ORFS_OP_SETXATTR, &e.fh, 1000, "other.x", "1"), EOPNOTSUPP);
	CU_ASSERT_EQUAL(xattr_op(&fx, ORFS_OP_SETXATTR, &e.fh, 1000, "system.evil", "1"),
			EOPNOTSUPP);
	/* Root may; a user then reads no trusted.*, and removes nothing privileged. */
	CU_ASSERT_EQUAL(xattr_op(&fx, ORFS_OP_SETXATTR, &e.fh, 0, "trusted.mark", "root"), 0);
	CU_ASSERT_EQUAL(xattr_op(&fx, ORFS_OP_GETXATTR, &e.fh, 0, "trusted.mark", NULL), 0);
	CU_ASSERT_EQUAL(xattr_op(&fx, ORFS_OP_GETXATTR, &e.fh, 1000, "trusted.mark", NULL), EPERM);
	CU_ASSERT_EQUAL(xattr_op(&fx_sq, ORFS_OP_GETXATTR, &esq.fh, 0, "trusted.mark", NULL),
			EPERM);
	CU_ASSERT_EQUAL(xattr_op(&fx, ORFS_OP_REMOVEXATTR, &e.fh, 1000, "trusted.mark", NULL),
			EPERM);
	/* Anyone reads security.*, as locally (getcap): here there is none. */
	CU_ASSERT_EQUAL(xattr_op(&fx, ORFS_OP_GETXATTR, &e.fh, 1000, "security.capability", NULL),
			ENODATA);
	/* A user's list leaves out trusted.* (the kernel's rule, capabilities lowered). */
	{
		struct orfs_fhop_req fo = { .fh = e.fh, .size = htole32(64) };
		uint8_t out[128];

		rb_start(&b, ORFS_OP_LISTXATTR, 1000, 1000);
		rb_put(&b, &fo, sizeof(fo));
		CU_ASSERT_EQUAL(run(&fx, &b, out, &n), 0);
		CU_ASSERT_PTR_NOT_NULL(memmem(out + 8, n - 8, "user.ok", 8));
		CU_ASSERT_PTR_NULL(memmem(out + 8, n - 8, "trusted.mark", 13));
		rb_start(&b, ORFS_OP_LISTXATTR, 0, 0);
		rb_put(&b, &fo, sizeof(fo));
		CU_ASSERT_EQUAL(run(&fx, &b, out, &n), 0);
		CU_ASSERT_PTR_NOT_NULL(memmem(out + 8, n - 8, "trusted.mark", 13));
	}
	/* The thread in a user's credentials: CAP_SETUID and CAP_SETGID only. */
	CU_ASSERT_NOT_EQUAL(full & (1ULL << CAP_SYS_ADMIN), 0);
	rb_start(&b, ORFS_OP_LOOKUP, 1000, 1000);
	rb_put(&b, &r, sizeof(r));
	rb_name(&b, "rootfile");
	CU_ASSERT_EQUAL(exec_fd(&fx, &b, &fd, NULL, NULL), 0);
	CU_ASSERT_EQUAL(cap_eff(), (1ULL << CAP_SETUID) | (1ULL << CAP_SETGID));
	/* Squashed root: the same. */
	rb_start(&b, ORFS_OP_LOOKUP, 0, 0);
	rb_put(&b, &rsq, sizeof(rsq));
	rb_name(&b, "rootfile");
	CU_ASSERT_EQUAL(exec_fd(&fx_sq, &b, &fd, NULL, NULL), 0);
	CU_ASSERT_EQUAL(cap_eff(), (1ULL << CAP_SETUID) | (1ULL << CAP_SETGID));
	/* Root again: everything the thread had. */
	rb_start(&b, ORFS_OP_LOOKUP, 0, 0);
	rb_put(&b, &r, sizeof(r));
	rb_name(&b, "rootfile");
	CU_ASSERT_EQUAL(exec_fd(&fx, &b, &fd, NULL, NULL), 0);
	CU_ASSERT_EQUAL(cap_eff(), full);
	if (fd >= 0)
		close(fd);
	CU_ASSERT_EQUAL_FATAL(fsvc_cred_reset(), 0);
	CU_ASSERT_EQUAL(cap_eff(), full);
	CU_ASSERT_EQUAL(dirop(ORFS_OP_UNLINK, &r, "rootfile"), 0);
}

/* An inline WRITE of "x" at 0 to FH on X as UID (gid UID); returns the errno. */
static int write_as(const struct fsvc_export *x, const struct orfs_fh *fh, uint32_t uid)
{
	struct orfs_io_req io = { .fh = *fh, .offset = 0, .length = htole32(1) };
	uint8_t out[256];
	struct rb b;
	uint32_t n;

	rb_start(&b, ORFS_OP_WRITE, uid, uid);
	rb_put(&b, &io, sizeof(io));
	rb_inline(&b, "x", 1);
	return run(x, &b, out, &n);
}

/*
 * A write by a caller who may write a set-id file but is not root drops
 * the set-id bits, as the kernel does locally, though the server's thread
 * holds CAP_FSETID; root's write keeps them.
 */
static void test_write_kills_setid(void)
{
	struct orfs_fh r = rootfh(&fx);
	struct orfs_entry_rep pub, e;
	struct stat st;
	char p[300];

	CU_ASSERT_EQUAL_FATAL(lookup(&fx, &r, "pub", 0, &pub), 0);
	CU_ASSERT_EQUAL_FATAL(create(&fx, ORFS_OP_CREATE, &pub.fh, "setid", 06777, 0, &e), 0);
	snprintf(p, sizeof(p), "%s/pub/setid", root);
	CU_ASSERT_EQUAL(chmod(p, 06777), 0);
	CU_ASSERT_EQUAL(write_as(&fx, &e.fh, 0), 0);
	CU_ASSERT_EQUAL(stat(p, &st), 0);
	CU_ASSERT_EQUAL(st.st_mode & 07777, 06777);
	CU_ASSERT_EQUAL(write_as(&fx, &e.fh, 1000), 0);
	CU_ASSERT_EQUAL(stat(p, &st), 0);
	CU_ASSERT_EQUAL(st.st_mode & 07777, 0777);
	/* Set-group-ID without group execute, the caller in another group: dropped too. */
	CU_ASSERT_EQUAL(chmod(p, 02666), 0);
	CU_ASSERT_EQUAL(write_as(&fx, &e.fh, 1000), 0);
	CU_ASSERT_EQUAL(stat(p, &st), 0);
	CU_ASSERT_EQUAL(st.st_mode & 07777, 0666);
	/* Squashed root is no root. */
	CU_ASSERT_EQUAL(chmod(p, 04777), 0);
	CU_ASSERT_EQUAL(write_as(&fx_sq, &e.fh, 0), 0);
	CU_ASSERT_EQUAL(stat(p, &st), 0);
	CU_ASSERT_EQUAL(st.st_mode & 07777, 0777);
	/*
	 * A user's ftruncate (size and "modification time now", as the client
	 * sends it): allowed by write permission alone, bits dropped, size set.
	 */
	{
		struct orfs_setattr_req sa;
		struct rb b;

		CU_ASSERT_EQUAL(chmod(p, 06777), 0);
		memset(&sa, 0, sizeof(sa));
		sa.fh = e.fh;
		sa.valid = htole32(ORFS_SET_SIZE | ORFS_SET_MTIME_NOW);
		sa.size = htole64(1);
		rb_start(&b, ORFS_OP_SETATTR, 1000, 1000);
		rb_put(&b, &sa, sizeof(sa));
		CU_ASSERT_EQUAL(run(&fx, &b, NULL, NULL), 0);
		CU_ASSERT_EQUAL(stat(p, &st), 0);
		CU_ASSERT_EQUAL(st.st_mode & 07777, 0777);
		CU_ASSERT_EQUAL(st.st_size, 1);
		/* An explicit time stays the owner's. */
		sa.valid = htole32(ORFS_SET_MTIME);
		rb_start(&b, ORFS_OP_SETATTR, 1000, 1000);
		rb_put(&b, &sa, sizeof(sa));
		CU_ASSERT_EQUAL(run(&fx, &b, NULL, NULL), EPERM);
	}
	/*
	 * The write done on a thread that holds CAP_FSETID (a progress thread,
	 * root): the kernel keeps the bits, the server drops them for the caller.
	 */
	{
		struct orfs_io_req io = { .fh = e.fh, .offset = 0, .length = htole32(1) };
		uint8_t out[256];
		struct fsvc_req rq;
		struct rb b;
		uint32_t n;
		int fd;

		CU_ASSERT_EQUAL(chmod(p, 06777), 0);
		rb_start(&b, ORFS_OP_WRITE, 1000, 1000);
		rb_put(&b, &io, sizeof(io));
		rb_inline(&b, "y", 1);
		CU_ASSERT_EQUAL_FATAL(fsvc_decode(&fx, b.buf, b.len, 4096, &rq), 0);
		fd = open(p, O_RDWR | O_CLOEXEC);
		CU_ASSERT_FATAL(fd >= 0);
		CU_ASSERT_EQUAL(fsvc_io_inline(&rq, fd, out, sizeof(out), &n, 0, NULL), 0);
		close(fd);
		CU_ASSERT_EQUAL(stat(p, &st), 0);
		CU_ASSERT_EQUAL(st.st_mode & 07777, 0777);
		CU_ASSERT_EQUAL_FATAL(fsvc_cred_reset(), 0);
	}
	CU_ASSERT_EQUAL(unlink(p), 0);
}

/* SETATTR of FH's size to SIZE as UID, with VALID's flags beside ORFS_SET_SIZE. */
static int truncate_as(const struct orfs_fh *fh, uint32_t uid, uint32_t valid, uint64_t size)
{
	struct orfs_setattr_req sa;
	struct rb b;

	memset(&sa, 0, sizeof(sa));
	sa.fh = *fh;
	sa.valid = htole32(ORFS_SET_SIZE | valid);
	sa.size = htole64(size);
	rb_start(&b, ORFS_OP_SETATTR, uid, uid);
	rb_put(&b, &sa, sizeof(sa));
	return run(&fx, &b, NULL, NULL);
}

/* FSYNC of FH as UID. */
static int fsync_as(const struct orfs_fh *fh, uint32_t uid)
{
	struct orfs_fhop_req f;
	struct rb b;

	memset(&f, 0, sizeof(f));
	f.fh = *fh;
	rb_start(&b, ORFS_OP_FSYNC, uid, uid);
	rb_put(&b, &f, sizeof(f));
	return run(&fx, &b, NULL, NULL);
}

/* MKNOD of DIR/NAME with MODE and RDEV (major << 32 | minor) as UID on X. */
static int mknod_dev(const struct fsvc_export *x, const struct orfs_fh *dir, const char *name,
		     uint32_t mode, uint64_t rdev, uint32_t uid, struct orfs_entry_rep *rep)
{
	struct orfs_entry_rep spare;
	struct orfs_create_req c;
	struct rb b;
	uint32_t n;

	memset(&c, 0, sizeof(c));
	c.dir = *dir;
	c.mode = htole32(mode);
	c.rdev = htole64(rdev);
	rb_start(&b, ORFS_OP_MKNOD, uid, uid);
	rb_put(&b, &c, sizeof(c));
	rb_name(&b, name);
	return run(x, &b, rep ? rep : &spare, &n);
}

/*
 * Device nodes: made for unsquashed root with their numbers, refused to a
 * user and to squashed root, numbers outside dev_t refused; the server
 * never opens one (READ, WRITE, FSYNC, truncate answer without an open).
 */
static void test_devices(void)
{
	struct orfs_fh r = rootfh(&fx);
	struct orfs_entry_rep pub, e;
	struct stat st;
	char p[300];
	uint8_t out[256];
	struct rb b;
	uint32_t n;

	CU_ASSERT_EQUAL_FATAL(lookup(&fx, &r, "pub", 0, &pub), 0);
	CU_ASSERT_EQUAL_FATAL(mknod_dev(&fx, &pub.fh, "null", S_IFCHR | 0666, 1ULL << 32 | 3, 0,
					&e), 0);
	CU_ASSERT_TRUE(S_ISCHR(le32toh(e.attr.mode)));
	CU_ASSERT_EQUAL(le64toh(e.attr.rdev), 1ULL << 32 | 3);
	snprintf(p, sizeof(p), "%s/pub/null", root);
	CU_ASSERT_EQUAL(lstat(p, &st), 0);
	CU_ASSERT_TRUE(S_ISCHR(st.st_mode) && major(st.st_rdev) == 1 && minor(st.st_rdev) == 3);
	CU_ASSERT_EQUAL(mknod_dev(&fx, &pub.fh, "blk", S_IFBLK | 0600, 259ULL << 32 | 0xfffff, 0,
				  NULL), 0);
	/* Nobody but root may; squashed root is nobody. */
	CU_ASSERT_EQUAL(mknod_dev(&fx, &pub.fh, "u", S_IFCHR | 0666, 1ULL << 32 | 3, 1000, NULL),
			EPERM);
	CU_ASSERT_EQUAL(mknod_dev(&fx_sq, &pub.fh, "sq", S_IFCHR | 0666, 1ULL << 32 | 3, 0, NULL),
			EPERM);
	/* Numbers beyond dev_t, or a number on what is no device. */
	CU_ASSERT_EQUAL(mknod_dev(&fx, &pub.fh, "big", S_IFCHR | 0666, 4096ULL << 32, 0, NULL),
			EINVAL);
	CU_ASSERT_EQUAL(mknod_dev(&fx, &pub.fh, "big", S_IFBLK | 0666, 0x100000, 0, NULL), EINVAL);
	CU_ASSERT_EQUAL(mknod_dev(&fx, &pub.fh, "fifo", S_IFIFO | 0666, 5, 0, NULL), EINVAL);
	/* Never opened: a write to /dev/null would succeed, a read would give 0 bytes. */
	CU_ASSERT_EQUAL(write_as(&fx, &e.fh, 0), EINVAL);
	{
		struct orfs_io_req io = { .fh = e.fh, .offset = 0, .length = htole32(1) };

		rb_start(&b, ORFS_OP_READ, 0, 0);
		rb_put(&b, &io, sizeof(io));
		CU_ASSERT_EQUAL(run(&fx, &b, out, &n), EINVAL);
	}
	CU_ASSERT_EQUAL(fsync_as(&e.fh, 0), EINVAL);
	CU_ASSERT_EQUAL(truncate_as(&e.fh, 0, 0, 0), EINVAL);
	CU_ASSERT_EQUAL(unlink(p), 0);
	snprintf(p, sizeof(p), "%s/pub/blk", root);
	CU_ASSERT_EQUAL(unlink(p), 0);
}

/*
 * A descriptor open for writing keeps its right (ORFS_SET_SIZE_OPEN):
 * the owner of a file whose mode denies writing may set its size so,
 * and loses its set-id bits as by its own truncate; nobody else may; the
 * flag alone, or with no size, is refused.
 */
static void test_truncate_open(void)
{
	struct orfs_fh r = rootfh(&fx);
	struct orfs_entry_rep pub, e;
	struct stat st;
	char p[300];
	int fd;

	CU_ASSERT_EQUAL_FATAL(lookup(&fx, &r, "pub", 0, &pub), 0);
	CU_ASSERT_EQUAL_FATAL(create(&fx, ORFS_OP_CREATE, &pub.fh, "mode0", 0, 0, &e), 0);
	snprintf(p, sizeof(p), "%s/pub/mode0", root);
	fd = open(p, O_WRONLY | O_CLOEXEC);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(write(fd, "0123456789", 10), 10);
	close(fd);
	CU_ASSERT_EQUAL(chown(p, 1000, 1000), 0);
	CU_ASSERT_EQUAL(chmod(p, 04000), 0);
	/* A path's truncate: write permission decides, as for the owner locally. */
	CU_ASSERT_EQUAL(truncate_as(&e.fh, 1000, 0, 8), EACCES);
	/* Another user, even claiming a descriptor: refused. */
	CU_ASSERT_EQUAL(truncate_as(&e.fh, 1001, ORFS_SET_SIZE_OPEN, 8), EACCES);
	CU_ASSERT_EQUAL(stat(p, &st), 0);
	CU_ASSERT_EQUAL(st.st_size, 10);
	/* The owner through its descriptor: done, set-user-ID dropped. */
	CU_ASSERT_EQUAL(truncate_as(&e.fh, 1000, ORFS_SET_SIZE_OPEN, 4), 0);
	CU_ASSERT_EQUAL(stat(p, &st), 0);
	CU_ASSERT_EQUAL(st.st_size, 4);
	CU_ASSERT_EQUAL(st.st_mode & 07777, 0);
	/* So for the owner's READ and WRITE (from its descriptors), not another's. */
	CU_ASSERT_EQUAL(write_as(&fx, &e.fh, 1001), EACCES);
	CU_ASSERT_EQUAL(write_as(&fx, &e.fh, 1000), 0);
	CU_ASSERT_EQUAL(fsync_as(&e.fh, 1001), EACCES);
	CU_ASSERT_EQUAL(fsync_as(&e.fh, 1000), 0);
	/* Squashed root is the anonymous user, not the owner. */
	CU_ASSERT_EQUAL(chown(p, 0, 0), 0);
	{
		struct orfs_setattr_req sa;
		struct rb b;

		memset(&sa, 0, sizeof(sa));
		sa.fh = e.fh;
		sa.valid = htole32(ORFS_SET_SIZE | ORFS_SET_SIZE_OPEN);
		rb_start(&b, ORFS_OP_SETATTR, 0, 0);
		rb_put(&b, &sa, sizeof(sa));
		CU_ASSERT_EQUAL(run(&fx_sq, &b, NULL, NULL), EACCES);
		/* The flag without a size, or a flag nobody knows. */
		sa.valid = htole32(ORFS_SET_SIZE_OPEN);
		rb_start(&b, ORFS_OP_SETATTR, 0, 0);
		rb_put(&b, &sa, sizeof(sa));
		CU_ASSERT_EQUAL(run(&fx, &b, NULL, NULL), EINVAL);
		sa.valid = htole32(ORFS_SET_SIZE | 0x200);
		rb_start(&b, ORFS_OP_SETATTR, 0, 0);
		rb_put(&b, &sa, sizeof(sa));
		CU_ASSERT_EQUAL(run(&fx, &b, NULL, NULL), EINVAL);
	}
	CU_ASSERT_EQUAL(stat(p, &st), 0);
	CU_ASSERT_EQUAL(st.st_uid, 0);
	CU_ASSERT_EQUAL_FATAL(fsvc_cred_reset(), 0);
	CU_ASSERT_EQUAL(unlink(p), 0);
}

/* A LOCK of FH by (CLIENT, owner 1) as UID, with the table LK (or none). */
static int lock_op(struct locks *lk, uint64_t client, const struct orfs_fh *fh, uint32_t uid,
		   uint32_t type, uint32_t flags, uint64_t start, uint64_t end,
		   struct orfs_lock_rep *rep)
{
	struct orfs_lock_req l;
	struct fsvc_req rq;
	struct rb b;
	uint32_t n;
	int fd = -1, err;

	memset(&l, 0, sizeof(l));
	l.fh = *fh;
	l.owner = htole64(1);
	l.start = htole64(start);
	l.end = htole64(end);
	l.type = htole32(type);
	l.flags = htole32(flags);
	rb_start(&b, ORFS_OP_LOCK, uid, uid);
	rb_put(&b, &l, sizeof(l));
	rb_inline(&b, NULL, 0);
	err = fsvc_decode(&fx, b.buf, b.len, 4096, &rq);
	if (err)
		return err;
	rq.locks = lk;
	rq.client_id = client;
	err = fsvc_execute(&fx, &rq, &fd, rep, sizeof(*rep), &n);
	if (fd >= 0)
		close(fd);
	CU_ASSERT_EQUAL_FATAL(fsvc_cred_reset(), 0);
	CU_ASSERT(err || n == sizeof(*rep));
	return err;
}

static void test_locks_service(void)
{
	struct orfs_fh r = rootfh(&fx);
	struct orfs_entry_rep f, d, fifo;
	struct orfs_lock_rep rep;
	struct locks lk;

	locks_init(&lk, 60);
	locks_attach(&lk, 1, 1);
	locks_attach(&lk, 2, 1);
	CU_ASSERT_EQUAL(create(&fx, ORFS_OP_CREATE, &r, "lockme", 0644, 0, &f), 0);
	/* Malformed requests. */
	CU_ASSERT_EQUAL(lock_op(&lk, 1, &f.fh, 0, 0, 0, 0, 9, &rep), EINVAL);
	CU_ASSERT_EQUAL(lock_op(&lk, 1, &f.fh, 0, 4, 0, 0, 9, &rep), EINVAL);
	CU_ASSERT_EQUAL(lock_op(&lk, 1, &f.fh, 0, ORFS_LOCK_READ, 32, 0, 9, &rep), EINVAL);
	/* WAIT alone, with TEST (the owner stopped waiting) or with HOLD; HOLD alone. */
	CU_ASSERT_EQUAL(lock_op(&lk, 1, &f.fh, 0, ORFS_LOCK_READ, ORFS_LOCK_HOLD | ORFS_LOCK_TEST,
				0, 9, &rep), EINVAL);
	CU_ASSERT_EQUAL(lock_op(&lk, 1, &f.fh, 0, ORFS_LOCK_UNLOCK, ORFS_LOCK_HOLD, 0, 9, &rep),
			EINVAL);
	CU_ASSERT_EQUAL(lock_op(&lk, 1, &f.fh, 0, ORFS_LOCK_READ, ORFS_LOCK_HOLD | ORFS_LOCK_RECLAIM,
				0, 9, &rep), EINVAL);
	CU_ASSERT_EQUAL(lock_op(&lk, 1, &f.fh, 0, ORFS_LOCK_READ, ORFS_LOCK_HOLD, 0, 9, &rep), 0);
	CU_ASSERT_EQUAL(lock_op(&lk, 1, &f.fh, 0, ORFS_LOCK_READ,
				ORFS_LOCK_WAIT | ORFS_LOCK_HOLD | ORFS_LOCK_TEST, 0, 9, &rep), EINVAL);
	CU_ASSERT_EQUAL(lock_op(&lk, 1, &f.fh, 0, ORFS_LOCK_READ, ORFS_LOCK_WAIT | ORFS_LOCK_HOLD,
				0, 9, &rep), 0);
	CU_ASSERT_EQUAL(lock_op(&lk, 1, &f.fh, 0, ORFS_LOCK_UNLOCK, 0, 0, 9, &rep), 0);
	CU_ASSERT_EQUAL(lock_op(&lk, 1, &f.fh, 0, ORFS_LOCK_READ, ORFS_LOCK_WAIT | ORFS_LOCK_RECLAIM,
				0, 9, &rep), EINVAL);
	CU_ASSERT_EQUAL(lock_op(&lk, 1, &f.fh, 0, ORFS_LOCK_READ,
				ORFS_LOCK_WAIT | ORFS_LOCK_TEST | ORFS_LOCK_REVOKED_SEEN, 0, 9, &rep),
			EINVAL);
	CU_ASSERT_EQUAL(lock_op(&lk, 1, &f.fh, 0, ORFS_LOCK_READ, ORFS_LOCK_WAIT | ORFS_LOCK_TEST,
				0, 9, &rep), 0);
	/* REVOKED_SEEN only with TEST. */
	CU_ASSERT_EQUAL(lock_op(&lk, 1, &f.fh, 0, ORFS_LOCK_READ, ORFS_LOCK_REVOKED_SEEN, 0, 9, &rep),
			EINVAL);
	CU_ASSERT_EQUAL(lock_op(&lk, 1, &f.fh, 0, ORFS_LOCK_READ,
				ORFS_LOCK_TEST | ORFS_LOCK_REVOKED_SEEN, 0, 9, &rep), 0);
	CU_ASSERT_EQUAL(lock_op(&lk, 1, &f.fh, 0, ORFS_LOCK_UNLOCK, ORFS_LOCK_TEST, 0, 9, &rep),
			EINVAL);
	CU_ASSERT_EQUAL(lock_op(&lk, 1, &f.fh, 0, ORFS_LOCK_READ, 0, 10, 9, &rep), EINVAL);
	CU_ASSERT_EQUAL(lock_op(NULL, 1, &f.fh, 0, ORFS_LOCK_READ, 0, 0, 9, &rep), ENOLCK);
	/* A user who may read, not write, the file: a read lock only. */
	CU_ASSERT_EQUAL(lock_op(&lk, 1, &f.fh, 1000, ORFS_LOCK_WRITE, 0, 0, 9, &rep), EACCES);
	CU_ASSERT_EQUAL(lock_op(&lk, 1, &f.fh, 1000, ORFS_LOCK_READ, 0, 0, 9, &rep), 0);
	CU_ASSERT_EQUAL(le32toh(rep.type), ORFS_LOCK_READ);
	/* Another client: its write lock is refused, TEST names the reader. */
	CU_ASSERT_EQUAL(lock_op(&lk, 2, &f.fh, 0, ORFS_LOCK_WRITE, 0, 5, UINT64_MAX, &rep), EAGAIN);
	CU_ASSERT_EQUAL(lock_op(&lk, 2, &f.fh, 1000, ORFS_LOCK_WRITE, ORFS_LOCK_TEST, 5, 5, &rep), 0);
	CU_ASSERT_EQUAL(le32toh(rep.type), ORFS_LOCK_READ);
	CU_ASSERT_EQUAL(le64toh(rep.start), 0);
	CU_ASSERT_EQUAL(le64toh(rep.end), 9);
	/* Unlocking needs no permission; then the writer gets it. */
	CU_ASSERT_EQUAL(lock_op(&lk, 1, &f.fh, 1000, ORFS_LOCK_UNLOCK, 0, 0, UINT64_MAX, &rep), 0);
	CU_ASSERT_EQUAL(lock_op(&lk, 2, &f.fh, 0, ORFS_LOCK_WRITE, 0, 5, UINT64_MAX, &rep), 0);
	CU_ASSERT_EQUAL(le64toh(rep.end), UINT64_MAX);
	/* A directory opens for reading only: a user who may read it may lock it. */
	CU_ASSERT_EQUAL(create(&fx, ORFS_OP_MKDIR, &r, "lockdir", 0755, 0, &d), 0);
	CU_ASSERT_EQUAL(lock_op(&lk, 1, &d.fh, 1000, ORFS_LOCK_WRITE, 0, 0, UINT64_MAX, &rep), 0);
	CU_ASSERT_EQUAL(lock_op(&lk, 2, &d.fh, 1000, ORFS_LOCK_READ, 0, 0, 0, &rep), EAGAIN);
	/* A FIFO is never opened (it would wait for a writer): refused. */
	CU_ASSERT_EQUAL(create(&fx, ORFS_OP_MKNOD, &r, "lockfifo", S_IFIFO | 0666, 0, &fifo), 0);
	CU_ASSERT_EQUAL(lock_op(&lk, 1, &fifo.fh, 0, ORFS_LOCK_WRITE, 0, 0, 9, &rep), EINVAL);
	locks_destroy(&lk);
}

/* The table of operations: every opcode of the protocol, nothing else. */
static void test_op_table(void)
{
	static const char *const names[] = {
		"SESSION", "GETROOT", "LOOKUP", "GETATTR", "SETATTR", "CREATE", "MKDIR", "MKNOD",
		"SYMLINK", "LINK", "UNLINK", "RMDIR", "RENAME", "READLINK", "READDIR", "STATFS",
		"READ", "WRITE", "FSYNC", "GETXATTR", "SETXATTR", "LISTXATTR", "REMOVEXATTR",
		"LOCK", "FALLOCATE", "SEEK", "COPY", "CLONE",
	};
	uint16_t op;

	CU_ASSERT_EQUAL(sizeof(names) / sizeof(names[0]), ORFS_OP_LAST - ORFS_OP_SESSION + 1);
	for (op = ORFS_OP_SESSION; op <= ORFS_OP_LAST; op++) {
		const char *n = fsvc_op_name(op);

		CU_ASSERT_PTR_NOT_NULL_FATAL(n);
		CU_ASSERT_STRING_EQUAL(n, names[op - ORFS_OP_SESSION]);
		/* What cannot be repeated changes something, or is a lock. */
		if (fsvc_op_nonidempotent(op))
			CU_ASSERT(fsvc_op_mutates(op) || op == ORFS_OP_LOCK);
	}
	CU_ASSERT_PTR_NULL(fsvc_op_name(ORFS_OP_SESSION - 1));
	CU_ASSERT_PTR_NULL(fsvc_op_name(ORFS_OP_LAST + 1));
	CU_ASSERT_PTR_NULL(fsvc_op_name(0));
	CU_ASSERT(!fsvc_op_mutates(ORFS_OP_READ) && fsvc_op_mutates(ORFS_OP_WRITE));
	CU_ASSERT(fsvc_op_dir_fh(ORFS_OP_READDIR) && !fsvc_op_dir_fh(ORFS_OP_GETATTR));
	CU_ASSERT(fsvc_op_nonidempotent(ORFS_OP_CREATE) && !fsvc_op_nonidempotent(ORFS_OP_WRITE));
	CU_ASSERT(!fsvc_op_mutates(ORFS_OP_LAST + 1) && !fsvc_op_dir_fh(ORFS_OP_LAST + 1));
}

int unit_add_fsvc_suite(void)
{
	CU_pSuite s = CU_add_suite("file service", setup, teardown);

	if (!s ||
	    !CU_add_test(s, "the operations' table: every opcode, its name and needs", test_op_table) ||
	    !CU_add_test(s, "handles: stable, sealed, per export, stale after removal", test_handles) ||
	    !CU_add_test(s, "handles outside the export: directories refused, all with subtree_check",
			 test_subtree_check) ||
	    !CU_add_test(s, "containment: components only, symlinks never followed", test_containment) ||
	    !CU_add_test(s, "namespace: create, mkdir, mknod, symlink, link, rename, remove", test_namespace_ops) ||
	    !CU_add_test(s, "attributes, inline I/O, xattrs", test_attrs_and_io) ||
	    !CU_add_test(s, "the change attribute moves at each change, within a tick too",
			 test_change_counts) ||
	    !CU_add_test(s, "a directory's change attribute moves at each change of its entries",
			 test_dir_change_counts) ||
	    !CU_add_test(s, "readdir resumes with cookies over 300 entries", test_readdir) ||
	    !CU_add_test(s, "credentials per request, root squash", test_credentials) ||
	    !CU_add_test(s, "credentials kept between requests, directories kept open",
			 test_kept_credentials) ||
	    !CU_add_test(s, "read-only export", test_read_only) ||
	    !CU_add_test(s, "a write by a user drops the set-id bits; root's keeps them",
			 test_write_kills_setid) ||
	    !CU_add_test(s, "a descriptor's truncate: the owner's right kept, nobody else's",
			 test_truncate_open) ||
	    !CU_add_test(s, "device nodes: root's, with their numbers; never opened", test_devices) ||
	    !CU_add_test(s, "privileged xattrs: root's alone; a user's thread holds no capability",
			 test_privileged_xattrs) ||
	    !CU_add_test(s, "FALLOCATE: allocate, keep the size, punch, zero; rights", test_fallocate) ||
	    !CU_add_test(s, "SEEK: data and holes, the end, rights", test_seek) ||
	    !CU_add_test(s, "COPY: on the server, cut at the end and at its bound; rights", test_copy) ||
	    !CU_add_test(s, "CLONE: the file system's sharing or error; rights and refusals",
			 test_clone) ||
	    !CU_add_test(s, "a fixed thread runs only its own credentials' requests, here",
			 test_fixed_thread) ||
	    !CU_add_test(s, "a TCP progress thread runs anyone's requests, as them, here",
			 test_switching_thread) ||
	    !CU_add_test(s, "a progress thread that may not switch credentials is fixed",
			 test_unswitchable_thread) ||
	    !CU_add_test(s, "open-file cache: keys, age, permissions, names, bounds", test_fdcache) ||
	    !CU_add_test(s, "write verifiers: WRITE and FSYNC answer it, a lost sync moves it",
			 test_write_verifier) ||
	    !CU_add_test(s, "LOCK: decoding, permissions, two clients, no FIFO",
			 test_locks_service))
		return -1;
	return 0;
}

// SPDX-License-Identifier: GPL-2.0-only
/*
 * File service (ORFS): request decoding and execution.
 *
 * Handles: name_to_handle_at() gives the file system's own handle, stable
 * across restarts; the server seals it with SipHash-2-4 under a key kept in
 * its state directory, so only handles it issued open (open_by_handle_at()
 * as root, then the operation as the caller). Names are single components
 * resolved with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
 * RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV) or the *at() calls that never
 * follow a trailing symlink. Operations that need a real descriptor reopen
 * the O_PATH one through /proc/self/fd as the caller, so the kernel checks
 * the caller's permissions; symlinks are never reopened that way.
 *
 * Credentials are per thread: raw setfsuid/setfsgid/setgroups system calls
 * (glibc's wrappers would change every thread of the process). So are
 * capabilities: a thread acting for anyone but root lowers every one it
 * holds but the two it needs to switch back (as knfsd's nfsd_setuser()
 * does), so that the kernel gives the caller no more than its credentials:
 * no privileged xattr, no file capability, no quota or reserved block
 * bypass, no set-id bit kept.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/ioctl.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "server/block.h"
#include "server/fsvc.h"
#include "server/proto.h"
#include "server/siphash.h"

#define FH_HANDLE_MAX	48

/*
 * The inside of struct orfs_fh: the kernel's handle and its seal. On a
 * subtree_check export the handle of a non-directory is followed by its
 * directory's, which PARENT describes: its length (bits 0-7) and type
 * (bits 16-31); 0 when there is none.
 */
struct fh_inner {
	uint16_t	len;		/* little-endian on the wire, opaque to clients */
	uint16_t	type;
	uint32_t	parent;
	uint8_t		handle[FH_HANDLE_MAX];
	uint64_t	mac;
};

#define FH_PARENT_LEN(p)	((p) & 0xffu)
#define FH_PARENT_TYPE(p)	((p) >> 16)
#define FH_PARENT_BAD(p)	((p) & 0xff00u)

/* A walk up from a directory to its export's root takes at most this many steps. */
#define FH_DEPTH_MAX	4096

_Static_assert(sizeof(struct fh_inner) == ORFS_FH_SIZE, "fh_inner layout");
_Static_assert(offsetof(struct fh_inner, mac) == FSVC_FH_ID, "the sealed part of a handle");

struct linux_dirent64_ {
	uint64_t	d_ino;
	int64_t		d_off;
	unsigned short	d_reclen;
	unsigned char	d_type;
	char		d_name[];
};

/* ---- credentials ------------------------------------------------------ */

/*
 * The credentials the calling thread is in. A worker stays in a caller's
 * credentials after an operation and switches only when the next one
 * needs others (or root, to open a handle): a switch costs five to eight
 * system calls. Thread-local because credentials are per thread in the
 * kernel too; a thread starts unknown, which forces the first switch.
 *
 * A progress thread (fsvc_cred_fix(), fsvc_cred_progress()) runs only
 * work of bounded cost (fsvc_runs_here()). A fixed one (fsvc_cred_fix())
 * never switches either: it runs only what needs the credentials it has,
 * and cred_set() answers FSVC_ELSEWHERE for others.
 */
struct cred_state {
	int		known;
	int		progress;
	int		fixed;
	struct fsvc_cred c;
	int		caps_read;	/* caps_high holds the thread's own set */
	int		caps_known;	/* caps_now is in force */
	uint64_t	caps_high;	/* effective set for root: what the thread had */
	uint64_t	caps_now;
	uint32_t	caps_perm[2], caps_inh[2];
};

static _Thread_local struct cred_state thread_cred;

/*
 * Credentials as the kernel checks them: supplementary groups sorted,
 * without repeats and without the fsgid, which is checked first anyway
 * (in_group_p()). Two requests that normalize alike have the same rights.
 */
static void cred_norm(struct fsvc_cred *c, uint32_t uid, uint32_t gid, uint32_t ngroups,
		      const uint32_t *groups)
{
	uint32_t i, j;

	c->uid = uid;
	c->gid = gid;
	c->ngroups = 0;
	for (i = 0; i < ngroups && i < ORFS_MAX_GROUPS; i++) {
		uint32_t g = groups[i];

		if (g == gid)
			continue;
		for (j = c->ngroups; j > 0 && c->groups[j - 1] > g; j--)
			;
		if (j > 0 && c->groups[j - 1] == g)
			continue;
		memmove(&c->groups[j + 1], &c->groups[j], (c->ngroups - j) * sizeof(*c->groups));
		c->groups[j] = g;
		c->ngroups++;
	}
}

static int cred_same(const struct fsvc_cred *a, const struct fsvc_cred *b)
{
	return a->uid == b->uid && a->gid == b->gid && a->ngroups == b->ngroups &&
	       !memcmp(a->groups, b->groups, a->ngroups * sizeof(*a->groups));
}

/*
 * The capabilities a thread keeps while it acts for a caller other than
 * root: CAP_SETUID and CAP_SETGID, which decide no access to a file but
 * let the thread switch to the next caller's credentials.
 */
#define CAP_KEEP_LOW	((1ULL << CAP_SETUID) | (1ULL << CAP_SETGID))

static int caps_read(struct cred_state *cs)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return errno;
	cs->caps_high = d[0].effective | (uint64_t)d[1].effective << 32;
	cs->caps_perm[0] = d[0].permitted;
	cs->caps_perm[1] = d[1].permitted;
	cs->caps_inh[0] = d[0].inheritable;
	cs->caps_inh[1] = d[1].inheritable;
	cs->caps_now = cs->caps_high;
	cs->caps_read = 1;
	cs->caps_known = 1;
	return 0;
}

/* Put the calling thread's effective capabilities to those root (or not) has. */
static int caps_for(struct cred_state *cs, int root)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];
	uint64_t want = root ? cs->caps_high : cs->caps_high & CAP_KEEP_LOW;
	int i;

	if (cs->caps_known && cs->caps_now == want)
		return 0;
	for (i = 0; i < 2; i++) {
		d[i].effective = (uint32_t)(want >> (32 * i));
		d[i].permitted = cs->caps_perm[i];
		d[i].inheritable = cs->caps_inh[i];
	}
	cs->caps_known = 0;
	if (syscall(SYS_capset, &h, d))
		return errno;
	cs->caps_now = want;
	cs->caps_known = 1;
	return 0;
}

static int cred_set(uint32_t uid, uint32_t gid, uint32_t ngroups, const uint32_t *groups)
{
	struct cred_state *cs = &thread_cred;
	struct fsvc_cred want;
	int err;

	cred_norm(&want, uid, gid, ngroups, groups);
	if (cs->known && cred_same(&cs->c, &want))
		return 0;
	if (cs->fixed)
		return FSVC_ELSEWHERE;
	/* Unknown until the switch is complete: after a failure the next call redoes it all. */
	cs->known = 0;
	if (!cs->caps_read) {
		err = caps_read(cs);
		if (err)
			return err;
	}
	if (syscall(SYS_setgroups, (int)want.ngroups, want.groups))
		return errno;
	syscall(SYS_setfsgid, gid);
	syscall(SYS_setfsuid, uid);
	/* Both calls report the previous value: read back what is in force. */
	if ((uint32_t)syscall(SYS_setfsuid, -1) != uid || (uint32_t)syscall(SYS_setfsgid, -1) != gid)
		return EPERM;
	/* setfsuid() moved only the file-system capabilities: now all the others. */
	err = caps_for(cs, uid == 0);
	if (err)
		return err;
	cs->c = want;
	cs->known = 1;
	return 0;
}

/* Root, without supplementary groups: open_by_handle_at() needs it. */
static int cred_root(void)
{
	static const uint32_t no_groups[1];

	return cred_set(0, 0, 0, no_groups);
}

/* The credentials RQ runs with on FX: its own, root squashed if FX says so. */
static void cred_wanted(const struct fsvc_export *fx, const struct fsvc_req *rq,
			struct fsvc_cred *c)
{
	uint32_t uid = rq->uid, gid = rq->gid;
	uint32_t groups[ORFS_MAX_GROUPS];
	int i;

	if (fx->squash == FSVC_SQUASH_ALL) {
		cred_norm(c, fx->anon_uid, fx->anon_gid, 0, NULL);
		return;
	}
	if (fx->squash) {
		if (uid == 0)
			uid = fx->anon_uid;
		if (gid == 0)
			gid = fx->anon_gid;
	}
	for (i = 0; i < rq->ngroups; i++)
		groups[i] = (fx->squash && rq->groups[i] == 0) ? fx->anon_gid : rq->groups[i];
	cred_norm(c, uid, gid, rq->ngroups, groups);
}

/* Enter RQ's credentials, squash applied (fsvc_decode() worked them out). */
static int cred_enter(const struct fsvc_req *rq)
{
	return cred_set(rq->eff.uid, rq->eff.gid, rq->eff.ngroups, rq->eff.groups);
}

int fsvc_cred_reset(void)
{
	if (thread_cred.fixed)
		return EPERM;
	thread_cred.known = 0;
	return cred_root();
}

int fsvc_cred_fix(void)
{
	struct cred_state *cs = &thread_cred;
	gid_t groups[ORFS_MAX_GROUPS];
	uint32_t g[ORFS_MAX_GROUPS];
	int i, n;

	n = getgroups(ORFS_MAX_GROUPS, groups);
	if (n < 0)
		return errno;
	for (i = 0; i < n; i++)
		g[i] = groups[i];
	/* -1 changes nothing: these only report what is in force. */
	cred_norm(&cs->c, (uint32_t)syscall(SYS_setfsuid, -1), (uint32_t)syscall(SYS_setfsgid, -1),
		  (uint32_t)n, g);
	cs->known = 1;
	cs->progress = 1;
	cs->fixed = 1;
	return 0;
}

int fsvc_cred_progress(void)
{
	struct cred_state *cs = &thread_cred;
	int err;

	if (!cs->caps_read) {
		err = caps_read(cs);
		if (err)
			return err;
	}
	/* Without the right to switch, it keeps what it has. */
	if ((cs->caps_high & CAP_KEEP_LOW) != CAP_KEEP_LOW)
		return fsvc_cred_fix();
	cs->progress = 1;
	return 0;
}

int fsvc_runs_here(const struct fsvc_export *fx, const struct fsvc_req *rq)
{
	const struct cred_state *cs = &thread_cred;
	struct fsvc_cred c;

	if (!cs->progress || !fx->in_memory)
		return 0;
	switch (rq->op) {
	case ORFS_OP_LOOKUP: case ORFS_OP_GETATTR: case ORFS_OP_CREATE: case ORFS_OP_MKDIR:
	case ORFS_OP_MKNOD: case ORFS_OP_SYMLINK: case ORFS_OP_LINK: case ORFS_OP_UNLINK:
	case ORFS_OP_RMDIR: case ORFS_OP_RENAME: case ORFS_OP_READLINK: case ORFS_OP_STATFS:
	case ORFS_OP_GETXATTR: case ORFS_OP_SETXATTR: case ORFS_OP_LISTXATTR:
	case ORFS_OP_REMOVEXATTR: case ORFS_OP_LOCK:
		break;
	case ORFS_OP_SETATTR:
		/* Cutting a file short frees its pages: as long as the file is big. */
		if (le32toh(rq->u.setattr.valid) & ORFS_SET_SIZE)
			return 0;
		break;
	default:
		/* READDIR: a long directory's cookie can cost a walk of it. */
		return 0;
	}
	if (!cs->fixed)
		return 1;	/* it switches as a worker does */
	/* Handles open as root (cred_root()). */
	cred_norm(&c, 0, 0, 0, NULL);
	if (!cred_same(&cs->c, &c))
		return 0;
	if (rq->op == ORFS_OP_GETATTR || rq->op == ORFS_OP_STATFS)
		return 1;	/* no caller's credentials (fsvc_execute()) */
	return cred_same(&cs->c, &rq->eff);
}

/* ---- handles ---------------------------------------------------------- */

/* Open DIRFD/NAME without following anything and without leaving the export. */
static int child_open(int dirfd, const char *name, int *fd)
{
	struct open_how how = {
		.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
			   RESOLVE_NO_XDEV,
	};

	*fd = (int)syscall(SYS_openat2, dirfd, name, &how, sizeof(how));
	return *fd < 0 ? errno : 0;
}

static void proc_path(int fd, char *path, size_t len)
{
	snprintf(path, len, "/proc/self/fd/%d", fd);
}

static mode_t fd_type(int fd)
{
	struct stat st;

	return fstat(fd, &st) ? 0 : (st.st_mode & S_IFMT);
}


/*
 * The seal covers the export's name and the handle of its root: a handle
 * opens only in the export that issued it, and no longer once the name
 * is given to another directory (a reload that re-points or narrows it).
 */
static uint64_t fh_seal(const struct fsvc_export *fx, const struct fh_inner *in)
{
	uint8_t buf[KNET_NAME_MAX + 1 + 2 * FSVC_FH_ID];
	size_t n = strlen(fx->name);

	memcpy(buf, fx->name, n);
	buf[n] = 0;
	memcpy(buf + n + 1, fx->root_id, FSVC_FH_ID);
	memcpy(buf + n + 1 + FSVC_FH_ID, in, FSVC_FH_ID);
	return siphash24(fx->key, buf, n + 1 + 2 * FSVC_FH_ID);
}

/* The file system's handle of NAME in DIRFD ("": DIRFD itself), unsealed. */
static int fh_inner_of(int dirfd, const char *name, struct fh_inner *in)
{
	struct {
		struct file_handle fh;
		unsigned char buf[MAX_HANDLE_SZ];
	} h;
	int mnt;

	h.fh.handle_bytes = MAX_HANDLE_SZ;
	if (name_to_handle_at(dirfd, name, &h.fh, &mnt, name[0] ? 0 : AT_EMPTY_PATH))
		return errno == EOVERFLOW ? EOPNOTSUPP : errno;
	if (h.fh.handle_bytes > FH_HANDLE_MAX)
		return EOPNOTSUPP;
	memset(in, 0, sizeof(*in));
	in->len = htole16((uint16_t)h.fh.handle_bytes);
	in->type = htole16((uint16_t)h.fh.handle_type);
	memcpy(in->handle, h.fh.f_handle, h.fh.handle_bytes);
	return 0;
}

/*
 * The handle of FD (a descriptor of the export) into FH; on a
 * subtree_check export, a non-directory's carries that of PARENTFD too,
 * its directory (-1: none, and the handle will not open there).
 */
static int fh_make(const struct fsvc_export *fx, int fd, int parentfd, struct orfs_fh *fh)
{
	struct fh_inner in, p;
	uint16_t len, plen, ptype;
	int err = fh_inner_of(fd, "", &in);

	if (err)
		return err;
	if (fx->subtree_check && parentfd >= 0 && fd_type(fd) != S_IFDIR) {
		err = fh_inner_of(parentfd, "", &p);
		if (err)
			return err;
		len = le16toh(in.len);
		plen = le16toh(p.len);
		ptype = le16toh(p.type);
		if (len + plen > FH_HANDLE_MAX)
			return EOPNOTSUPP;
		memcpy(in.handle + len, p.handle, plen);
		in.parent = htole32(plen | (uint32_t)ptype << 16);
	}
	in.mac = htole64(fh_seal(fx, &in));
	memcpy(fh, &in, sizeof(in));
	return 0;
}

int fsvc_make_fh(const struct fsvc_export *fx, int dirfd, const char *name, struct orfs_fh *fh)
{
	int fd, err;

	if (!name[0])
		return fh_make(fx, dirfd, -1, fh);
	fd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno;
	err = fh_make(fx, fd, dirfd, fh);
	close(fd);
	return err;
}

/*
 * Open the file system's handle of LEN bytes at BYTES, of TYPE, in FX's
 * file system, with FLAGS (as root: it needs CAP_DAC_READ_SEARCH).
 */
static int handle_open(const struct fsvc_export *fx, const uint8_t *bytes, unsigned int len,
		       uint16_t type, int flags)
{
	struct {
		struct file_handle fh;
		unsigned char buf[FH_HANDLE_MAX];
	} h;

	h.fh.handle_bytes = len;
	h.fh.handle_type = (int16_t)type;
	memcpy(h.fh.f_handle, bytes, len);
	return open_by_handle_at(fx->root_fd, &h.fh, flags | O_CLOEXEC);
}

/* Is directory FD (whose status is ST0) the export's root or beneath it? 0 or ESTALE. */
static int dir_beneath(const struct fsvc_export *fx, int fd, const struct stat *st0)
{
	struct stat st = *st0, up;
	int cur = fd, next, depth, err = ESTALE;

	for (depth = 0; depth < FH_DEPTH_MAX; depth++) {
		if (st.st_dev == fx->dev && st.st_ino == fx->root_ino) {
			err = 0;
			break;
		}
		/* Out of a bind mount's subtree, ".." fails: not beneath. */
		next = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (next < 0)
			break;
		if (cur != fd)
			close(cur);
		cur = next;
		if (fstat(cur, &up) || (up.st_dev == st.st_dev && up.st_ino == st.st_ino))
			break;	/* the top of the file system */
		st = up;
	}
	if (cur != fd)
		close(cur);
	return err;
}

/*
 * Is the file FD (whose status is ST) beneath the export by the name the
 * kernel knows it by (if it knows one)? 0 or ESTALE.
 */
static int file_named_beneath(const struct fsvc_export *fx, int fd, const struct stat *st)
{
	char path[32], root[PATH_MAX], name[PATH_MAX];
	struct stat s2;
	ssize_t rn, n;
	int nfd, err;

	proc_path(fx->root_fd, path, sizeof(path));
	rn = readlink(path, root, sizeof(root) - 1);
	proc_path(fd, path, sizeof(path));
	n = readlink(path, name, sizeof(name) - 1);
	if (rn <= 0 || n <= 0)
		return ESTALE;
	if (rn == 1)
		rn = 0;		/* the export is "/" */
	if (n <= rn + 1 || memcmp(name, root, (size_t)rn) || name[rn] != '/')
		return ESTALE;
	name[n] = 0;
	err = child_open(fx->root_fd, name + rn + 1, &nfd);
	if (err)
		return ESTALE;
	err = fstat(nfd, &s2) || s2.st_dev != st->st_dev || s2.st_ino != st->st_ino ? ESTALE : 0;
	close(nfd);
	return err;
}

/*
 * Is the file FD (whose status is ST) an entry of directory PFD? Every
 * entry of the directory is looked at. 0 or ESTALE.
 */
static int file_in(int pfd, const struct stat *st)
{
	struct dirent *de;
	struct stat s2;
	DIR *d;
	int dfd, err = ESTALE;

	dfd = openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return ESTALE;
	d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return ESTALE;
	}
	while ((de = readdir(d))) {
		if (de->d_ino != st->st_ino)
			continue;
		if (!fstatat(dfd, de->d_name, &s2, AT_SYMLINK_NOFOLLOW) &&
		    s2.st_dev == st->st_dev && s2.st_ino == st->st_ino) {
			err = 0;
			break;
		}
	}
	closedir(d);
	return err;
}

/*
 * subtree_check: is the non-directory FD (opened from IN, whose status is
 * ST) beneath the export? It must have a name beneath it that the kernel
 * knows (one it was found or renamed by since it was last in the cache),
 * or else be in the directory its handle carries, and that directory
 * beneath the export.
 */
static int file_beneath(const struct fsvc_export *fx, const struct fh_inner *in, int fd,
			const struct stat *st)
{
	uint32_t parent = le32toh(in->parent);
	struct stat pst;
	int pfd, err;

	if (!file_named_beneath(fx, fd, st))
		return 0;
	if (!FH_PARENT_LEN(parent))
		return ESTALE;
	pfd = handle_open(fx, in->handle + le16toh(in->len), FH_PARENT_LEN(parent),
			  (uint16_t)FH_PARENT_TYPE(parent), O_RDONLY | O_DIRECTORY);
	if (pfd < 0)
		return ESTALE;
	err = fstat(pfd, &pst) ? ESTALE : dir_beneath(fx, pfd, &pst);
	if (!err)
		err = file_in(pfd, st);
	close(pfd);
	return err;
}

/*
 * Open FH with FLAGS (as root: open_by_handle_at needs CAP_DAC_READ_SEARCH).
 * A directory must be beneath the export's root, and on a subtree_check
 * export anything.
 */
static int fh_open(const struct fsvc_export *fx, const struct orfs_fh *fh, int flags, int *fd)
{
	struct fh_inner in;
	struct stat st;
	uint32_t parent;
	int err;

	memcpy(&in, fh, sizeof(in));
	parent = le32toh(in.parent);
	if (le64toh(in.mac) != fh_seal(fx, &in) || FH_PARENT_BAD(parent) ||
	    le16toh(in.len) + FH_PARENT_LEN(parent) > FH_HANDLE_MAX)
		return ESTALE;
	err = cred_root();
	if (err)
		return err;
	*fd = handle_open(fx, in.handle, le16toh(in.len), le16toh(in.type), flags);
	if (*fd < 0)
		return (errno == ENOENT || errno == ESTALE || errno == EINVAL) ? ESTALE : errno;
	if (fstat(*fd, &st))
		err = errno;
	else if (S_ISDIR(st.st_mode))
		err = dir_beneath(fx, *fd, &st);
	else if (fx->subtree_check)
		err = file_beneath(fx, &in, *fd, &st);
	if (err) {
		close(*fd);
		*fd = -1;
	}
	return err;
}

/* ---- export ----------------------------------------------------------- */

int fsvc_export_open(struct fsvc_export *fx, const char *name, const char *path, int read_only,
		     int squash, const uint8_t *key, uint64_t boot)
{
	struct fh_inner root;
	struct statfs sfs;
	struct stat st;
	struct orfs_fh fh;
	int err;

	memset(fx, 0, sizeof(*fx));
	snprintf(fx->name, sizeof(fx->name), "%s", name);
	fx->read_only = read_only;
	fx->squash = squash;
	fx->anon_uid = FSVC_NOBODY;
	fx->anon_gid = FSVC_NOBODY;
	fx->boot = boot;
	memcpy(fx->key, key, sizeof(fx->key));
	/* A real descriptor: open_by_handle_at() refuses an O_PATH one. */
	fx->root_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fx->root_fd < 0 || fstat(fx->root_fd, &st)) {
		err = -errno;
		fprintf(stderr, "orfs-server: export %s: %s: %s\n", name, path, strerror(errno));
		if (fx->root_fd >= 0)
			close(fx->root_fd);
		fx->root_fd = -1;
		return err;
	}
	fx->dev = st.st_dev;
	fx->root_ino = st.st_ino;
	fx->in_memory = !fstatfs(fx->root_fd, &sfs) &&
			(sfs.f_type == TMPFS_MAGIC || sfs.f_type == RAMFS_MAGIC);
	/* The file system must give handles, or nothing will work. */
	err = fh_inner_of(fx->root_fd, "", &root);
	if (!err) {
		memcpy(fx->root_id, &root, FSVC_FH_ID);
		err = fsvc_make_fh(fx, fx->root_fd, "", &fh);
	}
	if (err) {
		fprintf(stderr, "orfs-server: export %s: %s gives no file handles: %s\n", name, path,
			strerror(err));
		close(fx->root_fd);
		fx->root_fd = -1;
		return -err;
	}
	return 0;
}

void fsvc_export_close(struct fsvc_export *fx)
{
	if (fx->root_fd >= 0)
		close(fx->root_fd);
	fx->root_fd = -1;
}

/* ---- decoding --------------------------------------------------------- */

struct cursor {
	const uint8_t	*p;
	uint32_t	left;
};

static int take(struct cursor *c, void *dst, uint32_t n)
{
	if (c->left < n)
		return EINVAL;
	memcpy(dst, c->p, n);
	c->p += n;
	c->left -= n;
	return 0;
}

/* A __le16-length string; a path component when COMPONENT. */
static int take_name(struct cursor *c, const char **s, uint32_t *n, int component)
{
	uint16_t len;
	uint32_t i;

	if (take(c, &len, sizeof(len)))
		return EINVAL;
	*n = le16toh(len);
	if (*n == 0 || *n > ORFS_NAME_MAX || *n > c->left)
		return *n > ORFS_NAME_MAX ? ENAMETOOLONG : EINVAL;
	*s = (const char *)c->p;
	for (i = 0; i < *n; i++)
		if ((*s)[i] == '\0' || (component && (*s)[i] == '/'))
			return EINVAL;
	if (component && ((*n == 1 && (*s)[0] == '.') ||
			  (*n == 2 && (*s)[0] == '.' && (*s)[1] == '.')))
		return EINVAL;
	c->p += *n;
	c->left -= *n;
	return 0;
}

/* A __le32-length blob of at most MAX bytes; no NUL inside when TEXT. */
static int take_blob(struct cursor *c, const char **s, uint32_t *n, uint32_t max, int text)
{
	uint32_t len;

	if (take(c, &len, sizeof(len)))
		return EINVAL;
	*n = le32toh(len);
	if (*n > max)
		return text ? ENAMETOOLONG : E2BIG;
	if (*n > c->left || (text && (!*n || memchr(c->p, 0, *n))))
		return EINVAL;
	*s = (const char *)c->p;
	c->p += *n;
	c->left -= *n;
	return 0;
}

/* What an operation needs around its handler (fsvc_ops[]). */
#define OP_MUTATES	0x01	/* refused on a read-only export */
#define OP_REPEAT_BAD	0x02	/* repeating it would fail or act twice (the replay cache) */
#define OP_DIR_FH	0x04	/* its handle is a directory the caller may keep open */
#define OP_NO_FH	0x08	/* no handle: runs before any is opened */
#define OP_FH2		0x10	/* a second handle */
#define OP_AS_SERVER	0x20	/* attributes: not protected beyond lookup */
#define OP_DATA		0x40	/* data the engine moves when in segments */

struct dec;
struct op_ctx;

/* One file service operation: its name, decoder, handler and needs. */
struct fsvc_op {
	const char	*name;
	int		(*decode)(struct dec *d, struct fsvc_req *rq);
	int		(*exec)(struct op_ctx *x);
	unsigned int	flags;
};

static const struct fsvc_op *fsvc_op(uint16_t op);

/*
 * Each operation's decoder: the body after struct orfs_req, at D's cursor,
 * into RQ. The table below (fsvc_ops[]) names it.
 */
struct dec {
	struct cursor	c;
	const void	*msg;		/* the whole message: segments, inline data */
	uint32_t	inline_max;
};

static int dec_none(struct dec *d, struct fsvc_req *rq)
{
	(void)d;
	(void)rq;
	return 0;
}

static int dec_session(struct dec *d, struct fsvc_req *rq)
{
	return take(&d->c, &rq->u.session, sizeof(rq->u.session));
}

/* LOOKUP, UNLINK, RMDIR: a directory and a name in it. */
static int dec_fh_name(struct dec *d, struct fsvc_req *rq)
{
	int err = take(&d->c, &rq->fh, sizeof(rq->fh));

	return err ? err : take_name(&d->c, &rq->name, &rq->name_len, 1);
}

/* GETATTR, READLINK, STATFS, LISTXATTR: a handle, no flags. */
static int dec_fhop(struct dec *d, struct fsvc_req *rq)
{
	int err = take(&d->c, &rq->u.fhop, sizeof(rq->u.fhop));

	rq->fh = rq->u.fhop.fh;
	return err;
}

static int dec_fsync(struct dec *d, struct fsvc_req *rq)
{
	int err = dec_fhop(d, rq);

	if (!err && (le32toh(rq->u.fhop.flags) & ~(uint32_t)(ORFS_FSYNC_DATA | ORFS_FSYNC_VERF)))
		err = EINVAL;
	return err;
}

/* GETXATTR, REMOVEXATTR: a handle and an attribute's name. */
static int dec_xattr_name(struct dec *d, struct fsvc_req *rq)
{
	int err = dec_fhop(d, rq);

	return err ? err : take_name(&d->c, &rq->name, &rq->name_len, 0);
}

static int dec_setxattr(struct dec *d, struct fsvc_req *rq)
{
	int err = dec_xattr_name(d, rq);

	if (!err)
		err = take_blob(&d->c, &rq->str2, &rq->str2_len, ORFS_XATTR_SIZE_MAX, 0);
	if (!err && (le32toh(rq->u.fhop.flags) & ~(uint32_t)(XATTR_CREATE | XATTR_REPLACE)))
		err = EINVAL;
	return err;
}

static int dec_setattr(struct dec *d, struct fsvc_req *rq)
{
	int err = take(&d->c, &rq->u.setattr, sizeof(rq->u.setattr));
	uint32_t valid = le32toh(rq->u.setattr.valid);

	rq->fh = rq->u.setattr.fh;
	if (!err && (valid & ~(uint32_t)(ORFS_SET_ALL | ORFS_SET_SIZE_OPEN)))
		err = EINVAL;
	if (!err && (valid & ORFS_SET_SIZE_OPEN) && !(valid & ORFS_SET_SIZE))
		err = EINVAL;
	if (!err && (valid & ORFS_SET_SIZE) && le64toh(rq->u.setattr.size) > INT64_MAX)
		err = EFBIG;
	return err;
}

/* CREATE, MKDIR: a directory, a name, a mode. */
static int dec_create(struct dec *d, struct fsvc_req *rq)
{
	int err = take(&d->c, &rq->u.create, sizeof(rq->u.create));

	rq->fh = rq->u.create.dir;
	if (!err)
		err = take_name(&d->c, &rq->name, &rq->name_len, 1);
	if (!err && (le32toh(rq->u.create.flags) & ~(uint32_t)ORFS_CREATE_EXCL))
		err = EINVAL;
	return err;
}

static int dec_mknod(struct dec *d, struct fsvc_req *rq)
{
	int err = dec_create(d, rq);
	uint32_t type = le32toh(rq->u.create.mode) & S_IFMT;
	uint64_t rdev = le64toh(rq->u.create.rdev);

	/* A device's number within dev_t; nothing else has one. */
	if (!err && (type == S_IFCHR || type == S_IFBLK ?
		     (rdev >> 32) > ORFS_RDEV_MAJOR_MAX || (rdev & 0xffffffffu) > ORFS_RDEV_MINOR_MAX :
		     rdev != 0))
		err = EINVAL;
	return err;
}

/* SYMLINK: as CREATE, then the link's target. */
static int dec_symlink(struct dec *d, struct fsvc_req *rq)
{
	int err = dec_create(d, rq);

	return err ? err : take_blob(&d->c, &rq->str2, &rq->str2_len, ORFS_PATH_MAX, 1);
}

static int dec_link(struct dec *d, struct fsvc_req *rq)
{
	struct orfs_link_req l;
	int err = take(&d->c, &l, sizeof(l));

	if (err)
		return err;
	rq->fh = l.fh;
	rq->fh2 = l.dir;
	return take_name(&d->c, &rq->name, &rq->name_len, 1);
}

static int dec_rename(struct dec *d, struct fsvc_req *rq)
{
	int err = take(&d->c, &rq->u.rename, sizeof(rq->u.rename));
	uint32_t flags = le32toh(rq->u.rename.flags);

	rq->fh = rq->u.rename.olddir;
	rq->fh2 = rq->u.rename.newdir;
	if (!err)
		err = take_name(&d->c, &rq->name, &rq->name_len, 1);
	if (!err)
		err = take_name(&d->c, &rq->str2, &rq->str2_len, 1);
	if (!err && ((flags & ~(uint32_t)(ORFS_RENAME_NOREPLACE | ORFS_RENAME_EXCHANGE)) ||
		     flags == (ORFS_RENAME_NOREPLACE | ORFS_RENAME_EXCHANGE) ||
		     rq->u.rename.reserved))
		err = EINVAL;
	return err;
}

static int dec_readdir(struct dec *d, struct fsvc_req *rq)
{
	int err = take(&d->c, &rq->u.readdir, sizeof(rq->u.readdir));

	rq->fh = rq->u.readdir.dir;
	if (!err && (!le32toh(rq->u.readdir.max_bytes) || rq->u.readdir.reserved))
		err = EINVAL;
	return err;
}

static int dec_lock(struct dec *d, struct fsvc_req *rq)
{
	int err = take(&d->c, &rq->u.lock, sizeof(rq->u.lock));
	uint32_t type = le32toh(rq->u.lock.type), flags = le32toh(rq->u.lock.flags);

	rq->fh = rq->u.lock.fh;
	if (!err && (type < ORFS_LOCK_READ || type > ORFS_LOCK_UNLOCK ||
		     (flags & ~(uint32_t)(ORFS_LOCK_TEST | ORFS_LOCK_RECLAIM |
					  ORFS_LOCK_REVOKED_SEEN | ORFS_LOCK_WAIT |
					  ORFS_LOCK_HOLD)) ||
		     ((flags & ORFS_LOCK_REVOKED_SEEN) && !(flags & ORFS_LOCK_TEST)) ||
		     ((flags & ORFS_LOCK_WAIT) && flags != ORFS_LOCK_WAIT &&
		      flags != (ORFS_LOCK_WAIT | ORFS_LOCK_TEST) &&
		      flags != (ORFS_LOCK_WAIT | ORFS_LOCK_HOLD)) ||
		     ((flags & ORFS_LOCK_HOLD) && flags != ORFS_LOCK_HOLD &&
		      flags != (ORFS_LOCK_WAIT | ORFS_LOCK_HOLD)) ||
		     (type == ORFS_LOCK_UNLOCK && flags) ||
		     le64toh(rq->u.lock.start) > le64toh(rq->u.lock.end)))
		err = EINVAL;
	return err;
}

static int dec_fallocate(struct dec *d, struct fsvc_req *rq)
{
	int err = take(&d->c, &rq->u.fallocate, sizeof(rq->u.fallocate));
	uint32_t mode = le32toh(rq->u.fallocate.mode);

	rq->fh = rq->u.fallocate.fh;
	if (!err && rq->u.fallocate.reserved)
		err = EINVAL;
	/* The kernel checks the rest (lengths, combinations). */
	if (!err && (mode & ~(uint32_t)(ORFS_FALLOC_KEEP_SIZE | ORFS_FALLOC_PUNCH_HOLE |
					ORFS_FALLOC_ZERO_RANGE | ORFS_FALLOC_COLLAPSE_RANGE |
					ORFS_FALLOC_INSERT_RANGE | ORFS_FALLOC_UNSHARE_RANGE)))
		err = EOPNOTSUPP;
	if (!err && (le64toh(rq->u.fallocate.offset) > INT64_MAX ||
		     le64toh(rq->u.fallocate.length) > INT64_MAX))
		err = EINVAL;
	return err;
}

/* COPY and CLONE: two files and their ranges; CLONE may dedupe. */
static int dec_copy(struct dec *d, struct fsvc_req *rq)
{
	int err = take(&d->c, &rq->u.copy, sizeof(rq->u.copy));

	rq->fh = rq->u.copy.src;
	rq->fh2 = rq->u.copy.dst;
	if (!err && ((le32toh(rq->u.copy.flags) &
		      ~(uint32_t)(rq->op == ORFS_OP_CLONE ? ORFS_CLONE_DEDUPE : 0)) ||
		     rq->u.copy.reserved ||
		     le64toh(rq->u.copy.src_offset) > INT64_MAX ||
		     le64toh(rq->u.copy.dst_offset) > INT64_MAX ||
		     le64toh(rq->u.copy.length) > INT64_MAX))
		err = EINVAL;
	return err;
}

static int dec_seek(struct dec *d, struct fsvc_req *rq)
{
	int err = take(&d->c, &rq->u.seek, sizeof(rq->u.seek));
	uint32_t whence = le32toh(rq->u.seek.whence);

	rq->fh = rq->u.seek.fh;
	if (!err && (rq->u.seek.reserved || le64toh(rq->u.seek.offset) > INT64_MAX ||
		     (whence != ORFS_SEEK_DATA && whence != ORFS_SEEK_HOLE)))
		err = EINVAL;
	return err;
}

/* READ and WRITE: their data inline or in segments, checked against LENGTH. */
static int dec_io(struct dec *d, struct fsvc_req *rq)
{
	uint32_t length, flags;
	int err = take(&d->c, &rq->u.io, sizeof(rq->u.io));

	if (err)
		return err;
	rq->fh = rq->u.io.fh;
	length = le32toh(rq->u.io.length);
	flags = le32toh(rq->u.io.flags);
	if (flags & ~(uint32_t)(ORFS_WRITE_SYNC | ORFS_WRITE_DSYNC | ORFS_WRITE_VERF) ||
	    (flags && rq->op == ORFS_OP_READ) || length > (1U << 20) ||
	    le64toh(rq->u.io.offset) > (uint64_t)INT64_MAX - length)
		return EINVAL;
	return proto_check_data(d->msg, rq->seg_off, rq->nsegs, rq->inl_len, length, d->inline_max,
				rq->op == ORFS_OP_WRITE);
}

int fsvc_decode(const struct fsvc_export *fx, const void *msg, uint32_t len,
		uint32_t inline_max, struct fsvc_req *rq)
{
	struct dec d = { .msg = msg, .inline_max = inline_max };
	const struct fsvc_op *op;
	struct knet_hdr h;
	struct orfs_req base;
	uint32_t body_len, i;
	int err;

	(void)len;	/* knet_hdr_check() tied every length to it already */
	memcpy(&h, msg, sizeof(h));
	memset(rq, 0, sizeof(*rq));
	rq->op = le16toh(h.opcode);
	body_len = le32toh(h.body_len);
	rq->nsegs = le16toh(h.nsegs);
	rq->seg_off = (uint32_t)sizeof(h) + body_len;
	rq->inl_len = le32toh(h.inline_len);
	rq->inl = (const uint8_t *)msg + rq->seg_off + rq->nsegs * (uint32_t)sizeof(struct knet_seg);
	d.c.p = (const uint8_t *)msg + sizeof(h);
	d.c.left = body_len;

	op = fsvc_op(rq->op);
	if (!op)
		return EOPNOTSUPP;
	if (take(&d.c, &base, sizeof(base)))
		return EINVAL;
	rq->xid = le64toh(base.xid);
	rq->uid = le32toh(base.cred.uid);
	rq->gid = le32toh(base.cred.gid);
	rq->ngroups = le16toh(base.cred.ngroups);
	if (rq->ngroups > ORFS_MAX_GROUPS || base.cred.reserved || base.reserved)
		return EINVAL;
	for (i = 0; i < rq->ngroups; i++)
		rq->groups[i] = le32toh(base.cred.groups[i]);
	cred_wanted(fx, rq, &rq->eff);
	if (fx->read_only && (op->flags & OP_MUTATES))
		return EROFS;
	if ((rq->nsegs || rq->inl_len) && !(op->flags & OP_DATA))
		return EINVAL;
	err = op->decode(&d, rq);
	if (!err && d.c.left)
		err = EINVAL;	/* trailing bytes in the body */
	return err;
}

/* ---- execution -------------------------------------------------------- */

static void put_time(struct orfs_time *t, const struct statx_timestamp *s)
{
	t->sec = htole64((uint64_t)s->tv_sec);
	t->nsec = htole32(s->tv_nsec);
	t->reserved = 0;
}

/* ST's count in CHG, one more first when CHANGED (a change was just made). */
static uint32_t chg_count(struct fsvc_chg *chg, const struct statx *st, int changed)
{
	uint64_t h;
	_Atomic uint32_t *n;

	if (!chg)
		return 0;
	h = (st->stx_ino ^ ((uint64_t)st->stx_dev_major << 40) ^
	     ((uint64_t)st->stx_dev_minor << 20)) * 0x9e3779b97f4a7c15ULL;
	n = &chg->n[(h >> 32) % FSVC_CHG_SLOTS];
	return changed ? atomic_fetch_add(n, 1) + 1 : atomic_load(n);
}

/*
 * The request changed what FD names, and what its attributes say comes
 * later: count the change now, as get_attr() does for CHANGED. Used for
 * directories, whose entries a client trusts while their change
 * attribute stays (negative dentries): their ctime moves once a coarse
 * clock tick.
 */
static void chg_note(struct fsvc_chg *chg, int fd)
{
	struct statx st;

	if (chg && !statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_INO, &st))
		chg_count(chg, &st, 1);
}

/*
 * FD's attributes into A. CHANGED: the request changed the file (before
 * these attributes are read), which CHG counts.
 */
static int get_attr(struct fsvc_chg *chg, int fd, struct orfs_attr *a, int changed)
{
	struct statx st;

	if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW,
		  STATX_BASIC_STATS | STATX_BTIME, &st))
		return errno;
	memset(a, 0, sizeof(*a));
	a->ino = htole64(st.stx_ino);
	a->size = htole64(st.stx_size);
	a->blocks = htole64(st.stx_blocks);
	a->rdev = htole64(((uint64_t)st.stx_rdev_major << 32) | st.stx_rdev_minor);
	/* Never the same after a change through here: ctime and the count only grow. */
	a->change = htole64((uint64_t)st.stx_ctime.tv_sec * 1000000000ULL + st.stx_ctime.tv_nsec +
			    chg_count(chg, &st, changed));
	a->mode = htole32(st.stx_mode);
	a->nlink = htole32(st.stx_nlink);
	a->uid = htole32(st.stx_uid);
	a->gid = htole32(st.stx_gid);
	a->blksize = htole32(st.stx_blksize);
	put_time(&a->atime, &st.stx_atime);
	put_time(&a->mtime, &st.stx_mtime);
	put_time(&a->ctime, &st.stx_ctime);
	if (st.stx_mask & STATX_BTIME)
		put_time(&a->btime, &st.stx_btime);
	return 0;
}

/*
 * On a progress thread (fsvc_cred_fix(), fsvc_cred_progress()), would
 * removing DIRFD/NAME free much data: the last link of a file of more
 * than FSVC_HERE_MAX? Freeing it could hold up everything else the
 * thread does: a worker removes it.
 */
static int frees_much(int dirfd, const char *name)
{
	struct stat st;

	return thread_cred.progress && !fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) &&
	       S_ISREG(st.st_mode) && st.st_nlink == 1 && st.st_blocks > FSVC_HERE_MAX / 512;
}

/* Reopen the O_PATH descriptor FD as a real one, with the caller's rights. */
static int reopen(int fd, int flags, int *out)
{
	char path[32];

	proc_path(fd, path, sizeof(path));
	*out = open(path, flags | O_CLOEXEC | O_NONBLOCK);
	return *out < 0 ? errno : 0;
}

struct out {
	uint8_t		*p;
	size_t		cap;
	uint32_t	len;
};

static int put(struct out *o, const void *src, size_t n)
{
	if (o->len + n > o->cap)
		return EOVERFLOW;
	memcpy(o->p + o->len, src, n);
	o->len += (uint32_t)n;
	return 0;
}

void fsvc_verf_init(_Atomic uint64_t *verf, uint64_t seed)
{
	atomic_store(verf, seed ? seed : 1);
}

uint64_t fsvc_verf(_Atomic uint64_t *verf)
{
	return verf ? atomic_load(verf) : 1;
}

void fsvc_verf_lost(_Atomic uint64_t *verf)
{
	uint64_t old, next;

	if (!verf)
		return;
	old = atomic_load(verf);
	do {
		next = old * 6364136223846793005ULL + 1442695040888963407ULL;
		if (!next)
			next = 1;
	} while (!atomic_compare_exchange_weak(verf, &old, next));
}

static int put_verf(struct out *o, _Atomic uint64_t *verf)
{
	struct orfs_verf_rep v = { htole64(fsvc_verf(verf)) };

	return put(o, &v, sizeof(v));
}

/* The reply of an operation that made or found DIRFD/NAME. */
static int entry_reply(const struct fsvc_export *fx, struct fsvc_chg *chg, int dirfd,
		       const char *name, struct out *o)
{
	struct orfs_entry_rep rep;
	int fd, err;

	err = child_open(dirfd, name, &fd);
	if (err)
		return err;
	err = fh_make(fx, fd, dirfd, &rep.fh);
	if (!err)
		err = get_attr(chg, fd, &rep.attr, 0);
	close(fd);
	return err ? err : put(o, &rep, sizeof(rep));
}

/*
 * Open FD with FLAGS as its owner may through a descriptor it holds
 * (knfsd's owner override): as root, only when RQ's caller owns the file.
 * It could give itself the right by a chmod; this spares the file that
 * chmod. Returns to RQ's credentials either way.
 */
static int reopen_owner(const struct fsvc_req *rq, int fd, int flags, int *wfd)
{
	struct stat st;
	int err;

	if (fstat(fd, &st))
		return errno;
	if (st.st_uid != rq->eff.uid)
		return EACCES;
	err = cred_root();
	if (!err)
		err = reopen(fd, flags, wfd);
	if (cred_enter(rq)) {
		if (!err)
			close(*wfd);
		return EPERM;
	}
	return err;
}

/*
 * reopen() for an operation that always comes from a client's descriptor
 * (READ, WRITE, FSYNC, SEEK, FALLOCATE, COPY, CLONE): refused by the mode,
 * the file's owner keeps the right its descriptor was opened with
 * (reopen_owner()). *OWNER (if OWNER is not NULL) says whether that
 * override opened it.
 */
static int reopen_desc(const struct fsvc_req *rq, int fd, int flags, int *nfd, int *owner)
{
	int err = reopen(fd, flags, nfd), by_owner = 0;

	if (err == EACCES) {
		err = reopen_owner(rq, fd, flags, nfd);
		by_owner = !err;
	}
	if (owner)
		*owner = by_owner;
	return err;
}

static int kill_privs(const struct fsvc_req *rq, int fd, const struct orfs_attr *a);

/* The set-id bits a truncate by RQ's caller drops, dropped from FD's file. */
static int kill_privs_fd(const struct fsvc_req *rq, int fd)
{
	struct orfs_attr a;
	struct stat st;

	if (fstat(fd, &st))
		return errno;
	memset(&a, 0, sizeof(a));
	a.mode = htole32((uint32_t)st.st_mode);
	a.gid = htole32((uint32_t)st.st_gid);
	kill_privs(rq, fd, &a);
	return 0;
}

static int do_setattr(const struct fsvc_req *rq, int fd)
{
	const struct orfs_setattr_req *sa = &rq->u.setattr;
	uint32_t valid = le32toh(sa->valid);
	char path[32];

	proc_path(fd, path, sizeof(path));
	/* A symlink has no mode of its own, and no size to set. */
	if (fd_type(fd) == S_IFLNK && (valid & (ORFS_SET_MODE | ORFS_SET_SIZE)))
		return EOPNOTSUPP;
	if ((valid & ORFS_SET_MODE) && chmod(path, le32toh(sa->mode) & 07777))
		return errno;
	if ((valid & (ORFS_SET_UID | ORFS_SET_GID)) &&
	    fchownat(fd, "", (valid & ORFS_SET_UID) ? le32toh(sa->uid) : (uid_t)-1,
		     (valid & ORFS_SET_GID) ? le32toh(sa->gid) : (gid_t)-1, AT_EMPTY_PATH))
		return errno;
	if ((valid & ORFS_SET_SIZE) && fd_type(fd) == S_IFREG) {
		int wfd, err;

		/*
		 * As ftruncate(2) of a descriptor open for writing, which is what
		 * the client's truncate, ftruncate and O_TRUNC are: write
		 * permission decides, and the modification time moves with it,
		 * without the ownership that setting a time on its own needs.
		 */
		int owner = 0;

		err = reopen(fd, O_WRONLY, &wfd);
		if (err == EACCES && (valid & ORFS_SET_SIZE_OPEN)) {
			err = reopen_owner(rq, fd, O_WRONLY, &wfd);
			owner = !err;
		}
		if (err)
			return err;
		err = ftruncate(wfd, (off_t)le64toh(sa->size)) ? errno : 0;
		/* Root's truncate keeps set-id bits the owner's would drop. */
		if (!err && owner)
			err = kill_privs_fd(rq, wfd);
		close(wfd);
		if (err)
			return err;
		valid &= ~(uint32_t)ORFS_SET_MTIME_NOW;
	} else if ((valid & ORFS_SET_SIZE) && truncate(path, (off_t)le64toh(sa->size))) {
		return errno;
	}
	if (valid & (ORFS_SET_ATIME | ORFS_SET_MTIME | ORFS_SET_ATIME_NOW | ORFS_SET_MTIME_NOW)) {
		struct timespec ts[2];

		ts[0].tv_sec = (time_t)le64toh(sa->atime.sec);
		ts[0].tv_nsec = le32toh(sa->atime.nsec);
		ts[1].tv_sec = (time_t)le64toh(sa->mtime.sec);
		ts[1].tv_nsec = le32toh(sa->mtime.nsec);
		if (valid & ORFS_SET_ATIME_NOW)
			ts[0].tv_nsec = UTIME_NOW;
		else if (!(valid & ORFS_SET_ATIME))
			ts[0].tv_nsec = UTIME_OMIT;
		if (valid & ORFS_SET_MTIME_NOW)
			ts[1].tv_nsec = UTIME_NOW;
		else if (!(valid & ORFS_SET_MTIME))
			ts[1].tv_nsec = UTIME_OMIT;
		/* On FD itself: a symlink's own times, not its target's. */
		if (utimensat(fd, "", ts, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW))
			return errno;
	}
	return 0;
}

_Static_assert(ORFS_FALLOC_KEEP_SIZE == FALLOC_FL_KEEP_SIZE &&
	       ORFS_FALLOC_PUNCH_HOLE == FALLOC_FL_PUNCH_HOLE &&
	       ORFS_FALLOC_ZERO_RANGE == FALLOC_FL_ZERO_RANGE &&
	       ORFS_FALLOC_COLLAPSE_RANGE == FALLOC_FL_COLLAPSE_RANGE &&
	       ORFS_FALLOC_INSERT_RANGE == FALLOC_FL_INSERT_RANGE &&
	       ORFS_FALLOC_UNSHARE_RANGE == FALLOC_FL_UNSHARE_RANGE, "FALLOCATE's modes are Linux's");

/* fallocate(2) on the file FD names, opened for writing as reopen_desc() does. */
static int do_fallocate(const struct fsvc_req *rq, int fd)
{
	const struct orfs_fallocate_req *fa = &rq->u.fallocate;
	mode_t type = fd_type(fd);
	int wfd, err, owner;

	if (type != S_IFREG)
		return type == S_IFDIR ? EISDIR : ENODEV;
	err = reopen_desc(rq, fd, O_WRONLY, &wfd, &owner);
	if (err)
		return err;
	if (fallocate(wfd, (int)le32toh(fa->mode), (off_t)le64toh(fa->offset),
		      (off_t)le64toh(fa->length)))
		err = errno;
	/* As a truncate by the owner: set-id bits drop (do_setattr()). */
	if (!err && owner)
		err = kill_privs_fd(rq, wfd);
	close(wfd);
	return err;
}

/* lseek(2) for data or a hole in the file FD names, opened with the caller's rights. */
static int do_seek(const struct fsvc_req *rq, int fd, struct out *o)
{
	const struct orfs_seek_req *sk = &rq->u.seek;
	struct orfs_seek_rep rep;
	mode_t type = fd_type(fd);
	int rfd, err;
	off_t at;

	if (type != S_IFREG)
		return type == S_IFDIR ? EISDIR : EINVAL;
	err = reopen_desc(rq, fd, O_RDONLY, &rfd, NULL);
	if (err)
		return err;
	at = lseek(rfd, (off_t)le64toh(sk->offset),
		   le32toh(sk->whence) == ORFS_SEEK_DATA ? SEEK_DATA : SEEK_HOLE);
	err = at < 0 ? errno : 0;
	close(rfd);
	if (err)
		return err;
	rep.offset = htole64((uint64_t)at);
	return put(o, &rep, sizeof(rep));
}

/* COPY's and CLONE's reply: DONE bytes, DFD's attributes (a change if CHANGED). */
static int copy_reply(const struct fsvc_req *rq, int dfd, uint64_t done, int changed,
		      struct out *o)
{
	struct orfs_copy_rep rep;
	int err;

	memset(&rep, 0, sizeof(rep));
	rep.copied = htole64(done);
	err = get_attr(rq->chg, dfd, &rep.attr, changed);
	return err ? err : put(o, &rep, sizeof(rep));
}

/*
 * copy_file_range(2) from the file SFD names to the one DFD names, opened
 * as reopen_desc() does; ORFS_COPY_MAX bytes at most, fewer where the
 * kernel stops (the source's end).
 */
static int do_copy(const struct fsvc_req *rq, int sfd, int dfd, struct out *o)
{
	const struct orfs_copy_req *cp = &rq->u.copy;
	loff_t off_in = (loff_t)le64toh(cp->src_offset), off_out = (loff_t)le64toh(cp->dst_offset);
	uint64_t len = le64toh(cp->length);
	mode_t stype = fd_type(sfd), dtype = fd_type(dfd);
	int in, out, err;
	ssize_t n;

	if (stype != S_IFREG || dtype != S_IFREG)
		return stype == S_IFDIR || dtype == S_IFDIR ? EISDIR : EINVAL;
	err = reopen_desc(rq, sfd, O_RDONLY, &in, NULL);
	if (err)
		return err;
	err = reopen_desc(rq, dfd, O_WRONLY, &out, NULL);
	if (err)
		goto close_in;
	n = copy_file_range(in, &off_in, out, &off_out, len < ORFS_COPY_MAX ? len : ORFS_COPY_MAX,
			    0);
	if (n < 0) {
		err = errno;
		goto close_out;
	}
	err = copy_reply(rq, dfd, (uint64_t)n, n > 0, o);
close_out:
	close(out);
close_in:
	close(in);
	return err;
}

/* FICLONERANGE or FIDEDUPERANGE from SFD's file to DFD's (see ORFS_OP_CLONE). */
static int do_clone(const struct fsvc_req *rq, int sfd, int dfd, struct out *o)
{
	const struct orfs_copy_req *cp = &rq->u.copy;
	int dedupe = !!(le32toh(cp->flags) & ORFS_CLONE_DEDUPE);
	uint64_t len = le64toh(cp->length), done = 0;
	mode_t stype = fd_type(sfd), dtype = fd_type(dfd);
	int in, out, err;

	if (stype != S_IFREG || dtype != S_IFREG)
		return stype == S_IFDIR || dtype == S_IFDIR ? EISDIR : EINVAL;
	err = reopen_desc(rq, sfd, O_RDONLY, &in, NULL);
	if (err)
		return err;
	err = reopen_desc(rq, dfd, O_WRONLY, &out, NULL);
	/* A dedupe may go into a file the caller owns but may not write. */
	if (err == EACCES && dedupe)
		err = reopen_desc(rq, dfd, O_RDONLY, &out, NULL);
	if (err)
		goto close_in;
	if (dedupe) {
		union {
			struct file_dedupe_range r;
			uint8_t b[sizeof(struct file_dedupe_range) +
				  sizeof(struct file_dedupe_range_info)];
		} d;

		memset(&d, 0, sizeof(d));
		d.r.src_offset = le64toh(cp->src_offset);
		d.r.src_length = len;
		d.r.dest_count = 1;
		d.r.info[0].dest_fd = out;
		d.r.info[0].dest_offset = le64toh(cp->dst_offset);
		if (ioctl(in, FIDEDUPERANGE, &d.r))
			err = errno;
		else if (d.r.info[0].status == FILE_DEDUPE_RANGE_DIFFERS)
			err = EBADE;
		else if (d.r.info[0].status < 0)
			err = -d.r.info[0].status;
		else
			done = d.r.info[0].bytes_deduped;
	} else {
		struct file_clone_range r = {
			.src_fd = in,
			.src_offset = le64toh(cp->src_offset),
			.src_length = len,
			.dest_offset = le64toh(cp->dst_offset),
		};

		if (ioctl(out, FICLONERANGE, &r))
			err = errno;
		else
			done = len;
	}
	if (err)
		goto close_out;
	err = copy_reply(rq, dfd, done, !dedupe, o);
close_out:
	close(out);
close_in:
	close(in);
	return err;
}

static int do_readdir(const struct orfs_readdir_req *rd, int fd, struct out *o)
{
	uint8_t buf[8192];
	struct orfs_readdir_rep rep = { 0, 0 };
	uint32_t max = le32toh(rd->max_bytes), used = 0, head = o->len;
	int dfd, err;
	long n;

	err = reopen(fd, O_RDONLY | O_DIRECTORY, &dfd);
	if (err)
		return err;
	if (lseek(dfd, (off_t)le64toh(rd->cookie), SEEK_SET) < 0) {
		err = errno;
		goto out;
	}
	err = put(o, &rep, sizeof(rep));
	if (err)
		goto out;
	for (;;) {
		long off = 0;

		n = syscall(SYS_getdents64, dfd, buf, sizeof(buf));
		if (n < 0) {
			err = errno;
			goto out;
		}
		if (n == 0) {
			rep.eof = htole32(1);
			break;
		}
		while (off < n) {
			struct linux_dirent64_ *d = (struct linux_dirent64_ *)(buf + off);
			size_t nl = strlen(d->d_name);
			uint32_t rec = (uint32_t)((sizeof(struct orfs_dirent) + nl + 7) & ~7UL);
			struct orfs_dirent e;
			uint8_t pad[8] = { 0 };

			off += d->d_reclen;
			if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, ".."))
				continue;
			if (used + rec > max || o->len + rec > o->cap) {
				/* Full: the next call resumes at this entry. */
				goto done;
			}
			memset(&e, 0, sizeof(e));
			e.ino = htole64(d->d_ino);
			e.cookie = htole64((uint64_t)d->d_off);
			e.type = d->d_type;
			e.name_len = htole16((uint16_t)nl);
			put(o, &e, sizeof(e));
			put(o, d->d_name, nl);
			put(o, pad, rec - sizeof(e) - nl);
			used += rec;
			rep.count = htole32(le32toh(rep.count) + 1);
		}
	}
done:
	if (!rep.count && !rep.eof)
		err = EOVERFLOW;	/* not even one entry fits max_bytes */
	memcpy(o->p + head, &rep, sizeof(rep));
out:
	close(dfd);
	return err;
}

/*
 * May RQ touch the xattr NAME? The user namespace and POSIX ACLs to
 * anyone the kernel allows (it checks the caller's rights on the file);
 * trusted.* to unsquashed root only, and changes to security.* (file
 * capabilities, LSM labels) too, though anyone may read them, as on a
 * local file system. Other namespaces are not served. The kernel would
 * refuse the privileged ones already, the worker's capabilities lowered
 * for any other caller: this says so before any system call, and holds
 * should a thread ever run with more.
 */
static int xattr_allowed(const struct fsvc_req *rq, const char *name)
{
	int root = rq->eff.uid == 0;
	int write = rq->op == ORFS_OP_SETXATTR || rq->op == ORFS_OP_REMOVEXATTR;

	if (!strncmp(name, "user.", 5) || !strcmp(name, "system.posix_acl_access") ||
	    !strcmp(name, "system.posix_acl_default"))
		return 0;
	if (!strncmp(name, "trusted.", 8))
		return root ? 0 : EPERM;
	if (!strncmp(name, "security.", 9))
		return root || !write ? 0 : EPERM;
	return EOPNOTSUPP;
}

static int do_xattr(const struct fsvc_req *rq, int fd, struct out *o)
{
	char path[32], name[ORFS_XATTR_NAME_MAX + 1] = "";
	struct orfs_xattr_rep rep = { 0, 0 };
	uint32_t size = le32toh(rq->u.fhop.size);
	uint32_t room = o->cap > o->len + sizeof(rep) ? (uint32_t)(o->cap - o->len - sizeof(rep)) : 0;
	ssize_t n;
	int err;

	if (fd_type(fd) == S_IFLNK)
		return EOPNOTSUPP;
	proc_path(fd, path, sizeof(path));
	if (rq->name) {
		memcpy(name, rq->name, rq->name_len);
		name[rq->name_len] = '\0';
		err = xattr_allowed(rq, name);
		if (err)
			return err;
	}
	if (size > room)
		size = room;
	switch (rq->op) {
	case ORFS_OP_SETXATTR:
		if (setxattr(path, name, rq->str2, rq->str2_len, (int)le32toh(rq->u.fhop.flags)))
			return errno;
		chg_note(rq->chg, fd);
		return 0;
	case ORFS_OP_REMOVEXATTR:
		if (removexattr(path, name))
			return errno;
		chg_note(rq->chg, fd);
		return 0;
	case ORFS_OP_GETXATTR:
		n = getxattr(path, name, size ? o->p + o->len + sizeof(rep) : NULL, size);
		break;
	default:
		n = listxattr(path, size ? (char *)o->p + o->len + sizeof(rep) : NULL, size);
		break;
	}
	if (n < 0)
		return errno;
	rep.size = htole32((uint32_t)n);
	memcpy(o->p + o->len, &rep, sizeof(rep));
	o->len += (uint32_t)sizeof(rep) + (size ? (uint32_t)n : 0);
	return 0;
}

/*
 * LOCK on FD (O_PATH): to take a lock the caller must be able to open the
 * file for it, reading for a read lock, writing for a write lock, as the
 * client's kernel asks of its open file; a directory, which opens for
 * reading only, for reading (flock() of a directory). Clearing or testing
 * needs nothing but the handle.
 */
static int do_lock(const struct fsvc_req *rq, int fd, struct out *o)
{
	const struct orfs_lock_req *l = &rq->u.lock;
	struct lk_want w, held;
	struct orfs_lock_rep rep;
	struct timespec ts;
	struct stat st;
	int err, rfd;

	if (!rq->locks)
		return ENOLCK;
	w.client = rq->client_id;
	w.owner = le64toh(l->owner);
	w.start = le64toh(l->start);
	w.end = le64toh(l->end);
	w.type = le32toh(l->type);
	w.flags = le32toh(l->flags);
	if (fstat(fd, &st))
		return errno;
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
		return EINVAL;	/* and no open of a FIFO that would wait */
	if (w.type != ORFS_LOCK_UNLOCK && !(w.flags & ORFS_LOCK_TEST)) {
		err = reopen(fd, S_ISDIR(st.st_mode) ? O_RDONLY | O_DIRECTORY :
				 w.type == ORFS_LOCK_READ ? O_RDONLY : O_WRONLY, &rfd);
		if (err)
			return err;
		close(rfd);
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	if ((w.flags & ORFS_LOCK_HOLD) && thread_cred.progress) {
		/* The progress thread holds nothing: a worker waits, if need be. */
		w.flags &= ~(uint32_t)ORFS_LOCK_HOLD;
		err = locks_apply(rq->locks, (uint64_t)st.st_dev, (uint64_t)st.st_ino, &w,
				  ts.tv_sec, &held);
		if (err == EAGAIN)
			return FSVC_ELSEWHERE;
	} else {
		err = locks_apply_wait(rq->locks, (uint64_t)st.st_dev, (uint64_t)st.st_ino, &w,
				       ts.tv_sec, &held, ORFS_LOCK_HOLD_MS);
	}
	if (err)
		return err;
	memset(&rep, 0, sizeof(rep));
	rep.start = htole64(held.start);
	rep.end = htole64(held.end);
	rep.type = htole32(held.type);
	return put(o, &rep, sizeof(rep));
}

int fsvc_io_flags(const struct fsvc_req *rq)
{
	uint32_t flags = le32toh(rq->u.io.flags);

	if (rq->op == ORFS_OP_READ)
		return O_RDONLY;
	return O_WRONLY | ((flags & ORFS_WRITE_SYNC) ? O_SYNC : (flags & ORFS_WRITE_DSYNC) ? O_DSYNC : 0);
}

int fsvc_io_inline(const struct fsvc_req *rq, int fd, void *body, size_t cap, uint32_t *body_len,
		   int nowait, int *refused)
{
	uint32_t length = le32toh(rq->u.io.length), done = 0, len;
	uint8_t *data = (uint8_t *)body + sizeof(struct orfs_io_rep);
	off_t off = (off_t)le64toh(rq->u.io.offset);
	int read = rq->op == ORFS_OP_READ, err;

	if (sizeof(struct orfs_io_rep) + (read ? length : 0) > cap)
		return EOVERFLOW;
	if (nowait) {
		/*
		 * Whole without waiting, or a worker does it again (maybe
		 * the end of the file; a pwrite at an offset may be repeated).
		 */
		if (!rw_nowait(fd, !read, read ? data : (void *)rq->inl, (uint64_t)off, length,
			       refused))
			return EAGAIN;
		done = length;
	}
	while (done < length) {
		ssize_t n = read ? pread(fd, data + done, length - done, off + done) :
				   pwrite(fd, rq->inl + done, length - done, off + done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno;
		if (n == 0)
			break;
		done += (uint32_t)n;
	}
	err = fsvc_io_reply(rq, fd, done, body, cap, &len);
	/* Inline READ data follows the reply body: the engine sends it as inline data. */
	if (!err)
		*body_len = len + (read ? done : 0);
	return err;
}

static int do_inline_io(const struct fsvc_req *rq, int fd, struct out *o)
{
	uint32_t len;
	int rfd, err;

	if (fd_type(fd) != S_IFREG)
		return fd_type(fd) == S_IFDIR ? EISDIR : EINVAL;
	err = reopen_desc(rq, fd, fsvc_io_flags(rq), &rfd, NULL);
	if (err)
		return err;
	err = fsvc_io_inline(rq, rfd, o->p + o->len, o->cap - o->len, &len, 0, NULL);
	if (!err)
		o->len += len;
	close(rfd);
	return err;
}

int fsvc_io_refused(const struct fsvc_req *rq, int fd)
{
	struct stat st;

	if (rq->op != ORFS_OP_WRITE || !rq->revoked || !rq->locks)
		return 0;
	if (fstat(fd, &st))
		return errno;
	return locks_write_refused(rq->locks, rq->client_id, (uint64_t)st.st_dev,
				   (uint64_t)st.st_ino) ? EIO : 0;
}

int fsvc_io_open(const struct fsvc_export *fx, const struct fsvc_req *rq, int *fd)
{
	int pfd, err;

	err = fh_open(fx, &rq->fh, O_PATH, &pfd);
	if (err)
		return err;
	if (fd_type(pfd) != S_IFREG) {
		err = fd_type(pfd) == S_IFDIR ? EISDIR : EINVAL;
		close(pfd);
		return err;
	}
	/*
	 * Every READ and WRITE comes from a descriptor the client opened,
	 * whose right the file's mode may no longer give (a file made by
	 * open(name, O_CREAT | O_RDWR, 0)): its owner keeps it, as on a local
	 * file system and with knfsd. Set-id bits still drop at a write
	 * (fsvc_io_reply()).
	 */
	err = cred_enter(rq);
	if (!err)
		err = reopen_desc(rq, pfd, fsvc_io_flags(rq), fd, NULL);
	close(pfd);
	/* Open, and kept for the next request, even if this one is refused. */
	return err ? err : fsvc_io_refused(rq, *fd);
}

/*
 * After RQ wrote to FD: drop the set-user-ID bit, and the set-group-ID
 * bit of a group-executable file or of a group the caller is not in, when
 * the caller is not root, as the kernel does at a write by a caller
 * without CAP_FSETID. The write may have run on a thread that holds it
 * (a progress thread, a worker last in root's credentials); the change is
 * made as root, which a caller who may write but does not own the file
 * needs too. The data is written either way: a failure here (a server
 * not run as root) leaves the bits, and the answer says the write's.
 * A, the file's attributes after the write, tells which bits there are.
 * Returns 1 when the mode changed.
 */
static int kill_privs(const struct fsvc_req *rq, int fd, const struct orfs_attr *a)
{
	mode_t mode = le32toh(a->mode), kill = 0;
	uint32_t i, gid = le32toh(a->gid);
	int in_group;

	if (!rq->eff.uid || !S_ISREG(mode) || !(mode & (S_ISUID | S_ISGID)))
		return 0;
	in_group = gid == rq->eff.gid;
	for (i = 0; i < rq->eff.ngroups && !in_group; i++)
		in_group = gid == rq->eff.groups[i];
	if (mode & S_ISUID)
		kill |= S_ISUID;
	if ((mode & S_ISGID) && ((mode & S_IXGRP) || !in_group))
		kill |= S_ISGID;
	if (!kill)
		return 0;
	if (!fchmod(fd, mode & 07777 & ~kill))
		return 1;
	if (errno != EPERM || cred_root())
		return 0;
	return !fchmod(fd, mode & 07777 & ~kill);
}

int fsvc_io_reply(const struct fsvc_req *rq, int fd, uint32_t count, void *body, size_t cap,
		  uint32_t *body_len)
{
	int wrote = rq->op == ORFS_OP_WRITE && count;
	struct orfs_io_rep rep;
	int err;

	if (cap < sizeof(rep))
		return EOVERFLOW;
	memset(&rep, 0, sizeof(rep));
	err = get_attr(rq->chg, fd, &rep.attr, wrote);
	/* Set-id bits the write drops: then the attributes they leave. */
	if (!err && wrote && kill_privs(rq, fd, &rep.attr))
		err = get_attr(rq->chg, fd, &rep.attr, 1);
	if (err)
		return err;
	rep.count = htole32(count);
	/* The size the attributes just read say. */
	rep.eof = htole32(rq->op == ORFS_OP_READ &&
			  le64toh(rq->u.io.offset) + count >= le64toh(rep.attr.size));
	memcpy(body, &rep, sizeof(rep));
	*body_len = sizeof(rep);
	if (rq->op == ORFS_OP_WRITE && (le32toh(rq->u.io.flags) & ORFS_WRITE_VERF)) {
		struct orfs_verf_rep v = { htole64(fsvc_verf(rq->verf)) };

		if (cap < sizeof(rep) + sizeof(v))
			return EOVERFLOW;
		memcpy((uint8_t *)body + sizeof(rep), &v, sizeof(v));
		*body_len += sizeof(v);
	}
	return 0;
}

/* What an operation's handler works on, set up by fsvc_execute(). */
struct op_ctx {
	const struct fsvc_export	*fx;
	const struct fsvc_req		*rq;
	int				fd;	/* the handle's file; -1 for OP_NO_FH */
	int				fd2;	/* the second handle's, for OP_FH2 */
	const char			*name;	/* rq->name, terminated */
	const char			*name2;	/* rq->str2, terminated */
	const char			*path;	/* fd's /proc path */
	struct out			*o;	/* the reply's body */
};

/* FD's attributes as the reply (CHANGED: a change was just made). */
static int reply_attr(struct op_ctx *x, int fd, int changed)
{
	struct orfs_attr attr;
	int err = get_attr(x->rq->chg, fd, &attr, changed);

	return err ? err : put(x->o, &attr, sizeof(attr));
}

/* A name just made in the handle's directory: note the change, reply its entry. */
static int made(struct op_ctx *x, int err)
{
	if (err)
		return err;
	chg_note(x->rq->chg, x->fd);
	return entry_reply(x->fx, x->rq->chg, x->fd, x->name, x->o);
}

static int exec_session(struct op_ctx *x)
{
	struct orfs_session_rep rep = { htole64(x->fx->boot), htole32(1U << 20), htole32(1U << 20),
					htole32(x->rq->session_flags | ORFS_SESSION_VERF), 0 };

	return put(x->o, &rep, sizeof(rep));
}

static int exec_getroot(struct op_ctx *x)
{
	struct orfs_entry_rep rep;
	int err = fsvc_make_fh(x->fx, x->fx->root_fd, "", &rep.fh);

	if (!err)
		err = get_attr(x->rq->chg, x->fx->root_fd, &rep.attr, 0);
	return err ? err : put(x->o, &rep, sizeof(rep));
}

static int exec_lookup(struct op_ctx *x)
{
	return entry_reply(x->fx, x->rq->chg, x->fd, x->name, x->o);
}

static int exec_getattr(struct op_ctx *x)
{
	return reply_attr(x, x->fd, 0);
}

static int exec_setattr(struct op_ctx *x)
{
	int err = do_setattr(x->rq, x->fd);

	return err ? err : reply_attr(x, x->fd, 1);
}

static int exec_create(struct op_ctx *x)
{
	const struct fsvc_req *rq = x->rq;
	int err = 0;

	if (mknodat(x->fd, x->name, S_IFREG | (le32toh(rq->u.create.mode) & 07777), 0)) {
		err = errno;
		if (err == EEXIST && !(le32toh(rq->u.create.flags) & ORFS_CREATE_EXCL)) {
			struct stat st;

			err = fstatat(x->fd, x->name, &st, AT_SYMLINK_NOFOLLOW) ? errno :
			      S_ISREG(st.st_mode) ? 0 : EEXIST;
		}
		/* An existing file opened without O_EXCL: nothing changed. */
		return err ? err : entry_reply(x->fx, rq->chg, x->fd, x->name, x->o);
	}
	return made(x, 0);
}

static int exec_mkdir(struct op_ctx *x)
{
	return made(x, mkdirat(x->fd, x->name, le32toh(x->rq->u.create.mode) & 07777) ? errno : 0);
}

static int exec_mknod(struct op_ctx *x)
{
	uint32_t mode = le32toh(x->rq->u.create.mode);
	uint64_t rdev = le64toh(x->rq->u.create.rdev);

	/*
	 * FIFOs, sockets, regular files and device nodes. A device node is
	 * made with the caller's rights (the server's kernel allows it to
	 * unsquashed root, CAP_MKNOD), and the server never opens one:
	 * every open here is of a regular file or a directory, or O_PATH.
	 */
	if (!S_ISFIFO(mode) && !S_ISSOCK(mode) && !S_ISREG(mode) && !S_ISCHR(mode) &&
	    !S_ISBLK(mode))
		return EPERM;	/* a directory, as mknod(2) says; or no type */
	return made(x, mknodat(x->fd, x->name, mode & (S_IFMT | 07777),
			       makedev((unsigned int)(rdev >> 32),
				       (unsigned int)(rdev & 0xffffffffu))) ? errno : 0);
}

static int exec_symlink(struct op_ctx *x)
{
	return made(x, symlinkat(x->name2, x->fd, x->name) ? errno : 0);
}

static int exec_link(struct op_ctx *x)
{
	if (fd_type(x->fd) == S_IFDIR)
		return EPERM;
	/*
	 * Following the descriptor's /proc link stops at the file it names:
	 * a symbolic link is linked itself, as link(2) does.
	 */
	if (linkat(AT_FDCWD, x->path, x->fd2, x->name, AT_SYMLINK_FOLLOW))
		return errno;
	chg_note(x->rq->chg, x->fd2);
	return reply_attr(x, x->fd, 1);
}

static int exec_unlink(struct op_ctx *x)
{
	if (frees_much(x->fd, x->name))
		return FSVC_ELSEWHERE;
	if (unlinkat(x->fd, x->name, 0))
		return errno;
	chg_note(x->rq->chg, x->fd);
	return 0;
}

static int exec_rmdir(struct op_ctx *x)
{
	if (unlinkat(x->fd, x->name, AT_REMOVEDIR))
		return errno;
	chg_note(x->rq->chg, x->fd);
	return 0;
}

static int exec_rename(struct op_ctx *x)
{
	uint32_t flags = le32toh(x->rq->u.rename.flags);

	if (!(flags & (ORFS_RENAME_NOREPLACE | ORFS_RENAME_EXCHANGE)) && frees_much(x->fd2, x->name2))
		return FSVC_ELSEWHERE;
	if (syscall(SYS_renameat2, x->fd, x->name, x->fd2, x->name2,
		    (flags & ORFS_RENAME_NOREPLACE ? RENAME_NOREPLACE : 0) |
		    (flags & ORFS_RENAME_EXCHANGE ? RENAME_EXCHANGE : 0)))
		return errno;
	chg_note(x->rq->chg, x->fd);
	if (x->fd2 != x->fd)
		chg_note(x->rq->chg, x->fd2);
	return 0;
}

static int exec_readlink(struct op_ctx *x)
{
	char target[ORFS_PATH_MAX + 1];
	ssize_t n = readlinkat(x->fd, "", target, sizeof(target));
	uint32_t len;
	int err;

	if (n < 0)
		return errno == ENOENT ? EINVAL : errno;	/* not a symlink */
	if (n > ORFS_PATH_MAX)
		return ENAMETOOLONG;
	len = htole32((uint32_t)n);
	err = put(x->o, &len, sizeof(len));
	return err ? err : put(x->o, target, (size_t)n);
}

static int exec_readdir(struct op_ctx *x)
{
	return fd_type(x->fd) == S_IFDIR ? do_readdir(&x->rq->u.readdir, x->fd, x->o) : ENOTDIR;
}

static int exec_statfs(struct op_ctx *x)
{
	struct orfs_statfs_rep rep;
	struct statfs sf;

	if (fstatfs(x->fd, &sf))
		return errno;
	memset(&rep, 0, sizeof(rep));
	rep.blocks = htole64(sf.f_blocks);
	rep.bfree = htole64(sf.f_bfree);
	rep.bavail = htole64(sf.f_bavail);
	rep.files = htole64(sf.f_files);
	rep.ffree = htole64(sf.f_ffree);
	rep.bsize = htole32((uint32_t)sf.f_bsize);
	rep.namelen = htole32((uint32_t)sf.f_namelen);
	rep.frsize = htole32((uint32_t)sf.f_frsize);
	return put(x->o, &rep, sizeof(rep));
}

/* READ and WRITE with their data inline (the engine moves segments). */
static int exec_io(struct op_ctx *x)
{
	return do_inline_io(x->rq, x->fd, x->o);
}

static int exec_fsync(struct op_ctx *x)
{
	const struct fsvc_req *rq = x->rq;
	uint32_t fl = le32toh(rq->u.fhop.flags);
	mode_t type = fd_type(x->fd);
	int rfd, err;

	if (type != S_IFREG && type != S_IFDIR)
		return EINVAL;
	/* A sync of a file comes from a descriptor: see fsvc_io_open(). */
	if (type == S_IFREG)
		err = reopen_desc(rq, x->fd, O_RDONLY, &rfd, NULL);
	else
		err = reopen(x->fd, O_RDONLY, &rfd);
	if (err)
		return err;
	err = ((fl & ORFS_FSYNC_DATA) ? fdatasync(rfd) : fsync(rfd)) ? errno : 0;
	close(rfd);
	/*
	 * A failed sync may have dropped what any client wrote unstable
	 * (the error is told once): all send it again.
	 */
	if (err)
		fsvc_verf_lost(rq->verf);
	else if (fl & ORFS_FSYNC_VERF)
		err = put_verf(x->o, rq->verf);
	return err;
}

/* GETXATTR, SETXATTR, LISTXATTR, REMOVEXATTR. */
static int exec_xattr(struct op_ctx *x)
{
	return do_xattr(x->rq, x->fd, x->o);
}

static int exec_lock(struct op_ctx *x)
{
	return do_lock(x->rq, x->fd, x->o);
}

static int exec_fallocate(struct op_ctx *x)
{
	int err = do_fallocate(x->rq, x->fd);

	return err ? err : reply_attr(x, x->fd, 1);
}

static int exec_seek(struct op_ctx *x)
{
	return do_seek(x->rq, x->fd, x->o);
}

static int exec_copy(struct op_ctx *x)
{
	return do_copy(x->rq, x->fd, x->fd2, x->o);
}

static int exec_clone(struct op_ctx *x)
{
	return do_clone(x->rq, x->fd, x->fd2, x->o);
}

/* The file service's operations, as nfsd4_ops[]: one entry each. */
static const struct fsvc_op fsvc_ops[ORFS_OP_LAST + 1] = {
	[ORFS_OP_SESSION]	= { "SESSION", dec_session, exec_session, OP_NO_FH },
	[ORFS_OP_GETROOT]	= { "GETROOT", dec_none, exec_getroot, OP_NO_FH },
	[ORFS_OP_LOOKUP]	= { "LOOKUP", dec_fh_name, exec_lookup, OP_DIR_FH },
	[ORFS_OP_GETATTR]	= { "GETATTR", dec_fhop, exec_getattr, OP_AS_SERVER },
	[ORFS_OP_SETATTR]	= { "SETATTR", dec_setattr, exec_setattr, OP_MUTATES },
	[ORFS_OP_CREATE]	= { "CREATE", dec_create, exec_create,
				    OP_MUTATES | OP_REPEAT_BAD | OP_DIR_FH },
	[ORFS_OP_MKDIR]		= { "MKDIR", dec_create, exec_mkdir,
				    OP_MUTATES | OP_REPEAT_BAD | OP_DIR_FH },
	[ORFS_OP_MKNOD]		= { "MKNOD", dec_mknod, exec_mknod,
				    OP_MUTATES | OP_REPEAT_BAD | OP_DIR_FH },
	[ORFS_OP_SYMLINK]	= { "SYMLINK", dec_symlink, exec_symlink,
				    OP_MUTATES | OP_REPEAT_BAD | OP_DIR_FH },
	[ORFS_OP_LINK]		= { "LINK", dec_link, exec_link, OP_MUTATES | OP_REPEAT_BAD | OP_FH2 },
	[ORFS_OP_UNLINK]	= { "UNLINK", dec_fh_name, exec_unlink,
				    OP_MUTATES | OP_REPEAT_BAD | OP_DIR_FH },
	[ORFS_OP_RMDIR]		= { "RMDIR", dec_fh_name, exec_rmdir,
				    OP_MUTATES | OP_REPEAT_BAD | OP_DIR_FH },
	[ORFS_OP_RENAME]	= { "RENAME", dec_rename, exec_rename,
				    OP_MUTATES | OP_REPEAT_BAD | OP_DIR_FH | OP_FH2 },
	[ORFS_OP_READLINK]	= { "READLINK", dec_fhop, exec_readlink, 0 },
	[ORFS_OP_READDIR]	= { "READDIR", dec_readdir, exec_readdir, OP_DIR_FH },
	[ORFS_OP_STATFS]	= { "STATFS", dec_fhop, exec_statfs, OP_AS_SERVER },
	[ORFS_OP_READ]		= { "READ", dec_io, exec_io, OP_DATA },
	[ORFS_OP_WRITE]		= { "WRITE", dec_io, exec_io, OP_MUTATES | OP_DATA },
	[ORFS_OP_FSYNC]		= { "FSYNC", dec_fsync, exec_fsync, 0 },
	[ORFS_OP_GETXATTR]	= { "GETXATTR", dec_xattr_name, exec_xattr, 0 },
	[ORFS_OP_SETXATTR]	= { "SETXATTR", dec_setxattr, exec_xattr,
				    OP_MUTATES | OP_REPEAT_BAD },
	[ORFS_OP_LISTXATTR]	= { "LISTXATTR", dec_fhop, exec_xattr, 0 },
	[ORFS_OP_REMOVEXATTR]	= { "REMOVEXATTR", dec_xattr_name, exec_xattr,
				    OP_MUTATES | OP_REPEAT_BAD },
	[ORFS_OP_LOCK]		= { "LOCK", dec_lock, exec_lock, OP_REPEAT_BAD },
	[ORFS_OP_FALLOCATE]	= { "FALLOCATE", dec_fallocate, exec_fallocate, OP_MUTATES },
	[ORFS_OP_SEEK]		= { "SEEK", dec_seek, exec_seek, 0 },
	[ORFS_OP_COPY]		= { "COPY", dec_copy, exec_copy, OP_MUTATES | OP_FH2 },
	[ORFS_OP_CLONE]		= { "CLONE", dec_copy, exec_clone, OP_MUTATES | OP_FH2 },
};

/* OP's entry, or NULL for an opcode the file service does not have. */
static const struct fsvc_op *fsvc_op(uint16_t op)
{
	if (op < ORFS_OP_SESSION || op > ORFS_OP_LAST || !fsvc_ops[op].exec)
		return NULL;
	return &fsvc_ops[op];
}

static unsigned int op_flags(uint16_t op)
{
	const struct fsvc_op *d = fsvc_op(op);

	return d ? d->flags : 0;
}

int fsvc_op_mutates(uint16_t op)
{
	return !!(op_flags(op) & OP_MUTATES);
}

int fsvc_op_nonidempotent(uint16_t op)
{
	return !!(op_flags(op) & OP_REPEAT_BAD);
}

int fsvc_op_dir_fh(uint16_t op)
{
	return !!(op_flags(op) & OP_DIR_FH);
}

const char *fsvc_op_name(uint16_t op)
{
	const struct fsvc_op *d = fsvc_op(op);

	return d ? d->name : NULL;
}

int fsvc_execute(const struct fsvc_export *fx, const struct fsvc_req *rq, int *fh_fd,
		 void *body, size_t cap, uint32_t *body_len)
{
	char name[ORFS_NAME_MAX + 1], name2[ORFS_PATH_MAX + 1], path[32];
	struct out o = { .p = body, .cap = cap, .len = 0 };
	struct op_ctx x = { .fx = fx, .rq = rq, .fd = -1, .fd2 = -1, .name = name, .name2 = name2,
			    .path = path, .o = &o };
	const struct fsvc_op *op = fsvc_op(rq->op);
	int err = 0;

	*body_len = 0;
	if (!op)
		return EOPNOTSUPP;
	name[0] = name2[0] = path[0] = '\0';
	if (rq->name) {
		memcpy(name, rq->name, rq->name_len);
		name[rq->name_len] = '\0';
	}
	if (rq->str2) {
		memcpy(name2, rq->str2, rq->str2_len < ORFS_PATH_MAX ? rq->str2_len : ORFS_PATH_MAX);
		name2[rq->str2_len < ORFS_PATH_MAX ? rq->str2_len : ORFS_PATH_MAX] = '\0';
	}
	if (op->flags & OP_NO_FH) {
		err = op->exec(&x);
		goto done;
	}
	if ((op->flags & OP_DATA) && rq->nsegs)
		return EINVAL;	/* the engine moves segment data */
	/* Handles open as root, before the caller's credentials apply. */
	x.fd = *fh_fd;
	if (x.fd < 0) {
		err = fh_open(fx, &rq->fh, O_PATH, &x.fd);
		if (err)
			goto done;
		if (op->flags & OP_DIR_FH)
			*fh_fd = x.fd;	/* a directory: the caller may keep it */
	}
	if (op->flags & OP_FH2) {
		if (!memcmp(&rq->fh2, &rq->fh, sizeof(rq->fh)))
			x.fd2 = x.fd;
		else
			err = fh_open(fx, &rq->fh2, O_PATH, &x.fd2);
		if (err)
			goto done;
	}
	if (!(op->flags & OP_AS_SERVER)) {
		err = cred_enter(rq);
		if (err)
			goto done;
	}
	proc_path(x.fd, path, sizeof(path));
	err = op->exec(&x);
done:
	if (x.fd2 >= 0 && x.fd2 != x.fd)
		close(x.fd2);
	if (x.fd >= 0 && x.fd != *fh_fd)
		close(x.fd);
	if (!err)
		*body_len = o.len;
	return err;
}

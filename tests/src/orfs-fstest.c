// SPDX-License-Identifier: GPL-2.0-only
/*
 * orfs-fstest: POSIX behaviour of a mounted file system, with the errno
 * values a local file system gives. Run on an ORFS mount (and, to check
 * the checks, on tmpfs: both must pass).
 *
 *   orfs-fstest DIR [UID]
 *
 * DIR must be empty and writable by root. With UID, the permission checks
 * also run as that user (the caller must be root). Prints "ok NAME" per
 * check and "FAIL NAME: why" on the first failure of a check.
 * Exit status: 0 all passed, 1 a check failed, 2 usage.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE	(1 << 0)
#define RENAME_EXCHANGE		(1 << 1)
#endif
#ifndef STATX_DIOALIGN
#define STATX_DIOALIGN		0x00002000U
#endif

struct ctx {
	const char	*dir;
	const char	*check;
	char		path[4096];
	int		failed;
};

#define CHECK(c, cond, ...) do {					\
	if (!(cond)) {							\
		fprintf(stderr, "FAIL %s: ", (c)->check);		\
		fprintf(stderr, __VA_ARGS__);				\
		fprintf(stderr, " (errno %s)\n", strerror(errno));	\
		return -1;						\
	}								\
} while (0)

#define EXPECT_ERRNO(c, call, err) do {					\
	errno = 0;							\
	CHECK(c, (call) < 0 && errno == (err), "%s: want %s", #call, strerror(err)); \
} while (0)

static const char *P(struct ctx *c, const char *name)
{
	snprintf(c->path, sizeof(c->path), "%s/%s", c->dir, name);
	return c->path;
}

/* Two paths at once need their own buffers. */
static char *P2(struct ctx *c, const char *name)
{
	static char b[2][4096];
	static int i;

	i ^= 1;
	snprintf(b[i], sizeof(b[i]), "%s/%s", c->dir, name);
	return b[i];
}

static int put(const char *path, const char *s, int flags)
{
	int fd = open(path, O_WRONLY | O_CREAT | flags, 0644);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, s, strlen(s));
	close(fd);
	return n == (ssize_t)strlen(s) ? 0 : -1;
}

static ssize_t get(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n >= 0)
		buf[n] = 0;
	return n;
}

static int t_create_flags(struct ctx *c)
{
	char buf[64];
	int fd;

	fd = open(P(c, "excl"), O_CREAT | O_EXCL | O_WRONLY, 0640);
	CHECK(c, fd >= 0, "O_EXCL create");
	close(fd);
	EXPECT_ERRNO(c, open(P(c, "excl"), O_CREAT | O_EXCL | O_WRONLY, 0640), EEXIST);
	CHECK(c, !put(P(c, "trunc"), "0123456789", 0), "write");
	CHECK(c, !put(P(c, "trunc"), "ab", O_TRUNC), "O_TRUNC write");
	CHECK(c, get(P(c, "trunc"), buf, sizeof(buf)) == 2 && !strcmp(buf, "ab"),
	      "O_TRUNC left '%s'", buf);
	CHECK(c, !put(P(c, "app"), "a", 0) && !put(P(c, "app"), "b", O_APPEND) &&
	      !put(P(c, "app"), "c", O_APPEND), "O_APPEND writes");
	CHECK(c, get(P(c, "app"), buf, sizeof(buf)) == 3 && !strcmp(buf, "abc"),
	      "O_APPEND gave '%s'", buf);
	EXPECT_ERRNO(c, open(P(c, "nosuch"), O_RDONLY), ENOENT);
	EXPECT_ERRNO(c, open(P(c, "trunc/x"), O_RDONLY), ENOTDIR);
	return 0;
}

static int t_unlink_open(struct ctx *c)
{
	char buf[64];
	struct stat st;
	DIR *d;
	struct dirent *e;
	int fd;

	CHECK(c, !put(P(c, "gone"), "still here", 0), "write");
	fd = open(P(c, "gone"), O_RDWR);
	CHECK(c, fd >= 0, "open");
	CHECK(c, !unlink(P(c, "gone")), "unlink");
	EXPECT_ERRNO(c, stat(P(c, "gone"), &st), ENOENT);
	CHECK(c, pread(fd, buf, 10, 0) == 10 && !memcmp(buf, "still here", 10),
	      "read after unlink");
	CHECK(c, pwrite(fd, "STILL", 5, 0) == 5, "write after unlink");
	CHECK(c, pread(fd, buf, 10, 0) == 10 && !memcmp(buf, "STILL here", 10),
	      "read back after unlink");
	CHECK(c, !fstat(fd, &st) && st.st_nlink == 0, "nlink %lu after unlink",
	      (unsigned long)st.st_nlink);
	close(fd);
	d = opendir(c->dir);
	CHECK(c, d, "opendir");
	while ((e = readdir(d)))
		CHECK(c, strncmp(e->d_name, ".orfs-", 6), "hidden %s left after close", e->d_name);
	closedir(d);
	return 0;
}

static int t_dirs(struct ctx *c)
{
	struct stat st;

	CHECK(c, !mkdir(P(c, "d"), 0750), "mkdir");
	EXPECT_ERRNO(c, mkdir(P(c, "d"), 0750), EEXIST);
	CHECK(c, !stat(P(c, "d"), &st) && S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0750,
	      "mode %o", st.st_mode);
	CHECK(c, !put(P(c, "d/f"), "x", 0), "file in dir");
	EXPECT_ERRNO(c, rmdir(P(c, "d")), ENOTEMPTY);
	EXPECT_ERRNO(c, rmdir(P(c, "d/f")), ENOTDIR);
	EXPECT_ERRNO(c, unlink(P(c, "d")), EISDIR);
	CHECK(c, !unlink(P(c, "d/f")) && !rmdir(P(c, "d")), "empty and remove");
	EXPECT_ERRNO(c, stat(P(c, "d"), &st), ENOENT);
	return 0;
}

static int t_rename(struct ctx *c)
{
	char buf[64];

	CHECK(c, !put(P(c, "r1"), "one", 0) && !put(P(c, "r2"), "two", 0), "write");
	CHECK(c, !rename(P2(c, "r1"), P2(c, "r3")), "rename");
	CHECK(c, get(P(c, "r3"), buf, sizeof(buf)) == 3 && !strcmp(buf, "one"), "renamed");
	errno = 0;
	CHECK(c, syscall(SYS_renameat2, AT_FDCWD, P2(c, "r3"), AT_FDCWD, P2(c, "r2"),
			 RENAME_NOREPLACE) < 0 && errno == EEXIST, "RENAME_NOREPLACE");
	CHECK(c, !syscall(SYS_renameat2, AT_FDCWD, P2(c, "r3"), AT_FDCWD, P2(c, "r2"),
			  RENAME_EXCHANGE), "RENAME_EXCHANGE");
	CHECK(c, get(P(c, "r2"), buf, sizeof(buf)) == 3 && !strcmp(buf, "one"), "exchanged 1");
	CHECK(c, get(P(c, "r3"), buf, sizeof(buf)) == 3 && !strcmp(buf, "two"), "exchanged 2");
	CHECK(c, !rename(P2(c, "r3"), P2(c, "r2")), "rename over");
	CHECK(c, get(P(c, "r2"), buf, sizeof(buf)) == 3 && !strcmp(buf, "two"), "replaced");
	EXPECT_ERRNO(c, access(P(c, "r3"), F_OK), ENOENT);
	CHECK(c, !mkdir(P(c, "rd"), 0755) && !put(P(c, "rd/x"), "x", 0), "dir");
	errno = 0;
	CHECK(c, rename(P2(c, "r2"), P2(c, "rd")) < 0 && errno == EISDIR, "file over dir");
	return 0;
}

/* Is A later than B? */
static int ts_after(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec > b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec > b->tv_nsec);
}

/* Sleep past the file system's time stamp tick (a jiffy on ext4). */
static void next_tick(void)
{
	struct timespec t = { 0, 30 * 1000 * 1000 };

	nanosleep(&t, NULL);
}

/*
 * A rename changes inodes it does not name: the ctime and link count of a
 * replaced file's other name, and the ctime of each renamed file, show at
 * once under every name, as the kernel's own file systems show them.
 */
static int t_rename_ctime(struct ctx *c)
{
	struct stat a, b, x, y;

	CHECK(c, !put(P(c, "rc1"), "one", 0) && !link(P2(c, "rc1"), P2(c, "rc2")) &&
	      !put(P(c, "rcs"), "new", 0), "files");
	CHECK(c, !stat(P(c, "rc2"), &a) && a.st_nlink == 2 && !stat(P(c, "rcs"), &x), "stat");
	next_tick();
	CHECK(c, !rename(P2(c, "rcs"), P2(c, "rc1")), "rename over a linked file");
	CHECK(c, !stat(P(c, "rc2"), &b) && b.st_nlink == 1, "the other name's link count %lu",
	      (unsigned long)b.st_nlink);
	CHECK(c, ts_after(&b.st_ctim, &a.st_ctim), "the other name's ctime did not move");
	CHECK(c, !stat(P(c, "rc1"), &y) && y.st_ino == x.st_ino, "the renamed file");
	CHECK(c, ts_after(&y.st_ctim, &x.st_ctim), "the renamed file's ctime did not move");
	/* RENAME_EXCHANGE changes both files. */
	CHECK(c, !stat(P(c, "rc1"), &x) && !stat(P(c, "rc2"), &a), "stat before exchange");
	next_tick();
	CHECK(c, !syscall(SYS_renameat2, AT_FDCWD, P2(c, "rc1"), AT_FDCWD, P2(c, "rc2"),
			  RENAME_EXCHANGE), "RENAME_EXCHANGE");
	CHECK(c, !stat(P(c, "rc2"), &y) && y.st_ino == x.st_ino && ts_after(&y.st_ctim, &x.st_ctim),
	      "the first exchanged file's ctime did not move");
	CHECK(c, !stat(P(c, "rc1"), &b) && b.st_ino == a.st_ino && ts_after(&b.st_ctim, &a.st_ctim),
	      "the second exchanged file's ctime did not move");
	return 0;
}

/*
 * Device nodes made by root keep their type and numbers, and open as the
 * device of the host that opens them (here the null device: writes
 * vanish, reads end at once).
 */
/*
 * After WHAT: PATH's mtime moved if WANT_M, its ctime if WANT_C, and
 * neither otherwise, against BEFORE.
 */
static int moved(struct ctx *c, const char *what, const char *path, const struct stat *before,
		 int want_m, int want_c)
{
	struct stat a;

	CHECK(c, !lstat(path, &a), "%s: lstat %s", what, path);
	CHECK(c, !want_m == !ts_after(&a.st_mtim, &before->st_mtim), "%s: %s's mtime %s", what,
	      path, want_m ? "did not move" : "moved");
	CHECK(c, !want_c == !ts_after(&a.st_ctim, &before->st_ctim), "%s: %s's ctime %s", what,
	      path, want_c ? "did not move" : "moved");
	return 0;
}

/* The time stamps of every inode an operation changes, and of no other. */
static int t_times(struct ctx *c)
{
	char d[4096], e[4096], f[4096], l[4096], g[4096], sub[4096], sl[4096];
	struct stat sd, se, sf;
	struct timespec ts[2] = { { 1000000000, 0 }, { 1000000000, 0 } };

	snprintf(d, sizeof(d), "%s/td", c->dir);
	snprintf(e, sizeof(e), "%s/te", c->dir);
	snprintf(f, sizeof(f), "%s/td/f", c->dir);
	snprintf(l, sizeof(l), "%s/te/l", c->dir);
	snprintf(g, sizeof(g), "%s/te/g", c->dir);
	snprintf(sub, sizeof(sub), "%s/td/sub", c->dir);
	snprintf(sl, sizeof(sl), "%s/td/sl", c->dir);
	CHECK(c, !mkdir(d, 0755) && !mkdir(e, 0755), "setup");
#define SNAP() do {							\
	CHECK(c, !stat(d, &sd) && !stat(e, &se), "stat");		\
	if (stat(f, &sf))						\
		memset(&sf, 0, sizeof(sf));				\
	next_tick();							\
} while (0)
#define MOVED(what, path, st, m, ch) do {				\
	if (moved(c, what, path, st, m, ch))				\
		return -1;						\
} while (0)
	SNAP();
	CHECK(c, !put(f, "data", 0), "create");
	MOVED("create", d, &sd, 1, 1);
	MOVED("create", e, &se, 0, 0);
	SNAP();
	CHECK(c, !put(f, "more", O_APPEND), "write");
	MOVED("write", f, &sf, 1, 1);
	MOVED("write", d, &sd, 0, 0);
	SNAP();
	CHECK(c, !chmod(f, 0640), "chmod");
	MOVED("chmod", f, &sf, 0, 1);
	SNAP();
	CHECK(c, !utimensat(AT_FDCWD, f, ts, 0), "utimensat");
	CHECK(c, !stat(f, &sf) && sf.st_mtim.tv_sec == 1000000000, "mtime set");
	SNAP();
	CHECK(c, !truncate(f, 2), "truncate");
	MOVED("truncate", f, &sf, 1, 1);
	SNAP();
	CHECK(c, !link(f, l), "link");
	MOVED("link", f, &sf, 0, 1);
	MOVED("link", e, &se, 1, 1);
	MOVED("link", d, &sd, 0, 0);
	SNAP();
	CHECK(c, !unlink(l), "unlink");
	MOVED("unlink of another link", f, &sf, 0, 1);
	MOVED("unlink", e, &se, 1, 1);
	SNAP();
	CHECK(c, !mkdir(sub, 0755), "mkdir");
	MOVED("mkdir", d, &sd, 1, 1);
	SNAP();
	CHECK(c, !rmdir(sub), "rmdir");
	MOVED("rmdir", d, &sd, 1, 1);
	SNAP();
	CHECK(c, !symlink("f", sl), "symlink");
	MOVED("symlink", d, &sd, 1, 1);
	SNAP();
	CHECK(c, !unlink(sl), "unlink of a symlink");
	MOVED("unlink of a symlink", d, &sd, 1, 1);
	MOVED("unlink of a symlink", f, &sf, 0, 0);
	SNAP();
	CHECK(c, !rename(f, g), "rename");
	MOVED("rename", d, &sd, 1, 1);
	MOVED("rename", e, &se, 1, 1);
	MOVED("rename", g, &sf, 0, 1);
	CHECK(c, !unlink(g) && !rmdir(d) && !rmdir(e), "cleanup");
#undef SNAP
#undef MOVED
	return 0;
}

static int t_devices(struct ctx *c)
{
	struct stat st;
	char buf[8];
	int fd;

	CHECK(c, !mknod(P(c, "null"), S_IFCHR | 0666, makedev(1, 3)), "mknod of a character device");
	CHECK(c, !lstat(P(c, "null"), &st) && S_ISCHR(st.st_mode) && major(st.st_rdev) == 1 &&
	      minor(st.st_rdev) == 3, "character device 1:3: mode %o, %u:%u", st.st_mode,
	      major(st.st_rdev), minor(st.st_rdev));
	CHECK(c, !mknod(P(c, "blk"), S_IFBLK | 0600, makedev(259, 0xfffff)), "mknod of a block device");
	CHECK(c, !lstat(P(c, "blk"), &st) && S_ISBLK(st.st_mode) && major(st.st_rdev) == 259 &&
	      minor(st.st_rdev) == 0xfffff, "block device 259:1048575: %u:%u", major(st.st_rdev),
	      minor(st.st_rdev));
	fd = open(P(c, "null"), O_RDWR);
	CHECK(c, fd >= 0, "open the null device");
	CHECK(c, write(fd, "gone", 4) == 4 && read(fd, buf, sizeof(buf)) == 0, "the null device");
	close(fd);
	CHECK(c, !unlink(P(c, "null")) && !unlink(P(c, "blk")), "unlink");
	return 0;
}

static int t_readdir(struct ctx *c)
{
	int i, n = 0, dots = 0;
	char name[64];
	struct dirent *e;
	DIR *d;

	CHECK(c, !mkdir(P(c, "big"), 0755), "mkdir");
	for (i = 0; i < 2000; i++) {
		snprintf(name, sizeof(name), "big/file-with-a-longish-name-%05d", i);
		CHECK(c, !put(P(c, name), "", 0), "create %s", name);
	}
	d = opendir(P(c, "big"));
	CHECK(c, d, "opendir");
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) {
			dots++;
			continue;
		}
		CHECK(c, !strncmp(e->d_name, "file-with-a-longish-name-", 25) &&
		      e->d_type == DT_REG, "entry %s type %d", e->d_name, e->d_type);
		n++;
	}
	closedir(d);
	CHECK(c, n == 2000 && dots == 2, "%d entries and %d dots", n, dots);
	return 0;
}

static int t_links(struct ctx *c)
{
	struct timespec ts[2] = { { 1000000000, 0 }, { 1100000000, 0 } };
	struct stat a, b;
	char buf[256];
	ssize_t n;

	CHECK(c, !put(P(c, "target"), "data", 0), "write");
	CHECK(c, !symlink("target", P(c, "sym")), "symlink");
	n = readlink(P(c, "sym"), buf, sizeof(buf));
	CHECK(c, n == 6 && !memcmp(buf, "target", 6), "readlink");
	CHECK(c, !lstat(P(c, "sym"), &a) && S_ISLNK(a.st_mode), "lstat symlink");
	CHECK(c, !stat(P(c, "sym"), &a) && S_ISREG(a.st_mode) && a.st_size == 4, "stat follows");
	CHECK(c, !utimensat(AT_FDCWD, P(c, "sym"), ts, AT_SYMLINK_NOFOLLOW) &&
	      !lstat(P(c, "sym"), &a) && a.st_mtime == ts[1].tv_sec && a.st_atime == ts[0].tv_sec &&
	      !stat(P(c, "target"), &b) && b.st_mtime != ts[1].tv_sec, "a symlink's own times");
	CHECK(c, !symlink("/etc/passwd", P(c, "abs")), "absolute symlink");
	n = readlink(P(c, "abs"), buf, sizeof(buf));
	CHECK(c, n == 11 && !memcmp(buf, "/etc/passwd", 11), "absolute readlink");
	CHECK(c, !link(P2(c, "target"), P2(c, "hard")), "link");
	CHECK(c, !stat(P(c, "target"), &a) && !stat(P(c, "hard"), &b) && a.st_ino == b.st_ino &&
	      a.st_nlink == 2, "hard link ino %lu/%lu nlink %lu", (unsigned long)a.st_ino,
	      (unsigned long)b.st_ino, (unsigned long)a.st_nlink);
	CHECK(c, !unlink(P(c, "hard")) && !stat(P(c, "target"), &a) && a.st_nlink == 1,
	      "nlink after unlink");
	/* link(2) does not follow a symbolic link: the link itself gets a name. */
	CHECK(c, !link(P2(c, "sym"), P2(c, "symhard")), "link of a symlink: %s", strerror(errno));
	CHECK(c, !lstat(P(c, "sym"), &a) && !lstat(P(c, "symhard"), &b) && S_ISLNK(b.st_mode) &&
	      a.st_ino == b.st_ino && a.st_nlink == 2, "hard link of a symlink: nlink %lu",
	      (unsigned long)a.st_nlink);
	n = readlink(P(c, "symhard"), buf, sizeof(buf));
	CHECK(c, n == 6 && !memcmp(buf, "target", 6), "readlink of the second name");
	CHECK(c, !mknod(P(c, "fifo"), S_IFIFO | 0644, 0) && !lstat(P(c, "fifo"), &a) &&
	      S_ISFIFO(a.st_mode), "fifo");
	CHECK(c, !mknod(P(c, "sock"), S_IFSOCK | 0644, 0) && !lstat(P(c, "sock"), &a) &&
	      S_ISSOCK(a.st_mode), "socket");
	return 0;
}

static int t_attrs(struct ctx *c)
{
	struct timespec ts[2] = { { 1000000000, 123456789 }, { 1200000000, 987654321 } };
	struct statx sx;
	struct stat st;
	char buf[64];

	CHECK(c, !put(P(c, "attr"), "0123456789", 0), "write");
	CHECK(c, !chmod(P(c, "attr"), 0604) && !stat(P(c, "attr"), &st) &&
	      (st.st_mode & 07777) == 0604, "chmod: %o", st.st_mode);
	CHECK(c, !chown(P(c, "attr"), 1234, 5678) && !stat(P(c, "attr"), &st) &&
	      st.st_uid == 1234 && st.st_gid == 5678, "chown");
	CHECK(c, !truncate(P(c, "attr"), 4) && !stat(P(c, "attr"), &st) && st.st_size == 4,
	      "shrink");
	CHECK(c, !truncate(P(c, "attr"), 8) && get(P(c, "attr"), buf, sizeof(buf)) == 8 &&
	      !memcmp(buf, "0123\0\0\0\0", 8), "extend with zeroes");
	CHECK(c, !utimensat(AT_FDCWD, P(c, "attr"), ts, 0) && !stat(P(c, "attr"), &st) &&
	      st.st_mtim.tv_sec == 1200000000 && st.st_mtim.tv_nsec == 987654321 &&
	      st.st_atim.tv_sec == 1000000000, "utimensat");
	CHECK(c, !statx(AT_FDCWD, P(c, "attr"), 0, STATX_BASIC_STATS, &sx) &&
	      sx.stx_size == 8 && sx.stx_mtime.tv_nsec == 987654321, "statx");
	return 0;
}

static int t_xattr(struct ctx *c)
{
	char buf[256];
	ssize_t n;

	struct stat sb;

	CHECK(c, !put(P(c, "xa"), "x", 0) && !stat(P(c, "xa"), &sb), "write");
	next_tick();
	CHECK(c, !setxattr(P(c, "xa"), "user.color", "blue", 4, XATTR_CREATE), "setxattr");
	if (moved(c, "setxattr", P(c, "xa"), &sb, 0, 1))
		return -1;
	errno = 0;
	CHECK(c, setxattr(P(c, "xa"), "user.color", "red", 3, XATTR_CREATE) < 0 &&
	      errno == EEXIST, "XATTR_CREATE twice");
	n = getxattr(P(c, "xa"), "user.color", buf, sizeof(buf));
	CHECK(c, n == 4 && !memcmp(buf, "blue", 4), "getxattr");
	CHECK(c, getxattr(P(c, "xa"), "user.color", NULL, 0) == 4, "getxattr size");
	errno = 0;
	CHECK(c, getxattr(P(c, "xa"), "user.color", buf, 2) < 0 && errno == ERANGE, "ERANGE");
	n = listxattr(P(c, "xa"), buf, sizeof(buf));
	CHECK(c, n > 0 && memmem(buf, n, "user.color", 11), "listxattr");
	CHECK(c, !removexattr(P(c, "xa"), "user.color"), "removexattr");
	errno = 0;
	CHECK(c, getxattr(P(c, "xa"), "user.color", buf, sizeof(buf)) < 0 && errno == ENODATA,
	      "removed");
	return 0;
}

static int t_sync_statfs(struct ctx *c)
{
	struct statfs sf;
	int fd = open(P(c, "sync"), O_CREAT | O_RDWR, 0644);

	CHECK(c, fd >= 0 && write(fd, "abc", 3) == 3, "write");
	CHECK(c, !fsync(fd) && !fdatasync(fd), "fsync");
	close(fd);
	CHECK(c, !statfs(c->dir, &sf) && sf.f_blocks > 0 && sf.f_namelen == 255, "statfs");
	return 0;
}

/*
 * fallocate(): a hole shows through reads and a shared mapping of the
 * file's pages, cached before; a store through the mapping just before it
 * stays; allocation grows the file or keeps its size; a zeroed range where
 * the file system has it (not 6.1's tmpfs).
 */
static int t_fallocate(struct ctx *c)
{
	const size_t len = 4 * 4096;
	char *p, buf[4 * 4096];
	struct stat st;
	size_t i;
	int fd;

	fd = open(P(c, "fal"), O_CREAT | O_RDWR | O_TRUNC, 0644);
	memset(buf, 'a', len);
	CHECK(c, fd >= 0 && pwrite(fd, buf, len, 0) == (ssize_t)len, "write");
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(c, p != MAP_FAILED && p[5000] == 'a', "mmap");
	CHECK(c, !fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 4096 + 100, 8192),
	      "punch a hole");
	CHECK(c, pread(fd, buf, len, 0) == (ssize_t)len, "read");
	for (i = 0; i < len; i++) {
		char want = i >= 4196 && i < 12388 ? 0 : 'a';

		CHECK(c, buf[i] == want, "byte %zu read after the hole: %#x", i, buf[i]);
		CHECK(c, p[i] == want, "byte %zu mapped after the hole: %#x", i, p[i]);
	}
	CHECK(c, !fstat(fd, &st) && st.st_size == (off_t)len, "size after the hole");
	p[0] = 'b';
	CHECK(c, !fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 1, 10),
	      "a hole next to a store");
	CHECK(c, pread(fd, buf, 12, 0) == 12 && buf[0] == 'b' && !buf[1] && !buf[10] &&
	      buf[11] == 'a', "the store beside the hole");
	munmap(p, len);
	if (!fallocate(fd, FALLOC_FL_ZERO_RANGE, 13000, 100)) {
		CHECK(c, pread(fd, buf, 102, 12999) == 102 && buf[0] == 'a' && !buf[1] &&
		      !buf[100] && buf[101] == 'a', "a zeroed range");
	} else {
		CHECK(c, errno == EOPNOTSUPP, "zero range: %s", strerror(errno));
	}
	CHECK(c, !fallocate(fd, 0, 0, 1 << 20) && !fstat(fd, &st) && st.st_size == 1 << 20,
	      "allocation grows the file");
	CHECK(c, !fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 2 << 20) && !fstat(fd, &st) &&
	      st.st_size == 1 << 20 && st.st_blocks >= (2 << 20) / 512,
	      "allocation past the end (%lld blocks)", (long long)st.st_blocks);
	CHECK(c, pread(fd, buf, 4, 4195) == 4 && buf[0] == 'a' && !buf[1] && !buf[3],
	      "data after allocation");
	close(fd);
	return 0;
}

/*
 * lseek() with SEEK_DATA and SEEK_HOLE in a sparse file, as the file
 * system finds them (in whole blocks), also of data written but not yet
 * written back; ENXIO at the end; SEEK_END after a truncate.
 */
static int t_seek(struct ctx *c)
{
	off_t hole, data;
	int fd;

	fd = open(P(c, "sparse"), O_CREAT | O_RDWR | O_TRUNC, 0644);
	CHECK(c, fd >= 0 && pwrite(fd, "head", 4, 0) == 4 && pwrite(fd, "tail", 4, 4 << 20) == 4,
	      "write");
	CHECK(c, !fsync(fd), "fsync");
	hole = lseek(fd, 0, SEEK_HOLE);
	CHECK(c, hole >= 4 && hole < 4 << 20, "the first hole at %lld", (long long)hole);
	data = lseek(fd, hole, SEEK_DATA);
	CHECK(c, data > hole && data <= 4 << 20, "data after the hole at %lld", (long long)data);
	CHECK(c, lseek(fd, 0, SEEK_CUR) == data, "the offset is where SEEK_DATA went");
	CHECK(c, lseek(fd, 4 << 20, SEEK_HOLE) == (4 << 20) + 4, "the end is a hole");
	EXPECT_ERRNO(c, lseek(fd, (4 << 20) + 4, SEEK_DATA), ENXIO);
	EXPECT_ERRNO(c, lseek(fd, 5 << 20, SEEK_HOLE), ENXIO);
	/* Written, not yet written back: data all the same. */
	CHECK(c, pwrite(fd, "middle", 6, 2 << 20) == 6, "write in the hole");
	data = lseek(fd, hole, SEEK_DATA);
	CHECK(c, data > hole && data <= 2 << 20, "new data at %lld", (long long)data);
	CHECK(c, !ftruncate(fd, 100) && lseek(fd, 0, SEEK_END) == 100, "SEEK_END after truncate");
	close(fd);
	return 0;
}

/*
 * copy_file_range() between two files of the directory: into the middle
 * of a destination whose pages are cached and mapped (the mapping shows
 * the copy), past its end, from a source with data not yet written back,
 * cut at the source's end; overlapping ranges of one file are refused.
 */
static int t_copy_range(struct ctx *c)
{
	char src[3 * 4096], buf[3 * 4096], *p;
	loff_t in, out;
	size_t i;
	int s, d;

	for (i = 0; i < sizeof(src); i++)
		src[i] = (char)('A' + i % 23);
	s = open(P2(c, "csrc"), O_CREAT | O_RDWR | O_TRUNC, 0644);
	d = open(P(c, "cdst"), O_CREAT | O_RDWR | O_TRUNC, 0644);
	memset(buf, 'd', sizeof(buf));
	CHECK(c, s >= 0 && d >= 0 && pwrite(s, src, sizeof(src), 0) == (ssize_t)sizeof(src) &&
	      pwrite(d, buf, 8192, 0) == 8192, "write");
	p = mmap(NULL, 8192, PROT_READ, MAP_SHARED, d, 0);
	CHECK(c, p != MAP_FAILED && p[4096] == 'd', "mmap");
	in = 100;
	out = 1000;
	CHECK(c, copy_file_range(s, &in, d, &out, 5000, 0) == 5000 && in == 5100 && out == 6000,
	      "copy into the middle");
	CHECK(c, pread(d, buf, 8192, 0) == 8192, "read");
	for (i = 0; i < 8192; i++) {
		char want = i >= 1000 && i < 6000 ? src[i - 900] : 'd';

		CHECK(c, buf[i] == want, "byte %zu read after the copy: %#x", i, buf[i]);
		CHECK(c, p[i] == want, "byte %zu mapped after the copy: %#x", i, p[i]);
	}
	munmap(p, 8192);
	/* Past the end, from data not yet written back, cut at the source's end. */
	CHECK(c, pwrite(s, "NEW", 3, sizeof(src) - 3) == 3, "write the source's end");
	in = sizeof(src) - 100;
	out = 10000;
	CHECK(c, copy_file_range(s, &in, d, &out, 1000, 0) == 100, "copy at the source's end");
	CHECK(c, pread(d, buf, 200, 9950) == 150 && buf[0] == 0 && buf[50] == src[sizeof(src) - 100] &&
	      !memcmp(buf + 147, "NEW", 3), "the copy past the end");
	in = sizeof(src);
	CHECK(c, copy_file_range(s, &in, d, &out, 10, 0) == 0, "copy from the source's end");
	in = 0;
	out = 10;
	EXPECT_ERRNO(c, copy_file_range(d, &in, d, &out, 100, 0), EINVAL);
	close(s);
	close(d);
	return 0;
}

static int t_mmap(struct ctx *c)
{
	size_t len = 3 * 4096 + 100, i;
	char *p, *back;
	int fd;

	fd = open(P(c, "mm"), O_CREAT | O_RDWR, 0644);
	CHECK(c, fd >= 0 && !ftruncate(fd, (off_t)len), "create");
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(c, p != MAP_FAILED, "mmap");
	for (i = 0; i < len; i++)
		p[i] = (char)(i * 7 + 3);
	CHECK(c, !msync(p, len, MS_SYNC), "msync");
	munmap(p, len);
	close(fd);
	back = malloc(len + 1);
	CHECK(c, back && get(P(c, "mm"), back, len + 1) == (ssize_t)len, "read back");
	for (i = 0; i < len; i++)
		CHECK(c, back[i] == (char)(i * 7 + 3), "byte %zu", i);
	free(back);
	return 0;
}

/*
 * A store through a shared mapping past the end of the file (in its last
 * page) is not part of the file, and reads as zeroes once the file grows
 * over it: by ftruncate, or by a write further on (after msync). POSIX
 * asks it; 6.12's ext4 does it, 6.1's ext4 and tmpfs (6.1 and 6.12) not.
 */
static int t_mmap_eof(struct ctx *c)
{
	size_t i;
	char *p;
	int fd, way;

	for (way = 0; way < 2; way++) {
		const char *name = way ? "eof-write" : "eof-truncate";
		char buf[4096];

		fd = open(P(c, name), O_CREAT | O_TRUNC | O_RDWR, 0644);
		CHECK(c, fd >= 0 && pwrite(fd, "0123456789", 10, 0) == 10, "create %s", name);
		p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		CHECK(c, p != MAP_FAILED, "mmap %s", name);
		memset(p + 200, 'X', 50);
		CHECK(c, !way || !msync(p, 4096, MS_SYNC), "msync %s", name);
		munmap(p, 4096);
		if (way)
			CHECK(c, pwrite(fd, "y", 1, 8000) == 1, "write past the end of %s", name);
		else
			CHECK(c, !ftruncate(fd, 4096), "ftruncate %s", name);
		CHECK(c, pread(fd, buf, sizeof(buf), 0) == (ssize_t)sizeof(buf), "read %s", name);
		for (i = 10; i < sizeof(buf); i++)
			CHECK(c, !buf[i], "%s: byte %zu, past the old end, is %#x", name, i,
			      (unsigned char)buf[i]);
		close(fd);
	}
	return 0;
}

/* O_DIRECT at the alignment statx advertises (ORFS: none, so odd offsets). */
static int t_direct(struct ctx *c)
{
	size_t len = 300000, i, al = 4096;
	struct statx sx;
	char *raw, *w, *r;
	off_t off;
	int fd;

	fd = open(P(c, "dio"), O_CREAT | O_RDWR | O_DIRECT, 0644);
	CHECK(c, fd >= 0, "open O_DIRECT");
	if (!statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) && (sx.stx_mask & STATX_DIOALIGN) &&
	    sx.stx_dio_mem_align)
		al = sx.stx_dio_mem_align > sx.stx_dio_offset_align ? sx.stx_dio_mem_align :
								       sx.stx_dio_offset_align;
	if (al == 1)
		len = 300001;
	else
		len = (len / al) * al;
	raw = aligned_alloc(4096, len + 8192);
	r = aligned_alloc(4096, len + 8192);
	CHECK(c, raw && r, "malloc");
	w = raw + (al == 1 ? 4097 : al);
	off = al == 1 ? 1001 : (off_t)al;
	for (i = 0; i < len; i++)
		w[i] = (char)(i * 13 + 1);
	CHECK(c, pwrite(fd, w, len, off) == (ssize_t)len, "O_DIRECT write aligned to %zu", al);
	CHECK(c, pread(fd, r + (al == 1 ? 3 : 0), len, off) == (ssize_t)len, "O_DIRECT read");
	CHECK(c, !memcmp(w, r + (al == 1 ? 3 : 0), len), "O_DIRECT data");
	CHECK(c, pread(fd, r, al == 1 ? 100 : al, off + (off_t)len) == 0,
	      "O_DIRECT read at end of file");
	close(fd);
	free(raw);
	free(r);
	printf("direct: alignment %zu\n", al);
	return 0;
}

/* As UID: the server applies the caller's credentials, and so do we. */
static int t_perms(struct ctx *c, uid_t uid)
{
	pid_t pid;
	int st;

	/* In a root-owned 0755 directory (the test's own may be sticky 1777). */
	CHECK(c, !mkdir(P(c, "p"), 0755) && !chmod(P(c, "p"), 0755), "setup");
	CHECK(c, !put(P(c, "p/rootfile"), "secret", 0) && !chmod(P(c, "p/rootfile"), 0600),
	      "setup");
	CHECK(c, !put(P(c, "p/public"), "hello", 0) && !chmod(P(c, "p/public"), 0644), "setup");
	CHECK(c, !mkdir(P(c, "p/mine"), 0755) && !chown(P(c, "p/mine"), uid, uid), "setup");
	pid = fork();
	CHECK(c, pid >= 0, "fork");
	if (!pid) {
		char buf[64];

		if (setgroups(0, NULL) || setgid(uid) || setuid(uid))
			_exit(3);
		if (get(P(c, "p/public"), buf, sizeof(buf)) != 5)
			_exit(4);
		errno = 0;
		if (open(P(c, "p/rootfile"), O_RDONLY) >= 0 || errno != EACCES)
			_exit(5);
		errno = 0;
		if (open(P(c, "p/public"), O_WRONLY) >= 0 || errno != EACCES)
			_exit(6);
		errno = 0;
		if (open(P(c, "p/newfile"), O_CREAT | O_WRONLY, 0644) >= 0 || errno != EACCES)
			_exit(7);
		errno = 0;
		if (unlink(P(c, "p/public")) == 0 || errno != EACCES)
			_exit(8);
		if (put(P(c, "p/mine/ok"), "mine", 0))
			_exit(9);
		errno = 0;
		if (chmod(P(c, "p/public"), 0666) == 0 || errno != EPERM)
			_exit(10);
		errno = 0;
		if (mknod(P(c, "p/mine/dev"), S_IFCHR | 0666, makedev(1, 3)) == 0 || errno != EPERM)
			_exit(14);
		/*
		 * A descriptor keeps the rights it was opened with: a file
		 * created without write permission is written, truncated,
		 * allocated, searched, copied from and into through the
		 * descriptor its creation returned.
		 */
		{
			int fd = open(P(c, "p/mine/ro"), O_CREAT | O_RDWR, 0);
			int cfd = open(P(c, "p/mine/copy"), O_CREAT | O_RDWR, 0600);
			loff_t in = 0, out = 4;

			if (fd < 0 || cfd < 0 || write(fd, "0123456789", 10) != 10)
				_exit(11);
			if (ftruncate(fd, 4))
				_exit(12);
			if (fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 8192))
				_exit(15);
			if (lseek(fd, 0, SEEK_DATA) != 0)
				_exit(16);
			if (copy_file_range(fd, &in, cfd, NULL, 4, 0) != 4)
				_exit(17);
			in = 0;
			if (copy_file_range(cfd, &in, fd, &out, 4, 0) != 4)
				_exit(18);
			if (fsync(fd) || close(fd) || close(cfd))
				_exit(13);
		}
		_exit(0);
	}
	CHECK(c, waitpid(pid, &st, 0) == pid && WIFEXITED(st), "wait");
	CHECK(c, WEXITSTATUS(st) == 0, "as uid %u: check %d failed", uid, WEXITSTATUS(st));
	{
		struct stat s;

		char buf[16] = "";

		CHECK(c, !stat(P(c, "p/mine/ok"), &s) && s.st_uid == uid, "owner of a user's file");
		CHECK(c, get(P(c, "p/mine/ro"), buf, sizeof(buf)) == 8 && !strcmp(buf, "01230123"),
		      "a mode 0 file written, truncated and copied into through its descriptor: '%s'",
		      buf);
	}
	return 0;
}

/* Open PATH with FLAGS and close it: 0, or the errno of the open. */
static int open_err(const char *path, int flags)
{
	int fd = open(path, flags);

	if (fd < 0)
		return errno;
	close(fd);
	return 0;
}

/*
 * Who may do what, as UID against root's files, class by class: the
 * owner's bits decide for the owner and the group's for a member, even
 * where a later class allows more; a directory needs x to be walked and r
 * to be read; in a sticky directory only a file's owner removes or
 * renames it. Each refusal with its errno.
 */
static int t_perm_matrix(struct ctx *c, uid_t uid)
{
	static const struct {
		const char	*name;
		uid_t		owner;	/* 0: root, 1: UID */
		int		group;	/* 0: root's, 1: UID's */
		mode_t		mode;
		int		rd, wr;	/* 0 or the errno UID gets */
	} f[] = {
		{ "g640", 0, 1, 0640, 0, EACCES },
		{ "o604", 0, 0, 0604, 0, EACCES },
		{ "g606", 0, 1, 0606, EACCES, EACCES },	/* a member gets the group's bits */
		{ "u077", 1, 1, 0077, EACCES, EACCES },	/* the owner gets the owner's */
		{ "g060", 0, 1, 0060, 0, 0 },
		{ "o007", 0, 0, 0007, 0, 0 },
	};
	char path[4096];
	struct timespec ts[2] = { { 1000000000, 0 }, { 1000000000, 0 } };
	size_t i;
	pid_t pid;
	int st;

	CHECK(c, !mkdir(P(c, "pm"), 0755) && !chmod(P(c, "pm"), 0755), "setup");
	for (i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		snprintf(path, sizeof(path), "%s/pm/%s", c->dir, f[i].name);
		CHECK(c, !put(path, "data", 0) &&
		      !chown(path, f[i].owner ? uid : 0, f[i].group ? uid : 0) &&
		      !chmod(path, f[i].mode), "setup %s", f[i].name);
	}
	CHECK(c, !mkdir(P(c, "pm/x711"), 0711) && !chmod(P(c, "pm/x711"), 0711) &&
	      !put(P(c, "pm/x711/in"), "in", 0), "setup x711");
	CHECK(c, !mkdir(P(c, "pm/r744"), 0744) && !chmod(P(c, "pm/r744"), 0744) &&
	      !put(P(c, "pm/r744/in"), "in", 0), "setup r744");
	CHECK(c, !mkdir(P(c, "pm/sticky"), 0777) && !chmod(P(c, "pm/sticky"), 01777) &&
	      !put(P(c, "pm/sticky/roots"), "root's", 0) && !chmod(P(c, "pm/sticky/roots"), 0666),
	      "setup sticky");
	pid = fork();
	CHECK(c, pid >= 0, "fork");
	if (!pid) {
		struct stat sb;
		int err;

		if (setgroups(0, NULL) || setgid(uid) || setuid(uid))
			_exit(100);
		for (i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
			snprintf(path, sizeof(path), "%s/pm/%s", c->dir, f[i].name);
			err = open_err(path, O_RDONLY);
			if (err != f[i].rd) {
				fprintf(stderr, "read %s: %s\n", f[i].name, strerror(err));
				_exit(1);
			}
			err = open_err(path, O_WRONLY);
			if (err != f[i].wr) {
				fprintf(stderr, "write %s: %s\n", f[i].name, strerror(err));
				_exit(2);
			}
		}
		/* Walked but not read; read but not walked. */
		if (stat(P(c, "pm/x711/in"), &sb) || get(P(c, "pm/x711/in"), path, 8) != 2)
			_exit(3);
		errno = 0;
		if (opendir(P(c, "pm/x711")) || errno != EACCES)
			_exit(4);
		errno = 0;
		if (stat(P(c, "pm/r744/in"), &sb) == 0 || errno != EACCES)
			_exit(5);
		/* Sticky: write root's file, not remove or rename it; own files freely. */
		if (put(P(c, "pm/sticky/roots"), "user's", O_TRUNC))
			_exit(6);
		errno = 0;
		if (unlink(P(c, "pm/sticky/roots")) == 0 || errno != EPERM)
			_exit(7);
		errno = 0;
		if (rename(P2(c, "pm/sticky/roots"), P2(c, "pm/sticky/moved")) == 0 || errno != EPERM)
			_exit(8);
		if (put(P(c, "pm/sticky/mine"), "mine", 0) ||
		    rename(P2(c, "pm/sticky/mine"), P2(c, "pm/sticky/mine2")) ||
		    unlink(P(c, "pm/sticky/mine2")))
			_exit(9);
		/* A writer may set the times to now, not to a time of its choice. */
		if (utimensat(AT_FDCWD, P(c, "pm/sticky/roots"), NULL, 0))
			_exit(10);
		errno = 0;
		if (utimensat(AT_FDCWD, P(c, "pm/sticky/roots"), ts, 0) == 0 || errno != EPERM)
			_exit(11);
		/* Nor give away a file, or give it a group it is not in. */
		errno = 0;
		if (chown(P(c, "pm/u077"), 0, (gid_t)-1) == 0 || errno != EPERM)
			_exit(12);
		errno = 0;
		if (chown(P(c, "pm/u077"), (uid_t)-1, 0) == 0 || errno != EPERM)
			_exit(13);
		_exit(0);
	}
	CHECK(c, waitpid(pid, &st, 0) == pid && WIFEXITED(st), "wait");
	CHECK(c, WEXITSTATUS(st) == 0, "as uid %u: check %d failed", uid, WEXITSTATUS(st));
	{
		char buf[16] = "";

		CHECK(c, get(P(c, "pm/sticky/roots"), buf, sizeof(buf)) == 6 && !strcmp(buf, "user's"),
		      "root's file in the sticky directory: '%s'", buf);
	}
	return 0;
}

/* A POSIX ACL entry in the kernel's xattr form (linux/posix_acl_xattr.h). */
struct acl_ent {
	uint16_t	tag;
	uint16_t	perm;
	uint32_t	id;
};

enum { ACL_USER_OBJ = 1, ACL_USER = 2, ACL_GROUP_OBJ = 4, ACL_MASK = 0x10, ACL_OTHER = 0x20 };

/* Set NAME's ACL XATTR to N entries (little-endian hosts, as the form is). */
static int acl_set(const char *path, const char *xattr, const struct acl_ent *e, int n)
{
	uint8_t buf[4 + 8 * 8];
	uint32_t version = 2;

	memcpy(buf, &version, 4);
	memcpy(buf + 4, e, (size_t)n * sizeof(*e));
	return setxattr(path, xattr, buf, 4 + (size_t)n * sizeof(*e), 0);
}

/* As UID: open PATH with FLAGS; 0 or the errno. */
static int open_as(uid_t uid, const char *path, int flags)
{
	int st, fd;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (!pid) {
		if (setgroups(0, NULL) || setgid(uid) || setuid(uid))
			_exit(250);
		fd = open(path, flags);
		_exit(fd < 0 ? errno : 0);
	}
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

/*
 * POSIX ACLs: an access ACL grants UID what the mode does not, and no
 * one else; getxattr gives it back; a directory's default ACL is
 * inherited by a new file (its mode's group bits become the ACL's mask);
 * removing the ACL takes the grant away at once.
 */
static int t_acl(struct ctx *c, uid_t uid)
{
	const struct acl_ent acc[] = {
		{ ACL_USER_OBJ, 6, 0xffffffff }, { ACL_USER, 4, uid }, { ACL_GROUP_OBJ, 0, 0xffffffff },
		{ ACL_MASK, 4, 0xffffffff }, { ACL_OTHER, 0, 0xffffffff },
	};
	const struct acl_ent def[] = {
		{ ACL_USER_OBJ, 7, 0xffffffff }, { ACL_USER, 7, uid }, { ACL_GROUP_OBJ, 5, 0xffffffff },
		{ ACL_MASK, 7, 0xffffffff }, { ACL_OTHER, 0, 0xffffffff },
	};
	uint8_t buf[128];
	struct stat st;
	ssize_t n;

	CHECK(c, !mkdir(P(c, "acl"), 0755) && !chmod(P(c, "acl"), 0755) &&
	      !put(P(c, "acl/f"), "secret", 0) && !chmod(P(c, "acl/f"), 0600), "setup");
	CHECK(c, open_as(uid, P(c, "acl/f"), O_RDONLY) == EACCES, "readable before the ACL");
	CHECK(c, !acl_set(P(c, "acl/f"), "system.posix_acl_access", acc, 5), "set an access ACL");
	n = getxattr(P(c, "acl/f"), "system.posix_acl_access", buf, sizeof(buf));
	CHECK(c, n == 4 + 5 * 8 && !memcmp(buf + 4, acc, sizeof(acc)), "the ACL read back (%zd bytes)",
	      n);
	CHECK(c, !stat(P(c, "acl/f"), &st) && (st.st_mode & 0777) == 0640,
	      "the mode's group bits are the mask: %o", st.st_mode & 0777);
	CHECK(c, open_as(uid, P(c, "acl/f"), O_RDONLY) == 0, "the ACL's reader refused");
	CHECK(c, open_as(uid, P(c, "acl/f"), O_WRONLY) == EACCES, "the ACL's reader may write");
	CHECK(c, open_as(uid + 1, P(c, "acl/f"), O_RDONLY) == EACCES, "another user may read");
	CHECK(c, !removexattr(P(c, "acl/f"), "system.posix_acl_access"), "remove the ACL");
	CHECK(c, open_as(uid, P(c, "acl/f"), O_RDONLY) == EACCES, "readable after its removal");
	/* A default ACL, inherited; the umask does not apply where one is. */
	CHECK(c, !acl_set(P(c, "acl"), "system.posix_acl_default", def, 5), "set a default ACL");
	{
		mode_t old = umask(022);
		int fd = open(P(c, "acl/new"), O_CREAT | O_WRONLY, 0666);

		umask(old);
		CHECK(c, fd >= 0 && !close(fd), "create under a default ACL");
	}
	CHECK(c, !stat(P(c, "acl/new"), &st) && (st.st_mode & 0777) == 0660,
	      "mode %o made 0666 under umask 022 and a default ACL (want 0660)",
	      st.st_mode & 0777);
	n = getxattr(P(c, "acl/new"), "system.posix_acl_access", buf, sizeof(buf));
	CHECK(c, n == 4 + 5 * 8, "the inherited ACL (%zd bytes)", n);
	CHECK(c, open_as(uid, P(c, "acl/new"), O_WRONLY) == 0, "the default ACL's user may not write");
	CHECK(c, open_as(uid, P(c, "acl/new"), O_RDONLY) == 0, "the default ACL's user reads");
	return 0;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(struct ctx *c);
	} checks[] = {
		{ "create-flags", t_create_flags }, { "unlink-open", t_unlink_open },
		{ "dirs", t_dirs }, { "rename", t_rename }, { "rename-ctime", t_rename_ctime },
		{ "times", t_times }, { "readdir", t_readdir },
		{ "links", t_links }, { "devices", t_devices }, { "attrs", t_attrs },
		{ "xattr", t_xattr },
		{ "sync-statfs", t_sync_statfs }, { "fallocate", t_fallocate }, { "seek", t_seek },
		{ "copy-range", t_copy_range },
		{ "mmap", t_mmap },
		{ "mmap-eof", t_mmap_eof }, { "direct", t_direct },
	};
	struct ctx c = { 0 };
	size_t i;

	if (argc < 2 || argc > 3)
		return fprintf(stderr, "usage: orfs-fstest DIR [UID]\n"), 2;
	c.dir = argv[1];
	for (i = 0; i < sizeof(checks) / sizeof(checks[0]); i++) {
		c.check = checks[i].name;
		if (checks[i].fn(&c))
			c.failed = 1;
		else
			printf("ok %s\n", c.check);
		fflush(stdout);
	}
	if (argc == 3) {
		c.check = "permissions";
		if (t_perms(&c, (uid_t)strtoul(argv[2], NULL, 0)))
			c.failed = 1;
		else
			printf("ok permissions\n");
		c.check = "perm-matrix";
		if (t_perm_matrix(&c, (uid_t)strtoul(argv[2], NULL, 0)))
			c.failed = 1;
		else
			printf("ok perm-matrix\n");
		c.check = "acl";
		if (t_acl(&c, (uid_t)strtoul(argv[2], NULL, 0)))
			c.failed = 1;
		else
			printf("ok acl\n");
	}
	return c.failed;
}

/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause */
/*
 * ORFS file service: the operations a client sends on a knet connection
 * opened with service KNET_SVC_FILE. The transport framing (header,
 * segments, inline data, credits) is knet's (knet/uapi/knet_proto.h).
 * One definition, compiled by orfs.ko and the server.
 *
 * Every request body starts with struct orfs_req (the caller's identity and
 * a transaction id), then the operation's fixed part, then its strings: a
 * name is __le16 length + bytes, a symlink target or an xattr value is
 * __le32 length + bytes; no NUL, no padding. Every successful reply body
 * starts with the operation's fixed part; strings follow the same way.
 */
#ifndef _UAPI_ORFS_PROTO_H
#define _UAPI_ORFS_PROTO_H

#include "../../knet/uapi/knet_proto.h"

enum orfs_opcode {
	ORFS_OP_SESSION		= KNET_OP_SERVICE_BASE,
	ORFS_OP_GETROOT,
	ORFS_OP_LOOKUP,
	ORFS_OP_GETATTR,
	ORFS_OP_SETATTR,
	ORFS_OP_CREATE,
	ORFS_OP_MKDIR,
	ORFS_OP_MKNOD,
	ORFS_OP_SYMLINK,
	ORFS_OP_LINK,
	ORFS_OP_UNLINK,
	ORFS_OP_RMDIR,
	ORFS_OP_RENAME,
	ORFS_OP_READLINK,
	ORFS_OP_READDIR,
	ORFS_OP_STATFS,
	ORFS_OP_READ,
	ORFS_OP_WRITE,
	ORFS_OP_FSYNC,
	ORFS_OP_GETXATTR,
	ORFS_OP_SETXATTR,
	ORFS_OP_LISTXATTR,
	ORFS_OP_REMOVEXATTR,
	ORFS_OP_LOCK,
	ORFS_OP_FALLOCATE,
	ORFS_OP_SEEK,
	ORFS_OP_COPY,
	ORFS_OP_CLONE,
	ORFS_OP_LAST		= ORFS_OP_CLONE,
};

#define ORFS_NAME_MAX		255	/* one path component */
#define ORFS_PATH_MAX		4095	/* a symlink target */
#define ORFS_XATTR_NAME_MAX	255
#define ORFS_XATTR_SIZE_MAX	65536
#define ORFS_MAX_GROUPS		16

/* An opaque file handle: stable across server restarts, unforgeable. */
#define ORFS_FH_SIZE		64
struct orfs_fh {
	__u8	data[ORFS_FH_SIZE];
};

/* Who asks: the server acts with these credentials (or squashed ones). */
struct orfs_cred {
	__le32	uid;
	__le32	gid;
	__le16	ngroups;
	__le16	reserved;
	__le32	groups[ORFS_MAX_GROUPS];
};

/* Start of every request body. */
struct orfs_req {
	__le64			xid;	/* unique per client session: retransmissions repeat it */
	struct orfs_cred	cred;
	__le32			reserved;
};

struct orfs_time {
	__le64	sec;
	__le32	nsec;
	__le32	reserved;
};

struct orfs_attr {
	__le64			ino;
	__le64			size;
	__le64			blocks;		/* 512-byte units */
	__le64			rdev;		/* a device's: major << 32 | minor */
	__le64			change;		/* moves whenever data or metadata change */
	__le32			mode;
	__le32			nlink;
	__le32			uid;
	__le32			gid;
	__le32			blksize;
	__le32			reserved;
	struct orfs_time	atime;
	struct orfs_time	mtime;
	struct orfs_time	ctime;
	struct orfs_time	btime;
};

/* Replies of GETROOT, LOOKUP, CREATE, MKDIR, MKNOD, SYMLINK. */
struct orfs_entry_rep {
	struct orfs_fh		fh;
	struct orfs_attr	attr;
};

/* SESSION: names the client for the replay cache. Reply: orfs_session_rep. */
struct orfs_session_req {
	__le64	client_id;	/* random, chosen by the client once per mount */
};

struct orfs_session_rep {
	__le64	server_boot;	/* changes when the server restarts */
	__le32	max_read;
	__le32	max_write;
	__le32	flags;		/* ORFS_SESSION_*; absent from older servers' replies */
	__le32	reserved;
};

/*
 * The client's locks were dropped at the end of its lease, while it was
 * away (another client's lock needed their place). Said in every SESSION
 * reply until the client next sends a LOCK.
 */
#define ORFS_SESSION_LOCKS_REVOKED	1U
/* The server takes ORFS_LOCK_HOLD (its replies to a waiter's LOCK may wait). */
#define ORFS_SESSION_LOCK_HOLD		2U
/* The server takes ORFS_WRITE_VERF and ORFS_FSYNC_VERF (write verifiers). */
#define ORFS_SESSION_VERF		4U

/* LOOKUP, UNLINK, RMDIR: dir, then a name. */
struct orfs_dirop_req {
	struct orfs_fh	dir;
};

/* GETATTR, READLINK, STATFS, LISTXATTR (with size), GETXATTR (with size, name). */
struct orfs_fhop_req {
	struct orfs_fh	fh;
	__le32		size;	/* xattr calls: buffer size, 0 to ask the size */
	__le32		flags;	/* SETXATTR: XATTR_CREATE/REPLACE; FSYNC: ORFS_FSYNC_* */
};

/*
 * FSYNC of a regular file or a directory: fsync(2), or fdatasync(2) with
 * ORFS_FSYNC_DATA. With ORFS_FSYNC_VERF it is a COMMIT: the reply is
 * struct orfs_verf_rep, the server's write verifier after the sync; every
 * WRITE of the file answered with that verifier is durable.
 */
#define ORFS_FSYNC_DATA		0x1
#define ORFS_FSYNC_VERF		0x2

#define ORFS_SET_MODE		0x01
#define ORFS_SET_UID		0x02
#define ORFS_SET_GID		0x04
#define ORFS_SET_SIZE		0x08
#define ORFS_SET_ATIME		0x10
#define ORFS_SET_MTIME		0x20
#define ORFS_SET_ATIME_NOW	0x40
#define ORFS_SET_MTIME_NOW	0x80
#define ORFS_SET_ALL		0xff
/*
 * With ORFS_SET_SIZE: the size is set through a descriptor open for
 * writing (ftruncate(2), O_TRUNC), which keeps the right it was opened
 * with. The file's owner may then set it though its mode now denies
 * writing (it could give itself the right anyway); nobody else may. A
 * client sends it only to retry a size change refused with EACCES.
 */
#define ORFS_SET_SIZE_OPEN	0x100

/* SETATTR. Reply: orfs_attr. */
struct orfs_setattr_req {
	struct orfs_fh		fh;
	__le32			valid;
	__le32			mode;
	__le32			uid;
	__le32			gid;
	__le64			size;
	struct orfs_time	atime;
	struct orfs_time	mtime;
};

#define ORFS_CREATE_EXCL	0x1

/* CREATE, MKDIR, MKNOD, SYMLINK (then the name; SYMLINK: then the target). */
struct orfs_create_req {
	struct orfs_fh	dir;
	__le32		mode;
	__le32		flags;	/* CREATE: ORFS_CREATE_EXCL */
	__le64		rdev;	/* MKNOD of a device: major << 32 | minor; else 0 */
};

/* The most a device number's parts hold (Linux's dev_t: 12 and 20 bits). */
#define ORFS_RDEV_MAJOR_MAX	0xfffU
#define ORFS_RDEV_MINOR_MAX	0xfffffU

/* LINK: make dir/name another name of fh. Reply: orfs_attr of fh. */
struct orfs_link_req {
	struct orfs_fh	fh;
	struct orfs_fh	dir;
};

#define ORFS_RENAME_NOREPLACE	0x1
#define ORFS_RENAME_EXCHANGE	0x2

/* RENAME: then the old name, then the new name. */
struct orfs_rename_req {
	struct orfs_fh	olddir;
	struct orfs_fh	newdir;
	__le32		flags;
	__le32		reserved;
};

/* READDIR. Reply: orfs_readdir_rep, then entries. */
struct orfs_readdir_req {
	struct orfs_fh	dir;
	__le64		cookie;		/* 0 to start; else a cookie from an entry */
	__le32		max_bytes;	/* of entries in the reply */
	__le32		reserved;
};

struct orfs_readdir_rep {
	__le32	count;
	__le32	eof;
};

/* One entry; the name follows, then padding to 8 bytes. */
struct orfs_dirent {
	__le64	ino;
	__le64	cookie;		/* resume after this entry */
	__u8	type;		/* DT_* */
	__u8	reserved;
	__le16	name_len;
	__le32	reserved2;
};

/* READ and WRITE; data in the segments or inline as for MXBD. */
#define ORFS_WRITE_SYNC		0x1	/* data and metadata durable before the reply */
#define ORFS_WRITE_DSYNC	0x2	/* data durable before the reply */
/*
 * Reply to the WRITE with struct orfs_write_rep: the server's write
 * verifier, which changes whenever the server may have lost a WRITE
 * answered before without SYNC or DSYNC (it starts again; its store
 * failed a sync). A client keeps the data of such an unstable WRITE
 * until an FSYNC with ORFS_FSYNC_VERF answers the same verifier, and
 * sends it again when the verifier differs. Only from a server whose
 * SESSION reply says ORFS_SESSION_VERF.
 */
#define ORFS_WRITE_VERF		0x4

struct orfs_io_req {
	struct orfs_fh	fh;
	__le64		offset;
	__le32		length;
	__le32		flags;
};

/* Reply of READ (data follows inline when asked inline) and WRITE. */
struct orfs_io_rep {
	__le32			count;
	__le32			eof;
	struct orfs_attr	attr;	/* after the operation */
};

/* The write verifier: never 0. */
struct orfs_verf_rep {
	__le64	verf;
};

/* Reply of a WRITE with ORFS_WRITE_VERF. */
struct orfs_write_rep {
	struct orfs_io_rep	io;
	struct orfs_verf_rep	v;
};

struct orfs_statfs_rep {
	__le64	blocks;
	__le64	bfree;
	__le64	bavail;
	__le64	files;
	__le64	ffree;
	__le32	bsize;
	__le32	namelen;
	__le32	frsize;
	__le32	reserved;
};

/* GETXATTR and LISTXATTR reply: the size, then the value or names. */
struct orfs_xattr_rep {
	__le32	size;
	__le32	reserved;
};

#define ORFS_LOCK_READ		1
#define ORFS_LOCK_WRITE		2
#define ORFS_LOCK_UNLOCK	3

#define ORFS_LOCK_TEST		0x1	/* only ask who holds what would conflict */
#define ORFS_LOCK_RECLAIM	0x2	/* a lock held before the server restarted */
/*
 * With TEST: the client heard ORFS_SESSION_LOCKS_REVOKED and dropped what
 * it wrote under those locks; the server stops saying it, and takes the
 * client's WRITEs to the files they were on again (EIO until then).
 */
#define ORFS_LOCK_REVOKED_SEEN	0x4
/*
 * A process's fcntl() lock that its owner waits for (F_SETLKW), asking
 * again until it has it: EDEADLK when the owner holding it waits, through
 * a chain of such waiters, for a lock this owner holds. With TEST: the
 * owner stopped waiting (a signal); the server forgets its wait at once.
 */
#define ORFS_LOCK_WAIT		0x8
/*
 * A lock the owner waits for (alone, or with WAIT), from a client whose
 * SESSION reply said ORFS_SESSION_LOCK_HOLD: the server may hold a request
 * that finds the lock taken, for at most ORFS_LOCK_HOLD_MS, and answers it
 * as soon as the lock is free (or, with WAIT, the owner sends another
 * LOCK); EAGAIN if it is still taken then.
 */
#define ORFS_LOCK_HOLD		0x10
#define ORFS_LOCK_HOLD_MS	250

/*
 * LOCK: set, clear or test the byte-range lock of OWNER (the client's name
 * for a process or an open file) on FH, POSIX semantics between all the
 * owners of all the clients. Errors: EAGAIN, another owner holds a lock
 * in the way (no body); EBUSY, the server restarted and waits for the
 * locks its clients held (grace period): ask again later; ENOLCK, the
 * server's bound on locks, or a reclaim after the grace period.
 * Reply: orfs_lock_rep.
 */
struct orfs_lock_req {
	struct orfs_fh	fh;
	__le64		owner;
	__le64		start;
	__le64		end;		/* inclusive; ~0: to the end of the file, however long */
	__le32		type;		/* ORFS_LOCK_READ, _WRITE, _UNLOCK */
	__le32		flags;		/* ORFS_LOCK_TEST, _RECLAIM, _REVOKED_SEEN, _WAIT, _HOLD */
};

/* TEST: the lock in the way, or type ORFS_LOCK_UNLOCK; else the request's. */
struct orfs_lock_rep {
	__le64	start;
	__le64	end;
	__le32	type;
	__le32	reserved;
};

/* FALLOCATE modes: the values of Linux's FALLOC_FL_* of the same names. */
#define ORFS_FALLOC_KEEP_SIZE	0x01	/* allocate, or zero, without growing the file */
#define ORFS_FALLOC_PUNCH_HOLE	0x02	/* free the range (with KEEP_SIZE): it reads as zeros */
#define ORFS_FALLOC_COLLAPSE_RANGE 0x08	/* remove the range; what follows moves down */
#define ORFS_FALLOC_ZERO_RANGE	0x10	/* zero the range, allocated */
#define ORFS_FALLOC_INSERT_RANGE 0x20	/* insert a hole; what follows moves up */
#define ORFS_FALLOC_UNSHARE_RANGE 0x40	/* blocks of its own for the range (reflink) */

/*
 * FALLOCATE: fallocate(2) of LENGTH bytes at OFFSET of the regular file FH,
 * with the caller's right to write it. Mode 0 allocates (and grows the
 * file), KEEP_SIZE allocates past its end, PUNCH_HOLE | KEEP_SIZE frees,
 * ZERO_RANGE (with or without KEEP_SIZE) zeroes, COLLAPSE_RANGE and
 * INSERT_RANGE move what follows the range, UNSHARE_RANGE (with or without
 * KEEP_SIZE) gives the range blocks of its own. Errors as fallocate(2)'s
 * on the server's file system (EOPNOTSUPP where it lacks the mode).
 * Reply: struct orfs_attr, after the operation.
 */
struct orfs_fallocate_req {
	struct orfs_fh	fh;
	__le64		offset;
	__le64		length;
	__le32		mode;
	__le32		reserved;
};

/* SEEK's WHENCE: the values of Linux's SEEK_* of the same names. */
#define ORFS_SEEK_DATA		3	/* the first byte of data at or after OFFSET */
#define ORFS_SEEK_HOLE		4	/* the first byte of a hole (or the end) at or after it */

/*
 * SEEK: lseek(2) with SEEK_DATA or SEEK_HOLE on the regular file FH, with
 * the caller's right to read it. ENXIO: OFFSET is at or past the end of
 * the file, or (SEEK_DATA) no data follows it. Reply: orfs_seek_rep.
 */
struct orfs_seek_req {
	struct orfs_fh	fh;
	__le64		offset;
	__le32		whence;
	__le32		reserved;
};

struct orfs_seek_rep {
	__le64	offset;
};

/* The most bytes one COPY moves: a longer copy is several. */
#define ORFS_COPY_MAX		(16U << 20)

/*
 * COPY: copy_file_range(2) of up to LENGTH bytes (ORFS_COPY_MAX at most
 * are copied) from SRC_OFFSET of the regular file SRC (the request's
 * handle) to DST_OFFSET of the regular file DST, both of the export, on
 * the server, with the caller's rights to read the one and write the
 * other. Fewer bytes than asked: the source ended (0: at or past its
 * end). Reply: orfs_copy_rep, with DST's attributes after it.
 */
struct orfs_copy_req {
	struct orfs_fh	src;
	struct orfs_fh	dst;
	__le64		src_offset;
	__le64		dst_offset;
	__le64		length;
	__le32		flags;		/* none yet: 0 */
	__le32		reserved;
};

struct orfs_copy_rep {
	__le64			copied;
	struct orfs_attr	attr;
};

/*
 * CLONE: the request and reply of COPY. Without flags, FICLONERANGE on
 * the server: DST's range shares SRC's blocks (LENGTH 0: to SRC's end),
 * all of it or an error; COPIED is LENGTH. With ORFS_CLONE_DEDUPE,
 * FIDEDUPERANGE: the ranges share blocks if their bytes are the same,
 * EBADE if they differ; COPIED is the bytes deduplicated. Errors are the
 * export's file system's (EOPNOTSUPP where it shares no blocks, EINVAL
 * for a range its block size does not allow). The caller's rights to
 * read SRC and write DST (dedupe: or own it) decide.
 */
#define ORFS_CLONE_DEDUPE	0x1

static_assert(sizeof(struct orfs_cred) == 76, "orfs_cred layout");
static_assert(sizeof(struct orfs_req) == 88, "orfs_req layout");
static_assert(sizeof(struct orfs_attr) == 128, "orfs_attr layout");
static_assert(sizeof(struct orfs_entry_rep) == 192, "orfs_entry_rep layout");
static_assert(sizeof(struct orfs_setattr_req) == 120, "orfs_setattr_req layout");
static_assert(sizeof(struct orfs_create_req) == 80, "orfs_create_req layout");
static_assert(sizeof(struct orfs_rename_req) == 136, "orfs_rename_req layout");
static_assert(sizeof(struct orfs_readdir_req) == 80, "orfs_readdir_req layout");
static_assert(sizeof(struct orfs_dirent) == 24, "orfs_dirent layout");
static_assert(sizeof(struct orfs_io_req) == 80, "orfs_io_req layout");
static_assert(sizeof(struct orfs_io_rep) == 136, "orfs_io_rep layout");
static_assert(sizeof(struct orfs_statfs_rep) == 56, "orfs_statfs_rep layout");
static_assert(sizeof(struct orfs_lock_req) == 96, "orfs_lock_req layout");
static_assert(sizeof(struct orfs_lock_rep) == 24, "orfs_lock_rep layout");
static_assert(sizeof(struct orfs_fallocate_req) == 88, "orfs_fallocate_req layout");
static_assert(sizeof(struct orfs_seek_req) == 80, "orfs_seek_req layout");
static_assert(sizeof(struct orfs_seek_rep) == 8, "orfs_seek_rep layout");
static_assert(sizeof(struct orfs_copy_req) == 160, "orfs_copy_req layout");
static_assert(sizeof(struct orfs_copy_rep) == 136, "orfs_copy_rep layout");

#endif /* _UAPI_ORFS_PROTO_H */

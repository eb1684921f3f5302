/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * File service (ORFS): decoding requests and executing them on an export.
 * Execution is a plain function of the request's bytes to the reply's
 * bytes, run on a worker thread with the caller's credentials; the engine
 * only moves the data of segment-based READ and WRITE.
 *
 * Containment: every name is one component (no '/', not '.' or '..'),
 * resolved relative to a directory handle without following symlinks; file
 * handles carry a keyed MAC so that a client cannot forge one for a file
 * the server never gave it.
 */
#ifndef ORFS_SERVER_FSVC_H
#define ORFS_SERVER_FSVC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "orfs/uapi/orfs_proto.h"
#include "server/locks.h"

/* Whose credentials an export believes (exports(5)'s root_squash, all_squash). */
#define FSVC_SQUASH_NONE	0	/* every caller's own (no_root_squash) */
#define FSVC_SQUASH_ROOT	1	/* root's (uid or gid 0) become anonymous */
#define FSVC_SQUASH_ALL		2	/* every caller is anonymous */
#define FSVC_NOBODY		65534	/* the anonymous ids by default */

/* The bytes of a handle the server seals: the file system's handle and its size. */
#define FSVC_FH_ID	56

struct fsvc_export {
	char		name[KNET_NAME_MAX + 1];
	int		root_fd;	/* the export's directory, O_RDONLY */
	dev_t		dev;		/* its file system */
	ino_t		root_ino;	/* the directory's inode */
	int		in_memory;	/* that is tmpfs or ramfs: file I/O never waits */
	int		no_nowait;	/* it refuses RWF_NOWAIT: do not ask again */
	int		read_only;
	int		squash;		/* FSVC_SQUASH_* */
	uint32_t	anon_uid, anon_gid;	/* whom squashed callers become */
	int		subtree_check;	/* every handle's file must be beneath root_fd */
	uint8_t		key[16];	/* handle MAC key */
	uint8_t		root_id[FSVC_FH_ID];	/* the root's handle, sealed into every one */
	uint64_t	boot;		/* server start, for SESSION */
};

/*
 * Changes made through this server, a count for each of FSVC_CHG_SLOTS
 * slots of files (by device and inode), added to the change attribute: a
 * file system's ctime moves only once a clock tick (4 ms at HZ=250), so
 * two writes of two clients within one tick would otherwise leave the
 * attribute as it was, and the first client's cached pages taken for
 * current. Files that share a slot see each other's changes (a cache
 * dropped for nothing, never one kept wrongly).
 */
#define FSVC_CHG_SLOTS	65536

struct fsvc_chg {
	_Atomic uint32_t	n[FSVC_CHG_SLOTS];
};

/* Credentials a request runs with (see fsvc_execute()). */
struct fsvc_cred {
	uint32_t	uid, gid;
	uint32_t	ngroups;
	uint32_t	groups[ORFS_MAX_GROUPS];
};

/*
 * What fsvc_execute() answers on a progress thread (fsvc_cred_fix(),
 * fsvc_cred_progress()) for a request it must not run there, before any
 * effect: a worker runs it.
 * Not an errno, never on the wire.
 */
#define FSVC_ELSEWHERE	0x10000

/* A removal that frees more data than this goes to a worker. */
#define FSVC_HERE_MAX	(64 << 10)

/* A decoded, validated request. Pointers point into the message. */
struct fsvc_req {
	uint16_t		op;
	uint64_t		xid;
	uint32_t		uid, gid;
	uint16_t		ngroups;
	uint32_t		groups[ORFS_MAX_GROUPS];
	struct fsvc_cred	eff;		/* what it runs as: squash applied (fsvc_decode()) */
	struct orfs_fh		fh, fh2;	/* as the operation names them */
	union {
		struct orfs_session_req	session;
		struct orfs_fhop_req	fhop;
		struct orfs_setattr_req	setattr;
		struct orfs_create_req	create;
		struct orfs_rename_req	rename;
		struct orfs_readdir_req	readdir;
		struct orfs_io_req	io;
		struct orfs_lock_req	lock;
		struct orfs_fallocate_req fallocate;
		struct orfs_seek_req	seek;
		struct orfs_copy_req	copy;
	} u;
	const char		*name;		/* name, or old name of RENAME */
	uint32_t		name_len;
	const char		*str2;		/* new name, symlink target, xattr value */
	uint32_t		str2_len;
	const uint8_t		*inl;		/* inline WRITE data */
	uint32_t		inl_len;
	uint16_t		nsegs;
	uint32_t		seg_off;
	/*
	 * Set by the caller of fsvc_decode() for LOCK: the table, the client;
	 * and REVOKED for a WRITE when its connection's SESSION told the
	 * client its locks were dropped, and no LOCK came on it since with
	 * ORFS_LOCK_REVOKED_SEEN.
	 */
	struct locks		*locks;
	uint64_t		client_id;
	int			revoked;
	/* The change counts (NULL: the change attribute is the ctime alone). */
	struct fsvc_chg		*chg;
	/* And for SESSION: ORFS_SESSION_* flags for the reply. */
	uint32_t		session_flags;
	/* The write verifier (fsvc_verf()); NULL: a fixed one. */
	_Atomic uint64_t	*verf;
};

/*
 * The server's write verifier (ORFS_WRITE_VERF): set at each start, never
 * 0, and changed by fsvc_verf_lost() when a sync of the store failed, so
 * that every client sends again what it wrote unstable.
 */
void fsvc_verf_init(_Atomic uint64_t *verf, uint64_t seed);
uint64_t fsvc_verf(_Atomic uint64_t *verf);
void fsvc_verf_lost(_Atomic uint64_t *verf);

/*
 * Open the export at PATH with handle key KEY (16 bytes). Returns 0 or
 * -errno (message printed).
 */
int fsvc_export_open(struct fsvc_export *fx, const char *name, const char *path, int read_only,
		     int squash, const uint8_t *key, uint64_t boot);
void fsvc_export_close(struct fsvc_export *fx);

/*
 * Decode MSG (framing already checked). INLINE_MAX is the inline size
 * negotiated with the client. Returns 0 or the errno to answer with.
 */
int fsvc_decode(const struct fsvc_export *fx, const void *msg, uint32_t len,
		uint32_t inline_max, struct fsvc_req *rq);

/* Does the operation change anything (read-only exports refuse these)? */
int fsvc_op_mutates(uint16_t op);

/* Is a retransmission of it to be answered from the replay cache? */
int fsvc_op_nonidempotent(uint16_t op);

/*
 * Does the operation name a directory by its first handle (the handle
 * fsvc_execute() may take already open)?
 */
int fsvc_op_dir_fh(uint16_t op);

/* The operation's name ("LOOKUP"), or NULL for one the service does not have. */
const char *fsvc_op_name(uint16_t op);

/*
 * Execute RQ with its credentials. The reply body goes to BODY (CAP bytes),
 * its length to *BODY_LEN; inline READ data goes right after the body.
 * Segment-based READ and WRITE are not executed here (EINVAL).
 * *FH_FD is RQ's first handle opened O_PATH by root (kept from an earlier
 * request), or -1: then, for an fsvc_op_dir_fh() operation, the handle
 * this call opens is left in *FH_FD for the caller to keep or close.
 * The calling thread stays in the caller's credentials afterwards.
 * Returns 0 or the errno to answer with.
 */
int fsvc_execute(const struct fsvc_export *fx, const struct fsvc_req *rq, int *fh_fd,
		 void *body, size_t cap, uint32_t *body_len);

/*
 * Put the calling thread back in root's credentials, without groups (file
 * service calls leave a thread in its last caller's). 0 or an errno
 * (EPERM on a fixed thread).
 */
int fsvc_cred_reset(void);

/*
 * Make the calling thread fixed: it keeps the credentials it has (those of
 * the process), so it never loses the right to write to the verbs and
 * rdma_cm devices that the kernel grants only to the opener's credentials.
 * fsvc_execute() then runs there only what fsvc_runs_here() accepts and
 * answers FSVC_ELSEWHERE for anything else. 0 or an errno.
 */
int fsvc_cred_fix(void);

/*
 * Make the calling thread a progress thread that switches credentials as
 * a worker does: one that opens no device checking its opener's
 * credentials (a TCP shard's). It runs what fsvc_runs_here() accepts, for
 * any caller. Fixed (fsvc_cred_fix()) instead when the process may not
 * switch. 0 or an errno.
 */
int fsvc_cred_progress(void);

/*
 * Can the calling thread run RQ on FX itself, rather than a worker? Only a
 * progress thread can, for an export in memory (nothing waits for a
 * device) and an operation whose cost is bounded; on a fixed thread only
 * for a caller whose credentials (as the kernel checks them) are the
 * thread's own, which must be root's since handles open as root.
 * fsvc_execute() may still answer FSVC_ELSEWHERE: a removal that would
 * free much data.
 */
int fsvc_runs_here(const struct fsvc_export *fx, const struct fsvc_req *rq);

/*
 * For a segment-based READ or WRITE: open the file for the transfer with
 * the caller's credentials; *FD is closed by the caller. Then
 * fsvc_io_reply() fills the reply with COUNT bytes moved. An error from
 * fsvc_io_refused() comes with the file open.
 */
int fsvc_io_open(const struct fsvc_export *fx, const struct fsvc_req *rq, int *fd);

/*
 * EIO for a WRITE to open file FD that its client may not make now: its
 * locks on the file were dropped while it was cut off, and it was not told
 * yet (locks_write_refused()); else 0.
 */
int fsvc_io_refused(const struct fsvc_req *rq, int fd);

/* The open flags fsvc_io_open() uses for RQ. */
int fsvc_io_flags(const struct fsvc_req *rq);

/*
 * An inline READ or WRITE on FD (from fsvc_io_open(), no credentials
 * needed): the reply body and, for a READ, its data after it, in BODY
 * (CAP bytes, *BODY_LEN used). With NOWAIT, only if it needs no waiting
 * (RWF_NOWAIT): EAGAIN when it would, or when it came out short, and
 * *REFUSED set when the file system refuses RWF_NOWAIT.
 */
int fsvc_io_inline(const struct fsvc_req *rq, int fd, void *body, size_t cap, uint32_t *body_len,
		   int nowait, int *refused);
int fsvc_io_reply(const struct fsvc_req *rq, int fd, uint32_t count, void *body, size_t cap,
		  uint32_t *body_len);

/* Make a handle for the file DIRFD/NAME (NAME "" for DIRFD itself). */
int fsvc_make_fh(const struct fsvc_export *fx, int dirfd, const char *name, struct orfs_fh *fh);

#endif /* ORFS_SERVER_FSVC_H */

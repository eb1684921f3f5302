/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * ORFS client: shared definitions of the file system's parts (super.c,
 * rpc.c, inode.c, dir.c, file.c).
 */
#ifndef _ORFS_H
#define _ORFS_H

#include <linux/fs.h>
#include <linux/err.h>
#include <linux/in.h>
#include <linux/ktime.h>
#include <linux/rwsem.h>
#include <linux/siphash.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "knet.h"
#include "uapi/orfs_proto.h"

struct seq_file;

/* Kernel interfaces that changed between the kernels we build for. */
#ifdef ORFS_HAVE_MNT_IDMAP
#define orfs_idmap_t			struct mnt_idmap
#define orfs_fillattr(map, mask, inode, st)	generic_fillattr(map, mask, inode, st)
#else
#define orfs_idmap_t			struct user_namespace
#define orfs_fillattr(map, mask, inode, st)	generic_fillattr(map, inode, st)
#endif

/* Mount options, as parsed; shown in /proc/mounts. */
struct orfs_opts {
	u16		port;
	struct sockaddr_storage srcaddr; /* connect from it; family 0: routing's choice */
	u32		rsize;		/* 0: the server's limit */
	u32		wsize;
	unsigned int	acregmin;	/* seconds */
	unsigned int	acregmax;
	unsigned int	acdirmin;
	unsigned int	acdirmax;
	bool		noac;
	bool		soft;
	unsigned int	timeo;		/* tenths of a second, per try */
	unsigned int	retrans;	/* tries of a soft mount */
	bool		regcache;	/* cache the registrations of O_DIRECT buffers */
	unsigned int	nconnect;	/* connections, 1 to ORFS_MAX_CONNECT */
	bool		largefolio;	/* page cache in folios of up to rsize/wsize */
	bool		local_locks;	/* locks=local: locks seen by this client only */
	bool		stable_wb;	/* writeback=stable: no unstable WRITEs, no COMMITs */
	char		key[KNET_NAME_MAX + 1];	/* key=: the logon key "knet:key"; "": none */
	enum knet_transport_sel transport;	/* transport= */
	unsigned int	digests;	/* digest=: KNET_CMF_HDGST, KNET_CMF_DDGST */
};

/*
 * Can a file's page cache hold large folios of a size ORFS bounds (to what
 * one request moves)? 6.1 has large folios, but no per-file maximum.
 */
#ifdef ORFS_HAVE_FOLIO_ORDER
#define ORFS_LARGE_FOLIOS	true
#else
#define ORFS_LARGE_FOLIOS	false
#endif

/* Operations counted in a mount's statistics: ORFS_OP_SESSION onwards. */
#define ORFS_NR_OPS		(ORFS_OP_LAST - ORFS_OP_SESSION + 1)

/*
 * One operation's counters on one CPU (stats.c): calls, the server's errors,
 * failures without an answer, request and reply body bytes, file data
 * moved, microseconds from send to end.
 */
struct orfs_op_stats {
	u64	calls;
	u64	errors;
	u64	failures;
	u64	sent;
	u64	received;
	u64	data;
	u64	usecs;
};

/*
 * Write stability on one CPU (stats.c): bytes written back unstable,
 * COMMITs sent, bytes sent again after a COMMIT found the verifier
 * changed, and fsync()s that failed because direct I/O written unstable
 * was lost (it cannot be sent again).
 */
enum orfs_wb_stat { ORFS_WB_UNSTABLE, ORFS_WB_COMMITS, ORFS_WB_RESENT, ORFS_WB_LOST };

struct orfs_wb_stats {
	u64	unstable;
	u64	commits;
	u64	resent;
	u64	lost;
};

struct orfs_stats {
	struct orfs_op_stats	op[ORFS_NR_OPS];
	struct orfs_wb_stats	wb;
};

/* Connections of one mount at most (nconnect=). */
#define ORFS_MAX_CONNECT	8
/* A connection's keep-alive: half of timeo, and at least this often. */
#define ORFS_KEEPALIVE_MAX_MS	60000U
/* Connections without nconnect=: one per online CPU, at most this many. */
#define ORFS_AUTO_CONNECT	4

/**
 * struct orfs_sb - one mount
 * @g: the connections (nconnect= of them), a knet group that recovers them
 * @connected: @g is open
 * @conn_calls: requests given to each connection, for the statistics
 * @stats: per-operation counters, per CPU (stats.c)
 * @mounted: when the mount was made (boot-time seconds)
 * @addr: the server
 * @export: the export's name
 * @secret: key='s secret, read at mount; length 0: none
 * @opts: the options in effect
 * @transport: the transport its connections use, "rdma" or "tcp" (what
 *	transport=auto chose)
 * @client_id: names this mount to the server's replay cache
 * @xid: transaction ids
 * @server_boot: the server's boot id, from SESSION
 * @verf_ok: the server answers write verifiers (ORFS_SESSION_VERF): write-back
 *	sends WRITEs unstable; else with ORFS_WRITE_DSYNC
 * @unstable: bytes of folios the mount keeps until a COMMIT
 * @rsize: bytes of one READ
 * @wsize: bytes of one WRITE
 * @inline_max: the connection's inline limit
 * @sb: the super block
 * @lock_key: keys the lock owners' names sent to the server
 * @reclaim_work: takes the locks back from a server that restarted, or
 *	marks them lost when the server says it dropped them (@revoked)
 * @reclaim_lock: orders queueing @reclaim_work with @dying, guards @revoked,
 *	@server_boot's change, the reclaim counts and @reclaimed
 * @dying: the super block is going: no more reclaims
 * @revoked: the server dropped the mount's locks while it was cut off
 * @reclaim_seq: reclaims asked (a restart, or the server's word that it
 *	dropped the locks)
 * @reclaimed_seq: the last of them whose locks were all asked back: while
 *	it lags, WRITEs wait (orfs_admit())
 * @reclaim_xid: the last xid given before the last reclaim was asked: a
 *	request up to it was made before
 * @reclaim_wq: WRITEs waiting for @reclaimed_seq
 * @reclaimed: the inodes of the last reclaim with locks found lost (struct
 *	orfs_reclaimed), the ranges the WRITEs made before must not write
 * @revoke_told: bit 0: the server's word of it was taken, and the server
 *	not yet told that it was seen (it says it at each SESSION until then)
 * @lock_hold: the server holds a waiter's LOCK until the lock is free
 *	(ORFS_SESSION_LOCK_HOLD), as its last SESSION reply said
 * @unlocks: lock calls of dead processes (unlocks, ends of waits) not yet sent
 * @locked: inodes that had a lock from the server (struct orfs_inode @lock_link)
 * @locked_lock: guards @locked
 * @renew_work: while @locked holds a lock, checks the connection (see lock.c)
 */
struct orfs_sb {
	struct knet_group	g;
	bool			connected;
	atomic64_t		conn_calls[ORFS_MAX_CONNECT];
	struct orfs_stats __percpu *stats;
	time64_t		mounted;
	struct sockaddr_storage	addr;
	char			export[KNET_NAME_MAX + 1];
	struct knet_secret	secret;
	struct orfs_opts	opts;
	const char		*transport;	/* what the connections use: "rdma" or "tcp" */
	u64			client_id;
	atomic64_t		xid;
	u64			server_boot;
	bool			verf_ok;
	atomic_long_t		unstable;
	u32			rsize;
	u32			wsize;
	u32			inline_max;
	struct super_block	*sb;
	siphash_key_t		lock_key;
	struct work_struct	reclaim_work;
	spinlock_t		reclaim_lock;	/* orders reclaims with @dying */
	bool			dying;
	bool			revoked;
	unsigned int		reclaim_seq;
	unsigned int		reclaimed_seq;
	u64			reclaim_xid;
	wait_queue_head_t	reclaim_wq;
	struct list_head	reclaimed;
	unsigned long		revoke_told;
	bool			lock_hold;
	atomic_t		unlocks;
	struct list_head	locked;
	spinlock_t		locked_lock;	/* guards @locked */
	struct delayed_work	renew_work;
};

/**
 * struct orfs_inode - an ORFS inode
 * @fh: the server's handle
 * @change: the server's change attribute, as last seen
 * @attr_time: when the attributes were fetched (jiffies)
 * @attr_timeo: how long they are trusted
 * @open_count: open files, for unlinking an open file
 * @silly_dir: directory handle of the hidden name of an unlinked open file
 * @silly_name: that hidden name, or empty
 * @wb_cred: credentials of the last writer, for write-back (under i_lock)
 * @lock_link: in the mount's @locked list, or empty
 * @lost: owners whose locks the server lost (under i_lock)
 * @stale_gen: counts the times another client changed the file; pages in
 *	use then are dropped later (orfs_revalidate_mapping())
 * @dropped_gen: the @stale_gen whose pages were last dropped
 * @drop_mutex: one caller drops them, the others wait for it
 * @unstable: folios written back unstable, not yet committed (file.c;
 *	under i_lock, as @useq, @unstable_bytes and the @dio_* fields)
 * @useq: counts the unstable write-backs that ended: a COMMIT covers those
 *	that ended before it was sent
 * @unstable_bytes: the bytes of the folios on @unstable
 * @dio_un: direct I/O was written unstable since the last COMMIT
 * @dio_verf: its verifier (0: more than one)
 * @dio_seq: counts those writes
 * @commit_mutex: one COMMIT of the file at a time
 * @vfs_inode: the VFS inode
 */
struct orfs_inode {
	struct orfs_fh		fh;
	u64			change;
	unsigned long		attr_time;
	unsigned long		attr_timeo;
	atomic_t		open_count;
	struct orfs_fh		silly_dir;
	char			silly_name[40];
	const struct cred	*wb_cred;
	struct list_head	lock_link;
	struct list_head	lost;
	atomic_t		stale_gen;
	int			dropped_gen;
	struct mutex		drop_mutex;	/* one caller drops the pages */
	struct list_head	unstable;
	u64			useq;
	unsigned long		unstable_bytes;
	bool			dio_un;
	u64			dio_verf;
	u64			dio_seq;
	struct mutex		commit_mutex;	/* one COMMIT of the file at a time */
	struct inode		vfs_inode;
};

static inline struct orfs_inode *ORFS_I(struct inode *inode)
{
	return container_of(inode, struct orfs_inode, vfs_inode);
}

static inline struct orfs_sb *ORFS_SB(struct super_block *sb)
{
	return sb->s_fs_info;
}

/*
 * How long INODE's attributes are trusted from their last refresh: its
 * timeout, but no more than the mount's maximum now (a remount may have
 * lowered it).
 */
static inline unsigned long orfs_attr_timeo(struct inode *inode)
{
	struct orfs_opts *o = &ORFS_SB(inode->i_sb)->opts;
	unsigned int max = S_ISDIR(inode->i_mode) ? READ_ONCE(o->acdirmax) : READ_ONCE(o->acregmax);

	return min_t(unsigned long, READ_ONCE(ORFS_I(inode)->attr_timeo), (unsigned long)max * HZ);
}

/* INODE's cached attributes are within their timeout (no lock: RCU walks use it). */
static inline bool orfs_attr_fresh(struct inode *inode)
{
	return !READ_ONCE(ORFS_SB(inode->i_sb)->opts.noac) &&
	       time_before(jiffies, READ_ONCE(ORFS_I(inode)->attr_time) + orfs_attr_timeo(inode));
}

/* A device number as the protocol carries it: major << 32 | minor (0 for no device). */
static inline u64 orfs_encode_rdev(umode_t mode, dev_t rdev)
{
	if (!S_ISCHR(mode) && !S_ISBLK(mode))
		return 0;
	return (u64)MAJOR(rdev) << 32 | MINOR(rdev);
}

/* And back: 0 for numbers no dev_t holds. */
static inline dev_t orfs_decode_rdev(u64 rdev)
{
	u32 major = rdev >> 32, minor = (u32)rdev;

	if (major > ORFS_RDEV_MAJOR_MAX || minor > ORFS_RDEV_MINOR_MAX)
		return 0;
	return MKDEV(major, minor);
}

/*
 * INODE changed on the server in a way its cached attributes do not show
 * (ctime, link count): fetch them again at the next look.
 */
static inline void orfs_attr_expire(struct inode *inode)
{
	WRITE_ONCE(ORFS_I(inode)->attr_time, jiffies - ORFS_I(inode)->attr_timeo - 1);
}

/* A request body under construction. */
struct orfs_msg {
	u8	*buf;
	u32	len;
	u32	cap;
	int	err;
};

/* The server's status (a positive errno) as a negative errno. */
static inline int orfs_status_errno(u32 status)
{
	return status < MAX_ERRNO ? -(int)status : -EIO;
}

/* rpc.c */
int orfs_msg_init(struct orfs_msg *m, struct orfs_sb *sbi, size_t cap);
void orfs_msg_free(struct orfs_msg *m);
void *orfs_msg_put(struct orfs_msg *m, const void *p, size_t len);
void orfs_msg_name(struct orfs_msg *m, const char *name, size_t len);
void orfs_msg_blob(struct orfs_msg *m, const void *p, size_t len);
int orfs_rpc(struct orfs_sb *sbi, u16 op, struct orfs_msg *m, void *reply, u32 reply_min,
	     u32 reply_max, u32 *reply_len, const struct knet_mem *mem, enum knet_dir dir);
int orfs_call(struct orfs_sb *sbi, u16 op, const void *req, size_t len, void *reply,
	      u32 reply_len);
unsigned int orfs_conn_get(struct orfs_sb *sbi);
void orfs_conn_put(struct orfs_sb *sbi, unsigned int conn);
int orfs_connect(struct orfs_sb *sbi);
void orfs_abort(struct orfs_sb *sbi);
void orfs_disconnect(struct orfs_sb *sbi);
unsigned long orfs_timeout(struct orfs_sb *sbi);

/* stats.c */
int orfs_stats_alloc(struct orfs_sb *sbi);
void orfs_stats_free(struct orfs_sb *sbi);
void orfs_stats_call(struct orfs_sb *sbi, u16 op, ktime_t start, int ret, bool answered,
		     u32 sent, u32 received);
void orfs_stats_data(struct orfs_sb *sbi, u16 op, u32 bytes);
int orfs_show_stats(struct seq_file *m, struct dentry *root);

/* inode.c */
extern const struct inode_operations orfs_file_iops;
extern const struct inode_operations orfs_symlink_iops;
extern const struct inode_operations orfs_special_iops;
struct inode *orfs_iget(struct super_block *sb, const struct orfs_fh *fh,
			const struct orfs_attr *attr);
void orfs_refresh(struct inode *inode, const struct orfs_attr *attr);
/* A WRITE's mtime and ctime from the server's reply (A); under i_lock. */
void orfs_set_write_times(struct inode *inode, const struct orfs_attr *a);
int orfs_revalidate(struct inode *inode, bool force);
int orfs_revalidate_file(struct inode *inode, bool force);
int orfs_getattr(orfs_idmap_t *map, const struct path *path, struct kstat *st,
		 u32 mask, unsigned int flags);
int orfs_setattr(orfs_idmap_t *map, struct dentry *dentry, struct iattr *ia);
long orfs_fallocate(struct file *file, int mode, loff_t offset, loff_t len);
ssize_t orfs_copy_range(struct file *in, loff_t pos_in, struct file *out, loff_t pos_out,
			size_t len);
loff_t orfs_remap_range(struct file *in, loff_t pos_in, struct file *out, loff_t pos_out,
			loff_t len, unsigned int flags);
int orfs_check_attr(const struct orfs_attr *attr);
ssize_t orfs_xattr_fetch(struct inode *inode, const char *name, void *buf, size_t size);
int orfs_xattr_store(struct inode *inode, const char *full, const void *value, size_t size,
		     int flags);

/* acl.c */
int orfs_acl_mode(struct inode *dir, umode_t *mode);
#ifdef ORFS_HAVE_GET_INODE_ACL
struct posix_acl *orfs_get_inode_acl(struct inode *inode, int type, bool rcu);
struct posix_acl *orfs_get_acl(struct mnt_idmap *map, struct dentry *dentry, int type);
int orfs_set_acl(struct mnt_idmap *map, struct dentry *dentry, struct posix_acl *acl, int type);
#define ORFS_ACL_IOPS					\
	.get_inode_acl	= orfs_get_inode_acl,		\
	.get_acl	= orfs_get_acl,			\
	.set_acl	= orfs_set_acl,
#else
struct posix_acl *orfs_get_acl(struct inode *inode, int type, bool rcu);
int orfs_set_acl(struct user_namespace *ns, struct inode *inode, struct posix_acl *acl,
		 int type);
#define ORFS_ACL_IOPS					\
	.get_acl	= orfs_get_acl,			\
	.set_acl	= orfs_set_acl,
#endif
ssize_t orfs_listxattr(struct dentry *dentry, char *list, size_t size);
extern const struct xattr_handler *orfs_xattr_handlers[];

/* dir.c */
extern const struct inode_operations orfs_dir_iops;
extern const struct file_operations orfs_dir_fops;
extern const struct dentry_operations orfs_dentry_ops;
void orfs_silly_unlink(struct inode *inode);

/**
 * struct orfs_areq - an asynchronous READ or WRITE
 * @srq: the knet session request
 * @mem: the data (its arrays are the submitter's and must live until @end)
 * @msg: the request body
 * @rep: the reply body
 * @inode: the file
 * @pos: where in the file
 * @flags: the ORFS_WRITE_* it was sent with
 * @verf: at @end, the write verifier of a WRITE sent with ORFS_WRITE_VERF
 * @op: ORFS_OP_READ or ORFS_OP_WRITE
 * @start: when it was sent, for the statistics
 * @end_softirq: @end may run in softirq context (honoured for READ), or
 *	for a WRITE in the completion's context when that is a task's
 *	(knet_srq @task_done): @end then neither sleeps nor waits for knet
 * @end: called once when it is over, in process context or, with
 *	@end_softirq, in softirq context; owns the request
 * @priv: the submitter's
 */
struct orfs_areq {
	struct knet_srq		srq;
	struct knet_mem		mem;
	struct orfs_msg		msg;
	struct orfs_write_rep	rep;
	struct inode		*inode;
	loff_t			pos;
	u32			flags;
	u64			verf;
	u16			op;
	ktime_t			start;
	bool			end_softirq;
	void			(*end)(struct orfs_areq *a, int err, u32 count);
	void			*priv;
};

/* io.c */
int orfs_io(struct inode *inode, u16 op, loff_t pos, const struct knet_mem *mem, u32 flags,
	    u32 *count, u64 *verf);
void orfs_io_start(struct orfs_areq *a, u32 flags);

/* file.c */
extern const struct file_operations orfs_file_fops;
int orfs_commit(struct inode *inode, bool datasync, bool always);
void orfs_stats_wb(struct orfs_sb *sbi, enum orfs_wb_stat what, u64 n);

/* lock.c */
int orfs_lock(struct file *file, int cmd, struct file_lock *fl);
int orfs_flock(struct file *file, int cmd, struct file_lock *fl);
void orfs_reclaim_work(struct work_struct *work);
void orfs_reclaim_end(struct orfs_sb *sbi);
int orfs_admit(struct knet_group *g, const struct knet_request *rq);
int orfs_admit_wait(struct knet_group *g);
void orfs_unlocks_end(struct orfs_sb *sbi);
bool orfs_lock_lost(struct file *file);
void orfs_renew_work(struct work_struct *work);
void orfs_lock_forget(struct inode *inode);
extern const struct address_space_operations orfs_aops;
void orfs_set_folio_size(struct inode *inode);
unsigned int orfs_drop_dirty(struct inode *inode, loff_t start, loff_t end);
struct folio *orfs_clear_past_eof(struct inode *inode, loff_t from, loff_t to);
void orfs_zero_past_eof(struct inode *inode, loff_t from, loff_t to);

#endif /* _ORFS_H */

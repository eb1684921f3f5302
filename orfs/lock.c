// SPDX-License-Identifier: GPL-2.0-only
/*
 * ORFS locks across clients: fcntl() locks (POSIX and open file
 * description) and flock() locks are asked of the server first
 * (ORFS_OP_LOCK), which keeps them between every owner of every client,
 * and then put in the kernel's own lists, which keep this client's view
 * (F_GETLK of a local owner, what a close releases, what to take back when
 * the server restarts). An flock() lock is a lock of the whole file on the
 * server, as NFS does, so flock() and fcntl() locks of two clients on one
 * file see each other.
 *
 * There are no callbacks: a blocking request that finds the lock taken asks
 * again until it gets it or a signal comes. A server that says it can
 * (ORFS_SESSION_LOCK_HOLD) holds such a request (ORFS_LOCK_HOLD) for up to
 * ORFS_LOCK_HOLD_MS and answers it as soon as the lock is freed: the
 * client asks again at once after such an answer. Otherwise, or when the
 * server answered at once (it holds a bounded number), the client asks
 * again from 10 ms apart up to half a second apart (NFSv4's clients wait
 * that way). A process's fcntl() lock asked so is flagged ORFS_LOCK_WAIT:
 * the server remembers what each such owner waits for and answers EDEADLK
 * to the request that would close a chain of waiters on itself, across
 * clients; a waiter that a signal stops says so (ORFS_LOCK_WAIT |
 * ORFS_LOCK_TEST). A signal is seen between two requests: after a held
 * one, within ORFS_LOCK_HOLD_MS and a round trip.
 *
 * Taking a lock revalidates the file, so that what another client wrote
 * before it unlocked is read; unlocking writes this client's dirty pages
 * back first. When the server restarts, a worker asks it for every lock
 * this mount holds again (ORFS_LOCK_RECLAIM), within its grace period; a
 * lock the server refuses then is lost, and said so in the kernel log.
 * While a mount holds locks its first connection is probed, so that an
 * idle client hears of the restart in time.
 */
#define pr_fmt(fmt) "orfs: " fmt

#include <linux/completion.h>
#include <linux/cred.h>
#include <linux/delay.h>
#include <linux/file.h>
#include <linux/fs.h>
#ifdef ORFS_HAVE_FILE_LOCK_CORE
#include <linux/filelock.h>
#endif
#include <linux/mm.h>
#include <linux/pagemap.h>
#include <linux/refcount.h>
#include <linux/sched/signal.h>
#include <linux/siphash.h>
#include <linux/slab.h>
#include <linux/wait_bit.h>

#include "orfs.h"

/* The fields of a lock, moved into struct file_lock_core in 6.9. */
#ifdef ORFS_HAVE_FILE_LOCK_CORE
#define ORFS_FL(fl, f)		((fl)->c.flc_##f)
#define orfs_for_each_lock(fl, head)	for_each_file_lock(fl, head)
#else
#define ORFS_FL(fl, f)		((fl)->fl_##f)
#define orfs_for_each_lock(fl, head)	list_for_each_entry(fl, head, fl_list)
#endif

#define ORFS_LOCK_WAIT_MIN	10	/* ms between the tries of a blocking lock */
#define ORFS_LOCK_WAIT_MAX	500

/*
 * The server's name of a lock's owner: the kernel's (a process's files,
 * or an open file) keyed, so that no kernel address leaves the client.
 * flock() owners are kept apart from fcntl() owners of the same file.
 */
static u64 orfs_lock_owner(struct orfs_sb *sbi, const void *owner, bool flock)
{
	return siphash_2u64((u64)(unsigned long)owner, flock, &sbi->lock_key);
}

static u32 orfs_lock_type(unsigned char type)
{
	switch (type) {
	case F_RDLCK:
		return ORFS_LOCK_READ;
	case F_WRLCK:
		return ORFS_LOCK_WRITE;
	default:
		return ORFS_LOCK_UNLOCK;
	}
}

static u64 orfs_lock_end(loff_t end)
{
	return end == OFFSET_MAX ? U64_MAX : (u64)end;
}

/* One LOCK call on FH, with the credentials of the task that runs it. */
static int orfs_lock_call_fh(struct orfs_sb *sbi, const struct orfs_fh *fh, u64 owner, u32 type,
			     u32 flags, loff_t start, loff_t end, struct orfs_lock_rep *rep)
{
	struct orfs_lock_req r = {
		.fh = *fh,
		.owner = cpu_to_le64(owner),
		.start = cpu_to_le64(start),
		.end = cpu_to_le64(orfs_lock_end(end)),
		.type = cpu_to_le32(type),
		.flags = cpu_to_le32(flags),
	};
	int ret;

	ret = orfs_call(sbi, ORFS_OP_LOCK, &r, sizeof(r), rep, sizeof(*rep));
	if (ret == -EOPNOTSUPP) {
		pr_warn_once("%pISc: the server keeps no locks; mount with locks=local\n",
			     &sbi->addr);
		ret = -ENOLCK;
	}
	return ret;
}

static int orfs_lock_call(struct inode *inode, u64 owner, u32 type, u32 flags, loff_t start,
			  loff_t end, struct orfs_lock_rep *rep)
{
	return orfs_lock_call_fh(ORFS_SB(inode->i_sb), &ORFS_I(inode)->fh, owner, type, flags,
				 start, end, rep);
}

/*
 * A lock call sent by a worker for a process that dies: the unlock of its
 * close, the give-back of a lock it was granted but did not take, the end
 * of its wait (see orfs_lock_dying()). It holds no inode: the mount may go
 * meanwhile, and then ends it (orfs_unlocks_end()). Two references: the
 * worker's, and that of the process, which waits a while for it.
 */
struct orfs_dying_call {
	struct work_struct	work;
	struct completion	done;
	refcount_t		ref;
	struct orfs_sb		*sbi;
	struct orfs_fh		fh;
	u64			owner;
	u32			type, flags;
	loff_t			start, end;
};

static void orfs_dying_put(struct orfs_dying_call *u)
{
	if (refcount_dec_and_test(&u->ref))
		kfree(u);
}

static void orfs_dying_work(struct work_struct *work)
{
	struct orfs_dying_call *u = container_of(work, struct orfs_dying_call, work);
	struct orfs_sb *sbi = u->sbi;
	struct orfs_lock_rep rep;
	int ret;

	ret = orfs_lock_call_fh(sbi, &u->fh, u->owner, u->type, u->flags, u->start, u->end, &rep);
	if (ret && u->type == ORFS_LOCK_UNLOCK)
		pr_warn_ratelimited("%pISc: unlock of a dead process's lock failed (%d)\n",
				    &sbi->addr, ret);
	complete(&u->done);
	orfs_dying_put(u);
	if (atomic_dec_and_test(&sbi->unlocks))
		wake_up_var(&sbi->unlocks);
}

/*
 * The lock call of a process that exits or was killed. Nothing can cut a
 * wait short in exit(), where a close lets go of the locks, so a call to a
 * server that is away would hold the dying process (a hard mount) until
 * it came back; and a killed process's own calls fail at once. A worker
 * sends it instead; the process waits for it for one try's time at most
 * (the server that answers is as quick as before; a killed process does
 * not wait), and leaves it to the worker after that.
 */
static int orfs_lock_dying(struct inode *inode, u64 owner, u32 type, u32 flags, loff_t start,
			   loff_t end)
{
	struct orfs_sb *sbi = ORFS_SB(inode->i_sb);
	struct orfs_dying_call *u;

	u = kmalloc(sizeof(*u), GFP_KERNEL);
	if (!u)
		return -ENOMEM;
	INIT_WORK(&u->work, orfs_dying_work);
	init_completion(&u->done);
	refcount_set(&u->ref, 2);
	u->sbi = sbi;
	u->fh = ORFS_I(inode)->fh;
	u->owner = owner;
	u->type = type;
	u->flags = flags;
	u->start = start;
	u->end = end;
	atomic_inc(&sbi->unlocks);
	queue_work(system_long_wq, &u->work);
	/* Killable: in exit() nothing wakes it early, and no hung-task report. */
	wait_for_completion_killable_timeout(&u->done, orfs_timeout(sbi));
	orfs_dying_put(u);
	return 0;
}

/*
 * Ask the server for a lock until it answers: a taken lock is tried again
 * when WAIT, and the server's grace period after a restart is waited out
 * (a soft mount gives up with ENOLCK after timeo x retrans).
 */
static int orfs_lock_ask(struct inode *inode, u64 owner, u32 type, u32 flags, loff_t start,
			 loff_t end, bool wait, struct orfs_lock_rep *rep)
{
	struct orfs_sb *sbi = ORFS_SB(inode->i_sb);
	unsigned int ms = ORFS_LOCK_WAIT_MIN;
	unsigned long give_up = jiffies + orfs_timeout(sbi) * sbi->opts.retrans;
	unsigned long asked;
	u32 hold;
	int ret;

	for (;;) {
		/* Held only where a held answer is well within one try's time. */
		hold = wait && READ_ONCE(sbi->lock_hold) &&
		       orfs_timeout(sbi) >= msecs_to_jiffies(4 * ORFS_LOCK_HOLD_MS) ?
		       ORFS_LOCK_HOLD : 0;
		asked = jiffies;
		ret = orfs_lock_call(inode, owner, type, flags | hold, start, end, rep);
		if (ret != -EBUSY && (ret != -EAGAIN || !wait))
			return ret;
		if (ret == -EBUSY && sbi->opts.soft && time_after(jiffies, give_up))
			return -ENOLCK;
		/* An answer the server held was the wait: ask again at once. */
		if (ret == -EAGAIN && hold &&
		    time_after_eq(jiffies, asked + msecs_to_jiffies(ORFS_LOCK_HOLD_MS / 2)))
			ms = 0;
		if ((ms && msleep_interruptible(ms)) || signal_pending(current)) {
			/*
			 * The server counts a waiter in its deadlock check for a
			 * while after its last try: say that this one stopped.
			 * A killed process's calls fail at once: a worker says it.
			 */
			if (!(flags & ORFS_LOCK_WAIT))
				return -ERESTARTSYS;
			flags = ORFS_LOCK_WAIT | ORFS_LOCK_TEST;
			if (fatal_signal_pending(current))
				orfs_lock_dying(inode, owner, type, flags, start, end);
			else
				orfs_lock_call(inode, owner, type, flags, start, end, rep);
			return -ERESTARTSYS;
		}
		ms = clamp(ms * 2, ORFS_LOCK_WAIT_MIN, ORFS_LOCK_WAIT_MAX);
	}
}

/*
 * How often a mount that holds locks checks its connection: often enough
 * that a server that restarted hears from it within its grace period (60 s
 * by default), and at least as often as the connection's keep-alive finds
 * a lost connection.
 */
static unsigned long orfs_renew_period(struct orfs_sb *sbi)
{
	return min(orfs_timeout(sbi) / 2, 15 * HZ);
}

static bool orfs_inode_has_locks(struct inode *inode)
{
	struct file_lock_context *ctx = locks_inode_context(inode);

	return ctx && (!list_empty_careful(&ctx->flc_posix) ||
		       !list_empty_careful(&ctx->flc_flock));
}

/* INODE has a lock from the server now: keep the connection checked. */
static void orfs_lock_held(struct inode *inode)
{
	struct orfs_sb *sbi = ORFS_SB(inode->i_sb);
	struct orfs_inode *ci = ORFS_I(inode);

	spin_lock(&sbi->locked_lock);
	if (list_empty(&ci->lock_link))
		list_add(&ci->lock_link, &sbi->locked);
	spin_unlock(&sbi->locked_lock);
	queue_delayed_work(system_long_wq, &sbi->renew_work, orfs_renew_period(sbi));
}

/*
 * A lock the server lost in a restart (the reclaim was refused): its
 * owner's I/O on the file fails with EIO until the owner unlocks, as
 * NFSv4 does, rather than go on as if it still excluded the others.
 */
struct orfs_lost {
	struct list_head	link;
	u64			owner;
};

/**
 * orfs_lock_forget() - an inode goes: out of its mount's list of locked ones
 * @inode: the inode, evicted
 *
 * Context: process context.
 */
void orfs_lock_forget(struct inode *inode)
{
	struct orfs_sb *sbi = ORFS_SB(inode->i_sb);
	struct orfs_inode *ci = ORFS_I(inode);
	struct orfs_lost *l, *next;

	/* No file is open: no owner is left to hear of a lost lock. */
	list_for_each_entry_safe(l, next, &ci->lost, link) {
		list_del(&l->link);
		kfree(l);
	}
	if (list_empty_careful(&ci->lock_link))
		return;
	spin_lock(&sbi->locked_lock);
	list_del_init(&ci->lock_link);
	spin_unlock(&sbi->locked_lock);
}

/* OWNER's entry in INODE's lost owners, or NULL; under i_lock. */
static struct orfs_lost *orfs_lost_find(struct inode *inode, u64 owner)
{
	struct orfs_lost *l;

	list_for_each_entry(l, &ORFS_I(inode)->lost, link)
		if (l->owner == owner)
			return l;
	return NULL;
}

static void orfs_lost_add(struct inode *inode, u64 owner)
{
	struct orfs_lost *l = kmalloc(sizeof(*l), GFP_KERNEL);

	if (!l)
		return;
	l->owner = owner;
	spin_lock(&inode->i_lock);
	if (!orfs_lost_find(inode, owner)) {
		list_add(&l->link, &ORFS_I(inode)->lost);
		l = NULL;
	}
	spin_unlock(&inode->i_lock);
	kfree(l);	/* the owner was there already */
}

/* OWNER lets go of a lock on INODE: its I/O goes again. */
static void orfs_lost_clear(struct inode *inode, u64 owner)
{
	struct orfs_lost *l;

	if (list_empty_careful(&ORFS_I(inode)->lost))
		return;
	spin_lock(&inode->i_lock);
	l = orfs_lost_find(inode, owner);
	if (l)
		list_del(&l->link);
	spin_unlock(&inode->i_lock);
	kfree(l);
}

/**
 * orfs_lock_lost() - does an I/O go through an owner whose lock was lost?
 * @file: the file of the I/O, by the current task
 *
 * Its owners: the task's files (fcntl() locks) and @file (OFD locks and
 * flock()).
 *
 * Context: process context.
 * Return: true when the I/O must fail with EIO.
 */
bool orfs_lock_lost(struct file *file)
{
	struct inode *inode = file_inode(file);
	struct orfs_sb *sbi = ORFS_SB(inode->i_sb);
	bool lost;

	if (likely(list_empty_careful(&ORFS_I(inode)->lost)))
		return false;
	spin_lock(&inode->i_lock);
	lost = orfs_lost_find(inode, orfs_lock_owner(sbi, current->files, false)) ||
	       orfs_lost_find(inode, orfs_lock_owner(sbi, file, false)) ||
	       orfs_lost_find(inode, orfs_lock_owner(sbi, file, true));
	spin_unlock(&inode->i_lock);
	return lost;
}

/**
 * orfs_renew_work() - while the mount holds locks, keep its connection up
 * @work: the mount's renew_work
 *
 * A session reconnects when a call needs it; a client that only holds
 * locks makes none, and would hear of a server's restart after the grace
 * period, when another client may have its locks. So while any inode of
 * the mount has a lock, the first connection is probed: one that broke is
 * connected again, and the handshake then sees a restart and reclaims.
 */
void orfs_renew_work(struct work_struct *work)
{
	struct orfs_sb *sbi = container_of(to_delayed_work(work), struct orfs_sb, renew_work);
	struct orfs_inode *ci, *next;
	bool any;

	spin_lock(&sbi->locked_lock);
	list_for_each_entry_safe(ci, next, &sbi->locked, lock_link)
		if (!orfs_inode_has_locks(&ci->vfs_inode))
			list_del_init(&ci->lock_link);
	any = !list_empty(&sbi->locked);
	spin_unlock(&sbi->locked_lock);
	if (!any)
		return;
	knet_group_probe(&sbi->g);
	queue_delayed_work(system_long_wq, &sbi->renew_work, orfs_renew_period(sbi));
}

/**
 * orfs_unlocks_end() - the mount goes: the lock calls of dead processes end
 * @sbi: the mount; its files are closed, its sessions still open
 *
 * They get a few seconds to reach the server. One that still waits for a
 * server that is away is ended with the mount's calls (as by umount -f):
 * the server drops this client's locks after its lease once the
 * connections are gone.
 *
 * Context: process context, may sleep.
 */
void orfs_unlocks_end(struct orfs_sb *sbi)
{
	if (wait_var_event_timeout(&sbi->unlocks, !atomic_read(&sbi->unlocks), 5 * HZ))
		return;
	pr_warn("%pISc does not answer: unlocks not sent, the server's lease ends them\n",
		&sbi->addr);
	orfs_abort(sbi);
	wait_var_event(&sbi->unlocks, !atomic_read(&sbi->unlocks));
}

static int orfs_lock_set(struct file *file, struct file_lock *fl, u64 owner, bool wait)
{
	struct inode *inode = file_inode(file);
	u32 type = orfs_lock_type(ORFS_FL(fl, type));
	struct orfs_lock_rep rep;
	u32 flags;
	int ret, rc;

	if (type == ORFS_LOCK_UNLOCK) {
		/*
		 * What this owner wrote is on the server before anyone else
		 * locks. A write-back error is for fsync() and close() to
		 * say, as after any write-back: the unlock happens anyway.
		 */
		filemap_fdatawrite(file->f_mapping);
		filemap_fdatawait_keep_errors(file->f_mapping);
		ret = locks_lock_file_wait(file, fl);
		orfs_lost_clear(inode, owner);
		/*
		 * The local lock is gone: a call that a fatal signal ends (the wait
		 * for a server that is away, or a process killed) would leave it
		 * held on the server for good, so then a worker sends it.
		 */
		rc = -EINTR;
		if (!fatal_signal_pending(current) && !(current->flags & PF_EXITING))
			rc = orfs_lock_call(inode, owner, type, 0, fl->fl_start, fl->fl_end, &rep);
		if (rc == -EINTR &&
		    !orfs_lock_dying(inode, owner, type, 0, fl->fl_start, fl->fl_end))
			rc = 0;
		/* A close lets go of its locks whatever the server says. */
		if (ORFS_FL(fl, flags) & FL_CLOSE)
			return ret;
		return ret ?: rc;
	}
	/*
	 * A process's waiting fcntl() lock is part of the server's deadlock
	 * check (EDEADLK), as the kernel checks local ones: not OFD or flock().
	 */
	flags = wait && (ORFS_FL(fl, flags) & (FL_POSIX | FL_OFDLCK)) == FL_POSIX ?
		ORFS_LOCK_WAIT : 0;
	ret = orfs_lock_ask(inode, owner, type, flags, fl->fl_start, fl->fl_end, wait, &rep);
	if (ret)
		return ret;
	ret = locks_lock_file_wait(file, fl);
	if (ret) {
		/*
		 * Give the server's lock back: this owner does not hold it. A
		 * killed process (its local wait ended so) has a worker send it.
		 */
		rc = -EINTR;
		if (!fatal_signal_pending(current))
			rc = orfs_lock_call(inode, owner, ORFS_LOCK_UNLOCK, 0, fl->fl_start,
					    fl->fl_end, &rep);
		if (rc == -EINTR)
			orfs_lock_dying(inode, owner, ORFS_LOCK_UNLOCK, 0, fl->fl_start,
					fl->fl_end);
		return ret;
	}
	orfs_lock_held(inode);
	/* Another client's writes before it unlocked are to be seen now. */
	if (S_ISREG(inode->i_mode))
		orfs_revalidate_file(inode, true);
	return 0;
}

/* F_GETLK: an owner of this client in the way, else one the server knows. */
static int orfs_lock_test(struct file *file, struct file_lock *fl, u64 owner)
{
	unsigned char type = ORFS_FL(fl, type);
	struct orfs_lock_rep rep;
	int ret;

	posix_test_lock(file, fl);
	if (ORFS_FL(fl, type) != F_UNLCK)
		return 0;
	ret = orfs_lock_ask(file_inode(file), owner, orfs_lock_type(type), ORFS_LOCK_TEST,
			    fl->fl_start, fl->fl_end, false, &rep);
	if (ret)
		return ret;
	switch (le32_to_cpu(rep.type)) {
	case ORFS_LOCK_UNLOCK:
		ORFS_FL(fl, type) = F_UNLCK;
		return 0;
	case ORFS_LOCK_READ:
		ORFS_FL(fl, type) = F_RDLCK;
		break;
	case ORFS_LOCK_WRITE:
		ORFS_FL(fl, type) = F_WRLCK;
		break;
	default:
		return -EIO;
	}
	/* Held by another client: no process of ours to name. */
	ORFS_FL(fl, pid) = 0;
	fl->fl_start = min_t(u64, le64_to_cpu(rep.start), OFFSET_MAX);
	fl->fl_end = min_t(u64, le64_to_cpu(rep.end), OFFSET_MAX);
	if (fl->fl_start > fl->fl_end)
		return -EIO;
	return 0;
}

/**
 * orfs_lock() - fcntl() locks: F_GETLK, F_SETLK, F_SETLKW and their OFD forms
 * @file: the open file
 * @cmd: the command
 * @fl: the lock asked for
 *
 * Context: process context, may sleep.
 * Return: 0 or a negative errno (-EAGAIN: another owner holds it).
 */
int orfs_lock(struct file *file, int cmd, struct file_lock *fl)
{
	struct orfs_sb *sbi = ORFS_SB(file_inode(file)->i_sb);
	u64 owner;

	if (!(ORFS_FL(fl, flags) & FL_POSIX))
		return -ENOLCK;
	if (sbi->opts.local_locks) {
		if (IS_GETLK(cmd)) {
			posix_test_lock(file, fl);
			return 0;
		}
		return locks_lock_file_wait(file, fl);
	}
	owner = orfs_lock_owner(sbi, ORFS_FL(fl, owner), false);
	if (IS_GETLK(cmd))
		return orfs_lock_test(file, fl, owner);
	return orfs_lock_set(file, fl, owner, IS_SETLKW(cmd));
}

/**
 * orfs_flock() - flock() locks: a lock of the whole file on the server
 * @file: the open file
 * @cmd: F_SETLK, or F_SETLKW to wait
 * @fl: the lock asked for
 *
 * Context: process context, may sleep.
 * Return: 0 or a negative errno.
 */
int orfs_flock(struct file *file, int cmd, struct file_lock *fl)
{
	struct orfs_sb *sbi = ORFS_SB(file_inode(file)->i_sb);

	if (!(ORFS_FL(fl, flags) & FL_FLOCK))
		return -ENOLCK;
	if (sbi->opts.local_locks)
		return locks_lock_file_wait(file, fl);
	fl->fl_start = 0;
	fl->fl_end = OFFSET_MAX;
	return orfs_lock_set(file, fl, orfs_lock_owner(sbi, file, true), IS_SETLKW(cmd));
}

/* One lock to take back: its owner, range and type, and a file it was taken through. */
struct orfs_held {
	u64		owner;
	u32		type;
	loff_t		start, end;
	struct file	*file;
	int		err;		/* why it is lost; 0: taken back, or no @file */
};

/* A reference on FILE, unless its last is going (and its locks with it). */
static struct file *orfs_file_try_get(struct file *file)
{
	return atomic_long_inc_not_zero(&file->f_count) ? file : NULL;
}

/* Copy up to MAX of INODE's locks in HEAD into H; returns how many there are. */
static unsigned int orfs_held_copy(struct orfs_sb *sbi, struct list_head *head,
				   struct orfs_held *h, unsigned int n, unsigned int max)
{
	struct file_lock *fl;

	orfs_for_each_lock(fl, head) {
		if (n < max) {
			bool flock = ORFS_FL(fl, flags) & FL_FLOCK;

			h[n].owner = orfs_lock_owner(sbi, flock ? (void *)ORFS_FL(fl, file) :
						     (void *)ORFS_FL(fl, owner), flock);
			h[n].type = orfs_lock_type(ORFS_FL(fl, type));
			h[n].start = flock ? 0 : fl->fl_start;
			h[n].end = flock ? OFFSET_MAX : fl->fl_end;
			h[n].file = orfs_file_try_get(ORFS_FL(fl, file));
		}
		n++;
	}
	return n;
}

/*
 * An inode whose locks a reclaim asked back. One with a lock found @lost
 * is kept until the next reclaim: a WRITE made before that reclaim was
 * asked (its xid up to @xid), or before what was written under those
 * locks was dropped (@dropping), is not sent where it meets one of them
 * (orfs_admit()). Write-back that was under way when the server went away
 * is sent again on reconnection: to a restarted server, which knows
 * nothing of the lock, it would land over what the lock's next holder
 * wrote.
 */
struct orfs_reclaimed {
	struct list_head	link;
	struct inode		*inode;		/* held until @dropping ends, or NULL */
	unsigned long		ino;
	struct orfs_fh		fh;
	u64			xid;
	bool			lost;
	bool			dropping;
	unsigned int		n;
	struct orfs_held	h[];
};

/* Let go of the files that REC's first MAX locks were copied with. */
static void orfs_held_put(struct orfs_reclaimed *rec, unsigned int max)
{
	unsigned int i;

	for (i = 0; i < max; i++)
		if (rec->h[i].file)
			fput(rec->h[i].file);
}

/*
 * Ask the server again for every lock held on INODE, or with REVOKED (the
 * server dropped them all) mark each one lost. Returns the inode's record,
 * which takes over the caller's reference to it, or NULL (no memory).
 */
static struct orfs_reclaimed *orfs_reclaim_inode(struct orfs_sb *sbi, struct inode *inode,
						 bool revoked, u64 xid)
{
	struct file_lock_context *ctx = locks_inode_context(inode);
	struct orfs_reclaimed *rec;
	unsigned int i, n = 0, max = 4;
	struct orfs_lock_rep rep;

	for (;;) {
		rec = kzalloc(struct_size(rec, h, max), GFP_KERNEL);
		if (!rec)
			return NULL;
		if (!ctx)
			break;
		spin_lock(&ctx->flc_lock);
		n = orfs_held_copy(sbi, &ctx->flc_posix, rec->h, 0, max);
		n = orfs_held_copy(sbi, &ctx->flc_flock, rec->h, n, max);
		spin_unlock(&ctx->flc_lock);
		if (n <= max)
			break;
		/* More than room for: let go of what was copied, and count again. */
		orfs_held_put(rec, max);
		kfree(rec);
		max = n + 4;
	}
	for (i = 0; i < n; i++) {
		struct orfs_held *h = &rec->h[i];
		const struct cred *old;

		if (!h->file)
			continue;
		if (revoked) {
			h->err = -ENOLCK;
		} else {
			old = override_creds(h->file->f_cred);
			h->err = orfs_lock_call(inode, h->owner, h->type, ORFS_LOCK_RECLAIM,
						h->start, h->end, &rep);
			revert_creds(old);
		}
		if (h->err) {
			orfs_lost_add(inode, h->owner);
			rec->lost = true;
		}
		fput(h->file);
		h->file = NULL;
	}
	rec->inode = inode;
	rec->ino = inode->i_ino;
	rec->fh = ORFS_I(inode)->fh;
	rec->xid = xid;
	rec->dropping = rec->lost;
	rec->n = n;
	return rec;
}

/*
 * What was written under REC's lost locks leaves the page cache unwritten,
 * and the log says which locks are lost. Then WRITEs made from now on go
 * to the inode again, and the record lets go of it.
 */
static void orfs_reclaim_drop(struct orfs_sb *sbi, struct orfs_reclaimed *rec, bool revoked)
{
	struct inode *inode = rec->inode;
	unsigned int i;

	/*
	 * A page an owner made writable before would take its stores without
	 * a fault: unmapped, every next store faults into page_mkwrite, which
	 * refuses the owners of lost locks. Others fault the pages back in.
	 */
	unmap_mapping_range(inode->i_mapping, 0, 0, 0);
	for (i = 0; i < rec->n; i++) {
		struct orfs_held *h = &rec->h[i];
		unsigned int dropped;

		if (!h->err)
			continue;
		dropped = orfs_drop_dirty(inode, h->start, h->end);
		if (revoked)
			pr_warn("%pISc: a lock on inode %lu, bytes %lld-%lld, is lost (the server dropped it): its owner's I/O on the file fails until it unlocks\n",
				&sbi->addr, inode->i_ino, h->start, h->end);
		else
			pr_warn("%pISc restarted: a lock on inode %lu, bytes %lld-%lld, is lost (%d): its owner's I/O on the file fails until it unlocks\n",
				&sbi->addr, inode->i_ino, h->start, h->end, h->err);
		if (dropped)
			pr_warn("%pISc: inode %lu: %u dirty folios written under that lock dropped unwritten (fsync() and close() say EIO)\n",
				&sbi->addr, inode->i_ino, dropped);
	}
	spin_lock(&sbi->reclaim_lock);
	rec->dropping = false;
	rec->inode = NULL;
	spin_unlock(&sbi->reclaim_lock);
	iput(inode);
}

/**
 * orfs_admit() - may a request be sent now? (knet_group_ops @admit)
 * @g: the mount's connections
 * @rq: the request, about to be sent, the first time or again
 *
 * From the moment a session sees that the server restarted (or says it
 * dropped the mount's locks) until every lock was asked back, WRITEs wait:
 * one made before may be under a lock about to be found lost. Then a
 * WRITE that meets a lost lock's range fails with EIO if it was made
 * before the reclaim was asked, or before what was written under the lock
 * was dropped. Other requests always go: the reclaim's own are among them.
 *
 * Context: after the session chose the endpoint; does not sleep.
 * Return: 0, -EAGAIN (wait: orfs_admit_wait()), or -EIO.
 */
int orfs_admit(struct knet_group *g, const struct knet_request *rq)
{
	struct orfs_sb *sbi = g->priv;
	const struct orfs_req *r = rq->body;
	const struct orfs_io_req *io = rq->body + sizeof(*r);
	struct orfs_reclaimed *rec;
	loff_t start, end;
	unsigned int i;
	u64 xid;
	int ret = 0;

	if (rq->opcode != ORFS_OP_WRITE)
		return 0;
	if (READ_ONCE(sbi->reclaimed_seq) != READ_ONCE(sbi->reclaim_seq))
		return -EAGAIN;
	if (list_empty_careful(&sbi->reclaimed) || rq->body_len < sizeof(*r) + sizeof(*io) ||
	    !io->length)
		return 0;
	xid = le64_to_cpu(r->xid);
	start = le64_to_cpu(io->offset);
	end = start + le32_to_cpu(io->length) - 1;
	spin_lock(&sbi->reclaim_lock);
	list_for_each_entry(rec, &sbi->reclaimed, link) {
		if ((xid > rec->xid && !rec->dropping) ||
		    memcmp(&rec->fh, &io->fh, sizeof(io->fh)))
			continue;
		for (i = 0; i < rec->n && !ret; i++)
			if (rec->h[i].err && rec->h[i].start <= end && start <= rec->h[i].end)
				ret = -EIO;
		if (ret) {
			pr_warn_ratelimited("%pISc: a write of inode %lu, bytes %lld-%lld, made under a lock found lost, not sent (EIO)\n",
					    &sbi->addr, rec->ino, start, end);
			break;
		}
	}
	spin_unlock(&sbi->reclaim_lock);
	return ret;
}

/**
 * orfs_admit_wait() - wait until the mount's locks were asked back
 * @g: the mount's connections
 *
 * Context: process context (a submitter, or knet's workqueue); killable.
 * Return: 0, or -EINTR on a fatal signal.
 */
int orfs_admit_wait(struct knet_group *g)
{
	struct orfs_sb *sbi = g->priv;

	if (wait_event_killable(sbi->reclaim_wq,
				READ_ONCE(sbi->reclaimed_seq) == READ_ONCE(sbi->reclaim_seq)))
		return -EINTR;
	return 0;
}

/* Free the records of the reclaim before: none holds an inode any more. */
static void orfs_reclaimed_free(struct list_head *list)
{
	struct orfs_reclaimed *rec, *next;

	list_for_each_entry_safe(rec, next, list, link) {
		list_del(&rec->link);
		kfree(rec);
	}
}

/**
 * orfs_reclaim_end() - the mount goes: no reclaim is waited for any more
 * @sbi: the mount, its reclaim_work over and none to come
 *
 * Context: process context.
 */
void orfs_reclaim_end(struct orfs_sb *sbi)
{
	LIST_HEAD(old);

	spin_lock(&sbi->reclaim_lock);
	WRITE_ONCE(sbi->reclaimed_seq, sbi->reclaim_seq);
	list_splice_init(&sbi->reclaimed, &old);
	spin_unlock(&sbi->reclaim_lock);
	wake_up_all(&sbi->reclaim_wq);
	orfs_reclaimed_free(&old);
}

/*
 * Tell the server that the mount saw that its locks were dropped, and
 * dropped what was written under them: the server stops saying so at each
 * SESSION, and takes its writes to those files again. From now on a
 * SESSION that says it again is heard again (this one did not arrive).
 */
static void orfs_revoked_seen(struct orfs_sb *sbi)
{
	struct orfs_lock_rep rep;
	int ret;

	if (!sbi->sb->s_root)
		return;
	clear_bit(0, &sbi->revoke_told);
	ret = orfs_lock_call_fh(sbi, &ORFS_I(d_inode(sbi->sb->s_root))->fh, 0, ORFS_LOCK_READ,
				ORFS_LOCK_TEST | ORFS_LOCK_REVOKED_SEEN, 0, 0, &rep);
	if (ret)
		pr_warn("%pISc: could not tell the server that the dropped locks were seen (%d): it will say so again\n",
			&sbi->addr, ret);
}

/*
 * The server restarted: take back every lock of the mount, one inode at a
 * time (the walk of the super block's inodes as drop_pagecache_sb() does it).
 * Or it said it dropped them (SESSION's ORFS_SESSION_LOCKS_REVOKED): each
 * is lost, as a reclaim refused would make it, and the server is told
 * once that is done. WRITEs wait meanwhile (orfs_admit()); they go once
 * every lock was asked back, before what was written under the lost ones
 * is dropped: dropping waits for the write-back under way, which ends
 * then (refused where it met a lost lock).
 */
void orfs_reclaim_work(struct work_struct *work)
{
	struct orfs_sb *sbi = container_of(work, struct orfs_sb, reclaim_work);
	struct super_block *sb = sbi->sb;
	struct inode *inode, *prev = NULL;
	struct orfs_reclaimed *rec, *next;
	LIST_HEAD(kept);
	LIST_HEAD(lost);
	LIST_HEAD(old);
	unsigned int seq;
	bool revoked;
	u64 xid;

	spin_lock(&sbi->reclaim_lock);
	revoked = sbi->revoked;
	sbi->revoked = false;
	seq = sbi->reclaim_seq;
	xid = sbi->reclaim_xid;
	list_splice_init(&sbi->reclaimed, &old);
	spin_unlock(&sbi->reclaim_lock);
	orfs_reclaimed_free(&old);

	/*
	 * Each inode stays held until the WRITEs go: a last iput() now could
	 * wait for write-back held until then.
	 */
	spin_lock(&sb->s_inode_list_lock);
	list_for_each_entry(inode, &sb->s_inodes, i_sb_list) {
		if (!orfs_inode_has_locks(inode))
			continue;
		spin_lock(&inode->i_lock);
		if (inode->i_state & (I_FREEING | I_WILL_FREE | I_NEW)) {
			spin_unlock(&inode->i_lock);
			continue;
		}
		__iget(inode);
		spin_unlock(&inode->i_lock);
		spin_unlock(&sb->s_inode_list_lock);
		iput(prev);
		rec = orfs_reclaim_inode(sbi, inode, revoked, xid);
		if (rec)
			list_add_tail(&rec->link, rec->lost ? &lost : &kept);
		else
			pr_warn("no memory to take back the locks of inode %lu\n", inode->i_ino);
		prev = rec ? NULL : inode;
		cond_resched();
		spin_lock(&sb->s_inode_list_lock);
	}
	spin_unlock(&sb->s_inode_list_lock);

	/* The WRITEs held go, each checked against the locks found lost. */
	spin_lock(&sbi->reclaim_lock);
	list_splice(&lost, &sbi->reclaimed);
	WRITE_ONCE(sbi->reclaimed_seq, seq);
	spin_unlock(&sbi->reclaim_lock);
	wake_up_all(&sbi->reclaim_wq);

	iput(prev);
	list_for_each_entry_safe(rec, next, &kept, link) {
		iput(rec->inode);
		kfree(rec);
	}
	/* Only this work changes the list (or the mount's end, after it). */
	list_for_each_entry(rec, &sbi->reclaimed, link)
		orfs_reclaim_drop(sbi, rec, revoked);
	if (revoked)
		orfs_revoked_seen(sbi);
}

// SPDX-License-Identifier: GPL-2.0-only
/*
 * ORFS statistics: what each mount asked of its server, operation by
 * operation, for /proc/<pid>/mountstats (super_operations @show_stats) and
 * tools/orfsstat.
 *
 * The counters are per CPU, added to with this_cpu_add() from process and
 * softirq context (a READ can end in its completion's softirq) without a
 * lock, and summed when read: a read while requests end may see one
 * request's counters half added, as /proc/diskstats may.
 */
#define pr_fmt(fmt) "orfs: " fmt

#include <linux/percpu.h>
#include <linux/seq_file.h>
#include <linux/timekeeping.h>

#include "orfs.h"

/* Operation names, in opcode order from ORFS_OP_SESSION. */
static const char *const orfs_op_names[ORFS_NR_OPS] = {
	[ORFS_OP_SESSION - ORFS_OP_SESSION]	= "SESSION",
	[ORFS_OP_GETROOT - ORFS_OP_SESSION]	= "GETROOT",
	[ORFS_OP_LOOKUP - ORFS_OP_SESSION]	= "LOOKUP",
	[ORFS_OP_GETATTR - ORFS_OP_SESSION]	= "GETATTR",
	[ORFS_OP_SETATTR - ORFS_OP_SESSION]	= "SETATTR",
	[ORFS_OP_CREATE - ORFS_OP_SESSION]	= "CREATE",
	[ORFS_OP_MKDIR - ORFS_OP_SESSION]	= "MKDIR",
	[ORFS_OP_MKNOD - ORFS_OP_SESSION]	= "MKNOD",
	[ORFS_OP_SYMLINK - ORFS_OP_SESSION]	= "SYMLINK",
	[ORFS_OP_LINK - ORFS_OP_SESSION]	= "LINK",
	[ORFS_OP_UNLINK - ORFS_OP_SESSION]	= "UNLINK",
	[ORFS_OP_RMDIR - ORFS_OP_SESSION]	= "RMDIR",
	[ORFS_OP_RENAME - ORFS_OP_SESSION]	= "RENAME",
	[ORFS_OP_READLINK - ORFS_OP_SESSION]	= "READLINK",
	[ORFS_OP_READDIR - ORFS_OP_SESSION]	= "READDIR",
	[ORFS_OP_STATFS - ORFS_OP_SESSION]	= "STATFS",
	[ORFS_OP_READ - ORFS_OP_SESSION]	= "READ",
	[ORFS_OP_WRITE - ORFS_OP_SESSION]	= "WRITE",
	[ORFS_OP_FSYNC - ORFS_OP_SESSION]	= "FSYNC",
	[ORFS_OP_GETXATTR - ORFS_OP_SESSION]	= "GETXATTR",
	[ORFS_OP_SETXATTR - ORFS_OP_SESSION]	= "SETXATTR",
	[ORFS_OP_LISTXATTR - ORFS_OP_SESSION]	= "LISTXATTR",
	[ORFS_OP_REMOVEXATTR - ORFS_OP_SESSION]	= "REMOVEXATTR",
	[ORFS_OP_LOCK - ORFS_OP_SESSION]	= "LOCK",
	[ORFS_OP_FALLOCATE - ORFS_OP_SESSION]	= "FALLOCATE",
	[ORFS_OP_SEEK - ORFS_OP_SESSION]	= "SEEK",
	[ORFS_OP_COPY - ORFS_OP_SESSION]	= "COPY",
	[ORFS_OP_CLONE - ORFS_OP_SESSION]	= "CLONE",
};

/**
 * orfs_stats_alloc() - the counters of a new mount
 * @sbi: the mount
 *
 * Return: 0 or -ENOMEM.
 */
int orfs_stats_alloc(struct orfs_sb *sbi)
{
	sbi->stats = alloc_percpu(struct orfs_stats);
	if (!sbi->stats)
		return -ENOMEM;
	sbi->mounted = ktime_get_boottime_seconds();
	return 0;
}

/* Free what orfs_stats_alloc() took (none taken is fine). */
void orfs_stats_free(struct orfs_sb *sbi)
{
	free_percpu(sbi->stats);
	sbi->stats = NULL;
}

/**
 * orfs_stats_call() - count one call of an operation, once it is over
 * @sbi: the mount
 * @op: the operation
 * @start: when it was sent (ktime_get())
 * @ret: 0, the server's error, or the failure that left it unanswered
 * @answered: the server answered (@ret is its word)
 * @sent: bytes of the request body
 * @received: bytes of the reply body, short or not (0 when none came)
 *
 * Context: any.
 */
void orfs_stats_call(struct orfs_sb *sbi, u16 op, ktime_t start, int ret, bool answered,
		     u32 sent, u32 received)
{
	struct orfs_op_stats __percpu *s;
	unsigned int i = op - ORFS_OP_SESSION;

	if (i >= ORFS_NR_OPS)
		return;
	s = &sbi->stats->op[i];
	this_cpu_inc(s->calls);
	if (ret && answered)
		this_cpu_inc(s->errors);
	else if (ret)
		this_cpu_inc(s->failures);
	this_cpu_add(s->sent, sent);
	this_cpu_add(s->received, received);
	this_cpu_add(s->usecs, ktime_us_delta(ktime_get(), start));
}

/**
 * orfs_stats_data() - count the file data an operation moved
 * @sbi: the mount
 * @op: ORFS_OP_READ or ORFS_OP_WRITE
 * @bytes: what the server said it read or wrote
 *
 * Context: any.
 */
void orfs_stats_data(struct orfs_sb *sbi, u16 op, u32 bytes)
{
	unsigned int i = op - ORFS_OP_SESSION;

	if (i < ORFS_NR_OPS)
		this_cpu_add(sbi->stats->op[i].data, bytes);
}

/**
 * orfs_stats_wb() - count write stability events
 * @sbi: the mount
 * @what: ORFS_WB_UNSTABLE, bytes written back unstable; ORFS_WB_COMMITS;
 *	ORFS_WB_RESENT, bytes sent again; ORFS_WB_LOST, fsync()s failed for
 *	lost direct I/O
 * @n: how many
 *
 * Context: any.
 */
void orfs_stats_wb(struct orfs_sb *sbi, enum orfs_wb_stat what, u64 n)
{
	struct orfs_wb_stats __percpu *w = &sbi->stats->wb;

	switch (what) {
	case ORFS_WB_UNSTABLE:
		this_cpu_add(w->unstable, n);
		break;
	case ORFS_WB_COMMITS:
		this_cpu_add(w->commits, n);
		break;
	case ORFS_WB_RESENT:
		this_cpu_add(w->resent, n);
		break;
	case ORFS_WB_LOST:
		this_cpu_add(w->lost, n);
		break;
	}
}

/**
 * orfs_show_stats() - the mount's statistics, for /proc/<pid>/mountstats
 * @m: the file, after "device ... with fstype orfs "
 * @root: the mount's root
 *
 * One line of connections (calls sent on each, calls in flight,
 * reconnections, requests sent again), then a line per operation: calls,
 * server errors, failures (no answer: a soft mount's time-out, a fatal
 * signal, a forced unmount), request and reply bytes, file data moved,
 * and the microseconds the calls took from send to end, summed. Then the
 * write stability line: bytes written back unstable, COMMITs, bytes sent
 * again after a COMMIT found the verifier changed, fsync()s failed for
 * lost direct I/O, and the bytes of the folios held for a COMMIT now.
 *
 * Return: 0.
 */
int orfs_show_stats(struct seq_file *m, struct dentry *root)
{
	struct orfs_sb *sbi = ORFS_SB(root->d_sb);
	struct orfs_wb_stats wb = {};
	struct orfs_op_stats sum;
	unsigned int i, op;
	int cpu;

	seq_printf(m, "statvers=1\n\tserver %pISc port %u export %s\n", &sbi->addr,
		   knet_addr_port(&sbi->addr), sbi->export);
	seq_printf(m, "\tage %lld\n", ktime_get_boottime_seconds() - sbi->mounted);
	seq_printf(m, "\tconnections %u reconnects %d resent %d ended_here %d\n", sbi->g.nr,
		   atomic_read(&sbi->g.reconnects), atomic_read(&sbi->g.resent),
		   atomic_read(&sbi->g.ended_here));
	for (i = 0; i < sbi->g.nr; i++)
		seq_printf(m, "\tconn %u calls %lld busy %u\n", i,
			   atomic64_read(&sbi->conn_calls[i]), knet_group_busy(&sbi->g, i));
	seq_puts(m, "\top calls errors failures sent received data usecs\n");
	for (op = 0; op < ORFS_NR_OPS; op++) {
		memset(&sum, 0, sizeof(sum));
		for_each_possible_cpu(cpu) {
			const struct orfs_op_stats *s = per_cpu_ptr(&sbi->stats->op[op], cpu);

			sum.calls += READ_ONCE(s->calls);
			sum.errors += READ_ONCE(s->errors);
			sum.failures += READ_ONCE(s->failures);
			sum.sent += READ_ONCE(s->sent);
			sum.received += READ_ONCE(s->received);
			sum.data += READ_ONCE(s->data);
			sum.usecs += READ_ONCE(s->usecs);
		}
		seq_printf(m, "\t%s %llu %llu %llu %llu %llu %llu %llu\n", orfs_op_names[op],
			   sum.calls, sum.errors, sum.failures, sum.sent, sum.received, sum.data,
			   sum.usecs);
	}
	for_each_possible_cpu(cpu) {
		const struct orfs_wb_stats *w = per_cpu_ptr(&sbi->stats->wb, cpu);

		wb.unstable += READ_ONCE(w->unstable);
		wb.commits += READ_ONCE(w->commits);
		wb.resent += READ_ONCE(w->resent);
		wb.lost += READ_ONCE(w->lost);
	}
	seq_printf(m, "\twriteback unstable %llu commits %llu resent %llu lost %llu held %ld\n",
		   wb.unstable, wb.commits, wb.resent, wb.lost, atomic_long_read(&sbi->unstable));
	return 0;
}

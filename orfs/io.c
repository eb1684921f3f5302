// SPDX-License-Identifier: GPL-2.0-only
/*
 * ORFS data requests: READ and WRITE of a knet memory descriptor, either
 * waited for (orfs_io()) or asynchronous (orfs_io_start()), so that
 * read-ahead, write-back and asynchronous direct I/O keep several requests
 * in flight within the connection's credits.
 *
 * An asynchronous request is a knet session request: one that met a
 * transport failure is sent again by knet after reconnecting (the same
 * xid, the submitter's mm for user memory), and it ends in process context
 * on a workqueue, where the reply's attributes are taken under the
 * inode's lock; a READ whose submitter allows it ends in the completion's
 * softirq context instead (it takes no attributes).
 */
#define pr_fmt(fmt) "orfs: " fmt

#include <linux/slab.h>

#include "orfs.h"

static int orfs_io_msg(struct orfs_msg *m, struct inode *inode, loff_t pos, u32 len, u32 flags)
{
	struct orfs_io_req *r;
	int ret;

	ret = orfs_msg_init(m, ORFS_SB(inode->i_sb), sizeof(struct orfs_req) + sizeof(*r));
	if (ret)
		return ret;
	r = orfs_msg_put(m, NULL, sizeof(*r));
	if (r) {
		r->fh = ORFS_I(inode)->fh;
		r->offset = cpu_to_le64(pos);
		r->length = cpu_to_le32(len);
		r->flags = cpu_to_le32(flags);
	}
	return 0;
}

/*
 * Check the server's answer (REP, REP_LEN bytes) to an I/O of LEN bytes at
 * POS sent with FLAGS, and take its attributes; a WRITE asked unstable
 * (ORFS_WRITE_VERF) gives the verifier in *VERF, any other I/O 0.
 */
static int orfs_io_result(struct inode *inode, u16 op, loff_t pos, u32 len, u32 flags,
			  const struct orfs_write_rep *w, u32 rep_len, u32 *count, u64 *verf)
{
	const struct orfs_io_rep *rep = &w->io;
	bool want = op == ORFS_OP_WRITE && (flags & ORFS_WRITE_VERF);

	*count = le32_to_cpu(rep->count);
	*verf = want && rep_len >= sizeof(*w) ? le64_to_cpu(w->v.verf) : 0;
	if (*count > len || orfs_check_attr(&rep->attr) || !S_ISREG(le32_to_cpu(rep->attr.mode)) ||
	    (want && !*verf)) {
		pr_warn_ratelimited("the server's answer to an I/O did not add up\n");
		return -EIO;
	}
	orfs_stats_data(ORFS_SB(inode->i_sb), op, *count);
	if (op == ORFS_OP_WRITE) {
		u64 change = le64_to_cpu(rep->attr.change);

		/* Our own change: keep our pages. */
		spin_lock(&inode->i_lock);
		/*
		 * The times are the server's once nothing is left to write, as
		 * NFS takes a WRITE's post-operation attributes: stat() after
		 * close() shows what a GETATTR will, not the times write()
		 * set here and then changed under a chmod. A reply older than
		 * one taken already (the change moves forward) leaves them.
		 */
		if (change > ORFS_I(inode)->change &&
		    !mapping_tagged(inode->i_mapping, PAGECACHE_TAG_DIRTY))
			orfs_set_write_times(inode, &rep->attr);
		ORFS_I(inode)->change = change;
		if (pos + *count > i_size_read(inode))
			i_size_write(inode, pos + *count);
		spin_unlock(&inode->i_lock);
	}
	return 0;
}

static enum knet_dir orfs_io_dir(u16 op)
{
	return op == ORFS_OP_WRITE ? KNET_DIR_TO_SERVER : KNET_DIR_FROM_SERVER;
}

/**
 * orfs_io() - READ or WRITE and wait for the answer
 * @inode: the file
 * @op: ORFS_OP_READ or ORFS_OP_WRITE
 * @pos: where in the file
 * @mem: the data
 * @flags: ORFS_WRITE_*
 * @count: out: bytes the server moved
 * @verf: out: the write verifier of a WRITE with ORFS_WRITE_VERF, else 0
 *
 * Context: process context (the owner's, for user memory); may sleep.
 * Return: 0 or a negative errno.
 */
int orfs_io(struct inode *inode, u16 op, loff_t pos, const struct knet_mem *mem, u32 flags,
	    u32 *count, u64 *verf)
{
	struct orfs_write_rep rep;
	struct orfs_msg m;
	u32 rep_len = 0;
	int ret;

	ret = orfs_io_msg(&m, inode, pos, mem->len, flags);
	if (ret)
		return ret;
	ret = orfs_rpc(ORFS_SB(inode->i_sb), op, &m, &rep, sizeof(rep.io), sizeof(rep), &rep_len,
		       mem, orfs_io_dir(op));
	orfs_msg_free(&m);
	return ret ?: orfs_io_result(inode, op, pos, mem->len, flags, &rep, rep_len, count, verf);
}

static void orfs_areq_done(struct knet_srq *srq)
{
	struct orfs_areq *a = container_of(srq, struct orfs_areq, srq);
	struct knet_request *rq = &srq->rq;
	struct orfs_sb *sbi = ORFS_SB(a->inode->i_sb);
	int err = rq->error;
	bool answered = !err;
	u32 count = 0;

	orfs_conn_put(sbi, srq->conn);
	/* READ and WRITE are not replayed: EINPROGRESS cannot come back. */
	if (!err && rq->status) {
		err = orfs_status_errno(rq->status);
	} else if (!err && rq->reply_len < sizeof(a->rep.io)) {
		err = -EIO;
		answered = false;
	}
	orfs_stats_call(sbi, a->op, a->start, err, answered, a->msg.len,
			rq->error ? 0 : rq->reply_len);
	if (!err)
		err = orfs_io_result(a->inode, a->op, a->pos, a->mem.len, a->flags, &a->rep,
				     rq->reply_len, &count, &a->verf);
	orfs_msg_free(&a->msg);
	a->end(a, err, count);
}

/**
 * orfs_io_start() - send an asynchronous READ or WRITE
 * @a: the request: @inode, @op, @pos, @mem (user memory: one entry, in
 *	@mem.one), @end and @priv filled in
 * @flags: ORFS_WRITE_*
 *
 * @a->end is called once, in process context (a workqueue, or for a WRITE
 * with @a->end_softirq the completion's task) or, for a READ with
 * @a->end_softirq, in softirq context, with 0 or a negative errno and
 * the bytes the server moved; it owns @a then.
 *
 * Context: process context (the owner's, for user memory); waits for a
 * credit when all are in use.
 */
void orfs_io_start(struct orfs_areq *a, u32 flags)
{
	struct orfs_sb *sbi = ORFS_SB(a->inode->i_sb);
	struct knet_request *rq = &a->srq.rq;
	int ret;

	memset(rq, 0, sizeof(*rq));
	a->srq.done = orfs_areq_done;
	/*
	 * A READ's answer takes no lock of the inode: it can end in softirq.
	 * A WRITE's takes i_lock, never taken in softirq, and marks the
	 * inode dirty: it ends in the completion's context only where that
	 * is a task's (over TCP, the receive work).
	 */
	a->srq.softirq_done = a->end_softirq && a->op == ORFS_OP_READ;
	a->srq.task_done = a->end_softirq && a->op == ORFS_OP_WRITE;
	a->flags = flags;
	a->verf = 0;
	ret = orfs_io_msg(&a->msg, a->inode, a->pos, a->mem.len, flags);
	if (ret) {
		a->msg.buf = NULL;
		a->end(a, ret, 0);
		return;
	}
	rq->opcode = a->op;
	rq->body = a->msg.buf;
	rq->body_len = a->msg.len;
	rq->mem = &a->mem;
	rq->dir = orfs_io_dir(a->op);
	rq->reply = &a->rep;
	rq->reply_max = sizeof(a->rep);
	a->start = ktime_get();
	knet_group_submit(&sbi->g, orfs_conn_get(sbi), &a->srq);
}


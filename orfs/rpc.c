// SPDX-License-Identifier: GPL-2.0-only
/*
 * ORFS calls: building request bodies with the caller's credentials, and
 * sending them over the mount's knet endpoint with the mount's failure
 * policy.
 *
 * The mount's connections (nconnect= of them, a request on the least busy)
 * are one knet connection group: a transport failure (time-out, lost
 * connection, a server that lied) makes knet connect them all again, run
 * our handshake (SESSION, with the mount's client id) on each, and send the
 * same body again, with the same transaction id: the server's replay cache
 * answers a non-idempotent operation that already ran with its first
 * answer. Hard mounts retry until the server is back (a fatal signal ends
 * the wait); soft mounts give up with EIO after retrans tries.
 */
#define pr_fmt(fmt) "orfs: " fmt

#include <linux/cred.h>
#include <linux/limits.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uidgid.h>

#include "orfs.h"

/**
 * orfs_msg_init() - start a request body: the caller's identity and an xid
 * @m: the body
 * @sbi: the mount
 * @cap: room for the whole body
 *
 * Return: 0 or -ENOMEM.
 */
int orfs_msg_init(struct orfs_msg *m, struct orfs_sb *sbi, size_t cap)
{
	const struct cred *cred = current_cred();
	struct orfs_req *r;
	unsigned int i, n;

	m->buf = kzalloc(cap, GFP_KERNEL);
	if (!m->buf)
		return -ENOMEM;
	m->cap = cap;
	m->len = sizeof(*r);
	m->err = 0;
	r = (struct orfs_req *)m->buf;
	r->xid = cpu_to_le64(atomic64_inc_return(&sbi->xid));
	r->cred.uid = cpu_to_le32(from_kuid_munged(&init_user_ns, cred->fsuid));
	r->cred.gid = cpu_to_le32(from_kgid_munged(&init_user_ns, cred->fsgid));
	n = cred->group_info ? min_t(unsigned int, cred->group_info->ngroups, ORFS_MAX_GROUPS) : 0;
	for (i = 0; i < n; i++)
		r->cred.groups[i] = cpu_to_le32(from_kgid_munged(&init_user_ns,
								 cred->group_info->gid[i]));
	r->cred.ngroups = cpu_to_le16(n);
	return 0;
}

void orfs_msg_free(struct orfs_msg *m)
{
	kfree(m->buf);
	m->buf = NULL;
}

/* Append LEN bytes (zeroes when P is NULL); returns where they went. */
void *orfs_msg_put(struct orfs_msg *m, const void *p, size_t len)
{
	void *at;

	if (m->err || len > m->cap - m->len) {
		m->err = m->err ?: -ENAMETOOLONG;
		return NULL;
	}
	at = m->buf + m->len;
	if (p)
		memcpy(at, p, len);
	m->len += len;
	return at;
}

/* A name: __le16 length, then the bytes. */
void orfs_msg_name(struct orfs_msg *m, const char *name, size_t len)
{
	__le16 l = cpu_to_le16(len);

	if (!len || len > ORFS_NAME_MAX) {
		m->err = m->err ?: -ENAMETOOLONG;
		return;
	}
	orfs_msg_put(m, &l, sizeof(l));
	orfs_msg_put(m, name, len);
}

/* A symlink target or an xattr value: __le32 length, then the bytes. */
void orfs_msg_blob(struct orfs_msg *m, const void *p, size_t len)
{
	__le32 l = cpu_to_le32(len);

	orfs_msg_put(m, &l, sizeof(l));
	orfs_msg_put(m, p, len);
}

/**
 * orfs_call() - a request whose body is one fixed part, and its reply
 * @sbi: the mount
 * @op: the operation
 * @req: the fixed part (what follows struct orfs_req, which this fills in)
 * @len: its size
 * @reply: where the reply body goes, or NULL for none
 * @reply_len: the reply body's size: a successful reply has exactly that
 *
 * Context: process context, may sleep; killable.
 * Return: as orfs_rpc().
 */
int orfs_call(struct orfs_sb *sbi, u16 op, const void *req, size_t len, void *reply,
	      u32 reply_len)
{
	struct orfs_msg m;
	int ret;

	ret = orfs_msg_init(&m, sbi, sizeof(struct orfs_req) + len);
	if (ret)
		return ret;
	orfs_msg_put(&m, req, len);
	ret = orfs_rpc(sbi, op, &m, reply, reply_len, reply_len, NULL, NULL, KNET_DIR_NONE);
	orfs_msg_free(&m);
	return ret;
}

/* How long one try of a request may take. */
unsigned long orfs_timeout(struct orfs_sb *sbi)
{
	return msecs_to_jiffies(sbi->opts.timeo * 100);
}

/* SESSION on a new connection: the same client id, so replays are recognised. */
static int orfs_session_on(struct orfs_sb *sbi, struct knet_ep *ep)
{
	struct orfs_session_rep rep;
	struct knet_request rq = {};
	struct knet_limits lim;
	struct orfs_msg m;
	__le64 id = cpu_to_le64(sbi->client_id);
	ktime_t start = ktime_get();
	bool answered, restarted, revoked;
	u64 boot;
	int ret;

	ret = orfs_msg_init(&m, sbi, sizeof(struct orfs_req) + sizeof(id));
	if (ret)
		return ret;
	orfs_msg_put(&m, &id, sizeof(id));
	rq.opcode = ORFS_OP_SESSION;
	rq.body = m.buf;
	rq.body_len = m.len;
	rq.reply = &rep;
	rq.reply_max = sizeof(rep);
	ret = knet_call(ep, &rq, orfs_timeout(sbi));
	answered = !ret;
	if (answered && rq.status)
		ret = orfs_status_errno(rq.status);
	orfs_stats_call(sbi, ORFS_OP_SESSION, start, ret, answered, m.len,
			answered ? rq.reply_len : 0);
	orfs_msg_free(&m);
	if (ret)
		return ret;
	/* A server older than the flags sends none. */
	if (rq.reply_len < offsetof(struct orfs_session_rep, flags))
		return -EPROTO;
	if (rq.reply_len < sizeof(rep))
		rep.flags = 0;
	/*
	 * The first of the mount's connections to see a restart takes the
	 * locks back; each hears the server's word that it dropped them, the
	 * first acts. From then until the locks were asked back, no WRITE is
	 * sent (orfs_admit()): one made before might be under a lock lost.
	 */
	spin_lock(&sbi->reclaim_lock);
	boot = sbi->server_boot;
	sbi->server_boot = le64_to_cpu(rep.server_boot);
	restarted = boot && boot != sbi->server_boot;
	revoked = !restarted && (le32_to_cpu(rep.flags) & ORFS_SESSION_LOCKS_REVOKED) &&
		  !test_and_set_bit(0, &sbi->revoke_told);
	if (revoked)
		sbi->revoked = true;
	if ((restarted || revoked) && !sbi->dying && !sbi->opts.local_locks) {
		WRITE_ONCE(sbi->reclaim_seq, sbi->reclaim_seq + 1);
		sbi->reclaim_xid = atomic64_read(&sbi->xid);
		queue_work(system_long_wq, &sbi->reclaim_work);
	}
	spin_unlock(&sbi->reclaim_lock);
	WRITE_ONCE(sbi->lock_hold, !!(le32_to_cpu(rep.flags) & ORFS_SESSION_LOCK_HOLD));
	WRITE_ONCE(sbi->verf_ok, !!(le32_to_cpu(rep.flags) & ORFS_SESSION_VERF));
	if (restarted)
		pr_info("server %pISc restarted\n", &sbi->addr);
	if (revoked)
		pr_warn("%pISc: this client was cut off for longer than the server's lease, and its locks were given to others\n",
			&sbi->addr);
	knet_ep_limits(ep, &lim);
	sbi->inline_max = lim.inline_max;
	sbi->rsize = min_not_zero(min_not_zero(sbi->opts.rsize, lim.max_io),
				  le32_to_cpu(rep.max_read));
	sbi->wsize = min_not_zero(min_not_zero(sbi->opts.wsize, lim.max_io),
				  le32_to_cpu(rep.max_write));
	return 0;
}

/*
 * knet_group_ops.setup: SESSION on each of the connections, new or made
 * again. Answers that do not parse make a failed try, as a server that
 * does not answer: a mount never gives up on its server (a soft mount's
 * calls give up, by their own tries).
 */
static int orfs_setup(struct knet_group *g, struct knet_mq *mq)
{
	struct orfs_sb *sbi = g->priv;
	unsigned int i;
	int ret;

	for (i = 0; i < mq->nr; i++) {
		ret = orfs_session_on(g->priv, mq->q[i]);
		if (ret)
			return ret == -EPROTO ? -EIO : ret;
	}
	WRITE_ONCE(sbi->transport, knet_ep_transport(mq->q[0]));
	return 0;
}

static const struct knet_group_ops orfs_group_ops = {
	.setup		= orfs_setup,
	.admit		= orfs_admit,
	.admit_wait	= orfs_admit_wait,
};

/**
 * orfs_conn_get() - the connection for a request
 * @sbi: the mount
 *
 * knet_group_pick(): the least busy. A request is sent again on the
 * connection it was given (the server's replay cache is shared by all the
 * connections of a client id).
 *
 * Context: any.
 * Return: the connection's index, counted busy until orfs_conn_put().
 */
unsigned int orfs_conn_get(struct orfs_sb *sbi)
{
	unsigned int conn = knet_group_pick(&sbi->g);

	atomic64_inc(&sbi->conn_calls[conn]);
	return conn;
}

/**
 * orfs_conn_put() - a request of orfs_conn_get()'s connection is over
 * @sbi: the mount
 * @conn: the index it returned
 *
 * Context: any (softirq for a READ that ends there).
 */
void orfs_conn_put(struct orfs_sb *sbi, unsigned int conn)
{
	knet_group_unpick(&sbi->g, conn);
}

/**
 * orfs_connect() - open the mount's connections with the server
 * @sbi: the mount, its address, export and options set
 *
 * Connects nconnect= connections as one knet group, opens a session on
 * each and puts the group in use: from then on knet recovers them.
 *
 * Context: process context, before the mount is visible.
 * Return: 0, -ENOENT (no such export), -EACCES (client not allowed), or
 * another connection error; on an error nothing is left open.
 */
int orfs_connect(struct orfs_sb *sbi)
{
	struct knet_group *g = &sbi->g;
	int reason, ret;

	g->params = (struct knet_ep_params){
		.addr = sbi->addr,
		.transport = sbi->opts.transport,
		.digests = sbi->opts.digests,
		.src = sbi->opts.srcaddr,
		.service = KNET_SVC_FILE,
		.name = sbi->export,
		.timeout_ms = 5000,
		.request_timeout_ms = sbi->opts.timeo * 100,
		/*
		 * A dead server is found while the mount is idle too, and
		 * the server, which closes connections silent for its
		 * idle_timeout (300 s by default), hears from us in time.
		 */
		.keepalive_ms = min(sbi->opts.timeo * 50, ORFS_KEEPALIVE_MAX_MS),
		.secret = sbi->secret.len ? &sbi->secret : NULL,
	};
	g->nr = sbi->opts.nconnect;
	g->loss_timeout = KNET_LOSS_FOREVER;
	g->tries = sbi->opts.soft ? sbi->opts.retrans : 0;
	g->timeout = orfs_timeout(sbi);
	g->ops = &orfs_group_ops;
	g->priv = sbi;
	snprintf(g->name, sizeof(g->name), KBUILD_MODNAME ": %s", sbi->export);
	ret = knet_group_open(g, &reason);
	if (ret == -ECONNREFUSED && reason)
		pr_warn_ratelimited("%pISc: export '%s' refused: %s\n", &sbi->addr,
				    sbi->export, knet_reject_str(reason));
	else if (ret)
		pr_warn_ratelimited("%pISpc: cannot connect for export '%s': %pe%s%s\n",
				    &sbi->addr, sbi->export, ERR_PTR(ret),
				    *knet_connect_hint(ret, sbi->opts.transport) ? ": " : "",
				    knet_connect_hint(ret, sbi->opts.transport));
	if (ret == -ECONNREFUSED && reason == KNET_REJ_NOENT)
		return -ENOENT;
	if (ret == -ECONNREFUSED && (reason == KNET_REJ_ACCESS || reason == KNET_REJ_AUTH))
		return -EACCES;
	if (ret)
		return ret;
	sbi->connected = true;
	ret = orfs_setup(g, knet_group_mq(g));
	if (ret) {
		orfs_disconnect(sbi);
		return ret;
	}
	knet_group_start(g);
	return 0;
}

/**
 * orfs_abort() - make every call of the mount fail now (umount -f)
 * @sbi: the mount
 *
 * Context: any process context; never sleeps.
 */
void orfs_abort(struct orfs_sb *sbi)
{
	if (sbi->connected)
		knet_group_abort(&sbi->g);
}

/**
 * orfs_disconnect() - close the mount's connections, if they are open
 * @sbi: the mount; no call may be running
 *
 * Context: process context, may sleep.
 */
void orfs_disconnect(struct orfs_sb *sbi)
{
	if (!sbi->connected)
		return;
	knet_group_stop(&sbi->g, false);
	knet_group_close(&sbi->g);
	sbi->connected = false;
}

/**
 * orfs_rpc() - send a request and wait for its answer
 * @sbi: the mount
 * @op: the operation
 * @m: the body, from orfs_msg_init()
 * @reply: where the reply body goes
 * @reply_min: bytes the reply must have at least when the call succeeds
 * @reply_max: room at @reply
 * @reply_len: out, may be NULL: bytes of reply
 * @mem: the data, or NULL
 * @dir: its direction
 *
 * Context: process context, may sleep; killable.
 * Return: 0, the server's error as a negative errno, -EIO (soft mount
 * out of tries, a reply too short, a forced unmount), -EINTR.
 */
int orfs_rpc(struct orfs_sb *sbi, u16 op, struct orfs_msg *m, void *reply, u32 reply_min,
	     u32 reply_max, u32 *reply_len, const struct knet_mem *mem, enum knet_dir dir)
{
	ktime_t start = ktime_get();
	unsigned int waits = 0;
	struct knet_request rq;
	unsigned int conn;
	bool answered = false;
	int ret;

	if (m->err)
		return m->err;
	conn = orfs_conn_get(sbi);
	for (;;) {
		memset(&rq, 0, sizeof(rq));
		rq.opcode = op;
		rq.body = m->buf;
		rq.body_len = m->len;
		rq.mem = mem;
		rq.dir = dir;
		rq.reply = reply;
		rq.reply_max = reply_max;
		ret = knet_group_call(&sbi->g, conn, &rq);
		if (ret || rq.status != EINPROGRESS)
			break;
		/*
		 * Our first try of this xid still runs on the server: ask again
		 * every 100 ms; a soft mount gives up after timeo x retrans, as
		 * for a server that does not answer at all.
		 */
		ret = -EIO;
		if (sbi->opts.soft && ++waits >= sbi->opts.timeo * sbi->opts.retrans)
			break;
		ret = knet_sleep_killable(100);
		if (ret)
			break;
	}
	orfs_conn_put(sbi, conn);
	if (ret) {
		/* No reply came, or none that counts. */
		rq.reply_len = 0;
	} else if (rq.status) {
		ret = orfs_status_errno(rq.status);
		answered = true;
	} else if (rq.reply_len < reply_min) {
		pr_warn_ratelimited("%pISc: short answer to %u (%u bytes)\n", &sbi->addr,
				    op, rq.reply_len);
		ret = -EIO;
	} else {
		answered = true;
	}
	orfs_stats_call(sbi, op, start, ret, answered, m->len, rq.reply_len);
	if (ret)
		return ret;
	if (reply_len)
		*reply_len = rq.reply_len;
	return 0;
}

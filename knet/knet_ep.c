// SPDX-License-Identifier: GPL-2.0-only
/*
 * knet endpoints: one reliable connection to a server, and requests whose
 * memory the server may touch only while they run.
 *
 * A request takes a slot and a credit, builds its message in the slot's
 * send buffer and, when it has data too large to travel inline, registers
 * that memory with a fast registration (FRWR) chained before the SEND: the
 * server gets an rkey that exists for this request only. When the reply
 * arrives, the rkey is invalidated (LOCAL_INV) before the caller is woken,
 * so the server can never reach the memory after the request returns. A
 * reply that lies (unknown tag, bad framing, more data than asked) breaks
 * the endpoint: the queue pair is disconnected, which fences every rkey,
 * and every request fails. A request whose key the server may still hold
 * when the endpoint fails (its reply never came) ends only once the queue
 * pair is in the error state, where no RDMA reaches it (the fence).
 *
 * Completion: knet_submit() never sleeps and ends each request with its
 * callback (softirq context) or, without one, on the endpoint's done list
 * for knet_ep_wait_any() (the server-style loop). knet_call() waits for
 * one request: killable, with a time-out; a time-out or a fatal signal
 * disconnects the endpoint and still waits for the flush, so that memory
 * is never returned to the caller while the server could write it.
 */
#define pr_fmt(fmt) "knet: " fmt

#include <linux/atomic.h>
#include <linux/completion.h>
#include <linux/debugfs.h>
#include <linux/ktime.h>
#include <linux/seq_file.h>
#include <linux/highmem.h>
#include <linux/uio.h>
#include <linux/scatterlist.h>
#include <linux/sizes.h>
#include <linux/overflow.h>
#include <linux/slab.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

#include "knet.h"
#include "regcache.h"

#define CREATE_TRACE_POINTS
#include "knet_trace.h"

#define KNET_RECV_DEPTH		32
#define KNET_SLOTS		32
#define KNET_MSG_SIZE		8192
#define KNET_MAX_PAGES		(SZ_1M / PAGE_SIZE + 1)
#define KNET_CM_TIMEOUT_MS	5000

#define KNET_LAT_BUCKETS	12	/* <16us, <32us, ... <16ms, more */

#define EV_SEND		0x1
#define EV_REPLY	0x2
#define EV_INV		0x4
#define EV_FENCE	0x8	/* the queue pair in the error state */

struct knet_rx {
	struct ib_cqe		cqe;
	struct knet_ep		*ep;
	void			*buf;
	u64			dma;
};

struct knet_slot {
	struct knet_ep		*ep;
	unsigned int		idx;
	u32			gen;
	bool			busy;
	bool			finishing;	/* knet_slot_finish() owns it */
	unsigned int		need;		/* EV_* still awaited */
	int			err;		/* transport error, negative */
	struct ib_cqe		send_cqe;
	struct ib_cqe		reg_cqe;
	struct ib_cqe		inv_cqe;
	void			*msg;
	u64			msg_dma;
	struct ib_mr		*mr;
	bool			mr_used;
	bool			mr_live;	/* the server may hold its key */
	bool			inline_in;	/* data asked inline in the reply */
	struct scatterlist	*sg;
	unsigned int		sg_orig;	/* entries mapped */
	int			sg_nents;
	unsigned int		usg;		/* entries over cached user pages */
	enum dma_data_direction	dma_dir;
	struct knet_request	*rq;
	u64			t0;		/* when it was posted, ns */
};

struct knet_ep {
	struct rdma_cm_id	*cm_id;
	struct ib_device	*dev;
	struct knet_device	*kdev;		/* knet's @dev, once attached */
	struct list_head	dev_node;	/* in its device's endpoints */
	void			(*removed)(void *priv);	/* knet_ep_params */
	void			*priv;
	struct work_struct	removed_work;	/* calls @removed */
	struct ib_pd		*pd;
	struct ib_cq		*cq;
	struct regcache		*rc;		/* the device's, for user memory */
	spinlock_t		lock;		/* slots, credits, dead, done_list, in_flight */
	wait_queue_head_t	wait;		/* for a free slot and a credit */
	struct list_head	done_list;	/* finished requests without callback */
	wait_queue_head_t	done_wait;
	struct completion	cm_done;
	int			cm_status;
	int			reject_reason;
	struct knet_limits	lim;
	int			credits;
	unsigned int		in_flight;	/* busy slots */
	unsigned int		in_flight_peak;
	bool			dead;
	bool			connected;
	bool			server_auth;	/* the server asked for the authentication */
	bool			disconnect;	/* fail_work is to disconnect */
	bool			fenced;		/* the queue pair is in the error state */
	struct work_struct	fail_work;
	struct delayed_work	timeo_work;	/* looks for requests without answer */
	unsigned long		req_timeout;	/* jiffies; 0: none */
	unsigned long		keepalive;	/* jiffies of silence before a NOP; 0: none */
	unsigned long		last_rx;	/* jiffies of the last reply */
	struct knet_request	ka_rq;		/* the keep-alive NOP */
	atomic_t		ka_busy;	/* ka_rq is in flight */
	unsigned int		comp_vector;
	struct knet_session	*session;	/* the session it serves, or NULL */
	struct knet_rx		rx[KNET_RECV_DEPTH];
	struct knet_slot	slot[KNET_SLOTS];
	unsigned int		max_pages;
	/* Counters, in debugfs knet/endpoints/<id>/stats. */
	unsigned int		id;
	struct dentry		*dir;
	atomic64_t		requests;
	atomic64_t		bytes_inline;
	atomic64_t		bytes_rdma;
	atomic64_t		credit_stalls;
	atomic64_t		errors;
	atomic64_t		timeouts;
	atomic64_t		keepalives;
	atomic64_t		fences;		/* requests that waited for the fence */
	atomic64_t		lat_hist[KNET_LAT_BUCKETS];	/* request latency */
};

static atomic_t knet_ep_ids = ATOMIC_INIT(0);

static void knet_ep_fail(struct knet_ep *ep, int err);

/*
 * Under ep->lock: is slot S over (nothing more to await)? If so, claim it
 * for knet_slot_finish(), to be called once the lock is dropped.
 */
static bool knet_slot_over(struct knet_slot *s)
{
	if (!s->busy || s->need || s->finishing)
		return false;
	s->finishing = true;
	return true;
}

/* Give back the regcache entries of a request's user memory. */
static void knet_unpin(struct knet_request *rq)
{
	while (rq->npin) {
		regcache_put(rq->pin[--rq->npin]);
		knet_obj_add(KNET_OBJ_PIN, -1);
	}
}

/* The request of S is over: give back its memory and tell its owner. */
static void knet_slot_finish(struct knet_slot *s)
{
	struct knet_ep *ep = s->ep;
	struct knet_request *rq = s->rq;
	unsigned long flags;
	unsigned int i;
	u64 us;

	if (s->sg_nents) {
		ib_dma_unmap_sg(ep->dev, s->sg, s->sg_orig, s->dma_dir);
		knet_obj_add(KNET_OBJ_MAP, -1);
	}
	s->sg_nents = 0;
	if (s->dma_dir == DMA_FROM_DEVICE)
		for (i = 0; i < s->usg; i++)
			ib_dma_sync_single_for_cpu(ep->dev, sg_dma_address(&s->sg[i]),
						   sg_dma_len(&s->sg[i]), DMA_BIDIRECTIONAL);
	s->usg = 0;
	knet_unpin(rq);
	rq->error = s->err;
	us = div_u64(ktime_get_ns() - s->t0, NSEC_PER_USEC);
	if (s->err) {
		atomic64_inc(&ep->errors);
	} else {
		unsigned int b = us < 16 ? 0 : min_t(unsigned int, ilog2(us) - 3,
						     KNET_LAT_BUCKETS - 1);

		atomic64_inc(&ep->lat_hist[b]);
	}
	trace_knet_complete(ep->id, s->idx | (s->gen << 8), s->err, rq->status, us);
	spin_lock_irqsave(&ep->lock, flags);
	s->busy = false;
	s->finishing = false;
	s->rq = NULL;
	ep->in_flight--;
	if (!rq->done)
		list_add_tail(&rq->node, &ep->done_list);
	spin_unlock_irqrestore(&ep->lock, flags);
	wake_up(&ep->wait);
	if (rq->done)
		rq->done(rq);
	else
		wake_up(&ep->done_wait);
}

/*
 * The queue pair of EP is in the error state (or gone): no key of it is
 * reachable. The requests that waited for that end now.
 */
static void knet_fenced(struct knet_ep *ep)
{
	DECLARE_BITMAP(over, KNET_SLOTS);
	unsigned int i, n = 0;
	unsigned long flags;

	bitmap_zero(over, KNET_SLOTS);
	spin_lock_irqsave(&ep->lock, flags);
	ep->fenced = true;
	for (i = 0; i < KNET_SLOTS; i++) {
		struct knet_slot *s = &ep->slot[i];

		if (!s->busy || !(s->need & EV_FENCE))
			continue;
		s->need &= ~EV_FENCE;
		s->mr_live = false;
		n++;
		if (knet_slot_over(s))
			__set_bit(i, over);
	}
	spin_unlock_irqrestore(&ep->lock, flags);
	if (n) {
		atomic64_add(n, &ep->fences);
		pr_info_ratelimited("%u requests ended once the server could no longer reach their memory\n",
				    n);
	}
	for_each_set_bit(i, over, KNET_SLOTS)
		knet_slot_finish(&ep->slot[i]);
}

static void knet_fail_work(struct work_struct *w)
{
	struct knet_ep *ep = container_of(w, struct knet_ep, fail_work);
	struct ib_qp_attr attr = { .qp_state = IB_QPS_ERR };
	unsigned long flags;
	bool disconnect;
	int ret;

	spin_lock_irqsave(&ep->lock, flags);
	disconnect = ep->disconnect;
	ep->disconnect = false;
	spin_unlock_irqrestore(&ep->lock, flags);
	if (disconnect)
		rdma_disconnect(ep->cm_id);
	/*
	 * rdma_disconnect() moves an InfiniBand or RoCE queue pair to the
	 * error state itself; iWARP's closes first. In the error state the
	 * queue pair takes no RDMA: every key of it is out of the server's
	 * reach. A device that refuses is gone (removed, reset), and so is
	 * any access through it.
	 */
	ret = ib_modify_qp(ep->cm_id->qp, &attr, IB_QP_STATE);
	if (ret)
		pr_warn_ratelimited("queue pair to the error state: %d\n", ret);
	knet_fenced(ep);
}

static void knet_removed_work(struct work_struct *w)
{
	struct knet_ep *ep = container_of(w, struct knet_ep, removed_work);

	ep->removed(ep->priv);
}

/*
 * A request without an answer after the endpoint's request time-out means
 * a server that hangs: the endpoint fails (every request ends, the caller
 * may reconnect) rather than leaving its requests waiting forever.
 */
static void knet_ka_done(struct knet_request *rq)
{
	struct knet_ep *ep = rq->priv;

	atomic_set(&ep->ka_busy, 0);
}

/* Silent for the keep-alive time and nothing in flight: ask with a NOP. */
static void knet_keepalive(struct knet_ep *ep)
{
	if (!ep->keepalive || time_before(jiffies, READ_ONCE(ep->last_rx) + ep->keepalive) ||
	    atomic_cmpxchg(&ep->ka_busy, 0, 1))
		return;
	memset(&ep->ka_rq, 0, sizeof(ep->ka_rq));
	ep->ka_rq.opcode = KNET_OP_NOP;
	ep->ka_rq.done = knet_ka_done;
	ep->ka_rq.priv = ep;
	if (knet_submit(ep, &ep->ka_rq))
		atomic_set(&ep->ka_busy, 0);	/* busy with requests: they tell */
	else
		atomic64_inc(&ep->keepalives);
}

static void knet_timeo_work(struct work_struct *w)
{
	struct knet_ep *ep = container_of(to_delayed_work(w), struct knet_ep, timeo_work);
	u64 now, limit = jiffies_to_nsecs(ep->req_timeout);
	unsigned long period;
	bool expired = false;
	unsigned long flags;
	unsigned int i;

	spin_lock_irqsave(&ep->lock, flags);
	if (ep->dead) {
		spin_unlock_irqrestore(&ep->lock, flags);
		return;
	}
	/*
	 * Read under the lock that a slot's start is set under: read before
	 * it, a request started in between would look 2^64 ns old.
	 */
	now = ktime_get_ns();
	for (i = 0; i < KNET_SLOTS; i++) {
		struct knet_slot *s = &ep->slot[i];

		if (s->busy && (s->need & EV_REPLY) && now - s->t0 > limit)
			expired = true;
	}
	spin_unlock_irqrestore(&ep->lock, flags);
	if (expired) {
		pr_warn_ratelimited("no answer within %u ms: disconnecting\n",
				    jiffies_to_msecs(ep->req_timeout));
		atomic64_inc(&ep->timeouts);
		knet_ep_fail(ep, -ETIMEDOUT);
		return;
	}
	knet_keepalive(ep);
	period = min_not_zero(ep->req_timeout, ep->keepalive) / 4;
	schedule_delayed_work(&ep->timeo_work, max_t(unsigned long, period, HZ / 10));
}

/* The endpoint is broken: wake everybody and disconnect (not from here). */
static void knet_ep_fail(struct knet_ep *ep, int err)
{
	DECLARE_BITMAP(over, KNET_SLOTS);
	unsigned long flags;
	bool work = false;
	unsigned int i;

	bitmap_zero(over, KNET_SLOTS);
	spin_lock_irqsave(&ep->lock, flags);
	if (!ep->dead) {
		trace_knet_ep_fail(ep->id, err);
		ep->dead = true;
		ep->disconnect = ep->connected;
		work = ep->connected;
	}
	/*
	 * No reply will come now; sends and invalidations still flush. A
	 * request whose memory the server may still reach (registered, not
	 * invalidated, no invalidation under way) waits for the fence.
	 */
	for (i = 0; i < KNET_SLOTS; i++) {
		struct knet_slot *s = &ep->slot[i];

		if (!s->busy)
			continue;
		if (s->need & EV_REPLY) {
			s->need &= ~EV_REPLY;
			if (!s->err)
				s->err = err;
			if (s->mr_live && !(s->need & EV_INV) && !ep->fenced)
				s->need |= EV_FENCE;
			if (knet_slot_over(s))
				__set_bit(i, over);
		}
		if (s->need & EV_FENCE)
			work = true;
	}
	if (work)
		schedule_work(&ep->fail_work);
	spin_unlock_irqrestore(&ep->lock, flags);
	for_each_set_bit(i, over, KNET_SLOTS)
		knet_slot_finish(&ep->slot[i]);
	wake_up_all(&ep->wait);
	wake_up_all(&ep->done_wait);
}

static void knet_slot_event(struct knet_slot *s, unsigned int ev, int err)
{
	struct knet_ep *ep = s->ep;
	unsigned long flags;
	bool over;

	spin_lock_irqsave(&ep->lock, flags);
	s->need &= ~ev;
	if (err && !s->err)
		s->err = err;
	over = knet_slot_over(s);
	spin_unlock_irqrestore(&ep->lock, flags);
	if (over)
		knet_slot_finish(s);
}

static void knet_send_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct knet_slot *s = container_of(wc->wr_cqe, struct knet_slot, send_cqe);

	if (wc->status != IB_WC_SUCCESS) {
		if (wc->status != IB_WC_WR_FLUSH_ERR)
			pr_err_ratelimited("send failed: %s\n", ib_wc_status_msg(wc->status));
		knet_ep_fail(s->ep, -ECONNRESET);
	}
	knet_slot_event(s, EV_SEND, wc->status == IB_WC_SUCCESS ? 0 : -ECONNRESET);
}

static void knet_reg_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct knet_slot *s = container_of(wc->wr_cqe, struct knet_slot, reg_cqe);

	/* Unsignaled: only failures come here. */
	if (wc->status != IB_WC_WR_FLUSH_ERR)
		pr_err_ratelimited("memory registration failed: %s\n",
				   ib_wc_status_msg(wc->status));
	knet_ep_fail(s->ep, -EIO);
}

static void knet_inv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct knet_slot *s = container_of(wc->wr_cqe, struct knet_slot, inv_cqe);

	/*
	 * Done, the key is invalid; failed or flushed, the queue pair is in
	 * the error state: either way out of the server's reach.
	 */
	WRITE_ONCE(s->mr_live, false);
	if (wc->status != IB_WC_SUCCESS) {
		if (wc->status != IB_WC_WR_FLUSH_ERR)
			pr_err_ratelimited("invalidation failed: %s\n",
					   ib_wc_status_msg(wc->status));
		knet_ep_fail(s->ep, -EIO);
	}
	knet_slot_event(s, EV_INV, wc->status == IB_WC_SUCCESS ? 0 : -EIO);
}

static int knet_post_recv(struct knet_ep *ep, struct knet_rx *rx)
{
	struct ib_sge sge = {
		.addr = rx->dma,
		.length = KNET_MSG_SIZE,
		.lkey = ep->pd->local_dma_lkey,
	};
	struct ib_recv_wr wr = {
		.wr_cqe = &rx->cqe,
		.sg_list = &sge,
		.num_sge = 1,
	};

	ib_dma_sync_single_for_device(ep->dev, rx->dma, KNET_MSG_SIZE, DMA_FROM_DEVICE);
	return ib_post_recv(ep->cm_id->qp, &wr, NULL);
}

/* Bytes of entry I of M, before the descriptor's skip and length apply. */
static size_t knet_mem_entry_len(const struct knet_mem *m, unsigned int i)
{
	switch (m->type) {
	case KNET_MEM_KVEC:
		return m->kvec[i].iov_len;
	case KNET_MEM_BVEC:
		return m->bvec[i].bv_len;
	default:
		return m->iov[i].iov_len;
	}
}

/*
 * Walk the data of M: for each non-empty piece, FN(M, entry, offset in the
 * entry, bytes, ARG). Stops at the first non-zero return, which it returns;
 * -EINVAL when the entries hold less than M->len bytes.
 */
static int knet_mem_walk(const struct knet_mem *m,
			 int (*fn)(const struct knet_mem *m, unsigned int i, size_t off,
				   size_t n, void *arg),
			 void *arg)
{
	size_t done = 0;
	unsigned int i;
	int ret;

	for (i = 0; i < m->nr && done < m->len; i++) {
		size_t off = i ? 0 : m->skip;
		size_t raw = knet_mem_entry_len(m, i);
		size_t n;

		if (off >= raw)
			continue;
		n = min(raw - off, m->len - done);
		ret = fn(m, i, off, n, arg);
		if (ret)
			return ret;
		done += n;
	}
	return done == m->len ? 0 : -EINVAL;
}

struct knet_copy {
	u8			*buf;
	bool			to_mem;
	struct knet_request	*pinned;	/* user memory through its pins */
	unsigned int		pin;
};

/* Copy N bytes of BUF into user memory at ADDR through the pinned pages of E. */
static void knet_copy_to_pins(struct regcache_entry *e, unsigned long addr, const u8 *buf,
			      size_t n)
{
	while (n) {
		size_t po = offset_in_page(addr);
		size_t k = min(n, PAGE_SIZE - po);

		memcpy_to_page(regcache_page(e, addr), po, buf, k);
		addr += k;
		buf += k;
		n -= k;
	}
}

static int knet_copy_piece(const struct knet_mem *m, unsigned int i, size_t off, size_t n,
			   void *arg)
{
	struct knet_copy *c = arg;

	if (m->type == KNET_MEM_KVEC) {
		void *p = m->kvec[i].iov_base + off;

		if (c->to_mem)
			memcpy(p, c->buf, n);
		else
			memcpy(c->buf, p, n);
	} else if (m->type == KNET_MEM_BVEC) {
		size_t pos = m->bvec[i].bv_offset + off, left = n;
		struct page *page = m->bvec[i].bv_page;

		/* A bvec may span pages: copy page by page. */
		while (left) {
			struct page *pg = nth_page(page, pos >> PAGE_SHIFT);
			size_t po = offset_in_page(pos);
			size_t k = min(left, PAGE_SIZE - po);

			if (c->to_mem)
				memcpy_to_page(pg, po, c->buf + (n - left), k);
			else
				memcpy_from_page(c->buf + (n - left), pg, po, k);
			pos += k;
			left -= k;
		}
	} else if (c->pinned) {
		/* Any context: the pages the request pinned, one entry a piece. */
		if (!c->to_mem || c->pin >= c->pinned->npin)
			return -EINVAL;
		knet_copy_to_pins(c->pinned->pin[c->pin++], (unsigned long)m->iov[i].iov_base + off,
				  c->buf, n);
	} else {
		/* Otherwise user memory is copied only by its owner, in process context. */
		u8 __user *u = (u8 __user *)m->iov[i].iov_base + off;

		if (c->to_mem ? copy_to_user(u, c->buf, n) : copy_from_user(c->buf, u, n))
			return -EFAULT;
	}
	c->buf += n;
	return 0;
}

/*
 * Copy between the data of a descriptor and a linear buffer. User memory
 * is reached through the pins of PINNED when set (into it only), else
 * with copy_{to,from}_user() in its owner's context.
 */
static int knet_mem_copy(const struct knet_mem *m, void *buf, size_t len, bool to_mem,
			 struct knet_request *pinned)
{
	struct knet_mem part = *m;
	struct knet_copy c = { .buf = buf, .to_mem = to_mem, .pinned = pinned };

	if (m->type == KNET_MEM_UVEC && m->iov == &m->one)
		part.iov = &part.one;
	part.len = min(len, m->len);
	return knet_mem_walk(&part, knet_copy_piece, &c);
}

/**
 * knet_mem_from_iter() - describe the data of an iov_iter
 * @m: the descriptor to fill; it refers to @it's arrays, which must stay
 *	valid while @m is used, and must not be copied (it may refer to
 *	itself)
 * @it: user (ubuf, iovec), kernel (kvec) or page (bvec) memory; not
 *	advanced
 * @len: bytes wanted from @it's position on; less when @it holds less
 *
 * User memory is taken as the calling process's.
 *
 * Return: 0, or -EINVAL for an iterator of another kind or without data.
 */
int knet_mem_from_iter(struct knet_mem *m, const struct iov_iter *it, size_t len)
{
	memset(m, 0, sizeof(*m));
	m->len = min(len, iov_iter_count(it));
	m->skip = it->iov_offset;
	m->nr = it->nr_segs;
	if (!m->len)
		return -EINVAL;
	if (iter_is_ubuf(it)) {
		m->type = KNET_MEM_UVEC;
		m->one.iov_base = it->ubuf;
		m->one.iov_len = it->iov_offset + iov_iter_count(it);
		m->iov = &m->one;
		m->nr = 1;
	} else if (iter_is_iovec(it)) {
		m->type = KNET_MEM_UVEC;
#ifdef KNET_HAVE_ITER_IOV
		m->iov = iter_iov(it);
#else
		m->iov = it->iov;
#endif
	} else if (iov_iter_is_kvec(it)) {
		m->type = KNET_MEM_KVEC;
		m->kvec = it->kvec;
	} else if (iov_iter_is_bvec(it)) {
		m->type = KNET_MEM_BVEC;
		m->bvec = it->bvec;
	} else {
		return -EINVAL;
	}
	return 0;
}
EXPORT_SYMBOL_GPL(knet_mem_from_iter);

static struct knet_slot *knet_find_slot(struct knet_ep *ep, u32 tag)
{
	unsigned int idx = tag & 0xff;
	struct knet_slot *s;

	if (idx >= KNET_SLOTS)
		return NULL;
	s = &ep->slot[idx];
	if (!s->busy || s->gen != (tag >> 8) || !(s->need & EV_REPLY))
		return NULL;
	return s;
}

static void knet_recv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct knet_rx *rx = container_of(wc->wr_cqe, struct knet_rx, cqe);
	struct knet_ep *ep = rx->ep;
	const struct knet_hdr *h = rx->buf;
	struct knet_request *rq;
	struct knet_slot *s;
	u32 blen, ilen;
	unsigned long flags;
	bool broken = false, over;
	int err = 0;

	if (wc->status != IB_WC_SUCCESS) {
		if (wc->status != IB_WC_WR_FLUSH_ERR)
			pr_err_ratelimited("receive failed: %s\n", ib_wc_status_msg(wc->status));
		knet_ep_fail(ep, -ECONNRESET);
		return;
	}
	ib_dma_sync_single_for_cpu(ep->dev, rx->dma, KNET_MSG_SIZE, DMA_FROM_DEVICE);
	if (knet_hdr_check(h, wc->byte_len, 0) != KNET_HDR_OK || !(h->flags & KNET_HF_REPLY)) {
		pr_err_ratelimited("malformed reply from the server: disconnecting\n");
		knet_ep_fail(ep, -EPROTO);
		return;
	}

	WRITE_ONCE(ep->last_rx, jiffies);
	spin_lock_irqsave(&ep->lock, flags);
	s = knet_find_slot(ep, le32_to_cpu(h->tag));
	if (!s) {
		spin_unlock_irqrestore(&ep->lock, flags);
		pr_err_ratelimited("reply for no request (tag %#x): disconnecting\n",
				   le32_to_cpu(h->tag));
		knet_ep_fail(ep, -EPROTO);
		return;
	}
	rq = s->rq;
	/* A reply answers the operation asked, or it lies. */
	if (le16_to_cpu(h->opcode) != rq->opcode)
		err = -EPROTO;
	rq->status = le32_to_cpu(h->status);
	if (rq->status > KNET_STATUS_MAX || rq->status == KNET_STATUS_HOLE1 ||
	    rq->status == KNET_STATUS_HOLE2) {
		pr_warn_ratelimited("reply with status %u, which is no errno: taken as EIO\n",
				    rq->status);
		rq->status = EIO;
	}
	blen = le32_to_cpu(h->body_len);
	ilen = le32_to_cpu(h->inline_len);
	if (blen > rq->reply_max) {
		err = -EPROTO;
	} else {
		memcpy(rq->reply, (const u8 *)h + sizeof(*h), blen);
		rq->reply_len = blen;
	}
	if (ilen && (!s->inline_in || ilen > rq->mem->len)) {
		err = -EPROTO;
	} else if (ilen) {
		if (knet_mem_copy(rq->mem, (u8 *)h + sizeof(*h) + blen, ilen, true,
				  rq->mem->type == KNET_MEM_UVEC ? rq : NULL))
			err = -EPROTO;
		rq->inline_len = ilen;
	}
	ep->credits = min(ep->credits + le16_to_cpu(h->credits), KNET_SLOTS);
	s->need &= ~EV_REPLY;
	if (err && !s->err)
		s->err = err;
	/* Fence the memory before the caller sees the answer. */
	if (s->mr_used && (wc->wc_flags & IB_WC_WITH_INVALIDATE) &&
	    wc->ex.invalidate_rkey == s->mr->rkey)
		s->mr_live = false;
	if (s->mr_live) {
		struct ib_send_wr inv = {
			.opcode = IB_WR_LOCAL_INV,
			.ex.invalidate_rkey = s->mr->rkey,
			.wr_cqe = &s->inv_cqe,
			.send_flags = IB_SEND_SIGNALED,
		};

		s->need |= EV_INV;
		if (ib_post_send(ep->cm_id->qp, &inv, NULL)) {
			/* The key stays valid: the failure below fences it. */
			s->need &= ~EV_INV;
			s->need |= EV_FENCE;
			if (!s->err)
				s->err = -EIO;
			broken = true;
		}
	}
	over = knet_slot_over(s);
	spin_unlock_irqrestore(&ep->lock, flags);
	if (over)
		knet_slot_finish(s);
	wake_up(&ep->wait);

	if (err)
		pr_err_ratelimited("reply that does not fit its request (operation, size): disconnecting\n");
	if (err || broken)
		knet_ep_fail(ep, err ? err : -EIO);
	else if (knet_post_recv(ep, rx))
		knet_ep_fail(ep, -EIO);
}

/* ---- counters --------------------------------------------------------- */

static int knet_ep_stats_show(struct seq_file *m, void *v)
{
	struct knet_ep *ep = m->private;
	unsigned int i;

	seq_printf(m, "peer %pISpc\n", &ep->cm_id->route.addr.dst_addr);
	seq_printf(m, "state %s\n", READ_ONCE(ep->dead) ? "dead" : "connected");
	seq_printf(m, "credits %d of %u\n", READ_ONCE(ep->credits), ep->lim.credits);
	seq_printf(m, "requests %lld\n", atomic64_read(&ep->requests));
	seq_printf(m, "in_flight %u\n", READ_ONCE(ep->in_flight));
	seq_printf(m, "in_flight_peak %u\n", READ_ONCE(ep->in_flight_peak));
	seq_printf(m, "bytes_inline %lld\n", atomic64_read(&ep->bytes_inline));
	seq_printf(m, "bytes_rdma %lld\n", atomic64_read(&ep->bytes_rdma));
	seq_printf(m, "credit_stalls %lld\n", atomic64_read(&ep->credit_stalls));
	seq_printf(m, "errors %lld\n", atomic64_read(&ep->errors));
	seq_printf(m, "timeouts %lld\n", atomic64_read(&ep->timeouts));
	seq_printf(m, "keepalives %lld\n", atomic64_read(&ep->keepalives));
	seq_printf(m, "fences %lld\n", atomic64_read(&ep->fences));
	if (ep->session) {
		seq_printf(m, "session_reconnects %d\n", atomic_read(&ep->session->reconnects));
		seq_printf(m, "session_resent %d\n", atomic_read(&ep->session->resent));
		seq_printf(m, "session_connect_failures %d\n",
			   atomic_read(&ep->session->connect_failures));
	}
	seq_puts(m, "latency_us");
	for (i = 0; i < KNET_LAT_BUCKETS - 1; i++)
		seq_printf(m, " <%u:%lld", 16U << i, atomic64_read(&ep->lat_hist[i]));
	seq_printf(m, " >=%u:%lld", 16U << (KNET_LAT_BUCKETS - 2),
		   atomic64_read(&ep->lat_hist[KNET_LAT_BUCKETS - 1]));
	seq_putc(m, '\n');
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(knet_ep_stats);

static void knet_ep_debugfs_add(struct knet_ep *ep)
{
	char name[16];

	ep->id = atomic_inc_return(&knet_ep_ids);
	snprintf(name, sizeof(name), "%u", ep->id);
	ep->dir = debugfs_create_dir(name, knet_debugfs_endpoints());
	debugfs_create_file("stats", 0444, ep->dir, ep, &knet_ep_stats_fops);
}

/* ---- connection ------------------------------------------------------ */

static int knet_parse_rep(struct knet_ep *ep, const u8 *data, u8 len)
{
	struct knet_cm_rep rep;

	/* libfabric's length byte, then our structure. */
	if (len < 1 + sizeof(rep) || data[0] < sizeof(rep))
		return -EPROTO;
	memcpy(&rep, data + 1, sizeof(rep));
	if (le16_to_cpu(rep.version) != KNET_PROTO_VERSION || !rep.credits)
		return -EPROTO;
	ep->lim.credits = min_t(u32, le16_to_cpu(rep.credits), KNET_SLOTS);
	ep->lim.inline_max = min_t(u32, le32_to_cpu(rep.inline_max),
				   KNET_MSG_SIZE - sizeof(struct knet_hdr) - 512);
	ep->lim.max_io = min_t(u32, le32_to_cpu(rep.max_io),
			       (ep->max_pages - 1) << PAGE_SHIFT);
	ep->lim.max_segs = le16_to_cpu(rep.max_segs);
	ep->credits = ep->lim.credits;
	ep->server_auth = le16_to_cpu(rep.flags) & KNET_CMF_AUTH;
	return 0;
}

static int knet_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct knet_ep *ep = id->context;
	const u8 *data;
	u8 len;

	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		ep->cm_status = 0;
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		ep->cm_status = knet_parse_rep(ep, ev->param.conn.private_data,
					       ev->param.conn.private_data_len);
		if (!ep->cm_status)
			ep->connected = true;
		break;
	case RDMA_CM_EVENT_REJECTED:
		data = rdma_consumer_reject_data(id, ev, &len);
		/*
		 * iWARP carries a reject's private data only in the peer's MPA
		 * reply, so any there is the server's; but siw reports that
		 * reply as -ECONNRESET, which the helper above counts as no
		 * consumer's reject on iWARP (it expects -ECONNREFUSED).
		 */
		if (!data && rdma_protocol_iwarp(id->device, id->port_num)) {
			data = ev->param.conn.private_data;
			len = ev->param.conn.private_data_len;
		}
		ep->reject_reason = 0;
		if (data && len >= 1 + sizeof(struct knet_cm_rej)) {
			struct knet_cm_rej rej;

			memcpy(&rej, data + 1, sizeof(rej));
			ep->reject_reason = le16_to_cpu(rej.reason);
		}
		ep->cm_status = -ECONNREFUSED;
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
		ep->cm_status = ev->status ? ev->status : -EHOSTUNREACH;
		if (ep->cm_status > 0)
			ep->cm_status = -ECONNREFUSED;
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
	case RDMA_CM_EVENT_ADDR_CHANGE:
	case RDMA_CM_EVENT_TIMEWAIT_EXIT:
		/* Our own disconnect (destroy, or a failure already logged) is quiet. */
		if (ev->event != RDMA_CM_EVENT_TIMEWAIT_EXIT && !READ_ONCE(ep->dead))
			pr_info("connection to %pISpc lost (%s)\n", &id->route.addr.dst_addr,
				rdma_event_msg(ev->event));
		knet_ep_fail(ep, -ECONNRESET);
		if (ev->event == RDMA_CM_EVENT_TIMEWAIT_EXIT || READ_ONCE(ep->connected))
			return 0;
		/*
		 * Still connecting (the device went between the route and the
		 * queue pair): that step ends now, not at its time-out, and the
		 * connect frees the ID, which the device's removal waits for.
		 */
		ep->cm_status = -ENETUNREACH;
		break;
	default:
		return 0;
	}
	complete(&ep->cm_done);
	return 0;
}

/* Start a step of the connection and wait for its event. */
static int knet_cm_wait(struct knet_ep *ep, int ret)
{
	long left;

	if (ret)
		return ret;
	left = wait_for_completion_killable_timeout(&ep->cm_done,
						    msecs_to_jiffies(KNET_CM_TIMEOUT_MS + 1000));
	if (left < 0)
		return left;
	if (!left)
		return -ETIMEDOUT;
	reinit_completion(&ep->cm_done);
	return ep->cm_status;
}

static void knet_free_buffers(struct knet_ep *ep)
{
	unsigned int i;

	for (i = 0; i < KNET_SLOTS; i++) {
		struct knet_slot *s = &ep->slot[i];

		if (s->mr) {
			ib_dereg_mr(s->mr);
			knet_obj_add(KNET_OBJ_MR, -1);
		}
		if (s->msg_dma)
			ib_dma_unmap_single(ep->dev, s->msg_dma, KNET_MSG_SIZE, DMA_TO_DEVICE);
		kfree(s->msg);
		kfree(s->sg);
	}
	for (i = 0; i < KNET_RECV_DEPTH; i++) {
		if (ep->rx[i].dma)
			ib_dma_unmap_single(ep->dev, ep->rx[i].dma, KNET_MSG_SIZE,
					    DMA_FROM_DEVICE);
		kfree(ep->rx[i].buf);
	}
}

static int knet_alloc_buffers(struct knet_ep *ep)
{
	unsigned int i;

	for (i = 0; i < KNET_RECV_DEPTH; i++) {
		struct knet_rx *rx = &ep->rx[i];

		rx->ep = ep;
		rx->cqe.done = knet_recv_done;
		rx->buf = kmalloc(KNET_MSG_SIZE, GFP_KERNEL);
		if (!rx->buf)
			return -ENOMEM;
		rx->dma = ib_dma_map_single(ep->dev, rx->buf, KNET_MSG_SIZE, DMA_FROM_DEVICE);
		if (ib_dma_mapping_error(ep->dev, rx->dma)) {
			rx->dma = 0;
			return -ENOMEM;
		}
	}
	for (i = 0; i < KNET_SLOTS; i++) {
		struct knet_slot *s = &ep->slot[i];

		s->ep = ep;
		s->idx = i;
		s->send_cqe.done = knet_send_done;
		s->reg_cqe.done = knet_reg_done;
		s->inv_cqe.done = knet_inv_done;
		s->msg = kmalloc(KNET_MSG_SIZE, GFP_KERNEL);
		s->sg = kcalloc(ep->max_pages, sizeof(*s->sg), GFP_KERNEL);
		if (!s->msg || !s->sg)
			return -ENOMEM;
		s->msg_dma = ib_dma_map_single(ep->dev, s->msg, KNET_MSG_SIZE, DMA_TO_DEVICE);
		if (ib_dma_mapping_error(ep->dev, s->msg_dma)) {
			s->msg_dma = 0;
			return -ENOMEM;
		}
		s->mr = ib_alloc_mr(ep->pd, IB_MR_TYPE_MEM_REG, ep->max_pages);
		if (IS_ERR(s->mr)) {
			int ret = PTR_ERR(s->mr);

			s->mr = NULL;
			return ret;
		}
		knet_obj_add(KNET_OBJ_MR, 1);
	}
	return 0;
}

static int knet_setup_qp(struct knet_ep *ep)
{
	struct ib_qp_init_attr attr = {};
	unsigned int i;
	int ret;

	ep->dev = ep->cm_id->device;
	if (!(ep->dev->attrs.device_cap_flags & IB_DEVICE_MEM_MGT_EXTENSIONS)) {
		pr_err("%s cannot do fast memory registration\n", dev_name(&ep->dev->dev));
		return -EOPNOTSUPP;
	}
	ret = knet_device_attach(ep->dev, &ep->dev_node, &ep->kdev, &ep->rc);
	if (ret)
		return ret;
	ep->max_pages = min_t(unsigned int, KNET_MAX_PAGES,
			      ep->dev->attrs.max_fast_reg_page_list_len);
	/* No unsafe global rkey: every exposure is a per-request FRWR. */
	ep->pd = ib_alloc_pd(ep->dev, 0);
	if (IS_ERR(ep->pd)) {
		ret = PTR_ERR(ep->pd);
		ep->pd = NULL;
		return ret;
	}
	ep->cq = ib_alloc_cq(ep->dev, ep, KNET_RECV_DEPTH + 3 * KNET_SLOTS + 2,
			     ep->comp_vector % max(1, ep->dev->num_comp_vectors), IB_POLL_SOFTIRQ);
	if (IS_ERR(ep->cq)) {
		ret = PTR_ERR(ep->cq);
		ep->cq = NULL;
		return ret;
	}
	attr.event_handler = NULL;
	attr.send_cq = ep->cq;
	attr.recv_cq = ep->cq;
	attr.cap.max_send_wr = 3 * KNET_SLOTS + 1;	/* REG_MR, SEND, LOCAL_INV; drain */
	attr.cap.max_recv_wr = KNET_RECV_DEPTH + 1;
	attr.cap.max_send_sge = 1;
	attr.cap.max_recv_sge = 1;
	attr.sq_sig_type = IB_SIGNAL_REQ_WR;
	attr.qp_type = IB_QPT_RC;
	ret = rdma_create_qp(ep->cm_id, ep->pd, &attr);
	if (ret)
		return ret;
	ret = knet_alloc_buffers(ep);
	if (ret)
		return ret;
	for (i = 0; i < KNET_RECV_DEPTH; i++) {
		ret = knet_post_recv(ep, &ep->rx[i]);
		if (ret)
			return ret;
	}
	return 0;
}

static void knet_teardown(struct knet_ep *ep, bool was_connected)
{
	if (ep->cm_id->qp) {
		/* Every posted request completes (or flushes) before its memory goes. */
		if (was_connected)
			ib_drain_qp(ep->cm_id->qp);
		/* Drained or never connected: nothing reaches its keys. */
		knet_fenced(ep);
		rdma_destroy_qp(ep->cm_id);
	}
	knet_free_buffers(ep);
	if (ep->cq)
		ib_free_cq(ep->cq);
	if (ep->pd)
		ib_dealloc_pd(ep->pd);
	rdma_destroy_id(ep->cm_id);
	if (ep->kdev)
		knet_device_detach(ep->kdev, &ep->dev_node);
	/* Out of the device's list: nothing schedules it any more. */
	cancel_work_sync(&ep->removed_work);
	kfree(ep);
	knet_obj_add(KNET_OBJ_EP, -1);
}

/* rdma_connect() of an endpoint, made by a worker (knet_connect_call()). */
struct knet_conn_call {
	struct work_struct	work;
	struct knet_ep		*ep;
	struct rdma_conn_param	param;
	u8			pdata[1 + sizeof(struct knet_cm_req)];
	int			ret;
	atomic_t		state;	/* KNET_CALL_* */
	struct completion	done;
};

enum { KNET_CALL_RUNNING, KNET_CALL_DONE, KNET_CALL_ABANDONED };

static void knet_conn_call_work(struct work_struct *w)
{
	struct knet_conn_call *c = container_of(w, struct knet_conn_call, work);
	struct knet_ep *ep = c->ep;

	c->ret = rdma_connect(ep->cm_id, &c->param);
	if (atomic_cmpxchg(&c->state, KNET_CALL_RUNNING, KNET_CALL_DONE) == KNET_CALL_RUNNING) {
		complete(&c->done);
		return;
	}
	/* The caller was killed meanwhile and left the endpoint to us. */
	ep->dead = true;
	ep->connected = false;
	knet_teardown(ep, false);
	kfree(c);
}

/*
 * rdma_connect() for EP with PARAM. On iWARP it runs in a worker: siw
 * makes its TCP connection inside the call, in the caller's context,
 * where a signal the program catches (left pending while a hard mount
 * retries for it) cuts the connection short: every try then fails at
 * once, and a server's siw is left with half-open connections. The
 * caller waits killably; killed, it leaves the endpoint to the worker
 * (Return: -EINTR, the endpoint no longer the caller's).
 */
static int knet_connect_call(struct knet_ep *ep, struct rdma_conn_param *param,
			     bool *abandoned)
{
	struct knet_conn_call *c;
	int ret;

	*abandoned = false;
	if (!rdma_protocol_iwarp(ep->dev, ep->cm_id->port_num))
		return rdma_connect(ep->cm_id, param);
	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (!c)
		return -ENOMEM;
	INIT_WORK(&c->work, knet_conn_call_work);
	c->ep = ep;
	c->param = *param;
	memcpy(c->pdata, param->private_data, sizeof(c->pdata));
	c->param.private_data = c->pdata;
	atomic_set(&c->state, KNET_CALL_RUNNING);
	init_completion(&c->done);
	queue_work(knet_wq(), &c->work);
	if (wait_for_completion_killable(&c->done)) {
		if (atomic_cmpxchg(&c->state, KNET_CALL_RUNNING, KNET_CALL_ABANDONED) ==
		    KNET_CALL_RUNNING) {
			*abandoned = true;
			return -EINTR;
		}
		/* The call ended just as a fatal signal came: it is ours again. */
		wait_for_completion(&c->done);
	}
	ret = c->ret;
	kfree(c);
	return ret;
}

/**
 * knet_ep_connect() - connect an endpoint to a server's export or volume
 * @p: where and what
 * @reason: out: the server's enum knet_cm_reject reason when refused, else 0
 *
 * Context: process context, may sleep; killable.
 * Return: the endpoint, or an ERR_PTR(): -ECONNREFUSED (refused, see
 * @reason), -ETIMEDOUT, -EHOSTUNREACH, -EOPNOTSUPP (the device cannot do
 * FRWR), -EPROTO (the server's answer did not parse), -EAFNOSUPPORT (an
 * address neither IPv4 nor IPv6, or a source of the other family), -ENOMEM.
 */
struct knet_ep *knet_ep_connect(const struct knet_ep_params *p, int *reason)
{
	struct rdma_conn_param param = {};
	u8 pdata[1 + sizeof(struct knet_cm_req)];
	struct knet_cm_req req = {};
	struct sockaddr_storage src;
	struct sockaddr *srcp = NULL;
	struct knet_ep *ep;
	size_t name_len = strlen(p->name);
	bool abandoned;
	int ret;

	*reason = 0;
	if (!name_len || name_len > KNET_NAME_MAX)
		return ERR_PTR(-EINVAL);
	if ((p->addr.ss_family != AF_INET && p->addr.ss_family != AF_INET6) ||
	    (p->src.ss_family && p->src.ss_family != p->addr.ss_family))
		return ERR_PTR(-EAFNOSUPPORT);
	ep = kzalloc(sizeof(*ep), GFP_KERNEL);
	if (!ep)
		return ERR_PTR(-ENOMEM);
	knet_obj_add(KNET_OBJ_EP, 1);
	spin_lock_init(&ep->lock);
	init_waitqueue_head(&ep->wait);
	INIT_LIST_HEAD(&ep->done_list);
	init_waitqueue_head(&ep->done_wait);
	init_completion(&ep->cm_done);
	INIT_WORK(&ep->fail_work, knet_fail_work);
	INIT_WORK(&ep->removed_work, knet_removed_work);
	INIT_LIST_HEAD(&ep->dev_node);
	ep->removed = p->removed;
	ep->priv = p->priv;
	INIT_DELAYED_WORK(&ep->timeo_work, knet_timeo_work);
	ep->req_timeout = msecs_to_jiffies(p->request_timeout_ms);
	ep->keepalive = msecs_to_jiffies(p->keepalive_ms);
	/* An unanswered keep-alive must count: it needs a request time-out. */
	if (ep->keepalive && !ep->req_timeout)
		ep->req_timeout = 2 * ep->keepalive;
	ep->comp_vector = p->comp_vector;
	ep->cm_id = rdma_create_id(&init_net, knet_cm_handler, ep, RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(ep->cm_id)) {
		ret = PTR_ERR(ep->cm_id);
		kfree(ep);
		knet_obj_add(KNET_OBJ_EP, -1);
		return ERR_PTR(ret);
	}

	if (p->src.ss_family) {
		src = p->src;
		knet_addr_set_port(&src, 0);
		srcp = (struct sockaddr *)&src;
	}
	ret = knet_cm_wait(ep, rdma_resolve_addr(ep->cm_id, srcp, (struct sockaddr *)&p->addr,
						 p->timeout_ms ?: KNET_CM_TIMEOUT_MS));
	if (!ret)
		ret = knet_cm_wait(ep, rdma_resolve_route(ep->cm_id,
							  p->timeout_ms ?: KNET_CM_TIMEOUT_MS));
	if (!ret)
		ret = knet_setup_qp(ep);
	if (ret)
		goto fail;

	req.version = cpu_to_le16(KNET_PROTO_VERSION);
	req.service = p->service;
	req.name_len = name_len;
	req.recv_depth = cpu_to_le16(KNET_RECV_DEPTH);
	req.inline_max = cpu_to_le32(KNET_MSG_SIZE - sizeof(struct knet_hdr) - 512);
	if (p->secret && p->secret->len)
		req.flags = cpu_to_le16(KNET_CMF_AUTH);
	memcpy(req.name, p->name, name_len);
	/* libfabric's verbs provider frames private data with a length byte. */
	pdata[0] = sizeof(req);
	memcpy(pdata + 1, &req, sizeof(req));
	param.private_data = pdata;
	param.private_data_len = sizeof(pdata);
	param.responder_resources = min_t(u8, 16, ep->dev->attrs.max_qp_rd_atom);
	param.initiator_depth = min_t(u8, 16, ep->dev->attrs.max_qp_init_rd_atom);
	param.retry_count = 7;
	param.rnr_retry_count = 7;
	param.flow_control = 1;
	BUILD_BUG_ON(sizeof(pdata) != sizeof_field(struct knet_conn_call, pdata));
	ret = knet_connect_call(ep, &param, &abandoned);
	if (abandoned)
		return ERR_PTR(ret);
	ret = knet_cm_wait(ep, ret);
	if (ret) {
		*reason = ep->reject_reason;
		goto fail;
	}
	knet_ep_debugfs_add(ep);
	ep->last_rx = jiffies;
	if (ep->req_timeout)
		schedule_delayed_work(&ep->timeo_work,
				      min_not_zero(ep->req_timeout, ep->keepalive) / 4 ?: 1);
	if (ep->server_auth != (p->secret && p->secret->len)) {
		/* A server that skips it may not be the one that holds the secret. */
		pr_err("%pISpc (%s '%s'): %s\n", &p->addr,
		       p->service == KNET_SVC_FILE ? "export" : "volume", p->name,
		       ep->server_auth ? "the server asks for an authentication not offered" :
					 "the server does not authenticate: refused");
		knet_ep_destroy(ep);
		return ERR_PTR(-EACCES);
	}
	if (ep->server_auth) {
		ret = knet_ep_auth(ep, p);
		if (ret) {
			knet_ep_destroy(ep);
			return ERR_PTR(ret);
		}
	}
	pr_info("connected to %pISpc (%s '%s'): %u credits, inline %u, max I/O %u%s\n",
		&p->addr, p->service == KNET_SVC_FILE ? "export" : "volume", p->name,
		ep->lim.credits, ep->lim.inline_max, ep->lim.max_io,
		ep->server_auth ? ", authenticated" : "");
	return ep;

fail:
	ep->dead = true;
	ep->connected = false;
	knet_teardown(ep, false);
	return ERR_PTR(ret);
}
EXPORT_SYMBOL_GPL(knet_ep_connect);

/**
 * knet_ep_destroy() - disconnect and free an endpoint
 * @ep: the endpoint; no knet_call() may be running on it
 *
 * Context: process context, may sleep.
 */
void knet_ep_destroy(struct knet_ep *ep)
{
	unsigned long flags;
	bool was_connected;

	/* After this, no event schedules the disconnect work again. */
	spin_lock_irqsave(&ep->lock, flags);
	ep->dead = true;
	was_connected = ep->connected;
	ep->connected = false;
	spin_unlock_irqrestore(&ep->lock, flags);
	cancel_delayed_work_sync(&ep->timeo_work);
	cancel_work_sync(&ep->fail_work);
	debugfs_remove_recursive(ep->dir);
	rdma_disconnect(ep->cm_id);
	knet_teardown(ep, was_connected);
}
EXPORT_SYMBOL_GPL(knet_ep_destroy);

/**
 * knet_mq_connect() - connect a completion group of endpoints to one server
 * @p: where and what, as for knet_ep_connect(); @p->comp_vector is ignored
 * @nr: how many endpoints, at least one
 * @reason: out: the server's reject reason when refused
 *
 * Endpoint i gets completion vector i (modulo the device's count).
 *
 * Context: process context, may sleep.
 * Return: the group, or an ERR_PTR() as knet_ep_connect().
 */
struct knet_mq *knet_mq_connect(const struct knet_ep_params *p, unsigned int nr, int *reason)
{
	struct knet_ep_params qp = *p;
	struct knet_mq *mq;
	unsigned int i;
	int ret;

	if (!nr)
		return ERR_PTR(-EINVAL);
	mq = kzalloc(struct_size(mq, q, nr), GFP_KERNEL);
	if (!mq)
		return ERR_PTR(-ENOMEM);
	knet_obj_add(KNET_OBJ_GROUP, 1);
	for (i = 0; i < nr; i++) {
		qp.comp_vector = i;
		mq->q[i] = knet_ep_connect(&qp, reason);
		if (IS_ERR(mq->q[i])) {
			ret = PTR_ERR(mq->q[i]);
			while (i--)
				knet_ep_destroy(mq->q[i]);
			kfree(mq);
			knet_obj_add(KNET_OBJ_GROUP, -1);
			return ERR_PTR(ret);
		}
		mq->nr = i + 1;
	}
	return mq;
}
EXPORT_SYMBOL_GPL(knet_mq_connect);

/**
 * knet_mq_destroy() - disconnect and free a completion group
 * @mq: the group; no request may be running on it
 *
 * Context: process context, may sleep.
 */
void knet_mq_destroy(struct knet_mq *mq)
{
	unsigned int i;

	for (i = 0; i < mq->nr; i++)
		knet_ep_destroy(mq->q[i]);
	kfree(mq);
	knet_obj_add(KNET_OBJ_GROUP, -1);
}
EXPORT_SYMBOL_GPL(knet_mq_destroy);

/**
 * knet_mq_submit() - send a request on the least busy endpoint of a group
 * @mq: the group
 * @home: the caller's own endpoint (its CPU's queue), an index into @mq
 * @rq: the request, as for knet_submit()
 *
 * The request goes to the endpoint with the fewest requests in flight,
 * @home on a tie: requests one at a time stay on the caller's own
 * connection and completion vector, and a deep stream from one CPU spreads
 * over all the connections, and so over the server threads that serve
 * them. When that endpoint has no slot or credit free, @home is tried.
 *
 * Context: as knet_submit().
 * Return: as knet_submit().
 */
int knet_mq_submit(struct knet_mq *mq, unsigned int home, struct knet_request *rq)
{
	unsigned int i, busy, best, least;
	int ret;

	home %= mq->nr;
	best = home;
	least = READ_ONCE(mq->q[home]->in_flight);
	for (i = 0; i < mq->nr && least; i++) {
		busy = READ_ONCE(mq->q[i]->in_flight);
		if (busy < least) {
			least = busy;
			best = i;
		}
	}
	ret = knet_submit(mq->q[best], rq);
	if (ret == -EAGAIN && best != home)
		ret = knet_submit(mq->q[home], rq);
	return ret;
}
EXPORT_SYMBOL_GPL(knet_mq_submit);

/**
 * knet_ep_set_session() - name the session an endpoint serves (its counters)
 * @ep: the endpoint
 * @s: the session, which outlives @ep
 */
void knet_ep_set_session(struct knet_ep *ep, struct knet_session *s)
{
	ep->session = s;
}

/**
 * knet_ep_abort() - break an endpoint now
 * @ep: the endpoint
 *
 * Every request in flight ends with -ECONNABORTED (once the server can no
 * longer reach its memory) and new ones fail with -ENOTCONN; the endpoint
 * must still be destroyed. For a forced unmount of a dead server.
 *
 * Context: any; never sleeps.
 */
void knet_ep_abort(struct knet_ep *ep)
{
	knet_ep_fail(ep, -ECONNABORTED);
}
EXPORT_SYMBOL_GPL(knet_ep_abort);

/*
 * Under knet_lock, from knet_remove_one(): the device of the endpoint at
 * EP_NODE goes away. It fails now and its owner is told to destroy it.
 */
void knet_ep_device_removed(struct list_head *ep_node)
{
	struct knet_ep *ep = list_entry(ep_node, struct knet_ep, dev_node);

	/* A lost connection, as when the CM reports it: sessions retry. */
	knet_ep_fail(ep, -ECONNRESET);
	if (!READ_ONCE(ep->connected)) {
		/*
		 * Still connecting: its wait for the CM ends now, as the CM
		 * tells its IDs only after this removal is over.
		 */
		ep->cm_status = -ENETUNREACH;
		complete(&ep->cm_done);
	}
	if (ep->removed)
		schedule_work(&ep->removed_work);
}

/*
 * Break EP as a lost connection would: requests in flight end with
 * -ECONNRESET, which sessions retry. For a session replacing it while
 * requests still use it. Never sleeps.
 */
void knet_ep_break(struct knet_ep *ep)
{
	knet_ep_fail(ep, -ECONNRESET);
}

/* Is EP broken (lost, timed out, aborted)? For knet's sessions. */
bool knet_ep_dead(struct knet_ep *ep)
{
	return READ_ONCE(ep->dead);
}

/**
 * knet_ep_limits() - what the server granted at connect
 * @ep: the endpoint
 * @l: filled in
 */
void knet_ep_limits(struct knet_ep *ep, struct knet_limits *l)
{
	*l = ep->lim;
}
EXPORT_SYMBOL_GPL(knet_ep_limits);

/* ---- requests -------------------------------------------------------- */

static struct knet_slot *knet_get_slot(struct knet_ep *ep)
{
	struct knet_slot *s = NULL;
	unsigned long flags;
	unsigned int i;

	spin_lock_irqsave(&ep->lock, flags);
	if (ep->dead || ep->credits <= 0)
		goto out;
	for (i = 0; i < KNET_SLOTS; i++) {
		if (!ep->slot[i].busy) {
			s = &ep->slot[i];
			s->busy = true;
			s->gen = (s->gen + 1) & 0xffffff;
			s->t0 = ktime_get_ns();
			ep->credits--;
			if (++ep->in_flight > ep->in_flight_peak)
				ep->in_flight_peak = ep->in_flight;
			break;
		}
	}
out:
	spin_unlock_irqrestore(&ep->lock, flags);
	return s;
}

/* Give back a slot whose request was never posted, and its credit. */
static void knet_put_slot(struct knet_ep *ep, struct knet_slot *s)
{
	unsigned long flags;

	spin_lock_irqsave(&ep->lock, flags);
	s->busy = false;
	s->rq = NULL;
	ep->credits++;
	ep->in_flight--;
	spin_unlock_irqrestore(&ep->lock, flags);
	wake_up(&ep->wait);
}

struct knet_sg_build {
	struct knet_ep		*ep;
	struct knet_slot	*s;
	struct knet_request	*rq;
	unsigned int		n;	/* scatterlist entries used */
	unsigned int		pin;	/* next entry of rq->pin */
};

/* Kernel memory and pages: one scatterlist entry per piece, mapped later. */
static int knet_sg_piece(const struct knet_mem *m, unsigned int i, size_t off, size_t n,
			 void *arg)
{
	struct knet_sg_build *b = arg;
	struct scatterlist *sg;

	if (b->n == b->ep->max_pages)
		return -EINVAL;
	sg = &b->s->sg[b->n++];
	if (m->type == KNET_MEM_KVEC) {
		void *p = m->kvec[i].iov_base + off;

		if (!virt_addr_valid(p))
			return -EINVAL;
		sg_set_buf(sg, p, n);
	} else {
		sg_set_page(sg, m->bvec[i].bv_page, n, m->bvec[i].bv_offset + off);
	}
	return 0;
}

/* User memory: the cached DMA addresses of its pinned pages, page by page. */
static int knet_user_piece(const struct knet_mem *m, unsigned int i, size_t off, size_t n,
			   void *arg)
{
	struct knet_sg_build *b = arg;
	unsigned long addr = (unsigned long)m->iov[i].iov_base + off;
	unsigned long end = addr + n;
	struct regcache_entry *e;

	if (b->pin >= b->rq->npin)
		return -EINVAL;
	e = b->rq->pin[b->pin++];
	while (addr < end) {
		size_t k = min_t(size_t, end - addr, PAGE_SIZE - offset_in_page(addr));
		struct scatterlist *sg;

		if (b->n == b->ep->max_pages)
			return -EINVAL;
		sg = &b->s->sg[b->n++];
		sg_dma_address(sg) = regcache_dma(e, addr);
		sg_dma_len(sg) = k;
		ib_dma_sync_single_for_device(b->ep->dev, sg_dma_address(sg), k,
					      DMA_BIDIRECTIONAL);
		addr += k;
	}
	return 0;
}

/* Map the request's memory and register it; fills SEG. */
static int knet_map_mem(struct knet_ep *ep, struct knet_slot *s, struct knet_request *rq,
			struct ib_reg_wr *reg, struct knet_seg *seg)
{
	const struct knet_mem *m = rq->mem;
	struct knet_sg_build b = { .ep = ep, .s = s, .rq = rq };
	int n, ret;

	/* A new key for each request: an old one never reaches this memory. */
	ib_update_fast_reg_key(s->mr, ib_inc_rkey(s->mr->rkey));
	sg_init_table(s->sg, ep->max_pages);
	s->dma_dir = rq->dir == KNET_DIR_TO_SERVER ? DMA_TO_DEVICE : DMA_FROM_DEVICE;
	if (m->type == KNET_MEM_UVEC) {
		ret = knet_mem_walk(m, knet_user_piece, &b);
		s->usg = b.n;
		if (ret)
			return ret;
		n = ib_map_mr_sg(s->mr, s->sg, b.n, NULL, PAGE_SIZE);
		if (n != b.n)
			return n < 0 ? n : -EINVAL;
	} else {
		ret = knet_mem_walk(m, knet_sg_piece, &b);
		if (ret)
			return ret;
		sg_mark_end(&s->sg[b.n - 1]);
		s->sg_orig = b.n;
		s->sg_nents = ib_dma_map_sg(ep->dev, s->sg, b.n, s->dma_dir);
		if (!s->sg_nents)
			return -EIO;
		knet_obj_add(KNET_OBJ_MAP, 1);
		n = ib_map_mr_sg(s->mr, s->sg, s->sg_nents, NULL, PAGE_SIZE);
		if (n != s->sg_nents)
			/* A gap inside a page between entries: not one registration. */
			return n < 0 ? n : -EINVAL;
	}
	reg->wr.opcode = IB_WR_REG_MR;
	reg->wr.wr_cqe = &s->reg_cqe;
	reg->wr.send_flags = 0;
	reg->mr = s->mr;
	reg->key = s->mr->rkey;
	reg->access = rq->dir == KNET_DIR_TO_SERVER ? IB_ACCESS_REMOTE_READ :
		      IB_ACCESS_REMOTE_WRITE | IB_ACCESS_LOCAL_WRITE;
	seg->addr = cpu_to_le64(s->mr->iova);
	seg->rkey = cpu_to_le32(s->mr->rkey);
	seg->len = cpu_to_le32(m->len);
	s->mr_used = true;
	return 0;
}

struct knet_pinner {
	struct knet_ep		*ep;
	struct knet_request	*rq;
	unsigned int		flags;
};

static int knet_pin_piece(const struct knet_mem *m, unsigned int i, size_t off, size_t n,
			  void *arg)
{
	struct knet_pinner *p = arg;
	struct regcache_entry *e;

	if (p->rq->npin == KNET_UVEC_MAX)
		return -EINVAL;
	e = regcache_get(p->ep->rc, (unsigned long)m->iov[i].iov_base + off, n, p->flags);
	if (IS_ERR(e))
		return PTR_ERR(e);
	p->rq->pin[p->rq->npin++] = e;
	knet_obj_add(KNET_OBJ_PIN, 1);
	return 0;
}

/* Does the data of RQ travel inside the request message? */
static bool knet_inline_out(struct knet_ep *ep, const struct knet_request *rq)
{
	return rq->mem && rq->dir == KNET_DIR_TO_SERVER && rq->mem->len <= ep->lim.inline_max &&
	       sizeof(struct knet_hdr) + rq->body_len + rq->mem->len <= KNET_MSG_SIZE;
}

/*
 * Does the server send the data of RQ inside its reply? The reply is
 * handled in softirq context: user memory is written through the pages
 * knet_pin() pinned for it (no registration, RDMA WRITE or invalidation).
 */
static bool knet_inline_in(struct knet_ep *ep, const struct knet_request *rq)
{
	return rq->mem && rq->dir == KNET_DIR_FROM_SERVER && rq->mem->len <= ep->lim.inline_max;
}

/* Pin the user memory of RQ: the server reaches it by RDMA, or an inline reply lands in it. */
static int knet_pin(struct knet_ep *ep, struct knet_request *rq)
{
	const struct knet_mem *m = rq->mem;
	struct knet_pinner p = { .ep = ep, .rq = rq };
	int ret;

	rq->npin = 0;
	if (!m || m->type != KNET_MEM_UVEC || knet_inline_out(ep, rq))
		return 0;
	if (!ep->rc)
		return -EOPNOTSUPP;
	if (rq->dir == KNET_DIR_FROM_SERVER)
		p.flags |= REGCACHE_WRITE;
	if (m->flags & KNET_MEM_NOCACHE)
		p.flags |= REGCACHE_NOCACHE;
	ret = knet_mem_walk(m, knet_pin_piece, &p);
	if (ret)
		knet_unpin(rq);
	return ret;
}

/* Post RQ, its user memory already pinned. Never sleeps but for copying user data. */
static int __knet_submit(struct knet_ep *ep, struct knet_request *rq)
{
	const struct knet_mem *m = rq->mem;
	struct knet_hdr hdr = {};
	struct ib_reg_wr reg = {};
	struct knet_seg seg;
	struct ib_send_wr send = {};
	struct ib_sge sge;
	struct knet_slot *s;
	u32 len = sizeof(hdr) + rq->body_len;
	bool inline_out = knet_inline_out(ep, rq);
	int ret;

	s = knet_get_slot(ep);
	if (!s) {
		if (READ_ONCE(ep->dead))
			return -ENOTCONN;
		atomic64_inc(&ep->credit_stalls);
		return -EAGAIN;
	}
	rq->status = 0;
	rq->reply_len = 0;
	rq->inline_len = 0;
	rq->error = 0;
	s->rq = rq;
	s->err = 0;
	s->mr_used = false;
	s->mr_live = false;
	s->inline_in = knet_inline_in(ep, rq);
	s->sg_nents = 0;
	s->usg = 0;

	hdr.magic = cpu_to_le32(KNET_PROTO_MAGIC);
	hdr.version = KNET_PROTO_VERSION;
	hdr.opcode = cpu_to_le16(rq->opcode);
	hdr.tag = cpu_to_le32(s->idx | (s->gen << 8));
	hdr.body_len = cpu_to_le32(rq->body_len);
	memcpy(s->msg + sizeof(hdr), rq->body, rq->body_len);
	if (inline_out) {
		ret = knet_mem_copy(m, s->msg + len, m->len, false, NULL);
		if (ret)
			goto release;
		hdr.inline_len = cpu_to_le32(m->len);
		len += m->len;
	} else if (m && !s->inline_in) {
		ret = knet_map_mem(ep, s, rq, &reg, &seg);
		if (ret)
			goto unmap;
		memcpy(s->msg + len, &seg, sizeof(seg));
		hdr.nsegs = cpu_to_le16(1);
		len += sizeof(seg);
	}
	memcpy(s->msg, &hdr, sizeof(hdr));
	ib_dma_sync_single_for_device(ep->dev, s->msg_dma, len, DMA_TO_DEVICE);

	sge.addr = s->msg_dma;
	sge.length = len;
	sge.lkey = ep->pd->local_dma_lkey;
	send.opcode = IB_WR_SEND;
	send.wr_cqe = &s->send_cqe;
	send.send_flags = IB_SEND_SIGNALED;
	send.sg_list = &sge;
	send.num_sge = 1;
	if (s->mr_used)
		reg.wr.next = &send;
	s->need = EV_SEND | EV_REPLY;
	s->mr_live = s->mr_used;
	ret = ib_post_send(ep->cm_id->qp, s->mr_used ? &reg.wr : &send, NULL);
	if (ret) {
		s->need = 0;
		knet_ep_fail(ep, -EIO);
		ret = -EIO;
		goto unmap;
	}
	atomic64_inc(&ep->requests);
	if (m)
		atomic64_add(m->len, s->mr_used ? &ep->bytes_rdma : &ep->bytes_inline);
	trace_knet_submit(ep->id, le32_to_cpu(hdr.tag), rq->opcode, m ? m->len : 0, s->mr_used);
	return 0;

unmap:
	if (s->sg_nents) {
		ib_dma_unmap_sg(ep->dev, s->sg, s->sg_orig, s->dma_dir);
		knet_obj_add(KNET_OBJ_MAP, -1);
	}
	s->sg_nents = 0;
	s->usg = 0;
release:
	knet_put_slot(ep, s);
	return ret;
}

static int knet_check_request(struct knet_ep *ep, const struct knet_request *rq)
{
	const struct knet_mem *m = rq->mem;

	if (m && (!m->len || m->len > ep->lim.max_io || rq->dir == KNET_DIR_NONE))
		return -EINVAL;
	if (sizeof(struct knet_hdr) + rq->body_len + sizeof(struct knet_seg) > KNET_MSG_SIZE)
		return -EINVAL;
	return 0;
}

/* Check RQ and pin its user memory, before it waits for a slot. */
static int knet_prepare(struct knet_ep *ep, struct knet_request *rq)
{
	int ret = knet_check_request(ep, rq);

	return ret ?: knet_pin(ep, rq);
}

/**
 * knet_submit() - send a request; its end is reported later
 * @ep: a connected endpoint
 * @rq: the request; it must stay valid until it is over, which its @done
 *	callback reports (or knet_ep_wait_any() returns it)
 *
 * The data of @rq->mem travels inline when small enough, else the server
 * moves it by RDMA through a registration valid for this request only,
 * invalidated before the request is reported over. User memory is pinned
 * through the device's registration cache (which may sleep).
 *
 * Context: any for kernel memory and pages: never sleeps then. Process
 * context of the memory's owner for user memory (KNET_MEM_UVEC).
 * Return: 0 when sent; -EAGAIN when no slot or credit is free now (retry
 * after another request of @ep is over); -ENOTCONN when the connection is
 * gone; -EINVAL for a malformed request or memory that does not fit one
 * registration; -EFAULT or -ENOMEM for user memory that cannot be pinned
 * (RLIMIT_MEMLOCK included); -EIO. On an error return the request was
 * not sent and will not be reported.
 */
int knet_submit(struct knet_ep *ep, struct knet_request *rq)
{
	int ret;

	ret = knet_prepare(ep, rq);
	if (ret)
		return ret;
	ret = __knet_submit(ep, rq);
	if (ret)
		knet_unpin(rq);
	return ret;
}
EXPORT_SYMBOL_GPL(knet_submit);

/* Could a request be sent now (or has the endpoint died)? */
static bool knet_can_submit(struct knet_ep *ep)
{
	unsigned long flags;
	unsigned int i;
	bool ok = false;

	spin_lock_irqsave(&ep->lock, flags);
	if (ep->dead) {
		ok = true;
	} else if (ep->credits > 0) {
		for (i = 0; i < KNET_SLOTS && !ok; i++)
			ok = !ep->slot[i].busy;
	}
	spin_unlock_irqrestore(&ep->lock, flags);
	return ok;
}

struct knet_sync {
	struct completion	done;
};

static void knet_sync_done(struct knet_request *rq)
{
	struct knet_sync *sync = rq->priv;

	complete(&sync->done);
}

/**
 * knet_submit_wait() - send a request, waiting for a slot and a credit
 * @ep: a connected endpoint
 * @rq: the request, as for knet_submit(); its end is reported by @rq->done
 *	(or knet_ep_wait_any())
 * @timeout: in jiffies, for a slot and a credit
 *
 * Context: process context, may sleep; killable.
 * Return: 0 when sent; -ETIMEDOUT or -EINTR when no credit came in time or
 * a fatal signal did; else as knet_submit(). On an error return the
 * request was not sent and will not be reported.
 */
int knet_submit_wait(struct knet_ep *ep, struct knet_request *rq, unsigned long timeout)
{
	long left = timeout;
	int ret;

	ret = knet_prepare(ep, rq);
	if (ret)
		return ret;
	while ((ret = __knet_submit(ep, rq)) == -EAGAIN) {
		left = wait_event_killable_timeout(ep->wait, knet_can_submit(ep), left);
		if (left <= 0) {
			ret = left ? -EINTR : -ETIMEDOUT;
			break;
		}
	}
	if (ret)
		knet_unpin(rq);
	return ret;
}
EXPORT_SYMBOL_GPL(knet_submit_wait);

/**
 * knet_call() - send a request and wait for its answer
 * @ep: a connected endpoint
 * @rq: the request; its out fields are filled in; @done and @priv are used
 * @timeout: in jiffies, for a slot and for the answer
 *
 * A caller that a fatal signal stops once the request is sent still waits
 * up to %KNET_KILLED_WAIT_MS for the answer, which normally comes within a
 * round trip: the connection, which other requests share, is cut only if
 * it does not come by then.
 *
 * Context: process context, may sleep; killable (within
 * %KNET_KILLED_WAIT_MS once sent).
 * Return: 0 when the server answered (its answer in @rq->status), or an
 * error: -ETIMEDOUT, -EINTR (fatal signal), -ECONNRESET or -ENOTCONN (the
 * connection is gone), -EPROTO (the server lied), and knet_submit()'s.
 * After a time-out or a signal without an answer the endpoint is
 * disconnected, and this returns only once the server cannot reach @rq's
 * memory any more.
 */
int knet_call(struct knet_ep *ep, struct knet_request *rq, unsigned long timeout)
{
	const struct knet_mem *user = NULL;
	struct knet_mem bounce_mem;
	struct knet_sync sync;
	struct kvec bounce;
	long left;
	int ret;

	/*
	 * A small read into user memory: the server answers inline into a
	 * kernel buffer copied out here, in the owner's context. Cheaper than
	 * a registration, an RDMA WRITE and an invalidation.
	 */
	if (rq->mem && rq->mem->type == KNET_MEM_UVEC && rq->dir == KNET_DIR_FROM_SERVER &&
	    rq->mem->len <= ep->lim.inline_max) {
		bounce.iov_base = kmalloc(rq->mem->len, GFP_KERNEL);
		if (bounce.iov_base) {
			bounce.iov_len = rq->mem->len;
			bounce_mem = (struct knet_mem){ .type = KNET_MEM_KVEC, .nr = 1,
							.len = rq->mem->len, .kvec = &bounce };
			user = rq->mem;
			rq->mem = &bounce_mem;
		}
	}
	init_completion(&sync.done);
	rq->done = knet_sync_done;
	rq->priv = &sync;
	ret = knet_submit_wait(ep, rq, timeout);
	if (ret)
		goto out;
	left = wait_for_completion_killable_timeout(&sync.done, timeout);
	if (left < 0 &&
	    wait_for_completion_timeout(&sync.done, msecs_to_jiffies(KNET_KILLED_WAIT_MS)))
		left = 1;	/* killed, but answered: the connection stays */
	if (left <= 0) {
		pr_warn("request %u timed out or was killed: disconnecting\n", rq->opcode);
		knet_ep_fail(ep, left ? -EINTR : -ETIMEDOUT);
		wait_for_completion(&sync.done);
	}
	ret = rq->error;
	if (!ret && user && rq->inline_len)
		ret = knet_mem_copy(user, bounce.iov_base, rq->inline_len, true, NULL);
out:
	if (user) {
		rq->mem = user;
		kfree(bounce.iov_base);
	}
	return ret;
}
EXPORT_SYMBOL_GPL(knet_call);

/**
 * knet_ep_wait_any() - the next request of @ep that is over
 * @ep: the endpoint
 * @timeout: in jiffies
 *
 * Collects requests submitted without a @done callback, in the order they
 * ended: the server-style loop of one thread over many requests.
 *
 * Context: process context, may sleep; killable.
 * Return: a request (its @error and out fields set), or NULL when none
 * ended within @timeout or a fatal signal came.
 */
struct knet_request *knet_ep_wait_any(struct knet_ep *ep, unsigned long timeout)
{
	struct knet_request *rq = NULL;
	unsigned long flags;

	wait_event_killable_timeout(ep->done_wait, !list_empty_careful(&ep->done_list), timeout);
	spin_lock_irqsave(&ep->lock, flags);
	if (!list_empty(&ep->done_list)) {
		rq = list_first_entry(&ep->done_list, struct knet_request, node);
		list_del(&rq->node);
	}
	spin_unlock_irqrestore(&ep->lock, flags);
	return rq;
}
EXPORT_SYMBOL_GPL(knet_ep_wait_any);

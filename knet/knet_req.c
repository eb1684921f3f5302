// SPDX-License-Identifier: GPL-2.0-only
/*
 * knet's request engine, whatever the transport. An endpoint is one
 * reliable connection to a server (knet_ep.c) over a transport (RDMA:
 * knet_verbs.c, knet_frwr.c; TCP: knet_tcp.c); its requests lend the
 * server memory that it may touch only while they run.
 *
 * A request takes a slot and a credit, builds its message in the slot's
 * send buffer and, when it has data too large to travel inline, has the
 * transport lend that memory (@map: an FRWR key for this request only,
 * or a segment the server asks for by R2T). When the reply arrives, the
 * transport makes the memory unreachable (@replied: a LOCAL_INV waited
 * for, or at once on TCP) before the caller is woken. A reply that lies
 * (unknown tag, bad framing, more data than asked) breaks the endpoint
 * and every request fails. A request whose memory the server may still
 * reach when the endpoint fails (its reply never came) ends only once
 * the transport fenced the endpoint (@fence: the queue pair in the error
 * state, or the socket shut down and its work stopped).
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

#include "knet_int.h"
#include "regcache.h"

#define CREATE_TRACE_POINTS
#include "knet_trace.h"

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

/* The request of S is over: give back its memory and tell its owner. */
static void knet_slot_finish(struct knet_slot *s)
{
	struct knet_ep *ep = s->ep;
	struct knet_request *rq = s->rq;
	unsigned long flags;
	u64 us;

	ep->tr->unmap(ep, s);
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
void knet_fenced(struct knet_ep *ep)
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

void knet_fail_work(struct work_struct *w)
{
	struct knet_ep *ep = container_of(w, struct knet_ep, fail_work);
	unsigned long flags;
	bool disconnect;

	spin_lock_irqsave(&ep->lock, flags);
	disconnect = ep->disconnect;
	ep->disconnect = false;
	spin_unlock_irqrestore(&ep->lock, flags);
	ep->tr->fence(ep, disconnect);
}

void knet_removed_work(struct work_struct *w)
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

void knet_timeo_work(struct work_struct *w)
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
void knet_ep_fail(struct knet_ep *ep, int err)
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

void knet_slot_event(struct knet_slot *s, unsigned int ev, int err)
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

struct knet_slot *knet_find_slot(struct knet_ep *ep, u32 tag)
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

/**
 * knet_reply() - a message came from the server
 * @ep: the endpoint it came on
 * @msg: its bytes
 * @len: how many
 * @arg: the transport's, passed to its @replied
 *
 * Checks it and ends the request it answers, the memory that request lent
 * made unreachable first (the transport's @replied). Any context, never
 * sleeps.
 *
 * Return: 0, or a negative errno when the message lied: the endpoint
 * has failed.
 */
int knet_reply(struct knet_ep *ep, const void *msg, u32 len, const void *arg)
{
	const struct knet_hdr *h = msg;
	struct knet_request *rq;
	struct knet_slot *s;
	u32 blen, ilen;
	unsigned long flags;
	bool broken = false, over;
	int err = 0;

	if (knet_hdr_check(h, len, 0) != KNET_HDR_OK || !(h->flags & KNET_HF_REPLY)) {
		pr_err_ratelimited("malformed reply from the server: disconnecting\n");
		knet_ep_fail(ep, -EPROTO);
		return -EPROTO;
	}

	WRITE_ONCE(ep->last_rx, jiffies);
	spin_lock_irqsave(&ep->lock, flags);
	s = knet_find_slot(ep, le32_to_cpu(h->tag));
	if (!s) {
		spin_unlock_irqrestore(&ep->lock, flags);
		pr_err_ratelimited("reply for no request (tag %#x): disconnecting\n",
				   le32_to_cpu(h->tag));
		knet_ep_fail(ep, -EPROTO);
		return -EPROTO;
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
	if (!ep->tr->replied(ep, s, arg)) {
		/* The memory stays reachable: the failure below fences it. */
		s->need |= EV_FENCE;
		if (!s->err)
			s->err = -EIO;
		broken = true;
	}
	over = knet_slot_over(s);
	spin_unlock_irqrestore(&ep->lock, flags);
	if (over)
		knet_slot_finish(s);
	wake_up(&ep->wait);

	if (err)
		pr_err_ratelimited("reply that does not fit its request (operation, size): disconnecting\n");
	if (err || broken) {
		knet_ep_fail(ep, err ? err : -EIO);
		return err ? err : -EIO;
	}
	return 0;
}

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

/*
 * Post RQ, its user memory already pinned. Never sleeps but for copying
 * user data, unless MAY_SLEEP: the transport may then send from here.
 */
static int __knet_submit(struct knet_ep *ep, struct knet_request *rq, bool may_sleep)
{
	const struct knet_mem *m = rq->mem;
	struct knet_hdr hdr = {};
	struct knet_seg seg;
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
		ret = ep->tr->map(ep, s, rq, &seg);
		if (ret)
			goto unmap;
		memcpy(s->msg + len, &seg, sizeof(seg));
		hdr.nsegs = cpu_to_le16(1);
		len += sizeof(seg);
	}
	memcpy(s->msg, &hdr, sizeof(hdr));
	s->need = EV_SEND | EV_REPLY;
	s->mr_live = s->mr_used;
	ret = ep->tr->post(ep, s, len, may_sleep);
	if (ret) {
		s->need = 0;
		s->mr_live = false;
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
	ep->tr->unmap(ep, s);
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
 * Context: any for kernel memory and pages: never sleeps then, unless
 * @rq->flags has %KNET_RQ_MAY_SLEEP. Process context of the memory's
 * owner for user memory (KNET_MEM_UVEC).
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
	ret = __knet_submit(ep, rq, rq->flags & KNET_RQ_MAY_SLEEP);
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
	while ((ret = __knet_submit(ep, rq, true)) == -EAGAIN) {
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

// SPDX-License-Identifier: GPL-2.0-only
/*
 * knet sessions: an endpoint that comes back. A session connects, runs the
 * upper layer's handshake on every new endpoint, and when a call meets a
 * transport failure (time-out, lost connection, a reply that lied) it
 * reconnects with backoff and sends the same request again: until the
 * server is back on a hard session, at most a number of tries on a soft
 * one, then EIO. Requests sent asynchronously get the same choice: one
 * that failed on the transport is sent again from a workqueue (with its
 * submitter's mm when its memory is user memory) before it is reported.
 * The upper layer may hold a request back before each send (@admit): a
 * file system that takes its locks back from a restarted server keeps
 * its writes until it knows which of them it still may send.
 *
 * The endpoint is used under the session's rwsem for reading and replaced
 * under it for writing; every wait is killable.
 */
#define pr_fmt(fmt) "knet: " fmt

#include <linux/kthread.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/workqueue.h>

#include "knet.h"

#define KNET_BACKOFF_MIN_MS	100
#define KNET_BACKOFF_MAX_MS	4000

static struct workqueue_struct *knet_session_wq;

/* Under s->lock for writing: a new endpoint, its handshake done. */
static int knet_session_connect(struct knet_session *s, int *reason)
{
	struct knet_ep *ep;
	int ret;

	ep = knet_ep_connect(&s->params, reason);
	if (IS_ERR(ep))
		return PTR_ERR(ep);
	knet_ep_set_session(ep, s);
	if (s->setup) {
		ret = s->setup(s, ep);
		if (ret) {
			knet_ep_destroy(ep);
			return ret;
		}
	}
	s->ep = ep;
	return 0;
}

/*
 * The endpoint's RDMA device goes away (knet_ep_params.removed): destroy
 * the endpoint now, which the removal waits for, not at the next call.
 * That call connects again, through another device if one reaches the
 * server.
 */
static void knet_session_drop_work(struct work_struct *w)
{
	struct knet_session *s = container_of(w, struct knet_session, drop_work);

	down_write(&s->lock);
	if (s->ep && knet_ep_dead(s->ep)) {
		pr_info("%pISc: the RDMA device of the connection to '%s' is going\n",
			&s->params.addr, s->params.name);
		knet_ep_destroy(s->ep);
		s->ep = NULL;
	}
	up_write(&s->lock);
}

static void knet_session_removed(void *priv)
{
	struct knet_session *s = priv;

	queue_work(knet_session_wq, &s->drop_work);
}

/**
 * knet_session_open() - connect a session for the first time
 * @s: the session: @params, @hard, @retries, @timeout, @setup and @priv
 *	filled in; @params.name is copied
 * @reason: out: the server's reject reason when refused
 *
 * Context: process context, may sleep.
 * Return: 0, or knet_ep_connect()'s or @setup's error (no retry here).
 */
int knet_session_open(struct knet_session *s, int *reason)
{
	int ret;

	*reason = 0;
	if (strscpy(s->name_buf, s->params.name, sizeof(s->name_buf)) < 0)
		return -EINVAL;
	s->params.name = s->name_buf;
	s->params.removed = knet_session_removed;
	s->params.priv = s;
	INIT_WORK(&s->drop_work, knet_session_drop_work);
	init_rwsem(&s->lock);
	s->ep = NULL;
	s->shutdown = false;
	atomic_set(&s->reconnects, 0);
	atomic_set(&s->resent, 0);
	atomic_set(&s->connect_failures, 0);
	down_write(&s->lock);
	ret = knet_session_connect(s, reason);
	up_write(&s->lock);
	return ret;
}
EXPORT_SYMBOL_GPL(knet_session_open);

/* Replace the broken endpoint OLD (once, whoever comes first). */
static int knet_session_reconnect(struct knet_session *s, struct knet_ep *old)
{
	int reason, ret = 0;

	if (down_write_killable(&s->lock))
		return -EINTR;
	if (s->ep == old && !s->shutdown) {
		if (old) {
			knet_ep_destroy(old);
			s->ep = NULL;
		}
		ret = knet_session_connect(s, &reason);
		if (!ret) {
			atomic_inc(&s->reconnects);
			pr_info("%pISc: reconnected to '%s'\n", &s->params.addr,
				s->params.name);
		}
	}
	up_write(&s->lock);
	return ret;
}

/**
 * knet_session_retryable() - is this a failure of the connection?
 * @err: a knet error
 *
 * Return: true when a session reconnects and sends the request again.
 */
bool knet_session_retryable(int err)
{
	switch (err) {
	case -ETIMEDOUT:
	case -ENOTCONN:
	case -ECONNRESET:
	case -ECONNREFUSED:
	case -EHOSTUNREACH:
	case -ENETUNREACH:
	case -EPROTO:
	case -EIO:
		return true;
	default:
		return false;
	}
}
EXPORT_SYMBOL_GPL(knet_session_retryable);

/**
 * knet_sleep_killable() - sleep that only a fatal signal cuts short
 * @ms: how long
 *
 * For the waits between the tries of a call that must not fail because of
 * a signal the caller catches (a hard mount): msleep_interruptible() would
 * return at once, again and again, while such a signal is pending, and the
 * tries would follow each other without a pause.
 *
 * Context: process context, may sleep.
 * Return: 0, or -EINTR when a fatal signal is pending.
 */
int knet_sleep_killable(unsigned int ms)
{
	schedule_timeout_killable(msecs_to_jiffies(ms));
	return fatal_signal_pending(current) ? -EINTR : 0;
}
EXPORT_SYMBOL_GPL(knet_sleep_killable);

/* Under s->lock: may RQ be sent now (0), not yet (-EAGAIN), or never? */
static int knet_session_admit(struct knet_session *s, const struct knet_request *rq)
{
	return s->admit ? s->admit(s, rq) : 0;
}

/**
 * knet_session_call() - knet_call() that survives the connection
 * @s: the session
 * @rq: the request; sent again unchanged after a reconnect
 *
 * Context: process context (the owner's, for user memory); killable.
 * Return: 0 when the server answered (@rq->status is its answer); -EIO when
 * a soft session ran out of tries or the session was aborted; -EINTR; the
 * error of @s->admit that refused it; or a non-transport error of
 * knet_call().
 */
int knet_session_call(struct knet_session *s, struct knet_request *rq)
{
	unsigned int tries = 0, backoff = KNET_BACKOFF_MIN_MS;
	struct knet_ep *ep;
	int admit, ret;

	for (;;) {
		if (READ_ONCE(s->shutdown))
			return -EIO;
		if (down_read_killable(&s->lock))
			return -EINTR;
		ep = s->ep;
		admit = ep ? knet_session_admit(s, rq) : 0;
		ret = admit;
		if (!admit)
			ret = ep ? knet_call(ep, rq, s->timeout) : -ENOTCONN;
		up_read(&s->lock);
		if (admit == -EAGAIN) {
			/* The upper layer holds it back: wait, then ask again. */
			ret = s->admit_wait(s);
			if (ret)
				return ret;
			continue;
		}
		if (admit)
			return admit;
		if (ret && READ_ONCE(s->shutdown))
			return -EIO;
		if (!ret || !knet_session_retryable(ret))
			return ret;
		if (ret == -EPROTO)
			pr_warn_ratelimited("%pISc: the answer to %u did not parse\n",
					    &s->params.addr, rq->opcode);
		atomic_inc(&s->resent);
		/* A new connection, then the same request again. */
		do {
			if (++tries >= s->retries && !s->hard)
				return -EIO;
			if (fatal_signal_pending(current))
				return -EINTR;
			ret = knet_session_reconnect(s, ep);
			if (ret == -EINTR)
				return ret;
			if (ret) {
				atomic_inc(&s->connect_failures);
				if (tries < 2 || !(tries % 16))
					pr_warn_ratelimited("%pISc: server not responding (%d), %s\n",
							    &s->params.addr, ret,
							    s->hard ? "still trying" : "timed out");
				if (knet_sleep_killable(backoff))
					return -EINTR;
				backoff = min(backoff * 2, KNET_BACKOFF_MAX_MS);
				if (READ_ONCE(s->shutdown))
					return -EIO;
				ep = READ_ONCE(s->ep);
			}
		} while (ret);
	}
}
EXPORT_SYMBOL_GPL(knet_session_call);

static void knet_srq_work(struct work_struct *w)
{
	struct knet_srq *srq = container_of(w, struct knet_srq, work);
	int err = srq->rq.error;

	if (!srq->refused && knet_session_retryable(err)) {
		/* Sent again the waiting way, as the submitter would have. */
		if (srq->mm && !mmget_not_zero(srq->mm)) {
			srq->rq.error = -EIO;	/* the process is gone */
		} else {
			if (srq->mm)
				kthread_use_mm(srq->mm);
			srq->rq.error = knet_session_call(srq->s, &srq->rq);
			if (srq->mm) {
				kthread_unuse_mm(srq->mm);
				mmput(srq->mm);
			}
		}
	}
	if (srq->mm)
		mmdrop(srq->mm);
	srq->done(srq);
}

/*
 * Drop our reference to the submitter's mm in any context, unless it is
 * the last one: the final drop frees the mm, which the work item does in
 * process context.
 */
static bool knet_srq_put_mm_atomic(struct knet_srq *srq)
{
	if (srq->mm && !atomic_add_unless(&srq->mm->mm_count, -1, 1))
		return false;
	srq->mm = NULL;
	return true;
}

static void knet_srq_done(struct knet_request *rq)
{
	struct knet_srq *srq = container_of(rq, struct knet_srq, rq);

	/* Nothing to send again: a caller that can end here does so now. */
	if (srq->softirq_done && !knet_session_retryable(rq->error) &&
	    knet_srq_put_mm_atomic(srq)) {
		srq->done(srq);
		return;
	}
	queue_work(knet_session_wq, &srq->work);
}

/**
 * knet_session_submit() - send a request without waiting for its answer
 * @s: the session
 * @srq: the request: @srq->rq filled in as for knet_submit() (but @done and
 *	@priv, which are knet's), and @srq->done
 *
 * @srq->done is called once, in process context (a workqueue) or, with
 * @srq->softirq_done and no failure of the connection, in the completion's
 * softirq context, when the request is over: @srq->rq.error is 0 (the
 * server answered, @srq->rq.status says how) or the error that ended it
 * after the session's retries.
 *
 * Context: process context (the owner's, for user memory); waits for a
 * credit when all are in use.
 */
void knet_session_submit(struct knet_session *s, struct knet_srq *srq)
{
	int admit = 0, ret = -ENOTCONN;

	INIT_WORK(&srq->work, knet_srq_work);
	srq->s = s;
	srq->refused = false;
	srq->mm = NULL;
	if (srq->rq.mem && srq->rq.mem->type == KNET_MEM_UVEC) {
		srq->mm = current->mm;
		mmgrab(srq->mm);
	}
	srq->rq.done = knet_srq_done;
	srq->rq.priv = srq;
	if (!READ_ONCE(s->shutdown) && !down_read_killable(&s->lock)) {
		admit = s->ep ? knet_session_admit(s, &srq->rq) : 0;
		if (s->ep && !admit)
			ret = knet_submit_wait(s->ep, &srq->rq, s->timeout);
		else if (admit)
			/* Held (the worker waits until it may go), or refused. */
			ret = admit == -EAGAIN ? -ENOTCONN : admit;
		up_read(&s->lock);
	}
	if (ret) {
		/*
		 * Not sent: the worker tries the waiting way, or reports it
		 * (one @admit refused as it is, without asking again).
		 */
		srq->refused = admit && admit != -EAGAIN;
		srq->rq.error = ret;
		queue_work(knet_session_wq, &srq->work);
	}
}
EXPORT_SYMBOL_GPL(knet_session_submit);

/**
 * knet_session_probe() - reconnect now a session whose connection broke
 * @s: the session
 *
 * Sessions reconnect when a call needs them. An upper layer that must
 * learn soon that its server restarted, while it has nothing to send
 * (ORFS holding locks, to take them back in the server's grace period),
 * probes: one try to connect, whose handshake (@setup) sees the restart.
 * It waits at most the connect time-out and the handshake's.
 *
 * Context: process context, may sleep.
 * Return: 0 (connected, already or now, or shut down), or the connect error.
 */
int knet_session_probe(struct knet_session *s)
{
	struct knet_ep *ep;
	bool dead;

	if (READ_ONCE(s->shutdown))
		return 0;
	if (down_read_killable(&s->lock))
		return -EINTR;
	ep = s->ep;
	dead = !ep || knet_ep_dead(ep);
	up_read(&s->lock);
	return dead ? knet_session_reconnect(s, ep) : 0;
}
EXPORT_SYMBOL_GPL(knet_session_probe);

/**
 * knet_session_abort() - make every call of the session fail now
 * @s: the session
 *
 * Requests in flight end with an error, calls to come fail with -EIO, no
 * reconnect is tried (a forced unmount of a dead server).
 *
 * Context: any process context; does not wait for a reconnect in progress.
 */
void knet_session_abort(struct knet_session *s)
{
	WRITE_ONCE(s->shutdown, true);
	if (down_read_trylock(&s->lock)) {
		if (s->ep)
			knet_ep_abort(s->ep);
		up_read(&s->lock);
	}
}
EXPORT_SYMBOL_GPL(knet_session_abort);

/**
 * knet_session_close() - disconnect a session
 * @s: the session; no call may be running on it
 *
 * Context: process context, may sleep.
 */
void knet_session_close(struct knet_session *s)
{
	down_write(&s->lock);
	if (s->ep)
		knet_ep_destroy(s->ep);
	s->ep = NULL;
	up_write(&s->lock);
	/* No endpoint is left to ask for it again. */
	cancel_work_sync(&s->drop_work);
}
EXPORT_SYMBOL_GPL(knet_session_close);

/* knet's own unbound workqueue, drained when the module goes. */
struct workqueue_struct *knet_wq(void)
{
	return knet_session_wq;
}

int knet_session_init(void)
{
	knet_session_wq = alloc_workqueue("knet_session", WQ_MEM_RECLAIM | WQ_UNBOUND, 0);
	return knet_session_wq ? 0 : -ENOMEM;
}

void knet_session_exit(void)
{
	destroy_workqueue(knet_session_wq);
}

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
 * No lock of the session is held while a request is made: a caller takes
 * a reference to the current endpoint and makes its request through it.
 * Pinning and copying user memory take the caller's mmap_lock and may
 * fault pages of a file of the very file system that made the request,
 * whose read-ahead comes back here: a lock held across them would order
 * the session after the mm's locks and the file system's own, and a
 * reconnect waiting for it would hang them all. A reconnect takes the
 * broken endpoint out of the session at once; its last user frees it.
 */
#define pr_fmt(fmt) "knet: " fmt

#include <linux/kthread.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/workqueue.h>

#include "knet_int.h"

static struct workqueue_struct *knet_session_wq;

/*
 * An endpoint of a session and its users: the session's own reference
 * while it is the current one, and one per request being made on it.
 */
struct knet_session_ep {
	struct knet_ep		*ep;
	struct knet_session	*s;
	u64			gen;
	refcount_t		ref;
	struct work_struct	free_work;
};

static void knet_session_free_ep(struct knet_session_ep *se)
{
	struct knet_session *s = se->s;

	knet_ep_destroy(se->ep);
	kfree(se);
	if (atomic_dec_and_test(&s->eps))
		complete(&s->eps_gone);
}

static void knet_session_free_work(struct work_struct *w)
{
	knet_session_free_ep(container_of(w, struct knet_session_ep, free_work));
}

/* The current endpoint, with a reference for a request, or NULL. */
static struct knet_session_ep *knet_session_get(struct knet_session *s)
{
	struct knet_session_ep *se;

	spin_lock(&s->lock);
	se = s->cur;
	if (se)
		refcount_inc(&se->ref);
	spin_unlock(&s->lock);
	return se;
}

/*
 * A request is done with SE. Its caller may hold locks of the upper layer
 * (a read-ahead holds the mapping's): the last user frees it from the
 * workqueue.
 */
static void knet_session_put(struct knet_session_ep *se)
{
	if (refcount_dec_and_test(&se->ref))
		queue_work(knet_session_wq, &se->free_work);
}

/*
 * The session lets go of SE, taken out of @cur: freed now when nobody
 * uses it, else broken so that its users end soon (with an error a
 * session retries), and freed by the last of them.
 */
static void knet_session_release(struct knet_session_ep *se)
{
	if (refcount_read(&se->ref) > 1)
		knet_ep_break(se->ep);
	if (refcount_dec_and_test(&se->ref))
		knet_session_free_ep(se);
}

/* Take out the current endpoint if it is the GEN one (any, with 0). */
static struct knet_session_ep *knet_session_take(struct knet_session *s, u64 gen)
{
	struct knet_session_ep *se;

	spin_lock(&s->lock);
	se = s->cur;
	if (se && (!gen || se->gen == gen))
		s->cur = NULL;
	else
		se = NULL;
	spin_unlock(&s->lock);
	return se;
}

/* Under s->connect_lock, with no current endpoint: connect a new one. */
static int knet_session_connect(struct knet_session *s, int *reason)
{
	struct knet_session_ep *se;
	struct knet_ep *ep;
	int ret;

	se = kzalloc(sizeof(*se), GFP_KERNEL);
	if (!se)
		return -ENOMEM;
	ep = knet_ep_connect(&s->params, reason);
	if (IS_ERR(ep)) {
		ret = PTR_ERR(ep);
		goto free;
	}
	knet_ep_set_session(ep, s);
	if (s->setup) {
		ret = s->setup(s, ep);
		if (ret)
			goto destroy;
	}
	se->ep = ep;
	se->s = s;
	refcount_set(&se->ref, 1);
	INIT_WORK(&se->free_work, knet_session_free_work);
	atomic_inc(&s->eps);
	spin_lock(&s->lock);
	if (READ_ONCE(s->shutdown)) {
		spin_unlock(&s->lock);
		ret = -EIO;
		knet_session_free_ep(se);
		return ret;
	}
	se->gen = ++s->gen;
	s->cur = se;
	spin_unlock(&s->lock);
	return 0;

destroy:
	knet_ep_destroy(ep);
free:
	kfree(se);
	return ret;
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
	struct knet_session_ep *se;

	spin_lock(&s->lock);
	se = s->cur;
	if (se && knet_ep_dead(se->ep))
		s->cur = NULL;
	else
		se = NULL;
	spin_unlock(&s->lock);
	if (se) {
		pr_info("%pISc: the RDMA device of the connection to '%s' is going\n",
			&s->params.addr, s->params.name);
		knet_session_release(se);
	}
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
	spin_lock_init(&s->lock);
	mutex_init(&s->connect_lock);
	s->cur = NULL;
	s->gen = 0;
	atomic_set(&s->eps, 1);
	init_completion(&s->eps_gone);
	s->shutdown = false;
	atomic_set(&s->reconnects, 0);
	atomic_set(&s->resent, 0);
	atomic_set(&s->connect_failures, 0);
	mutex_lock(&s->connect_lock);
	ret = knet_session_connect(s, reason);
	mutex_unlock(&s->connect_lock);
	return ret;
}
EXPORT_SYMBOL_GPL(knet_session_open);

/*
 * Replace the broken endpoint number GEN (0: none was there), once,
 * whoever comes first.
 */
static int knet_session_reconnect(struct knet_session *s, u64 gen)
{
	struct knet_session_ep *old;
	int reason, ret = 0;

	if (mutex_lock_killable(&s->connect_lock))
		return -EINTR;
	spin_lock(&s->lock);
	if (s->cur && s->cur->gen != gen) {
		/* Replaced already. */
		spin_unlock(&s->lock);
		goto out;
	}
	spin_unlock(&s->lock);
	if (READ_ONCE(s->shutdown))
		goto out;
	old = knet_session_take(s, gen);
	if (old)
		knet_session_release(old);
	ret = knet_session_connect(s, &reason);
	if (!ret) {
		atomic_inc(&s->reconnects);
		pr_info("%pISc: reconnected to '%s'\n", &s->params.addr, s->params.name);
	}
out:
	mutex_unlock(&s->connect_lock);
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

/* On the endpoint just chosen: may RQ be sent now (0), not yet (-EAGAIN), or never? */
static int knet_session_admit(struct knet_session *s, const struct knet_request *rq)
{
	return s->admit ? s->admit(s, rq) : 0;
}

/**
 * knet_reconnect_start() - a server was lost: the policy starts over
 * @r: the policy's state
 * @max_tries: tries at most (0: no bound)
 * @loss_timeout: seconds to try for at most, or KNET_LOSS_FOREVER
 */
void knet_reconnect_start(struct knet_reconnect *r, unsigned int max_tries, int loss_timeout)
{
	r->lost_at = jiffies;
	r->backoff_ms = KNET_RECONNECT_MIN_MS;
	r->tries = 0;
	r->max_tries = max_tries;
	r->loss_timeout = loss_timeout;
}
EXPORT_SYMBOL_GPL(knet_reconnect_start);

/**
 * knet_reconnect_may_try() - count one more try, if the tries allow it
 * @r: the policy's state
 *
 * Return: false when @r->max_tries tries were made already.
 */
bool knet_reconnect_may_try(struct knet_reconnect *r)
{
	return !(++r->tries >= r->max_tries && r->max_tries);
}
EXPORT_SYMBOL_GPL(knet_reconnect_may_try);

/**
 * knet_reconnect_next() - a try failed: how long to wait before the next
 * @r: the policy's state
 *
 * The wait doubles from one try to the next, up to KNET_RECONNECT_MAX_MS;
 * the last one ends at the loss timeout, not a backoff after it.
 *
 * Return: the wait in jiffies, or -ETIMEDOUT when the loss timeout has
 * passed: give up.
 */
long knet_reconnect_next(struct knet_reconnect *r)
{
	unsigned long delay = msecs_to_jiffies(r->backoff_ms), deadline;

	r->backoff_ms = min(2 * r->backoff_ms, (unsigned int)KNET_RECONNECT_MAX_MS);
	if (r->loss_timeout == KNET_LOSS_FOREVER)
		return (long)delay;
	deadline = r->lost_at + (unsigned long)r->loss_timeout * HZ;
	if (time_after_eq(jiffies, deadline))
		return -ETIMEDOUT;
	return (long)min(delay, deadline - jiffies);
}
EXPORT_SYMBOL_GPL(knet_reconnect_next);

/**
 * knet_reconnect_elapsed_ms() - how long since the server was lost
 * @r: the policy's state
 *
 * Return: milliseconds since knet_reconnect_start().
 */
unsigned int knet_reconnect_elapsed_ms(const struct knet_reconnect *r)
{
	return jiffies_to_msecs(jiffies - r->lost_at);
}
EXPORT_SYMBOL_GPL(knet_reconnect_elapsed_ms);

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
	struct knet_reconnect rc;
	struct knet_session_ep *se;
	int admit, ret;
	u64 gen;

	knet_reconnect_start(&rc, s->hard ? 0 : s->retries, KNET_LOSS_FOREVER);

	for (;;) {
		if (READ_ONCE(s->shutdown))
			return -EIO;
		se = knet_session_get(s);
		gen = se ? se->gen : 0;
		admit = se ? knet_session_admit(s, rq) : 0;
		ret = admit;
		if (!admit)
			ret = se ? knet_call(se->ep, rq, s->timeout) : -ENOTCONN;
		if (se)
			knet_session_put(se);
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
		if (gen)
			atomic_inc(&s->resent);	/* else never sent: no endpoint */
		/* A new connection, then the same request again. */
		do {
			/* A remount may change them meanwhile. */
			rc.max_tries = READ_ONCE(s->hard) ? 0 : READ_ONCE(s->retries);
			if (!knet_reconnect_may_try(&rc))
				return -EIO;
			if (fatal_signal_pending(current))
				return -EINTR;
			ret = knet_session_reconnect(s, gen);
			if (ret == -EINTR)
				return ret;
			if (ret) {
				atomic_inc(&s->connect_failures);
				if (rc.tries < 2 || !(rc.tries % 16))
					pr_warn_ratelimited("%pISc: server not responding (%d), %s\n",
							    &s->params.addr, ret,
							    s->hard ? "still trying" : "timed out");
				if (knet_sleep_killable(jiffies_to_msecs(knet_reconnect_next(&rc))))
					return -EINTR;
				if (READ_ONCE(s->shutdown))
					return -EIO;
				gen = 0;
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
	struct knet_session_ep *se;
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
	se = READ_ONCE(s->shutdown) ? NULL : knet_session_get(s);
	if (se) {
		admit = knet_session_admit(s, &srq->rq);
		if (!admit)
			ret = knet_submit_wait(se->ep, &srq->rq, s->timeout);
		else
			/* Held (the worker waits until it may go), or refused. */
			ret = admit == -EAGAIN ? -ENOTCONN : admit;
		knet_session_put(se);
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
	struct knet_session_ep *se;
	bool dead;
	u64 gen;

	if (READ_ONCE(s->shutdown))
		return 0;
	se = knet_session_get(s);
	dead = !se || knet_ep_dead(se->ep);
	gen = se ? se->gen : 0;
	if (se)
		knet_session_put(se);
	return dead ? knet_session_reconnect(s, gen) : 0;
}
EXPORT_SYMBOL_GPL(knet_session_probe);

/**
 * knet_session_abort() - make every call of the session fail now
 * @s: the session
 *
 * Requests in flight end with an error, calls to come fail with -EIO, no
 * reconnect is tried (a forced unmount of a dead server).
 *
 * Context: any process context; never sleeps.
 */
void knet_session_abort(struct knet_session *s)
{
	spin_lock(&s->lock);
	WRITE_ONCE(s->shutdown, true);
	if (s->cur)
		knet_ep_abort(s->cur->ep);
	spin_unlock(&s->lock);
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
	struct knet_session_ep *se;

	mutex_lock(&s->connect_lock);
	se = knet_session_take(s, 0);
	mutex_unlock(&s->connect_lock);
	if (se)
		knet_session_release(se);
	/* No endpoint is left to ask for it again. */
	cancel_work_sync(&s->drop_work);
	/* Endpoints whose last user was a request are freed by the workqueue. */
	if (!atomic_dec_and_test(&s->eps))
		wait_for_completion(&s->eps_gone);
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

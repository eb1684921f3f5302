// SPDX-License-Identifier: GPL-2.0-only
/*
 * Connection groups: a set of connections to one server (knet_mq) that
 * knet takes down and connects again when they fail, for every upper
 * layer: MXBD, whose block requests are held meanwhile, and ORFS, whose
 * calls wait and are sent again.
 *
 * States. NEW: opened, the upper layer not yet ready; a failure then is
 * the caller's to handle. LIVE: requests go. Any failure of the
 * connections (a request ended by one, a device removed, a send that
 * found no connection, a probe that finds one dead) makes the group
 * RECONNECTING and queues the error work: under @lock it has the upper
 * layer stop sending (ops->down), aborts every connection so that each
 * request of theirs ends and can be held or sent again, and lets them go.
 * The reconnect work then connects with knet's policy (knet_reconnect_*),
 * runs the upper layer's handshake (ops->setup) on the new connections
 * and, once it passes, makes the group LIVE, wakes the calls that wait
 * and lets the held requests go (ops->up). A server away past the loss
 * time-out, or a handshake that says it is not the same server (-EPROTO),
 * makes the group FAILED: held requests go too (ops->up) and fail there.
 * knet_group_stop() or knet_group_abort() makes it CLOSING for good.
 *
 * The state is changed under @state_lock, which knet_group_hold() also
 * takes: a request is held only while the group may still send it, and
 * every request held before the group turns FAILED or CLOSING is let go
 * by the ops->up that follows.
 *
 * Calls (knet_group_call(), knet_group_submit()) hold no lock of the
 * group while a request is made: they take a reference to the current
 * connections under @state_lock and drop it when the request is sent or
 * answered. Making a request pins and copies user memory under the
 * caller's mmap_lock, which may fault a page of a file of the very file
 * system that made it, whose read-ahead comes back here: a lock held
 * across it would order the group after the mm's locks and the file
 * system's own, and a reconnect waiting for it would hang them all. The
 * error work takes the broken connections out at once; their last user
 * frees them.
 */
/* Messages are about the upper layer's device: its @name says whose. */
#define pr_fmt(fmt) fmt

#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>

#include "knet.h"
#include "knet_int.h"

static struct workqueue_struct *knet_group_wq;

/*
 * One set of connections of a group and its users: the group's own
 * reference while it is the current one, and one per request being made.
 */
struct knet_group_conns {
	struct knet_mq		*mq;
	struct knet_group	*g;
	u64			gen;
	refcount_t		ref;
	struct work_struct	free_work;
};

/* knet's own unbound workqueue, drained when the module goes. */
struct workqueue_struct *knet_wq(void)
{
	return knet_group_wq;
}

/**
 * knet_reconnect_start() - a server was lost: the policy starts over
 * @r: the policy's state
 * @loss_timeout: seconds to try for at most, or KNET_LOSS_FOREVER
 */
static void knet_reconnect_start(struct knet_reconnect *r, int loss_timeout)
{
	r->lost_at = jiffies;
	r->backoff_ms = KNET_RECONNECT_MIN_MS;
	r->tries = 0;
	r->loss_timeout = loss_timeout;
}

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
static long knet_reconnect_next(struct knet_reconnect *r)
{
	unsigned long delay = msecs_to_jiffies(r->backoff_ms), deadline;

	r->tries++;
	r->backoff_ms = min(2 * r->backoff_ms, (unsigned int)KNET_RECONNECT_MAX_MS);
	if (r->loss_timeout == KNET_LOSS_FOREVER)
		return (long)delay;
	deadline = r->lost_at + (unsigned long)r->loss_timeout * HZ;
	if (time_after_eq(jiffies, deadline))
		return -ETIMEDOUT;
	return (long)min(delay, deadline - jiffies);
}

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

/*
 * A request that ended because its connection failed, or because the
 * group aborted it, is held and sent again; one the server answered with
 * a lie (-EPROTO) is not: it fails, and is not sent to that server again.
 */
static bool knet_group_conn_error(int err)
{
	switch (err) {
	case -ETIMEDOUT:
	case -ENOTCONN:
	case -ECONNRESET:
	case -ECONNABORTED:
	case -ECONNREFUSED:
	case -EHOSTUNREACH:
	case -ENETUNREACH:
	case -EIO:
		return true;
	default:
		return false;
	}
}

/*
 * A call is sent again after a lie too, on new connections: the caller
 * waits for its answer and the server's replay cache answers a request
 * that ran already with its first answer (ORFS). A held block request is
 * not: nothing would tell a retry from the first try.
 */
static bool knet_group_call_error(int err)
{
	return knet_group_conn_error(err) || err == -EPROTO;
}

static void knet_group_conns_free(struct knet_group_conns *c)
{
	struct knet_group *g = c->g;

	knet_mq_destroy(c->mq);
	kfree(c);
	if (atomic_dec_and_test(&g->conns))
		complete(&g->conns_gone);
}

static void knet_group_conns_free_work(struct work_struct *w)
{
	knet_group_conns_free(container_of(w, struct knet_group_conns, free_work));
}

/*
 * The current connections with a reference for a request, or NULL when
 * there are none to use (reconnecting, failed, closing): *STATE says why.
 */
static struct knet_group_conns *knet_group_get(struct knet_group *g,
					       enum knet_group_state *state)
{
	struct knet_group_conns *c;
	unsigned long flags;

	spin_lock_irqsave(&g->state_lock, flags);
	*state = g->state;
	c = g->cur;
	if (c && (g->state == KNET_GROUP_NEW || g->state == KNET_GROUP_LIVE))
		refcount_inc(&c->ref);
	else
		c = NULL;
	spin_unlock_irqrestore(&g->state_lock, flags);
	return c;
}

/*
 * A request is done with C. Its caller may hold locks of the upper layer
 * (a read-ahead holds the mapping's): the last user frees C from the
 * workqueue.
 */
static void knet_group_put(struct knet_group_conns *c)
{
	if (refcount_dec_and_test(&c->ref))
		queue_work(knet_wq(), &c->free_work);
}

/*
 * The group lets go of C, taken out of @cur (its connections aborted if
 * anyone still uses them): freed now when nobody uses it, else by its
 * last user.
 */
static void knet_group_release(struct knet_group_conns *c)
{
	if (refcount_dec_and_test(&c->ref))
		knet_group_conns_free(c);
}

/* Take the current connections out of the group, or NULL. */
static struct knet_group_conns *knet_group_take(struct knet_group *g)
{
	struct knet_group_conns *c;

	spin_lock_irq(&g->state_lock);
	c = g->cur;
	g->cur = NULL;
	WRITE_ONCE(g->mq, NULL);
	spin_unlock_irq(&g->state_lock);
	return c;
}

static void knet_group_abort_conns(struct knet_group_conns *c)
{
	unsigned int i;

	for (i = 0; i < c->mq->nr; i++)
		knet_ep_abort(c->mq->q[i]);
}

/* Under g->state_lock: a live group starts its recovery. */
static void __knet_group_lost(struct knet_group *g)
{
	if (g->state != KNET_GROUP_LIVE)
		return;
	g->state = KNET_GROUP_RECONNECTING;
	queue_work(knet_wq(), &g->err_work);
}

/*
 * The connections number GEN failed: recover them, unless they were
 * replaced already. Returns the group's state before.
 */
static enum knet_group_state knet_group_lost_gen(struct knet_group *g, u64 gen)
{
	enum knet_group_state state;
	unsigned long flags;

	spin_lock_irqsave(&g->state_lock, flags);
	state = g->state;
	if (g->cur && g->cur->gen == gen)
		__knet_group_lost(g);
	spin_unlock_irqrestore(&g->state_lock, flags);
	return state;
}

/**
 * knet_group_lost() - the group's connections failed: recover them
 * @g: the group
 *
 * For a failure seen outside a request's end (e.g. a send that found no
 * connection). Nothing happens unless the group is LIVE.
 *
 * Context: any.
 */
void knet_group_lost(struct knet_group *g)
{
	unsigned long flags;

	spin_lock_irqsave(&g->state_lock, flags);
	__knet_group_lost(g);
	spin_unlock_irqrestore(&g->state_lock, flags);
}
EXPORT_SYMBOL_GPL(knet_group_lost);

/**
 * knet_group_hold() - a request of the group ended with an error
 * @g: the group
 * @err: the request's error
 * @hold: called, under the group's state lock, when the request may be
 *	held: it holds it (e.g. requeues it) and returns true, or returns
 *	false to fail it (tried too often); must not sleep
 * @arg: passed to @hold
 *
 * Whatever the error, the connection it came on is gone: the group
 * recovers. The request is held when the error is a failure of the
 * connection and the group is LIVE or RECONNECTING; it is then sent again
 * after the ops->up that follows.
 *
 * Context: any (a request's completion).
 * Return: true when @hold held the request; false: the caller fails it.
 */
bool knet_group_hold(struct knet_group *g, int err, bool (*hold)(void *arg), void *arg)
{
	unsigned long flags;
	bool held = false;

	spin_lock_irqsave(&g->state_lock, flags);
	if (knet_group_conn_error(err) &&
	    (g->state == KNET_GROUP_LIVE || g->state == KNET_GROUP_RECONNECTING))
		held = hold(arg);
	__knet_group_lost(g);
	spin_unlock_irqrestore(&g->state_lock, flags);
	return held;
}
EXPORT_SYMBOL_GPL(knet_group_hold);

/**
 * knet_group_probe() - recover now connections that broke while idle
 * @g: the group
 *
 * A group hears of a failure from its requests. An upper layer that must
 * learn soon that its server restarted, while it has nothing to send
 * (ORFS holding locks, to take them back in the server's grace period),
 * probes: when a connection was found dead (by its keep-alive), the group
 * reconnects now, and the handshake (ops->setup) sees the restart.
 *
 * Context: any; never sleeps.
 */
void knet_group_probe(struct knet_group *g)
{
	struct knet_group_conns *c;
	unsigned long flags;
	unsigned int i;

	spin_lock_irqsave(&g->state_lock, flags);
	c = g->cur;
	for (i = 0; c && g->state == KNET_GROUP_LIVE && i < c->mq->nr; i++)
		if (knet_ep_dead(c->mq->q[i])) {
			__knet_group_lost(g);
			break;
		}
	spin_unlock_irqrestore(&g->state_lock, flags);
}
EXPORT_SYMBOL_GPL(knet_group_probe);

/* knet_ep_params.removed: a connection's device goes; all are replaced. */
static void knet_group_removed(void *priv)
{
	struct knet_group_conns *c = priv;

	knet_group_lost_gen(c->g, c->gen);
}

/*
 * Under g->lock, or before the group is in use: connect a new set of
 * connections, not yet the group's.
 */
static struct knet_group_conns *knet_group_connect(struct knet_group *g, int *reason)
{
	struct knet_ep_params p = g->params;
	struct knet_group_conns *c;
	struct knet_mq *mq;
	unsigned int i;

	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (!c)
		return ERR_PTR(-ENOMEM);
	c->g = g;
	c->gen = ++g->gen;
	refcount_set(&c->ref, 1);
	INIT_WORK(&c->free_work, knet_group_conns_free_work);
	p.removed = knet_group_removed;
	p.priv = c;
	mq = knet_mq_connect(&p, g->nr, reason);
	if (IS_ERR(mq)) {
		kfree(c);
		return ERR_CAST(mq);
	}
	for (i = 0; i < mq->nr; i++)
		mq->q[i]->group = g;
	c->mq = mq;
	atomic_inc(&g->conns);
	return c;
}

/* Under g->lock: set state TO unless the group left FROM meanwhile. */
static void knet_group_move(struct knet_group *g, enum knet_group_state from,
			    enum knet_group_state to)
{
	spin_lock_irq(&g->state_lock);
	if (g->state == from)
		g->state = to;
	spin_unlock_irq(&g->state_lock);
	wake_up_all(&g->wait);
}

static void knet_group_err_work(struct work_struct *w)
{
	struct knet_group *g = container_of(w, struct knet_group, err_work);
	struct knet_group_conns *c;

	mutex_lock(&g->lock);
	if (READ_ONCE(g->state) != KNET_GROUP_RECONNECTING)
		goto out;
	if (g->ops->down)
		g->ops->down(g);
	c = knet_group_take(g);
	if (c) {
		/* Each request ends (held) once the server cannot reach its memory. */
		knet_group_abort_conns(c);
		knet_group_release(c);
	}
	pr_warn("%s: connection to %pISc lost: I/O held, reconnecting\n", g->name,
		&g->params.addr);
	knet_reconnect_start(&g->rc, g->loss_timeout);
	mod_delayed_work(knet_wq(), &g->reconnect_work, 0);
out:
	mutex_unlock(&g->lock);
}

/* Under g->lock: C passed the handshake; it becomes the group's. */
static bool knet_group_install(struct knet_group *g, struct knet_group_conns *c)
{
	bool live = false;

	spin_lock_irq(&g->state_lock);
	if (g->state == KNET_GROUP_RECONNECTING) {
		g->cur = c;
		WRITE_ONCE(g->mq, c->mq);
		g->state = KNET_GROUP_LIVE;
		live = true;
	}
	spin_unlock_irq(&g->state_lock);
	wake_up_all(&g->wait);
	return live;
}

static void knet_group_reconnect_work(struct work_struct *w)
{
	struct knet_group *g = container_of(to_delayed_work(w), struct knet_group,
					    reconnect_work);
	struct knet_group_conns *c;
	int reason, ret;
	long delay;

	mutex_lock(&g->lock);
	if (READ_ONCE(g->state) != KNET_GROUP_RECONNECTING)
		goto out;
	c = knet_group_connect(g, &reason);
	if (IS_ERR(c)) {
		ret = PTR_ERR(c);
	} else {
		ret = g->ops->setup(g, c->mq);
		if (!ret) {
			if (!knet_group_install(g, c)) {
				/* Stopped meanwhile. */
				knet_group_release(c);
				goto out;
			}
			atomic_inc(&g->reconnects);
			pr_info("%s: reconnected to %pISc after %u ms\n", g->name,
				&g->params.addr, jiffies_to_msecs(jiffies - g->rc.lost_at));
			if (g->ops->up)
				g->ops->up(g);
			goto out;
		}
		knet_group_release(c);
		if (ret == -EPROTO) {
			/* Not the server the group was opened on, or one that lies. */
			knet_group_move(g, KNET_GROUP_RECONNECTING, KNET_GROUP_FAILED);
			if (g->ops->up)
				g->ops->up(g);
			goto out;
		}
	}
	atomic_inc(&g->connect_failures);
	delay = knet_reconnect_next(&g->rc);
	if (g->rc.tries == 1 || !(g->rc.tries % 16))
		pr_warn("%s: server %pISc not responding (%pe), still trying\n", g->name,
			&g->params.addr, ERR_PTR(ret));
	if (delay < 0) {
		pr_err("%s: no server for %d s: failing I/O\n", g->name, g->loss_timeout);
		knet_group_move(g, KNET_GROUP_RECONNECTING, KNET_GROUP_FAILED);
		if (g->ops->up)
			g->ops->up(g);
		goto out;
	}
	queue_delayed_work(knet_wq(), &g->reconnect_work, (unsigned long)delay);
out:
	mutex_unlock(&g->lock);
}

/**
 * knet_group_open() - connect a group
 * @g: the group, its @params, @nr, @loss_timeout, @ops, @name and @priv
 *	set, and @tries and @timeout for knet_group_call() and
 *	knet_group_submit() (@params.removed and @params.priv are the
 *	group's own)
 * @reason: on -ECONNREFUSED, the server's KNET_REJECT_* reason
 *
 * Connects @nr connections. The group is NEW: the caller makes its first
 * handshake on knet_group_mq() and sets itself up, a failure meanwhile
 * starts no recovery; then knet_group_start() makes it LIVE. On failure
 * nothing is left to undo; after success, knet_group_close() undoes it.
 *
 * Context: process context, may sleep.
 * Return: 0 or the connection's error.
 */
int knet_group_open(struct knet_group *g, int *reason)
{
	struct knet_group_conns *c;

	*reason = 0;
	if (!g->nr)
		return -EINVAL;
	g->busy = kcalloc(g->nr, sizeof(*g->busy), GFP_KERNEL);
	if (!g->busy)
		return -ENOMEM;
	g->state = KNET_GROUP_NEW;
	spin_lock_init(&g->state_lock);
	mutex_init(&g->lock);
	g->cur = NULL;
	g->mq = NULL;
	g->gen = 0;
	atomic_set(&g->conns, 1);
	init_completion(&g->conns_gone);
	init_waitqueue_head(&g->wait);
	INIT_WORK(&g->err_work, knet_group_err_work);
	INIT_DELAYED_WORK(&g->reconnect_work, knet_group_reconnect_work);
	atomic_set(&g->reconnects, 0);
	atomic_set(&g->resent, 0);
	atomic_set(&g->ended_here, 0);
	atomic_set(&g->connect_failures, 0);
	c = knet_group_connect(g, reason);
	if (IS_ERR(c)) {
		kfree(g->busy);
		g->busy = NULL;
		return PTR_ERR(c);
	}
	g->cur = c;
	g->mq = c->mq;
	return 0;
}
EXPORT_SYMBOL_GPL(knet_group_open);

/**
 * knet_group_start() - put a group in use
 * @g: the group, NEW, its upper layer ready for @ops
 *
 * The group is LIVE: from now on a failure makes it recover.
 *
 * Context: process context.
 */
void knet_group_start(struct knet_group *g)
{
	knet_group_move(g, KNET_GROUP_NEW, KNET_GROUP_LIVE);
}
EXPORT_SYMBOL_GPL(knet_group_start);

/**
 * knet_group_abort() - make every request of a group fail now, for good
 * @g: the group
 *
 * The group is CLOSING: its connections are aborted, so that requests in
 * flight end at once (and fail), calls waiting for the server and calls
 * to come fail with -EIO, nothing is held or connected again. For a
 * forced unmount of a dead server. knet_group_stop() must still follow.
 *
 * Context: any; never sleeps.
 */
void knet_group_abort(struct knet_group *g)
{
	struct knet_group_conns *c;
	unsigned long flags;

	spin_lock_irqsave(&g->state_lock, flags);
	g->state = KNET_GROUP_CLOSING;
	c = g->cur;
	if (c)
		refcount_inc(&c->ref);
	spin_unlock_irqrestore(&g->state_lock, flags);
	wake_up_all(&g->wait);
	/* Not under @state_lock: the requests' ends take it. */
	if (c) {
		knet_group_abort_conns(c);
		knet_group_put(c);
	}
}
EXPORT_SYMBOL_GPL(knet_group_abort);

/**
 * knet_group_stop() - stop a group's recovery for good
 * @g: the group, opened
 * @force: abort the connections, so that requests in flight end at once
 *	(and fail) instead of being answered
 *
 * The group is CLOSING: nothing is held or sent again any more, held
 * requests go (ops->up) and fail. The connections stay until
 * knet_group_close(), for requests in flight to end.
 *
 * Context: process context, may sleep.
 */
void knet_group_stop(struct knet_group *g, bool force)
{
	if (force) {
		knet_group_abort(g);
	} else {
		spin_lock_irq(&g->state_lock);
		g->state = KNET_GROUP_CLOSING;
		spin_unlock_irq(&g->state_lock);
		wake_up_all(&g->wait);
	}
	cancel_work_sync(&g->err_work);
	cancel_delayed_work_sync(&g->reconnect_work);
	mutex_lock(&g->lock);
	/* What the upper layer held before CLOSING goes, and fails. */
	if (g->ops->up)
		g->ops->up(g);
	mutex_unlock(&g->lock);
}
EXPORT_SYMBOL_GPL(knet_group_stop);

/**
 * knet_group_close() - free a group's connections
 * @g: the group, opened; stopped if it was started; no request of it runs
 *
 * Context: process context, may sleep.
 */
void knet_group_close(struct knet_group *g)
{
	struct knet_group_conns *c = knet_group_take(g);

	if (c)
		knet_group_release(c);
	/* Connections whose last user was a request are freed by the workqueue. */
	if (!atomic_dec_and_test(&g->conns))
		wait_for_completion(&g->conns_gone);
	kfree(g->busy);
	g->busy = NULL;
}
EXPORT_SYMBOL_GPL(knet_group_close);

static unsigned int knet_group_busy_of(const void *arg, unsigned int i)
{
	return knet_group_busy(arg, i);
}

/**
 * knet_group_pick() - the connection for a request of an upper layer
 * @g: the group
 *
 * The connection with the fewest requests not yet over, the first on a
 * tie (knet_least_busy()): requests one at a time all take the first,
 * a deep stream of requests spreads over all of them. A request is sent
 * again on the connection it was given, whichever connections the group
 * has by then.
 *
 * Context: any; the choice is approximate when requests start together.
 * Return: the connection's index, counted busy until knet_group_unpick().
 */
unsigned int knet_group_pick(struct knet_group *g)
{
	unsigned int conn = knet_least_busy(g->nr, 0, knet_group_busy_of, g);

	atomic_inc(&g->busy[conn]);
	return conn;
}
EXPORT_SYMBOL_GPL(knet_group_pick);

/**
 * knet_group_unpick() - a request of knet_group_pick() is over
 * @g: the group
 * @conn: the connection knet_group_pick() returned
 *
 * Context: any.
 */
void knet_group_unpick(struct knet_group *g, unsigned int conn)
{
	atomic_dec(&g->busy[conn]);
}
EXPORT_SYMBOL_GPL(knet_group_unpick);

/* The upper layer's word on sending RQ now (struct knet_group_ops @admit). */
static int knet_group_admit(struct knet_group *g, const struct knet_request *rq)
{
	return g->ops->admit ? g->ops->admit(g, rq) : 0;
}

/*
 * A try of a call met a failure of the connection, or found none: may it
 * try again (0), after waiting for the group to leave RECONNECTING?
 * -EIO once @tries are spent, -EINTR on a fatal signal.
 */
static int knet_group_wait(struct knet_group *g, unsigned int *tries, bool failed)
{
	unsigned int max = READ_ONCE(g->tries);
	long left;

	if (failed && max && ++*tries >= max)
		return -EIO;
	left = wait_event_killable_timeout(g->wait,
					   knet_group_state(g) != KNET_GROUP_RECONNECTING,
					   READ_ONCE(g->timeout));
	if (left < 0)
		return -EINTR;
	/* A wait for the server that ran out is a try spent too. */
	if (!left && max && ++*tries >= max)
		return -EIO;
	return 0;
}

/**
 * knet_group_call() - knet_call() that survives the connections
 * @g: the group, started
 * @conn: the connection to send on, e.g. from knet_group_pick()
 * @rq: the request; sent again unchanged after a reconnect
 *
 * A failure of the connection (time-out, lost connection, a reply that
 * lied) makes the group reconnect; the call waits for it and sends the
 * same request again: until the server is back when @g->tries is 0, else
 * for at most @g->tries tries. @g->ops->admit is asked before each send.
 *
 * Context: process context (the owner's, for user memory); killable.
 * Return: 0 when the server answered (@rq->status is its answer); -EIO
 * when the tries ran out or the group failed or is closing; -EINTR; the
 * error of @admit that refused it; or a non-transport error of
 * knet_call().
 */
int knet_group_call(struct knet_group *g, unsigned int conn, struct knet_request *rq)
{
	enum knet_group_state state;
	struct knet_group_conns *c;
	unsigned int tries = 0;
	int ret;
	u64 gen;

	for (;;) {
		c = knet_group_get(g, &state);
		if (!c) {
			if (state != KNET_GROUP_RECONNECTING)
				return -EIO;
			ret = knet_group_wait(g, &tries, false);
			if (ret)
				return ret;
			continue;
		}
		ret = knet_group_admit(g, rq);
		if (ret) {
			knet_group_put(c);
			if (ret != -EAGAIN)
				return ret;
			/* The upper layer holds it back: wait, then ask again. */
			ret = g->ops->admit_wait(g);
			if (ret)
				return ret;
			continue;
		}
		ret = knet_call(c->mq->q[conn % c->mq->nr], rq, READ_ONCE(g->timeout));
		gen = c->gen;
		knet_group_put(c);
		if (!ret || !knet_group_call_error(ret))
			return ret;
		if (ret == -EPROTO)
			pr_warn_ratelimited("%s: the answer of %pISc to %u did not parse\n",
					    g->name, &g->params.addr, rq->opcode);
		state = knet_group_lost_gen(g, gen);
		if (state == KNET_GROUP_NEW)
			return ret;	/* not in use yet: the caller's to handle */
		if (state != KNET_GROUP_LIVE && state != KNET_GROUP_RECONNECTING)
			return -EIO;
		ret = knet_group_wait(g, &tries, true);
		if (ret)
			return ret;
		atomic_inc(&g->resent);
	}
}
EXPORT_SYMBOL_GPL(knet_group_call);

static void knet_srq_work(struct work_struct *w)
{
	struct knet_srq *srq = container_of(w, struct knet_srq, work);
	int err = srq->rq.error;

	if (!srq->refused && knet_group_call_error(err)) {
		/* Sent again the waiting way, as the submitter would have. */
		if (srq->gen)
			atomic_inc(&srq->g->resent);
		if (srq->mm && !mmget_not_zero(srq->mm)) {
			srq->rq.error = -EIO;	/* the process is gone */
		} else {
			if (srq->mm)
				kthread_use_mm(srq->mm);
			srq->rq.error = knet_group_call(srq->g, srq->conn, &srq->rq);
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
	bool again = knet_group_call_error(rq->error);

	/* The others of its connections do not wait for it to be sent again. */
	if (again)
		knet_group_lost_gen(srq->g, srq->gen);
	/* Nothing to send again: a caller that can end here does so now. */
	if ((srq->softirq_done || (srq->task_done && in_task())) && !again &&
	    knet_srq_put_mm_atomic(srq)) {
		atomic_inc(&srq->g->ended_here);
		srq->done(srq);
		return;
	}
	queue_work(knet_wq(), &srq->work);
}

/**
 * knet_group_submit() - send a request without waiting for its answer
 * @g: the group, started
 * @conn: the connection to send on, e.g. from knet_group_pick()
 * @srq: the request: @srq->rq filled in as for knet_submit() (but @done and
 *	@priv, which are knet's), and @srq->done
 *
 * @srq->done is called once, in process context (a workqueue) or, with
 * @srq->softirq_done and no failure of the connection, in the completion's
 * softirq context (with @srq->task_done, in the completion's context when
 * that is a task's), when the request is over: @srq->rq.error is 0 (the
 * server answered, @srq->rq.status says how) or the error that ended it
 * after the tries of knet_group_call().
 *
 * Context: process context (the owner's, for user memory); waits for a
 * credit when all are in use.
 */
void knet_group_submit(struct knet_group *g, unsigned int conn, struct knet_srq *srq)
{
	enum knet_group_state state;
	struct knet_group_conns *c;
	int admit = 0, ret;

	INIT_WORK(&srq->work, knet_srq_work);
	srq->g = g;
	srq->conn = conn;
	srq->gen = 0;
	srq->refused = false;
	srq->mm = NULL;
	if (srq->rq.mem && srq->rq.mem->type == KNET_MEM_UVEC) {
		srq->mm = current->mm;
		mmgrab(srq->mm);
	}
	srq->rq.done = knet_srq_done;
	srq->rq.priv = srq;
	c = knet_group_get(g, &state);
	if (c) {
		admit = knet_group_admit(g, &srq->rq);
		if (!admit) {
			srq->gen = c->gen;
			ret = knet_submit_wait(c->mq->q[conn % c->mq->nr], &srq->rq,
					       READ_ONCE(g->timeout));
		} else {
			/* Held (the worker waits until it may go), or refused. */
			ret = admit == -EAGAIN ? -ENOTCONN : admit;
		}
		knet_group_put(c);
	} else {
		/* Reconnecting: the worker waits; failed or closing: it fails. */
		ret = state == KNET_GROUP_RECONNECTING ? -ENOTCONN : -EIO;
	}
	if (ret) {
		/*
		 * Not sent: the worker tries the waiting way, or reports it
		 * (one @admit refused as it is, without asking again).
		 */
		srq->refused = admit && admit != -EAGAIN;
		srq->rq.error = ret;
		queue_work(knet_wq(), &srq->work);
	}
}
EXPORT_SYMBOL_GPL(knet_group_submit);

int knet_group_init(void)
{
	knet_group_wq = alloc_workqueue("knet", WQ_MEM_RECLAIM | WQ_UNBOUND, 0);
	return knet_group_wq ? 0 : -ENOMEM;
}

void knet_group_exit(void)
{
	destroy_workqueue(knet_group_wq);
}

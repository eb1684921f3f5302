// SPDX-License-Identifier: GPL-2.0-only
/*
 * Connection groups: a set of connections to one server (knet_mq) that
 * knet takes down and connects again when it fails, for an upper layer
 * whose requests are held meanwhile (MXBD's block requests).
 *
 * States. NEW: opened, the upper layer not yet ready; a failure then is
 * the caller's to handle. LIVE: requests go. Any failure of the connections (a request
 * ended by one, a device removed, a send that found no connection) makes
 * the group RECONNECTING and queues the error work: under @lock it has the
 * upper layer stop sending (ops->down), aborts every connection so that
 * each request of theirs ends and can be held, and frees them. The
 * reconnect work then connects with knet's policy (knet_reconnect_*),
 * runs the upper layer's handshake (ops->setup) on the new connections
 * and, once it passes, makes the group LIVE and lets the held requests go
 * (ops->up). A server away past the loss time-out, or a handshake that
 * says it is not the same server (-EPROTO), makes the group FAILED: held
 * requests go too (ops->up) and fail there. knet_group_stop() makes it
 * CLOSING for good.
 *
 * The state is changed under @state_lock, which knet_group_hold() also
 * takes: a request is held only while the group may still send it, and
 * every request held before the group turns FAILED or CLOSING is let go
 * by the ops->up that follows.
 */
/* Messages are about the upper layer's device: its @name says whose. */
#define pr_fmt(fmt) fmt

#include <linux/module.h>
#include <linux/slab.h>

#include "knet.h"
#include "knet_int.h"

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

/* Under g->state_lock: a live group starts its recovery. */
static void __knet_group_lost(struct knet_group *g)
{
	if (g->state != KNET_GROUP_LIVE)
		return;
	g->state = KNET_GROUP_RECONNECTING;
	queue_work(knet_wq(), &g->err_work);
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

/* knet_ep_params.removed: a connection's device goes; all are replaced. */
static void knet_group_removed(void *priv)
{
	knet_group_lost(priv);
}

static struct knet_mq *knet_group_connect(struct knet_group *g, int *reason)
{
	struct knet_ep_params p = g->params;

	p.removed = knet_group_removed;
	p.priv = g;
	return knet_mq_connect(&p, g->nr, reason);
}

/* Under g->lock: set state TO unless the group left FROM meanwhile. */
static void knet_group_move(struct knet_group *g, enum knet_group_state from,
			    enum knet_group_state to)
{
	spin_lock_irq(&g->state_lock);
	if (g->state == from)
		g->state = to;
	spin_unlock_irq(&g->state_lock);
}

static void knet_group_err_work(struct work_struct *w)
{
	struct knet_group *g = container_of(w, struct knet_group, err_work);
	unsigned int i;

	mutex_lock(&g->lock);
	if (READ_ONCE(g->state) != KNET_GROUP_RECONNECTING)
		goto out;
	g->ops->down(g);
	if (g->mq) {
		/* Each request ends (held) once the server cannot reach its memory. */
		for (i = 0; i < g->mq->nr; i++)
			knet_ep_abort(g->mq->q[i]);
		knet_mq_destroy(g->mq);
		WRITE_ONCE(g->mq, NULL);
	}
	pr_warn("%s: connection to %pISc lost: I/O held, reconnecting\n", g->name,
		&g->params.addr);
	knet_reconnect_start(&g->rc, 0, g->loss_timeout);
	mod_delayed_work(knet_wq(), &g->reconnect_work, 0);
out:
	mutex_unlock(&g->lock);
}

static void knet_group_reconnect_work(struct work_struct *w)
{
	struct knet_group *g = container_of(to_delayed_work(w), struct knet_group,
					    reconnect_work);
	struct knet_mq *mq;
	int reason, ret;
	long delay;

	mutex_lock(&g->lock);
	if (READ_ONCE(g->state) != KNET_GROUP_RECONNECTING)
		goto out;
	mq = knet_group_connect(g, &reason);
	if (!IS_ERR(mq)) {
		ret = g->ops->setup(g, mq);
		if (!ret) {
			WRITE_ONCE(g->mq, mq);
			knet_group_move(g, KNET_GROUP_RECONNECTING, KNET_GROUP_LIVE);
			atomic_inc(&g->reconnects);
			pr_info("%s: reconnected to %pISc after %u ms\n", g->name,
				&g->params.addr, knet_reconnect_elapsed_ms(&g->rc));
			g->ops->up(g);
			goto out;
		}
		knet_mq_destroy(mq);
		if (ret == -EPROTO) {
			/* Not the server the group was opened on, or one that lies. */
			knet_group_move(g, KNET_GROUP_RECONNECTING, KNET_GROUP_FAILED);
			g->ops->up(g);
			goto out;
		}
	}
	delay = knet_reconnect_next(&g->rc);
	if (delay < 0) {
		pr_err("%s: no server for %d s: failing I/O\n", g->name, g->loss_timeout);
		knet_group_move(g, KNET_GROUP_RECONNECTING, KNET_GROUP_FAILED);
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
 *	set (@params.removed and @params.priv are the group's own)
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
	struct knet_mq *mq;

	g->state = KNET_GROUP_NEW;
	spin_lock_init(&g->state_lock);
	mutex_init(&g->lock);
	INIT_WORK(&g->err_work, knet_group_err_work);
	INIT_DELAYED_WORK(&g->reconnect_work, knet_group_reconnect_work);
	atomic_set(&g->reconnects, 0);
	mq = knet_group_connect(g, reason);
	if (IS_ERR(mq))
		return PTR_ERR(mq);
	g->mq = mq;
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
	spin_lock_irq(&g->state_lock);
	if (g->state == KNET_GROUP_NEW)
		g->state = KNET_GROUP_LIVE;
	spin_unlock_irq(&g->state_lock);
}
EXPORT_SYMBOL_GPL(knet_group_start);

/**
 * knet_group_stop() - stop a group's recovery for good
 * @g: the group, started
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
	unsigned int i;

	spin_lock_irq(&g->state_lock);
	g->state = KNET_GROUP_CLOSING;
	spin_unlock_irq(&g->state_lock);
	cancel_work_sync(&g->err_work);
	cancel_delayed_work_sync(&g->reconnect_work);
	mutex_lock(&g->lock);
	if (force && g->mq)
		for (i = 0; i < g->mq->nr; i++)
			knet_ep_abort(g->mq->q[i]);
	/* What the upper layer held before CLOSING goes, and fails. */
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
	if (g->mq)
		knet_mq_destroy(g->mq);
	g->mq = NULL;
}
EXPORT_SYMBOL_GPL(knet_group_close);

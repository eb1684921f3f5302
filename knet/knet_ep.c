// SPDX-License-Identifier: GPL-2.0-only
/*
 * knet's endpoints, whatever their transport: connecting (the transport
 * chosen, the server's limits taken, the authentication), destroying,
 * aborting, and completion groups of several endpoints to one server.
 */
#define pr_fmt(fmt) "knet: " fmt

#include <linux/debugfs.h>
#include <linux/moduleparam.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/workqueue.h>

#include "knet_int.h"

/**
 * knet_transport_parse() - read a transport's name
 * @s: "rdma", "tcp" or "auto"
 *
 * Return: the enum knet_transport_sel, or -EINVAL.
 */
int knet_transport_parse(const char *s)
{
	if (!strcmp(s, "rdma"))
		return KNET_TRANSPORT_RDMA;
	if (!strcmp(s, "tcp"))
		return KNET_TRANSPORT_TCP;
	if (!strcmp(s, "auto"))
		return KNET_TRANSPORT_AUTO;
	return -EINVAL;
}
EXPORT_SYMBOL_GPL(knet_transport_parse);

/**
 * knet_transport_str() - the name of a transport choice
 * @t: an enum knet_transport_sel
 *
 * Return: "rdma", "tcp" or "auto".
 */
const char *knet_transport_str(enum knet_transport_sel t)
{
	switch (t) {
	case KNET_TRANSPORT_TCP:
		return "tcp";
	case KNET_TRANSPORT_AUTO:
		return "auto";
	default:
		return "rdma";
	}
}
EXPORT_SYMBOL_GPL(knet_transport_str);

/**
 * knet_digest_parse() - read which digests to use over TCP
 * @s: "none", "header", "data" or "both"
 *
 * Return: KNET_CMF_HDGST and KNET_CMF_DDGST as named, or -EINVAL.
 */
int knet_digest_parse(const char *s)
{
	if (!strcmp(s, "none"))
		return 0;
	if (!strcmp(s, "header"))
		return KNET_CMF_HDGST;
	if (!strcmp(s, "data"))
		return KNET_CMF_DDGST;
	if (!strcmp(s, "both"))
		return KNET_CMF_DIGESTS;
	return -EINVAL;
}
EXPORT_SYMBOL_GPL(knet_digest_parse);

/**
 * knet_digest_str() - the name of a set of digests
 * @digests: KNET_CMF_HDGST, KNET_CMF_DDGST, both or none
 *
 * Return: "none", "header", "data" or "both".
 */
const char *knet_digest_str(unsigned int digests)
{
	return knet_digests_str(digests);
}
EXPORT_SYMBOL_GPL(knet_digest_str);

/**
 * knet_ep_digests() - the digests an endpoint's PDUs carry
 * @ep: a connected endpoint
 *
 * Return: KNET_CMF_HDGST and KNET_CMF_DDGST as in use (none over RDMA).
 */
unsigned int knet_ep_digests(const struct knet_ep *ep)
{
	return ep->digests;
}
EXPORT_SYMBOL_GPL(knet_ep_digests);

static int knet_transport_param_set(const char *val, const struct kernel_param *kp)
{
	char buf[8];
	int t;

	/* "tcp\n" from echo, as sysfs hands it over. */
	if (strscpy(buf, val, sizeof(buf)) < 0)
		return -EINVAL;
	strim(buf);
	t = knet_transport_parse(buf);
	if (t < 0)
		return t;
	WRITE_ONCE(*(int *)kp->arg, t);
	return 0;
}

static int knet_transport_param_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%s\n", knet_transport_str(READ_ONCE(*(int *)kp->arg)));
}

/*
 * knet_transport_param_ops - a module parameter naming a transport, an int
 * holding an enum knet_transport_sel: "rdma", "tcp" or "auto", read and
 * written as such (module_param_cb()); writable while the module runs.
 */
const struct kernel_param_ops knet_transport_param_ops = {
	.set	= knet_transport_param_set,
	.get	= knet_transport_param_get,
};
EXPORT_SYMBOL_GPL(knet_transport_param_ops);

/**
 * knet_ep_transport() - the transport an endpoint connected with
 * @ep: the endpoint
 *
 * Return: "rdma" or "tcp" (what "auto" chose).
 */
const char *knet_ep_transport(const struct knet_ep *ep)
{
	return ep->tr->name;
}
EXPORT_SYMBOL_GPL(knet_ep_transport);

/*
 * The server accepted EP with REP: take its limits, bounded by knet's own
 * and by MAX_IO, the most the transport moves in one request.
 */
int knet_ep_accepted(struct knet_ep *ep, const struct knet_cm_rep *rep, u32 max_io)
{
	if (le16_to_cpu(rep->version) != KNET_PROTO_VERSION || !rep->credits)
		return -EPROTO;
	ep->lim.credits = min_t(u32, le16_to_cpu(rep->credits), KNET_SLOTS);
	ep->lim.inline_max = min_t(u32, le32_to_cpu(rep->inline_max),
				   KNET_MSG_SIZE - sizeof(struct knet_hdr) - 512);
	ep->lim.max_io = min_t(u32, le32_to_cpu(rep->max_io), max_io);
	ep->lim.max_segs = le16_to_cpu(rep->max_segs);
	ep->credits = ep->lim.credits;
	ep->server_auth = le16_to_cpu(rep->flags) & KNET_CMF_AUTH;
	/* Exactly the digests asked for (the transport asked for none over RDMA). */
	if ((le16_to_cpu(rep->flags) & KNET_CMF_DIGESTS) != ep->digests) {
		pr_err("%pISpc: the server grants digests '%s' for '%s' asked: refused\n",
		       &ep->peer, knet_digest_str(le16_to_cpu(rep->flags)),
		       knet_digest_str(ep->digests));
		return -EPROTO;
	}
	return 0;
}

/* Free what every endpoint has, its transport's part gone. */
void knet_ep_free(struct knet_ep *ep)
{
	kfree(ep);
	knet_obj_add(KNET_OBJ_EP, -1);
}

static struct knet_ep *knet_ep_alloc(const struct knet_ep_params *p)
{
	struct knet_ep *ep;

	ep = kzalloc(sizeof(*ep), GFP_KERNEL);
	if (!ep)
		return NULL;
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
	ep->peer = p->addr;
	return ep;
}

/*
 * The transport of EP for P: "auto" takes RDMA when an RDMA device routes
 * to the server (the route resolved, kept for the connect), TCP otherwise.
 */
static const struct knet_transport *knet_ep_choose(struct knet_ep *ep,
						   const struct knet_ep_params *p)
{
	int ret;

	switch (p->transport) {
	case KNET_TRANSPORT_TCP:
		return &knet_tcp_transport;
	case KNET_TRANSPORT_AUTO:
		ret = knet_rdma_resolve(ep, p);
		if (!ret)
			return &knet_rdma_transport;
		if (ret == -EINTR || ret == -ERESTARTSYS)
			return ERR_PTR(ret);
		/* The ID of a failed resolution goes; TCP needs none. */
		knet_rdma_transport.destroy(ep, false);
		ep->cm_id = NULL;
		return &knet_tcp_transport;
	default:
		return &knet_rdma_transport;
	}
}

/**
 * knet_ep_connect() - connect an endpoint to a server's export or volume
 * @p: where, what and by which transport
 * @reason: out: the server's enum knet_cm_reject reason when refused, else 0
 *
 * Context: process context, may sleep; killable.
 * Return: the endpoint, or an ERR_PTR(): -ECONNREFUSED (refused, see
 * @reason), -ETIMEDOUT, -EHOSTUNREACH, -EOPNOTSUPP (the device cannot do
 * FRWR), -EPROTO (the server's answer did not parse), -EAFNOSUPPORT (an
 * address neither IPv4 nor IPv6, or a source of the other family),
 * -EACCES (the authentication failed), -EINTR, -ENOMEM.
 */
struct knet_ep *knet_ep_connect(const struct knet_ep_params *p, int *reason)
{
	struct knet_cm_req req = {};
	size_t name_len = strlen(p->name);
	struct knet_ep *ep;
	bool gone;
	int ret;

	*reason = 0;
	if (!name_len || name_len > KNET_NAME_MAX)
		return ERR_PTR(-EINVAL);
	if ((p->addr.ss_family != AF_INET && p->addr.ss_family != AF_INET6) ||
	    (p->src.ss_family && p->src.ss_family != p->addr.ss_family))
		return ERR_PTR(-EAFNOSUPPORT);
	ep = knet_ep_alloc(p);
	if (!ep)
		return ERR_PTR(-ENOMEM);
	ep->tr = knet_ep_choose(ep, p);
	if (IS_ERR(ep->tr)) {
		ret = PTR_ERR(ep->tr);
		ep->tr = &knet_rdma_transport;
		goto fail;
	}

	req.version = cpu_to_le16(KNET_PROTO_VERSION);
	req.service = p->service;
	req.name_len = name_len;
	req.recv_depth = cpu_to_le16(KNET_RECV_DEPTH);
	req.inline_max = cpu_to_le32(KNET_MSG_SIZE - sizeof(struct knet_hdr) - 512);
	if (p->secret && p->secret->len)
		req.flags = cpu_to_le16(KNET_CMF_AUTH);
	if (ep->tr == &knet_tcp_transport) {
		ep->digests = p->digests & KNET_CMF_DIGESTS;
		req.flags |= cpu_to_le16(ep->digests);
	}
	memcpy(req.name, p->name, name_len);
	ret = ep->tr->connect(ep, p, &req, reason, &gone);
	if (gone)
		return ERR_PTR(ret);
	if (ret)
		goto fail;

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
	pr_info("connected to %pISpc (%s '%s') over %s: %u credits, inline %u, max I/O %u%s%s%s\n",
		&p->addr, p->service == KNET_SVC_FILE ? "export" : "volume", p->name,
		ep->tr->name, ep->lim.credits, ep->lim.inline_max, ep->lim.max_io,
		ep->server_auth ? ", authenticated" : "", ep->digests ? ", digests " : "",
		ep->digests ? knet_digest_str(ep->digests) : "");
	return ep;

fail:
	ep->dead = true;
	ep->connected = false;
	ep->tr->destroy(ep, false);
	knet_ep_free(ep);
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
	ep->tr->destroy(ep, was_connected);
	knet_ep_free(ep);
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

static unsigned int knet_mq_busy(const void *arg, unsigned int i)
{
	const struct knet_mq *mq = arg;

	return READ_ONCE(mq->q[i]->in_flight);
}

/**
 * knet_mq_submit() - send a request on the least busy endpoint of a group
 * @mq: the group
 * @home: the caller's own endpoint (its CPU's queue), an index into @mq
 * @rq: the request, as for knet_submit()
 *
 * The request goes to the endpoint with the fewest requests in flight,
 * @home on a tie (knet_least_busy()): requests one at a time stay on the
 * caller's own connection and completion vector. When that endpoint has no
 * slot or credit free, @home is tried.
 *
 * Context: as knet_submit().
 * Return: as knet_submit().
 */
int knet_mq_submit(struct knet_mq *mq, unsigned int home, struct knet_request *rq)
{
	unsigned int best;
	int ret;

	home %= mq->nr;
	best = knet_least_busy(mq->nr, home, knet_mq_busy, mq);
	ret = knet_submit(mq->q[best], rq);
	if (ret == -EAGAIN && best != home)
		ret = knet_submit(mq->q[home], rq);
	return ret;
}
EXPORT_SYMBOL_GPL(knet_mq_submit);

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

/* Is EP broken (lost, timed out, aborted)? For connection groups. */
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

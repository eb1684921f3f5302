// SPDX-License-Identifier: GPL-2.0-only
/*
 * knet's connections: RDMA CM, the queue pair, its completion queue and
 * buffers, the connect handshake, teardown, and endpoint groups (one
 * connection a queue).
 */
#define pr_fmt(fmt) "knet: " fmt

#include <linux/completion.h>
#include <linux/debugfs.h>
#include <linux/slab.h>
#include <linux/workqueue.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

#include "knet_int.h"
#include "regcache.h"

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

/*
 * Under knet_lock, from knet_remove_one(): the device of the endpoint at
 * EP_NODE goes away. It fails now and its owner is told to destroy it.
 */
void knet_ep_device_removed(struct list_head *ep_node)
{
	struct knet_ep *ep = list_entry(ep_node, struct knet_ep, dev_node);

	/* A lost connection, as when the CM reports it: groups recover. */
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

// SPDX-License-Identifier: GPL-2.0-only
/*
 * knet's RDMA transport: RDMA CM, the queue pair, its completion queue
 * and buffers, the connect handshake, the completions of sends,
 * registrations and invalidations, receives, the fence, and teardown.
 * Memory is lent by fast registration (knet_frwr.c).
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

static void knet_send_done(struct ib_cq *cq, struct ib_wc *wc);
static void knet_reg_done(struct ib_cq *cq, struct ib_wc *wc);
static void knet_inv_done(struct ib_cq *cq, struct ib_wc *wc);
static void knet_recv_done(struct ib_cq *cq, struct ib_wc *wc);
static int knet_post_recv(struct knet_ep *ep, struct knet_rx *rx);

static int knet_parse_rep(struct knet_ep *ep, const u8 *data, u8 len)
{
	struct knet_cm_rep rep;

	/* libfabric's length byte, then our structure. */
	if (len < 1 + sizeof(rep) || data[0] < sizeof(rep))
		return -EPROTO;
	memcpy(&rep, data + 1, sizeof(rep));
	return knet_ep_accepted(ep, &rep, (ep->max_pages - 1) << PAGE_SHIFT);
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

static void knet_rdma_destroy(struct knet_ep *ep, bool was_connected)
{
	if (!ep->cm_id)
		return;		/* not even an ID made */
	if (was_connected)
		rdma_disconnect(ep->cm_id);
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
	knet_rdma_destroy(ep, false);
	knet_ep_free(ep);
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

/*
 * Resolve the RDMA address and route of @p->addr for @ep: fails when no
 * RDMA device routes to it (transport "auto" then takes TCP).
 */
int knet_rdma_resolve(struct knet_ep *ep, const struct knet_ep_params *p)
{
	struct sockaddr_storage src;
	struct sockaddr *srcp = NULL;
	int ret;

	ep->cm_id = rdma_create_id(&init_net, knet_cm_handler, ep, RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(ep->cm_id)) {
		ret = PTR_ERR(ep->cm_id);
		ep->cm_id = NULL;
		return ret;
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
	return ret;
}

static int knet_rdma_connect(struct knet_ep *ep, const struct knet_ep_params *p,
			     const struct knet_cm_req *req, int *reason, bool *gone)
{
	struct rdma_conn_param param = {};
	u8 pdata[1 + sizeof(struct knet_cm_req)];
	int ret = 0;

	*gone = false;
	if (!ep->cm_id)
		ret = knet_rdma_resolve(ep, p);
	if (!ret)
		ret = knet_setup_qp(ep);
	if (ret)
		return ret;
	/* libfabric's verbs provider frames private data with a length byte. */
	pdata[0] = sizeof(*req);
	memcpy(pdata + 1, req, sizeof(*req));
	param.private_data = pdata;
	param.private_data_len = sizeof(pdata);
	param.responder_resources = min_t(u8, 16, ep->dev->attrs.max_qp_rd_atom);
	param.initiator_depth = min_t(u8, 16, ep->dev->attrs.max_qp_init_rd_atom);
	param.retry_count = 7;
	param.rnr_retry_count = 7;
	param.flow_control = 1;
	BUILD_BUG_ON(sizeof(pdata) != sizeof_field(struct knet_conn_call, pdata));
	ret = knet_connect_call(ep, &param, gone);
	if (*gone)
		return ret;
	ret = knet_cm_wait(ep, ret);
	if (ret)
		*reason = ep->reject_reason;
	return ret;
}

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

static void knet_recv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct knet_rx *rx = container_of(wc->wr_cqe, struct knet_rx, cqe);
	struct knet_ep *ep = rx->ep;

	if (wc->status != IB_WC_SUCCESS) {
		if (wc->status != IB_WC_WR_FLUSH_ERR)
			pr_err_ratelimited("receive failed: %s\n", ib_wc_status_msg(wc->status));
		knet_ep_fail(ep, -ECONNRESET);
		return;
	}
	ib_dma_sync_single_for_cpu(ep->dev, rx->dma, KNET_MSG_SIZE, DMA_FROM_DEVICE);
	if (!knet_reply(ep, rx->buf, wc->byte_len, wc) && knet_post_recv(ep, rx))
		knet_ep_fail(ep, -EIO);
}

/* Under ep->lock: the reply of S came in the receive of WC. */
static bool knet_rdma_replied(struct knet_ep *ep, struct knet_slot *s, const void *arg)
{
	const struct ib_wc *wc = arg;
	struct ib_send_wr inv = {
		.opcode = IB_WR_LOCAL_INV,
		.wr_cqe = &s->inv_cqe,
		.send_flags = IB_SEND_SIGNALED,
	};

	/* The server may have invalidated the key with its reply. */
	if (s->mr_used && (wc->wc_flags & IB_WC_WITH_INVALIDATE) &&
	    wc->ex.invalidate_rkey == s->mr->rkey)
		s->mr_live = false;
	if (!s->mr_live)
		return true;
	inv.ex.invalidate_rkey = s->mr->rkey;
	s->need |= EV_INV;
	if (ib_post_send(ep->cm_id->qp, &inv, NULL)) {
		s->need &= ~EV_INV;
		return false;
	}
	return true;
}

static void knet_rdma_unmap(struct knet_ep *ep, struct knet_slot *s)
{
	unsigned int i;

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
}

static int knet_rdma_post(struct knet_ep *ep, struct knet_slot *s, u32 len, bool may_sleep)
{
	struct ib_sge sge = {
		.addr = s->msg_dma,
		.length = len,
		.lkey = ep->pd->local_dma_lkey,
	};
	struct ib_send_wr send = {
		.opcode = IB_WR_SEND,
		.wr_cqe = &s->send_cqe,
		.send_flags = IB_SEND_SIGNALED,
		.sg_list = &sge,
		.num_sge = 1,
	};

	ib_dma_sync_single_for_device(ep->dev, s->msg_dma, len, DMA_TO_DEVICE);
	if (s->mr_used)
		s->reg.wr.next = &send;
	return ib_post_send(ep->cm_id->qp, s->mr_used ? &s->reg.wr : &send, NULL);
}

static void knet_rdma_fence(struct knet_ep *ep, bool disconnect)
{
	struct ib_qp_attr attr = { .qp_state = IB_QPS_ERR };
	int ret;

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

const struct knet_transport knet_rdma_transport = {
	.name		= "rdma",
	.connect	= knet_rdma_connect,
	.map		= knet_map_mem,
	.unmap		= knet_rdma_unmap,
	.post		= knet_rdma_post,
	.replied	= knet_rdma_replied,
	.fence		= knet_rdma_fence,
	.destroy	= knet_rdma_destroy,
};

// SPDX-License-Identifier: GPL-2.0-only
/*
 * knet's TCP transport: the same requests, credits and replies as on
 * RDMA, over a kernel socket (knet_proto.h, "The TCP transport").
 *
 * Each endpoint has one work item (io_work) that sends and receives for
 * it, woken by the socket's callbacks and by new requests; it never
 * blocks. The server drives every transfer as on RDMA: a request whose
 * data is too large to travel inline offers it with one segment of
 * address 0 (addresses are offsets into its data), and the server asks
 * for a write's data with R2T PDUs and pushes a read's data with DATA
 * PDUs. io_work checks each against the request: a PDU for no request,
 * for a range the request did not offer, beyond what it offered, or of
 * the wrong direction breaks the endpoint.
 *
 * The memory a request lends is reached by io_work alone, and only while
 * the request waits for its reply: the reply, handled by io_work too,
 * ends that. When the endpoint fails, the fence stops io_work (the socket
 * shut down, the work cancelled) before any request that lent memory
 * ends, so that nothing writes into it or reads from it afterwards.
 * Pages go to the socket by reference where the kernel allows it
 * (MSG_SPLICE_PAGES, or sendpage before 6.5); the socket then holds its
 * own references, so a request may end before they are sent again.
 *
 * With digests (KNET_CMF_HDGST, KNET_CMF_DDGST, asked for at connect),
 * each PDU header and payload is followed by its CRC32C: computed when a
 * PDU starts to go out, checked when one is whole; a mismatch resets the
 * connection, which reconnects as after any loss.
 */
#define pr_fmt(fmt) "knet: " fmt

#include <linux/crc32c.h>
#include <linux/highmem.h>
#include <linux/mutex.h>
#include <linux/net.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/uio.h>
#include <linux/workqueue.h>
#include <net/sock.h>
#include <net/tcp.h>

#include "knet_int.h"
#include "regcache.h"

#define KNET_TCP_R2T_MAX	4	/* R2Ts of one request served at once, at most */
#define KNET_TCP_BV_MAX		(KNET_MAX_PAGES + KNET_UVEC_MAX)
#define KNET_TCP_BUDGET_US	1000	/* io_work's turn before it lets others run */
#define KNET_TCP_PDU_LEN	sizeof(struct knet_tcp_pdu)

static struct workqueue_struct *knet_tcp_wq;
static struct regcache *knet_tcp_rc;

/* A PDU to send: a request's message, or data an R2T asked for. */
struct knet_tcp_tx {
	struct list_head	node;
	struct knet_slot	*s;
	u8			type;		/* KNET_TCP_MSG or KNET_TCP_DATA */
	bool			busy;
	u32			off;		/* DATA: where in the request's data */
	u32			len;		/* payload bytes */
};

struct knet_tcp_slot {
	struct knet_tcp_tx	msg;
	struct knet_tcp_tx	data[KNET_TCP_R2T_MAX];
	unsigned int		ntx;		/* its PDUs queued or being sent */
	u32			moved;		/* bytes asked for (R2T) or received (DATA) */
	bool			lent;		/* its memory may be asked for or written */
	bool			splice;		/* its pages may go by reference */
	struct bio_vec		*bv;		/* user memory: its pinned pages */
	unsigned int		nbv;
	void			*buf;		/* the message (its header is built to send it) */
};

/**
 * struct knet_tcp - the TCP part of an endpoint
 * @ep: the endpoint
 * @sock: its socket
 * @io_work: sends and receives
 * @send_lock: held by whoever sends: io_work, or a submitter that may sleep
 * @wait: the connect's wait for the socket
 * @live: io_work serves the socket (connected)
 * @stopped: under @ep->lock: nothing more is queued or sent
 * @cb: the callbacks below are the socket's original ones, replaced
 * @data_ready: the socket's original
 * @write_space: the socket's original
 * @state_change: the socket's original
 * @tx_list: PDUs to send, under @ep->lock
 * @hdgst: a digest follows each PDU header
 * @ddgst: a digest follows each PDU payload
 * @tx_cur: the PDU being sent, under @send_lock
 * @tx_hdr: the header of @tx_cur, and its digest
 * @tx_ddgst: the digest of @tx_cur's payload
 * @tx_done: bytes of @tx_cur sent, header and digests included
 * @rx_h: the header being received, and its digest
 * @rx_ddgst: the digest of the payload being received
 * @rx_got: bytes of the header received, then with those of its payload
 *	and its digest
 * @rx_slot: DATA: the request it fills
 * @rx_buf: MSG: the message
 * @slot: each slot's TCP state
 */
struct knet_tcp {
	struct knet_ep		*ep;
	struct socket		*sock;
	struct work_struct	io_work;
	struct mutex		send_lock;	/* whoever sends holds it */
	wait_queue_head_t	wait;
	bool			live;
	bool			stopped;
	bool			cb;
	void			(*data_ready)(struct sock *sk);
	void			(*write_space)(struct sock *sk);
	void			(*state_change)(struct sock *sk);
	struct list_head	tx_list;
	bool			hdgst;
	bool			ddgst;
	struct knet_tcp_tx	*tx_cur;
	u8			tx_hdr[KNET_TCP_PDU_LEN + KNET_TCP_DIGEST];
	__le32			tx_ddgst;
	size_t			tx_done;
	struct {
		struct knet_tcp_pdu	pdu;
		__le32			dgst;
	}			rx_h;
	__le32			rx_ddgst;
	size_t			rx_got;
	struct knet_slot	*rx_slot;
	u8			*rx_buf;
	struct knet_tcp_slot	slot[KNET_SLOTS];
};

static_assert(sizeof(((struct knet_tcp *)0)->rx_h) == KNET_TCP_PDU_LEN + KNET_TCP_DIGEST);

static u32 knet_tcp_tag(const struct knet_slot *s)
{
	return s->idx | (s->gen << 8);
}

/* Bytes of a PDU header on T's stream, its digest included. */
static size_t knet_tcp_hlen(const struct knet_tcp *t)
{
	return KNET_TCP_PDU_LEN + (t->hdgst ? KNET_TCP_DIGEST : 0);
}

/* Bytes of the digest after a payload of LEN bytes. */
static size_t knet_tcp_dlen(const struct knet_tcp *t, u32 len)
{
	return t->ddgst && len ? KNET_TCP_DIGEST : 0;
}

static u32 knet_tcp_crc(const void *p, size_t n)
{
	return ~crc32c(~0U, p, n);
}

/* The CRC32C of the bytes IT covers (kernel-virtual memory or pages). */
static u32 knet_tcp_crc_iter(const struct iov_iter *from)
{
	struct iov_iter it = *from;
	u32 crc = ~0U;

	while (iov_iter_count(&it)) {
		size_t n;

		if (iov_iter_is_kvec(&it)) {
			const struct kvec *v = it.kvec;

			n = min(iov_iter_count(&it), v->iov_len - it.iov_offset);
			crc = crc32c(crc, v->iov_base + it.iov_offset, n);
		} else {
			const struct bio_vec *bv = it.bvec;
			size_t pos = bv->bv_offset + it.iov_offset;
			void *p;

			n = min3(iov_iter_count(&it), (size_t)bv->bv_len - it.iov_offset,
				 PAGE_SIZE - offset_in_page(pos));
			p = kmap_local_page(nth_page(bv->bv_page, pos >> PAGE_SHIFT));
			crc = crc32c(crc, p + offset_in_page(pos), n);
			kunmap_local(p);
		}
		iov_iter_advance(&it, n);
	}
	return ~crc;
}

static void knet_tcp_kick(struct knet_tcp *t)
{
	if (READ_ONCE(t->live))
		queue_work(knet_tcp_wq, &t->io_work);
	wake_up(&t->wait);
}

static void knet_tcp_data_ready(struct sock *sk)
{
	struct knet_tcp *t;

	read_lock_bh(&sk->sk_callback_lock);
	t = sk->sk_user_data;
	if (t)
		knet_tcp_kick(t);
	read_unlock_bh(&sk->sk_callback_lock);
}

static void knet_tcp_write_space(struct sock *sk)
{
	struct knet_tcp *t;

	read_lock_bh(&sk->sk_callback_lock);
	t = sk->sk_user_data;
	if (t && sk_stream_is_writeable(sk)) {
		clear_bit(SOCK_NOSPACE, &sk->sk_socket->flags);
		knet_tcp_kick(t);
	}
	read_unlock_bh(&sk->sk_callback_lock);
}

static void knet_tcp_state_change(struct sock *sk)
{
	void (*orig)(struct sock *sk) = NULL;
	struct knet_tcp *t;

	read_lock_bh(&sk->sk_callback_lock);
	t = sk->sk_user_data;
	if (t) {
		/* A close shows as the end of the stream: io_work reports it. */
		knet_tcp_kick(t);
		orig = t->state_change;
	}
	read_unlock_bh(&sk->sk_callback_lock);
	if (orig)
		orig(sk);
}

/* An iterator over bytes [OFF, OFF + LEN) of the data of the request of S. */
static void knet_tcp_iter(struct knet_tcp_slot *ts, const struct knet_request *rq,
			  unsigned int dir, u32 off, u32 len, struct iov_iter *it)
{
	const struct knet_mem *m = rq->mem;

	switch (m->type) {
	case KNET_MEM_KVEC:
		iov_iter_kvec(it, dir, m->kvec, m->nr, m->skip + m->len);
		iov_iter_advance(it, m->skip + off);
		break;
	case KNET_MEM_BVEC:
		iov_iter_bvec(it, dir, m->bvec, m->nr, m->skip + m->len);
		iov_iter_advance(it, m->skip + off);
		break;
	default:
		iov_iter_bvec(it, dir, ts->bv, ts->nbv, m->len);
		iov_iter_advance(it, off);
		break;
	}
	iov_iter_truncate(it, len);
}

struct knet_tcp_build {
	struct knet_tcp_slot	*ts;
	struct knet_request	*rq;
	unsigned int		pin;
};

/* A page's part of user memory: one page entry. */
static int knet_tcp_user_page(struct regcache_entry *e, unsigned long addr, size_t k, void *arg)
{
	struct knet_tcp_build *b = arg;
	struct bio_vec *bv;

	if (b->ts->nbv == KNET_TCP_BV_MAX)
		return -EINVAL;
	bv = &b->ts->bv[b->ts->nbv++];
	bv->bv_page = regcache_page(e, addr);
	bv->bv_len = k;
	bv->bv_offset = offset_in_page(addr);
	return 0;
}

/* User memory: one page entry per pinned page. */
static int knet_tcp_user_piece(const struct knet_mem *m, unsigned int i, size_t off, size_t n,
			       void *arg)
{
	struct knet_tcp_build *b = arg;

	return knet_pin_pages(b->rq, &b->pin, (unsigned long)m->iov[i].iov_base + off, n,
			      knet_tcp_user_page, b);
}

/* Pages: may each go to the socket by reference? */
static int knet_tcp_page_piece(const struct knet_mem *m, unsigned int i, size_t off, size_t n,
			       void *arg)
{
	struct knet_tcp_build *b = arg;
	size_t pos = m->bvec[i].bv_offset + off;
	size_t last = pos + n - 1;
	size_t p;

	for (p = pos >> PAGE_SHIFT; p <= last >> PAGE_SHIFT; p++)
		if (!sendpage_ok(nth_page(m->bvec[i].bv_page, p)))
			b->ts->splice = false;
	return 0;
}

/* Kernel-virtual memory: directly mapped, as for RDMA; copied, never spliced. */
static int knet_tcp_kvec_piece(const struct knet_mem *m, unsigned int i, size_t off, size_t n,
			       void *arg)
{
	return virt_addr_valid(m->kvec[i].iov_base + off) ? 0 : -EINVAL;
}

static int knet_tcp_map(struct knet_ep *ep, struct knet_slot *s, struct knet_request *rq,
			struct knet_seg *seg)
{
	struct knet_tcp_slot *ts = &ep->tcp->slot[s->idx];
	struct knet_tcp_build b = { .ts = ts, .rq = rq };
	const struct knet_mem *m = rq->mem;
	int ret = 0;

	ts->nbv = 0;
	ts->moved = 0;
	ts->splice = m->type != KNET_MEM_KVEC;	/* slab memory never goes by reference */
	/* Each walk also checks that the entries hold the data (the iterators trust it). */
	if (m->type == KNET_MEM_UVEC)
		ret = knet_mem_walk(m, knet_tcp_user_piece, &b);
	else if (m->type == KNET_MEM_BVEC)
		ret = knet_mem_walk(m, knet_tcp_page_piece, &b);
	else
		ret = knet_mem_walk(m, knet_tcp_kvec_piece, &b);
	if (ret)
		return ret;
	seg->addr = 0;
	seg->rkey = 0;
	seg->len = cpu_to_le32(m->len);
	ts->lent = true;
	s->mr_used = true;
	return 0;
}

static void knet_tcp_unmap(struct knet_ep *ep, struct knet_slot *s)
{
	struct knet_tcp_slot *ts = &ep->tcp->slot[s->idx];

	ts->lent = false;
	ts->nbv = 0;
}

/* Under ep->lock: the reply of S came: nothing reaches its memory now. */
static bool knet_tcp_replied(struct knet_ep *ep, struct knet_slot *s, const void *arg)
{
	ep->tcp->slot[s->idx].lent = false;
	s->mr_live = false;
	return true;
}

/* TX is sent (ERR 0) or never will be: once its request's last, EV_SEND clears. */
static void knet_tcp_tx_done(struct knet_tcp *t, struct knet_tcp_tx *tx, int err)
{
	struct knet_tcp_slot *ts = &t->slot[tx->s->idx];
	unsigned long flags;
	bool last;

	spin_lock_irqsave(&t->ep->lock, flags);
	tx->busy = false;
	last = !--ts->ntx;
	spin_unlock_irqrestore(&t->ep->lock, flags);
	if (last)
		knet_slot_event(tx->s, EV_SEND, err);
}

/* Send from IT; returns bytes sent, 0 when the socket is full, or an error. */
static int knet_tcp_sendmsg(struct knet_tcp *t, struct iov_iter *it, bool splice, bool more)
{
	struct msghdr msg = { .msg_flags = MSG_DONTWAIT | MSG_NOSIGNAL | (more ? MSG_MORE : 0) };
	int ret;

#ifdef MSG_SPLICE_PAGES
	if (splice)
		msg.msg_flags |= MSG_SPLICE_PAGES;
#else
	if (splice) {
		/* Before 6.5: one page at a time by sendpage. */
		const struct bio_vec *bv = it->bvec;
		size_t pos = bv->bv_offset + it->iov_offset;
		size_t n = min3(iov_iter_count(it), (size_t)bv->bv_len - it->iov_offset,
				PAGE_SIZE - offset_in_page(pos));

		ret = kernel_sendpage(t->sock, nth_page(bv->bv_page, pos >> PAGE_SHIFT),
				      offset_in_page(pos), n,
				      msg.msg_flags | (n < iov_iter_count(it) ? MSG_MORE : 0));
		return ret == -EAGAIN ? 0 : ret;
	}
#endif
	msg.msg_iter = *it;
	ret = sock_sendmsg(t->sock, &msg);
	return ret == -EAGAIN ? 0 : ret;
}

/* Send what is left of t->tx_cur; returns bytes sent, 0 when full, or an error. */
static int knet_tcp_send_cur(struct knet_tcp *t)
{
	struct knet_tcp_tx *tx = t->tx_cur;
	struct knet_tcp_slot *ts = &t->slot[tx->s->idx];
	size_t hlen = knet_tcp_hlen(t), end = hlen + tx->len;
	size_t dlen = knet_tcp_dlen(t, tx->len);
	struct iov_iter it;
	struct kvec v[3];

	if (tx->type == KNET_TCP_MSG) {
		/* Header, message and digest in one call. */
		v[0].iov_base = t->tx_hdr;
		v[0].iov_len = hlen;
		v[1].iov_base = ts->buf;
		v[1].iov_len = tx->len;
		v[2].iov_base = &t->tx_ddgst;
		v[2].iov_len = dlen;
		iov_iter_kvec(&it, ITER_SOURCE, v, dlen ? 3 : 2, end + dlen);
		iov_iter_advance(&it, t->tx_done);
		return knet_tcp_sendmsg(t, &it, false, false);
	}
	if (t->tx_done < hlen) {
		v[0].iov_base = t->tx_hdr + t->tx_done;
		v[0].iov_len = hlen - t->tx_done;
		iov_iter_kvec(&it, ITER_SOURCE, v, 1, v[0].iov_len);
		return knet_tcp_sendmsg(t, &it, false, true);
	}
	if (t->tx_done < end) {
		knet_tcp_iter(ts, tx->s->rq, ITER_SOURCE, tx->off + (t->tx_done - hlen),
			      end - t->tx_done, &it);
		return knet_tcp_sendmsg(t, &it, ts->splice, dlen);
	}
	v[0].iov_base = (u8 *)&t->tx_ddgst + (t->tx_done - end);
	v[0].iov_len = end + dlen - t->tx_done;
	iov_iter_kvec(&it, ITER_SOURCE, v, 1, v[0].iov_len);
	return knet_tcp_sendmsg(t, &it, false, false);
}

/* TX is t->tx_cur now: its header, and the digests it goes with. */
static void knet_tcp_start_tx(struct knet_tcp *t, struct knet_tcp_tx *tx)
{
	struct knet_tcp_slot *ts = &t->slot[tx->s->idx];
	struct knet_tcp_pdu *pdu = (struct knet_tcp_pdu *)t->tx_hdr;
	struct iov_iter it;

	t->tx_done = 0;
	memset(pdu, 0, sizeof(*pdu));
	pdu->type = tx->type;
	pdu->length = cpu_to_le32(tx->len);
	if (tx->type == KNET_TCP_DATA) {
		pdu->tag = cpu_to_le32(knet_tcp_tag(tx->s));
		pdu->offset = cpu_to_le32(tx->off);
	}
	if (t->hdgst) {
		__le32 d = cpu_to_le32(knet_tcp_crc(pdu, sizeof(*pdu)));

		memcpy(t->tx_hdr + sizeof(*pdu), &d, sizeof(d));
	}
	if (!knet_tcp_dlen(t, tx->len))
		return;
	if (tx->type == KNET_TCP_MSG) {
		t->tx_ddgst = cpu_to_le32(knet_tcp_crc(ts->buf, tx->len));
	} else {
		knet_tcp_iter(ts, tx->s->rq, ITER_SOURCE, tx->off, tx->len, &it);
		t->tx_ddgst = cpu_to_le32(knet_tcp_crc_iter(&it));
	}
}

/* Send what is queued; returns 1 when something went, 0 when nothing could, or an error. */
static int knet_tcp_send(struct knet_tcp *t)
{
	struct knet_ep *ep = t->ep;
	struct knet_tcp_tx *tx;
	unsigned long flags;
	int progress = 0;
	int ret;

	for (;;) {
		if (!t->tx_cur) {
			spin_lock_irqsave(&ep->lock, flags);
			tx = list_first_entry_or_null(&t->tx_list, struct knet_tcp_tx, node);
			if (tx)
				list_del_init(&tx->node);
			t->tx_cur = tx;
			spin_unlock_irqrestore(&ep->lock, flags);
			if (!tx)
				return progress;
			knet_tcp_start_tx(t, tx);
		}
		ret = knet_tcp_send_cur(t);
		if (ret <= 0)
			return ret ?: progress;
		progress = 1;
		t->tx_done += ret;
		if (t->tx_done == knet_tcp_hlen(t) + t->tx_cur->len +
				  knet_tcp_dlen(t, t->tx_cur->len)) {
			tx = t->tx_cur;
			t->tx_cur = NULL;
			if (tx->type == KNET_TCP_DATA)
				atomic64_add(tx->len, &ep->bytes_rdma);
			knet_tcp_tx_done(t, tx, 0);
		}
	}
}

/*
 * From a submitter that may sleep: send what is queued now, as
 * nvme_tcp_queue_rq() does, rather than wake io_work, a context switch
 * on each request's way out. False when io_work must still run: it is
 * sending, or something is left (the socket is full, or an R2T's data
 * was queued while this sent).
 */
static bool knet_tcp_send_now(struct knet_tcp *t)
{
	unsigned int noreclaim;
	unsigned long flags;
	bool left;
	int ret;

	if (!mutex_trylock(&t->send_lock))
		return false;
	/* No reclaim: it could write to a device whose requests wait on this. */
	noreclaim = memalloc_noreclaim_save();
	ret = knet_tcp_send(t);
	memalloc_noreclaim_restore(noreclaim);
	mutex_unlock(&t->send_lock);
	if (ret < 0)
		return false;	/* io_work meets the error again, and fails the endpoint */
	if (ret)
		atomic64_inc(&t->ep->submitter_sends);
	spin_lock_irqsave(&t->ep->lock, flags);
	left = READ_ONCE(t->tx_cur) || !list_empty(&t->tx_list);
	spin_unlock_irqrestore(&t->ep->lock, flags);
	return !left;
}

static int knet_tcp_post(struct knet_ep *ep, struct knet_slot *s, u32 len, bool may_sleep)
{
	struct knet_tcp *t = ep->tcp;
	struct knet_tcp_slot *ts = &t->slot[s->idx];
	unsigned long flags;

	ts->msg.s = s;
	ts->msg.type = KNET_TCP_MSG;
	ts->msg.len = len;
	spin_lock_irqsave(&ep->lock, flags);
	if (t->stopped) {
		spin_unlock_irqrestore(&ep->lock, flags);
		return -ENOTCONN;
	}
	ts->msg.busy = true;
	ts->ntx = 1;
	list_add_tail(&ts->msg.node, &t->tx_list);
	spin_unlock_irqrestore(&ep->lock, flags);
	if (!may_sleep || !knet_tcp_send_now(t))
		queue_work(knet_tcp_wq, &t->io_work);
	return 0;
}

/* Receive into BUF; returns bytes, 0 when nothing is there, or an error. */
static int knet_tcp_recv_buf(struct knet_tcp *t, void *buf, size_t len)
{
	struct kvec v = { .iov_base = buf, .iov_len = len };
	struct msghdr msg = { .msg_flags = MSG_DONTWAIT };
	int ret;

	ret = kernel_recvmsg(t->sock, &msg, &v, 1, len, MSG_DONTWAIT);
	if (ret == -EAGAIN)
		return 0;
	return ret ?: -ECONNRESET;	/* 0: the server closed */
}

static int knet_tcp_lie(const char *what, u32 tag)
{
	pr_err_ratelimited("%s (tag %#x): disconnecting\n", what, tag);
	return -EPROTO;
}

/*
 * Under ep->lock: the request of TAG that lent its memory in direction DIR
 * and holds bytes [OFF, OFF + LEN) of it, not moved yet; or NULL.
 */
static struct knet_slot *knet_tcp_lent(struct knet_tcp *t, u32 tag, enum knet_dir dir,
				       u32 off, u32 len)
{
	struct knet_slot *s = knet_find_slot(t->ep, tag);
	struct knet_tcp_slot *ts;
	u32 size;

	if (!s)
		return NULL;
	ts = &t->slot[s->idx];
	size = s->rq->mem ? s->rq->mem->len : 0;
	if (!ts->lent || s->rq->dir != dir || !len || off > size || len > size - off ||
	    len > size - ts->moved)
		return NULL;
	ts->moved += len;
	return s;
}

/* An R2T: queue the data it asks for. */
static int knet_tcp_r2t(struct knet_tcp *t, u32 tag, u32 off, u32 len)
{
	struct knet_ep *ep = t->ep;
	struct knet_tcp_tx *tx = NULL;
	struct knet_tcp_slot *ts;
	struct knet_slot *s;
	unsigned long flags;
	unsigned int i;

	spin_lock_irqsave(&ep->lock, flags);
	s = knet_tcp_lent(t, tag, KNET_DIR_TO_SERVER, off, len);
	if (!s) {
		spin_unlock_irqrestore(&ep->lock, flags);
		return knet_tcp_lie("the server asks for data no request offered", tag);
	}
	ts = &t->slot[s->idx];
	for (i = 0; i < KNET_TCP_R2T_MAX && !tx; i++)
		if (!ts->data[i].busy)
			tx = &ts->data[i];
	if (!tx) {
		spin_unlock_irqrestore(&ep->lock, flags);
		return knet_tcp_lie("the server asks for too much data at once", tag);
	}
	tx->busy = true;
	tx->s = s;
	tx->type = KNET_TCP_DATA;
	tx->off = off;
	tx->len = len;
	if (!ts->ntx++)
		s->need |= EV_SEND;
	list_add_tail(&tx->node, &t->tx_list);
	spin_unlock_irqrestore(&ep->lock, flags);
	return 0;
}

/* A PDU's header is in: check it and get ready for its payload. */
static int knet_tcp_rx_pdu(struct knet_tcp *t)
{
	const struct knet_tcp_pdu *p = &t->rx_h.pdu;
	u32 len = le32_to_cpu(p->length), tag = le32_to_cpu(p->tag);
	u32 off = le32_to_cpu(p->offset);
	unsigned long flags;
	int ret;

	if (p->flags || p->reserved)
		return knet_tcp_lie("malformed PDU from the server", tag);
	switch (p->type) {
	case KNET_TCP_MSG:
		if (len < sizeof(struct knet_hdr) || len > KNET_TCP_MSG_MAX)
			return knet_tcp_lie("message of a size no reply has", tag);
		return 0;
	case KNET_TCP_R2T:
		ret = knet_tcp_r2t(t, tag, off, len);
		t->rx_got = 0;
		return ret;
	case KNET_TCP_DATA:
		spin_lock_irqsave(&t->ep->lock, flags);
		t->rx_slot = knet_tcp_lent(t, tag, KNET_DIR_FROM_SERVER, off, len);
		spin_unlock_irqrestore(&t->ep->lock, flags);
		if (!t->rx_slot)
			return knet_tcp_lie("data for no request, or beyond what it asked", tag);
		return 0;
	default:
		return knet_tcp_lie("PDU of an unknown type from the server", tag);
	}
}

/* Receive the payload of a DATA PDU into its request's memory. */
static int knet_tcp_recv_data(struct knet_tcp *t)
{
	struct knet_slot *s = t->rx_slot;
	u32 got = t->rx_got - knet_tcp_hlen(t);
	u32 off = le32_to_cpu(t->rx_h.pdu.offset), len = le32_to_cpu(t->rx_h.pdu.length);
	struct msghdr msg = { .msg_flags = MSG_DONTWAIT };
	int ret;

	/*
	 * The request waits for its reply, which comes after this on the
	 * stream; its memory stays until the fence, which stops io_work.
	 */
	knet_tcp_iter(&t->slot[s->idx], s->rq, ITER_DEST, off + got, len - got, &msg.msg_iter);
	ret = sock_recvmsg(t->sock, &msg, MSG_DONTWAIT);
	if (ret == -EAGAIN)
		return 0;
	return ret ?: -ECONNRESET;
}

static int knet_tcp_bad_digest(struct knet_tcp *t, const char *what)
{
	pr_err_ratelimited("%pISpc: %s digest mismatch: resetting the connection\n",
			   &t->ep->peer, what);
	return -EBADMSG;
}

/* The payload of the PDU received, LEN bytes: does its digest match? */
static bool knet_tcp_ddgst_ok(struct knet_tcp *t, u32 len)
{
	struct knet_slot *s = t->rx_slot;
	struct iov_iter it;
	u32 crc;

	if (t->rx_h.pdu.type == KNET_TCP_MSG) {
		crc = knet_tcp_crc(t->rx_buf, len);
	} else {
		knet_tcp_iter(&t->slot[s->idx], s->rq, ITER_SOURCE,
			      le32_to_cpu(t->rx_h.pdu.offset), len, &it);
		crc = knet_tcp_crc_iter(&it);
	}
	return le32_to_cpu(t->rx_ddgst) == crc;
}

/* Receive what came; returns 1 when something did, 0 when nothing, or an error. */
static int knet_tcp_recv(struct knet_tcp *t)
{
	const size_t hlen = knet_tcp_hlen(t);
	int progress = 0;
	size_t end, dlen;
	u32 len;
	int ret;

	for (;;) {
		if (t->rx_got < hlen) {
			ret = knet_tcp_recv_buf(t, (u8 *)&t->rx_h + t->rx_got, hlen - t->rx_got);
			if (ret <= 0)
				return ret ?: progress;
			progress = 1;
			t->rx_got += ret;
			if (t->rx_got == hlen) {
				if (t->hdgst && le32_to_cpu(t->rx_h.dgst) !=
				    knet_tcp_crc(&t->rx_h.pdu, sizeof(t->rx_h.pdu)))
					return knet_tcp_bad_digest(t, "header");
				ret = knet_tcp_rx_pdu(t);
				if (ret)
					return ret;
			}
			continue;
		}
		len = le32_to_cpu(t->rx_h.pdu.length);
		end = hlen + len;
		dlen = knet_tcp_dlen(t, len);
		if (t->rx_got < end) {
			if (t->rx_h.pdu.type == KNET_TCP_MSG)
				ret = knet_tcp_recv_buf(t, t->rx_buf + (t->rx_got - hlen),
							end - t->rx_got);
			else
				ret = knet_tcp_recv_data(t);
		} else if (t->rx_got < end + dlen) {
			ret = knet_tcp_recv_buf(t, (u8 *)&t->rx_ddgst + (t->rx_got - end),
						end + dlen - t->rx_got);
		} else {
			ret = 0;
		}
		if (ret < 0 || (!ret && t->rx_got < end + dlen))
			return ret ?: progress;
		progress = 1;
		t->rx_got += ret;
		if (t->rx_got < end + dlen)
			continue;
		if (dlen && !knet_tcp_ddgst_ok(t, len))
			return knet_tcp_bad_digest(t, "data");
		t->rx_got = 0;
		t->rx_slot = NULL;
		if (t->rx_h.pdu.type == KNET_TCP_MSG) {
			ret = knet_reply(t->ep, t->rx_buf, len, NULL);
			if (ret)
				return ret;
		}
	}
}

static void knet_tcp_io_work(struct work_struct *w)
{
	struct knet_tcp *t = container_of(w, struct knet_tcp, io_work);
	struct knet_ep *ep = t->ep;
	u64 end = ktime_get_ns() + KNET_TCP_BUDGET_US * NSEC_PER_USEC;
	unsigned int noreclaim = memalloc_noreclaim_save();
	bool more;
	int ret;

	do {
		more = false;
		if (READ_ONCE(ep->dead))
			break;
		/* A submitter sending checks for what is left once it is done. */
		if (mutex_trylock(&t->send_lock)) {
			ret = knet_tcp_send(t);
			mutex_unlock(&t->send_lock);
			if (ret < 0)
				goto fail;
			more = ret;
		}
		ret = knet_tcp_recv(t);
		if (ret < 0)
			goto fail;
		more |= ret;
	} while (more && ktime_get_ns() < end);
	if (more)
		queue_work(knet_tcp_wq, &t->io_work);
	memalloc_noreclaim_restore(noreclaim);
	return;

fail:
	if (ret != -EPROTO && !READ_ONCE(ep->dead))
		pr_info("connection to %pISpc lost (%pe)\n", &ep->peer, ERR_PTR(ret));
	knet_ep_fail(ep, ret == -EPROTO ? -EPROTO : -ECONNRESET);
	memalloc_noreclaim_restore(noreclaim);
}

/* Every PDU not sent never will be: their requests hear it. io_work stopped. */
static void knet_tcp_flush(struct knet_tcp *t)
{
	struct knet_tcp_tx *tx;
	unsigned long flags;

	if (t->tx_cur) {
		tx = t->tx_cur;
		t->tx_cur = NULL;
		knet_tcp_tx_done(t, tx, -ECONNRESET);
	}
	for (;;) {
		spin_lock_irqsave(&t->ep->lock, flags);
		tx = list_first_entry_or_null(&t->tx_list, struct knet_tcp_tx, node);
		if (tx)
			list_del_init(&tx->node);
		spin_unlock_irqrestore(&t->ep->lock, flags);
		if (!tx)
			break;
		knet_tcp_tx_done(t, tx, -ECONNRESET);
	}
	t->rx_got = 0;
	t->rx_slot = NULL;
}

/* Stop everything that reaches the socket: then nothing touches a request's memory. */
static void knet_tcp_stop(struct knet_tcp *t)
{
	struct sock *sk = t->sock->sk;
	unsigned long flags;

	spin_lock_irqsave(&t->ep->lock, flags);
	t->stopped = true;
	spin_unlock_irqrestore(&t->ep->lock, flags);
	if (t->cb) {
		write_lock_bh(&sk->sk_callback_lock);
		sk->sk_user_data = NULL;
		sk->sk_data_ready = t->data_ready;
		sk->sk_write_space = t->write_space;
		sk->sk_state_change = t->state_change;
		write_unlock_bh(&sk->sk_callback_lock);
		t->cb = false;
	}
	WRITE_ONCE(t->live, false);
	kernel_sock_shutdown(t->sock, SHUT_RDWR);
	cancel_work_sync(&t->io_work);
	/* A submitter still sending ends first; later ones find nothing to send. */
	mutex_lock(&t->send_lock);
	knet_tcp_flush(t);
	mutex_unlock(&t->send_lock);
}

static void knet_tcp_fence(struct knet_ep *ep, bool disconnect)
{
	knet_tcp_stop(ep->tcp);
	knet_fenced(ep);
}

static void knet_tcp_destroy(struct knet_ep *ep, bool connected)
{
	struct knet_tcp *t = ep->tcp;
	unsigned int i;

	if (!t)
		return;
	if (t->sock) {
		knet_tcp_stop(t);
		/* Fenced first: the failure below then waits for nothing. */
		knet_fenced(ep);
		knet_ep_fail(ep, -ECONNRESET);
		/* Reset, not closed: what was queued is dropped. */
		sock_no_linger(t->sock->sk);
		sock_release(t->sock);
	}
	for (i = 0; i < KNET_SLOTS; i++) {
		kfree(t->slot[i].buf);
		kfree(t->slot[i].bv);
	}
	kfree(t->rx_buf);
	kfree(t);
	ep->tcp = NULL;
}

static bool knet_tcp_ready(struct knet_tcp *t, bool send)
{
	struct sock *sk = t->sock->sk;

	if (READ_ONCE(sk->sk_err) || READ_ONCE(sk->sk_state) != TCP_ESTABLISHED)
		return true;
	return send ? sk_stream_is_writeable(sk) : !skb_queue_empty_lockless(&sk->sk_receive_queue);
}

/* Send or receive all of BUF before DEADLINE (jiffies), killably: the handshake. */
static int knet_tcp_xfer(struct knet_tcp *t, void *buf, size_t len, bool send,
			 unsigned long deadline)
{
	size_t done = 0;
	long left;
	int ret;

	while (done < len) {
		struct kvec v = { .iov_base = buf + done, .iov_len = len - done };
		struct msghdr msg = { .msg_flags = MSG_DONTWAIT | MSG_NOSIGNAL };

		if (send)
			ret = kernel_sendmsg(t->sock, &msg, &v, 1, v.iov_len);
		else
			ret = kernel_recvmsg(t->sock, &msg, &v, 1, v.iov_len, msg.msg_flags);
		if (ret > 0) {
			done += ret;
			continue;
		}
		if (!ret)
			return -ECONNRESET;
		if (ret != -EAGAIN)
			return ret;
		left = (long)(deadline - jiffies);
		if (left <= 0)
			return -ETIMEDOUT;
		left = wait_event_killable_timeout(t->wait, knet_tcp_ready(t, send), left);
		if (left < 0)
			return -EINTR;
		if (READ_ONCE(t->sock->sk->sk_err))
			return -READ_ONCE(t->sock->sk->sk_err);
	}
	return 0;
}

/* The connect PDU, and the server's answer. */
static int knet_tcp_handshake(struct knet_tcp *t, const struct knet_cm_req *req, int *reason,
			      unsigned long deadline)
{
	struct {
		struct knet_tcp_pdu	pdu;
		struct knet_cm_req	req;
	} __packed out = {};
	struct knet_tcp_pdu in;
	union {
		struct knet_cm_rep	rep;
		struct knet_cm_rej	rej;
	} ans;
	u32 len;
	int ret;

	out.pdu.type = KNET_TCP_CONNECT;
	out.pdu.length = cpu_to_le32(sizeof(*req));
	out.req = *req;
	ret = knet_tcp_xfer(t, &out, sizeof(out), true, deadline);
	if (!ret)
		ret = knet_tcp_xfer(t, &in, sizeof(in), false, deadline);
	if (ret)
		return ret;
	len = le32_to_cpu(in.length);
	if (in.flags || in.reserved ||
	    !((in.type == KNET_TCP_ACCEPT && len == sizeof(ans.rep)) ||
	      (in.type == KNET_TCP_REJECT && len == sizeof(ans.rej))))
		return -EPROTO;
	ret = knet_tcp_xfer(t, &ans, len, false, deadline);
	if (ret)
		return ret;
	if (in.type == KNET_TCP_REJECT) {
		*reason = le16_to_cpu(ans.rej.reason);
		return -ECONNREFUSED;
	}
	return knet_ep_accepted(t->ep, &ans.rep, (KNET_MAX_PAGES - 1) << PAGE_SHIFT);
}

/* Wait, killably, for the socket's connect to end. */
static int knet_tcp_wait_connected(struct knet_tcp *t, unsigned long deadline)
{
	struct sock *sk = t->sock->sk;
	long left = (long)(deadline - jiffies);
	int err;

	if (left > 0)
		left = wait_event_killable_timeout(t->wait,
						   READ_ONCE(sk->sk_state) == TCP_ESTABLISHED ||
						   READ_ONCE(sk->sk_state) == TCP_CLOSE ||
						   READ_ONCE(sk->sk_err), left);
	if (left < 0)
		return -EINTR;
	err = READ_ONCE(sk->sk_err);
	if (err)
		return -err;
	if (READ_ONCE(sk->sk_state) == TCP_ESTABLISHED)
		return 0;
	return left ? -ECONNREFUSED : -ETIMEDOUT;
}

static int knet_tcp_alloc(struct knet_ep *ep)
{
	struct knet_tcp *t;
	unsigned int i;

	t = kzalloc(sizeof(*t), GFP_KERNEL);
	if (!t)
		return -ENOMEM;
	ep->tcp = t;
	t->ep = ep;
	INIT_WORK(&t->io_work, knet_tcp_io_work);
	mutex_init(&t->send_lock);
	init_waitqueue_head(&t->wait);
	INIT_LIST_HEAD(&t->tx_list);
	t->rx_buf = kmalloc(KNET_TCP_MSG_MAX, GFP_KERNEL);
	if (!t->rx_buf)
		return -ENOMEM;
	for (i = 0; i < KNET_SLOTS; i++) {
		struct knet_tcp_slot *ts = &t->slot[i];
		struct knet_slot *s = &ep->slot[i];

		ts->buf = kmalloc(KNET_MSG_SIZE, GFP_KERNEL);
		ts->bv = kcalloc(KNET_TCP_BV_MAX, sizeof(*ts->bv), GFP_KERNEL);
		if (!ts->buf || !ts->bv)
			return -ENOMEM;
		INIT_LIST_HEAD(&ts->msg.node);
		s->ep = ep;
		s->idx = i;
		s->msg = ts->buf;
	}
	ep->rc = knet_tcp_rc;
	ep->max_pages = KNET_MAX_PAGES;
	return 0;
}

static int knet_tcp_connect(struct knet_ep *ep, const struct knet_ep_params *p,
			    const struct knet_cm_req *req, int *reason, bool *gone)
{
	unsigned long deadline = jiffies + msecs_to_jiffies(p->timeout_ms ?: KNET_CM_TIMEOUT_MS);
	int alen = p->addr.ss_family == AF_INET ? sizeof(struct sockaddr_in) :
						   sizeof(struct sockaddr_in6);
	struct sockaddr_storage src;
	struct knet_tcp *t;
	struct sock *sk;
	int ret;

	*gone = false;
	ret = knet_tcp_alloc(ep);
	if (ret)
		return ret;
	t = ep->tcp;
	ret = sock_create_kern(&init_net, p->addr.ss_family, SOCK_STREAM, IPPROTO_TCP, &t->sock);
	if (ret) {
		t->sock = NULL;
		return ret;
	}
	sk = t->sock->sk;
	tcp_sock_set_nodelay(sk);
	/* Requests are sent from io_work, which must not wait for reclaim. */
	sk->sk_allocation = GFP_ATOMIC;
	sk->sk_use_task_frag = false;
	if (p->src.ss_family) {
		src = p->src;
		knet_addr_set_port(&src, 0);
		ret = kernel_bind(t->sock, (struct sockaddr *)&src, alen);
		if (ret)
			return ret;
	}
	write_lock_bh(&sk->sk_callback_lock);
	sk->sk_user_data = t;
	t->data_ready = sk->sk_data_ready;
	t->write_space = sk->sk_write_space;
	t->state_change = sk->sk_state_change;
	sk->sk_data_ready = knet_tcp_data_ready;
	sk->sk_write_space = knet_tcp_write_space;
	sk->sk_state_change = knet_tcp_state_change;
	t->cb = true;
	write_unlock_bh(&sk->sk_callback_lock);

	ret = kernel_connect(t->sock, (struct sockaddr *)&p->addr, alen, O_NONBLOCK);
	if (ret == -EINPROGRESS)
		ret = knet_tcp_wait_connected(t, deadline);
	if (!ret)
		ret = knet_tcp_handshake(t, req, reason, deadline);
	if (ret)
		return ret;
	t->hdgst = ep->digests & KNET_CMF_HDGST;
	t->ddgst = ep->digests & KNET_CMF_DDGST;
	ep->connected = true;
	WRITE_ONCE(t->live, true);
	queue_work(knet_tcp_wq, &t->io_work);
	return 0;
}

const struct knet_transport knet_tcp_transport = {
	.name		= "tcp",
	.connect	= knet_tcp_connect,
	.map		= knet_tcp_map,
	.unmap		= knet_tcp_unmap,
	.post		= knet_tcp_post,
	.replied	= knet_tcp_replied,
	.fence		= knet_tcp_fence,
	.destroy	= knet_tcp_destroy,
};

int knet_tcp_init(void)
{
	knet_tcp_wq = alloc_workqueue("knet_tcp", WQ_MEM_RECLAIM | WQ_HIGHPRI, 0);
	if (!knet_tcp_wq)
		return -ENOMEM;
	knet_tcp_rc = regcache_create(NULL);
	if (IS_ERR(knet_tcp_rc)) {
		destroy_workqueue(knet_tcp_wq);
		return PTR_ERR(knet_tcp_rc);
	}
	return 0;
}

void knet_tcp_exit(void)
{
	regcache_destroy(knet_tcp_rc);
	destroy_workqueue(knet_tcp_wq);
}

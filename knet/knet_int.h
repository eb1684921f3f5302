/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What knet's own files share: the endpoint and its slots, and the calls
 * between the request engine (knet_req.c), endpoints (knet_ep.c), the
 * transports under them (RDMA: knet_verbs.c and knet_frwr.c; TCP:
 * knet_tcp.c), memory descriptors (knet_mem.c), counters
 * (knet_debugfs.c), connection groups (knet_group.c) and devices. Upper
 * layers include knet.h only.
 */
#ifndef _KNET_INT_H
#define _KNET_INT_H

#include <linux/atomic.h>
#include <linux/dma-direction.h>
#include <linux/sizes.h>
#include <linux/wait.h>
#include <rdma/ib_verbs.h>

#include "knet.h"

#define KNET_RECV_DEPTH		32
#define KNET_SLOTS		32
#define KNET_MSG_SIZE		8192
#define KNET_MAX_PAGES		(SZ_1M / PAGE_SIZE + 1)
#define KNET_CM_TIMEOUT_MS	5000

#define KNET_LAT_BUCKETS	12	/* <16us, <32us, ... <16ms, more */

#define EV_SEND		0x1
#define EV_REPLY	0x2
#define EV_INV		0x4
#define EV_FENCE	0x8	/* the transport fenced the endpoint's memory */

struct knet_ep;
struct knet_slot;
struct knet_cm_req;

/**
 * struct knet_transport - what moves an endpoint's messages and data
 * @name: "rdma" or "tcp", as mountinfo and sysfs show it
 * @connect: connect @ep to @p->addr asking @req, fill @ep->lim and
 *	@ep->server_auth (knet_ep_accepted()); process context, killable.
 *	On failure the endpoint is destroyed with @destroy, except when
 *	*@gone says the transport took it over (a killed caller)
 * @map: lend the server the memory of @rq, too large to travel inline;
 *	fill @seg, set @s->mr_used. Never sleeps
 * @unmap: the request of @s is over: undo @map. Any context
 * @post: send the @len bytes of @s->msg and what @map lent. EV_SEND
 *	clears (knet_slot_event()) once the transport no longer reads the
 *	message or the memory. Any context; never sleeps unless
 *	@may_sleep (the caller allows it), and never waits for the peer
 * @replied: under @ep->lock, the reply of @s came (@arg: what the
 *	transport gave knet_reply()): make the memory it lent unreachable
 *	now, or set EV_INV in @s->need and clear it when it is. Return:
 *	false when it cannot, and the endpoint must fail
 * @fence: from the failure work: disconnect when @disconnect, make every
 *	memory the endpoint lent unreachable, then call knet_fenced()
 * @destroy: free the transport's part of @ep, every request over;
 *	@connected: it was connected, and its requests may still be posted
 * @peer: the server's address, for messages and debugfs
 */
struct knet_transport {
	const char	*name;
	int		(*connect)(struct knet_ep *ep, const struct knet_ep_params *p,
				   const struct knet_cm_req *req, int *reason, bool *gone);
	int		(*map)(struct knet_ep *ep, struct knet_slot *s, struct knet_request *rq,
			       struct knet_seg *seg);
	void		(*unmap)(struct knet_ep *ep, struct knet_slot *s);
	int		(*post)(struct knet_ep *ep, struct knet_slot *s, u32 len, bool may_sleep);
	bool		(*replied)(struct knet_ep *ep, struct knet_slot *s, const void *arg);
	void		(*fence)(struct knet_ep *ep, bool disconnect);
	void		(*destroy)(struct knet_ep *ep, bool connected);
};

extern const struct knet_transport knet_rdma_transport;
extern const struct knet_transport knet_tcp_transport;

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
	void			*msg;		/* the request's message */
	bool			mr_used;	/* memory lent to the server */
	bool			mr_live;	/* the server may reach it */
	bool			inline_in;	/* data asked inline in the reply */
	struct knet_request	*rq;
	u64			t0;		/* when it was posted, ns */
	/* RDMA only */
	struct ib_cqe		send_cqe;
	struct ib_cqe		reg_cqe;
	struct ib_cqe		inv_cqe;
	u64			msg_dma;
	struct ib_mr		*mr;
	struct ib_reg_wr	reg;		/* registration of the memory lent */
	struct scatterlist	*sg;
	unsigned int		sg_orig;	/* entries mapped */
	int			sg_nents;
	unsigned int		usg;		/* entries over cached user pages */
	enum dma_data_direction	dma_dir;
};

struct knet_ep {
	const struct knet_transport *tr;
	struct sockaddr_storage	peer;		/* the server's address */
	struct knet_tcp		*tcp;		/* TCP only: its part */
	/* RDMA only, up to @cq */
	struct rdma_cm_id	*cm_id;
	struct ib_device	*dev;
	struct knet_device	*kdev;		/* knet's @dev, once attached */
	struct list_head	dev_node;	/* in its device's endpoints */
	void			(*removed)(void *priv);	/* knet_ep_params */
	void			*priv;
	struct work_struct	removed_work;	/* calls @removed */
	struct ib_pd		*pd;
	struct ib_cq		*cq;
	struct regcache		*rc;		/* for user memory: the device's, or TCP's */
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
	unsigned int		digests;	/* TCP: KNET_CMF_HDGST, KNET_CMF_DDGST in use */
	bool			disconnect;	/* fail_work is to disconnect */
	bool			fenced;		/* no memory of it is reachable any more */
	struct work_struct	fail_work;
	struct delayed_work	timeo_work;	/* looks for requests without answer */
	unsigned long		req_timeout;	/* jiffies; 0: none */
	unsigned long		keepalive;	/* jiffies of silence before a NOP; 0: none */
	unsigned long		last_rx;	/* jiffies of the last reply */
	struct knet_request	ka_rq;		/* the keep-alive NOP */
	atomic_t		ka_busy;	/* ka_rq is in flight */
	unsigned int		comp_vector;
	struct knet_group	*group;		/* the group it belongs to, or NULL */
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
	atomic64_t		submitter_sends;	/* TCP: sends by a submitter, not io_work */
	atomic64_t		lat_hist[KNET_LAT_BUCKETS];	/* request latency */
};

/* knet_group.c */
int knet_group_init(void);
void knet_group_exit(void);
struct workqueue_struct *knet_wq(void);

/* knet_main.c: where endpoints publish their counters, and device caches */
struct dentry *knet_debugfs_endpoints(void);

/*
 * Objects knet holds, counted for debugfs knet/objects: all must be zero
 * once the modules using knet are gone (tests check; unload warns).
 */
enum knet_obj {
	KNET_OBJ_EP,		/* endpoints */
	KNET_OBJ_GROUP,		/* completion groups */
	KNET_OBJ_MR,		/* fast-registration MRs */
	KNET_OBJ_PIN,		/* regcache entries held by requests */
	KNET_OBJ_MAP,		/* scatterlists DMA-mapped for requests */
	KNET_OBJ_NR
};

void knet_obj_add(enum knet_obj o, int n);
struct ib_device;
struct knet_device;
struct regcache;
int knet_device_attach(struct ib_device *dev, struct list_head *ep_node,
		       struct knet_device **kdev, struct regcache **rc);
void knet_device_detach(struct knet_device *kdev, struct list_head *ep_node);
void knet_ep_device_removed(struct list_head *ep_node);
/* knet_auth.c */
int knet_ep_auth(struct knet_ep *ep, const struct knet_ep_params *p);
bool knet_ep_dead(struct knet_ep *ep);

/* knet_debugfs.c */
void knet_ep_debugfs_add(struct knet_ep *ep);

/* knet_frwr.c */
void knet_unpin(struct knet_request *rq);
int knet_map_mem(struct knet_ep *ep, struct knet_slot *s, struct knet_request *rq,
		 struct knet_seg *seg);
int knet_pin(struct knet_ep *ep, struct knet_request *rq);

/* knet_mem.c: FN sees each piece: entry I of M, OFF bytes in, N bytes. */
typedef int (*knet_piece_fn)(const struct knet_mem *m, unsigned int i, size_t off, size_t n,
			     void *arg);
int knet_mem_walk(const struct knet_mem *m, knet_piece_fn fn, void *arg);
int knet_mem_copy(const struct knet_mem *m, void *buf, size_t len, bool to_mem,
		  struct knet_request *pinned);
struct regcache_entry;
/* knet_pin_pages()'s FN: ADDR's N bytes, inside one page of pinned entry E. */
typedef int (*knet_page_fn)(struct regcache_entry *e, unsigned long addr, size_t n, void *arg);
int knet_pin_pages(const struct knet_request *rq, unsigned int *pin, unsigned long addr,
		   size_t n, knet_page_fn fn, void *arg);

/* knet_req.c */
void knet_ep_fail(struct knet_ep *ep, int err);
void knet_fail_work(struct work_struct *w);
void knet_removed_work(struct work_struct *w);
void knet_timeo_work(struct work_struct *w);
void knet_fenced(struct knet_ep *ep);
void knet_slot_event(struct knet_slot *s, unsigned int ev, int err);
struct knet_slot *knet_find_slot(struct knet_ep *ep, u32 tag);
int knet_reply(struct knet_ep *ep, const void *msg, u32 len, const void *arg);

/* knet_ep.c */
int knet_ep_accepted(struct knet_ep *ep, const struct knet_cm_rep *rep, u32 max_io);
void knet_ep_free(struct knet_ep *ep);

/* knet_verbs.c: the RDMA transport */
int knet_rdma_resolve(struct knet_ep *ep, const struct knet_ep_params *p);

/* knet_tcp.c: the TCP transport */
int knet_tcp_init(void);
void knet_tcp_exit(void);

/* Does the data of RQ travel inside the request message? */
static inline bool knet_inline_out(struct knet_ep *ep, const struct knet_request *rq)
{
	return rq->mem && rq->dir == KNET_DIR_TO_SERVER && rq->mem->len <= ep->lim.inline_max &&
	       sizeof(struct knet_hdr) + rq->body_len + rq->mem->len <= KNET_MSG_SIZE;
}

/*
 * Does the server send the data of RQ inside its reply? The reply is
 * handled in softirq context: user memory is written through the pages
 * knet_pin() pinned for it (no registration, RDMA WRITE or invalidation).
 */
static inline bool knet_inline_in(struct knet_ep *ep, const struct knet_request *rq)
{
	return rq->mem && rq->dir == KNET_DIR_FROM_SERVER && rq->mem->len <= ep->lim.inline_max;
}

#endif /* _KNET_INT_H */

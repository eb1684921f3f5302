/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * knet: in-kernel network shim between the ORFS/MXBD clients and RDMA.
 * Upper layers use only this header; they never touch verbs or rkeys.
 * What knet's own files share is in knet_int.h.
 */
#ifndef _KNET_H
#define _KNET_H

#include <linux/bvec.h>
#include <linux/in.h>
#include <linux/socket.h>
#include <linux/list.h>
#include <linux/module.h>
#include <linux/completion.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>
#include <linux/uio.h>
#include <linux/wait.h>

#include "uapi/knet_proto.h"

/**
 * struct knet_ulp - an upper-layer protocol (ORFS, MXBD) using knet
 * @name: short name shown in debugfs
 * @service: the service it asks servers for (enum knet_service)
 * @owner: module owning this structure, normally THIS_MODULE
 * @node: private to knet
 */
struct knet_ulp {
	const char		*name;
	enum knet_service	service;
	struct module		*owner;
	struct list_head	node;
};

int knet_register_ulp(struct knet_ulp *ulp);
void knet_unregister_ulp(struct knet_ulp *ulp);
unsigned int knet_device_count(void);
int knet_parse_addr(const char *s, size_t len, u16 port, struct sockaddr_storage *ss);
void knet_addr_set_port(struct sockaddr_storage *ss, u16 port);
u16 knet_addr_port(const struct sockaddr_storage *ss);
bool knet_addr_same(const struct sockaddr_storage *a, const struct sockaddr_storage *b);

/*
 * Typed memory descriptors: what a request's data is, whatever its kind.
 * Kernel-virtual memory must be directly mapped (kmalloc, not vmalloc);
 * pages can be any (page cache, bio pages); user-virtual memory is the
 * calling process's, pinned and mapped through regcache. The same call
 * sends any of them; knet_mem_from_iter() builds one from an iov_iter.
 */
enum knet_mem_type {
	KNET_MEM_KVEC,		/* kernel-virtual, directly mapped */
	KNET_MEM_BVEC,		/* pages */
	KNET_MEM_UVEC,		/* user-virtual, of the submitting process */
};

/* How long knet_call() still waits for an answer once its caller is killed. */
#define KNET_KILLED_WAIT_MS	1000

/* knet_mem flags */
#define KNET_MEM_NOCACHE	0x1	/* user memory: pin for this request only */

/* Entries of a user-virtual descriptor, at most. */
#define KNET_UVEC_MAX		16

/**
 * struct knet_mem - a typed memory descriptor
 * @type: which of @kvec, @bvec, @iov holds the entries
 * @flags: KNET_MEM_*
 * @nr: entries
 * @skip: bytes of the first entry before the data starts
 * @len: bytes of data in all, from @skip on (entries past it are unused)
 * @kvec: kernel-virtual entries
 * @bvec: page entries
 * @iov: user-virtual entries
 * @one: storage for a single user entry built by knet_mem_from_iter();
 *	such a descriptor must not be copied
 *
 * A descriptor whose data does not fit one registration (a gap inside a
 * page between two entries) is refused with -EINVAL when it must go by
 * RDMA: entries after the first must start on a page boundary and
 * entries before the last must end on one.
 */
struct knet_mem {
	enum knet_mem_type	type;
	unsigned int		flags;
	unsigned int		nr;
	size_t			skip;
	size_t			len;
	union {
		const struct kvec	*kvec;
		const struct bio_vec	*bvec;
		const struct iovec	*iov;
	};
	struct iovec		one;
};

int knet_mem_from_iter(struct knet_mem *m, const struct iov_iter *it, size_t len);

struct regcache_entry;

/* Which way a request's data goes. */
enum knet_dir {
	KNET_DIR_NONE,
	KNET_DIR_TO_SERVER,	/* the server reads it (RDMA READ or inline) */
	KNET_DIR_FROM_SERVER,	/* the server writes it (RDMA WRITE or inline) */
};

/**
 * struct knet_request - one request and its answer
 * @opcode: the service operation
 * @body: the service body, @body_len bytes
 * @body_len: bytes of @body
 * @mem: the data, or NULL
 * @dir: the direction of @mem
 * @reply: where the reply body goes, @reply_max bytes
 * @reply_max: room at @reply
 * @reply_len: out: bytes of reply body
 * @status: out: the server's answer, 0 or a positive errno
 * @inline_len: out: bytes of data the reply carried inline into @mem
 * @error: out: 0, or the transport error (negative errno) that ended it
 * @done: for knet_submit(): called when the request is over, its memory
 *	no longer reachable by the server; in softirq context, must not
 *	sleep. NULL to collect it with knet_ep_wait_any() instead.
 * @priv: the caller's
 * @flags: %KNET_RQ_MAY_SLEEP: knet_submit() is called where it may sleep
 *	(a blocking block queue, a worker): the transport may then send the
 *	request from the caller's context rather than wake a worker for it
 * @node: private to knet
 * @pin: private to knet: regcache entries of user memory
 * @npin: private to knet
 */
struct knet_request {
	u16			opcode;
	const void		*body;
	u32			body_len;
	const struct knet_mem	*mem;
	enum knet_dir		dir;
	void			*reply;
	u32			reply_max;
	u32			reply_len;
	u32			status;
	u32			inline_len;
	int			error;
	void			(*done)(struct knet_request *rq);
	void			*priv;
	unsigned int		flags;
	struct list_head	node;
	struct regcache_entry	*pin[KNET_UVEC_MAX];
	unsigned int		npin;
};

#define KNET_RQ_MAY_SLEEP	0x1

struct knet_ep;
struct knet_group;

/*
 * The transport of an endpoint: RDMA (rdma_cm, a registration per
 * request), TCP (a kernel socket; the server asks for the data it
 * moves), or RDMA when an RDMA device routes to the server and TCP
 * otherwise.
 */
enum knet_transport_sel {
	KNET_TRANSPORT_RDMA,
	KNET_TRANSPORT_TCP,
	KNET_TRANSPORT_AUTO,
};

int knet_transport_parse(const char *s);
extern const struct kernel_param_ops knet_transport_param_ops;
const char *knet_transport_str(enum knet_transport_sel t);
const char *knet_ep_transport(const struct knet_ep *ep);
const char *knet_connect_hint(int err, enum knet_transport_sel t);

/*
 * Digests over TCP: KNET_CMF_HDGST, KNET_CMF_DDGST (knet_proto.h), or
 * both; RDMA has its own CRCs and ignores them.
 */
int knet_digest_parse(const char *s);
const char *knet_digest_str(unsigned int digests);
unsigned int knet_ep_digests(const struct knet_ep *ep);

/**
 * struct knet_ep_params - where an endpoint connects
 * @addr: server address and port, IPv4 or IPv6 (knet_parse_addr())
 * @transport: which transport to connect with
 * @digests: over TCP, the CRC32C digests to ask for (KNET_CMF_HDGST,
 *	KNET_CMF_DDGST); a server that does not grant them is refused
 * @src: local address to connect from, of the family of @addr, or
 *	family 0 for the one the routing table picks: it chooses the RDMA
 *	port on a multi-homed host, as nvme's host_traddr does
 * @service: KNET_SVC_FILE or KNET_SVC_BLOCK
 * @name: export or volume name
 * @timeout_ms: for address and route resolution and the connection
 * @request_timeout_ms: a request without an answer for this long fails the
 *	endpoint (-ETIMEDOUT for every request); 0 for none
 * @comp_vector: the device's completion vector (interrupt, CPU) that serves
 *	the endpoint's completion queue
 * @keepalive_ms: after this long without a reply, a NOP asks the server
 *	whether it is alive (no answer within the request time-out, or twice
 *	this when there is none, fails the endpoint); 0 for none
 * @removed: called with @priv, from a workqueue, when the endpoint's RDMA
 *	device is being removed: the endpoint has failed (-ECONNRESET) and its
 *	owner must destroy it soon, as the removal waits for that. The
 *	callback must not destroy it itself (knet_ep_destroy() waits for the
 *	callback): it hands the work on. NULL: the owner finds the endpoint
 *	dead at its next request.
 * @priv: the argument of @removed
 * @secret: the secret shared with the server, or NULL: the endpoint then
 *	authenticates both ways before knet_ep_connect() returns (the
 *	server must ask for it), and fails with -EACCES if either proof is
 *	wrong. Kept by the caller as long as the parameters are used.
 */
struct knet_ep_params {
	struct sockaddr_storage	addr;
	enum knet_transport_sel	transport;
	unsigned int		digests;
	struct sockaddr_storage	src;
	enum knet_service	service;
	const char		*name;
	unsigned int		timeout_ms;
	unsigned int		request_timeout_ms;
	unsigned int		comp_vector;
	unsigned int		keepalive_ms;
	void			(*removed)(void *priv);
	void			*priv;
	const struct knet_secret *secret;
};

/**
 * struct knet_secret - a secret shared with a server (knet_secret_lookup())
 * @key: its bytes
 * @len: how many, %KNET_SECRET_MIN to %KNET_SECRET_MAX; 0: none
 */
struct knet_secret {
	u8		key[KNET_SECRET_MAX];
	unsigned int	len;
};

int knet_secret_lookup(const char *name, struct knet_secret *s);
void knet_secret_clear(struct knet_secret *s);

/**
 * struct knet_limits - what the server granted at connect
 * @credits: requests in flight at most
 * @inline_max: largest inline payload
 * @max_io: largest data of one request
 * @max_segs: largest segment list
 */
struct knet_limits {
	u32	credits;
	u32	inline_max;
	u32	max_io;
	u32	max_segs;
};

struct knet_ep *knet_ep_connect(const struct knet_ep_params *p, int *reason);
void knet_ep_destroy(struct knet_ep *ep);
void knet_ep_abort(struct knet_ep *ep);
void knet_ep_limits(struct knet_ep *ep, struct knet_limits *l);
int knet_call(struct knet_ep *ep, struct knet_request *rq, unsigned long timeout);
int knet_submit_wait(struct knet_ep *ep, struct knet_request *rq, unsigned long timeout);

/**
 * struct knet_mq - completion groups: several endpoints to one server
 * @nr: how many
 * @q: the endpoints, each with its own queue pair, credits and completion
 *	queue on its own completion vector, so that each is served by its own
 *	context (a CPU's softirq, or a thread in knet_ep_wait_any()); callers
 *	steer each request to one (MXBD: one per hardware queue)
 */
struct knet_mq {
	unsigned int	nr;
	struct knet_ep	*q[];
};

struct knet_mq *knet_mq_connect(const struct knet_ep_params *p, unsigned int nr, int *reason);
void knet_mq_destroy(struct knet_mq *mq);
int knet_mq_submit(struct knet_mq *mq, unsigned int home, struct knet_request *rq);

/**
 * knet_least_busy() - choose one of several connections by their load
 * @nr: how many there are
 * @home: the one taken on a tie, below @nr (e.g. the caller's CPU's)
 * @busy: the load of connection @i, e.g. its requests not yet over
 * @arg: passed to @busy
 *
 * The one policy of knet_mq_submit() and knet_group_pick(): the
 * connection with the least load, @home on a tie. Requests one at a time
 * stay on @home (the same server thread, awake), and a deep stream spreads
 * over every connection, and so over the server's threads.
 *
 * Context: any; the choice is approximate when requests start together.
 * Return: the index of the connection chosen.
 */
static inline unsigned int knet_least_busy(unsigned int nr, unsigned int home,
					   unsigned int (*busy)(const void *arg, unsigned int i),
					   const void *arg)
{
	unsigned int i, load, best = home, least = busy(arg, home);

	for (i = 0; i < nr && least; i++) {
		load = busy(arg, i);
		if (load < least) {
			least = load;
			best = i;
		}
	}
	return best;
}

/**
 * struct knet_srq - a request sent on a connection group without waiting
 * @rq: the request (its @done and @priv are knet's)
 * @done: called once when it is over, in process context, or in softirq
 *	context when @softirq_done allows it
 * @softirq_done: @done may run in softirq context: then a request that is
 *	over without a failure of the connection ends straight from its
 *	completion, without a workqueue's wake-up
 * @task_done: @done may run in the completion's context when that is a
 *	task's (the TCP transport's receive work; never RDMA's softirq), as
 *	@softirq_done allows any: it must then neither sleep, nor submit, nor
 *	wait for a request, since that context is what answers requests
 * @g: private: the group
 * @conn: private: the connection of the group it goes on
 * @gen: private: the group's connections it was sent on (0: not sent)
 * @refused: private: the group's @admit ended it: reported as it is
 * @mm: private: the submitter's, for user memory sent again
 * @work: private
 */
struct knet_srq {
	struct knet_request	rq;
	void			(*done)(struct knet_srq *srq);
	bool			softirq_done;
	bool			task_done;
	struct knet_group	*g;
	unsigned int		conn;
	u64			gen;
	bool			refused;
	struct mm_struct	*mm;
	struct work_struct	work;
};

/*
 * Reconnecting to a lost server: one policy for every upper layer, as
 * nvme's nvmf_should_reconnect(). Tries start at once, then wait from
 * KNET_RECONNECT_MIN_MS, doubling up to KNET_RECONNECT_MAX_MS, until a
 * loss timeout (seconds; KNET_LOSS_FOREVER: none) runs out. A call's own
 * bound is its group's @tries, counted by the call.
 */
#define KNET_RECONNECT_MIN_MS	100
#define KNET_RECONNECT_MAX_MS	4000
#define KNET_LOSS_FOREVER	(-1)

/**
 * struct knet_reconnect - the state of the reconnect policy for one loss
 * @lost_at: jiffies when the server was lost
 * @backoff_ms: the wait after the next failed try
 * @tries: failed tries so far
 * @loss_timeout: seconds to try for at most, or KNET_LOSS_FOREVER
 */
struct knet_reconnect {
	unsigned long	lost_at;
	unsigned int	backoff_ms;
	unsigned int	tries;
	int		loss_timeout;
};

/* enum knet_group_state - see struct knet_group */
enum knet_group_state {
	KNET_GROUP_NEW,
	KNET_GROUP_LIVE,
	KNET_GROUP_RECONNECTING,
	KNET_GROUP_FAILED,
	KNET_GROUP_CLOSING,
};

/**
 * struct knet_group_ops - what a connection group asks of its upper layer
 * @setup: the handshake on connections made again (e.g. check the
 *	server's identity, read the volume's geometry again, open a session
 *	on each), under the group's @lock: 0 puts them in use; -EPROTO (not
 *	the same server, or one that lies) fails the group; another error is
 *	a failed try, tried again after a backoff
 * @down: or NULL: the connections are lost: stop sending (e.g. quiesce the
 *	queue); under @lock; may be called again while stopped
 * @up: or NULL: send again what was held, or, the group FAILED or
 *	CLOSING, end it with an error; under @lock; may be called while not
 *	stopped
 * @admit: or NULL: asked before each send of a request of
 *	knet_group_call() or knet_group_submit(), the first and each one
 *	after a reconnect, once the connections it goes on are chosen (their
 *	@setup is over): 0 sends it, a negative errno ends it with that
 *	error, -EAGAIN holds it (the upper layer is taking its state back
 *	from a server that restarted): then @admit_wait is called, and
 *	@admit asked again. Must not sleep.
 * @admit_wait: sleeps until @admit may say otherwise; 0 or -EINTR
 */
struct knet_group_ops {
	int	(*setup)(struct knet_group *g, struct knet_mq *mq);
	void	(*down)(struct knet_group *g);
	void	(*up)(struct knet_group *g);
	int	(*admit)(struct knet_group *g, const struct knet_request *rq);
	int	(*admit_wait)(struct knet_group *g);
};

/* The longest name of a group, with its NUL. */
#define KNET_GROUP_NAME_LEN	64

struct knet_group_conns;

/**
 * struct knet_group - connections to one server that knet recovers
 * @params: where and how each connection connects (@params.removed and
 *	@params.priv are the group's own)
 * @nr: how many connections
 * @loss_timeout: seconds a lost server is waited for before the group
 *	fails, or KNET_LOSS_FOREVER
 * @tries: a request of knet_group_call() or knet_group_submit() ends with
 *	-EIO after this many tries that met a failure of the connection (a
 *	wait of @timeout for the server to come back counts as one); 0: it
 *	is tried until the server is back (a fatal signal ends the wait).
 *	May change while the group runs.
 * @timeout: jiffies one try of knet_group_call() may take (and its wait
 *	for a credit, or for the connections to come back)
 * @ops: the upper layer's part
 * @name: what the group's messages start with, the upper layer's name
 *	for it (e.g. "mxbd: mxbd0")
 * @priv: the upper layer's
 * @state: enum knet_group_state, read with knet_group_state()
 * @state_lock: private: orders @state against requests being held, and
 *	guards @cur
 * @lock: held by knet across @ops and while @mq is replaced; an upper
 *	layer takes it to use @mq without it being replaced meanwhile
 * @mq: the connections, NULL while reconnecting; an upper layer reads it
 *	with knet_group_mq() where @ops->down keeps it from changing
 * @cur: private: @mq and its users (knet_group_call() holds a reference
 *	while it makes a request, no lock)
 * @gen: private: connections made so far, the number of the last
 * @conns: private: sets of connections not yet freed, plus one until closed
 * @conns_gone: private: @conns reached zero
 * @wait: private: calls waiting for the group to leave RECONNECTING
 * @busy: private: requests of knet_group_pick() not yet over, per connection
 * @err_work: private: takes broken connections down
 * @reconnect_work: private: connects again, with knet's backoff
 * @rc: private: the reconnect policy's state since the loss
 * @reconnects: times the connections were made again
 * @resent: requests sent again after a failure of the connection
 * @ended_here: requests of knet_group_submit() whose @done ran in their
 *	completion's context, without a work item (@softirq_done, @task_done)
 * @connect_failures: tries to connect again that failed
 */
struct knet_group {
	struct knet_ep_params		params;
	unsigned int			nr;
	int				loss_timeout;
	unsigned int			tries;
	unsigned long			timeout;
	const struct knet_group_ops	*ops;
	char				name[KNET_GROUP_NAME_LEN];
	void				*priv;
	enum knet_group_state		state;
	spinlock_t			state_lock;	/* @state, @cur, and holding */
	struct mutex			lock;		/* @mq, and @ops */
	struct knet_mq			*mq;
	struct knet_group_conns		*cur;
	u64				gen;
	atomic_t			conns;
	struct completion		conns_gone;
	wait_queue_head_t		wait;
	atomic_t			*busy;
	struct work_struct		err_work;
	struct delayed_work		reconnect_work;
	struct knet_reconnect		rc;
	atomic_t			reconnects;
	atomic_t			resent;
	atomic_t			connect_failures;
	atomic_t			ended_here;
};

static inline enum knet_group_state knet_group_state(const struct knet_group *g)
{
	return READ_ONCE(g->state);
}

static inline struct knet_mq *knet_group_mq(const struct knet_group *g)
{
	return READ_ONCE(g->mq);
}

/* Requests of knet_group_pick() on connection @conn not yet over. */
static inline unsigned int knet_group_busy(const struct knet_group *g, unsigned int conn)
{
	return atomic_read(&g->busy[conn]);
}

int knet_group_open(struct knet_group *g, int *reason);
void knet_group_start(struct knet_group *g);
void knet_group_lost(struct knet_group *g);
bool knet_group_hold(struct knet_group *g, int err, bool (*hold)(void *arg), void *arg);
void knet_group_stop(struct knet_group *g, bool force);
void knet_group_close(struct knet_group *g);

unsigned int knet_group_pick(struct knet_group *g);
void knet_group_unpick(struct knet_group *g, unsigned int conn);
int knet_group_call(struct knet_group *g, unsigned int conn, struct knet_request *rq);
void knet_group_submit(struct knet_group *g, unsigned int conn, struct knet_srq *srq);
void knet_group_probe(struct knet_group *g);
void knet_group_abort(struct knet_group *g);
int knet_sleep_killable(unsigned int ms);

/*
 * The server-style strategies: submit without waiting, each request ending
 * with its callback or on its endpoint's done list, collected with
 * knet_ep_wait_any().
 */
int knet_submit(struct knet_ep *ep, struct knet_request *rq);
struct knet_request *knet_ep_wait_any(struct knet_ep *ep, unsigned long timeout);

#endif /* _KNET_H */

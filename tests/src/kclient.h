/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Userspace client side of the knet protocol, shared by the test and load
 * tools, over either transport: libfabric (one fabric, domain, event queue
 * and completion queue, any number of connections on them), or knet's TCP
 * transport (blocking sockets polled together). The tools post receives,
 * send messages and wait for events the same way on both.
 */
#ifndef ORFS_TOOLS_KCLIENT_H
#define ORFS_TOOLS_KCLIENT_H

#include "server/auth.h"
#include "server/fab.h"
#include "server/proto.h"

enum kc_transport {
	KC_RDMA,	/* libfabric (the provider of -P) */
	KC_TCP,		/* knet's TCP transport (knet_proto.h) */
	KC_AUTO,	/* RDMA if an RDMA device routes to the address, else TCP */
};

/* "rdma", "tcp" or "auto" into *T: 0, or -1 with the reason printed. */
int kc_transport_parse(const char *s, enum kc_transport *t);

/*
 * A tool's transport before its -t: $KNET_TRANSPORT if set (as the guest
 * tests set it for a TCP run), else RDMA. 0, or -1 if it names none.
 */
int kc_transport_env(enum kc_transport *t);

struct kc_conn;

/*
 * What a connection's operations answer with: the context given when the
 * operation was posted, and the bytes a receive got. ERR is 0, or a
 * libfabric error code: FI_ECANCELED when the connection went with the
 * operation posted, FI_ENOTCONN (CTX NULL) when the server closed CONN.
 */
struct kc_event {
	void		*ctx;
	struct kc_conn	*conn;
	size_t		len;
	int		err;
};

struct kc_fabric {
	enum kc_transport	tr;		/* KC_RDMA or KC_TCP once opened */
	/* RDMA */
	struct fi_info		*info;
	struct fid_fabric	*fabric;
	struct fid_eq		*eq;
	struct fid_domain	*domain;
	struct fid_cq		*cq;
	/* TCP */
	char			addr[256], port[16];
	uint16_t		digests;	/* KNET_CMF_HDGST, _DDGST asked for ($KNET_DIGEST) */
	uint32_t		drip;		/* $KNET_DRIP: DATA payloads sent this many bytes at a time */
	struct kc_event		*ev;		/* answered, not yet taken by kc_wait() */
	size_t			nev, ev_cap;
	/* Every open connection (kc_ep_open()), either way. */
	struct kc_conn		**conns;
	size_t			nconns, conns_cap;
};

/* Memory a tool sends, receives or lends from (kc_mr_reg()). */
struct kc_mr {
	struct fid_mr	*mr;	/* RDMA */
	char		*base;
	size_t		len;
};

/* A receive a TCP connection has posted, or memory a request lent. */
struct kc_post {
	char		*buf;
	size_t		len;
	void		*ctx;
};

struct kc_lent {
	uint32_t	tag;
	int		to_server;	/* the server pulls it (R2T), or pushes into it (DATA) */
	char		*buf;
	uint32_t	len;
};

#define KC_TCP_POSTS	64	/* receives a TCP connection keeps posted, at most */
#define KC_TCP_LENT	64	/* requests with lent memory, at most */

struct kc_conn {
	struct kc_fabric	*f;
	void			*context;	/* kc_ep_open()'s */
	struct fid_ep		*ep;		/* RDMA */
	int			fd;		/* TCP, or -1 */
	int			credits;
	uint32_t		inline_max;
	uint32_t		max_io;
	uint16_t		max_segs;
	int			shutdown;
	int			auth;		/* the server asks for the authentication */
	/* TCP */
	int			hdgst, ddgst;	/* digests after headers, payloads (granted) */
	struct kc_post		posted[KC_TCP_POSTS];	/* in the order they were posted */
	int			nposted;
	struct kc_lent		lent[KC_TCP_LENT];
	int			nlent;
};

/*
 * Open transport TR to ADDR:PORT (PROV: libfabric's provider, for RDMA);
 * CQ_SIZE completions at most outstanding. Returns 0 or an error (printed).
 */
int kc_open(struct kc_fabric *f, enum kc_transport tr, const char *addr, const char *port,
	    const char *prov, size_t cq_size);
void kc_close(struct kc_fabric *f);
const char *kc_transport_str(enum kc_transport tr);

/* A connection's endpoint on F; register memory, post receives, then kc_connect(). */
int kc_ep_open(struct kc_fabric *f, struct kc_conn *c, void *context, size_t tx, size_t rx);
void kc_ep_close(struct kc_conn *c);

/*
 * Register LEN bytes at BUF for messages, and with REMOTE for the server
 * to read and write (RDMA: a memory region; TCP: nothing to do). 0 or an
 * error (printed).
 */
int kc_mr_reg(struct kc_fabric *f, struct kc_mr *m, void *buf, size_t len, int remote);
void kc_mr_close(struct kc_mr *m);

/*
 * Post a receive of at most LEN bytes into BUF, or send LEN bytes of BUF
 * as one message (within a credit, which the caller keeps count of):
 * each answers with an event of CTX. 0, or -1 with the reason printed.
 */
int kc_recv(struct kc_conn *c, struct kc_mr *m, void *buf, size_t len, void *ctx);
int kc_send(struct kc_conn *c, struct kc_mr *m, const void *buf, size_t len, void *ctx);

/*
 * The segment that names LEN bytes at PIECE, inside the data of one
 * request that starts at DATA (RDMA: the address and key of M; TCP: the
 * offset of PIECE in the data, key 0).
 */
struct knet_seg kc_seg(const struct kc_conn *c, const struct kc_mr *m, const void *data,
		       const void *piece, uint32_t len);

/*
 * Lend LEN bytes at DATA to request TAG about to be sent: TO_SERVER the
 * server pulls them, else it pushes into them. TCP answers the server's
 * R2T and DATA from and into it until the reply of TAG came; RDMA has
 * nothing to do. 0, or -1 if too many requests have memory lent.
 */
int kc_lend(struct kc_conn *c, uint32_t tag, void *data, uint32_t len, int to_server);

/*
 * Wait up to TIMEOUT_MS for events of F's connections, and take up to MAX
 * of them. Returns how many (0: none came in time), or -1 on an error of
 * the queue itself (printed).
 */
int kc_wait(struct kc_fabric *f, struct kc_event *ev, int max, int timeout_ms);

/*
 * Connect C and wait for the answer; with SECRET (NULL or empty: none) the
 * client says it will authenticate, and the server must ask for it.
 * Returns 0 when connected (limits in C), 3 when the server rejected it
 * (reason printed unless QUIET), 1 on other errors (a server that does
 * not authenticate to a client with a secret among them). Connect one
 * connection at a time: the event queue is shared.
 */
int kc_connect(struct kc_fabric *f, struct kc_conn *c, int version, int service,
	       const char *name, uint16_t depth, uint32_t inline_max,
	       const struct auth_secret *secret, int quiet);

/*
 * Send one KNET_OP_AUTH request with BODY (LEN bytes) and wait for its
 * reply: the tool's own message path. Returns the reply's status (0 or an
 * errno), -1 if the link failed; the reply's body into REP (at most
 * sizeof(struct knet_auth_rep) bytes), its length in *REP_LEN.
 */
typedef int (*kc_auth_call)(void *ctx, const void *body, uint32_t len, void *rep,
			    uint32_t *rep_len);

/*
 * The mutual authentication (knet_proto.h) of a connection to NAME of
 * SERVICE with K, through CALL. Returns 0, EACCES (either side's proof
 * failed: printed), or -1 if the link failed.
 */
int kc_auth(const struct auth_secret *k, int service, const char *name, kc_auth_call call,
	    void *ctx);

/*
 * The secret of a tool's -K FILE into *K (FILE NULL: none). Returns 0, or
 * -1 with the reason printed.
 */
int kc_load_secret(const char *file, struct auth_secret *k);

#endif /* ORFS_TOOLS_KCLIENT_H */

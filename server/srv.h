/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * orfs-server internals shared by the connection code (main.c) and the
 * request engine (engine.c). A shard (one progress thread) owns its
 * connections, completion queues, buffers and everything of them; only
 * struct job crosses to its I/O workers. What struct srv holds is the
 * process's: the main thread's listener and signals, and, under locks,
 * the exports, the allow list, the replay cache and the open-file cache.
 */
#ifndef ORFS_SERVER_SRV_H
#define ORFS_SERVER_SRV_H

#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "server/block.h"
#include "server/config.h"
#include "server/dispatch.h"
#include "server/fsvc.h"
#include "server/fab.h"
#include "server/fdcache.h"
#include "server/proto.h"
#include "server/locks.h"
#include "server/replay.h"
#include "server/sched.h"
#include "server/workers.h"

#define SRV_MSG_SIZE	8192	/* largest message a client may send us */
#define SRV_INLINE_MAX	4096	/* largest inline payload either way */
#define SRV_TX_SIZE	(SRV_INLINE_MAX + 256)	/* largest reply */
#define SRV_CREDITS	32	/* most receives posted per connection */
#define SRV_MIN_CREDITS	2	/* fewest */
#define SRV_TX		(2 * SRV_CREDITS)	/* most reply buffers per connection */
/*
 * Receive buffers of all connections together: credits are divided among
 * connections so that server memory stays bounded whatever their number
 * (at most SRV_MAX_CONNS * SRV_MIN_CREDITS beyond this).
 */
#define SRV_RX_BUDGET	256
#define SRV_RDMA_SQ	32	/* RDMA operations in flight per connection */
#define SRV_MAX_CONNS	256
#define SRV_MAX_EXPORTS	64
/* Listening on any address: the devices it names as not served, at most */
#define SRV_MAX_UNSERVED	16
#define SRV_REQ_CHUNKS	2	/* buffers one request may hold at once */
#define SRV_MAX_IO	(1U << 20)
/* Pipes a TCP progress thread keeps for READs sent from the page cache */
#define SRV_PIPES	64

struct conn;
struct req;
struct chunk;

/*
 * One posted operation; the fi_context comes first (FI_CONTEXT). On a TCP
 * connection, the PDU it writes (SEND: a MSG; RDMA: an R2T for a READ, a
 * DATA for a WRITE), and for a READ the DATA it waits for.
 */
enum op_kind { OP_RECV, OP_SEND, OP_RDMA };
struct op {
	struct fi_context	ctx;
	enum op_kind		kind;
	int			idx;
	int			read;		/* an RDMA READ (OP_RDMA) */
	void			*owner;		/* conn (RECV, SEND) or chunk (RDMA) */
	struct op		*tcp_next;	/* TCP: in the write or the pull queue */
	struct knet_tcp_pdu	tcp_hdr;	/* TCP: the PDU's header */
	char			*tcp_buf;	/* TCP: its payload, or where a READ's data goes */
	uint32_t		tcp_len;	/* TCP: bytes of it */
	uint32_t		tcp_done;	/* TCP: bytes of header and payload moved */
	uint32_t		tcp_hdgst;	/* TCP: the header's digest (little-endian) */
	uint32_t		tcp_ddgst;	/* TCP: the payload's digest (little-endian) */
	int			tcp_pipe;	/* TCP: a DATA's payload is in this pipe, or -1 */
	int			tcp_sink;	/* TCP: an R2T's data goes into this pipe, or -1 */
	int			tcp_drain;	/* TCP: the read end of that pipe */
};

/* A pool buffer moving one piece of a request's data. */
struct chunk {
	struct req		*r;		/* NULL once a read's data is posted */
	struct conn		*c;
	char			*buf;
	uint32_t		off;		/* within the request */
	uint32_t		len;
	int			pending;	/* RDMA operations outstanding */
	int			err;
	int			late;		/* the "late-write" fault: posted again */
	uint64_t		late_writes;	/* times its WRITEs completed, for the log */
	struct job		job;
	struct fid_mr		*sink_mr;	/* its READs' own registration (sink_per_read) */
	struct chunk		*wait_next;	/* waiting for send-queue room */
	int			pipe;		/* its data is in this pipe of its shard, or -1 */
	struct op		ops[KNET_MAX_SEGS];
};

/* One request; lives in the receive slot that brought it. */
struct req {
	struct conn		*c;
	int			slot;
	int			active;
	struct frame		f;
	struct block_req	br;
	struct fq_item		qi;
	int			queued;		/* waiting for a buffer */
	uint32_t		next;		/* bytes handed to chunks */
	uint32_t		done;		/* bytes finished */
	int			inflight;	/* chunks or jobs running */
	int			status;		/* first error, as an errno */
	uint32_t		inl_reply;	/* bytes of inline data to return */
	struct knet_auth_rep	auth_rep;	/* the body of an AUTH step 1 reply */
	struct job		job;		/* for operations without a chunk */
	/* File service. */
	struct fsvc_req		fr;
	uint8_t			*fbody;		/* reply body, SRV_TX_SIZE bytes */
	uint32_t		fbody_len;
	int			fd;		/* file of a READ or WRITE */
	struct fdc_entry	*fde;		/* where fd comes from, if cached */
	uint64_t		eof_at;		/* READ: where the file ended */
	struct replay_entry	*replay;	/* to complete with the result */
	struct req		*tx_next;	/* waiting for a reply buffer */
};

/*
 * An export or volume being served. A reload that drops or changes one
 * marks it removed: new connections are refused, current ones go on, and
 * the slot is released with the last of them.
 */
struct export {
	struct cfg_export	cfg;
	struct volume		vol;		/* block service */
	struct fsvc_export	fx;		/* file service */
	uint8_t			uuid[16];	/* block service: the volume's identity */
	int			used;
	int			removed;
	int			refs;		/* connections using it */
};

struct tcp_conn;

struct conn {
	struct srv		*s;
	struct shard		*sh;		/* the progress thread it belongs to */
	struct export		*ex;
	struct tcp_conn		*tcp;		/* a TCP connection's part, or NULL (RDMA) */
	struct fid_ep		*ep;
	struct fid_mr		*mr;
	char			*buf;		/* ncredits rx then ntx tx buffers */
	int			ncredits;	/* receives posted, credits granted */
	int			ntx;
	struct op		rx[SRV_CREDITS];
	struct op		tx[SRV_TX];
	int			tx_busy[SRV_TX];
	struct req		*req;		/* ncredits of them, one per receive */
	struct req		*tx_wait, **tx_wait_tail;
	struct chunk		*rdma_wait, **rdma_wait_tail;
	int			sq_free;	/* room for RDMA in the send queue */
	int			reads_out;	/* RDMA READs posted, not yet completed */
	struct fq_flow		flow;
	int			busy;		/* handlers running: do not free */
	int			pending;	/* posted operations not yet completed */
	int			active;		/* requests not yet finished */
	int			connected;
	int			shut;		/* fi_shutdown() called */
	int			closing;
	int			cm_done;	/* the CM reported its last event */
	uint32_t		inline_max;
	uint64_t		client_id;	/* file service: from SESSION, 0 before */
	uint64_t		peer_key;	/* its host, keyed (locks_attach()) */
	int			revoked;	/* SESSION said its locks were dropped; not seen yet */
	struct cfg_addr		ip;		/* the client's (all zero: none), checked on reload */
	/* Authentication (knet_proto.h): the secret, or none (len 0). */
	struct auth_secret	auth;
	int			authed;		/* it may send other requests */
	int			auth_step;	/* the last step done */
	uint8_t			auth_nc[KNET_AUTH_NONCE], auth_ns[KNET_AUTH_NONCE];
	char			peer[INET6_ADDRSTRLEN + 8];
	struct conn_params	p;
	struct dispatch_stats	st;
	uint64_t		bytes_in, bytes_out;
	uint64_t		since_us;	/* when it connected (now_us()) */
	uint64_t		idle_mark;	/* st.requests at the last idle sweep */
	uint64_t		idle_since_us;	/* the sweep that last saw it busy */
	struct conn		*next;
};

/* A connection event as fi_eq_read() gives it, with room for connect data. */
union cm_event {
	struct fi_eq_cm_entry	cm;
	char			raw[sizeof(struct fi_eq_cm_entry) + 256];
};

/* A connection request the main thread hands to a shard. */
struct connreq {
	struct connreq		*next;
	int			tcp_fd;		/* a TCP connection accepted, or -1 */
	struct sockaddr_storage	tcp_peer;	/* its address */
	socklen_t		tcp_peerlen;
	size_t			datalen;
	union cm_event		ev;
};

/* One progress thread and all it owns. */
struct shard {
	struct srv		*s;
	int			id;
	int			dev;		/* the RDMA device it serves: srv.dev[]; -1: TCP */
	pthread_t		thread;
	int			started;	/* the thread runs: join it */
	struct fid_eq		*eq;		/* its connections' CM events */
	struct fid_cq		*rxcq;		/* receives: always armed */
	struct fid_cq		*txcq;		/* sends and RDMA: armed when awaited */
	struct pool		pool;		/* its share of the buffers */
	struct fid_mr		*pool_mr;
	struct chunk		*chunks;	/* one per pool chunk, same index */
	struct fq		fq;
	struct done_box		box;		/* its jobs the workers finished */
	struct job		*now;		/* jobs done without a worker, to finish */
	unsigned long		jobs_now;	/* how many were */
	unsigned long		names_now;	/* of which file service requests */
	int			epfd, eqfd, rxcqfd, txcqfd;
	int			mailfd;		/* eventfd: mail or an order from main */
	atomic_uint		mail_seq;	/* mail sent (mail_wake()) */
	unsigned int		mail_taken;	/* mail_seq when it last took its mail */
	pthread_mutex_t		mail_lock;
	struct connreq		*mail;		/* connection requests to take, newest first */
	atomic_int		queued;		/* how many: main counts them as connections */
	atomic_int		stopping;	/* main: drain and end */
	atomic_int		stop;		/* main: end now */
	atomic_int		retiring;	/* main: its device is gone: close all, end */
	atomic_int		ended;		/* the thread left its loop */
	int			retired;	/* main: ended retiring, and joined */
	int			closed;		/* shard_close() done */
	atomic_int		nconns;
	unsigned int		allow_seen;	/* the allow list it last applied */
	unsigned int		status_seen;	/* the last status report it wrote */
	uint64_t		idle_sweep_us;	/* when it next looks for idle connections */
	int			eq_ready;	/* the EQ may hold events: read it */
	int			tx_watched;	/* txcqfd in the epoll set (see tx_watch()) */
	int			rx_armed, tx_armed; /* a CQ armed, its channel quiet since */
	atomic_int		failed;		/* stopped on an error */
	uint64_t		last_busy;	/* us, CLOCK_MONOTONIC: for polling */
	atomic_int		active;		/* requests being served, all its connections */
	unsigned long		poll_hits;	/* polls that found work */
	unsigned long		left;		/* requests that came after the signal, not started */
	struct conn		*conns;
	struct tcp_hs		*tcp_hs;	/* TCP connections in their handshake */
	int			credits_used;	/* receives posted by all connections */
	int			rx_budget;	/* its share of SRV_RX_BUDGET */
	uint64_t		buffer_waits;	/* times a request waited for a buffer */
	int			sink_per_read;	/* READ sinks registered per chunk (iWARP) */
	int			fence_reads;	/* fence what follows a READ (iWARP) */
	uint64_t		sink_regs;	/* such registrations made */
	uint64_t		sink_live;	/* and not closed yet */
	uint64_t		fault_rng;	/* the "fs-random" fault's state */
	/* READs sent from the page cache (splice.c): TCP threads only. */
	struct spipe {
		int		r, w;		/* -1: not made */
	}			pipes[SRV_PIPES];
	int			pipe_free[SRV_PIPES];	/* made and empty: indexes */
	int			npipe_free;
	int			splice_off;	/* a pipe could not be made: copy */
	uint64_t		splice_chunks;	/* chunks sent from the page cache */
	uint64_t		sink_chunks;	/* WRITE chunks received into pipes */
	uint64_t		sink_full;	/* of those started, pipes that filled up */
};

/*
 * An RDMA device the server listens on. Each progress thread serves one
 * (its queues are made on it and its share of the pool is registered with
 * it); a connection goes to a thread of the device it came on.
 */
struct srv_dev {
	struct fi_info		*info;		/* its first listen address's (in linfo[]), or in anyinfo or own */
	struct fi_info		*own;		/* the list info is in, found again through any address */
	struct fid_domain	*domain;
	int			lost;		/* removed: its threads retire (dev_lost()) */
	int			released;	/* lost, and all the server had on it closed */
	time_t			forget_by;	/* released: until when to look for its end */
	time_t			retry_at;	/* released: when to try it again */
};

struct srv {
	struct config		cfg;		/* in force (allow list: under lock) */
	struct config		cmdline;	/* exports and allows given as options */
	const char		*cfg_path;	/* re-read on SIGHUP */
	const char		*prov;
	int			verbose;
	int			insecure;	/* --insecure: no allow list is no refusal */
	int			nthreads;	/* I/O workers */
	int			nshards;
	size_t			chunk_size;
	uint32_t		nchunks;	/* all shards together */
	pthread_mutex_t		lock;		/* ex[], cfg.allow, key */
	struct export		ex[SRV_MAX_EXPORTS];
	struct fi_info		*linfo[CFG_MAX_LISTEN];	/* each listen address's */
	struct fi_info		*anyinfo;	/* listening on any address: every device's */
	char			unserved[SRV_MAX_UNSERVED][64];	/* devices said not to be served */
	int			nunserved;
	struct srv_dev		dev[CFG_MAX_LISTEN];
	int			ndev;
	int			ngroups;	/* of progress threads: each device's, TCP's */
	struct fid_fabric	*fabric;
	struct fid_eq		*eq;		/* the listeners' */
	struct fid_pep		*pep[CFG_MAX_LISTEN];
	int			npep;
	int			tcpfd[CFG_MAX_LISTEN];	/* TCP listeners (-1: none) */
	int			ntcp;
	struct shard		*shards;
	struct workers		w;		/* the I/O workers, shared by the shards */
	atomic_int		nconns;		/* all shards together */
	/* Connections of each host (address), for cfg.peer_conns; under lock. */
	struct srv_peer {
		struct cfg_addr	ip;
		int		n;
	}			peers[SRV_MAX_CONNS];
	int			npeers;
	uint64_t		peer_refused;	/* connections a host's bound refused */
	atomic_uint		allow_gen;	/* moves when a reload changes the allow list */
	atomic_uint		status_gen;	/* moves at each SIGUSR1: shards report */
	atomic_uint		idle_secs;	/* cfg.idle_timeout, as a reload leaves it */
	atomic_ullong		idle_closed;	/* connections closed for their silence */
	int			epfd, sigfd, eqfd, wakefd;	/* the main thread's */
	int			stopping;	/* main: a stop signal came */
	int			stop;		/* main: the listener or epoll failed */
	uint8_t			key[16];	/* file handle MAC key, kept in state_dir */
	uint64_t		boot;		/* this start's identity */
	_Atomic uint64_t	verf;		/* the write verifier (fsvc_verf()) */
	struct replay		replay;		/* answers to non-idempotent file operations */
	struct locks		locks;		/* byte-range locks of the file service */
	struct fsvc_chg		chg;		/* changes made through the file service */
	struct fdcache		fdc;		/* files open for READ and WRITE */
	int			fault;		/* ORFS_SERVER_FAULT, tests only */
	uint64_t		fault_seed;	/* the shards' "fs-random" start */
	unsigned int		fault_status;	/* the "fs-status" fault's status */
};

/*
 * Fault injection for the clients' tests (environment ORFS_SERVER_FAULT):
 * from the 3rd reply on, replies lie in one way.
 */
enum srv_fault {
	FAULT_NONE,
	FAULT_TAG,		/* "tag": a tag no request has */
	FAULT_INLINE,		/* "inline": inline data nobody asked for */
	FAULT_BODY,		/* "body": a body larger than any request allows */
	FAULT_OPCODE,		/* "opcode": the reply of another operation */
	/* File service bodies, well framed but impossible: */
	FAULT_FS_NAME,		/* "fs-name": a directory entry named with a '/' */
	FAULT_FS_COUNT,		/* "fs-count": a READ that returns more than asked */
	FAULT_FS_ATTR,		/* "fs-attr": attributes of no known file type */
	FAULT_FS_LOOP,		/* "fs-loop": a directory found inside itself */
	FAULT_FS_RANDOM,	/* "fs-random": random bytes and statuses, well framed */
	FAULT_FS_BUSY,		/* "fs-busy": every call "still runs" (EINPROGRESS) */
	FAULT_FS_STATUS,	/* "fs-status": every call fails, with one status */
	FAULT_BLOCK_RANDOM,	/* "block-random": random statuses and INFO bytes */
	FAULT_BLOCK_INFO,	/* "block-info": INFO with a 3000-byte physical block */
	/*
	 * "late-write": a block READ's data is written again and again into
	 * the client's memory and never answered, as a server would that
	 * keeps a key after the client gave up (from the first READ on).
	 */
	FAULT_LATE_WRITE,
	FAULT_FS_MODE,		/* "fs-mode": attributes with mode bits no file has */
	FAULT_FS_OWNER,		/* "fs-owner": attributes of owner (uid_t)-1 */
	FAULT_NO_SYNC,		/* "no-sync": FLUSH, FUA and FSYNC promise what they did not do */
};

/* The body of a block service reply. */
union block_body {
	struct mxbd_info	info;
	struct mxbd_ident	ident;
};

static inline int conn_is_file(const struct conn *c)
{
	return c->ex->cfg.service == KNET_SVC_FILE;
}

/* main.c: options, the configuration's check, signals and the main loop */
void srv_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* CLOCK_MONOTONIC in microseconds */
uint64_t now_us(void);

/* conn.c: connections, their requests to connect and their CM events */
char *conn_rx_buf(struct conn *c, int i);
char *conn_tx_buf(struct conn *c, int i);
int conn_post_recv(struct conn *c, int i);
void conn_close(struct conn *c, const char *why);
void conn_maybe_free(struct conn *c);
void conn_get(struct conn *c);
void conn_put(struct conn *c);
void conn_free(struct conn *c);
void reject(fid_t pep, struct fi_info *info, int reason, const char *what);
void on_connreq(struct shard *sh, struct fi_eq_cm_entry *e, size_t datalen);
struct conn *conn_admit(struct shard *sh, const struct cfg_addr *ip, const void *data, size_t len,
			int *reason, char *detail, size_t dlen);
void conn_rep(const struct conn *c, struct knet_cm_rep *rep);
void conn_completion(struct op *op, size_t len, int err);
void handle_eq(struct shard *sh);
void apply_allow(struct shard *sh);
int idle_sweep(struct shard *sh);

/* exports.c: exports and volumes, each host's connections, the handle key */
int load_key(struct srv *s, const char *dir, int make);
struct export *find_export(struct srv *s, const char *name, int service);
int export_add(struct srv *s, const struct cfg_export *cfg);
void export_release(struct srv *s, struct export *ex);
struct export *export_get(struct srv *s, const char *name, int service);
void export_put(struct srv *s, struct export *ex);
int peer_conn_get(struct srv *s, const struct cfg_addr *ip);
void peer_conn_put(struct srv *s, const struct cfg_addr *ip);

/* reload.c */
void srv_reload(struct srv *s);

/* shard.c: progress threads */
int epoll_add(int epfd, int fd);
void mail_wake(struct shard *sh);
void shard_mail(struct shard *sh, struct connreq *q);
int shard_load(struct shard *sh);
uint32_t shard_chunks(const struct srv *s, int i);
int shard_open(struct shard *sh, uint32_t nchunks);
void shard_close(struct shard *sh);
void shard_reset(struct shard *sh);
void *shard_main(void *arg);
void order_shards(struct srv *s, int stop);

/* fabric.c: devices, domains, queues and listeners opened and closed */
int listen_getinfo(const struct srv *s, int i, const char *port, struct fi_info **info);
int any_getinfo(const struct srv *s, struct fi_info **info);
int any_devices(const struct srv *s, int i, struct fi_info **any);
size_t appendf(char *buf, size_t len, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
const char *dev_str(const struct config *c, struct fi_info *const info[], struct fi_info *any,
		    char *buf, size_t len);
int srv_open(struct srv *s);
void srv_close(struct srv *s);

/* hotplug.c: connection requests handed over, devices lost and back */
void handle_listen(struct srv *s);
int dev_watch(struct srv *s);
void reap_retired(struct srv *s);

/* tcp.c: the TCP transport: listeners, handshakes, PDUs in and out */
struct tcp_hs;
int tcp_listen(struct srv *s);
void tcp_unlisten(struct srv *s);
int tcp_is_listener(const struct srv *s, int fd);
void tcp_accept(struct srv *s, int lfd);
void tcp_on_connreq(struct shard *sh, struct connreq *q);
int tcp_on_fd(struct shard *sh, int fd, uint32_t events);
int tcp_progress(struct shard *sh);
void tcp_shard_close(struct shard *sh);
int tcp_post_recv(struct conn *c, int i);
int tcp_send(struct conn *c, char *buf, size_t n, struct op *op);
int tcp_rdma(struct conn *c, char *buf, const struct spipe *pipe, size_t n, uint32_t tag,
	     uint64_t raddr, struct op *op);
int tcp_can_splice(const struct conn *c);
void tcp_shutdown(struct conn *c);
void tcp_free(struct conn *c);
int tcp_busy(const struct shard *sh);
int tcp_next_ms(const struct shard *sh);

/* splice.c: READs over TCP sent from the page cache, through pipes */
void spipe_init(struct shard *sh);
int spipe_get(struct shard *sh);
void spipe_put(struct shard *sh, int i, int dirty);
void spipe_close_all(struct shard *sh);
int splice_read(struct job *j);
int splice_write(struct job *j);
int pipe_take(int fd, void *buf, uint32_t n);

/* fault.c: lying replies, a test aid (-F) */
int fault_configure(struct srv *s, int enabled);
int fault_lies(const struct conn *c, const struct req *r);
size_t inject_fault(int fault, char *buf, size_t n);
void inject_fs_fault(int fault, struct req *r);
uint32_t inject_block_fault(int fault, struct req *r, union block_body *b, uint32_t blen);

/* engine.c */
void eng_on_recv(struct conn *c, int slot, uint32_t len);
void eng_on_send_done(struct conn *c, int t);
void eng_on_rdma_done(struct chunk *ch, int err);
void eng_on_jobs(struct shard *s);
/* Finish the jobs done on the progress thread itself (see dispatch_job()). */
void eng_run_now(struct shard *s);
void eng_conn_closing(struct conn *c);

#endif /* ORFS_SERVER_SRV_H */

// SPDX-License-Identifier: GPL-2.0-only
/*
 * orfs-server: the TCP transport (knet_proto.h, "The TCP transport").
 *
 * The main thread listens and accepts; each accepted socket goes to the
 * least loaded of the shards kept for TCP (struct shard, dev -1), which reads its CONNECT, admits it as an RDMA
 * connection request is (conn_admit()) and answers ACCEPT or REJECT. From
 * then on the connection is a struct conn like any other: the request
 * engine posts receives, sends and "RDMA" on it, and this file turns
 * them into PDUs on the socket:
 *
 *   receive   a receive buffer free for the next MSG (one credit)
 *   send      a MSG PDU
 *   READ      an R2T PDU; the DATA the client answers with completes it
 *   WRITE     a DATA PDU
 *
 * The socket is non-blocking and watched by the shard's epoll. Writes
 * are batched (writev of the queued PDUs; a DATA payload in a pipe,
 * splice.c, is spliced after its header), reads go through a buffer,
 * and completions run from the shard's loop (tcp_progress()), never from
 * inside the engine's call that queued the work. A client that sends
 * more messages than its credits, data it was not asked for, or a PDU
 * that does not parse is cut off and logged: nothing it sends is taken
 * into memory the server did not set aside for it. With the digests the
 * client asked for (it always gets them), each header and payload is
 * followed by its CRC32C, made as a PDU is queued and checked as one
 * comes whole: a mismatch closes the connection.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "server/srv.h"

#define TCP_IN_SIZE	(64 << 10)	/* a connection's input buffer */
#define TCP_DIRECT_MIN	(16 << 10)	/* payloads read straight into place from this size */
#define TCP_READ_BUDGET	(1 << 20)	/* bytes read from one connection a turn */
#define TCP_IOV_MAX	64		/* iovecs of one writev */
#define TCP_HS_US	5000000		/* for a CONNECT to come whole */
/*
 * A connection with PDUs to write or DATA awaited that moves no byte for
 * stall_timeout seconds is closed: a client that stops reading, or
 * answers an R2T by the byte, would otherwise hold the pool chunks of its
 * requests.
 */
static uint64_t tcp_stall_us(const struct shard *sh)
{
	return (uint64_t)sh->s->cfg.stall_timeout * 1000000;
}

/* An accepted socket whose CONNECT has not come whole yet. */
struct tcp_hs {
	struct tcp_hs	*next;
	int		fd;
	struct cfg_addr	ip;
	char		peer[INET6_ADDRSTRLEN + 8];
	uint8_t		buf[sizeof(struct knet_tcp_pdu) + sizeof(struct knet_cm_req)];
	size_t		got;
	uint64_t	deadline;	/* now_us() */
};

struct tcp_conn {
	int			fd;
	int			hdgst, ddgst;	/* digests after headers, payloads */
	int			flush;		/* closing: end every operation (tcp_progress()) */
	int			rd_ready;	/* the socket may have bytes */
	int			wr_blocked;	/* the socket was full: EPOLLOUT watched */
	struct op		*out, **out_tail;	/* PDUs to write, in order */
	struct op		*pull, **pull_tail;	/* READs waiting for DATA, in R2T order */
	uint8_t			posted[SRV_CREDITS];	/* receive buffers free for a MSG */
	int			msg_slot;	/* the buffer of the MSG being received, or -1 */
	struct {
		struct knet_tcp_pdu	pdu;	/* the PDU being received */
		uint32_t		dgst;	/* and its header's digest */
	} h;				/* 20 bytes, no padding: read as one */
	uint32_t		hdr_got;
	uint32_t		body_got;	/* bytes of its payload */
	uint32_t		rx_ddgst;	/* its payload's digest */
	uint32_t		dgst_got;	/* bytes of it */
	uint64_t		moved_us;	/* now_us() when a byte last moved */
	size_t			in_off, in_have;
	char			in[TCP_IN_SIZE];
};

static_assert(sizeof(((struct tcp_conn *)0)->h) == sizeof(struct knet_tcp_pdu) + KNET_TCP_DIGEST,
	      "a header and its digest are read as one");

static void tcp_log_errno(const char *what)
{
	srv_log("%s: %s", what, strerror(errno));
}

/* ---- listening -------------------------------------------------------- */

static int tcp_listen_one(struct srv *s, const struct cfg_listen *l, const char *port)
{
	struct addrinfo hints = {
		.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
		.ai_flags = AI_PASSIVE | AI_NUMERICHOST | AI_NUMERICSERV,
	};
	struct addrinfo *ai;
	int fd, one = 1, ret;

	ret = getaddrinfo(l->addr, port, &hints, &ai);
	if (ret) {
		srv_log("listen tcp://%s port %s: %s", l->addr, port, gai_strerror(ret));
		return -1;
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		tcp_log_errno("socket");
		freeaddrinfo(ai);
		return -1;
	}
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 128)) {
		srv_log("listen tcp://%s port %s: %s", l->addr, port, strerror(errno));
		close(fd);
		freeaddrinfo(ai);
		return -1;
	}
	freeaddrinfo(ai);
	if (epoll_add(s->epfd, fd)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Listen on the TCP addresses of the configuration; 0 or -1. */
int tcp_listen(struct srv *s)
{
	int i;

	for (i = 0; i < CFG_MAX_LISTEN; i++)
		s->tcpfd[i] = -1;
	for (i = 0; i < s->cfg.ntcp; i++) {
		s->tcpfd[i] = tcp_listen_one(s, &s->cfg.tcp[i], config_tcp_port(&s->cfg, i));
		if (s->tcpfd[i] < 0)
			return -1;
		s->ntcp = i + 1;
	}
	return 0;
}

void tcp_unlisten(struct srv *s)
{
	int i;

	for (i = 0; i < s->ntcp; i++)
		if (s->tcpfd[i] >= 0)
			close(s->tcpfd[i]);
	s->ntcp = 0;
}

int tcp_is_listener(const struct srv *s, int fd)
{
	int i;

	for (i = 0; i < s->ntcp; i++)
		if (s->tcpfd[i] == fd)
			return 1;
	return 0;
}

/* Main: the connections waiting on listener LFD go to the least loaded shards. */
void tcp_accept(struct srv *s, int lfd)
{
	struct sockaddr_storage ss;
	struct shard *sh;
	struct connreq *q;
	socklen_t len;
	int fd, i, load, other;

	for (;;) {
		len = sizeof(ss);
		fd = accept4(lfd, (struct sockaddr *)&ss, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
				tcp_log_errno("accept");
			return;
		}
		sh = NULL;
		load = 0;
		for (i = 0; !s->stopping && i < s->nshards; i++) {
			if (s->shards[i].dev >= 0 || s->shards[i].retired || !s->shards[i].started)
				continue;
			other = shard_load(&s->shards[i]);
			if (!sh || other < load) {
				sh = &s->shards[i];
				load = other;
			}
		}
		q = sh ? calloc(1, sizeof(*q)) : NULL;
		if (!q) {
			close(fd);
			continue;
		}
		q->tcp_fd = fd;
		memcpy(&q->tcp_peer, &ss, len);
		q->tcp_peerlen = len;
		shard_mail(sh, q);
	}
}

/* ---- the handshake ---------------------------------------------------- */

static void hs_free(struct shard *sh, struct tcp_hs *hs)
{
	struct tcp_hs **pp;

	for (pp = &sh->tcp_hs; *pp; pp = &(*pp)->next) {
		if (*pp == hs) {
			*pp = hs->next;
			break;
		}
	}
	close(hs->fd);
	free(hs);
}

/* Shard SH takes the accepted socket of Q. */
void tcp_on_connreq(struct shard *sh, struct connreq *q)
{
	struct tcp_hs *hs = calloc(1, sizeof(*hs));
	char host[INET6_ADDRSTRLEN];
	int one = 1;

	if (!hs || sh->stopping || sh->retiring) {
		free(hs);
		close(q->tcp_fd);
		return;
	}
	hs->fd = q->tcp_fd;
	config_addr_from_sa(&q->tcp_peer, q->tcp_peerlen, &hs->ip);
	snprintf(hs->peer, sizeof(hs->peer), "%s", config_addr_str(&hs->ip, host, sizeof(host)));
	hs->deadline = now_us() + TCP_HS_US;
	if (setsockopt(hs->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)))
		tcp_log_errno("setsockopt TCP_NODELAY");
	if (epoll_add(sh->epfd, hs->fd)) {
		close(hs->fd);
		free(hs);
		return;
	}
	hs->next = sh->tcp_hs;
	sh->tcp_hs = hs;
}

/* Write all of BUF to a fresh socket, whose buffer holds it: 0 or -1. */
static int write_all(int fd, const void *buf, size_t n)
{
	ssize_t w = send(fd, buf, n, MSG_NOSIGNAL | MSG_DONTWAIT);

	return w == (ssize_t)n ? 0 : -1;
}

static void hs_reject(struct shard *sh, struct tcp_hs *hs, int reason, const char *detail)
{
	struct {
		struct knet_tcp_pdu	pdu;
		struct knet_cm_rej	rej;
	} __attribute__((packed)) out = {
		.pdu = { .type = KNET_TCP_REJECT, .length = htole32(sizeof(struct knet_cm_rej)) },
		.rej = { .version = htole16(KNET_PROTO_VERSION), .reason = htole16((uint16_t)reason) },
	};

	srv_log("rejecting a TCP connection from %s: %s%s", hs->peer, proto_reject_str(reason),
		detail ? detail : "");
	if (write_all(hs->fd, &out, sizeof(out)))
		srv_log("%s: the reject could not be sent", hs->peer);
	hs_free(sh, hs);
}

static struct tcp_conn *tcp_conn_new(int fd)
{
	struct tcp_conn *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->fd = fd;
	t->out_tail = &t->out;
	t->pull_tail = &t->pull;
	t->msg_slot = -1;
	t->rd_ready = 1;	/* what came with the CONNECT */
	t->moved_us = now_us();
	return t;
}

/* The CONNECT of HS is whole: admit it, or refuse it. */
static void hs_connect(struct shard *sh, struct tcp_hs *hs)
{
	struct {
		struct knet_tcp_pdu	pdu;
		struct knet_cm_rep	rep;
	} __attribute__((packed)) out = {
		.pdu = { .type = KNET_TCP_ACCEPT, .length = htole32(sizeof(struct knet_cm_rep)) },
	};
	struct knet_cm_rep rep;
	struct tcp_hs **pp;
	struct conn *c;
	char detail[128];
	int reason, i;

	c = conn_admit(sh, &hs->ip, hs->buf + sizeof(struct knet_tcp_pdu),
		       sizeof(struct knet_cm_req), &reason, detail, sizeof(detail));
	if (!c) {
		hs_reject(sh, hs, reason, detail);
		return;
	}
	c->tcp = tcp_conn_new(hs->fd);
	conn_rep(c, &rep);
	/* The digests asked for, granted: both sides use them from now on. */
	if (c->tcp) {
		c->tcp->hdgst = !!(c->p.flags & KNET_CMF_HDGST);
		c->tcp->ddgst = !!(c->p.flags & KNET_CMF_DDGST);
		rep.flags |= htole16(c->p.flags & KNET_CMF_DIGESTS);
	}
	out.rep = rep;
	if (!c->tcp || write_all(hs->fd, &out, sizeof(out))) {
		srv_log("%s: cannot accept a TCP connection", hs->peer);
		if (c->tcp)
			c->tcp->fd = -1;	/* still the handshake's, closed with it */
		conn_free(c);
		sh->s->nconns--;
		hs_free(sh, hs);
		return;
	}
	/* The socket is the connection's now. */
	for (pp = &sh->tcp_hs; *pp; pp = &(*pp)->next) {
		if (*pp == hs) {
			*pp = hs->next;
			break;
		}
	}
	for (i = 0; i < c->ncredits; i++)
		tcp_post_recv(c, i);
	c->next = sh->conns;
	sh->conns = c;
	sh->nconns++;
	c->connected = 1;
	c->since_us = now_us();
	c->idle_since_us = c->since_us;
	snprintf(c->peer, sizeof(c->peer), "%s", hs->peer);
	srv_log("%s connected to %s '%s' (credits %d, progress thread %d on TCP%s%s)", c->peer,
		c->p.service == KNET_SVC_FILE ? "export" : "volume", c->p.name, c->ncredits,
		sh->id, c->p.flags & KNET_CMF_DIGESTS ? ", digests " : "",
		c->p.flags & KNET_CMF_DIGESTS ? knet_digests_str(c->p.flags) : "");
	free(hs);
}

static void hs_read(struct shard *sh, struct tcp_hs *hs)
{
	const struct knet_tcp_pdu *p = (const struct knet_tcp_pdu *)hs->buf;
	ssize_t n;

	n = recv(hs->fd, hs->buf + hs->got, sizeof(hs->buf) - hs->got, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		srv_log("%s: TCP connection closed before its CONNECT", hs->peer);
		hs_free(sh, hs);
		return;
	}
	hs->got += (size_t)n;
	if (hs->got >= sizeof(*p) &&
	    (p->type != KNET_TCP_CONNECT || p->flags || p->reserved ||
	     le32toh(p->length) != sizeof(struct knet_cm_req))) {
		hs_reject(sh, hs, KNET_REJ_MALFORMED, " (not a CONNECT)");
		return;
	}
	if (hs->got == sizeof(hs->buf))
		hs_connect(sh, hs);
}

/* ---- operations -------------------------------------------------------- */

/* Bytes of OP's payload on the wire: an R2T has none. */
static uint32_t op_payload(const struct op *op)
{
	return op->tcp_hdr.type == KNET_TCP_R2T ? 0 : op->tcp_len;
}

/* OP is ready to go on T: the digests it carries. */
static void op_digests(const struct tcp_conn *t, struct op *op)
{
	if (t->hdgst)
		op->tcp_hdgst = htole32(proto_crc32c(&op->tcp_hdr, sizeof(op->tcp_hdr)));
	if (t->ddgst && op_payload(op))
		op->tcp_ddgst = htole32(proto_crc32c(op->tcp_buf, op_payload(op)));
}

static void out_push(struct tcp_conn *t, struct op *op)
{
	/* Work after a quiet time: the stall clock starts now. */
	if (!t->out && !t->pull)
		t->moved_us = now_us();
	op->tcp_next = NULL;
	op->tcp_done = 0;
	*t->out_tail = op;
	t->out_tail = &op->tcp_next;
}

int tcp_post_recv(struct conn *c, int i)
{
	c->tcp->posted[i] = 1;
	c->pending++;
	return 0;
}

int tcp_send(struct conn *c, char *buf, size_t n, struct op *op)
{
	memset(&op->tcp_hdr, 0, sizeof(op->tcp_hdr));
	op->tcp_hdr.type = KNET_TCP_MSG;
	op->tcp_hdr.length = htole32((uint32_t)n);
	op->tcp_buf = buf;
	op->tcp_len = (uint32_t)n;
	op->tcp_pipe = -1;
	op_digests(c->tcp, op);
	out_push(c->tcp, op);
	return 0;
}

/* Can a DATA PDU to C take its payload from a pipe? Not when it needs a digest. */
int tcp_can_splice(const struct conn *c)
{
	return !c->tcp->ddgst;
}

/*
 * READ (op->read) or WRITE N bytes of BUF from or to the client's data at
 * RADDR of request TAG: an R2T, or a DATA PDU. A WRITE's data may instead
 * be the next N bytes of PIPE, and a READ's may go into PIPE, empty, when
 * it can (else into BUF: the R2T's tcp_sink is then -1). NULL: no pipe;
 * see tcp_can_splice().
 */
int tcp_rdma(struct conn *c, char *buf, const struct spipe *pipe, size_t n, uint32_t tag,
	     uint64_t raddr, struct op *op)
{
	/* The client offered its data from 0: no offset beyond 32 bits. */
	if (raddr > UINT32_MAX || n > UINT32_MAX - raddr)
		return -EINVAL;
	memset(&op->tcp_hdr, 0, sizeof(op->tcp_hdr));
	op->tcp_hdr.type = op->read ? KNET_TCP_R2T : KNET_TCP_DATA;
	op->tcp_hdr.length = htole32((uint32_t)n);
	op->tcp_hdr.tag = htole32(tag);
	op->tcp_hdr.offset = htole32((uint32_t)raddr);
	op->tcp_buf = buf;
	op->tcp_len = (uint32_t)n;
	op->tcp_pipe = pipe && !op->read ? pipe->r : -1;
	op->tcp_sink = pipe && op->read ? pipe->w : -1;
	op->tcp_drain = pipe ? pipe->r : -1;
	op_digests(c->tcp, op);
	out_push(c->tcp, op);
	return 0;
}

/* Bytes of a header on T's stream, its digest included. */
static uint32_t tcp_hlen(const struct tcp_conn *t)
{
	return (uint32_t)sizeof(struct knet_tcp_pdu) + (t->hdgst ? KNET_TCP_DIGEST : 0);
}

/* Bytes of the digest after a payload of LEN bytes. */
static uint32_t tcp_dlen(const struct tcp_conn *t, uint32_t len)
{
	return t->ddgst && len ? KNET_TCP_DIGEST : 0;
}

/* Bytes of OP's PDU on T's stream: header, payload, digests. */
static uint32_t op_wire(const struct tcp_conn *t, const struct op *op)
{
	return tcp_hlen(t) + op_payload(op) + tcp_dlen(t, op_payload(op));
}

/*
 * The iovecs of what is left of OP on T (from op->tcp_done) into IOV, at
 * most 4: header, its digest, payload, its digest. Returns how many. A
 * payload in a pipe is not one of them (tcp_write() splices it).
 */
static int op_iov(const struct tcp_conn *t, struct op *op, struct iovec *iov)
{
	struct iovec part[4] = {
		{ &op->tcp_hdr, sizeof(op->tcp_hdr) },
		{ &op->tcp_hdgst, t->hdgst ? KNET_TCP_DIGEST : 0 },
		{ op->tcp_buf, op_payload(op) },
		{ &op->tcp_ddgst, tcp_dlen(t, op_payload(op)) },
	};
	uint32_t skip = op->tcp_done;
	int i, n = 0;

	if (op->tcp_pipe >= 0)
		part[2].iov_len = part[3].iov_len = 0;	/* no digest: tcp_can_splice() */
	for (i = 0; i < 4; i++) {
		if (skip >= part[i].iov_len) {
			skip -= (uint32_t)part[i].iov_len;
			continue;
		}
		iov[n].iov_base = (char *)part[i].iov_base + skip;
		iov[n++].iov_len = part[i].iov_len - skip;
		skip = 0;
	}
	return n;
}

void tcp_shutdown(struct conn *c)
{
	if (shutdown(c->tcp->fd, SHUT_RDWR) && errno != ENOTCONN)
		tcp_log_errno("shutdown");
	c->tcp->flush = 1;
}

void tcp_free(struct conn *c)
{
	if (!c->tcp)
		return;
	if (c->tcp->fd >= 0)
		close(c->tcp->fd);
	free(c->tcp);
	c->tcp = NULL;
}

/* Watch for room to write (ON) or not. */
static void tcp_watch_out(struct shard *sh, struct tcp_conn *t, int on)
{
	struct epoll_event ev = { .events = EPOLLIN | (on ? EPOLLOUT : 0), .data.fd = t->fd };

	if (epoll_ctl(sh->epfd, EPOLL_CTL_MOD, t->fd, &ev))
		tcp_log_errno("epoll_ctl (TCP connection)");
	t->wr_blocked = on;
}

/*
 * W bytes of C's queue went into the socket: take off the PDUs that went
 * whole, an R2T to the pull queue, the others to the list *DONE_TAIL.
 */
static void tcp_wrote(struct tcp_conn *t, size_t w, struct op ***done_tail)
{
	struct op *op;

	while ((op = t->out) && w > 0) {
		uint32_t left = op_wire(t, op) - op->tcp_done;

		if (w < left) {
			op->tcp_done += (uint32_t)w;
			break;
		}
		w -= left;
		t->out = op->tcp_next;
		if (!t->out)
			t->out_tail = &t->out;
		op->tcp_next = NULL;
		if (op->tcp_hdr.type == KNET_TCP_R2T) {
			/* Asked: it completes when its DATA came. */
			op->tcp_done = 0;
			*t->pull_tail = op;
			t->pull_tail = &op->tcp_next;
		} else {
			**done_tail = op;
			*done_tail = &op->tcp_next;
		}
	}
}

/*
 * One system call's worth of C's queue into the socket: a writev() of the
 * PDUs queued, up to the first payload in a pipe, which is spliced once
 * its header went. Returns the bytes moved, 0 when the socket is full, -1
 * on an error (C is closed).
 */
static ssize_t tcp_write_once(struct conn *c, struct op ***done_tail)
{
	struct tcp_conn *t = c->tcp;
	struct iovec iov[TCP_IOV_MAX];
	struct op *op = t->out;
	size_t want = 0;
	ssize_t w;
	int n = 0, i;

	if (op->tcp_pipe >= 0 && op->tcp_done >= tcp_hlen(t)) {
		/* Its header went: its payload, from the pipe to the socket. */
		want = op_wire(t, op) - op->tcp_done;
		w = splice(op->tcp_pipe, NULL, t->fd, NULL, want,
			   SPLICE_F_NONBLOCK | (op->tcp_next ? SPLICE_F_MORE : 0));
	} else {
		for (; op && n + 4 <= TCP_IOV_MAX; op = op->tcp_next) {
			n += op_iov(t, op, iov + n);
			if (op->tcp_pipe >= 0)
				break;	/* its payload is spliced next */
		}
		for (i = 0; i < n; i++)
			want += iov[i].iov_len;
		w = writev(t->fd, iov, n);
	}
	if (w < 0) {
		if (errno == EAGAIN || errno == EINTR)
			return 0;
		conn_close(c, "send failed");
		return -1;
	}
	if (w > 0)
		t->moved_us = now_us();
	tcp_wrote(t, (size_t)w, done_tail);
	/* Short: the socket is full. */
	return (size_t)w < want ? 0 : w;
}

/* Write what C has queued, as far as the socket takes it. */
static void tcp_write(struct conn *c)
{
	struct tcp_conn *t = c->tcp;
	struct op *op, *done = NULL, **done_tail = &done;
	ssize_t w = 1;
	int calls;

	/* A few calls a turn: the other connections' turn comes too. */
	for (calls = 0; t->out && calls < 4 && w > 0; calls++)
		w = tcp_write_once(c, &done_tail);
	if (!w)
		tcp_watch_out(c->sh, t, 1);
	while ((op = done)) {
		done = op->tcp_next;
		op->tcp_next = NULL;
		conn_completion(op, op->tcp_len, 0);
	}
}

/* The header of a PDU from C's client is in; 0, or -1 once C is closed. */
static int tcp_pdu(struct conn *c)
{
	struct tcp_conn *t = c->tcp;
	const struct knet_tcp_pdu *p = &t->h.pdu;
	uint32_t len = le32toh(p->length);
	struct op *op = t->pull;
	int i;

	if (p->flags || p->reserved) {
		conn_close(c, "malformed PDU");
		return -1;
	}
	if (p->type == KNET_TCP_MSG) {
		/* A short one is the engine's to answer, as an RDMA SEND is. */
		if (!len || len > SRV_MSG_SIZE) {
			conn_close(c, "message of a size no request has");
			return -1;
		}
		for (i = 0; i < c->ncredits && !t->posted[i]; i++)
			;
		if (i == c->ncredits) {
			conn_close(c, "more requests than its credits");
			return -1;
		}
		t->posted[i] = 0;
		t->msg_slot = i;
		return 0;
	}
	if (p->type == KNET_TCP_DATA) {
		/* Exactly what the oldest R2T asked for, or nothing. */
		if (!op || p->tag != op->tcp_hdr.tag || p->offset != op->tcp_hdr.offset ||
		    p->length != op->tcp_hdr.length) {
			conn_close(c, "data it was not asked for");
			return -1;
		}
		/* Some of its payload came with the header: it all goes to the buffer. */
		if (t->in_off < t->in_have)
			op->tcp_sink = -1;
		return 0;
	}
	conn_close(c, "a PDU a client does not send");
	return -1;
}

/* Where the payload of the PDU being received goes, and its length. */
static char *tcp_dest(struct conn *c, uint32_t *len)
{
	struct tcp_conn *t = c->tcp;

	*len = le32toh(t->h.pdu.length);
	if (t->h.pdu.type == KNET_TCP_MSG)
		return conn_rx_buf(c, t->msg_slot);
	return t->pull->tcp_buf;
}

/* The payload of the PDU being received is whole. */
static void tcp_pdu_done(struct conn *c)
{
	struct tcp_conn *t = c->tcp;
	uint32_t len = le32toh(t->h.pdu.length);
	struct op *op;
	int slot;

	t->hdr_got = 0;
	t->body_got = 0;
	t->dgst_got = 0;
	if (t->h.pdu.type == KNET_TCP_MSG) {
		slot = t->msg_slot;
		t->msg_slot = -1;
		conn_completion(&c->rx[slot], len, 0);
		return;
	}
	op = t->pull;
	t->pull = op->tcp_next;
	if (!t->pull)
		t->pull_tail = &t->pull;
	op->tcp_next = NULL;
	conn_completion(op, len, 0);
}

/*
 * Bytes came for the PDU being received: once its payload and digest are
 * whole, check the digest and end it. 0, or -1 once C is closed.
 */
static int tcp_body_moved(struct conn *c)
{
	struct tcp_conn *t = c->tcp;
	uint32_t len;
	char *dst = tcp_dest(c, &len);

	if (t->body_got < len || t->dgst_got < tcp_dlen(t, len))
		return 0;
	if (tcp_dlen(t, len) && le32toh(t->rx_ddgst) != proto_crc32c(dst, len)) {
		conn_close(c, "data digest mismatch");
		return -1;
	}
	tcp_pdu_done(c);
	return 0;
}

/*
 * The pipe of the DATA being received is full before its payload is all
 * in: a peer's tiny segments each take a slot. What it holds goes to the
 * R2T's buffer, and the rest of the payload follows it there. 0, or -1
 * once C is closed.
 */
static int tcp_unsink(struct conn *c, char *dst)
{
	struct op *op = c->tcp->pull;
	int err = pipe_take(op->tcp_drain, dst, c->tcp->body_got);

	if (err) {
		srv_log("read (a WRITE's pipe): %s", strerror(-err));
		conn_close(c, "internal error");
		return -1;
	}
	op->tcp_sink = -1;
	c->sh->sink_full++;
	return 0;
}

static ssize_t tcp_splice_once(struct tcp_conn *t, size_t want)
{
	return splice(t->fd, NULL, t->pull->tcp_sink, NULL, want,
		      SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
}

/*
 * Up to WANT bytes of the DATA being received into its pipe. As recv():
 * bytes, 0 at the end of the stream, or -1 with errno. splice() says
 * EAGAIN for an empty socket and for a full pipe alike: when the socket
 * turns out to hold bytes, they may have come just after the first try,
 * so a second try tells. EAGAIN again, with bytes that only this thread
 * reads still there, means the pipe is full: its bytes go to the buffer
 * DST (*UNSUNK set; -1 if that failed, C closed).
 */
static ssize_t tcp_splice_in(struct conn *c, char *dst, size_t want, int *unsunk)
{
	struct tcp_conn *t = c->tcp;
	ssize_t n = tcp_splice_once(t, want);
	int have = 0;

	if (n >= 0 || errno != EAGAIN)
		return n;
	if (ioctl(t->fd, FIONREAD, &have) || !have) {
		errno = EAGAIN;
		return -1;
	}
	n = tcp_splice_once(t, want);
	if (n >= 0 || errno != EAGAIN)
		return n;
	*unsunk = 1;
	return tcp_unsink(c, dst);
}

/* Read what C's client sent, up to a budget. */
static void tcp_read(struct conn *c)
{
	struct tcp_conn *t = c->tcp;
	size_t budget = TCP_READ_BUDGET;
	uint32_t hlen = tcp_hlen(t), len, k;
	int drained = 0, sink, unsunk;
	size_t want;
	ssize_t n;
	char *dst;

	while (!c->closing && budget) {
		if (t->in_off == t->in_have) {
			/*
			 * A read got less than it asked for: the socket had no
			 * more, and the level-triggered epoll says when it has.
			 * That saves a recv() failing with EAGAIN a request.
			 */
			if (drained) {
				t->rd_ready = 0;
				return;
			}
			t->in_off = t->in_have = 0;
			/* A large payload: straight into place, or into its pipe. */
			if (t->hdr_got == hlen) {
				dst = tcp_dest(c, &len);
				sink = t->h.pdu.type == KNET_TCP_DATA && t->pull->tcp_sink >= 0;
				if (t->body_got < len && (sink || len - t->body_got >= TCP_DIRECT_MIN)) {
					want = len - t->body_got;
					unsunk = 0;
					n = sink ? tcp_splice_in(c, dst, want, &unsunk) :
						   recv(t->fd, dst + t->body_got, want, MSG_DONTWAIT);
					if (unsunk) {
						if (n < 0)
							return;
						continue;
					}
					if (n > 0) {
						drained = (size_t)n < want;
						t->moved_us = now_us();
						budget -= budget < (size_t)n ? budget : (size_t)n;
						t->body_got += (uint32_t)n;
						if (tcp_body_moved(c))
							return;
						continue;
					}
					goto end;
				}
			}
			/*
			 * A large DATA may come next: its header alone, so
			 * that none of its payload lands here to be copied.
			 */
			want = sizeof(t->in);
			if (t->hdr_got < hlen && t->pull &&
			    le32toh(t->pull->tcp_hdr.length) >= TCP_DIRECT_MIN)
				want = hlen - t->hdr_got;
			n = recv(t->fd, t->in, want, MSG_DONTWAIT);
			if (n <= 0)
				goto end;
			drained = (size_t)n < want;
			t->moved_us = now_us();
			t->in_have = (size_t)n;
			budget -= budget < (size_t)n ? budget : (size_t)n;
		}
		if (t->hdr_got < hlen) {
			k = hlen - t->hdr_got;
			if (k > t->in_have - t->in_off)
				k = (uint32_t)(t->in_have - t->in_off);
			memcpy((char *)&t->h + t->hdr_got, t->in + t->in_off, k);
			t->in_off += k;
			t->hdr_got += k;
			if (t->hdr_got < hlen)
				continue;
			if (t->hdgst &&
			    le32toh(t->h.dgst) != proto_crc32c(&t->h.pdu, sizeof(t->h.pdu))) {
				conn_close(c, "header digest mismatch");
				return;
			}
			if (tcp_pdu(c))
				return;
			continue;
		}
		dst = tcp_dest(c, &len);
		if (t->body_got < len) {
			k = len - t->body_got;
			if (k > t->in_have - t->in_off)
				k = (uint32_t)(t->in_have - t->in_off);
			memcpy(dst + t->body_got, t->in + t->in_off, k);
			t->body_got += k;
		} else {
			k = tcp_dlen(t, len) - t->dgst_got;
			if (k > t->in_have - t->in_off)
				k = (uint32_t)(t->in_have - t->in_off);
			memcpy((char *)&t->rx_ddgst + t->dgst_got, t->in + t->in_off, k);
			t->dgst_got += k;
		}
		t->in_off += k;
		if (tcp_body_moved(c))
			return;
	}
	return;
end:
	if (n == 0) {
		conn_close(c, "disconnected");
	} else if (errno == EAGAIN) {
		t->rd_ready = 0;
	} else if (errno != EINTR) {
		conn_close(c, errno == ECONNRESET ? "connection reset" : "receive failed");
	}
}

/* C is closing: every operation ends as flushed, and the connection can go. */
static void tcp_flush(struct conn *c)
{
	struct tcp_conn *t = c->tcp;
	struct op *op;
	int i;

	t->flush = 0;
	while ((op = t->out)) {
		t->out = op->tcp_next;
		op->tcp_next = NULL;
		conn_completion(op, 0, ECANCELED);
	}
	t->out_tail = &t->out;
	while ((op = t->pull)) {
		t->pull = op->tcp_next;
		op->tcp_next = NULL;
		conn_completion(op, 0, ECANCELED);
	}
	t->pull_tail = &t->pull;
	for (i = 0; i < c->ncredits; i++) {
		if (t->posted[i] || t->msg_slot == i) {
			t->posted[i] = 0;
			conn_completion(&c->rx[i], 0, ECANCELED);
		}
	}
	t->msg_slot = -1;
	c->cm_done = 1;
}

/* Shard SH: is FD one of its TCP sockets? If so, take its EVENTS. */
int tcp_on_fd(struct shard *sh, int fd, uint32_t events)
{
	struct tcp_hs *hs;
	struct conn *c;

	for (hs = sh->tcp_hs; hs; hs = hs->next) {
		if (hs->fd == fd) {
			hs_read(sh, hs);
			return 1;
		}
	}
	for (c = sh->conns; c; c = c->next) {
		if (!c->tcp || c->tcp->fd != fd)
			continue;
		if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
			c->tcp->rd_ready = 1;
		if ((events & EPOLLOUT) && c->tcp->wr_blocked)
			tcp_watch_out(sh, c->tcp, 0);
		return 1;
	}
	return 0;
}

/*
 * Milliseconds until shard SH's next TCP deadline, a handshake's or a
 * stall's, or -1 for none: its loop must not sleep past it.
 */
int tcp_next_ms(const struct shard *sh)
{
	uint64_t now = now_us(), next = UINT64_MAX, stall = tcp_stall_us(sh);
	const struct tcp_hs *hs;
	const struct conn *c;

	for (hs = sh->tcp_hs; hs; hs = hs->next)
		if (hs->deadline < next)
			next = hs->deadline;
	for (c = sh->conns; c; c = c->next)
		if (c->tcp && !c->closing && (c->tcp->out || c->tcp->pull) &&
		    c->tcp->moved_us + stall < next)
			next = c->tcp->moved_us + stall;
	if (next == UINT64_MAX)
		return -1;
	return next <= now ? 0 : (int)((next - now + 999) / 1000);
}

/* Does any TCP connection of SH have work it can do now? */
int tcp_busy(const struct shard *sh)
{
	const struct conn *c;

	for (c = sh->conns; c; c = c->next)
		if (c->tcp && (c->tcp->flush || (c->tcp->rd_ready && !c->closing) ||
			       (c->tcp->out && !c->tcp->wr_blocked)))
			return 1;
	return 0;
}

/*
 * Shard SH's TCP work: handshakes past their time, reads, writes, and the
 * connections closing. Returns 1 if something was done.
 */
int tcp_progress(struct shard *sh)
{
	uint64_t now = 0, stall = tcp_stall_us(sh);
	struct tcp_hs *hs, *hnext;
	struct conn *c, *next;
	int did = 0;

	for (hs = sh->tcp_hs; hs; hs = hnext) {
		hnext = hs->next;
		if (!now)
			now = now_us();
		if (now >= hs->deadline) {
			srv_log("%s: no CONNECT within %d s: closed", hs->peer, TCP_HS_US / 1000000);
			hs_free(sh, hs);
		}
	}
	for (c = sh->conns; c; c = next) {
		struct tcp_conn *t = c->tcp;

		next = c->next;
		if (!t)
			continue;
		conn_get(c);
		if (!c->closing && (t->out || t->pull)) {
			if (!now)
				now = now_us();
			if (now - t->moved_us > stall)
				conn_close(c, "stalled: it takes or sends nothing it was asked to");
		}
		if (t->flush) {
			tcp_flush(c);
			did = 1;
		} else {
			if (t->rd_ready && !c->closing) {
				tcp_read(c);
				did = 1;
			}
			if (t->out && !t->wr_blocked && !c->closing) {
				tcp_write(c);
				did = 1;
			}
		}
		conn_put(c);
	}
	return did;
}

/* Shard SH ends: its handshakes go (its connections go with conn_free()). */
void tcp_shard_close(struct shard *sh)
{
	while (sh->tcp_hs)
		hs_free(sh, sh->tcp_hs);
}

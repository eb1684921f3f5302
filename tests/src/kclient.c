// SPDX-License-Identifier: GPL-2.0-only
/* Userspace client side of the knet protocol, over libfabric or TCP. */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "tests/src/kclient.h"
#include "tests/src/sockio.h"

#define CONNECT_TIMEOUT_MS 10000
/* A TCP PDU the server began must come whole within this (emulated guests are slow). */
#define TCP_IO_TIMEOUT_S 30

int kc_transport_parse(const char *s, enum kc_transport *t)
{
	if (!strcmp(s, "rdma"))
		*t = KC_RDMA;
	else if (!strcmp(s, "tcp"))
		*t = KC_TCP;
	else if (!strcmp(s, "auto"))
		*t = KC_AUTO;
	else
		return fprintf(stderr, "unknown transport '%s' (rdma, tcp or auto)\n", s), -1;
	return 0;
}

int kc_transport_env(enum kc_transport *t)
{
	const char *e = getenv("KNET_TRANSPORT");

	*t = KC_RDMA;
	return e && *e ? kc_transport_parse(e, t) : 0;
}

const char *kc_transport_str(enum kc_transport tr)
{
	return tr == KC_TCP ? "tcp" : tr == KC_RDMA ? "rdma" : "auto";
}

static int rdma_open(struct kc_fabric *f, const char *addr, const char *port, const char *prov,
		     size_t cq_size, int quiet)
{
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_UNSPEC };
	struct fi_cq_attr cq_attr = {
		.format = FI_CQ_FORMAT_DATA, .size = cq_size, .wait_obj = FI_WAIT_UNSPEC,
	};
	struct fi_info *hints = fab_hints(prov, addr);
	int ret;

	if (!hints)
		return -FI_ENOMEM;
	ret = fi_getinfo(FAB_VERSION, addr, port, 0, hints, &f->info);
	fi_freeinfo(hints);
	if (ret)
		return quiet ? ret : fab_err("fi_getinfo", ret);
	if ((ret = fi_fabric(f->info->fabric_attr, &f->fabric, NULL)) ||
	    (ret = fi_eq_open(f->fabric, &eq_attr, &f->eq, NULL)) ||
	    (ret = fi_domain(f->fabric, f->info, &f->domain, NULL)) ||
	    (ret = fi_cq_open(f->domain, &cq_attr, &f->cq, NULL)))
		return fab_err("opening the fabric", ret);
	return 0;
}

/*
 * Does an RDMA device route to ADDR? What the kernel's transport=auto
 * asks: rdma_cm resolves the address and the route (synchronously).
 */
static int rdma_routes(const char *addr, const char *port)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP }, *res = NULL;
	struct rdma_cm_id *id = NULL;
	int ok = 0;

	if (rdma_getaddrinfo(addr, port, &hints, &res))
		return 0;
	if (!rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP)) {
		ok = !rdma_resolve_addr(id, res->ai_src_addr, res->ai_dst_addr, 2000) &&
		     !rdma_resolve_route(id, 2000);
		rdma_destroy_id(id);
	}
	rdma_freeaddrinfo(res);
	return ok;
}

/* The digests $KNET_DIGEST asks for over TCP (none, header, data, both): 0, or -1 (printed). */
static int digest_env(uint16_t *flags)
{
	static const uint16_t fl[] = { 0, KNET_CMF_HDGST, KNET_CMF_DDGST, KNET_CMF_DIGESTS };
	const char *e = getenv("KNET_DIGEST");
	size_t i;

	*flags = 0;
	if (!e || !*e)
		return 0;
	for (i = 0; i < sizeof(fl) / sizeof(fl[0]); i++) {
		if (!strcmp(e, knet_digests_str(fl[i]))) {
			*flags = fl[i];
			return 0;
		}
	}
	fprintf(stderr, "KNET_DIGEST: unknown digests '%s' (none, header, data or both)\n", e);
	return -1;
}

/*
 * $KNET_DRIP=BYTES, for tests: each DATA payload goes out BYTES at a time,
 * a millisecond apart, each piece in its own segment. 0, or -1 (printed).
 */
static int drip_env(uint32_t *bytes)
{
	const char *e = getenv("KNET_DRIP");
	char *end;
	unsigned long v;

	*bytes = 0;
	if (!e || !*e)
		return 0;
	errno = 0;
	v = strtoul(e, &end, 10);
	if (errno || *end || !v || v > UINT32_MAX) {
		fprintf(stderr, "KNET_DRIP: not a positive number of bytes: '%s'\n", e);
		return -1;
	}
	*bytes = (uint32_t)v;
	return 0;
}

int kc_open(struct kc_fabric *f, enum kc_transport tr, const char *addr, const char *port,
	    const char *prov, size_t cq_size)
{
	int ret;

	memset(f, 0, sizeof(*f));
	/* auto: RDMA when an RDMA device routes to ADDR, as the kernel decides. */
	if (tr == KC_AUTO && !rdma_routes(addr, port))
		tr = KC_TCP;
	if (tr != KC_TCP) {
		ret = rdma_open(f, addr, port, prov, cq_size, tr == KC_AUTO);
		if (!ret || tr == KC_RDMA) {
			f->tr = KC_RDMA;
			return ret;
		}
		kc_close(f);
	}
	f->tr = KC_TCP;
	if (digest_env(&f->digests) || drip_env(&f->drip))
		return -FI_EINVAL;
	if (strlen(addr) >= sizeof(f->addr) || strlen(port) >= sizeof(f->port)) {
		fprintf(stderr, "address or port too long\n");
		return -FI_EINVAL;
	}
	strcpy(f->addr, addr);
	strcpy(f->port, port);
	return 0;
}

void kc_close(struct kc_fabric *f)
{
	free(f->ev);
	free(f->conns);
	if (f->cq)
		fi_close(&f->cq->fid);
	if (f->domain)
		fi_close(&f->domain->fid);
	if (f->eq)
		fi_close(&f->eq->fid);
	if (f->fabric)
		fi_close(&f->fabric->fid);
	if (f->info)
		fi_freeinfo(f->info);
	memset(f, 0, sizeof(*f));
}

/* Keep C among F's connections, for kc_wait(). */
static int conn_add(struct kc_fabric *f, struct kc_conn *c)
{
	if (f->nconns == f->conns_cap) {
		size_t cap = f->conns_cap ? 2 * f->conns_cap : 8;
		struct kc_conn **n = realloc(f->conns, cap * sizeof(*n));

		if (!n)
			return fprintf(stderr, "out of memory\n"), -1;
		f->conns = n;
		f->conns_cap = cap;
	}
	f->conns[f->nconns++] = c;
	return 0;
}

static void conn_del(struct kc_fabric *f, struct kc_conn *c)
{
	size_t i;

	for (i = 0; i < f->nconns; i++) {
		if (f->conns[i] == c) {
			f->conns[i] = f->conns[--f->nconns];
			return;
		}
	}
}

int kc_ep_open(struct kc_fabric *f, struct kc_conn *c, void *context, size_t tx, size_t rx)
{
	int ret;

	memset(c, 0, sizeof(*c));
	c->f = f;
	c->context = context;
	c->fd = -1;
	if (conn_add(f, c))
		return -FI_ENOMEM;
	if (f->tr == KC_TCP)
		return 0;
	f->info->tx_attr->size = tx;
	f->info->rx_attr->size = rx;
	f->info->tx_attr->inject_size = 0;	/* no fi_inject() */
	if ((ret = fi_endpoint(f->domain, f->info, &c->ep, context)) ||
	    (ret = fi_ep_bind(c->ep, &f->eq->fid, 0)) ||
	    (ret = fi_ep_bind(c->ep, &f->cq->fid, FI_TRANSMIT | FI_RECV)) ||
	    (ret = fi_enable(c->ep)))
		return fab_err("opening an endpoint", ret);
	return 0;
}

void kc_ep_close(struct kc_conn *c)
{
	if (c->f)
		conn_del(c->f, c);
	c->f = NULL;
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	if (!c->ep)
		return;
	if (!c->shutdown)
		fi_shutdown(c->ep, 0);
	fi_close(&c->ep->fid);
	c->ep = NULL;
}

/* The server's answer to C's connect: 0, or 1 (printed). */
static int take_rep(struct kc_conn *c, const struct knet_cm_rep *rep, uint16_t depth,
		    const struct auth_secret *secret)
{
	c->credits = le16toh(rep->credits);
	c->inline_max = le32toh(rep->inline_max);
	c->max_io = le32toh(rep->max_io);
	c->max_segs = le16toh(rep->max_segs);
	c->auth = !!(le16toh(rep->flags) & KNET_CMF_AUTH);
	if (c->auth != (secret && secret->len)) {
		fprintf(stderr, "connect: the server %s\n", c->auth ?
			"asks for an authentication this client did not offer" :
			"does not authenticate (it may not be the server that holds the secret)");
		return 1;
	}
	if (c->credits < 1 || c->credits > depth) {
		fprintf(stderr, "the server granted %d credits for %u receives\n", c->credits, depth);
		return 1;
	}
	return 0;
}

static int tcp_connect(struct kc_fabric *f, struct kc_conn *c, const struct knet_cm_req *req,
		       uint16_t depth, const struct auth_secret *secret, int quiet);

int kc_connect(struct kc_fabric *f, struct kc_conn *c, int version, int service,
	       const char *name, uint16_t depth, uint32_t inline_max,
	       const struct auth_secret *secret, int quiet)
{
	struct knet_cm_req req;
	union {
		struct fi_eq_cm_entry cm;
		char raw[sizeof(struct fi_eq_cm_entry) + 64];
	} ev;
	struct knet_cm_rep rep;
	uint32_t event;
	ssize_t rd;
	int ret;

	memset(&req, 0, sizeof(req));
	req.version = htole16((uint16_t)version);
	req.service = (uint8_t)service;
	req.name_len = (uint8_t)strlen(name);
	req.recv_depth = htole16(depth);
	req.inline_max = htole32(inline_max);
	req.flags = htole16(secret && secret->len ? KNET_CMF_AUTH : 0);
	memcpy(req.name, name, req.name_len);
	if (f->tr == KC_TCP) {
		req.flags |= htole16(f->digests);
		return tcp_connect(f, c, &req, depth, secret, quiet);
	}
	ret = fi_connect(c->ep, f->info->dest_addr, &req, sizeof(req));
	if (ret)
		return fab_err("fi_connect", ret), 1;

	/* Events of other endpoints (an earlier one closing) are passed over. */
	do {
		rd = fi_eq_sread(f->eq, &event, &ev, sizeof(ev), CONNECT_TIMEOUT_MS, 0);
	} while (rd >= (ssize_t)sizeof(ev.cm) && ev.cm.fid != &c->ep->fid);
	if (rd == -FI_EAVAIL) {
		struct fi_eq_err_entry err;
		struct knet_cm_rej rej;

		memset(&err, 0, sizeof(err));
		if (fi_eq_readerr(f->eq, &err, 0) < 0)
			return 1;
		if (err.fid != &c->ep->fid) {
			fprintf(stderr, "connect: an error event of another endpoint: %s\n",
				fi_strerror(err.err));
			return 1;
		}
		c->shutdown = 1;
		if (err.err == FI_ECONNREFUSED && err.err_data_size >= sizeof(rej)) {
			memcpy(&rej, err.err_data, sizeof(rej));
			if (!quiet)
				printf("rejected: %s (server speaks version %u)\n",
				       proto_reject_str(le16toh(rej.reason)), le16toh(rej.version));
			return 3;
		}
		fprintf(stderr, "connect failed: %s\n", fi_strerror(err.err));
		return err.err == FI_ECONNREFUSED ? 3 : 1;
	}
	if (rd < 0)
		return fab_err("waiting for the connection", (int)rd), 1;
	if (event != FI_CONNECTED || (size_t)rd < sizeof(ev.cm) + sizeof(rep)) {
		fprintf(stderr, "unexpected connection event %u (%zd bytes)\n", event, rd);
		return 1;
	}
	memcpy(&rep, ev.cm.data, sizeof(rep));
	return take_rep(c, &rep, depth, secret);
}

int kc_auth(const struct auth_secret *k, int service, const char *name, kc_auth_call call,
	    void *ctx)
{
	struct knet_auth_req a;
	struct knet_auth_rep rep;
	uint8_t nc[KNET_AUTH_NONCE], mac[KNET_AUTH_MAC];
	uint32_t len = 0;
	int st;

	memset(&a, 0, sizeof(a));
	a.step = 1;
	if (auth_nonce(nc))
		return fprintf(stderr, "authentication: getrandom: %s\n", strerror(errno)), -1;
	memcpy(a.data, nc, sizeof(nc));
	st = call(ctx, &a, sizeof(a), &rep, &len);
	if (st)
		goto refused;
	if (len != sizeof(rep))
		return fprintf(stderr, "authentication: a step 1 answer of %u bytes\n", len), EACCES;
	/* The server first proves it holds the secret. */
	if (auth_mac(k, 1, nc, rep.nonce, (uint8_t)service, name, mac) ||
	    !auth_mac_equal(mac, rep.mac)) {
		fprintf(stderr, "authentication: the server's proof is wrong: it does not hold the secret\n");
		return EACCES;
	}
	a.step = 2;
	if (auth_mac(k, 0, nc, rep.nonce, (uint8_t)service, name, a.data))
		return fprintf(stderr, "authentication: no HMAC\n"), -1;
	st = call(ctx, &a, sizeof(a), &rep, &len);
	if (!st)
		return 0;
refused:
	if (st > 0)
		fprintf(stderr, "authentication refused by the server: %s\n", strerror(st));
	return st;
}

int kc_load_secret(const char *file, struct auth_secret *k)
{
	char err[512];

	memset(k, 0, sizeof(*k));
	if (!file)
		return 0;
	if (auth_load_secret(file, k, err, sizeof(err)))
		return fprintf(stderr, "%s\n", err), -1;
	return 0;
}

/* The endpoint whose connection just went, or NULL: one event a call. */
static struct fid *peer_gone(struct kc_fabric *f)
{
	struct fi_eq_cm_entry ev;
	uint32_t event;
	ssize_t rd = fi_eq_read(f->eq, &event, &ev, sizeof(ev), 0);

	if (rd == -FI_EAVAIL) {
		struct fi_eq_err_entry err;

		memset(&err, 0, sizeof(err));
		if (fi_eq_readerr(f->eq, &err, 0) < 0)
			return NULL;
		return err.fid;
	}
	return rd >= (ssize_t)sizeof(ev) && event == FI_SHUTDOWN ? ev.fid : NULL;
}

/* ---- memory and operations ------------------------------------------- */

int kc_mr_reg(struct kc_fabric *f, struct kc_mr *m, void *buf, size_t len, int remote)
{
	int ret;

	memset(m, 0, sizeof(*m));
	m->base = buf;
	m->len = len;
	if (f->tr == KC_TCP)
		return 0;
	ret = fi_mr_reg(f->domain, buf, len,
			FI_SEND | FI_RECV | (remote ? FI_REMOTE_READ | FI_REMOTE_WRITE : 0),
			0, 0, 0, &m->mr, NULL);
	return ret ? fab_err("fi_mr_reg", ret) : 0;
}

void kc_mr_close(struct kc_mr *m)
{
	if (m->mr)
		fi_close(&m->mr->fid);
	m->mr = NULL;
}

struct knet_seg kc_seg(const struct kc_conn *c, const struct kc_mr *m, const void *data,
		       const void *piece, uint32_t len)
{
	struct knet_seg sg = { .len = htole32(len) };

	if (c->f->tr == KC_TCP) {
		sg.addr = htole64((uint64_t)((const char *)piece - (const char *)data));
	} else {
		sg.addr = htole64((uint64_t)(uintptr_t)piece);
		sg.rkey = htole32((uint32_t)fi_mr_key(m->mr));
	}
	return sg;
}

int kc_lend(struct kc_conn *c, uint32_t tag, void *data, uint32_t len, int to_server)
{
	int i;

	if (c->f->tr != KC_TCP)
		return 0;
	for (i = 0; i < c->nlent && c->lent[i].tag != tag; i++)
		;
	if (i == KC_TCP_LENT) {
		fprintf(stderr, "kclient: more than %d requests with data lent\n", KC_TCP_LENT);
		return -1;
	}
	if (i == c->nlent)
		c->nlent++;
	c->lent[i] = (struct kc_lent){ .tag = tag, .to_server = to_server, .buf = data, .len = len };
	return 0;
}

static void unlend(struct kc_conn *c, uint32_t tag)
{
	int i;

	for (i = 0; i < c->nlent; i++) {
		if (c->lent[i].tag == tag) {
			c->lent[i] = c->lent[--c->nlent];
			return;
		}
	}
}

static int ev_push(struct kc_fabric *f, void *ctx, struct kc_conn *c, size_t len, int err)
{
	if (f->nev == f->ev_cap) {
		size_t cap = f->ev_cap ? 2 * f->ev_cap : 64;
		struct kc_event *n = realloc(f->ev, cap * sizeof(*n));

		if (!n)
			return fprintf(stderr, "out of memory\n"), -1;
		f->ev = n;
		f->ev_cap = cap;
	}
	f->ev[f->nev++] = (struct kc_event){ .ctx = ctx, .conn = c, .len = len, .err = err };
	return 0;
}

/* C's TCP connection went (WHY, NULL when the server closed it): one event says so. */
static void tcp_gone(struct kc_conn *c, const char *why)
{
	if (c->shutdown)
		return;
	if (why)
		fprintf(stderr, "kclient: TCP connection: %s\n", why);
	c->shutdown = 1;
	c->nposted = 0;
	c->nlent = 0;
	ev_push(c->f, NULL, c, 0, FI_ENOTCONN);
}

/* Write all of the CNT iovecs at IOV0 (4 at most): 0, or -1 with errno set. */
static int write_full(int fd, const struct iovec *iov0, int cnt)
{
	struct iovec iov[4];
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = (size_t)cnt };
	ssize_t w;

	memcpy(iov, iov0, (size_t)cnt * sizeof(*iov));
	while (msg.msg_iovlen) {
		w = sendmsg(fd, &msg, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		while (msg.msg_iovlen && (size_t)w >= msg.msg_iov->iov_len) {
			w -= (ssize_t)msg.msg_iov->iov_len;
			msg.msg_iov++;
			msg.msg_iovlen--;
		}
		if (msg.msg_iovlen) {
			msg.msg_iov->iov_base = (char *)msg.msg_iov->iov_base + w;
			msg.msg_iov->iov_len -= (size_t)w;
		}
	}
	return 0;
}

/* The header (N iovecs of HDR), then BUF's LEN bytes in pieces of $KNET_DRIP, then DD. */
static int drip_send(struct kc_conn *c, struct iovec *hdr, int n, const char *buf, uint32_t len,
		     const uint32_t *dd)
{
	const struct timespec ms = { 0, 1000000 };
	struct iovec v;
	uint32_t k;

	if (write_full(c->fd, hdr, n))
		return -1;
	while (len) {
		k = len < c->f->drip ? len : c->f->drip;
		v = (struct iovec){ (void *)buf, k };
		if (write_full(c->fd, &v, 1))
			return -1;
		buf += k;
		len -= k;
		nanosleep(&ms, NULL);
	}
	v = (struct iovec){ (void *)dd, sizeof(*dd) };
	return dd ? write_full(c->fd, &v, 1) : 0;
}

static int tcp_pdu_send(struct kc_conn *c, uint8_t type, uint32_t tag, uint32_t off,
			const void *buf, uint32_t len)
{
	struct knet_tcp_pdu p = {
		.type = type, .length = htole32(len), .tag = htole32(tag), .offset = htole32(off),
	};
	uint32_t hd = 0, dd = 0;
	struct iovec iov[4];
	int n = 0;

	/* With the digests granted: a CRC32C after the header and after the payload. */
	iov[n++] = (struct iovec){ &p, sizeof(p) };
	if (c->hdgst) {
		hd = htole32(proto_crc32c(&p, sizeof(p)));
		iov[n++] = (struct iovec){ &hd, sizeof(hd) };
	}
	if (len && c->ddgst)
		dd = htole32(proto_crc32c(buf, len));
	if (type == KNET_TCP_DATA && c->f->drip && len > c->f->drip)
		return drip_send(c, iov, n, buf, len, c->ddgst ? &dd : NULL);
	if (len)
		iov[n++] = (struct iovec){ (void *)buf, len };
	if (len && c->ddgst)
		iov[n++] = (struct iovec){ &dd, sizeof(dd) };
	return write_full(c->fd, iov, n);
}

/*
 * Read and check the digest after LEN bytes at P on C's stream, if C has
 * that digest (HEADER: a header's, else a payload's). Returns 1 when it
 * matches or there is none, -2 when it does not (C is cut off), else
 * what sock_read_full() returned.
 */
static int digest_check(struct kc_conn *c, int header, const void *p, uint32_t len)
{
	uint32_t d;
	int r;

	if (header ? !c->hdgst : !c->ddgst || !len)
		return 1;
	r = sock_read_full(c->fd, &d, sizeof(d));
	if (r <= 0)
		return r;
	if (le32toh(d) == proto_crc32c(p, len))
		return 1;
	tcp_gone(c, header ? "header digest mismatch" : "data digest mismatch");
	return -2;
}

int kc_recv(struct kc_conn *c, struct kc_mr *m, void *buf, size_t len, void *ctx)
{
	ssize_t ret;

	if (c->f->tr == KC_TCP) {
		if (c->nposted == KC_TCP_POSTS) {
			fprintf(stderr, "kclient: more than %d receives posted\n", KC_TCP_POSTS);
			return -1;
		}
		if (!c->shutdown)
			c->posted[c->nposted++] = (struct kc_post){ buf, len, ctx };
		return 0;
	}
	ret = fi_recv(c->ep, buf, len, fi_mr_desc(m->mr), 0, ctx);
	return ret ? (fab_err("fi_recv", (int)ret), -1) : 0;
}

int kc_send(struct kc_conn *c, struct kc_mr *m, const void *buf, size_t len, void *ctx)
{
	ssize_t ret;

	if (c->f->tr == KC_TCP) {
		if (len > KNET_TCP_MSG_MAX) {
			fprintf(stderr, "kclient: a message of %zu bytes\n", len);
			return -1;
		}
		/* As on RDMA, a send on a link that went ends with an error. */
		if (c->shutdown || tcp_pdu_send(c, KNET_TCP_MSG, 0, 0, buf, (uint32_t)len)) {
			if (!c->shutdown)
				tcp_gone(c, strerror(errno));
			return ev_push(c->f, ctx, c, 0, FI_ECANCELED);
		}
		return ev_push(c->f, ctx, c, len, 0);
	}
	ret = fi_send(c->ep, buf, len, fi_mr_desc(m->mr), 0, ctx);
	return ret ? (fab_err("fi_send", (int)ret), -1) : 0;
}

/* ---- TCP --------------------------------------------------------------- */

static struct kc_lent *lent_of(struct kc_conn *c, uint32_t tag, int to_server, uint32_t off,
			       uint32_t len)
{
	int i;

	for (i = 0; i < c->nlent; i++) {
		struct kc_lent *l = &c->lent[i];

		if (l->tag == tag && l->to_server == to_server && off <= l->len &&
		    len <= l->len - off)
			return l;
	}
	return NULL;
}

/* One PDU from C's server, which has begun to send it. */
static void tcp_pdu(struct kc_conn *c)
{
	struct knet_tcp_pdu p;
	uint32_t len, tag, off;
	struct kc_lent *l;
	struct kc_post m;
	struct knet_hdr h;
	char why[128];
	int r;

	r = sock_read_full(c->fd, &p, sizeof(p));
	if (r > 0)
		r = digest_check(c, 1, &p, sizeof(p));
	if (r == -2)
		return;
	if (r <= 0)
		goto cut;
	len = le32toh(p.length);
	tag = le32toh(p.tag);
	off = le32toh(p.offset);
	if (p.flags || p.reserved) {
		tcp_gone(c, "the server sent a PDU with flags set");
		return;
	}
	switch (p.type) {
	case KNET_TCP_MSG:
		if (!c->nposted || len > c->posted[0].len) {
			snprintf(why, sizeof(why), "the server sent a message of %u bytes %s", len,
				 c->nposted ? "larger than the receive" : "with no receive posted");
			tcp_gone(c, why);
			return;
		}
		m = c->posted[0];
		r = sock_read_full(c->fd, m.buf, len);
		if (r > 0)
			r = digest_check(c, 0, m.buf, len);
		if (r == -2)
			return;
		if (r <= 0)
			goto cut;
		memmove(c->posted, c->posted + 1, (size_t)--c->nposted * sizeof(*c->posted));
		/* A reply ends what its request lent. */
		if (len >= sizeof(h)) {
			memcpy(&h, m.buf, sizeof(h));
			if (h.flags & KNET_HF_REPLY)
				unlend(c, le32toh(h.tag));
		}
		ev_push(c->f, m.ctx, c, len, 0);
		return;
	case KNET_TCP_R2T:
		l = lent_of(c, tag, 1, off, len);
		if (!l)
			break;
		if (tcp_pdu_send(c, KNET_TCP_DATA, tag, off, l->buf + off, len))
			goto cut;
		return;
	case KNET_TCP_DATA:
		l = lent_of(c, tag, 0, off, len);
		if (!l)
			break;
		r = sock_read_full(c->fd, l->buf + off, len);
		if (r > 0)
			r = digest_check(c, 0, l->buf + off, len);
		if (r <= 0 && r != -2)
			goto cut;
		return;
	default:
		snprintf(why, sizeof(why), "the server sent a PDU of type %u", p.type);
		tcp_gone(c, why);
		return;
	}
	snprintf(why, sizeof(why), "the server asked for or sent %u bytes at %u of request %u, "
		 "which did not offer them", len, off, tag);
	tcp_gone(c, why);
	return;
cut:
	if (r == 0)
		tcp_gone(c, NULL);
	else
		tcp_gone(c, errno == EAGAIN ? "a PDU did not come whole in time" : strerror(errno));
}

static int tcp_wait(struct kc_fabric *f, int timeout_ms)
{
	struct pollfd pfd[64];
	struct kc_conn *pc[64];
	struct timespec t0, t;
	size_t i, base;
	int n, k, left = timeout_ms;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!f->nev) {
		/* Up to 64 connections a turn, from a rotating start. */
		n = 0;
		base = f->nconns ? (size_t)t0.tv_nsec % f->nconns : 0;
		for (i = 0; i < f->nconns && n < 64; i++) {
			struct kc_conn *c = f->conns[(base + i) % f->nconns];

			if (c->fd >= 0 && !c->shutdown) {
				pfd[n] = (struct pollfd){ .fd = c->fd, .events = POLLIN };
				pc[n++] = c;
			}
		}
		k = poll(pfd, (nfds_t)n, left);
		if (k < 0 && errno != EINTR) {
			perror("kclient: poll");
			return -1;
		}
		for (i = 0; k > 0 && i < (size_t)n; i++)
			if (pfd[i].revents)
				tcp_pdu(pc[i]);
		clock_gettime(CLOCK_MONOTONIC, &t);
		left = timeout_ms - (int)((t.tv_sec - t0.tv_sec) * 1000 +
					 (t.tv_nsec - t0.tv_nsec) / 1000000);
		if (left <= 0)
			break;
	}
	return 0;
}

int kc_wait(struct kc_fabric *f, struct kc_event *ev, int max, int timeout_ms)
{
	struct fi_cq_data_entry e[16];
	ssize_t n, k;
	size_t i;

	if (f->tr == KC_TCP) {
		if (!f->nev && tcp_wait(f, timeout_ms))
			return -1;
		for (k = 0; k < max && (size_t)k < f->nev; k++)
			ev[k] = f->ev[k];
		memmove(f->ev, f->ev + k, (f->nev - (size_t)k) * sizeof(*f->ev));
		f->nev -= (size_t)k;
		return (int)k;
	}
	n = fi_cq_sread(f->cq, e, max < 16 ? (size_t)max : 16, NULL, timeout_ms);
	if (n == -FI_EAGAIN) {
		/* A disconnect shows on the event queue, not the CQ. */
		struct fid *gone = peer_gone(f);

		for (i = 0; gone && i < f->nconns; i++) {
			if (f->conns[i]->ep && &f->conns[i]->ep->fid == gone) {
				f->conns[i]->shutdown = 1;
				ev[0] = (struct kc_event){ .conn = f->conns[i], .err = FI_ENOTCONN };
				return 1;
			}
		}
		return 0;
	}
	if (n == -FI_EAVAIL) {
		struct fi_cq_err_entry err;

		memset(&err, 0, sizeof(err));
		if (fi_cq_readerr(f->cq, &err, 0) < 0)
			return fab_err("fi_cq_readerr", -FI_EIO), -1;
		ev[0] = (struct kc_event){ .ctx = err.op_context, .err = err.err ? err.err : FI_EIO };
		return 1;
	}
	if (n < 0)
		return fab_err("fi_cq_sread", (int)n), -1;
	for (k = 0; k < n; k++)
		ev[k] = (struct kc_event){ .ctx = e[k].op_context, .len = e[k].len };
	return (int)n;
}

static int tcp_connect(struct kc_fabric *f, struct kc_conn *c, const struct knet_cm_req *req,
		       uint16_t depth, const struct auth_secret *secret, int quiet)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	struct timeval tv = { .tv_sec = CONNECT_TIMEOUT_MS / 1000 };
	struct addrinfo *ai, *a;
	struct knet_tcp_pdu p;
	struct knet_cm_rep rep;
	struct knet_cm_rej rej;
	int one = 1, ret, fd = -1, err = EHOSTUNREACH;

	ret = getaddrinfo(f->addr, f->port, &hints, &ai);
	if (ret) {
		fprintf(stderr, "%s: %s\n", f->addr, gai_strerror(ret));
		return 1;
	}
	for (a = ai; a; a = a->ai_next) {
		fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
		if (fd < 0)
			continue;
		/* The timeouts bound the connect and the handshake too. */
		if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) ||
		    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
		    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) ||
		    connect(fd, a->ai_addr, a->ai_addrlen) == 0)
			break;
		err = errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(ai);
	if (fd < 0) {
		fprintf(stderr, "connect to %s port %s over TCP: %s\n", f->addr, f->port,
			strerror(err));
		return 1;
	}
	c->fd = fd;
	errno = 0;
	if (tcp_pdu_send(c, KNET_TCP_CONNECT, 0, 0, req, sizeof(*req)) ||
	    sock_read_full(fd, &p, sizeof(p)) <= 0) {
		fprintf(stderr, "TCP handshake: %s\n", errno ? strerror(errno) : "closed");
		return 1;
	}
	if (p.type == KNET_TCP_REJECT && le32toh(p.length) == sizeof(rej) &&
	    sock_read_full(fd, &rej, sizeof(rej)) > 0) {
		c->shutdown = 1;
		if (!quiet)
			printf("rejected: %s (server speaks version %u)\n",
			       proto_reject_str(le16toh(rej.reason)), le16toh(rej.version));
		return 3;
	}
	if (p.type != KNET_TCP_ACCEPT || le32toh(p.length) != sizeof(rep) ||
	    sock_read_full(fd, &rep, sizeof(rep)) <= 0) {
		fprintf(stderr, "TCP handshake: an answer of type %u and %u bytes\n", p.type,
			le32toh(p.length));
		return 1;
	}
	/* Exactly the digests asked for, or none of this connection. */
	if ((le16toh(rep.flags) & KNET_CMF_DIGESTS) != f->digests) {
		fprintf(stderr, "TCP handshake: the server grants digests %s, not %s\n",
			knet_digests_str(le16toh(rep.flags)), knet_digests_str(f->digests));
		return 1;
	}
	c->hdgst = !!(f->digests & KNET_CMF_HDGST);
	c->ddgst = !!(f->digests & KNET_CMF_DDGST);
	tv.tv_sec = TCP_IO_TIMEOUT_S;
	if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv))) {
		perror("setsockopt");
		return 1;
	}
	return take_rep(c, &rep, depth, secret);
}

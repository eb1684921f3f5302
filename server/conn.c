// SPDX-License-Identifier: GPL-2.0-only
/*
 * orfs-server: connections. Their buffers, references and end; a
 * connection request checked (allow list, authentication, export, the
 * host's share) and accepted or refused; the CM events of a shard's
 * connections; idle connections closed and allow lists applied again.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <rdma/rdma_cma.h>

#include "server/siphash.h"
#include "server/srv.h"

char *conn_rx_buf(struct conn *c, int i)
{
	return c->buf + (size_t)i * SRV_MSG_SIZE;
}

char *conn_tx_buf(struct conn *c, int i)
{
	return c->buf + (size_t)c->ncredits * SRV_MSG_SIZE + (size_t)i * SRV_TX_SIZE;
}

static size_t conn_buf_size(const struct conn *c)
{
	return (size_t)c->ncredits * SRV_MSG_SIZE + (size_t)c->ntx * SRV_TX_SIZE;
}

int conn_post_recv(struct conn *c, int i)
{
	ssize_t ret;

	if (c->tcp)
		return tcp_post_recv(c, i);
	ret = fi_recv(c->ep, conn_rx_buf(c, i), SRV_MSG_SIZE, fi_mr_desc(c->mr), 0,
			      &c->rx[i].ctx);

	if (ret)
		return fab_err("fi_recv", (int)ret);
	c->pending++;
	return 0;
}

void conn_free(struct conn *c)
{
	struct shard *sh = c->sh;
	struct conn **pp;

	for (pp = &sh->conns; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			sh->nconns--;
			c->s->nconns--;
			break;
		}
	}
	tcp_free(c);
	if (c->ep)
		fi_close(&c->ep->fid);
	if (c->mr)
		fi_close(&c->mr->fid);
	sh->credits_used -= c->ncredits;
	if (c->client_id)
		locks_detach(&c->s->locks, c->client_id, (time_t)(now_us() / 1000000));
	pthread_mutex_lock(&c->s->lock);
	peer_conn_put(c->s, &c->ip);
	export_put(c->s, c->ex);
	pthread_mutex_unlock(&c->s->lock);
	free(c->buf);
	free(c->req);
	explicit_bzero(&c->auth, sizeof(c->auth));
	free(c);
}

void conn_maybe_free(struct conn *c)
{
	if (c->closing && !c->busy && !c->pending && c->cm_done && !c->active)
		conn_free(c);
}

void conn_get(struct conn *c)
{
	c->busy++;
}

void conn_put(struct conn *c)
{
	c->busy--;
	conn_maybe_free(c);
}

/*
 * Disconnect closing C, once. Until the CM has the connection established
 * (a client may send before the server has seen that), a disconnect would
 * not reach the client, as the CM sends no DREQ then: on_connected() or
 * cm_done(), whichever comes, calls this again.
 */
static void conn_shutdown(struct conn *c)
{
	if (!c->closing || c->shut || !(c->connected || c->cm_done))
		return;
	c->shut = 1;
	if (c->tcp)
		tcp_shutdown(c);
	else
		fi_shutdown(c->ep, 0);
}

/*
 * Start closing: the provider flushes every posted operation into the CQ
 * and the CM reports a last event (FI_SHUTDOWN or an error); running
 * requests finish without replies. The connection goes when all is back.
 */
void conn_close(struct conn *c, const char *why)
{
	if (c->closing)
		return;
	srv_log("%s: %s (%llu requests, %llu malformed, %llu bytes in, %llu out)", c->peer, why,
		(unsigned long long)c->st.requests, (unsigned long long)c->st.malformed,
		(unsigned long long)c->bytes_in, (unsigned long long)c->bytes_out);
	c->closing = 1;
	conn_get(c);
	conn_shutdown(c);
	eng_conn_closing(c);
	conn_put(c);
}

/* Reject the connection request INFO that came on passive endpoint PEP. */
void reject(fid_t pep, struct fi_info *info, int reason, const char *what)
{
	struct knet_cm_rej rej = {
		.version = htole16(KNET_PROTO_VERSION),
		.reason = htole16((uint16_t)reason),
	};
	int ret;

	srv_log("rejecting a connection: %s%s", proto_reject_str(reason), what ? what : "");
	/* A passive endpoint's fid is its first member. */
	ret = fi_reject((struct fid_pep *)pep, info->handle, &rej, sizeof(rej));
	if (ret)
		fab_err("fi_reject", ret);
}

/* A connection of shard SH to EX, whose reference the caller passes on. */
static struct conn *conn_alloc(struct shard *sh, struct export *ex, const struct conn_params *p)
{
	struct conn *c = calloc(1, sizeof(*c));
	int i;

	if (!c)
		return NULL;
	c->ncredits = credits_for(sh->rx_budget, sh->credits_used, sh->nconns, SRV_CREDITS,
				  SRV_MIN_CREDITS, p->recv_depth);
	c->ntx = c->ncredits + 2;
	c->buf = malloc(conn_buf_size(c));
	c->req = calloc((size_t)c->ncredits, sizeof(*c->req));
	if (!c->buf || !c->req) {
		free(c->buf);
		free(c->req);
		free(c);
		return NULL;
	}
	sh->credits_used += c->ncredits;
	c->s = sh->s;
	c->sh = sh;
	c->ex = ex;
	c->p = *p;
	c->inline_max = p->inline_max < SRV_INLINE_MAX ? p->inline_max : SRV_INLINE_MAX;
	c->sq_free = SRV_RDMA_SQ;
	c->tx_wait_tail = &c->tx_wait;
	c->rdma_wait_tail = &c->rdma_wait;
	fq_flow_init(&c->flow, ex->cfg.class);
	snprintf(c->peer, sizeof(c->peer), "client of '%s'", p->name);
	for (i = 0; i < c->ncredits; i++)
		c->rx[i] = (struct op){ .kind = OP_RECV, .idx = i, .owner = c };
	for (i = 0; i < c->ntx; i++)
		c->tx[i] = (struct op){ .kind = OP_SEND, .idx = i, .owner = c };
	return c;
}

/*
 * Shard SH: may the host at IP have a connection with connect data DATA
 * (LEN bytes)? The connection, counted and allocated but not in the
 * shard's list, or NULL with *REASON (enum knet_cm_reject) and DETAIL
 * (what to log) set.
 */
struct conn *conn_admit(struct shard *sh, const struct cfg_addr *ip, const void *data, size_t len,
			int *reason, char *detail, size_t dlen)
{
	struct srv *s = sh->s;
	struct conn_params p;
	struct export *ex;
	struct conn *c = NULL;
	const struct auth_secret *sec;
	struct auth_secret secret = { .len = 0 };
	char host[INET6_ADDRSTRLEN];
	int allowed, reserved, i;

	detail[0] = '\0';
	/* Not known (no address, another family): only where all may come. */
	pthread_mutex_lock(&s->lock);
	allowed = config_allowed(&s->cfg, ip);
	pthread_mutex_unlock(&s->lock);
	if (!allowed) {
		snprintf(detail, dlen, " (%s)", config_addr_str(ip, host, sizeof(host)));
		*reason = KNET_REJ_ACCESS;
		return NULL;
	}
	*reason = proto_parse_cm_req(data, len, &p);
	if (*reason)
		return NULL;
	/* Both sides hold the client's secret, or neither does. */
	pthread_mutex_lock(&s->lock);
	sec = config_secret_for(&s->cfg, ip);
	if (sec)
		secret = *sec;
	pthread_mutex_unlock(&s->lock);
	if (!secret.len != !(p.flags & KNET_CMF_AUTH)) {
		snprintf(detail, dlen, " (%s: %s)", config_addr_str(ip, host, sizeof(host)),
			 secret.len ? "it has no secret, and this server needs one" :
				      "it has a secret, and this server none for it");
		explicit_bzero(&secret, sizeof(secret));
		*reason = KNET_REJ_AUTH;
		return NULL;
	}
	ex = export_get(s, p.name, p.service);
	if (!ex) {
		snprintf(detail, dlen, " ('%s', service %u)", p.name, p.service);
		*reason = KNET_REJ_NOENT;
		goto out;
	}
	pthread_mutex_lock(&s->lock);
	allowed = config_export_allowed(&ex->cfg, ip);
	if (!allowed)
		export_put(s, ex);
	pthread_mutex_unlock(&s->lock);
	if (!allowed) {
		snprintf(detail, dlen, " (%s, to '%s')", config_addr_str(ip, host, sizeof(host)),
			 p.name);
		*reason = KNET_REJ_ACCESS;
		goto out;
	}
	/* One host's share first: no host takes every place. */
	pthread_mutex_lock(&s->lock);
	i = peer_conn_get(s, ip);
	if (i)
		export_put(s, ex);
	pthread_mutex_unlock(&s->lock);
	if (i) {
		snprintf(detail, dlen, " (%s has %d connections, the most one host may have)",
			 config_addr_str(ip, host, sizeof(host)), i);
		*reason = KNET_REJ_BUSY;
		goto out;
	}
	/* A place among the SRV_MAX_CONNS, taken at once: other shards accept too. */
	reserved = !sh->stopping && !sh->retiring;
	if (reserved && atomic_fetch_add(&s->nconns, 1) < SRV_MAX_CONNS) {
		c = conn_alloc(sh, ex, &p);
		if (!c)
			srv_log("out of memory for a connection");
	}
	if (!c) {
		if (reserved)
			s->nconns--;
		pthread_mutex_lock(&s->lock);
		peer_conn_put(s, ip);
		export_put(s, ex);
		pthread_mutex_unlock(&s->lock);
		*reason = KNET_REJ_BUSY;
		goto out;
	}
	c->ip = *ip;	/* its host's count goes with it (conn_free()) */
	c->auth = secret;
	c->authed = !secret.len;
	/* Keyed, so that no host can pick an address that shares another's quotas. */
	c->peer_key = siphash24(s->key, ip->b, sizeof(ip->b));
out:
	explicit_bzero(&secret, sizeof(secret));
	return c;
}

/* What the server grants C, for its accept. */
void conn_rep(const struct conn *c, struct knet_cm_rep *rep)
{
	memset(rep, 0, sizeof(*rep));
	rep->version = htole16(KNET_PROTO_VERSION);
	rep->credits = htole16((uint16_t)c->ncredits);
	rep->inline_max = htole32(c->inline_max);
	rep->max_io = htole32(SRV_MAX_IO);
	rep->max_segs = htole16(KNET_MAX_SEGS);
	rep->flags = htole16(c->authed ? 0 : KNET_CMF_AUTH);
}

/* A connection request the main thread handed to shard SH. */
void on_connreq(struct shard *sh, struct fi_eq_cm_entry *e, size_t datalen)
{
	struct srv *s = sh->s;
	struct knet_cm_rep rep;
	struct conn *c;
	struct cfg_addr ip;
	char detail[128];
	int reason, i, ret;

	config_addr_from_sa(e->info->dest_addr, e->info->dest_addrlen, &ip);
	c = conn_admit(sh, &ip, e->data, datalen, &reason, detail, sizeof(detail));
	if (!c) {
		reject(e->fid, e->info, reason, detail[0] ? detail : NULL);
		goto out;
	}

	e->info->tx_attr->size = (size_t)c->ntx + SRV_RDMA_SQ;
	e->info->rx_attr->size = (size_t)c->ncredits;
	/* No fi_inject(): no inline room in every send queue entry. */
	e->info->tx_attr->inject_size = 0;
	ret = fi_endpoint(s->dev[sh->dev].domain, e->info, &c->ep, c);
	if (!ret)
		ret = fi_ep_bind(c->ep, &sh->eq->fid, 0);
	if (!ret)
		ret = fi_ep_bind(c->ep, &sh->txcq->fid, FI_TRANSMIT);
	if (!ret)
		ret = fi_ep_bind(c->ep, &sh->rxcq->fid, FI_RECV);
	if (!ret)
		ret = fi_enable(c->ep);
	if (!ret)
		ret = fi_mr_reg(s->dev[sh->dev].domain, c->buf, conn_buf_size(c), FI_SEND | FI_RECV,
				0, 0, 0, &c->mr, NULL);
	for (i = 0; !ret && i < c->ncredits; i++)
		ret = conn_post_recv(c, i);
	if (ret) {
		fab_err("setting up a connection", ret);
		goto fail;
	}

	conn_rep(c, &rep);
	ret = fi_accept(c->ep, &rep, sizeof(rep));
	if (ret) {
		fab_err("fi_accept", ret);
		goto fail;
	}
	c->next = sh->conns;
	sh->conns = c;
	sh->nconns++;
	goto out;

fail:
	reject(e->fid, e->info, KNET_REJ_BUSY, NULL);
	/* Never connected: the queue pair goes with its unflushed receives. */
	conn_free(c);
	s->nconns--;
out:
	fi_freeinfo(e->info);
}

static void on_connected(struct conn *c)
{
	struct sockaddr_storage ss;
	size_t len = sizeof(ss);
	struct cfg_addr a = { 0 };
	char host[INET6_ADDRSTRLEN];

	c->connected = 1;
	c->since_us = now_us();
	c->idle_since_us = c->since_us;
	conn_shutdown(c);	/* if it closed before the CM said it was connected */
	if (!fi_getpeer(c->ep, &ss, &len))
		config_addr_from_sa(&ss, len, &a);
	snprintf(c->peer, sizeof(c->peer), "%s", config_addr_str(&a, host, sizeof(host)));
	srv_log("%s connected to %s '%s' (credits %d, progress thread %d on %s)", c->peer,
		c->p.service == KNET_SVC_FILE ? "export" : "volume", c->p.name, c->ncredits,
		c->sh->id, c->s->dev[c->sh->dev].info->domain_attr->name);
}

static void cm_done(struct conn *c, const char *why)
{
	conn_get(c);
	c->cm_done = 1;
	conn_close(c, why);
	conn_shutdown(c);	/* flushes it if it closed before it was connected */
	conn_put(c);
}

/* The events of shard SH's connections. */
void handle_eq(struct shard *sh)
{
	union cm_event ev;
	uint32_t event;
	ssize_t rd;

	for (;;) {
		rd = fi_eq_read(sh->eq, &event, &ev, sizeof(ev), 0);
		if (rd == -FI_EAGAIN)
			return;
		if (rd == -FI_EAVAIL) {
			struct fi_eq_err_entry err;

			fab_eq_err(sh->eq, "connection event error", &err);
			if (err.fid)
				cm_done(err.fid->context, "connection error");
			continue;
		}
		if (rd < 0) {
			fab_err("fi_eq_read", (int)rd);
			sh->failed = 1;
			return;
		}
		switch (event) {
		case FI_CONNECTED:
			on_connected(ev.cm.fid->context);
			break;
		case FI_SHUTDOWN:
			cm_done(ev.cm.fid->context, "disconnected");
			break;
		default:
			srv_log("unexpected connection event %u", event);
		}
	}
}

/*
 * Shard SH: a reload changed the server's allow list or an export's, or
 * removed or changed an export. Its connections from addresses no longer
 * allowed, and to exports no longer served as they were (gone, made
 * read-only or squashed, re-pointed), close now: what the administrator
 * took out or narrowed loses its access at once, not at its next
 * connection; a client that reconnects gets the new rules.
 */
void apply_allow(struct shard *sh)
{
	struct srv *s = sh->s;
	unsigned int gen = atomic_load(&s->allow_gen);
	struct conn *c, *next;
	int allowed, removed;

	if (sh->allow_seen == gen)
		return;
	sh->allow_seen = gen;
	for (c = sh->conns; c; c = next) {
		next = c->next;
		if (c->closing)
			continue;
		pthread_mutex_lock(&s->lock);
		allowed = config_allowed(&s->cfg, &c->ip) &&
			  config_export_allowed(&c->ex->cfg, &c->ip);
		removed = c->ex->removed;
		pthread_mutex_unlock(&s->lock);
		if (!allowed)
			conn_close(c, "its address is no longer allowed");
		else if (removed)
			conn_close(c, "a reload removed or changed what it uses");
	}
}

/*
 * Shard SH: close the connections that sent nothing for idle_secs and
 * have nothing in service: a client host gone without a word (crashed,
 * cut off) or one holding places it does not use. Kernel clients send a
 * keep-alive more often than that. Looked at four times a timeout; a
 * connection is closed between one and one and a half timeouts after
 * its last message. Returns the milliseconds until the next look (-1:
 * none).
 */
int idle_sweep(struct shard *sh)
{
	struct srv *s = sh->s;
	unsigned int secs = atomic_load(&s->idle_secs);
	uint64_t now, period;
	struct conn *c, *next;
	char why[64];

	if (!secs)
		return -1;
	period = (uint64_t)secs * 1000000 / 4;
	now = now_us();
	if (now < sh->idle_sweep_us)
		return (int)((sh->idle_sweep_us - now + 999) / 1000);
	sh->idle_sweep_us = now + period;
	for (c = sh->conns; c; c = next) {
		next = c->next;
		if (c->closing || !c->connected)
			continue;
		if (c->active || c->st.requests != c->idle_mark) {
			c->idle_mark = c->st.requests;
			c->idle_since_us = now;
			continue;
		}
		if (now - c->idle_since_us < (uint64_t)secs * 1000000)
			continue;
		atomic_fetch_add(&s->idle_closed, 1);
		snprintf(why, sizeof(why), "silent for %u s", secs);
		conn_close(c, why);
	}
	return (int)((period + 999) / 1000);
}

// SPDX-License-Identifier: GPL-2.0-only
/*
 * orfs-server: the userspace end of every ORFS and MXBD connection.
 *
 * The main thread listens: it takes connection requests from the
 * listener's event queue and hands each to a shard, and takes signals
 * (reload, stop). A shard is a progress thread that owns its connections:
 * it waits with epoll on their event queue, its completion queues, its I/O
 * workers' eventfd and its mailbox. Requests go through engine.c. A
 * connection is freed only when its last posted operation has completed,
 * the CM has reported its last event, no request of it is running and no
 * handler holds it (conn_get()/conn_put()).
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

#define DRAIN_SECONDS	10
/* How long after a device's release to look for its end (dev_watch()). */
#define DEV_FORGET_SECONDS	120
/* Then how often to look for it back. */
#define DEV_RETRY_SECONDS	2

/* One line on stderr, written at once: several threads log. */
void srv_log(const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	int n;

	n = snprintf(line, sizeof(line), "orfs-server: ");
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	strcat(line, "\n");
	fputs(line, stderr);
}

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
	ssize_t ret = fi_recv(c->ep, conn_rx_buf(c, i), SRV_MSG_SIZE, fi_mr_desc(c->mr), 0,
			      &c->rx[i].ctx);

	if (ret)
		return fab_err("fi_recv", (int)ret);
	c->pending++;
	return 0;
}

/* Could this process make a file in DIR, or make DIR itself and then one? */
static int could_make_in(const char *dir)
{
	char parent[PATH_MAX], *slash;

	if (!access(dir, W_OK | X_OK))
		return 1;
	if (errno != ENOENT || strlen(dir) >= sizeof(parent))
		return 0;
	strcpy(parent, dir);
	slash = strrchr(parent, '/');
	if (!slash)
		return !access(".", W_OK | X_OK);
	slash[slash == parent] = '\0';	/* "/x" -> "/" */
	return !access(parent, W_OK | X_OK);
}

/*
 * The server's key: 16 random bytes in STATE_DIR/handle-key, made on
 * first use and kept, so that file handles stay valid and volumes keep
 * their identities (volume_uuid()) across restarts.
 * With MAKE 0 (a check, -n), nothing is made: a missing key only needs a
 * place where a start could make it.
 */
static int load_key(struct srv *s, const char *dir, int make)
{
	struct stat st;
	ssize_t n;
	int dfd, fd;

	if (make && mkdir(dir, 0700) && errno != EEXIST) {
		srv_log("state directory %s: %s", dir, strerror(errno));
		return -1;
	}
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0 && (errno == ENOENT || errno == ENOTDIR) && !make) {
		if (could_make_in(dir))
			return 0;
		srv_log("state directory %s: %s: a start could not make its file handle key", dir,
			strerror(errno));
		return -1;
	}
	if (dfd < 0 && (errno == ENOTDIR || errno == ELOOP)) {
		srv_log("state directory %s: refused: it must be a directory, not a symbolic link",
			dir);
		return -1;
	}
	if (dfd < 0) {
		srv_log("state directory %s: %s", dir, strerror(errno));
		return -1;
	}
	/* Whoever may write in it may replace the key: nobody but the server. */
	if (fstat(dfd, &st) || st.st_uid != geteuid() || (st.st_mode & 022)) {
		srv_log("state directory %s: refused: it must belong to the server's user and be "
			"writable by nobody else", dir);
		close(dfd);
		return -1;
	}
	fd = openat(dfd, "handle-key", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && !make) {
		close(dfd);
		return 0;
	}
	if (fd < 0 && errno == ENOENT) {
		if (getrandom(s->key, sizeof(s->key), 0) != (ssize_t)sizeof(s->key)) {
			srv_log("getrandom: %s", strerror(errno));
			close(dfd);
			return -1;
		}
		fd = openat(dfd, "handle-key", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			    0600);
		if (fd < 0 || write(fd, s->key, sizeof(s->key)) != (ssize_t)sizeof(s->key) ||
		    fsync(fd) || fsync(dfd)) {
			srv_log("%s/handle-key: %s", dir, strerror(errno));
			if (fd >= 0)
				close(fd);
			close(dfd);
			return -1;
		}
		close(fd);
		close(dfd);
		srv_log("made a new file handle key in %s/handle-key", dir);
		return 0;
	}
	close(dfd);
	if (fd < 0) {
		srv_log("%s/handle-key: %s%s", dir, strerror(errno),
			errno == ELOOP ? " (a symbolic link is refused)" : "");
		return -1;
	}
	/* Whoever reads the key forges handles; whoever writes it, too. */
	if (!auth_private_file(fd)) {
		srv_log("%s/handle-key: refused: it must be a file of the server's user that "
			"nobody else may read or write (mode 0600)", dir);
		close(fd);
		return -1;
	}
	n = read(fd, s->key, sizeof(s->key));
	close(fd);
	if (n != (ssize_t)sizeof(s->key)) {
		srv_log("%s/handle-key: not a %zu-byte key", dir, sizeof(s->key));
		return -1;
	}
	return 0;
}

/* The export or volume NAME serves new connections from, or NULL. */
static struct export *find_export(struct srv *s, const char *name, int service)
{
	int i;

	for (i = 0; i < SRV_MAX_EXPORTS; i++) {
		struct export *ex = &s->ex[i];

		if (ex->used && !ex->removed && ex->cfg.service == service &&
		    !strcmp(ex->cfg.name, name))
			return ex;
	}
	return NULL;
}

/*
 * The identity of volume CFG when its line gives none: a UUID (version 8,
 * RFC 9562) from the server's key, kept in its state directory, the
 * volume's name and its backing path. It stays while they do, across
 * restarts, and is the same through every address; two servers sharing a
 * state directory give two volumes of one name different ones, unless
 * they are one file. The key also seals file handles: what is hashed here
 * starts with a byte no export name has (a handle's seal starts with its
 * export's name), so neither gives away anything of the other.
 */
static void volume_uuid(const struct srv *s, const struct cfg_export *cfg, uint8_t u[16])
{
	uint8_t in[2 + KNET_NAME_MAX + 1 + PATH_MAX];
	size_t n = strlen(cfg->name), m = strnlen(cfg->path, PATH_MAX - 1);
	uint64_t h;
	int i;

	memcpy(in + 2, cfg->name, n + 1);
	memcpy(in + 3 + n, cfg->path, m);
	for (i = 0; i < 2; i++) {
		in[0] = (uint8_t)(1 + i);
		in[1] = 'V';
		h = htole64(siphash24(s->key, in, 3 + n + m));
		memcpy(u + 8 * i, &h, sizeof(h));
	}
	u[6] = (uint8_t)((u[6] & 0x0f) | 0x80);	/* version 8 */
	u[8] = (uint8_t)((u[8] & 0x3f) | 0x80);	/* the RFC's variant */
}

/* Open CFG's export or volume into a free slot; 0 or -1 (message logged). */
static int export_add(struct srv *s, const struct cfg_export *cfg)
{
	struct export *ex = NULL;
	struct stat st;
	int i;

	for (i = 0; i < SRV_MAX_EXPORTS && !ex; i++)
		if (!s->ex[i].used)
			ex = &s->ex[i];
	if (!ex) {
		srv_log("%s: no free slot (%d exports and volumes at most)", cfg->name,
			SRV_MAX_EXPORTS);
		return -1;
	}
	memset(ex, 0, sizeof(*ex));
	ex->cfg = *cfg;
	ex->vol.fd = ex->vol.fd_direct = -1;
	ex->fx.root_fd = -1;
	if (cfg->service == KNET_SVC_FILE) {
		if (stat(cfg->path, &st) || !S_ISDIR(st.st_mode)) {
			srv_log("export %s: %s is not a directory", cfg->name, cfg->path);
			return -1;
		}
		if (fsvc_export_open(&ex->fx, cfg->name, cfg->path, cfg->read_only, cfg->squash,
				     s->key, s->boot))
			return -1;
		ex->fx.anon_uid = cfg->anon_uid;
		ex->fx.anon_gid = cfg->anon_gid;
		ex->fx.subtree_check = cfg->subtree_check;
	} else if (volume_open(&ex->vol, cfg->path, cfg->read_only, SRV_MAX_IO)) {
		return -1;
	} else if (cfg->has_uuid) {
		memcpy(ex->uuid, cfg->uuid, sizeof(ex->uuid));
	} else {
		volume_uuid(s, cfg, ex->uuid);
	}
	ex->used = 1;
	return 0;
}

static void export_release(struct srv *s, struct export *ex)
{
	/* No request runs on it: its cached open files can all go. */
	fdc_forget(&s->fdc, &ex->fx, 0);
	volume_close(&ex->vol);
	fsvc_export_close(&ex->fx);
	memset(ex, 0, sizeof(*ex));
}

/*
 * Under s->lock: one more connection of the host at IP. Returns 0, or the
 * connections it has when that is its bound (cfg.peer_conns): refused,
 * counted and nothing taken.
 */
static int peer_conn_get(struct srv *s, const struct cfg_addr *ip)
{
	struct srv_peer *p = NULL;
	int i;

	for (i = 0; i < s->npeers && !p; i++)
		if (!memcmp(&s->peers[i].ip, ip, sizeof(*ip)))
			p = &s->peers[i];
	if (p && p->n >= (int)s->cfg.peer_conns) {
		s->peer_refused++;
		return p->n;
	}
	if (!p) {
		if (s->npeers == SRV_MAX_CONNS) {
			s->peer_refused++;
			return SRV_MAX_CONNS;	/* as many hosts as places */
		}
		p = &s->peers[s->npeers++];
		p->ip = *ip;
		p->n = 0;
	}
	p->n++;
	return 0;
}

/* Under s->lock: a connection of the host at IP is gone. */
static void peer_conn_put(struct srv *s, const struct cfg_addr *ip)
{
	int i;

	for (i = 0; i < s->npeers; i++) {
		if (memcmp(&s->peers[i].ip, ip, sizeof(*ip)))
			continue;
		if (!--s->peers[i].n)
			s->peers[i] = s->peers[--s->npeers];
		return;
	}
}

/* A connection is done with EX. */
static void export_put(struct srv *s, struct export *ex)
{
	if (--ex->refs || !ex->removed)
		return;
	srv_log("%s '%s' released", ex->cfg.service == KNET_SVC_FILE ? "export" : "volume",
		ex->cfg.name);
	export_release(s, ex);
}

static void conn_free(struct conn *c)
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
static void reject(fid_t pep, struct fi_info *info, int reason, const char *what)
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

/* Export or volume NAME for a new connection, with a reference taken, or NULL. */
static struct export *export_get(struct srv *s, const char *name, int service)
{
	struct export *ex;

	pthread_mutex_lock(&s->lock);
	ex = find_export(s, name, service);
	if (ex)
		ex->refs++;
	pthread_mutex_unlock(&s->lock);
	return ex;
}

/* A connection request the main thread handed to shard SH. */
static void on_connreq(struct shard *sh, struct fi_eq_cm_entry *e, size_t datalen)
{
	struct srv *s = sh->s;
	struct conn_params p;
	struct knet_cm_rep rep;
	struct export *ex;
	struct conn *c;
	struct cfg_addr ip;
	const struct auth_secret *sec;
	struct auth_secret secret = { .len = 0 };
	char host[INET6_ADDRSTRLEN];
	char detail[128];
	int allowed, reserved, reason, i, ret;

	/* Not known (no address, another family): only where all may come. */
	config_addr_from_sa(e->info->dest_addr, e->info->dest_addrlen, &ip);
	pthread_mutex_lock(&s->lock);
	allowed = config_allowed(&s->cfg, &ip);
	pthread_mutex_unlock(&s->lock);
	if (!allowed) {
		snprintf(detail, sizeof(detail), " (%s)", config_addr_str(&ip, host, sizeof(host)));
		reject(e->fid, e->info, KNET_REJ_ACCESS, detail);
		goto out;
	}
	reason = proto_parse_cm_req(e->data, datalen, &p);
	if (reason) {
		reject(e->fid, e->info, reason, NULL);
		goto out;
	}
	/* Both sides hold the client's secret, or neither does. */
	pthread_mutex_lock(&s->lock);
	sec = config_secret_for(&s->cfg, &ip);
	if (sec)
		secret = *sec;
	pthread_mutex_unlock(&s->lock);
	if (!secret.len != !(p.flags & KNET_CMF_AUTH)) {
		snprintf(detail, sizeof(detail), " (%s: %s)", config_addr_str(&ip, host, sizeof(host)),
			 secret.len ? "it has no secret, and this server needs one" :
				      "it has a secret, and this server none for it");
		explicit_bzero(&secret, sizeof(secret));
		reject(e->fid, e->info, KNET_REJ_AUTH, detail);
		goto out;
	}
	ex = export_get(s, p.name, p.service);
	if (!ex) {
		snprintf(detail, sizeof(detail), " ('%s', service %u)", p.name, p.service);
		reject(e->fid, e->info, KNET_REJ_NOENT, detail);
		goto out;
	}
	pthread_mutex_lock(&s->lock);
	allowed = config_export_allowed(&ex->cfg, &ip);
	if (!allowed)
		export_put(s, ex);
	pthread_mutex_unlock(&s->lock);
	if (!allowed) {
		snprintf(detail, sizeof(detail), " (%s, to '%s')", config_addr_str(&ip, host, sizeof(host)),
			 p.name);
		reject(e->fid, e->info, KNET_REJ_ACCESS, detail);
		goto out;
	}
	c = NULL;
	/* One host's share first: no host takes every place. */
	pthread_mutex_lock(&s->lock);
	i = peer_conn_get(s, &ip);
	if (i)
		export_put(s, ex);
	pthread_mutex_unlock(&s->lock);
	if (i) {
		snprintf(detail, sizeof(detail), " (%s has %d connections, the most one host may have)",
			 config_addr_str(&ip, host, sizeof(host)), i);
		reject(e->fid, e->info, KNET_REJ_BUSY, detail);
		goto out;
	}
	/* A place among the SRV_MAX_CONNS, taken at once: other shards accept too. */
	reserved = !sh->stopping && !sh->retiring;
	if (reserved && atomic_fetch_add(&s->nconns, 1) < SRV_MAX_CONNS) {
		c = conn_alloc(sh, ex, &p);
		if (!c)
			srv_log("out of memory for a connection");
	}
	if (c) {
		c->ip = ip;	/* its host's count goes with it (conn_free()) */
		c->auth = secret;
		c->authed = !secret.len;
		/* Keyed, so that no host can pick an address that shares another's quotas. */
		c->peer_key = siphash24(s->key, ip.b, sizeof(ip.b));
	}
	explicit_bzero(&secret, sizeof(secret));
	if (!c) {
		if (reserved)
			s->nconns--;
		pthread_mutex_lock(&s->lock);
		peer_conn_put(s, &ip);
		export_put(s, ex);
		pthread_mutex_unlock(&s->lock);
		reject(e->fid, e->info, KNET_REJ_BUSY, NULL);
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

	memset(&rep, 0, sizeof(rep));
	rep.version = htole16(KNET_PROTO_VERSION);
	rep.credits = htole16((uint16_t)c->ncredits);
	rep.inline_max = htole32(c->inline_max);
	rep.max_io = htole32(SRV_MAX_IO);
	rep.max_segs = htole16(KNET_MAX_SEGS);
	rep.flags = htole16(c->authed ? 0 : KNET_CMF_AUTH);
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
static void handle_eq(struct shard *sh)
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
static void apply_allow(struct shard *sh)
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
static int idle_sweep(struct shard *sh)
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

/*
 * Shard SH: SIGUSR1 asked for a status report. One line for the thread,
 * one for each of its connections, in the log.
 */
static void report_status(struct shard *sh)
{
	struct srv *s = sh->s;
	unsigned int gen = atomic_load(&s->status_gen);
	uint64_t now = now_us();
	struct conn *c;
	int n = 0;

	if (sh->status_seen == gen)
		return;
	sh->status_seen = gen;
	for (c = sh->conns; c; c = c->next)
		n++;
	srv_log("status: progress thread %d on %s: %d connections, %d requests in service, %u of %u buffer chunks free, %llu waits for a buffer, READ sinks %s (%llu registered, %llu live)",
		sh->id, s->dev[sh->dev].info->domain_attr->name, n, atomic_load(&sh->active),
		sh->pool.nfree, sh->pool.nchunks,
		(unsigned long long)sh->buffer_waits,
		sh->sink_per_read ? "registered per READ" : "in the pool's registration",
		(unsigned long long)sh->sink_regs, (unsigned long long)sh->sink_live);
	for (c = sh->conns; c; c = c->next)
		srv_log("status: %s %s '%s' (thread %d): %s %llu s, %d requests in service, %llu requests, %llu malformed, %llu bytes in, %llu out",
			c->peer[0] ? c->peer : "?",
			c->p.service == KNET_SVC_FILE ? "export" : "volume", c->p.name, sh->id,
			c->closing ? "closing after" : c->connected ? "up" : "connecting for",
			c->since_us ? (unsigned long long)((now - c->since_us) / 1000000) : 0ULL,
			c->active, (unsigned long long)c->st.requests,
			(unsigned long long)c->st.malformed, (unsigned long long)c->bytes_in,
			(unsigned long long)c->bytes_out);
}

/* Shard SH takes the connection requests handed to it. */
static void take_mail(struct shard *sh)
{
	struct connreq *q, *next, *first;
	uint64_t v;

	sh->mail_taken = atomic_load(&sh->mail_seq);
	if (read(sh->mailfd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		srv_log("shard %d: reading its eventfd: %s", sh->id, strerror(errno));
	pthread_mutex_lock(&sh->mail_lock);
	q = sh->mail;
	sh->mail = NULL;
	pthread_mutex_unlock(&sh->mail_lock);
	/* Oldest first: the clients that asked first are answered first. */
	for (first = NULL; q; q = next) {
		next = q->next;
		q->next = first;
		first = q;
	}
	for (q = first; q; q = next) {
		next = q->next;
		on_connreq(sh, &q->ev.cm, q->datalen);
		/* After on_connreq() counted it in nconns, if it took it. */
		sh->queued--;
		free(q);
	}
	apply_allow(sh);
	report_status(sh);
}

static void wake(int fd)
{
	uint64_t one = 1;

	if (write(fd, &one, sizeof(one)) != (ssize_t)sizeof(one))
		srv_log("waking a thread: %s", strerror(errno));
}

/*
 * Shard SH has mail (a connection request, an order, a changed allow list,
 * a status report to write): counted, so that a thread too busy to sleep
 * in epoll sees it too, and its eventfd woken for one that sleeps.
 */
static void mail_wake(struct shard *sh)
{
	if (sh->retired)
		return;	/* its thread and eventfd are gone */
	atomic_fetch_add(&sh->mail_seq, 1);
	wake(sh->mailfd);
}

/* How many connections shard SH has or is about to have. */
static int shard_load(struct shard *sh)
{
	return sh->nconns + sh->queued;
}

/* The device of S named NAME (a domain name), or -1. */
static int srv_dev_find(const struct srv *s, const char *name)
{
	int d;

	for (d = 0; d < s->ndev; d++)
		if (!strcmp(s->dev[d].info->domain_attr->name, name))
			return d;
	return -1;
}

/*
 * The device of S's listen address I, by the name its listener was opened
 * on; -1 for any address, whose listener is on every device.
 */
static int listen_dev(const struct srv *s, int i)
{
	if (config_listen_any(&s->cfg, i))
		return -1;
	return srv_dev_find(s, s->linfo[i]->domain_attr->name);
}

/*
 * Main: hand a connection request to the shard with the fewest connections
 * among those of the device it came on, counting those handed to it and
 * not yet taken: a burst of requests (clients starting together) spreads
 * over the shards.
 */
static void hand_over(struct srv *s, const union cm_event *ev, size_t len)
{
	int i, load = 0, other, dev = srv_dev_find(s, ev->cm.info->domain_attr->name);
	struct connreq *q = NULL;
	struct shard *sh = NULL;

	for (i = 0; dev >= 0 && !s->dev[dev].lost && i < s->nshards; i++) {
		if (s->shards[i].dev != dev)
			continue;
		other = shard_load(&s->shards[i]);
		if (!sh || other < load) {
			sh = &s->shards[i];
			load = other;
		}
	}
	if (!sh)
		srv_log("a connection request on %s, %s", ev->cm.info->domain_attr->name,
			dev >= 0 ? "a device being removed" :
			s->anyinfo ? "a device not served (added after the start?)" :
			"not a device listened on");
	else if (!(q = calloc(1, sizeof(*q))))
		srv_log("out of memory for a connection");
	if (!q) {
		reject(ev->cm.fid, ev->cm.info, KNET_REJ_BUSY, NULL);
		fi_freeinfo(ev->cm.info);
		return;
	}
	memcpy(&q->ev, ev, len);
	q->datalen = len - sizeof(q->ev.cm);
	sh->queued++;
	pthread_mutex_lock(&sh->mail_lock);
	q->next = sh->mail;
	sh->mail = q;
	pthread_mutex_unlock(&sh->mail_lock);
	mail_wake(sh);
}

/* The device of the listener whose fid is FID, or -1. */
static int pep_dev(const struct srv *s, const struct fid *fid)
{
	int i;

	for (i = 0; fid && i < s->npep; i++)
		if (s->pep[i] && &s->pep[i]->fid == fid)
			return listen_dev(s, i);
	return -1;
}

/*
 * Main: RDMA device D was removed (its listener reported it). Its threads
 * retire: they close every connection on it and end once those are gone,
 * and main then closes what the server had on it (reap_retired()), which
 * lets the removal finish. The other devices go on serving.
 */
static void dev_lost(struct srv *s, int d)
{
	int i, left = 0;

	if (d < 0 || s->dev[d].lost)
		return;
	s->dev[d].lost = 1;
	for (i = 0; i < s->ndev; i++)
		left += !s->dev[i].lost;
	srv_log("RDMA device %s removed: its connections close; serving on %d of %d devices",
		s->dev[d].info->domain_attr->name, left, s->ndev);
	for (i = 0; i < s->nshards; i++) {
		if (s->shards[i].dev != d)
			continue;
		s->shards[i].retiring = 1;
		mail_wake(&s->shards[i]);
	}
}

/* Main: close the listeners and the domain of device D, its threads gone. */
static void dev_close(struct srv *s, int d)
{
	int i;

	for (i = 0; i < s->npep; i++) {
		if (s->pep[i] && listen_dev(s, i) == d) {
			fi_close(&s->pep[i]->fid);
			s->pep[i] = NULL;
		}
	}
	if (s->dev[d].domain)
		fi_close(&s->dev[d].domain->fid);
	s->dev[d].domain = NULL;
}

/* Main: device D, whose threads all retired, is let go of. */
static void dev_release(struct srv *s, int d)
{
	dev_close(s, d);
	s->dev[d].released = 1;
	s->dev[d].forget_by = time(NULL) + DEV_FORGET_SECONDS;
	srv_log("RDMA device %s released", s->dev[d].info->domain_attr->name);
}

/*
 * Is the RDMA device NAME still listed by librdmacm? Asking makes it look
 * at the system's devices again, and close one that has gone with no ID
 * of ours left on it: its verbs context, which libfabric's verbs provider
 * uses. The removal of a device whose driver cannot take contexts away
 * from processes (soft-RoCE, siw) waits for that. 1 listed, 0 not, -1 no
 * list to be had (no device at all).
 */
static int dev_listed(const char *name)
{
	struct ibv_context **list;
	int i, n, found = 0;

	list = rdma_get_devices(&n);
	if (!list)
		return -1;
	for (i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]->device), name))
			found = 1;
	rdma_free_devices(list);
	return found;
}

/* Is NAME among the N devices of LIST? */
static int dev_in(struct ibv_device **list, int n, const char *name)
{
	int i;

	for (i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			return 1;
	return 0;
}

/*
 * Main, listening on any address: that listener is on no device, so no
 * listener of the server hears of a removal. libibverbs' device list
 * drops a device as soon as its removal begins, before the removal waits
 * for the device's users, and (unlike librdmacm's, dev_listed()) asking
 * for it closes nothing the server still uses: a device served and not
 * in it is lost. A device in it and not served (added after the start,
 * or without an address then) is logged once.
 */
static void any_watch(struct srv *s)
{
	struct ibv_device **list;
	const char *name;
	int i, d, n, busy = 0;

	list = ibv_get_device_list(&n);
	if (!list)
		return;		/* nothing known: nothing to do */
	for (d = 0; d < s->ndev; d++) {
		if (!s->dev[d].lost && !dev_in(list, n, s->dev[d].info->domain_attr->name))
			dev_lost(s, d);
		/* Its queues still open: librdmacm's list must not be read. */
		if (s->dev[d].lost && !s->dev[d].released)
			busy = 1;
	}
	/*
	 * An unserved device that goes: librdmacm may hold its context (a
	 * connection request came on it), which the removal of a soft-RoCE
	 * device waits for. Its list, read again, lets go of it, unless a
	 * served device is going too: then it would close that device's
	 * context under the server's queues (dev_listed() waits for them).
	 */
	for (d = 0; d < s->nunserved && !busy; d++) {
		if (dev_in(list, n, s->unserved[d]))
			continue;
		srv_log("RDMA device %s, not served, is gone", s->unserved[d]);
		dev_listed(s->unserved[d]);
		memmove(s->unserved[d], s->unserved[d + 1],
			(size_t)(s->nunserved - d - 1) * sizeof(s->unserved[0]));
		s->nunserved--;
		d--;
	}
	for (i = 0; i < n && s->nunserved < SRV_MAX_UNSERVED; i++) {
		name = ibv_get_device_name(list[i]);
		if (srv_dev_find(s, name) >= 0)
			continue;
		for (d = 0; d < s->nunserved; d++)
			if (!strcmp(s->unserved[d], name))
				break;
		if (d < s->nunserved)
			continue;
		snprintf(s->unserved[s->nunserved++], sizeof(s->unserved[0]), "%s", name);
		srv_log("RDMA device %s is not served: it came after the start, or had no address then (a restart serves it)",
			name);
	}
	ibv_free_device_list(list);
}

/* Main: the listener's events. */
static void handle_listen(struct srv *s)
{
	union cm_event ev;
	uint32_t event;
	ssize_t rd;
	int ret;

	for (;;) {
		rd = fi_eq_read(s->eq, &event, &ev, sizeof(ev), 0);
		if (rd == -FI_EAGAIN)
			return;
		if (rd == -FI_EAVAIL) {
			struct fi_eq_err_entry err;

			ret = fab_eq_err(s->eq, "listener event error", &err);
			if (ret == -FI_ENODEV)
				dev_lost(s, pep_dev(s, err.fid));
			/*
			 * libfabric knows the devices of its start only: it
			 * refuses a request on a device added since.
			 */
			else if (ret == -FI_ENODATA && s->anyinfo)
				srv_log("a connection request refused: it came on an RDMA device added after the start (a restart serves it)");
			continue;
		}
		if (rd < 0) {
			fab_err("fi_eq_read (listener): stopping", (int)rd);
			s->stop = 1;
			return;
		}
		if (event != FI_CONNREQ || (size_t)rd < sizeof(ev.cm)) {
			srv_log("unexpected listener event %u", event);
		} else if (s->stopping) {
			reject(ev.cm.fid, ev.cm.info, KNET_REJ_BUSY, NULL);
			fi_freeinfo(ev.cm.info);
		} else {
			hand_over(s, &ev, (size_t)rd);
		}
	}
}

/* One completion (ERR 0) or flushed/failed operation (ERR an errno). */
static void on_completion(struct op *op, size_t len, int err)
{
	struct chunk *ch = op->kind == OP_RDMA ? op->owner : NULL;
	struct conn *c = ch ? ch->c : op->owner;

	conn_get(c);
	c->pending--;
	switch (op->kind) {
	case OP_RECV:
		if (err)
			/* Flushed: the queue pair went to error before the CM said why. */
			conn_close(c, err == FI_ECANCELED ? "disconnected" : "receive failed");
		else if (c->sh->stopping)
			c->sh->left++;	/* the client sends it again to the next server */
		else if (!c->closing)
			eng_on_recv(c, op->idx, (uint32_t)len);
		break;
	case OP_SEND:
		eng_on_send_done(c, op->idx);
		if (err)
			conn_close(c, "send failed");
		break;
	case OP_RDMA:
		if (op->read)
			c->reads_out--;
		if (err)
			conn_close(c, "RDMA to the client's memory failed");
		eng_on_rdma_done(ch, err ? EIO : 0);
		break;
	}
	conn_put(c);
}

/* Handle what completion queue CQ holds; returns how many completions. */
static int handle_cq(struct shard *sh, struct fid_cq *cq)
{
	struct fi_cq_data_entry ent[16];
	ssize_t n, k;
	int seen = 0;

	for (;;) {
		n = fi_cq_read(cq, ent, 16);
		if (n == -FI_EAGAIN)
			return seen;
		if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry err;

			memset(&err, 0, sizeof(err));
			if (fi_cq_readerr(cq, &err, 0) < 0)
				return seen;
			if (sh->s->verbose && err.err != FI_ECANCELED)
				srv_log("operation failed: %s", fi_strerror(err.err));
			on_completion(err.op_context, 0, err.err ? err.err : EIO);
			seen++;
			continue;
		}
		if (n < 0) {
			fab_err("fi_cq_read", (int)n);
			sh->failed = 1;
			return seen;
		}
		for (k = 0; k < n; k++)
			on_completion(ent[k].op_context, ent[k].len, 0);
		seen += (int)n;
	}
}

uint64_t now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000 + (uint64_t)t.tv_nsec / 1000;
}

/*
 * Poll the completion queue and the workers' done list for up to the
 * configured time after the last work, instead of sleeping: a wake-up
 * from epoll costs more than a request's own work on small I/O. Only
 * while at most one request is in service: that is when a client waits
 * on every step of the server; with more, completions come in batches
 * and sleeping costs little, while a spinning thread would take a CPU
 * from the workers. Returns 1 if work was found (and done), 0 to sleep.
 */
static int srv_poll(struct shard *s)
{
	uint64_t t = now_us(), end = s->last_busy + s->s->cfg.poll_us;

	while (t < end && !s->stop && !s->failed && s->active <= 1) {
		int got = handle_cq(s, s->txcq) + handle_cq(s, s->rxcq);

		if (box_have_done(&s->box)) {
			eng_on_jobs(s);
			got = 1;
		}
		/* Jobs done without a worker are finished at the top of the loop. */
		if (got) {
			s->last_busy = now_us();
			s->poll_hits++;
			return 1;
		}
		t = now_us();
	}
	return 0;
}

static int epoll_add(int epfd, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

	if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev)) {
		fprintf(stderr, "orfs-server: epoll_ctl: %s\n", strerror(errno));
		return -1;
	}
	return 0;
}

/* Shard SH's queues, buffers and wait set, with NCHUNKS chunks of the pool. */
static int shard_open(struct shard *sh, uint32_t nchunks)
{
	struct srv *s = sh->s;
	const struct srv_dev *dev = &s->dev[sh->dev];
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_FD };
	/* Every receive posted; every reply buffer and RDMA operation in flight. */
	struct fi_cq_attr rx_attr = {
		.format = FI_CQ_FORMAT_DATA,
		.size = SRV_RX_BUDGET + SRV_MAX_CONNS * SRV_MIN_CREDITS,
		.wait_obj = FI_WAIT_FD,
	};
	struct fi_cq_attr tx_attr = {
		.format = FI_CQ_FORMAT_DATA,
		.size = SRV_RX_BUDGET * 2 + SRV_MAX_CONNS * (2 * SRV_MIN_CREDITS + SRV_RDMA_SQ),
		.wait_obj = FI_WAIT_FD,
	};
	int iwarp, ret;

	sh->epfd = sh->mailfd = sh->box.efd = -1;
	pthread_mutex_init(&sh->mail_lock, NULL);
	sh->rx_budget = SRV_RX_BUDGET / s->nshards;
	if (sh->rx_budget < SRV_CREDITS)
		sh->rx_budget = SRV_CREDITS;
	sh->fault_rng = s->fault_seed;
	if ((ret = fi_eq_open(s->fabric, &eq_attr, &sh->eq, NULL)) ||
	    (ret = fi_cq_open(dev->domain, &rx_attr, &sh->rxcq, NULL)) ||
	    (ret = fi_cq_open(dev->domain, &tx_attr, &sh->txcq, NULL)))
		return fab_err("setting up a progress thread's queues", ret);
	if ((ret = fi_control(&sh->eq->fid, FI_GETWAIT, &sh->eqfd)) ||
	    (ret = fi_control(&sh->rxcq->fid, FI_GETWAIT, &sh->rxcqfd)) ||
	    (ret = fi_control(&sh->txcq->fid, FI_GETWAIT, &sh->txcqfd)))
		return fab_err("getting wait objects", ret);

	/* The data buffers: allocated and registered once, bounded. */
	if (pool_init(&sh->pool, s->chunk_size, nchunks)) {
		fprintf(stderr, "orfs-server: cannot allocate a %zu MiB buffer pool\n",
			s->chunk_size * nchunks >> 20);
		return -1;
	}
	/*
	 * The pool is the source of our RDMA WRITEs and the sink of our RDMA
	 * READs. On iWARP a READ sink must allow remote writes (the
	 * protocol writes READ responses into it; libfabric adds the right
	 * to FI_READ): a client could then write into any chunk of the pool,
	 * other clients' data in flight. There, and when read_sinks says
	 * per_read, each chunk is registered for its READs only, with a key
	 * closed when they complete (eng: post_rdma()), as the kernel's
	 * rdma_rw does; the pool is registered for WRITEs only.
	 */
	iwarp = dev->info->ep_attr && dev->info->ep_attr->protocol == FI_PROTO_IWARP;
	sh->sink_per_read = s->cfg.read_sinks == CFG_SINKS_PER_READ || iwarp;
	/* See conn_fence(). */
	sh->fence_reads = iwarp;
	ret = fi_mr_reg(dev->domain, sh->pool.base, s->chunk_size * nchunks,
			sh->sink_per_read ? FI_WRITE : FI_READ | FI_WRITE, 0, 0, 0, &sh->pool_mr,
			NULL);
	if (ret)
		return fab_err("registering the buffer pool", ret);
	sh->chunks = calloc(nchunks, sizeof(*sh->chunks));
	if (!sh->chunks)
		return -1;
	fq_init(&sh->fq, (uint32_t)s->chunk_size);
	if (box_init(&sh->box))
		return -1;
	sh->mailfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (sh->mailfd < 0) {
		perror("orfs-server: eventfd");
		return -1;
	}
	sh->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (sh->epfd < 0) {
		perror("orfs-server: epoll_create1");
		return -1;
	}
	if (epoll_add(sh->epfd, sh->eqfd) || epoll_add(sh->epfd, sh->rxcqfd) ||
	    epoll_add(sh->epfd, sh->mailfd) || epoll_add(sh->epfd, sh->box.efd))
		return -1;
	return 0;
}

/* What libfabric has at listen address I of S, PORT (NULL: any port) into *INFO. */
static int listen_getinfo(const struct srv *s, int i, const char *port, struct fi_info **info)
{
	const char *addr = s->cfg.listen[i].addr;
	struct fi_info *hints = fab_hints(s->prov, addr);
	int ret;

	*info = NULL;
	if (!hints)
		return -FI_ENOMEM;
	ret = fi_getinfo(FAB_VERSION, addr, port, FI_SOURCE, hints, info);
	fi_freeinfo(hints);
	if (ret)
		*info = NULL;
	return ret;
}

/*
 * Every RDMA device of the host, as libfabric describes it (several times
 * each: an entry for each of its addresses), into *INFO: the devices of
 * any address.
 */
static int any_getinfo(const struct srv *s, struct fi_info **info)
{
	struct fi_info *hints = fab_hints(s->prov, NULL);
	int ret;

	*info = NULL;
	if (!hints)
		return -FI_ENOMEM;
	hints->addr_format = FI_FORMAT_UNSPEC;
	ret = fi_getinfo(FAB_VERSION, NULL, NULL, 0, hints, info);
	fi_freeinfo(hints);
	if (ret)
		*info = NULL;
	return ret;
}

/*
 * For any address I of S, the host's devices into *ANY unless there
 * already; a failure is logged. Returns 0 or a libfabric error.
 */
static int any_devices(const struct srv *s, int i, struct fi_info **any)
{
	int ret = *any ? 0 : any_getinfo(s, any);

	if (ret)
		srv_log("listen %s: no RDMA device on this host (%s)", s->cfg.listen[i].addr,
			fi_strerror(-ret));
	return ret;
}

/* Add INFO's device to the NDEV of DEV[] if new and there is room; how many then. */
static int dev_add(struct fi_info *dev[], int ndev, struct fi_info *info)
{
	int d;

	for (d = 0; d < ndev; d++)
		if (!strcmp(dev[d]->domain_attr->name, info->domain_attr->name))
			return ndev;
	if (ndev < CFG_MAX_LISTEN)
		dev[ndev++] = info;
	return ndev;
}

/*
 * The RDMA devices of C's listen addresses, from what libfabric has at
 * each (INFO[i], NULL where nothing) and, if one is any address, on the
 * host (ANY): the first description of each device into DEV[] (at most
 * CFG_MAX_LISTEN). Returns how many devices there are.
 */
static int listen_devices(const struct config *c, struct fi_info *const info[],
			  struct fi_info *any, struct fi_info *dev[])
{
	int i, ndev = 0;

	for (i = 0; i < c->nlisten; i++)
		if (info[i] && !config_listen_any(c, i))
			ndev = dev_add(dev, ndev, info[i]);
	for (; any; any = any->next)
		ndev = dev_add(dev, ndev, any);
	return ndev;
}

/*
 * Add what FMT says to the text in BUF (LEN bytes, N of them used, LEN > 0);
 * returns how many are used then (cut at LEN - 1).
 */
static size_t appendf(char *buf, size_t len, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static size_t appendf(char *buf, size_t len, size_t n, const char *fmt, ...)
{
	va_list ap;
	int r;

	if (n >= len - 1)
		return n;
	va_start(ap, fmt);
	r = vsnprintf(buf + n, len - n, fmt, ap);
	va_end(ap);
	return r < 0 ? n : n + (size_t)r >= len ? len - 1 : n + (size_t)r;
}

/*
 * "rxe0, rxe1": the names of the devices of C's listen addresses (as
 * listen_devices() takes them) into BUF (LEN bytes).
 */
static const char *dev_str(const struct config *c, struct fi_info *const info[],
			   struct fi_info *any, char *buf, size_t len)
{
	struct fi_info *dev[CFG_MAX_LISTEN];
	int d, ndev = listen_devices(c, info, any, dev);
	size_t used = 0;

	buf[0] = '\0';
	for (d = 0; d < ndev; d++)
		used = appendf(buf, len, used, "%s%s", d ? ", " : "", dev[d]->domain_attr->name);
	return buf;
}

/*
 * The fabric, a domain on each RDMA device listened on, and the progress
 * threads dealt out to the devices in turn: at least one a device.
 */
static int srv_open_devices(struct srv *s)
{
	struct fi_info *dev[CFG_MAX_LISTEN];
	int d, ret;

	s->ndev = listen_devices(&s->cfg, s->linfo, s->anyinfo, dev);
	if (!s->ndev) {
		srv_log("no RDMA device to serve on");
		return -FI_ENODEV;
	}
	for (d = 0; d < s->ndev; d++)
		s->dev[d].info = dev[d];
	if (s->nshards < s->ndev) {
		srv_log("progress threads: %d, one for each of %d RDMA devices (not %d)", s->ndev,
			s->ndev, s->nshards);
		s->nshards = s->ndev;
		if (s->nchunks < (uint32_t)s->nshards) {
			srv_log("the pool must hold at least one chunk per progress thread");
			return -FI_EINVAL;
		}
	}
	ret = fi_fabric(s->dev[0].info->fabric_attr, &s->fabric, NULL);
	if (ret)
		return fab_err("setting up the fabric", ret);
	for (d = 0; d < s->ndev; d++) {
		ret = fi_domain(s->fabric, s->dev[d].info, &s->dev[d].domain, NULL);
		if (ret) {
			srv_log("opening RDMA device %s: %s", s->dev[d].info->domain_attr->name,
				fi_strerror(-ret));
			return ret;
		}
	}
	return 0;
}

/*
 * Part K of N of TOTAL shared out as evenly as can be, the first parts
 * taking the rest. The pool goes to the devices so, then each device's
 * part to its threads: every device gets the same, whatever the number of
 * threads it has. Every thread gets a chunk at least, as there are no
 * fewer chunks than threads (both shared out alike).
 */
static uint32_t share(uint32_t total, int n, uint32_t k)
{
	return total / (uint32_t)n + (k < total % (uint32_t)n);
}

/* Shard I's part of the pool: its device's share, split among its threads. */
static uint32_t shard_chunks(const struct srv *s, int i)
{
	int d = i % s->ndev;

	return share(share(s->nchunks, s->ndev, (uint32_t)d),
		     share((uint32_t)s->nshards, s->ndev, (uint32_t)d), (uint32_t)(i / s->ndev));
}

/*
 * Registering the pool pins it. Some devices count that against
 * RLIMIT_MEMLOCK whatever the process's capabilities (siw on 6.1 does;
 * the default limit is 8 MiB), so the limit goes as high as it may:
 * unlimited when the server may raise it (root, as the systemd unit's
 * LimitMEMLOCK=infinity does), else the hard limit.
 */
static void raise_memlock(const struct srv *s)
{
	struct rlimit rl = { RLIM_INFINITY, RLIM_INFINITY };
	size_t pool = s->chunk_size * s->nchunks;

	if (!setrlimit(RLIMIT_MEMLOCK, &rl))
		return;
	if (getrlimit(RLIMIT_MEMLOCK, &rl)) {
		perror("orfs-server: getrlimit(RLIMIT_MEMLOCK)");
		return;
	}
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_MEMLOCK, &rl))
		perror("orfs-server: setrlimit(RLIMIT_MEMLOCK)");
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < pool)
		srv_log("RLIMIT_MEMLOCK is %llu KiB, below the %zu MiB pool: a device that counts pinned memory against it will refuse the pool (raise it, e.g. LimitMEMLOCK=infinity)",
			(unsigned long long)rl.rlim_cur >> 10, pool >> 20);
}

static int srv_open(struct srv *s)
{
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_FD };
	sigset_t mask;
	int i, ret;

	raise_memlock(s);
	for (i = 0; i < s->cfg.nlisten; i++) {
		const char *addr = s->cfg.listen[i].addr, *port = config_listen_port(&s->cfg, i);

		ret = listen_getinfo(s, i, port, &s->linfo[i]);
		if (ret) {
			srv_log("listen %s port %s: %s (is there an RDMA device on that address?)",
				addr, port, fi_strerror(-ret));
			return ret;
		}
		if (config_listen_any(&s->cfg, i)) {
			ret = any_devices(s, i, &s->anyinfo);
			if (ret)
				return ret;
		}
	}
	ret = srv_open_devices(s);
	if (ret)
		return ret;
	ret = fi_eq_open(s->fabric, &eq_attr, &s->eq, NULL);
	if (ret)
		return fab_err("setting up the fabric", ret);
	for (i = 0; i < s->cfg.nlisten; i++) {
		ret = fi_passive_ep(s->fabric, s->linfo[i], &s->pep[i], NULL);
		if (ret)
			return fab_err("setting up a listener", ret);
		s->npep++;
		ret = fi_pep_bind(s->pep[i], &s->eq->fid, 0);
		if (ret)
			return fab_err("setting up a listener", ret);
	}
	ret = fi_control(&s->eq->fid, FI_GETWAIT, &s->eqfd);
	if (ret)
		return fab_err("getting wait objects", ret);

	/* Blocked before any thread exists, so that only the signalfd sees them. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGUSR1);
	if (sigprocmask(SIG_BLOCK, &mask, NULL)) {
		perror("orfs-server: sigprocmask");
		return -1;
	}
	s->shards = calloc((size_t)s->nshards, sizeof(*s->shards));
	if (!s->shards)
		return -1;
	for (i = 0; i < s->nshards; i++) {
		struct shard *sh = &s->shards[i];

		sh->s = s;
		sh->id = i;
		sh->dev = i % s->ndev;
		if (shard_open(sh, shard_chunks(s, i)))
			return -1;
	}
	if (workers_start(&s->w, s->nthreads))
		return -1;
	s->sigfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (s->sigfd < 0) {
		perror("orfs-server: signalfd");
		return -1;
	}
	s->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (s->wakefd < 0) {
		perror("orfs-server: eventfd");
		return -1;
	}
	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (s->epfd < 0) {
		perror("orfs-server: epoll_create1");
		return -1;
	}
	if (epoll_add(s->epfd, s->eqfd) || epoll_add(s->epfd, s->sigfd) ||
	    epoll_add(s->epfd, s->wakefd))
		return -1;
	for (i = 0; i < s->npep; i++) {
		ret = fi_listen(s->pep[i]);
		if (ret)
			return fab_err("fi_listen", ret);
	}
	return 0;
}

/*
 * After its thread ended (or never started), with no job of it left at
 * the workers: they stopped, or it retired. Once only.
 */
static void shard_close(struct shard *sh)
{
	if (sh->closed)
		return;
	sh->closed = 1;
	while (sh->conns) {
		sh->conns->pending = 0;
		conn_free(sh->conns);
	}
	while (sh->mail) {
		struct connreq *q = sh->mail;

		sh->mail = q->next;
		fi_freeinfo(q->ev.cm.info);
		free(q);
	}
	if (sh->pool_mr)
		fi_close(&sh->pool_mr->fid);
	if (sh->txcq)
		fi_close(&sh->txcq->fid);
	if (sh->rxcq)
		fi_close(&sh->rxcq->fid);
	if (sh->eq)
		fi_close(&sh->eq->fid);
	if (sh->epfd >= 0)
		close(sh->epfd);
	if (sh->mailfd >= 0)
		close(sh->mailfd);
	box_destroy(&sh->box);
	pool_destroy(&sh->pool);
	free(sh->chunks);
}

static void srv_close(struct srv *s)
{
	int i;

	for (i = 0; s->shards && i < s->nshards; i++) {
		struct shard *sh = &s->shards[i];

		if (sh->started) {
			sh->stop = 1;
			mail_wake(sh);
			pthread_join(sh->thread, NULL);
			sh->started = 0;
		}
	}
	/* Jobs still queued run and go to their shards' boxes, which must exist. */
	if (s->w.threads)
		workers_stop(&s->w);
	for (i = 0; s->shards && i < s->nshards; i++)
		if (s->shards[i].s)
			shard_close(&s->shards[i]);
	free(s->shards);
	s->shards = NULL;
	for (i = 0; i < s->npep; i++)
		if (s->pep[i])
			fi_close(&s->pep[i]->fid);
	s->npep = 0;
	for (i = 0; i < s->ndev; i++) {
		if (s->dev[i].domain)
			fi_close(&s->dev[i].domain->fid);
		s->dev[i].domain = NULL;
		s->dev[i].info = NULL;
		if (s->dev[i].own)
			fi_freeinfo(s->dev[i].own);
		s->dev[i].own = NULL;
	}
	s->ndev = 0;
	if (s->anyinfo)
		fi_freeinfo(s->anyinfo);
	s->anyinfo = NULL;
	if (s->eq)
		fi_close(&s->eq->fid);
	if (s->fabric)
		fi_close(&s->fabric->fid);
	for (i = 0; i < CFG_MAX_LISTEN; i++) {
		if (s->linfo[i])
			fi_freeinfo(s->linfo[i]);
		s->linfo[i] = NULL;
	}
	if (s->epfd > 0)
		close(s->epfd);
	if (s->sigfd > 0)
		close(s->sigfd);
	if (s->wakefd > 0)
		close(s->wakefd);
	for (i = 0; i < SRV_MAX_EXPORTS; i++)
		if (s->ex[i].used)
			export_release(s, &s->ex[i]);
}

/* Is B still A, but for the clients it allows (which change in place)? */
static int same_export(const struct cfg_export *a, const struct cfg_export *b)
{
	return !strcmp(a->path, b->path) && a->read_only == b->read_only &&
	       a->squash == b->squash && a->anon_uid == b->anon_uid && a->anon_gid == b->anon_gid &&
	       a->subtree_check == b->subtree_check &&
	       a->class == b->class && a->has_uuid == b->has_uuid &&
	       !memcmp(a->uuid, b->uuid, sizeof(a->uuid));
}

/*
 * Under s->lock (the main loop takes it): SIGHUP, read the configuration
 * file again (the command line's exports and
 * allows stay). Exports and volumes that are gone or changed take no new
 * connection, their connections close at once, and they are released with
 * the last one; new ones open; the allow list is replaced. A file that
 * does not parse changes nothing.
 */
static void srv_reload(struct srv *s)
{
	struct config *n = malloc(sizeof(*n));
	char err[512];
	int i, added = 0, retired = 0, allow_changed = 0, key = 0;

	if (!n) {
		srv_log("reload: out of memory");
		return;
	}
	if (!s->cfg_path) {
		srv_log("reload: no configuration file (-c) to read");
		goto out;
	}
	config_init(n);
	if (config_parse_file(n, s->cfg_path, err, sizeof(err))) {
		srv_log("reload: %s; keeping the configuration in force", err);
		goto out;
	}
	for (i = 0; i < s->cmdline.nex; i++) {
		if (config_find(n, s->cmdline.ex[i].service, s->cmdline.ex[i].name) ||
		    n->nex == CFG_MAX_EXPORTS) {
			srv_log("reload: '%s' is both in the file and on the command line; keeping the configuration in force",
				s->cmdline.ex[i].name);
			goto out;
		}
		n->ex[n->nex++] = s->cmdline.ex[i];
	}
	for (i = 0; i < s->cmdline.nallow && n->nallow < CFG_MAX_ALLOW; i++) {
		struct cfg_net net = s->cmdline.allow[i];

		/* The command line's secret, into the new list's own. */
		if (net.secret) {
			if (n->nsecret == CFG_MAX_ALLOW)
				break;
			n->secret[n->nsecret] = s->cmdline.secret[net.secret - 1];
			net.secret = ++n->nsecret;
		}
		n->allow[n->nallow++] = net;
	}
	if (!n->nallow && !s->insecure) {
		srv_log("reload: no allow list, and the server was not started with --insecure; keeping the configuration in force");
		goto out;
	}
	if ((n->nlisten && !config_same_listen(n, &s->cfg)) ||
	    n->pool_mib != s->cfg.pool_mib || n->chunk_kib != s->cfg.chunk_kib ||
	    n->threads != s->cfg.threads || n->progress != s->cfg.progress ||
	    n->read_sinks != s->cfg.read_sinks)
		srv_log("reload: listen, pool, chunk, threads, progress and read_sinks changes take effect at the next start");

	for (i = 0; i < SRV_MAX_EXPORTS; i++) {
		struct export *ex = &s->ex[i];
		const struct cfg_export *ne;

		if (!ex->used || ex->removed)
			continue;
		ne = config_find(n, ex->cfg.service, ex->cfg.name);
		if (ne && same_export(ne, &ex->cfg)) {
			/* Its clients change in place: those taken out are cut below. */
			if (!config_same_allow(ne, &ex->cfg)) {
				memcpy(ex->cfg.allow, ne->allow, sizeof(ne->allow));
				ex->cfg.nallow = ne->nallow;
				allow_changed = 1;
				srv_log("reload: %s '%s' allows %d networks",
					ex->cfg.service == KNET_SVC_FILE ? "export" : "volume",
					ex->cfg.name, ex->cfg.nallow);
			}
			continue;
		}
		ex->removed = 1;
		retired++;
		srv_log("reload: %s '%s' takes no new connections; its %d close",
			ex->cfg.service == KNET_SVC_FILE ? "export" : "volume", ex->cfg.name, ex->refs);
		if (!ex->refs)
			export_release(s, ex);
		else
			allow_changed = 1;	/* the shards close its connections */
	}
	for (i = 0; i < n->nex; i++) {
		if (find_export(s, n->ex[i].name, n->ex[i].service))
			continue;
		/* Read once (1), or not readable (-1): the new ones wait for a fix. */
		if (!key)
			key = load_key(s, s->cfg.state_dir, 1) ? -1 : 1;
		if (key < 0)
			continue;
		if (!export_add(s, &n->ex[i]))
			added++;
	}
	if (n->nallow != s->cfg.nallow ||
	    memcmp(n->allow, s->cfg.allow, sizeof(n->allow[0]) * (size_t)n->nallow)) {
		memcpy(s->cfg.allow, n->allow, sizeof(n->allow));
		s->cfg.nallow = n->nallow;
		allow_changed = 1;
	}
	/* Secrets read again: a changed one holds for the next connections. */
	memcpy(s->cfg.secret, n->secret, sizeof(n->secret));
	s->cfg.nsecret = n->nsecret;
	explicit_bzero(n->secret, sizeof(n->secret));
	if (allow_changed) {
		/* Each shard checks its connections against the lists. */
		atomic_fetch_add(&s->allow_gen, 1);
		for (i = 0; i < s->nshards; i++)
			mail_wake(&s->shards[i]);
	}
	memcpy(s->cfg.ex, n->ex, sizeof(n->ex));
	s->cfg.nex = n->nex;
	if (n->idle_timeout != s->cfg.idle_timeout) {
		s->cfg.idle_timeout = n->idle_timeout;
		atomic_store(&s->idle_secs, n->idle_timeout);
		srv_log("reload: idle_timeout %u s", n->idle_timeout);
		for (i = 0; i < s->nshards; i++)
			mail_wake(&s->shards[i]);
	}
	srv_log("reload: %d added, %d retired, %d allow entries", added, retired, s->cfg.nallow);
out:
	free(n);
}

/*
 * Does the engine wait for a completion of the transmit CQ? A reply's
 * SEND completing only frees its buffer: those are reaped at the next
 * wake-up, and the thread sleeps through them (one wake-up a request
 * less). RDMA (data pulled, buffers to free), replies or chunks waiting
 * for room, closing connections and a drain need them promptly.
 */
static int tx_awaited(const struct shard *s)
{
	const struct conn *c;

	if (s->stopping)
		return 1;
	for (c = s->conns; c; c = c->next)
		if (c->closing || c->tx_wait || c->rdma_wait || c->sq_free < SRV_RDMA_SQ)
			return 1;
	return 0;
}

/*
 * Watch the transmit CQ's wait object (ON) or not. Unwatched, an event of
 * a CQ armed before waits in its channel: the next fi_trywait() on it,
 * once watched again, consumes it before arming.
 */
static int tx_watch(struct shard *s, int on)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = s->txcqfd };

	if (on == s->tx_watched)
		return 0;
	if (epoll_ctl(s->epfd, on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, s->txcqfd, &ev)) {
		fprintf(stderr, "orfs-server: epoll_ctl (transmit CQ): %s\n", strerror(errno));
		return -1;
	}
	s->tx_watched = on;
	s->tx_armed = 0;	/* an event may wait unwatched: trywait consumes it */
	return 0;
}

/*
 * Shard S's device is gone (dev_lost()): every connection closes. Returns
 * when the time is up for their last events (DRAIN_SECONDS).
 */
static time_t shard_retire(struct shard *s)
{
	struct conn *c;

	/* From the start each time: a close may free others than C. */
	for (c = s->conns; c;) {
		if (c->closing) {
			c = c->next;
			continue;
		}
		conn_close(c, "its RDMA device was removed");
		c = s->conns;
	}
	return time(NULL) + DRAIN_SECONDS;
}

/*
 * Can retiring shard S end? With no connection left; or, after DEADLINE,
 * with none running a request (no job of theirs at a worker): the ones
 * still waiting for a last CM event or flush then go with the shard.
 */
static int shard_retired(const struct shard *s, time_t deadline)
{
	const struct conn *c;

	if (s->now)
		return 0;
	if (!s->conns)
		return 1;
	if (time(NULL) < deadline)
		return 0;
	for (c = s->conns; c; c = c->next)
		if (c->active)
			return 0;
	return 1;
}

/* A progress thread: shard S's connections until told to stop. */
static void shard_loop(struct shard *s)
{
	struct fid *fids[2], *eqfid = &s->eq->fid;
	struct epoll_event ev[8];
	time_t deadline = 0, retire_by = 0;
	int draining = 0;
	int n, i;

	s->eq_ready = 1;
	while (!s->stop && !s->failed) {
		int polled = 0, nfids = 0, idle_ms;

		if (s->stopping && !draining) {
			draining = 1;
			deadline = time(NULL) + DRAIN_SECONDS;
		}
		if (s->retiring && !retire_by)
			retire_by = shard_retire(s);
		if (s->eq_ready) {
			s->eq_ready = 0;
			handle_eq(s);
		}
		/* Mail, even when completions keep the thread from epoll. */
		if (atomic_load(&s->mail_seq) != s->mail_taken)
			take_mail(s);
		/* Reply buffers back first: the requests below may need them. */
		if ((handle_cq(s, s->txcq) + handle_cq(s, s->rxcq)) && s->s->cfg.poll_us)
			s->last_busy = now_us();
		if (s->now) {
			/* Finishing them may complete or start more: look again first. */
			eng_run_now(s);
			continue;
		}
		if (draining && (!s->active || time(NULL) >= deadline)) {
			if (s->active)
				srv_log("giving up on %d requests after %d s", (int)s->active,
					DRAIN_SECONDS);
			if (s->left)
				srv_log("%lu requests that came after the signal were not started",
					s->left);
			break;
		}
		if (retire_by && shard_retired(s, retire_by))
			break;
		if (s->s->cfg.poll_us && !draining)
			polled = srv_poll(s);
		/* Now and then after a successful poll, a look at the mailbox. */
		if (polled && s->poll_hits % 32)
			continue;
		/*
		 * Arm the CQs before sleeping. A CQ still armed from an earlier
		 * turn, its channel quiet since (a wake-up for the workers'
		 * results only), is left as it is: anything new on it signals
		 * its channel. That saves a read and an ioctl a wake-up.
		 */
		if (!polled) {
			/*
			 * The connection event queue on its own: a completion
			 * found by the CQs' trywait says nothing about it, and
			 * reading it for nothing costs an rdma_cm system call.
			 */
			if (fi_trywait(s->s->fabric, &eqfid, 1) != FI_SUCCESS) {
				s->eq_ready = 1;
				continue;
			}
			if (!s->rx_armed)
				fids[nfids++] = &s->rxcq->fid;
			if (tx_watch(s, tx_awaited(s))) {
				s->failed = 1;
				break;
			}
			if (s->tx_watched && !s->tx_armed)
				fids[nfids++] = &s->txcq->fid;
			if (nfids && fi_trywait(s->s->fabric, fids, nfids) != FI_SUCCESS)
				continue;
			s->rx_armed = 1;
			s->tx_armed = s->tx_watched;
		}
		idle_ms = idle_sweep(s);
		n = epoll_wait(s->epfd, ev, 8, polled ? 0 : draining || retire_by ? 100 : idle_ms);
		if (n < 0 && errno != EINTR) {
			perror("orfs-server: epoll_wait");
			s->failed = 1;
			break;
		}
		for (i = 0; i < n; i++) {
			if (ev[i].data.fd == s->eqfd) {
				s->eq_ready = 1;
			} else if (ev[i].data.fd == s->rxcqfd) {
				s->rx_armed = 0;
			} else if (ev[i].data.fd == s->txcqfd) {
				s->tx_armed = 0;
			} else if (ev[i].data.fd == s->box.efd) {
				eng_on_jobs(s);
				if (s->s->cfg.poll_us)
					s->last_busy = now_us();
			} else if (ev[i].data.fd == s->mailfd) {
				take_mail(s);
			}
		}
	}
}

static void *shard_main(void *arg)
{
	struct shard *sh = arg;
	int ret;

	/* This thread posts: it must keep its credentials (fsvc_cred_fix()). */
	ret = fsvc_cred_fix();
	if (ret && !sh->id)
		srv_log("file service: every request goes to a worker: getgroups: %s",
			strerror(ret));
	shard_loop(sh);
	sh->ended = 1;
	wake(sh->s->wakefd);
	return NULL;
}

/* Tell every shard to drain (STOP 0) or to end now (STOP 1). */
static void order_shards(struct srv *s, int stop)
{
	int i;

	for (i = 0; i < s->nshards; i++) {
		if (stop)
			s->shards[i].stop = 1;
		else
			s->shards[i].stopping = 1;
		mail_wake(&s->shards[i]);
	}
}

/*
 * SIGUSR1: a status report in the log: the server's line here, then each
 * progress thread's, written by the thread itself (it owns its connections).
 */
static void srv_status(struct srv *s)
{
	char gone[48] = "";
	int i, nex = 0, away = 0, npeers;
	unsigned long long peer_refused, locks_refused, hold_refused, replay_own;

	pthread_mutex_lock(&s->lock);
	for (i = 0; i < SRV_MAX_EXPORTS; i++)
		nex += s->ex[i].used && !s->ex[i].removed;
	npeers = s->npeers;
	peer_refused = s->peer_refused;
	pthread_mutex_unlock(&s->lock);
	pthread_mutex_lock(&s->locks.mu);
	locks_refused = s->locks.refused;
	hold_refused = s->locks.hold_refused;
	pthread_mutex_unlock(&s->locks.mu);
	pthread_mutex_lock(&s->replay.lock);
	replay_own = s->replay.host_reuses;
	pthread_mutex_unlock(&s->replay.lock);
	for (i = 0; i < s->nshards; i++)
		away += s->shards[i].retiring || s->shards[i].retired;
	if (away)
		snprintf(gone, sizeof(gone), " (%d with their device removed)", away);
	srv_log("status: %d connections, %d exports and volumes, %d progress threads%s, %u workers%s",
		atomic_load(&s->nconns), nex, s->nshards, gone, s->nthreads,
		s->stopping ? ", stopping" : "");
	srv_log("status: %d hosts connected (at most %u connections each), %llu connections refused by a host's bound, %llu closed after %u s of silence, %llu lock or session requests refused by a bound, %llu lock waiters not held (a host's share of holds), %llu replay answers a host at its share replaced with its own",
		npeers, s->cfg.peer_conns, peer_refused, atomic_load(&s->idle_closed),
		atomic_load(&s->idle_secs), locks_refused, hold_refused, replay_own);
	atomic_fetch_add(&s->status_gen, 1);
	for (i = 0; i < s->nshards; i++)
		mail_wake(&s->shards[i]);
}

/* A retired shard as new, but for what it is and its counters, to open again. */
static void shard_reset(struct shard *sh)
{
	struct shard keep = *sh;

	memset(sh, 0, sizeof(*sh));
	sh->s = keep.s;
	sh->id = keep.id;
	sh->dev = keep.dev;
	sh->buffer_waits = keep.buffer_waits;
	sh->jobs_now = keep.jobs_now;
	sh->names_now = keep.names_now;
	sh->poll_hits = keep.poll_hits;
	/* Nothing to catch up on: reports and allow lists before it came back. */
	sh->status_seen = atomic_load(&sh->s->status_gen);
	sh->allow_seen = atomic_load(&sh->s->allow_gen);
}

/* Main: undo dev_reopen() for device D: threads, listeners, queues, domain. */
static void dev_unopen(struct srv *s, int d)
{
	int i;

	for (i = 0; i < s->nshards; i++) {
		struct shard *sh = &s->shards[i];

		if (sh->dev != d)
			continue;
		if (sh->started) {
			sh->stop = 1;
			mail_wake(sh);
			pthread_join(sh->thread, NULL);
			sh->started = 0;
		}
		shard_close(sh);
		sh->ended = 1;
		sh->retired = 1;
	}
	dev_close(s, d);
}

/*
 * Main: device D was released and has gone; is it back? When each of its
 * listen addresses is on one RDMA device again (the same, or one that
 * replaced it, but not one the server serves already), the server opens
 * it as at start: a domain, its progress threads with their part of the
 * pool, its listeners. Returns 0 when it serves again; else -1, with
 * nothing of it left open.
 */
static int dev_reopen(struct srv *s, int d)
{
	struct fi_info *info[CFG_MAX_LISTEN] = { NULL };
	struct fi_info *first = NULL, *own = NULL;
	struct srv_dev *dv = &s->dev[d];
	int i, other, ret = -1;

	for (i = 0; i < s->cfg.nlisten; i++) {
		if (listen_dev(s, i) != d)
			continue;
		if (listen_getinfo(s, i, config_listen_port(&s->cfg, i), &info[i]))
			goto out;
		if (!first)
			first = info[i];
		other = srv_dev_find(s, info[i]->domain_attr->name);
		if (strcmp(info[i]->domain_attr->name, first->domain_attr->name) ||
		    (other >= 0 && other != d))
			goto out;
	}
	/* A device served through any address only comes back by its name. */
	if (!first && s->anyinfo && !any_getinfo(s, &own))
		for (first = own; first; first = first->next)
			if (!strcmp(first->domain_attr->name, dv->info->domain_attr->name))
				break;
	if (!first)
		goto out;
	ret = fi_domain(s->fabric, first, &dv->domain, NULL);
	if (ret) {
		/* Through any address, a device is listed before it can be opened. */
		if (!own)
			fab_err("opening an RDMA device again", ret);
		ret = -1;
		goto out;
	}
	/* The addresses' new descriptions: their device's name may be new. */
	for (i = 0; i < s->cfg.nlisten; i++) {
		if (!info[i])
			continue;
		fi_freeinfo(s->linfo[i]);
		s->linfo[i] = info[i];
		info[i] = NULL;
	}
	dv->info = first;
	if (own) {
		if (dv->own)
			fi_freeinfo(dv->own);
		dv->own = own;
		own = NULL;
	}
	ret = -1;
	for (i = 0; i < s->nshards; i++) {
		if (s->shards[i].dev != d)
			continue;
		shard_reset(&s->shards[i]);
		if (shard_open(&s->shards[i], shard_chunks(s, i)))
			goto undo;
	}
	for (i = 0; i < s->cfg.nlisten; i++) {
		int err;

		if (listen_dev(s, i) != d)
			continue;
		err = fi_passive_ep(s->fabric, s->linfo[i], &s->pep[i], NULL);
		if (err) {
			s->pep[i] = NULL;
		} else {
			err = fi_pep_bind(s->pep[i], &s->eq->fid, 0);
			if (!err)
				err = fi_listen(s->pep[i]);
		}
		if (err) {
			fab_err("listening again", err);
			goto undo;
		}
	}
	for (i = 0; i < s->nshards; i++) {
		struct shard *sh = &s->shards[i];
		int err;

		if (sh->dev != d)
			continue;
		err = pthread_create(&sh->thread, NULL, shard_main, sh);
		if (err) {
			srv_log("starting a progress thread: %s", strerror(err));
			goto undo;
		}
		sh->started = 1;
	}
	dv->lost = 0;
	dv->released = 0;
	srv_log("RDMA device %s is back: serving on it again", dv->info->domain_attr->name);
	return 0;
undo:
	dev_unopen(s, d);
out:
	for (i = 0; i < s->cfg.nlisten; i++)
		if (info[i])
			fi_freeinfo(info[i]);
	if (own)
		fi_freeinfo(own);
	return ret;
}

/*
 * Main: each released device, until it is back. Once a second, its end
 * as librdmacm sees it (dev_listed(), for at most DEV_FORGET_SECONDS);
 * every DEV_RETRY_SECONDS, a try to serve on it again (the removed
 * instance cannot be taken: the RDMA CM binds no address to it now).
 * Listening on any address, the host's devices are watched too
 * (any_watch()). Returns the main thread's epoll time-out: a second while
 * a device is watched, else none.
 */
static int dev_watch(struct srv *s)
{
	time_t now = time(NULL);
	int d, timeout = -1;

	if (s->anyinfo && !s->stop) {
		any_watch(s);
		timeout = 1000;
	}

	for (d = 0; d < s->ndev; d++) {
		struct srv_dev *dv = &s->dev[d];
		const char *name = dv->info->domain_attr->name;

		if (!dv->released || s->stop)
			continue;
		timeout = 1000;
		if (dv->forget_by) {
			int listed = dev_listed(name);

			if (listed < 0) {
				/* librdmacm forgets a device only while it lists others. */
				srv_log("no RDMA device is left on this host: stopping, so that the removal of %s can end",
					name);
				s->stop = 1;
				continue;
			}
			if (!listed) {
				srv_log("RDMA device %s is gone: the server holds nothing of it",
					name);
				dv->forget_by = 0;
			} else if (now >= dv->forget_by) {
				srv_log("RDMA device %s is still listed %d s after its removal",
					name, DEV_FORGET_SECONDS);
				dv->forget_by = 0;
			}
		}
		if (now >= dv->retry_at && !s->stopping) {
			dv->retry_at = now + DEV_RETRY_SECONDS;
			dev_reopen(s, d);
		}
	}
	return timeout;
}

/*
 * Main: join the threads that retired, close what they had, and release
 * each device whose threads all did. A thread that failed while retiring
 * keeps its resources (and so its device) until the server ends: a job of
 * its connections may still be at a worker.
 */
static void reap_retired(struct srv *s)
{
	int i, j, left;

	for (i = 0; i < s->nshards; i++) {
		struct shard *sh = &s->shards[i];

		if (!sh->retiring || !sh->ended || sh->retired)
			continue;
		pthread_join(sh->thread, NULL);
		sh->started = 0;
		sh->retired = 1;
		if (sh->failed) {
			srv_log("progress thread %d failed while retiring: %s stays open until the server stops",
				sh->id, s->dev[sh->dev].info->domain_attr->name);
			continue;
		}
		shard_close(sh);
		for (j = 0, left = 0; j < s->nshards; j++)
			left += s->shards[j].dev == sh->dev && !s->shards[j].closed;
		if (!left)
			dev_release(s, sh->dev);
	}
}

/*
 * The main thread: connection requests, signals, the shards' ends, and
 * the devices removed and back. Returns 0 after a stop signal, -1 if a
 * shard failed.
 */
static int main_loop(struct srv *s)
{
	struct fid *eqfid = &s->eq->fid;
	struct epoll_event ev[4];
	int ended, live, failed = 0, n, i, j;

	for (;;) {
		reap_retired(s);
		ended = live = 0;
		for (i = 0; i < s->nshards; i++) {
			const struct shard *sh = &s->shards[i];

			if (sh->retiring || sh->retired)
				continue;	/* their device went: dev_watch() */
			live++;
			ended += sh->ended;
			failed |= sh->failed;
		}
		/* Whoever set stop said why; the exit status says it failed. */
		if (s->stop)
			failed = 1;
		/* With no device left, the server waits for one to come back. */
		if (ended == live && (live || s->stopping || s->stop))
			break;
		if (failed && !s->stopping) {
			if (!s->stop)
				srv_log("a thread failed: stopping");
			s->stopping = 1;
			order_shards(s, 1);
		}
		if (!s->stop && fi_trywait(s->fabric, &eqfid, 1) != FI_SUCCESS) {
			handle_listen(s);
			continue;
		}
		n = epoll_wait(s->epfd, ev, 4, dev_watch(s));
		if (n < 0 && errno != EINTR) {
			perror("orfs-server: epoll_wait: stopping");
			s->stop = 1;
			continue;
		}
		for (i = 0; i < n; i++) {
			if (ev[i].data.fd == s->wakefd) {
				uint64_t v;

				if (read(s->wakefd, &v, sizeof(v)) < 0 && errno != EAGAIN)
					srv_log("reading an eventfd: %s", strerror(errno));
			} else if (ev[i].data.fd == s->eqfd) {
				if (!s->stop)
					handle_listen(s);
			} else if (ev[i].data.fd == s->sigfd) {
				struct signalfd_siginfo si;
				int active = 0;

				if (read(s->sigfd, &si, sizeof(si)) != (ssize_t)sizeof(si))
					continue;
				if (si.ssi_signo == SIGHUP) {
					pthread_mutex_lock(&s->lock);
					srv_reload(s);
					pthread_mutex_unlock(&s->lock);
					continue;
				}
				if (si.ssi_signo == SIGUSR1) {
					srv_status(s);
					continue;
				}
				if (s->stopping) {
					srv_log("second signal: stopping now");
					order_shards(s, 1);
					continue;
				}
				s->stopping = 1;
				for (j = 0; j < s->nshards; j++)
					active += s->shards[j].active;
				srv_log("signal %u: draining %d requests on %d connections",
					si.ssi_signo, active, (int)s->nconns);
				order_shards(s, 0);
			}
		}
	}
	for (i = 0; i < s->nshards; i++) {
		if (!s->shards[i].started)
			continue;
		pthread_join(s->shards[i].thread, NULL);
		s->shards[i].started = 0;
	}
	/* Whatever ended the threads, what the volumes took goes to stable storage. */
	for (i = 0; i < SRV_MAX_EXPORTS; i++)
		if (s->ex[i].used && s->ex[i].cfg.service == KNET_SVC_BLOCK &&
		    !s->ex[i].cfg.read_only && block_flush(&s->ex[i].vol))
			srv_log("flushing volume '%s' failed", s->ex[i].cfg.name);
	return failed ? -1 : 0;
}

/* "A port P, B port Q": the addresses of C, for the log. */
static const char *listen_str(const struct config *c, char *buf, size_t len)
{
	size_t n = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; i < c->nlisten; i++)
		n = appendf(buf, len, n, "%s%s port %s", i ? ", " : "", c->listen[i].addr,
			    config_listen_port(c, i));
	return buf;
}

/*
 * -n: would this configuration start? Each address must be on an RDMA
 * device (its port is not checked: the server being checked for may hold
 * it), the state directory usable, and each export and volume must open
 * as at a start; they are closed again, nothing is served, listened on or
 * made. Each problem is logged. Returns how many there are.
 */
static int check_config(struct srv *s)
{
	struct fi_info *info[CFG_MAX_LISTEN] = { NULL }, *any = NULL;
	int i, nfile = 0, nblock = 0, bad = 0, ret;
	char where[CFG_MAX_LISTEN * 96], devs[CFG_MAX_LISTEN * 64];

	if (!s->cfg.nallow && !s->insecure) {
		srv_log("no allow list, and no --insecure: a start would refuse to serve every host");
		bad++;
	}
	for (i = 0; i < s->cfg.nlisten; i++) {
		/*
		 * Any address: the devices. libfabric takes the IPv6 one
		 * without a port only as a listener's, with its port.
		 */
		if (config_listen_any(&s->cfg, i)) {
			bad += !!any_devices(s, i, &any);
			continue;
		}
		/* Not the port: the server being checked for may hold it. */
		ret = listen_getinfo(s, i, NULL, &info[i]);
		if (ret) {
			srv_log("listen %s: no RDMA device has that address (%s)",
				s->cfg.listen[i].addr, fi_strerror(-ret));
			bad++;
		}
	}
	for (i = 0; i < s->cfg.nex; i++) {
		const struct cfg_export *e = &s->cfg.ex[i];

		if (!i && load_key(s, s->cfg.state_dir, 0))
			bad++;
		nfile += e->service == KNET_SVC_FILE;
		nblock += e->service == KNET_SVC_BLOCK;
		if (export_add(s, e))
			bad++;
	}
	for (i = 0; i < SRV_MAX_EXPORTS; i++)
		if (s->ex[i].used)
			export_release(s, &s->ex[i]);
	if (bad)
		srv_log("configuration checked: %d problem%s", bad, bad == 1 ? "" : "s");
	else
		srv_log("configuration checked: listen %s on %s, %d exports, %d volumes, %d allowed networks%s",
			listen_str(&s->cfg, where, sizeof(where)),
			dev_str(&s->cfg, info, any, devs, sizeof(devs)),
			nfile, nblock, s->cfg.nallow, s->cfg.nallow ? "" : " (every client)");
	for (i = 0; i < s->cfg.nlisten; i++)
		if (info[i])
			fi_freeinfo(info[i]);
	if (any)
		fi_freeinfo(any);
	return bad;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: orfs-server [-c FILE] [-a ADDRESS] [-p PORT] [-e NAME=DIR[,OPT]]... [-b NAME=FILE[,OPT]]...\n"
		"                   [-A NETWORK]... [-m POOL_MIB] [-C CHUNK_KIB] [-t THREADS] [-T PROGRESS]\n"
		"                   [-B USEC] [-L LEASE] [-G GRACE] [-s DIR] [-P PROVIDER] [-v] [-n] [-F]\n"
		"                   [--insecure]\n"
		"  -c  configuration file (see orfs-server(8)); re-read on SIGHUP\n"
		"  -a  address of the RDMA interface to listen on (repeat it for several\n"
		"      addresses: IPv4 and IPv6, VLANs, partitions, devices); 0.0.0.0 or ::\n"
		"      listens on every RDMA device\n"
		"  -p  port of every address (default %d)\n"
		"  -e  export directory DIR as file-service name NAME\n"
		"  -b  export file or block device FILE as volume NAME\n"
		"      OPT: ro, root_squash (exports: the default), no_root_squash, all_squash,\n"
		"      anonuid=N, anongid=N, subtree_check (every handle's file checked to be\n"
		"      beneath the export), prio=high|normal|low (share of buffers 4:2:1),\n"
		"      allow=NETWORK (only these clients; up to 16)\n"
		"  -A  allow clients from NETWORK (ADDRESS[/BITS][,secret=FILE]: they must then\n"
		"      prove the secret in FILE); without any, only with --insecure\n"
		"  -m  data buffer pool in MiB (default 64): the bound on data in flight\n"
		"  -C  buffer chunk in KiB (default 256)\n"
		"  -t  I/O worker threads (default 4)\n"
		"  -T  progress threads (default 0: one a CPU, at most %d): connections are\n"
		"      spread over them, each with its own share of the pool\n"
		"  -B  busy-poll for completions this many microseconds after the last work\n"
		"      before sleeping (default %d; 0 never polls)\n"
		"  -L  seconds a client's file locks outlive its connections (default %d)\n"
		"  -G  seconds after a start in which clients take back their locks and\n"
		"      nobody takes a new one (default: the lease)\n"
		"  -s  state directory, for the file handle key (default /var/lib/orfs-server)\n"
		"  -P  libfabric provider (default verbs)\n"
		"  -v  log failed operations too\n"
		"  -n  check the configuration and exit: 0 if it would start, 1 with its\n"
		"      problems, 2 if it does not parse\n"
		"  -F  test aid: lie to clients as ORFS_SERVER_FAULT says (never in production)\n"
		"  --insecure  serve without an allow list: any host, as any user (without\n"
		"      it, a server with no allow line refuses to start)\n",
		KNET_DEFAULT_PORT, CFG_AUTO_PROGRESS, CFG_POLL_US,
		LOCKS_LEASE);
}

int main(int argc, char **argv)
{
	static struct srv s;
	char err[512], line[CFG_SECRET_PATH + 128];
	const char *opts = "c:a:p:e:b:A:m:C:t:T:B:L:G:s:P:vnFh";
	static const struct option longopts[] = {
		{ "insecure", no_argument, NULL, 'I' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long jobs_now = 0, names_now = 0, poll_hits = 0;
	unsigned long long buffer_waits = 0;
	int opt, i, ret, check = 0, a_given = 0, p_given = 0, faults = 0;
	char where[CFG_MAX_LISTEN * 96], devs[CFG_MAX_LISTEN * 64];

	/*
	 * After a device's removal with its contexts disassociated (mlx5),
	 * the kernel has freed the server's objects on it and answers their
	 * destroy with EIO: libibverbs is to take that as done, else it keeps
	 * their memory. An object is destroyed only after the thread that
	 * waits on its completion channel ended, as that setting requires.
	 */
	if (setenv("RDMAV_ALLOW_DISASSOC_DESTROY", "1", 0))
		perror("orfs-server: setenv RDMAV_ALLOW_DISASSOC_DESTROY");
	/*
	 * No registration cache: libfabric's verbs provider registers what
	 * it caches with every remote access (a client that learns a key
	 * could write into the server's buffers), and keeps a region
	 * registered after fi_close(), so a READ sink's key (see
	 * shard_init()) would outlive its READ.
	 */
	if (setenv("FI_MR_CACHE_MAX_COUNT", "0", 1))
		perror("orfs-server: setenv FI_MR_CACHE_MAX_COUNT");
	s.prov = "verbs";
	pthread_mutex_init(&s.lock, NULL);
	fdc_init(&s.fdc);
	config_init(&s.cfg);
	config_init(&s.cmdline);
	/* The file first, so that options given with it override it. */
	while ((opt = getopt_long(argc, argv, opts, longopts, NULL)) != -1) {
		if (opt == 'c') {
			s.cfg_path = optarg;
		} else if (opt == 'h') {
			usage(stdout);
			return 0;
		} else if (opt == '?') {
			goto fail_usage;
		}
	}
	if (s.cfg_path && config_parse_file(&s.cfg, s.cfg_path, err, sizeof(err))) {
		fprintf(stderr, "orfs-server: %s\n", err);
		return 2;
	}
	optind = 1;
	while ((opt = getopt_long(argc, argv, opts, longopts, NULL)) != -1) {
		err[0] = '\0';
		switch (opt) {
		case 'a':
			/* -a replaces the file's listen lines; several -a listen on each. */
			if (!a_given++)
				s.cfg.nlisten = 0;
			if (config_add_listen(&s.cfg, optarg, NULL, err, sizeof(err)))
				goto fail_msg;
			break;
		case 'p':
			if (strlen(optarg) >= sizeof(s.cfg.port)) {
				snprintf(err, sizeof(err), "-p: '%s' is not a port", optarg);
				goto fail_msg;
			}
			strcpy(s.cfg.port, optarg);
			p_given = 1;
			break;
		case 'm':
		case 'C':
		case 't':
		case 'T':
		case 'B':
		case 'L':
		case 'G':
			snprintf(line, sizeof(line), "%s %s",
				 opt == 'm' ? "pool" : opt == 'C' ? "chunk" :
				 opt == 't' ? "threads" : opt == 'T' ? "progress" :
				 opt == 'L' ? "lease" : opt == 'G' ? "grace" : "poll", optarg);
			if (config_parse_line(&s.cfg, line, err, sizeof(err)))
				goto fail_msg;
			break;
		case 'e':
		case 'b':
			if (config_add_spec(&s.cfg, opt == 'e' ? KNET_SVC_FILE : KNET_SVC_BLOCK, optarg,
					    err, sizeof(err)) ||
			    config_add_spec(&s.cmdline, opt == 'e' ? KNET_SVC_FILE : KNET_SVC_BLOCK,
					    optarg, err, sizeof(err)))
				goto fail_msg;
			break;
		case 'A':
			/* NETWORK[,secret=FILE]: the file's "allow NETWORK secret=FILE". */
			snprintf(line, sizeof(line), "allow %s", optarg);
			for (i = 0; line[i]; i++)
				if (line[i] == ',')
					line[i] = ' ';
			if (config_parse_line(&s.cfg, line, err, sizeof(err)) ||
			    config_parse_line(&s.cmdline, line, err, sizeof(err)))
				goto fail_msg;
			break;
		case 's':
			if (strlen(optarg) >= sizeof(s.cfg.state_dir)) {
				snprintf(err, sizeof(err), "-s: path too long");
				goto fail_msg;
			}
			strcpy(s.cfg.state_dir, optarg);
			break;
		case 'P':
			s.prov = optarg;
			break;
		case 'v':
			s.verbose = 1;
			break;
		case 'n':
			check = 1;
			break;
		case 'F':
			faults = 1;
			break;
		case 'I':
			s.insecure = 1;
			break;
		case 'c':
			break;
		default:
			goto fail_usage;
		}
	}
	if (optind != argc)
		goto fail_usage;
	/* -p is the port of every address, the file's too. */
	for (i = 0; p_given && i < s.cfg.nlisten; i++)
		s.cfg.listen[i].port[0] = '\0';
	if (!s.cfg.nlisten) {
		fprintf(stderr, "orfs-server: no address to listen on (-a, or 'listen' in the file)\n");
		goto fail_usage;
	}
	s.chunk_size = (size_t)s.cfg.chunk_kib << 10;
	s.nchunks = (uint32_t)(((size_t)s.cfg.pool_mib << 20) / s.chunk_size);
	s.nthreads = (int)s.cfg.threads;
	s.nshards = (int)s.cfg.progress;
	if (!s.nshards) {
		long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

		s.nshards = ncpu < 1 ? 1 : ncpu > CFG_AUTO_PROGRESS ? CFG_AUTO_PROGRESS : (int)ncpu;
		if ((uint32_t)s.nshards > s.nchunks)
			s.nshards = s.nchunks ? (int)s.nchunks : 1;	/* a chunk each at least */
	}
	if (s.nchunks < (uint32_t)s.nshards) {
		fprintf(stderr, "orfs-server: the pool must hold at least one chunk per progress thread\n");
		goto fail_usage;
	}
	/* Open to any host only when asked to be, in so many words (-n counts it a problem). */
	if (!s.cfg.nallow && !s.insecure && !check) {
		fprintf(stderr, "orfs-server: no allow list: any host that reaches the server could connect, "
			"as any user; give allow lines (with secret= to authenticate them), or --insecure "
			"to serve every host\n");
		srv_close(&s);
		return 2;
	}
	if (check) {
		ret = check_config(&s) ? 1 : 0;
		srv_close(&s);
		return ret;
	}
	umask(0);	/* clients send the modes they mean, their umask applied */
	/* Lying to clients is a test aid: only when asked for on the command line. */
	if (getenv("ORFS_SERVER_FAULT") && !faults)
		srv_log("ORFS_SERVER_FAULT is ignored: fault injection needs -F");
	if (getenv("ORFS_SERVER_FAULT") && faults) {
		const char *f = getenv("ORFS_SERVER_FAULT");

		static const char *const names[] = {
			[FAULT_TAG] = "tag", [FAULT_INLINE] = "inline", [FAULT_BODY] = "body",
			[FAULT_OPCODE] = "opcode", [FAULT_FS_NAME] = "fs-name",
			[FAULT_FS_COUNT] = "fs-count", [FAULT_FS_ATTR] = "fs-attr",
			[FAULT_FS_LOOP] = "fs-loop", [FAULT_FS_RANDOM] = "fs-random",
			[FAULT_FS_BUSY] = "fs-busy", [FAULT_FS_STATUS] = "fs-status",
			[FAULT_BLOCK_RANDOM] = "block-random",
			[FAULT_BLOCK_INFO] = "block-info", [FAULT_LATE_WRITE] = "late-write",
			[FAULT_FS_MODE] = "fs-mode", [FAULT_FS_OWNER] = "fs-owner",
			[FAULT_NO_SYNC] = "no-sync",
		};
		const char *seed = getenv("ORFS_SERVER_FAULT_SEED");

		for (i = FAULT_TAG; i < (int)(sizeof(names) / sizeof(names[0])); i++)
			if (!strcmp(f, names[i]))
				s.fault = i;
		if (!s.fault) {
			fprintf(stderr, "orfs-server: ORFS_SERVER_FAULT=%s: no such fault\n", f);
			return 2;
		}
		s.fault_seed = seed ? strtoull(seed, NULL, 0) : 0;
		if (!s.fault_seed)
			s.fault_seed = 1;	/* xorshift's one state that never moves */
		if (s.fault == FAULT_FS_STATUS) {
			const char *st = getenv("ORFS_SERVER_FAULT_STATUS");

			if (!st || config_parse_uint(st, 1, UINT32_MAX, &s.fault_status)) {
				fprintf(stderr, "orfs-server: fs-status needs ORFS_SERVER_FAULT_STATUS, 1 to 4294967295\n");
				return 2;
			}
		}
		srv_log("ORFS_SERVER_FAULT=%s: replies will lie (a test aid; seed %llu)", f,
			(unsigned long long)s.fault_seed);
	}
	replay_init(&s.replay);
	locks_init(&s.locks, s.cfg.lease);
	atomic_store(&s.idle_secs, s.cfg.idle_timeout);
	/* A waiter's LOCK held takes a worker: half of them at most. */
	locks_hold_max(&s.locks, (uint32_t)s.nthreads / 2);
	{
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		s.boot = ((uint64_t)ts.tv_sec << 20) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 40);
		fsvc_verf_init(&s.verf, s.boot);
	}
	/* The key seals file handles and names volumes (volume_uuid()). */
	if (s.cfg.nex && load_key(&s, s.cfg.state_dir, 1)) {
		srv_close(&s);
		return 2;
	}
	for (i = 0; i < s.cfg.nex; i++) {
		if (export_add(&s, &s.cfg.ex[i])) {
			srv_close(&s);
			return 2;
		}
	}
	if (srv_open(&s)) {
		srv_close(&s);
		return 1;
	}
	/* Clients can reclaim from now on (opening can take seconds). */
	locks_grace(&s.locks, s.cfg.grace == CFG_GRACE_LEASE ? s.cfg.lease : s.cfg.grace,
		    (time_t)(now_us() / 1000000));
	srv_log("listening on %s (%s): %d exports and volumes, pool %lu MiB in %u chunks, %d workers, %d progress threads, poll %u us",
		listen_str(&s.cfg, where, sizeof(where)), dev_str(&s.cfg, s.linfo, s.anyinfo, devs, sizeof(devs)), s.cfg.nex,
		(unsigned long)(s.chunk_size * s.nchunks >> 20), s.nchunks, s.nthreads, s.nshards,
		s.cfg.poll_us);
	if (!s.cfg.nallow)
		srv_log("no allow list (--insecure): any client that reaches %s may connect, as any user",
			listen_str(&s.cfg, where, sizeof(where)));
	for (i = 0; i < s.nshards; i++) {
		ret = pthread_create(&s.shards[i].thread, NULL, shard_main, &s.shards[i]);
		if (ret) {
			srv_log("starting a progress thread: %s", strerror(ret));
			srv_close(&s);
			return 1;
		}
		s.shards[i].started = 1;
	}
	ret = main_loop(&s);
	for (i = 0; i < s.nshards; i++) {
		buffer_waits += s.shards[i].buffer_waits;
		jobs_now += s.shards[i].jobs_now;
		names_now += s.shards[i].names_now;
		poll_hits += s.shards[i].poll_hits;
	}
	srv_close(&s);
	locks_destroy(&s.locks);
	srv_log("stopped (%llu waits for a buffer, %lu jobs done without a worker (%lu file service requests), %lu polls found work, %lu open files used again, %lu directories used again)",
		(unsigned long long)buffer_waits, jobs_now, names_now, poll_hits,
		s.fdc.hits, s.fdc.dir_hits);
	return ret ? 1 : 0;

fail_msg:
	fprintf(stderr, "orfs-server: %s\n", err);
fail_usage:
	usage(stderr);
	srv_close(&s);
	return 2;
}

// SPDX-License-Identifier: GPL-2.0-only
/*
 * orfs-server: the userspace end of every ORFS and MXBD connection.
 *
 * This first version accepts and rejects connections by the knet connect
 * protocol, keeps the credit discipline (a receive posted for every credit
 * granted, one credit back with every reply) and answers requests through
 * dispatch_message(). One event loop waits on the connection event queue, a
 * completion queue shared by all connections and a signalfd.
 */
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/dispatch.h"
#include "server/fab.h"
#include "server/proto.h"

#define SRV_MSG_SIZE	8192	/* largest message a client may send us */
#define SRV_CREDITS	16	/* receives posted per connection */
#define SRV_TX		(2 * SRV_CREDITS)
#define SRV_MAX_CONNS	256
#define SRV_CQ_SIZE	(SRV_MAX_CONNS * (SRV_CREDITS + SRV_TX))
#define SRV_MAX_EXPORTS	64

struct conn;

/* One posted operation; the fi_context must come first (FI_CONTEXT mode). */
struct slot {
	struct fi_context	ctx;
	struct conn		*c;
	int			idx;
	int			send;
};

struct conn {
	struct srv		*s;
	struct fid_ep		*ep;
	struct fid_mr		*mr;
	char			*buf;		/* SRV_CREDITS rx then SRV_TX tx buffers */
	struct slot		rx[SRV_CREDITS];
	struct slot		tx[SRV_TX];
	int			tx_busy[SRV_TX];
	int			pending;	/* posted operations not yet completed */
	int			connected;
	int			closing;
	int			cm_done;	/* the CM reported its last event */
	char			peer[INET6_ADDRSTRLEN + 8];
	struct conn_params	p;
	struct dispatch_stats	st;
	struct conn		*next;
};

struct export {
	char		name[KNET_NAME_MAX + 1];
	const char	*path;
	int		service;
};

struct srv {
	const char		*addr;
	const char		*port;
	const char		*prov;
	int			verbose;
	struct export		ex[SRV_MAX_EXPORTS];
	int			nex;
	struct fi_info		*info;
	struct fid_fabric	*fabric;
	struct fid_eq		*eq;
	struct fid_pep		*pep;
	struct fid_domain	*domain;
	struct fid_cq		*cq;
	int			epfd, sigfd, eqfd, cqfd;
	int			stop;
	struct conn		*conns;
	int			nconns;
};

static void logmsg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logmsg(const char *fmt, ...)
{
	va_list ap;

	fputs("orfs-server: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static char *rx_buf(struct conn *c, int i)
{
	return c->buf + (size_t)i * SRV_MSG_SIZE;
}

static char *tx_buf(struct conn *c, int i)
{
	return c->buf + (size_t)(SRV_CREDITS + i) * SRV_MSG_SIZE;
}

static const struct export *find_export(const struct srv *s, const char *name, int service)
{
	int i;

	for (i = 0; i < s->nex; i++)
		if (s->ex[i].service == service && !strcmp(s->ex[i].name, name))
			return &s->ex[i];
	return NULL;
}

static int post_recv(struct conn *c, int i)
{
	ssize_t ret = fi_recv(c->ep, rx_buf(c, i), SRV_MSG_SIZE, fi_mr_desc(c->mr), 0,
			      &c->rx[i].ctx);

	if (ret)
		return fab_err("fi_recv", (int)ret);
	c->pending++;
	return 0;
}

static void conn_free(struct conn *c)
{
	struct conn **pp;

	for (pp = &c->s->conns; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			c->s->nconns--;
			break;
		}
	}
	if (c->ep)
		fi_close(&c->ep->fid);
	if (c->mr)
		fi_close(&c->mr->fid);
	free(c->buf);
	free(c);
}

/*
 * Start closing: the provider flushes every posted operation into the CQ
 * and the CM reports a last event (FI_SHUTDOWN or an error). Both refer to
 * the connection, so it is freed only when both have come back.
 */
static void conn_close(struct conn *c, const char *why)
{
	if (!c->closing) {
		logmsg("%s: %s (%llu requests, %llu malformed)", c->peer, why,
		       (unsigned long long)c->st.requests,
		       (unsigned long long)c->st.malformed);
		c->closing = 1;
		fi_shutdown(c->ep, 0);
	}
	if (!c->pending && c->cm_done)
		conn_free(c);
}

static void reject(struct srv *s, struct fi_info *info, int reason, const char *what)
{
	struct knet_cm_rej rej = {
		.version = htole16(KNET_PROTO_VERSION),
		.reason = htole16((uint16_t)reason),
	};
	int ret;

	logmsg("rejecting a connection: %s%s", proto_reject_str(reason), what ? what : "");
	ret = fi_reject(s->pep, info->handle, &rej, sizeof(rej));
	if (ret)
		fab_err("fi_reject", ret);
}

static void on_connreq(struct srv *s, struct fi_eq_cm_entry *e, size_t datalen)
{
	struct conn_params p;
	struct knet_cm_rep rep;
	const struct export *ex;
	struct conn *c = NULL;
	char detail[96];
	size_t size;
	int reason, i, ret;

	reason = proto_parse_cm_req(e->data, datalen, &p);
	if (reason) {
		reject(s, e->info, reason, NULL);
		goto out;
	}
	ex = find_export(s, p.name, p.service);
	if (!ex) {
		snprintf(detail, sizeof(detail), " ('%s', service %u)", p.name, p.service);
		reject(s, e->info, KNET_REJ_NOENT, detail);
		goto out;
	}
	if (s->nconns >= SRV_MAX_CONNS) {
		reject(s, e->info, KNET_REJ_BUSY, NULL);
		goto out;
	}

	c = calloc(1, sizeof(*c));
	size = (size_t)(SRV_CREDITS + SRV_TX) * SRV_MSG_SIZE;
	if (!c || !(c->buf = malloc(size))) {
		logmsg("out of memory for a connection");
		goto fail;
	}
	c->s = s;
	c->p = p;
	snprintf(c->peer, sizeof(c->peer), "client of '%s'", p.name);
	for (i = 0; i < SRV_CREDITS; i++)
		c->rx[i] = (struct slot){ .c = c, .idx = i, .send = 0 };
	for (i = 0; i < SRV_TX; i++)
		c->tx[i] = (struct slot){ .c = c, .idx = i, .send = 1 };

	ret = fi_endpoint(s->domain, e->info, &c->ep, c);
	if (ret) {
		fab_err("fi_endpoint", ret);
		goto fail;
	}
	ret = fi_ep_bind(c->ep, &s->eq->fid, 0);
	if (!ret)
		ret = fi_ep_bind(c->ep, &s->cq->fid, FI_TRANSMIT | FI_RECV);
	if (!ret)
		ret = fi_enable(c->ep);
	if (ret) {
		fab_err("binding a connection", ret);
		goto fail;
	}
	ret = fi_mr_reg(s->domain, c->buf, size, FI_SEND | FI_RECV, 0, 0, 0, &c->mr, NULL);
	if (ret) {
		fab_err("fi_mr_reg", ret);
		goto fail;
	}
	for (i = 0; i < SRV_CREDITS; i++)
		if (post_recv(c, i))
			goto fail;

	memset(&rep, 0, sizeof(rep));
	rep.version = htole16(KNET_PROTO_VERSION);
	rep.credits = htole16(p.recv_depth < SRV_CREDITS ? p.recv_depth : SRV_CREDITS);
	rep.inline_max = htole32(SRV_MSG_SIZE - sizeof(struct knet_hdr) -
				 KNET_MAX_SEGS * sizeof(struct knet_seg));
	rep.max_io = htole32(1U << 20);
	rep.max_segs = htole16(KNET_MAX_SEGS);
	ret = fi_accept(c->ep, &rep, sizeof(rep));
	if (ret) {
		fab_err("fi_accept", ret);
		goto fail;
	}
	c->next = s->conns;
	s->conns = c;
	s->nconns++;
	goto out;

fail:
	reject(s, e->info, KNET_REJ_BUSY, NULL);
	if (c) {
		/* Nothing was accepted: close at once, flushes go with the QP. */
		c->pending = 0;
		c->s = s;
		if (c->ep)
			fi_close(&c->ep->fid);
		c->ep = NULL;
		conn_free(c);
	}
out:
	fi_freeinfo(e->info);
}

static void on_connected(struct conn *c)
{
	struct sockaddr_storage ss;
	size_t len = sizeof(ss);
	char host[INET6_ADDRSTRLEN] = "?";

	c->connected = 1;
	if (!fi_getpeer(c->ep, &ss, &len) && ss.ss_family == AF_INET)
		inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, host, sizeof(host));
	snprintf(c->peer, sizeof(c->peer), "%s", host);
	logmsg("%s connected to %s '%s' (recv_depth %u)", c->peer,
	       c->p.service == KNET_SVC_FILE ? "export" : "volume", c->p.name,
	       c->p.recv_depth);
}

static void handle_eq(struct srv *s)
{
	union {
		struct fi_eq_cm_entry cm;
		char raw[sizeof(struct fi_eq_cm_entry) + 256];
	} ev;
	uint32_t event;
	ssize_t rd;

	for (;;) {
		rd = fi_eq_read(s->eq, &event, &ev, sizeof(ev), 0);
		if (rd == -FI_EAGAIN)
			return;
		if (rd == -FI_EAVAIL) {
			struct fi_eq_err_entry err;

			fab_eq_err(s->eq, "connection event error", &err);
			if (err.fid && err.fid != &s->pep->fid) {
				struct conn *c = err.fid->context;

				c->cm_done = 1;
				conn_close(c, "connection error");
			}
			continue;
		}
		if (rd < 0) {
			fab_err("fi_eq_read", (int)rd);
			s->stop = 1;
			return;
		}
		switch (event) {
		case FI_CONNREQ:
			on_connreq(s, &ev.cm, (size_t)rd - sizeof(ev.cm));
			break;
		case FI_CONNECTED:
			on_connected(ev.cm.fid->context);
			break;
		case FI_SHUTDOWN: {
			struct conn *c = ev.cm.fid->context;

			c->cm_done = 1;
			conn_close(c, "disconnected");
			break;
		}
		default:
			logmsg("unexpected connection event %u", event);
		}
	}
}

static int tx_get(struct conn *c)
{
	int i;

	for (i = 0; i < SRV_TX; i++)
		if (!c->tx_busy[i])
			return i;
	return -1;
}

static void on_recv(struct conn *c, int i, size_t len)
{
	size_t rlen;
	ssize_t ret;
	int t = tx_get(c);

	if (t < 0) {
		conn_close(c, "out of reply buffers");
		return;
	}
	rlen = dispatch_message(rx_buf(c, i), (uint32_t)len, tx_buf(c, t), SRV_MSG_SIZE, 1,
				&c->st);
	if (!rlen) {
		conn_close(c, "unreadable message, dropping the connection");
		return;
	}
	/* The receive goes back before the reply that grants its credit. */
	if (post_recv(c, i)) {
		conn_close(c, "cannot post a receive");
		return;
	}
	ret = fi_send(c->ep, tx_buf(c, t), rlen, fi_mr_desc(c->mr), 0, &c->tx[t].ctx);
	if (ret) {
		fab_err("fi_send", (int)ret);
		conn_close(c, "cannot send a reply");
		return;
	}
	c->tx_busy[t] = 1;
	c->pending++;
}

static void handle_cq(struct srv *s)
{
	struct fi_cq_data_entry ent[16];
	ssize_t n, k;

	for (;;) {
		n = fi_cq_read(s->cq, ent, 16);
		if (n == -FI_EAGAIN)
			return;
		if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry err;
			struct slot *sl;

			memset(&err, 0, sizeof(err));
			if (fi_cq_readerr(s->cq, &err, 0) < 0)
				return;
			sl = err.op_context;
			sl->c->pending--;
			if (sl->send)
				sl->c->tx_busy[sl->idx] = 0;
			if (!sl->c->closing && s->verbose)
				logmsg("%s: operation failed: %s", sl->c->peer, fi_strerror(err.err));
			conn_close(sl->c, "operation failed");
			continue;
		}
		if (n < 0) {
			fab_err("fi_cq_read", (int)n);
			s->stop = 1;
			return;
		}
		for (k = 0; k < n; k++) {
			struct slot *sl = ent[k].op_context;
			struct conn *c = sl->c;

			c->pending--;
			if (sl->send)
				c->tx_busy[sl->idx] = 0;
			if (c->closing)
				conn_close(c, NULL);
			else if (!sl->send)
				on_recv(c, sl->idx, ent[k].len);
		}
	}
}

static int add_export(struct srv *s, const char *arg, int service)
{
	const char *eq = strchr(arg, '=');
	struct export *ex;
	struct stat st;
	size_t len;

	if (!eq) {
		fprintf(stderr, "orfs-server: '%s': expected NAME=PATH\n", arg);
		return -1;
	}
	len = (size_t)(eq - arg);
	if (!proto_name_ok(arg, len)) {
		fprintf(stderr, "orfs-server: '%.*s': names are 1-%d of [A-Za-z0-9._-]\n",
			(int)len, arg, KNET_NAME_MAX);
		return -1;
	}
	if (stat(eq + 1, &st)) {
		fprintf(stderr, "orfs-server: %s: %s\n", eq + 1, strerror(errno));
		return -1;
	}
	if (service == KNET_SVC_FILE && !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "orfs-server: %s: an export must be a directory\n", eq + 1);
		return -1;
	}
	if (s->nex == SRV_MAX_EXPORTS) {
		fprintf(stderr, "orfs-server: more than %d exports and volumes\n", SRV_MAX_EXPORTS);
		return -1;
	}
	ex = &s->ex[s->nex++];
	memcpy(ex->name, arg, len);
	ex->name[len] = '\0';
	ex->path = eq + 1;
	ex->service = service;
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

static int srv_open(struct srv *s)
{
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_FD };
	struct fi_cq_attr cq_attr = {
		.format = FI_CQ_FORMAT_DATA,
		.size = SRV_CQ_SIZE,
		.wait_obj = FI_WAIT_FD,
	};
	struct fi_info *hints = fab_hints(s->prov);
	sigset_t mask;
	int ret;

	if (!hints)
		return -FI_ENOMEM;
	ret = fi_getinfo(FAB_VERSION, s->addr, s->port, FI_SOURCE, hints, &s->info);
	fi_freeinfo(hints);
	if (ret)
		return fab_err("fi_getinfo (is there an RDMA device on that address?)", ret);
	if ((ret = fi_fabric(s->info->fabric_attr, &s->fabric, NULL)) ||
	    (ret = fi_eq_open(s->fabric, &eq_attr, &s->eq, NULL)) ||
	    (ret = fi_domain(s->fabric, s->info, &s->domain, NULL)) ||
	    (ret = fi_cq_open(s->domain, &cq_attr, &s->cq, NULL)) ||
	    (ret = fi_passive_ep(s->fabric, s->info, &s->pep, NULL)) ||
	    (ret = fi_pep_bind(s->pep, &s->eq->fid, 0)) ||
	    (ret = fi_listen(s->pep)))
		return fab_err("setting up the listener", ret);
	if ((ret = fi_control(&s->eq->fid, FI_GETWAIT, &s->eqfd)) ||
	    (ret = fi_control(&s->cq->fid, FI_GETWAIT, &s->cqfd)))
		return fab_err("getting wait objects", ret);

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	if (sigprocmask(SIG_BLOCK, &mask, NULL)) {
		perror("orfs-server: sigprocmask");
		return -1;
	}
	s->sigfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (s->sigfd < 0) {
		perror("orfs-server: signalfd");
		return -1;
	}
	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (s->epfd < 0) {
		perror("orfs-server: epoll_create1");
		return -1;
	}
	if (epoll_add(s->epfd, s->eqfd) || epoll_add(s->epfd, s->cqfd) ||
	    epoll_add(s->epfd, s->sigfd))
		return -1;
	return 0;
}

static void srv_close(struct srv *s)
{
	while (s->conns) {
		s->conns->pending = 0;
		conn_free(s->conns);
	}
	if (s->pep)
		fi_close(&s->pep->fid);
	if (s->cq)
		fi_close(&s->cq->fid);
	if (s->domain)
		fi_close(&s->domain->fid);
	if (s->eq)
		fi_close(&s->eq->fid);
	if (s->fabric)
		fi_close(&s->fabric->fid);
	if (s->info)
		fi_freeinfo(s->info);
	if (s->epfd > 0)
		close(s->epfd);
	if (s->sigfd > 0)
		close(s->sigfd);
}

static void srv_loop(struct srv *s)
{
	struct fid *fids[2] = { &s->eq->fid, &s->cq->fid };
	struct epoll_event ev[4];
	int n, i;

	while (!s->stop) {
		handle_eq(s);
		handle_cq(s);
		if (fi_trywait(s->fabric, fids, 2) != FI_SUCCESS)
			continue;
		n = epoll_wait(s->epfd, ev, 4, -1);
		if (n < 0 && errno != EINTR) {
			perror("orfs-server: epoll_wait");
			return;
		}
		for (i = 0; i < n; i++) {
			if (ev[i].data.fd == s->sigfd) {
				struct signalfd_siginfo si;

				if (read(s->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
					logmsg("signal %u: stopping", si.ssi_signo);
				s->stop = 1;
			}
		}
	}
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: orfs-server -a ADDRESS [-p PORT] [-e NAME=DIR]... [-b NAME=FILE]... [-P PROVIDER] [-v]\n"
		"  -a  address of the RDMA interface to listen on\n"
		"  -p  port (default %d)\n"
		"  -e  export directory DIR as file-service name NAME\n"
		"  -b  export file or block device FILE as volume NAME\n"
		"  -P  libfabric provider (default verbs)\n"
		"  -v  log more\n", KNET_DEFAULT_PORT);
}

int main(int argc, char **argv)
{
	struct srv s;
	char port[16];
	int opt;

	memset(&s, 0, sizeof(s));
	s.prov = "verbs";
	snprintf(port, sizeof(port), "%d", KNET_DEFAULT_PORT);
	s.port = port;
	while ((opt = getopt(argc, argv, "a:p:e:b:P:vh")) != -1) {
		switch (opt) {
		case 'a':
			s.addr = optarg;
			break;
		case 'p':
			s.port = optarg;
			break;
		case 'e':
			if (add_export(&s, optarg, KNET_SVC_FILE))
				return 2;
			break;
		case 'b':
			if (add_export(&s, optarg, KNET_SVC_BLOCK))
				return 2;
			break;
		case 'P':
			s.prov = optarg;
			break;
		case 'v':
			s.verbose = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!s.addr || optind != argc) {
		usage(stderr);
		return 2;
	}
	if (srv_open(&s)) {
		srv_close(&s);
		return 1;
	}
	logmsg("listening on %s port %s (%s), %d exports and volumes", s.addr, s.port,
	       s.info->domain_attr->name, s.nex);
	srv_loop(&s);
	srv_close(&s);
	logmsg("stopped");
	return 0;
}

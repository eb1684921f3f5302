// SPDX-License-Identifier: GPL-2.0-only
/*
 * orfs-server: shards. A shard is a progress thread that owns its
 * connections: it waits with epoll on their event queue, its completion
 * queues, its I/O workers' eventfd and its mailbox; it hands completions
 * to the engine, reports its status, and retires when told.
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

/* How long a retiring shard waits for its connections' last events. */
#define DRAIN_SECONDS	10

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
	char how[128];
	int n = 0;

	if (sh->status_seen == gen)
		return;
	sh->status_seen = gen;
	for (c = sh->conns; c; c = c->next)
		n++;
	/* How its data moves: RDMA READ sinks, or TCP chunks moved by pipe. */
	if (sh->dev >= 0)
		snprintf(how, sizeof(how), "READ sinks %s (%llu registered, %llu live)",
			 sh->sink_per_read ? "registered per READ" : "in the pool's registration",
			 (unsigned long long)sh->sink_regs, (unsigned long long)sh->sink_live);
	else
		snprintf(how, sizeof(how), "%llu READ chunks sent from the page cache, "
			 "%llu WRITE chunks received into it (%llu pipes filled up)",
			 (unsigned long long)sh->splice_chunks,
			 (unsigned long long)sh->sink_chunks, (unsigned long long)sh->sink_full);
	srv_log("status: progress thread %d on %s: %d connections, %d requests in service, %u of %u buffer chunks free, %llu waits for a buffer, %s",
		sh->id, sh->dev >= 0 ? s->dev[sh->dev].info->domain_attr->name : "TCP", n,
		atomic_load(&sh->active),
		sh->pool.nfree, sh->pool.nchunks,
		(unsigned long long)sh->buffer_waits, how);
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
		if (q->tcp_fd >= 0)
			tcp_on_connreq(sh, q);
		else
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
void mail_wake(struct shard *sh)
{
	if (sh->retired)
		return;	/* its thread and eventfd are gone */
	atomic_fetch_add(&sh->mail_seq, 1);
	wake(sh->mailfd);
}

/* Main: hand connection request Q to shard SH, counted as a connection meanwhile. */
void shard_mail(struct shard *sh, struct connreq *q)
{
	sh->queued++;
	pthread_mutex_lock(&sh->mail_lock);
	q->next = sh->mail;
	sh->mail = q;
	pthread_mutex_unlock(&sh->mail_lock);
	mail_wake(sh);
}

/* How many connections shard SH has or is about to have. */
int shard_load(struct shard *sh)
{
	return sh->nconns + sh->queued;
}

/* One completion (ERR 0) or flushed/failed operation (ERR an errno). */
void conn_completion(struct op *op, size_t len, int err)
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

	if (!cq)
		return 0;	/* a TCP thread's */
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
			conn_completion(err.op_context, 0, err.err ? err.err : EIO);
			seen++;
			continue;
		}
		if (n < 0) {
			fab_err("fi_cq_read", (int)n);
			sh->failed = 1;
			return seen;
		}
		for (k = 0; k < n; k++)
			conn_completion(ent[k].op_context, ent[k].len, 0);
		seen += (int)n;
	}
}

static void shard_events(struct shard *s, const struct epoll_event *ev, int n);

/*
 * Poll the completion queue and the workers' done list (and, on a TCP
 * thread, its sockets) for up to the configured time after the last
 * work, instead of sleeping: a wake-up from epoll costs more than a
 * request's own work on small I/O. Only while at most one request is in
 * service: that is when a client waits on every step of the server; with
 * more, completions come in batches and sleeping costs little, while a
 * spinning thread would take a CPU from the workers. Returns 1 if work
 * was found (and done), 0 to sleep.
 */
static int srv_poll(struct shard *s)
{
	uint64_t t = now_us(), end = s->last_busy + s->s->cfg.poll_us;
	struct epoll_event ev[8];
	int n;

	while (t < end && !s->stop && !s->failed && s->active <= 1) {
		int got = handle_cq(s, s->txcq) + handle_cq(s, s->rxcq);

		if (box_have_done(&s->box)) {
			eng_on_jobs(s);
			got = 1;
		}
		/* Sockets have no completion queue: their readiness, without waiting. */
		if (!got && s->dev < 0) {
			n = epoll_wait(s->epfd, ev, 8, 0);
			if (n > 0) {
				shard_events(s, ev, n);
				got = tcp_busy(s) || s->now;
			}
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

int epoll_add(int epfd, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

	if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev)) {
		fprintf(stderr, "orfs-server: epoll_ctl: %s\n", strerror(errno));
		return -1;
	}
	return 0;
}

/* Shard SH's queues, buffers and wait set, with NCHUNKS chunks of the pool. */
int shard_open(struct shard *sh, uint32_t nchunks)
{
	struct srv *s = sh->s;
	const struct srv_dev *dev = sh->dev >= 0 ? &s->dev[sh->dev] : NULL;
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
	spipe_init(sh);
	pthread_mutex_init(&sh->mail_lock, NULL);
	sh->rx_budget = SRV_RX_BUDGET / s->nshards;
	if (sh->rx_budget < SRV_CREDITS)
		sh->rx_budget = SRV_CREDITS;
	sh->fault_rng = s->fault_seed;
	sh->eqfd = sh->rxcqfd = sh->txcqfd = -1;
	if (dev && ((ret = fi_eq_open(s->fabric, &eq_attr, &sh->eq, NULL)) ||
		    (ret = fi_cq_open(dev->domain, &rx_attr, &sh->rxcq, NULL)) ||
		    (ret = fi_cq_open(dev->domain, &tx_attr, &sh->txcq, NULL))))
		return fab_err("setting up a progress thread's queues", ret);
	if (dev && ((ret = fi_control(&sh->eq->fid, FI_GETWAIT, &sh->eqfd)) ||
		    (ret = fi_control(&sh->rxcq->fid, FI_GETWAIT, &sh->rxcqfd)) ||
		    (ret = fi_control(&sh->txcq->fid, FI_GETWAIT, &sh->txcqfd))))
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
	iwarp = dev && dev->info->ep_attr && dev->info->ep_attr->protocol == FI_PROTO_IWARP;
	sh->sink_per_read = dev && (s->cfg.read_sinks == CFG_SINKS_PER_READ || iwarp);
	/* See conn_fence(). */
	sh->fence_reads = iwarp;
	/* A TCP thread's pool is reached by its own reads and writes only. */
	ret = dev ? fi_mr_reg(dev->domain, sh->pool.base, s->chunk_size * nchunks,
			      sh->sink_per_read ? FI_WRITE : FI_READ | FI_WRITE, 0, 0, 0,
			      &sh->pool_mr, NULL) : 0;
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
	if ((dev && (epoll_add(sh->epfd, sh->eqfd) || epoll_add(sh->epfd, sh->rxcqfd))) ||
	    epoll_add(sh->epfd, sh->mailfd) || epoll_add(sh->epfd, sh->box.efd))
		return -1;
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
uint32_t shard_chunks(const struct srv *s, int i)
{
	int d = i % s->ngroups;

	return share(share(s->nchunks, s->ngroups, (uint32_t)d),
		     share((uint32_t)s->nshards, s->ngroups, (uint32_t)d),
		     (uint32_t)(i / s->ngroups));
}

/*
 * After its thread ended (or never started), with no job of it left at
 * the workers: they stopped, or it retired. Once only.
 */
void shard_close(struct shard *sh)
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
		if (q->tcp_fd >= 0)
			close(q->tcp_fd);
		else
			fi_freeinfo(q->ev.cm.info);
		free(q);
	}
	tcp_shard_close(sh);
	spipe_close_all(sh);
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
	struct fid *fids[2], *eqfid = s->eq ? &s->eq->fid : NULL;
	struct epoll_event ev[8];
	time_t deadline = 0, retire_by = 0;
	int draining = 0;
	int n;

	s->eq_ready = 1;
	while (!s->stop && !s->failed) {
		int polled = 0, nfids = 0, idle_ms, tmo;

		if (s->stopping && !draining) {
			draining = 1;
			deadline = time(NULL) + DRAIN_SECONDS;
		}
		if (s->retiring && !retire_by)
			retire_by = shard_retire(s);
		if (s->eq_ready) {
			s->eq_ready = 0;
			if (s->eq)
				handle_eq(s);
		}
		/* Mail, even when completions keep the thread from epoll. */
		if (atomic_load(&s->mail_seq) != s->mail_taken)
			take_mail(s);
		/* Reply buffers back first: the requests below may need them. */
		if ((handle_cq(s, s->txcq) + handle_cq(s, s->rxcq)) && s->s->cfg.poll_us)
			s->last_busy = now_us();
		if (tcp_progress(s) && s->s->cfg.poll_us)
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
		if (!polled && s->eq) {
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
		/* A TCP handshake's or stall's deadline comes first. */
		tmo = tcp_next_ms(s);
		if (tmo >= 0 && (idle_ms < 0 || tmo < idle_ms))
			idle_ms = tmo;
		n = epoll_wait(s->epfd, ev, 8, polled || tcp_busy(s) || s->now ? 0 :
					      draining || retire_by ? 100 : idle_ms);
		if (n < 0 && errno != EINTR) {
			perror("orfs-server: epoll_wait");
			s->failed = 1;
			break;
		}
		shard_events(s, ev, n);
	}
}

/* What epoll said of shard S's descriptors: N events in EV. */
static void shard_events(struct shard *s, const struct epoll_event *ev, int n)
{
	int i;

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
		} else {
			tcp_on_fd(s, ev[i].data.fd, ev[i].events);
		}
	}
}

void *shard_main(void *arg)
{
	struct shard *sh = arg;
	int ret;

	/*
	 * An RDMA shard's thread writes to the verbs devices: it must keep its
	 * credentials (fsvc_cred_fix()). A TCP shard's may switch, and so runs
	 * anyone's bounded file service requests without a worker.
	 */
	ret = sh->dev >= 0 ? fsvc_cred_fix() : fsvc_cred_progress();
	if (ret && !sh->id)
		srv_log("file service: every request goes to a worker: the thread's "
			"credentials: %s", strerror(ret));
	shard_loop(sh);
	sh->ended = 1;
	wake(sh->s->wakefd);
	return NULL;
}

/* Tell every shard to drain (STOP 0) or to end now (STOP 1). */
void order_shards(struct srv *s, int stop)
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

/* A retired shard as new, but for what it is and its counters, to open again. */
void shard_reset(struct shard *sh)
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

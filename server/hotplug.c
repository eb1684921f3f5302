// SPDX-License-Identifier: GPL-2.0-only
/*
 * orfs-server: RDMA devices coming and going. Connection requests from
 * the listeners handed to shards, a device's removal followed through its
 * release, and the device served again once it is back.
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

/* How long after a device's release to look for its end (dev_watch()). */
#define DEV_FORGET_SECONDS	120
/* Then how often to look for it back. */
#define DEV_RETRY_SECONDS	2

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
	q->tcp_fd = -1;
	q->datalen = len - sizeof(q->ev.cm);
	shard_mail(sh, q);
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
void handle_listen(struct srv *s)
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
int dev_watch(struct srv *s)
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
void reap_retired(struct srv *s)
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

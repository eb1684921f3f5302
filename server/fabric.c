// SPDX-License-Identifier: GPL-2.0-only
/*
 * orfs-server: the fabric. libfabric's devices found and opened
 * (domains, event queues, completion queues, listeners), the pool's
 * memory locked and registered, and all of it closed.
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

/* What libfabric has at listen address I of S, PORT (NULL: any port) into *INFO. */
int listen_getinfo(const struct srv *s, int i, const char *port, struct fi_info **info)
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
int any_getinfo(const struct srv *s, struct fi_info **info)
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
int any_devices(const struct srv *s, int i, struct fi_info **any)
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
size_t appendf(char *buf, size_t len, size_t n, const char *fmt, ...)
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
const char *dev_str(const struct config *c, struct fi_info *const info[],
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

	s->ndev = s->cfg.nlisten ? listen_devices(&s->cfg, s->linfo, s->anyinfo, dev) : 0;
	if (!s->ndev && s->cfg.nlisten) {
		srv_log("no RDMA device to serve on");
		return -FI_ENODEV;
	}
	for (d = 0; d < s->ndev; d++)
		s->dev[d].info = dev[d];
	/* TCP has progress threads of its own: an RDMA device that goes takes none of them. */
	s->ngroups = s->ndev + (s->cfg.ntcp > 0);
	if (s->nshards < s->ngroups) {
		srv_log("progress threads: %d, one for each of %d RDMA devices%s (not %d)",
			s->ngroups, s->ndev, s->cfg.ntcp ? " and TCP" : "", s->nshards);
		s->nshards = s->ngroups;
		if (s->nchunks < (uint32_t)s->nshards) {
			srv_log("the pool must hold at least one chunk per progress thread");
			return -FI_EINVAL;
		}
	}
	if (!s->ndev)
		return 0;	/* TCP only: no fabric */
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

/*
 * Sockets, cached open files and each TCP thread's pipes (up to
 * SRV_PIPES pairs) can pass the usual soft limit of 1024 descriptors
 * (systemd's default): the soft limit goes up to the hard one, as
 * systemd asks of services that need more. Everything waits in epoll,
 * so descriptors past 1024 are fine.
 */
static void raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl)) {
		perror("orfs-server: getrlimit(RLIMIT_NOFILE)");
		return;
	}
	if (rl.rlim_cur == rl.rlim_max)
		return;
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl))
		perror("orfs-server: setrlimit(RLIMIT_NOFILE)");
}

int srv_open(struct srv *s)
{
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_FD };
	sigset_t mask;
	int i, ret;

	raise_memlock(s);
	raise_nofile();
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
	s->eqfd = -1;
	if (s->ndev)
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
	if (s->eq)
		ret = fi_control(&s->eq->fid, FI_GETWAIT, &s->eqfd);
	if (ret)
		return fab_err("getting wait objects", ret);

	/*
	 * A client may reset its connection while the server still writes to
	 * it: the write then fails with EPIPE, and must not kill the server.
	 * splice() into a socket cannot say MSG_NOSIGNAL.
	 */
	if (signal(SIGPIPE, SIG_IGN) == SIG_ERR) {
		perror("orfs-server: ignoring SIGPIPE");
		return -1;
	}
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
		sh->dev = i % s->ngroups < s->ndev ? i % s->ngroups : -1;
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
	if ((s->eqfd >= 0 && epoll_add(s->epfd, s->eqfd)) || epoll_add(s->epfd, s->sigfd) ||
	    epoll_add(s->epfd, s->wakefd))
		return -1;
	for (i = 0; i < s->npep; i++) {
		ret = fi_listen(s->pep[i]);
		if (ret)
			return fab_err("fi_listen", ret);
	}
	return 0;
}

void srv_close(struct srv *s)
{
	int i;

	tcp_unlisten(s);

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

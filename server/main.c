// SPDX-License-Identifier: GPL-2.0-only
/*
 * orfs-server: the userspace end of every ORFS and MXBD connection.
 * This file reads the options and the configuration, checks it (-n),
 * starts the server and runs the main thread's loop (Documentation/
 * server.md, "Where things are", for the rest).
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

uint64_t now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000 + (uint64_t)t.tv_nsec / 1000;
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

/*
 * The main thread: connection requests, signals, the shards' ends, and
 * the devices removed and back. Returns 0 after a stop signal, -1 if a
 * shard failed.
 */
static int main_loop(struct srv *s)
{
	struct fid *eqfid = s->eq ? &s->eq->fid : NULL;
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
		if (!s->stop && eqfid && fi_trywait(s->fabric, &eqfid, 1) != FI_SUCCESS) {
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
			} else if (tcp_is_listener(s, ev[i].data.fd)) {
				if (!s->stop)
					tcp_accept(s, ev[i].data.fd);
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
	for (i = 0; i < c->ntcp; i++)
		n = appendf(buf, len, n, "%stcp://%s port %s", i || c->nlisten ? ", " : "",
			    c->tcp[i].addr, config_tcp_port(c, i));
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

/*
 * The command line over the configuration file (-c), and what follows
 * from both (pool chunks, progress threads). Returns -1 to go on, else the
 * exit status (0 for -h).
 */
static int parse_options(struct srv *s, int argc, char **argv, int *check, int *faults)
{
	char err[512], line[CFG_SECRET_PATH + 128];
	const char *opts = "c:a:p:e:b:A:m:C:t:T:B:L:G:s:P:vnFh";
	static const struct option longopts[] = {
		{ "insecure", no_argument, NULL, 'I' },
		{ NULL, 0, NULL, 0 },
	};
	int opt, i, a_given = 0, p_given = 0;

	/* The file first, so that options given with it override it. */
	while ((opt = getopt_long(argc, argv, opts, longopts, NULL)) != -1) {
		if (opt == 'c') {
			s->cfg_path = optarg;
		} else if (opt == 'h') {
			usage(stdout);
			return 0;
		} else if (opt == '?') {
			goto fail_usage;
		}
	}
	if (s->cfg_path && config_parse_file(&s->cfg, s->cfg_path, err, sizeof(err))) {
		fprintf(stderr, "orfs-server: %s\n", err);
		return 2;
	}
	optind = 1;
	while ((opt = getopt_long(argc, argv, opts, longopts, NULL)) != -1) {
		err[0] = '\0';
		switch (opt) {
		case 'a':
			/* -a replaces the file's listen lines; several -a listen on each. */
			if (!a_given++) {
				s->cfg.nlisten = 0;
				s->cfg.ntcp = 0;
			}
			if (config_add_listen(&s->cfg, optarg, NULL, err, sizeof(err)))
				goto fail_msg;
			break;
		case 'p':
			if (strlen(optarg) >= sizeof(s->cfg.port)) {
				snprintf(err, sizeof(err), "-p: '%s' is not a port", optarg);
				goto fail_msg;
			}
			strcpy(s->cfg.port, optarg);
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
			if (config_parse_line(&s->cfg, line, err, sizeof(err)))
				goto fail_msg;
			break;
		case 'e':
		case 'b':
			if (config_add_spec(&s->cfg, opt == 'e' ? KNET_SVC_FILE : KNET_SVC_BLOCK, optarg,
					    err, sizeof(err)) ||
			    config_add_spec(&s->cmdline, opt == 'e' ? KNET_SVC_FILE : KNET_SVC_BLOCK,
					    optarg, err, sizeof(err)))
				goto fail_msg;
			break;
		case 'A':
			/* NETWORK[,secret=FILE]: the file's "allow NETWORK secret=FILE". */
			snprintf(line, sizeof(line), "allow %s", optarg);
			for (i = 0; line[i]; i++)
				if (line[i] == ',')
					line[i] = ' ';
			if (config_parse_line(&s->cfg, line, err, sizeof(err)) ||
			    config_parse_line(&s->cmdline, line, err, sizeof(err)))
				goto fail_msg;
			break;
		case 's':
			if (strlen(optarg) >= sizeof(s->cfg.state_dir)) {
				snprintf(err, sizeof(err), "-s: path too long");
				goto fail_msg;
			}
			strcpy(s->cfg.state_dir, optarg);
			break;
		case 'P':
			s->prov = optarg;
			break;
		case 'v':
			s->verbose = 1;
			break;
		case 'n':
			*check = 1;
			break;
		case 'F':
			*faults = 1;
			break;
		case 'I':
			s->insecure = 1;
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
	for (i = 0; p_given && i < s->cfg.nlisten; i++)
		s->cfg.listen[i].port[0] = '\0';
	for (i = 0; p_given && i < s->cfg.ntcp; i++)
		s->cfg.tcp[i].port[0] = '\0';
	if (!s->cfg.nlisten && !s->cfg.ntcp) {
		fprintf(stderr, "orfs-server: no address to listen on (-a, or 'listen' in the file)\n");
		goto fail_usage;
	}
	s->chunk_size = (size_t)s->cfg.chunk_kib << 10;
	s->nchunks = (uint32_t)(((size_t)s->cfg.pool_mib << 20) / s->chunk_size);
	s->nthreads = (int)s->cfg.threads;
	s->nshards = (int)s->cfg.progress;
	if (!s->nshards) {
		long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

		s->nshards = ncpu < 1 ? 1 : ncpu > CFG_AUTO_PROGRESS ? CFG_AUTO_PROGRESS : (int)ncpu;
		if ((uint32_t)s->nshards > s->nchunks)
			s->nshards = s->nchunks ? (int)s->nchunks : 1;	/* a chunk each at least */
	}
	if (s->nchunks < (uint32_t)s->nshards) {
		fprintf(stderr, "orfs-server: the pool must hold at least one chunk per progress thread\n");
		goto fail_usage;
	}
	return -1;

fail_msg:
	fprintf(stderr, "orfs-server: %s\n", err);
fail_usage:
	usage(stderr);
	return 2;
}

/*
 * Everything set up, from the replay cache and lock table to the devices
 * and progress threads. Returns 0, or the exit status (the caller closes).
 */
static int srv_start(struct srv *s)
{
	char where[CFG_MAX_LISTEN * 96], devs[CFG_MAX_LISTEN * 64];
	int i, ret;

	replay_init(&s->replay);
	locks_init(&s->locks, s->cfg.lease);
	atomic_store(&s->idle_secs, s->cfg.idle_timeout);
	/* A waiter's LOCK held takes a worker: half of them at most. */
	locks_hold_max(&s->locks, (uint32_t)s->nthreads / 2);
	{
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		s->boot = ((uint64_t)ts.tv_sec << 20) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 40);
		fsvc_verf_init(&s->verf, s->boot);
	}
	/* The key seals file handles and names volumes (volume_uuid()). */
	if (s->cfg.nex && load_key(s, s->cfg.state_dir, 1))
		return 2;
	for (i = 0; i < s->cfg.nex; i++)
		if (export_add(s, &s->cfg.ex[i]))
			return 2;
	if (srv_open(s) || tcp_listen(s))
		return 1;
	/* Clients can reclaim from now on (opening can take seconds). */
	locks_grace(&s->locks, s->cfg.grace == CFG_GRACE_LEASE ? s->cfg.lease : s->cfg.grace,
		    (time_t)(now_us() / 1000000));
	/* The RDMA devices in parentheses: none for a server on TCP alone. */
	dev_str(&s->cfg, s->linfo, s->anyinfo, devs, sizeof(devs));
	srv_log("listening on %s%s%s%s: %d exports and volumes, pool %lu MiB in %u chunks, %d workers, %d progress threads, poll %u us",
		listen_str(&s->cfg, where, sizeof(where)), devs[0] ? " (" : "", devs,
		devs[0] ? ")" : "", s->cfg.nex,
		(unsigned long)(s->chunk_size * s->nchunks >> 20), s->nchunks, s->nthreads, s->nshards,
		s->cfg.poll_us);
	if (!s->cfg.nallow)
		srv_log("no allow list (--insecure): any client that reaches %s may connect, as any user",
			listen_str(&s->cfg, where, sizeof(where)));
	for (i = 0; i < s->nshards; i++) {
		ret = pthread_create(&s->shards[i].thread, NULL, shard_main, &s->shards[i]);
		if (ret) {
			srv_log("starting a progress thread: %s", strerror(ret));
			return 1;
		}
		s->shards[i].started = 1;
	}
	return 0;
}

/* What the server did, over all its progress threads: summed before they go. */
struct stop_counts {
	unsigned long		jobs_now, names_now, poll_hits;
	unsigned long long	buffer_waits;
};

static void count_stop(const struct srv *s, struct stop_counts *n)
{
	int i;

	memset(n, 0, sizeof(*n));
	for (i = 0; i < s->nshards; i++) {
		n->buffer_waits += s->shards[i].buffer_waits;
		n->jobs_now += s->shards[i].jobs_now;
		n->names_now += s->shards[i].names_now;
		n->poll_hits += s->shards[i].poll_hits;
	}
}

int main(int argc, char **argv)
{
	static struct srv s;
	struct stop_counts n;
	int ret, check = 0, faults = 0;

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
	ret = parse_options(&s, argc, argv, &check, &faults);
	if (ret >= 0)
		goto out;
	/* Open to any host only when asked to be, in so many words (-n counts it a problem). */
	if (!s.cfg.nallow && !s.insecure && !check) {
		fprintf(stderr, "orfs-server: no allow list: any host that reaches the server could connect, "
			"as any user; give allow lines (with secret= to authenticate them), or --insecure "
			"to serve every host\n");
		ret = 2;
		goto out;
	}
	if (check) {
		ret = check_config(&s) ? 1 : 0;
		goto out;
	}
	umask(0);	/* clients send the modes they mean, their umask applied */
	/* Lying to clients is a test aid: only when asked for on the command line. */
	ret = fault_configure(&s, faults);
	if (ret)
		goto out;
	ret = srv_start(&s);
	if (ret)
		goto out;
	ret = main_loop(&s) ? 1 : 0;
	count_stop(&s, &n);
	srv_close(&s);
	locks_destroy(&s.locks);
	srv_log("stopped (%llu waits for a buffer, %lu jobs done without a worker (%lu file service requests), %lu polls found work, %lu open files used again, %lu directories used again)",
		n.buffer_waits, n.jobs_now, n.names_now, n.poll_hits, s.fdc.hits, s.fdc.dir_hits);
	return ret;
out:
	srv_close(&s);
	return ret;
}

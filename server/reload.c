// SPDX-License-Identifier: GPL-2.0-only
/*
 * orfs-server: reload (SIGHUP): the configuration read again and
 * applied, exports and volumes added, changed or retired.
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
void srv_reload(struct srv *s)
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

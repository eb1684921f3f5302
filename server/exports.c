// SPDX-License-Identifier: GPL-2.0-only
/*
 * orfs-server: exports and volumes, their references and UUIDs, the
 * connections each host holds, and the file handle key.
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
int load_key(struct srv *s, const char *dir, int make)
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
struct export *find_export(struct srv *s, const char *name, int service)
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
int export_add(struct srv *s, const struct cfg_export *cfg)
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

void export_release(struct srv *s, struct export *ex)
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
int peer_conn_get(struct srv *s, const struct cfg_addr *ip)
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
void peer_conn_put(struct srv *s, const struct cfg_addr *ip)
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
void export_put(struct srv *s, struct export *ex)
{
	if (--ex->refs || !ex->removed)
		return;
	srv_log("%s '%s' released", ex->cfg.service == KNET_SVC_FILE ? "export" : "volume",
		ex->cfg.name);
	export_release(s, ex);
}

/* Export or volume NAME for a new connection, with a reference taken, or NULL. */
struct export *export_get(struct srv *s, const char *name, int service)
{
	struct export *ex;

	pthread_mutex_lock(&s->lock);
	ex = find_export(s, name, service);
	if (ex)
		ex->refs++;
	pthread_mutex_unlock(&s->lock);
	return ex;
}

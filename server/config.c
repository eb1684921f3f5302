// SPDX-License-Identifier: GPL-2.0-only
/* orfs-server configuration: command line and configuration file. */
#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/config.h"
#include "server/fsvc.h"
#include "server/locks.h"
#include "server/proto.h"

#define WORDS_MAX 32

void config_init(struct config *c)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->port, sizeof(c->port), "%d", KNET_DEFAULT_PORT);
	c->pool_mib = 64;
	c->chunk_kib = 256;
	c->threads = 4;
	c->progress = 0;	/* one a CPU, up to CFG_AUTO_PROGRESS */
	c->poll_us = CFG_POLL_US;
	c->lease = LOCKS_LEASE;
	c->grace = CFG_GRACE_LEASE;
	c->peer_conns = CFG_PEER_CONNS;
	c->idle_timeout = CFG_IDLE_TIMEOUT;
	c->stall_timeout = CFG_STALL_TIMEOUT;
	snprintf(c->state_dir, sizeof(c->state_dir), "/var/lib/orfs-server");
}

static int fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

/*
 * "tcp://ADDRESS[:PORT]", "tcp://[IPV6][:PORT]" or "rdma://..." (the
 * same), or a bare address (RDMA): into *TCP, ADDR and, if it has one,
 * PORT (BUF of LEN bytes holds them).
 */
static int split_listen(const char *in, int *tcp, char *addr, size_t alen, char *port,
			size_t plen)
{
	const char *a = in, *end, *colon;

	*tcp = 0;
	port[0] = '\0';
	if (!strncmp(in, "tcp://", 6)) {
		*tcp = 1;
		a = in + 6;
	} else if (!strncmp(in, "rdma://", 7)) {
		a = in + 7;
	} else {
		return snprintf(addr, alen, "%s", in) >= (int)alen ? -1 : 0;
	}
	if (*a == '[') {
		end = strchr(a, ']');
		if (!end || (end[1] && end[1] != ':'))
			return -1;
		colon = end[1] ? end + 1 : NULL;
		a++;
	} else {
		colon = strchr(a, ':');
		if (colon && strchr(colon + 1, ':'))
			return -1;	/* IPv6 with a port goes in brackets */
		end = colon ? colon : a + strlen(a);
	}
	if ((size_t)(end - a) >= alen || (colon && strlen(colon + 1) >= plen) ||
	    (colon && !colon[1]))
		return -1;
	memcpy(addr, a, (size_t)(end - a));
	addr[end - a] = '\0';
	if (colon)
		snprintf(port, plen, "%s", colon + 1);
	return 0;
}

int config_add_listen(struct config *c, const char *spec, const char *port, char *err,
		      size_t errlen)
{
	struct cfg_listen *l;
	char addr[sizeof(l->addr)], uport[sizeof(l->port)];
	int tcp;

	if (split_listen(spec, &tcp, addr, sizeof(addr), uport, sizeof(uport)) || !addr[0] ||
	    (port && strlen(port) >= sizeof(l->port)))
		return fail(err, errlen, "listen: '%s'%s%s: too long, empty or malformed", spec,
			    port ? " " : "", port ? port : "");
	if ((tcp ? c->ntcp : c->nlisten) == CFG_MAX_LISTEN)
		return fail(err, errlen, "listen: more than %d %saddresses", CFG_MAX_LISTEN,
			    tcp ? "TCP " : "");
	l = tcp ? &c->tcp[c->ntcp++] : &c->listen[c->nlisten++];
	snprintf(l->addr, sizeof(l->addr), "%s", addr);
	snprintf(l->port, sizeof(l->port), "%s", uport[0] ? uport : port ? port : "");
	return 0;
}

const char *config_tcp_port(const struct config *c, int i)
{
	return c->tcp[i].port[0] ? c->tcp[i].port : c->port;
}

const char *config_listen_port(const struct config *c, int i)
{
	return c->listen[i].port[0] ? c->listen[i].port : c->port;
}

int config_listen_any(const struct config *c, int i)
{
	static const uint8_t zero[16];
	uint8_t a[16];

	if (inet_pton(AF_INET, c->listen[i].addr, a) == 1)
		return !memcmp(a, zero, 4);
	return inet_pton(AF_INET6, c->listen[i].addr, a) == 1 && !memcmp(a, zero, 16);
}

int config_same_listen(const struct config *a, const struct config *b)
{
	int i;

	if (a->nlisten != b->nlisten || a->ntcp != b->ntcp)
		return 0;
	for (i = 0; i < a->ntcp; i++)
		if (strcmp(a->tcp[i].addr, b->tcp[i].addr) ||
		    strcmp(config_tcp_port(a, i), config_tcp_port(b, i)))
			return 0;
	for (i = 0; i < a->nlisten; i++)
		if (strcmp(a->listen[i].addr, b->listen[i].addr) ||
		    strcmp(config_listen_port(a, i), config_listen_port(b, i)))
			return 0;
	return 1;
}

const struct cfg_export *config_find(const struct config *c, int service, const char *name)
{
	int i;

	for (i = 0; i < c->nex; i++)
		if (c->ex[i].service == service && !strcmp(c->ex[i].name, name))
			return &c->ex[i];
	return NULL;
}

static const uint8_t v4_mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

/* Keep the first BITS bits of A, zero the rest. */
static void addr_mask(struct cfg_addr *a, int bits)
{
	int i;

	for (i = 0; i < 16; i++, bits -= 8) {
		if (bits <= 0)
			a->b[i] = 0;
		else if (bits < 8)
			a->b[i] &= (uint8_t)(0xff00 >> bits);
	}
}

/* "A.B.C.D[/N]" or "IPV6[/N]" into NET. */
static int parse_net(const char *s, struct cfg_net *net, char *err, size_t errlen)
{
	char buf[INET6_ADDRSTRLEN + 8], *slash;
	int v4 = !strchr(s, ':');
	long bits = v4 ? 32 : 128;

	if (strlen(s) >= sizeof(buf))
		return fail(err, errlen, "'%s': not an IPv4 or IPv6 address or network", s);
	strcpy(buf, s);
	slash = strchr(buf, '/');
	if (slash) {
		char *end;

		*slash = '\0';
		errno = 0;
		bits = strtol(slash + 1, &end, 10);
		if (errno || *end || bits < 0 || bits > (v4 ? 32 : 128) || end == slash + 1)
			return fail(err, errlen, "'%s': bad prefix length", s);
	}
	memset(net, 0, sizeof(*net));
	if (v4) {
		memcpy(net->addr.b, v4_mapped, sizeof(v4_mapped));
		if (inet_pton(AF_INET, buf, &net->addr.b[12]) != 1)
			return fail(err, errlen, "'%s': not an IPv4 or IPv6 address or network", s);
		bits += 96;
	} else if (inet_pton(AF_INET6, buf, net->addr.b) != 1) {
		return fail(err, errlen, "'%s': not an IPv4 or IPv6 address or network", s);
	}
	net->bits = (int)bits;
	addr_mask(&net->addr, net->bits);
	return 0;
}

int config_addr_from_sa(const void *sa, size_t len, struct cfg_addr *a)
{
	const struct sockaddr_in *sin = sa;
	const struct sockaddr_in6 *sin6 = sa;

	memset(a, 0, sizeof(*a));
	if (!sa || len < sizeof(sa_family_t))
		return -1;
	if (sin->sin_family == AF_INET && len >= sizeof(*sin)) {
		memcpy(a->b, v4_mapped, sizeof(v4_mapped));
		memcpy(&a->b[12], &sin->sin_addr, 4);
		return 0;
	}
	if (sin6->sin6_family == AF_INET6 && len >= sizeof(*sin6)) {
		memcpy(a->b, &sin6->sin6_addr, 16);
		return 0;
	}
	return -1;
}

int config_addr_known(const struct cfg_addr *a)
{
	static const struct cfg_addr none;

	return memcmp(a, &none, sizeof(none)) != 0;
}

const char *config_addr_str(const struct cfg_addr *a, char *buf, size_t len)
{
	const char *r;

	if (!config_addr_known(a))
		r = NULL;
	else if (!memcmp(a->b, v4_mapped, sizeof(v4_mapped)))
		r = inet_ntop(AF_INET, &a->b[12], buf, (socklen_t)len);
	else
		r = inet_ntop(AF_INET6, a->b, buf, (socklen_t)len);
	if (!r)
		snprintf(buf, len, "?");
	return buf;
}

/* The value of hexadecimal digit C, or -1. */
static int hex_digit(char c)
{
	static const char digits[] = "0123456789abcdef";
	const char *p = c ? strchr(digits, tolower((unsigned char)c)) : NULL;

	return p ? (int)(p - digits) : -1;
}

int config_uuid_parse(const char *text, uint8_t u[16])
{
	int i, hi, lo;

	for (i = 0; i < 16; i++, text += 2) {
		/* A hyphen before bytes 4, 6, 8 and 10. */
		if ((i == 4 || i == 6 || i == 8 || i == 10) && *text++ != '-')
			return -1;
		hi = hex_digit(text[0]);
		lo = hi < 0 ? -1 : hex_digit(text[1]);
		if (lo < 0)
			return -1;
		u[i] = (uint8_t)(hi << 4 | lo);
	}
	return *text ? -1 : 0;
}

static int set_option(struct cfg_export *e, const char *opt, char *err, size_t errlen)
{
	if (!strncmp(opt, "uuid=", 5) && e->service == KNET_SVC_BLOCK) {
		static const uint8_t zero[16];

		if (config_uuid_parse(opt + 5, e->uuid) || !memcmp(e->uuid, zero, sizeof(zero)))
			return fail(err, errlen, "%s: '%s': a UUID (8-4-4-4-12 hexadecimal digits, not all zero)",
				    e->name, opt + 5);
		e->has_uuid = 1;
	} else if (!strncmp(opt, "allow=", 6)) {
		if (e->nallow == CFG_EXPORT_MAX_ALLOW)
			return fail(err, errlen, "%s: more than %d allow= options", e->name,
				    CFG_EXPORT_MAX_ALLOW);
		if (parse_net(opt + 6, &e->allow[e->nallow], err, errlen))
			return -1;
		e->nallow++;
	} else if (!strcmp(opt, "ro"))
		e->read_only = 1;
	else if (!strcmp(opt, "rw"))
		e->read_only = 0;
	else if ((!strcmp(opt, "squash") || !strcmp(opt, "root_squash")) &&
		 e->service == KNET_SVC_FILE)
		e->squash = FSVC_SQUASH_ROOT;
	else if (!strcmp(opt, "no_root_squash") && e->service == KNET_SVC_FILE)
		e->squash = FSVC_SQUASH_NONE;
	else if (!strcmp(opt, "all_squash") && e->service == KNET_SVC_FILE)
		e->squash = FSVC_SQUASH_ALL;
	else if (!strcmp(opt, "subtree_check") && e->service == KNET_SVC_FILE)
		e->subtree_check = 1;
	else if (!strcmp(opt, "no_subtree_check") && e->service == KNET_SVC_FILE)
		e->subtree_check = 0;
	else if ((!strncmp(opt, "anonuid=", 8) || !strncmp(opt, "anongid=", 8)) &&
		 e->service == KNET_SVC_FILE) {
		unsigned int id;

		if (config_parse_uint(opt + 8, 0, UINT32_MAX - 1, &id))
			return fail(err, errlen, "%s: '%s': an id from 0 to 4294967294", e->name, opt);
		if (opt[4] == 'u')
			e->anon_uid = id;
		else
			e->anon_gid = id;
	}
	else if (!strcmp(opt, "prio=high"))
		e->class = FQ_HIGH;
	else if (!strcmp(opt, "prio=normal"))
		e->class = FQ_NORMAL;
	else if (!strcmp(opt, "prio=low"))
		e->class = FQ_LOW;
	else
		return fail(err, errlen, "%s: unknown option '%s'", e->name, opt);
	return 0;
}

/* Add NAME at PATH with OPTS (NULL-terminated); the common core. */
static int add_export(struct config *c, int service, const char *name, size_t name_len,
		      const char *path, const char *const *opts, char *err, size_t errlen)
{
	struct cfg_export e;
	int i;

	if (!proto_name_ok(name, name_len))
		return fail(err, errlen, "'%.*s': names are 1 to %d of [A-Za-z0-9._-], not . or ..",
			    (int)name_len, name, KNET_NAME_MAX);
	if (path[0] != '/')
		return fail(err, errlen, "%.*s: '%s' is not an absolute path", (int)name_len, name,
			    path);
	if (strlen(path) >= sizeof(e.path))
		return fail(err, errlen, "%.*s: path too long", (int)name_len, name);
	if (c->nex == CFG_MAX_EXPORTS)
		return fail(err, errlen, "more than %d exports and volumes", CFG_MAX_EXPORTS);
	memset(&e, 0, sizeof(e));
	memcpy(e.name, name, name_len);
	strcpy(e.path, path);
	e.service = service;
	e.class = FQ_NORMAL;
	/* Root is squashed unless an export says otherwise (exports(5)'s default). */
	e.squash = service == KNET_SVC_FILE ? FSVC_SQUASH_ROOT : FSVC_SQUASH_NONE;
	e.anon_uid = FSVC_NOBODY;
	e.anon_gid = FSVC_NOBODY;
	for (i = 0; opts && opts[i]; i++)
		if (set_option(&e, opts[i], err, errlen))
			return -1;
	if (config_find(c, service, e.name))
		return fail(err, errlen, "'%s' is named twice", e.name);
	c->ex[c->nex++] = e;
	return 0;
}

int config_add_spec(struct config *c, int service, const char *spec, char *err, size_t errlen)
{
	char buf[PATH_MAX + 128], *opts[WORDS_MAX + 1], *p, *eq;
	int n = 0;

	if (strlen(spec) >= sizeof(buf))
		return fail(err, errlen, "'%.32s...': too long", spec);
	strcpy(buf, spec);
	eq = strchr(buf, '=');
	if (!eq)
		return fail(err, errlen, "'%s': expected NAME=PATH[,OPTION]...", spec);
	*eq = '\0';
	p = strchr(eq + 1, ',');
	while (p && n < WORDS_MAX) {
		*p++ = '\0';
		opts[n++] = p;
		p = strchr(p, ',');
	}
	if (p)
		return fail(err, errlen, "'%s': too many options", spec);
	opts[n] = NULL;
	return add_export(c, service, buf, strlen(buf), eq + 1, (const char *const *)opts, err,
			  errlen);
}

int config_parse_uint(const char *s, unsigned int min, unsigned int max, unsigned int *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || end == s || v < min || v > max)
		return -1;
	*out = (unsigned int)v;
	return 0;
}

int config_parse_line(struct config *c, const char *line, char *err, size_t errlen)
{
	char buf[PATH_MAX + 256], *w[WORDS_MAX + 1], *p, *save = NULL;
	int n = 0;

	if (strlen(line) >= sizeof(buf))
		return fail(err, errlen, "line too long");
	strcpy(buf, line);
	p = strchr(buf, '#');
	if (p)
		*p = '\0';
	for (p = strtok_r(buf, " \t\r\n", &save); p; p = strtok_r(NULL, " \t\r\n", &save)) {
		if (n == WORDS_MAX)
			return fail(err, errlen, "too many words");
		w[n++] = p;
	}
	w[n] = NULL;
	if (!n)
		return 0;

	if (!strcmp(w[0], "listen") && (n == 2 || n == 3))
		return config_add_listen(c, w[1], n == 3 ? w[2] : NULL, err, errlen);
	if (!strcmp(w[0], "state") && n == 2) {
		if (w[1][0] != '/' || strlen(w[1]) >= sizeof(c->state_dir))
			return fail(err, errlen, "state: an absolute path");
		strcpy(c->state_dir, w[1]);
		return 0;
	}
	if (!strcmp(w[0], "pool") && n == 2)
		return config_parse_uint(w[1], 1, 65536, &c->pool_mib) ?
			fail(err, errlen, "pool: MiB from 1 to 65536") : 0;
	if (!strcmp(w[0], "chunk") && n == 2)
		return config_parse_uint(w[1], 4, 1024, &c->chunk_kib) || c->chunk_kib % 4 ?
			fail(err, errlen, "chunk: KiB from 4 to 1024, a multiple of 4") : 0;
	if (!strcmp(w[0], "threads") && n == 2)
		return config_parse_uint(w[1], 1, 256, &c->threads) ?
			fail(err, errlen, "threads: from 1 to 256") : 0;
	if (!strcmp(w[0], "progress") && n == 2)
		return config_parse_uint(w[1], 0, CFG_MAX_PROGRESS, &c->progress) ?
			fail(err, errlen, "progress: threads from 1 to 64, or 0 for one a CPU") : 0;
	if (!strcmp(w[0], "poll") && n == 2)
		return config_parse_uint(w[1], 0, 100000, &c->poll_us) ?
			fail(err, errlen, "poll: microseconds from 0 to 100000") : 0;
	if (!strcmp(w[0], "peer_connections") && n == 2)
		return config_parse_uint(w[1], 1, CFG_PEER_CONNS_MAX, &c->peer_conns) ?
			fail(err, errlen, "peer_connections: from 1 to %d", CFG_PEER_CONNS_MAX) : 0;
	if (!strcmp(w[0], "read_sinks") && n == 2) {
		if (!strcmp(w[1], "auto"))
			c->read_sinks = CFG_SINKS_AUTO;
		else if (!strcmp(w[1], "per_read"))
			c->read_sinks = CFG_SINKS_PER_READ;
		else
			return fail(err, errlen, "read_sinks: auto or per_read");
		return 0;
	}
	if (!strcmp(w[0], "idle_timeout") && n == 2)
		return config_parse_uint(w[1], 0, CFG_IDLE_TIMEOUT_MAX, &c->idle_timeout) ?
			fail(err, errlen, "idle_timeout: seconds from 0 (never) to %d",
			     CFG_IDLE_TIMEOUT_MAX) : 0;
	if (!strcmp(w[0], "stall_timeout") && n == 2)
		return config_parse_uint(w[1], 1, CFG_STALL_TIMEOUT_MAX, &c->stall_timeout) ?
			fail(err, errlen, "stall_timeout: seconds from 1 to %d",
			     CFG_STALL_TIMEOUT_MAX) : 0;
	if (!strcmp(w[0], "lease") && n == 2)
		return config_parse_uint(w[1], 1, 3600, &c->lease) ?
			fail(err, errlen, "lease: seconds from 1 to 3600") : 0;
	if (!strcmp(w[0], "grace") && n == 2)
		return config_parse_uint(w[1], 0, 3600, &c->grace) ?
			fail(err, errlen, "grace: seconds from 0 to 3600") : 0;
	if (!strcmp(w[0], "allow") && n >= 2) {
		int i, first = c->nallow, secret = 0;

		for (i = 1; i < n; i++) {
			if (!strncmp(w[i], "secret=", 7)) {
				if (secret || !w[i][7] || strlen(w[i] + 7) >= CFG_SECRET_PATH)
					return fail(err, errlen, "allow: one secret=FILE, a path of at most %d bytes",
						    CFG_SECRET_PATH - 1);
				if (c->nsecret == CFG_MAX_ALLOW)
					return fail(err, errlen, "more than %d secrets", CFG_MAX_ALLOW);
				if (auth_load_secret(w[i] + 7, &c->secret[c->nsecret], err, errlen))
					return -1;
				secret = ++c->nsecret;
				continue;
			}
			if (c->nallow == CFG_MAX_ALLOW)
				return fail(err, errlen, "more than %d allow entries", CFG_MAX_ALLOW);
			if (parse_net(w[i], &c->allow[c->nallow], err, errlen))
				return -1;
			c->nallow++;
		}
		if (secret && c->nallow == first)
			return fail(err, errlen, "allow: secret= without a network");
		for (i = first; i < c->nallow; i++)
			c->allow[i].secret = secret;
		return 0;
	}
	if ((!strcmp(w[0], "export") || !strcmp(w[0], "volume")) && n >= 3)
		return add_export(c, w[0][0] == 'e' ? KNET_SVC_FILE : KNET_SVC_BLOCK, w[1],
				  strlen(w[1]), w[2], (const char *const *)&w[3], err, errlen);
	return fail(err, errlen, "'%s': unknown or incomplete directive", w[0]);
}

int config_parse_file(struct config *c, const char *path, char *err, size_t errlen)
{
	char line[PATH_MAX + 256], msg[256];
	FILE *f = fopen(path, "r");
	int lineno = 0;

	if (!f)
		return fail(err, errlen, "%s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		if (!strchr(line, '\n') && !feof(f)) {
			fclose(f);
			return fail(err, errlen, "%s:%d: line too long", path, lineno);
		}
		if (config_parse_line(c, line, msg, sizeof(msg))) {
			fclose(f);
			return fail(err, errlen, "%s:%d: %s", path, lineno, msg);
		}
	}
	if (ferror(f)) {
		fclose(f);
		return fail(err, errlen, "%s: read error", path);
	}
	fclose(f);
	return 0;
}

/*
 * Is A in one of the N networks of NETS? With none, everyone is; with
 * some, an address not known (all zero) is in none of them.
 */
static int nets_match(const struct cfg_net *nets, int n, const struct cfg_addr *a)
{
	struct cfg_addr m;
	int i;

	if (!n)
		return 1;
	if (!config_addr_known(a))
		return 0;
	for (i = 0; i < n; i++) {
		m = *a;
		addr_mask(&m, nets[i].bits);
		if (!memcmp(&m, &nets[i].addr, sizeof(m)))
			return 1;
	}
	return 0;
}

int config_allowed(const struct config *c, const struct cfg_addr *a)
{
	return nets_match(c->allow, c->nallow, a);
}

const struct auth_secret *config_secret_for(const struct config *c, const struct cfg_addr *a)
{
	const struct cfg_net *best = NULL;
	struct cfg_addr m;
	int i;

	if (!config_addr_known(a))
		return NULL;
	for (i = 0; i < c->nallow; i++) {
		m = *a;
		addr_mask(&m, c->allow[i].bits);
		if (!memcmp(&m, &c->allow[i].addr, sizeof(m)) && (!best || c->allow[i].bits > best->bits))
			best = &c->allow[i];
	}
	return best && best->secret ? &c->secret[best->secret - 1] : NULL;
}

int config_export_allowed(const struct cfg_export *e, const struct cfg_addr *a)
{
	return nets_match(e->allow, e->nallow, a);
}

int config_same_allow(const struct cfg_export *a, const struct cfg_export *b)
{
	return a->nallow == b->nallow &&
	       !memcmp(a->allow, b->allow, sizeof(a->allow[0]) * (size_t)a->nallow);
}

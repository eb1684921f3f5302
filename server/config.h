/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * orfs-server configuration: the command line and the configuration file
 * fill the same structure. Parsing never touches the file system beyond
 * reading the file; checking paths is the server's job.
 */
#ifndef ORFS_SERVER_CONFIG_H
#define ORFS_SERVER_CONFIG_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "server/sched.h"
#include "knet/uapi/knet_proto.h"
#include "server/auth.h"

#define CFG_MAX_EXPORTS	64
#define CFG_MAX_ALLOW	64
#define CFG_EXPORT_MAX_ALLOW	16	/* allow= options of one export or volume */
#define CFG_MAX_LISTEN		8	/* addresses listened on (and so RDMA devices) */
#define CFG_POLL_US	0	/* see 'poll' in orfs-server(8) */
#define CFG_MAX_PROGRESS	64	/* progress threads */
#define CFG_AUTO_PROGRESS	4	/* most of them by default (progress 0) */
#define CFG_GRACE_LEASE	UINT_MAX	/* grace: as long as the lease */
#define CFG_PEER_CONNS		64	/* connections of one host, by default */
#define CFG_PEER_CONNS_MAX	256	/* and at most (the server's own bound) */
#define CFG_IDLE_TIMEOUT	300	/* seconds a silent connection is kept, by default */
#define CFG_IDLE_TIMEOUT_MAX	86400
#define CFG_STALL_TIMEOUT	30	/* seconds a TCP connection may move nothing it owes */
#define CFG_STALL_TIMEOUT_MAX	3600
#define CFG_SINKS_AUTO		0	/* per READ on iWARP, the pool's registration elsewhere */
#define CFG_SINKS_PER_READ	1	/* per READ on every transport */

/*
 * A client's address, IPv6 or IPv4 in one form: an IPv4 address is kept
 * mapped (::ffff:a.b.c.d), as a dual-stack socket shows it. All zero (::,
 * which no client has): not known.
 */
struct cfg_addr {
	uint8_t		b[16];
};

/* A network: an address and the bits of it that count (IPv4's plus 96). */
struct cfg_net {
	struct cfg_addr	addr;		/* bits past the prefix zero */
	int		bits;		/* 0 to 128 */
	int		secret;		/* server allow list: 1 + index in secret[], or 0 */
};

#define CFG_SECRET_PATH	256	/* a secret file's path, at most (NUL included) */

struct cfg_export {
	char		name[KNET_NAME_MAX + 1];
	char		path[PATH_MAX];
	int		service;	/* KNET_SVC_FILE or KNET_SVC_BLOCK */
	int		read_only;
	int		squash;		/* file service: FSVC_SQUASH_*, root's by default */
	uint32_t	anon_uid, anon_gid;	/* whom squashed callers become (65534) */
	int		subtree_check;	/* file service: check every handle's file */
	enum fq_class	class;
	/* Clients that may use it (as well as the server's allow list); 0: all. */
	struct cfg_net	allow[CFG_EXPORT_MAX_ALLOW];
	int		nallow;
	/* Block service: the volume's identity, if uuid= gives it. */
	uint8_t		uuid[16];
	int		has_uuid;
};

struct config {
	/* Addresses to listen on, each with its port ("": the default). */
	struct cfg_listen {
		char		addr[64];
		char		port[16];
	}			listen[CFG_MAX_LISTEN];
	int			nlisten;
	/* TCP addresses to listen on ("tcp://ADDRESS"), each with its port. */
	struct cfg_listen	tcp[CFG_MAX_LISTEN];
	int			ntcp;
	char			port[16];		/* the default port */
	char			state_dir[PATH_MAX];	/* file handle key */
	unsigned int		pool_mib;
	unsigned int		chunk_kib;
	unsigned int		threads;
	unsigned int		progress;	/* progress threads (shards); 0: one a CPU */
	unsigned int		poll_us;	/* busy-poll this long after activity */
	unsigned int		lease;		/* seconds a gone client's locks stay */
	unsigned int		grace;		/* seconds of reclaims after a start */
	unsigned int		peer_conns;	/* connections of one host at most */
	unsigned int		idle_timeout;	/* seconds of silence that close one; 0: never */
	unsigned int		stall_timeout;	/* seconds a TCP one may owe bytes and move none */
	int			read_sinks;	/* CFG_SINKS_*: how RDMA READ sinks are registered */
	struct cfg_export	ex[CFG_MAX_EXPORTS];
	int			nex;
	struct cfg_net		allow[CFG_MAX_ALLOW];
	int			nallow;		/* 0: every client may connect */
	/* The secrets of allow lines (secret=FILE), read when the line is. */
	struct auth_secret	secret[CFG_MAX_ALLOW];
	int			nsecret;
};

void config_init(struct config *c);

/*
 * Add an export (KNET_SVC_FILE) or volume (KNET_SVC_BLOCK) from the
 * command-line form NAME=PATH[,ro][,squash][,prio=high|normal|low]
 * [,allow=NETWORK]... Returns 0, or -1 with a message in ERR.
 */
int config_add_spec(struct config *c, int service, const char *spec, char *err, size_t errlen);

/* S, a decimal number from MIN to MAX, into *OUT; returns 0 or -1. */
int config_parse_uint(const char *s, unsigned int min, unsigned int max, unsigned int *out);

/* One line of a configuration file (comments and blank lines allowed). */
int config_parse_line(struct config *c, const char *line, char *err, size_t errlen);

/* A whole file; ERR names the line that failed. */
int config_parse_file(struct config *c, const char *path, char *err, size_t errlen);

/*
 * The address of SA (LEN bytes: a sockaddr_in or sockaddr_in6) into *A;
 * returns 0, or -1 (another family, too short) with *A all zero.
 */
int config_addr_from_sa(const void *sa, size_t len, struct cfg_addr *a);

/* Is A known (not all zero)? */
int config_addr_known(const struct cfg_addr *a);

/*
 * A as text: dotted for an IPv4 one, else IPv6; "?" if not known. BUF has
 * LEN bytes (INET6_ADDRSTRLEN is room for any). Returns BUF.
 */
const char *config_addr_str(const struct cfg_addr *a, char *buf, size_t len);

/*
 * Read a UUID written as 8-4-4-4-12 hexadecimal digits (either case) into
 * U. Returns 0, or -1 if TEXT is not one.
 */
int config_uuid_parse(const char *text, uint8_t u[16]);

/*
 * Is the client at A allowed to connect (by the server's allow list)? One
 * whose address is not known is, only where there is no list.
 */
int config_allowed(const struct config *c, const struct cfg_addr *a);

/*
 * The secret a client at A must prove: that of the most specific entry of
 * the server's allow list that matches A, or NULL (none, or no list).
 */
const struct auth_secret *config_secret_for(const struct config *c, const struct cfg_addr *a);

/* May the client at A use export or volume E (by its own allow= list, as above)? */
int config_export_allowed(const struct cfg_export *e, const struct cfg_addr *a);

/* Do A and B allow the same clients (the same entries, in the same order)? */
int config_same_allow(const struct cfg_export *a, const struct cfg_export *b);

/* The port of listen address I: its own, or the default. */
const char *config_listen_port(const struct config *c, int i);
/* The port of TCP listen address I: its own, or the default. */
const char *config_tcp_port(const struct config *c, int i);

/*
 * Add listen address ADDR with PORT (NULL or "": the default); returns 0,
 * or -1 with a message in ERR (too long, too many).
 */
int config_add_listen(struct config *c, const char *addr, const char *port, char *err,
		      size_t errlen);

/*
 * Is listen address I of C any address (0.0.0.0 or ::)? The server then
 * listens on every RDMA device of the host.
 */
int config_listen_any(const struct config *c, int i);

/* Do A and B listen on the same addresses and ports, in the same order? */
int config_same_listen(const struct config *a, const struct config *b);

/* The export named NAME for SERVICE, or NULL. */
const struct cfg_export *config_find(const struct config *c, int service, const char *name);

#endif /* ORFS_SERVER_CONFIG_H */

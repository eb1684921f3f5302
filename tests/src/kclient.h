/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Userspace client side of the knet protocol on libfabric, shared by the
 * test and load tools: one fabric, domain, event queue and completion
 * queue; any number of connections on them.
 */
#ifndef ORFS_TOOLS_KCLIENT_H
#define ORFS_TOOLS_KCLIENT_H

#include "server/auth.h"
#include "server/fab.h"
#include "server/proto.h"

struct kc_fabric {
	struct fi_info		*info;
	struct fid_fabric	*fabric;
	struct fid_eq		*eq;
	struct fid_domain	*domain;
	struct fid_cq		*cq;
};

struct kc_conn {
	struct fid_ep		*ep;
	int			credits;
	uint32_t		inline_max;
	uint32_t		max_io;
	uint16_t		max_segs;
	int			shutdown;
	int			auth;		/* the server asks for the authentication */
};

/* Returns 0 or a libfabric error (printed). */
int kc_open(struct kc_fabric *f, const char *addr, const char *port, const char *prov,
	    size_t cq_size);
void kc_close(struct kc_fabric *f);

/* An enabled endpoint on F's queues; post receives, then kc_connect(). */
int kc_ep_open(struct kc_fabric *f, struct kc_conn *c, void *context, size_t tx, size_t rx);
void kc_ep_close(struct kc_conn *c);

/*
 * Connect C and wait for the answer; with SECRET (NULL or empty: none) the
 * client says it will authenticate, and the server must ask for it.
 * Returns 0 when connected (limits in C), 3 when the server rejected it
 * (reason printed unless QUIET), 1 on other errors (a server that does
 * not authenticate to a client with a secret among them). Connect one
 * connection at a time: the event queue is shared.
 */
int kc_connect(struct kc_fabric *f, struct kc_conn *c, int version, int service,
	       const char *name, uint16_t depth, uint32_t inline_max,
	       const struct auth_secret *secret, int quiet);

/*
 * Send one KNET_OP_AUTH request with BODY (LEN bytes) and wait for its
 * reply: the tool's own message path. Returns the reply's status (0 or an
 * errno), -1 if the link failed; the reply's body into REP (at most
 * sizeof(struct knet_auth_rep) bytes), its length in *REP_LEN.
 */
typedef int (*kc_auth_call)(void *ctx, const void *body, uint32_t len, void *rep,
			    uint32_t *rep_len);

/*
 * The mutual authentication (knet_proto.h) of a connection to NAME of
 * SERVICE with K, through CALL. Returns 0, EACCES (either side's proof
 * failed: printed), or -1 if the link failed.
 */
int kc_auth(const struct auth_secret *k, int service, const char *name, kc_auth_call call,
	    void *ctx);

/*
 * The secret of a tool's -K FILE into *K (FILE NULL: none). Returns 0, or
 * -1 with the reason printed.
 */
int kc_load_secret(const char *file, struct auth_secret *k);

/*
 * The endpoint whose connection just went (FI_SHUTDOWN or a CM error), or
 * NULL: one event is consumed per call.
 */
struct fid *kc_peer_gone(struct kc_fabric *f);

#endif /* ORFS_TOOLS_KCLIENT_H */

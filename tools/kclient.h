/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Userspace client side of the knet protocol on libfabric, shared by the
 * test and load tools: one fabric, domain, event queue and completion
 * queue; any number of connections on them.
 */
#ifndef ORFS_TOOLS_KCLIENT_H
#define ORFS_TOOLS_KCLIENT_H

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
};

/* Returns 0 or a libfabric error (printed). */
int kc_open(struct kc_fabric *f, const char *addr, const char *port, const char *prov,
	    size_t cq_size);
void kc_close(struct kc_fabric *f);

/* An enabled endpoint on F's queues; post receives, then kc_connect(). */
int kc_ep_open(struct kc_fabric *f, struct kc_conn *c, void *context, size_t tx, size_t rx);
void kc_ep_close(struct kc_conn *c);

/*
 * Connect C and wait for the answer. Returns 0 when connected (limits in
 * C), 3 when the server rejected it (reason printed unless QUIET), 1 on
 * other errors. Connect one connection at a time: the event queue is shared.
 */
int kc_connect(struct kc_fabric *f, struct kc_conn *c, int version, int service,
	       const char *name, uint16_t depth, uint32_t inline_max, int quiet);

/*
 * The endpoint whose connection just went (FI_SHUTDOWN or a CM error), or
 * NULL: one event is consumed per call.
 */
struct fid *kc_peer_gone(struct kc_fabric *f);

#endif /* ORFS_TOOLS_KCLIENT_H */

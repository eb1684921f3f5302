/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The replay cache: answers to non-idempotent file operations (create,
 * remove, rename...), kept per client and transaction id for a while, so
 * that a request retransmitted after a reconnect is answered, not done
 * again. Bounded: the oldest entries go first.
 */
#ifndef ORFS_SERVER_REPLAY_H
#define ORFS_SERVER_REPLAY_H

#include <stdint.h>
#include <time.h>

#define REPLAY_ENTRIES	4096
#define REPLAY_BODY_MAX	256
#define REPLAY_SECONDS	600

struct replay_entry {
	uint64_t	client_id;
	uint64_t	xid;
	int		done;		/* 0 while the operation runs */
	uint32_t	status;
	uint32_t	body_len;
	time_t		when;
	uint8_t		body[REPLAY_BODY_MAX];
	struct replay_entry *hnext;	/* hash chain */
};

struct replay {
	struct replay_entry	e[REPLAY_ENTRIES];
	struct replay_entry	*hash[REPLAY_ENTRIES];
	uint32_t		next;	/* the oldest slot, reused next */
	uint64_t		hits;
};

void replay_init(struct replay *rp);

/*
 * The entry for (CLIENT, XID): found (returns it, done or running), or a
 * new running entry (returns it with *FRESH set). NOW is the time.
 */
struct replay_entry *replay_get(struct replay *rp, uint64_t client, uint64_t xid, time_t now,
				int *fresh);

/* Record the answer; a body larger than REPLAY_BODY_MAX drops the entry. */
void replay_done(struct replay *rp, struct replay_entry *e, uint32_t status, const void *body,
		 uint32_t len);

#endif /* ORFS_SERVER_REPLAY_H */

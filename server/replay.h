/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The replay cache: answers to non-idempotent file operations (create,
 * remove, rename...), kept per client and transaction id for a while, so
 * that a request retransmitted after a reconnect is answered, not done
 * again. Bounded: the oldest entries go first.
 */
#ifndef ORFS_SERVER_REPLAY_H
#define ORFS_SERVER_REPLAY_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

#define REPLAY_ENTRIES	4096
#define REPLAY_BODY_MAX	256
#define REPLAY_SECONDS	600
#define REPLAY_HOST_SHARE	(REPLAY_ENTRIES / 8)	/* one host's entries, past which it reuses its own */

struct replay_entry {
	uint64_t	client_id;
	uint64_t	host;		/* whose connection asked (a key of its address) */
	uint64_t	xid;
	int		done;		/* 0 while the operation runs */
	uint32_t	status;
	uint32_t	body_len;
	time_t		when;
	uint8_t		body[REPLAY_BODY_MAX];
	struct replay_entry *hnext;	/* hash chain */
};

/* Shared by the progress threads: every function takes the lock. */
struct replay {
	pthread_mutex_t		lock;
	struct replay_entry	e[REPLAY_ENTRIES];
	struct replay_entry	*hash[REPLAY_ENTRIES];
	uint32_t		next;	/* the oldest slot, reused next */
	uint64_t		hits;
	uint64_t		host_reuses;	/* a host at its share reused its own entry */
};

void replay_init(struct replay *rp);

/*
 * The entry for (CLIENT, XID): found (returns it, done or running), or a
 * new running entry (returns it with *FRESH set) of HOST, the host the
 * request came from. NOW is the time. A host that holds
 * REPLAY_HOST_SHARE entries already reuses its own oldest answered one,
 * so that no host evicts the others' answers.
 */
struct replay_entry *replay_get(struct replay *rp, uint64_t client, uint64_t host, uint64_t xid,
				time_t now, int *fresh);

enum replay_state {
	REPLAY_NEW,		/* first seen: run it, then replay_done() the entry */
	REPLAY_RUNNING,		/* the first try still runs */
	REPLAY_DONE,		/* answered before: the answer is copied out */
	REPLAY_UNCACHED,	/* every entry runs: run it without a record */
};

/*
 * replay_get() and a look at the entry in one step, so that another thread
 * cannot change it between the two: *EP is the new entry (REPLAY_NEW) or
 * NULL; for REPLAY_DONE, *STATUS, *LEN and BODY (REPLAY_BODY_MAX bytes of
 * room) hold the answer.
 */
enum replay_state replay_begin(struct replay *rp, uint64_t client, uint64_t host, uint64_t xid,
				time_t now, struct replay_entry **ep, uint32_t *status, void *body,
				uint32_t *len);

/* Record the answer; a body larger than REPLAY_BODY_MAX drops the entry. */
void replay_done(struct replay *rp, struct replay_entry *e, uint32_t status, const void *body,
		 uint32_t len);

#endif /* ORFS_SERVER_REPLAY_H */

// SPDX-License-Identifier: GPL-2.0-only
/* The replay cache of non-idempotent file operations. */
#include <string.h>

#include "server/replay.h"

static uint32_t bucket(uint64_t client, uint64_t xid)
{
	uint64_t h = (client ^ (xid * 0x9e3779b97f4a7c15ULL)) * 0xff51afd7ed558ccdULL;

	return (uint32_t)(h >> 32) % REPLAY_ENTRIES;
}

void replay_init(struct replay *rp)
{
	memset(rp, 0, sizeof(*rp));
	pthread_mutex_init(&rp->lock, NULL);
}

static void unhash(struct replay *rp, struct replay_entry *e)
{
	struct replay_entry **pp = &rp->hash[bucket(e->client_id, e->xid)];

	for (; *pp; pp = &(*pp)->hnext) {
		if (*pp == e) {
			*pp = e->hnext;
			break;
		}
	}
	memset(e, 0, sizeof(*e));
}

/*
 * HOST's oldest answered entry, if it holds its share already, else NULL.
 * A walk of the ring from its oldest slot: a few microseconds, against
 * the system calls of the operation it records.
 */
static struct replay_entry *host_full(struct replay *rp, uint64_t host)
{
	struct replay_entry *own = NULL, *e;
	uint32_t i, n = 0;

	for (i = 0; i < REPLAY_ENTRIES; i++) {
		e = &rp->e[(rp->next + i) % REPLAY_ENTRIES];
		if (!e->client_id || e->host != host)
			continue;
		n++;
		if (!own && e->done)
			own = e;
	}
	return n >= REPLAY_HOST_SHARE ? own : NULL;
}

static struct replay_entry *get_locked(struct replay *rp, uint64_t client, uint64_t host,
				       uint64_t xid, time_t now, int *fresh)
{
	uint32_t b = bucket(client, xid);
	struct replay_entry *e;

	*fresh = 0;
	for (e = rp->hash[b]; e; e = e->hnext) {
		if (e->client_id == client && e->xid == xid &&
		    (!e->done || now - e->when <= REPLAY_SECONDS)) {
			rp->hits++;
			return e;
		}
	}
	/* A host at its share reuses its own oldest answer, not another's. */
	e = host_full(rp, host);
	if (e) {
		rp->host_reuses++;
		unhash(rp, e);
		goto fill;
	}
	/* Reuse the oldest slot; a running one is skipped, never stolen. */
	e = &rp->e[rp->next];
	if (e->client_id && !e->done) {
		uint32_t i;

		for (i = 0; i < REPLAY_ENTRIES && e->client_id && !e->done; i++) {
			rp->next = (rp->next + 1) % REPLAY_ENTRIES;
			e = &rp->e[rp->next];
		}
		if (e->client_id && !e->done)
			return NULL;	/* every entry is running: do not cache */
	}
	rp->next = (rp->next + 1) % REPLAY_ENTRIES;
	if (e->client_id)
		unhash(rp, e);
fill:
	e->client_id = client;
	e->host = host;
	e->xid = xid;
	e->when = now;
	e->hnext = rp->hash[b];
	rp->hash[b] = e;
	*fresh = 1;
	return e;
}

struct replay_entry *replay_get(struct replay *rp, uint64_t client, uint64_t host, uint64_t xid,
				time_t now, int *fresh)
{
	struct replay_entry *e;

	pthread_mutex_lock(&rp->lock);
	e = get_locked(rp, client, host, xid, now, fresh);
	pthread_mutex_unlock(&rp->lock);
	return e;
}

enum replay_state replay_begin(struct replay *rp, uint64_t client, uint64_t host, uint64_t xid,
				time_t now, struct replay_entry **ep, uint32_t *status, void *body,
				uint32_t *len)
{
	enum replay_state st = REPLAY_NEW;
	struct replay_entry *e;
	int fresh;

	pthread_mutex_lock(&rp->lock);
	e = get_locked(rp, client, host, xid, now, &fresh);
	if (!e) {
		st = REPLAY_UNCACHED;
	} else if (!fresh && !e->done) {
		st = REPLAY_RUNNING;
		e = NULL;
	} else if (!fresh) {
		st = REPLAY_DONE;
		*status = e->status;
		*len = e->body_len;
		memcpy(body, e->body, e->body_len);
		e = NULL;
	}
	pthread_mutex_unlock(&rp->lock);
	*ep = e;
	return st;
}

void replay_done(struct replay *rp, struct replay_entry *e, uint32_t status, const void *body,
		 uint32_t len)
{
	pthread_mutex_lock(&rp->lock);
	if (len > REPLAY_BODY_MAX) {
		unhash(rp, e);
	} else {
		e->done = 1;
		e->status = status;
		e->body_len = len;
		if (len)
			memcpy(e->body, body, len);
	}
	pthread_mutex_unlock(&rp->lock);
}

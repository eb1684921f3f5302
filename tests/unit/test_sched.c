// SPDX-License-Identifier: GPL-2.0-only
/* Unit tests of the buffer pool and the fair queue (server/sched.c). */
#include <stdint.h>
#include <string.h>

#include "server/sched.h"
#include "tests/unit/unit.h"

static void test_pool(void)
{
	struct pool p;
	void *c[4];
	int i;

	CU_ASSERT_NOT_EQUAL(pool_init(&p, 1000, 4), 0);	/* not page-sized */
	CU_ASSERT_EQUAL_FATAL(pool_init(&p, 8192, 4), 0);
	for (i = 0; i < 4; i++) {
		c[i] = pool_get(&p);
		CU_ASSERT_PTR_NOT_NULL_FATAL(c[i]);
		CU_ASSERT_EQUAL((uintptr_t)c[i] % 4096, 0);
		memset(c[i], i, 8192);	/* every chunk is usable in full */
	}
	CU_ASSERT_PTR_NULL(pool_get(&p));	/* bounded */
	CU_ASSERT_TRUE(c[0] != c[1] && c[1] != c[2] && c[2] != c[3] && c[0] != c[3]);
	pool_put(&p, c[2]);
	CU_ASSERT_PTR_EQUAL(pool_get(&p), c[2]);
	for (i = 0; i < 4; i++)
		pool_put(&p, c[i]);
	CU_ASSERT_EQUAL(p.nfree, 4);
	pool_destroy(&p);
}

#define Q	(256u << 10)	/* the queue's turn: one chunk */

struct item {
	struct fq_item	it;
	int		flow;
};

/* Queue ITEM of FLOW, moving BYTES, on F. */
static void push(struct fq *q, struct fq_flow *f, struct item *item, int flow, uint32_t bytes)
{
	item->flow = flow;
	item->it.bytes = bytes;
	fq_push(q, f, &item->it);
}

static int pop_flow(struct fq *q, struct item *items)
{
	struct fq_item *it = fq_pop(q, NULL);

	(void)items;
	return it ? ((struct item *)it)->flow : -1;
}

static void test_round_robin(void)
{
	struct fq q;
	struct fq_flow f[3];
	struct item items[12];
	int order[12], i;

	fq_init(&q, Q);
	for (i = 0; i < 3; i++)
		fq_flow_init(&f[i], FQ_NORMAL);
	/* Flow 0 queues 6 requests before the others queue any. */
	for (i = 0; i < 6; i++)
		push(&q, &f[0], &items[i], 0, Q);
	for (i = 6; i < 12; i++)
		push(&q, &f[1 + (i % 2)], &items[i], 1 + (i % 2), Q);
	for (i = 0; i < 12; i++)
		order[i] = pop_flow(&q, items);
	/* Still served in turn, not first come first served. */
	CU_ASSERT_EQUAL(order[0], 0);
	CU_ASSERT_EQUAL(order[1], 1);
	CU_ASSERT_EQUAL(order[2], 2);
	CU_ASSERT_EQUAL(order[3], 0);
	CU_ASSERT_EQUAL(order[4], 1);
	CU_ASSERT_EQUAL(order[5], 2);
	CU_ASSERT_EQUAL(order[9], 0);
	CU_ASSERT_EQUAL(order[11], 0);
	CU_ASSERT_EQUAL(pop_flow(&q, items), -1);
	CU_ASSERT_EQUAL(q.queued, 0);
}

static void test_classes(void)
{
	struct fq q;
	struct fq_flow hi, lo;
	struct item items[200];
	int i, nhi = 0;

	fq_init(&q, Q);
	fq_flow_init(&hi, FQ_HIGH);
	fq_flow_init(&lo, FQ_LOW);
	for (i = 0; i < 200; i++)
		push(&q, i % 2 ? &lo : &hi, &items[i], i % 2, Q);
	/* Under contention high gets 4 turns for low's 1; low is never starved. */
	for (i = 0; i < 50; i++)
		nhi += pop_flow(&q, items) == 0;
	CU_ASSERT_EQUAL(nhi, 40);
	/* Once high is empty, low gets everything. */
	while (q.queued)
		pop_flow(&q, items);
	CU_ASSERT_EQUAL(hi.queued, 0);
	CU_ASSERT_EQUAL(lo.queued, 0);
}

/*
 * Fair by bytes, not by requests: a flow of 4 KiB requests and one of
 * whole chunks get the same bytes, within one chunk, however long the
 * small flow's queue; and a flow of chunks in the low class still gets
 * its seventh beside the high and normal classes' small requests.
 */
static void test_bytes(void)
{
	static struct item items[3000];
	struct fq_flow f[3];
	uint64_t got[3] = { 0 };
	struct fq q;
	int i, n = 0, big_turn = -1;

	fq_init(&q, Q);
	fq_flow_init(&f[0], FQ_NORMAL);
	fq_flow_init(&f[1], FQ_NORMAL);
	/* 2,000 small requests queued first, then 8 chunk-sized ones. */
	for (i = 0; i < 2000; i++, n++)
		push(&q, &f[0], &items[n], 0, 4096);
	for (i = 0; i < 8; i++, n++)
		push(&q, &f[1], &items[n], 1, Q);
	for (i = 0; i < 8 * 64 + 8; i++) {
		struct fq_flow *fl;
		struct item *it = (struct item *)fq_pop(&q, &fl);

		CU_ASSERT_PTR_NOT_NULL_FATAL(it);
		CU_ASSERT_PTR_EQUAL(fl, &f[it->flow]);
		got[it->flow] += it->it.bytes;
		if (it->flow == 1 && big_turn < 0)
			big_turn = i;
		/* At no point is either flow more than a chunk ahead. */
		CU_ASSERT_TRUE(got[0] <= got[1] + Q && got[1] <= got[0] + Q);
	}
	/* The first chunk is served after at most one turn of small requests. */
	CU_ASSERT_TRUE(big_turn >= 0 && big_turn <= 64);
	CU_ASSERT_EQUAL(got[1], 8 * (uint64_t)Q);
	CU_ASSERT_EQUAL(got[0], 8 * (uint64_t)Q);
	while (fq_pop(&q, NULL))
		;
	CU_ASSERT_EQUAL(q.queued, 0);

	/* Classes by bytes: high and normal send 4 KiB, low sends chunks. */
	fq_flow_init(&f[0], FQ_HIGH);
	fq_flow_init(&f[1], FQ_NORMAL);
	fq_flow_init(&f[2], FQ_LOW);
	memset(got, 0, sizeof(got));
	for (n = 0, i = 0; i < 2000; i++, n++)
		push(&q, &f[0], &items[n], 0, 4096);
	for (i = 0; i < 960; i++, n++)
		push(&q, &f[1], &items[n], 1, 4096);
	for (i = 0; i < 20; i++, n++)
		push(&q, &f[2], &items[n], 2, Q);
	/* 7 turns of the three classes: 28, 14 and 7 chunks' worth. */
	while (got[2] < 7 * (uint64_t)Q) {
		struct item *it = (struct item *)fq_pop(&q, NULL);

		CU_ASSERT_PTR_NOT_NULL_FATAL(it);
		got[it->flow] += it->it.bytes;
	}
	CU_ASSERT_TRUE(got[0] >= 24 * (uint64_t)Q && got[0] <= 28 * (uint64_t)Q);
	CU_ASSERT_TRUE(got[1] >= 12 * (uint64_t)Q && got[1] <= 14 * (uint64_t)Q);
}

static void test_remove(void)
{
	struct fq q;
	struct fq_flow f[2];
	struct item items[6];
	int i;

	fq_init(&q, Q);
	fq_flow_init(&f[0], FQ_NORMAL);
	fq_flow_init(&f[1], FQ_NORMAL);
	for (i = 0; i < 6; i++)
		push(&q, &f[i % 2], &items[i], i % 2, Q);
	fq_flow_remove(&q, &f[0]);
	CU_ASSERT_EQUAL(q.queued, 3);
	for (i = 0; i < 3; i++)
		CU_ASSERT_EQUAL(pop_flow(&q, items), 1);
	CU_ASSERT_EQUAL(pop_flow(&q, items), -1);
	fq_flow_remove(&q, &f[1]);	/* removing an idle flow is harmless */
	CU_ASSERT_EQUAL(q.queued, 0);
}

static void test_credits(void)
{
	int used = 0, n, i;

	/* The first clients get the most, bounded by their receive depth. */
	CU_ASSERT_EQUAL(credits_for(256, 0, 0, 16, 2, 8), 8);
	CU_ASSERT_EQUAL(credits_for(256, 0, 0, 16, 2, 64), 16);
	/* 256 connections: the budget plus 2 each at the very most. */
	for (i = 0; i < 256; i++) {
		n = credits_for(256, used, i, 16, 2, 8);
		CU_ASSERT_TRUE(n >= 2 && n <= 8);
		used += n;
	}
	CU_ASSERT_TRUE(used <= 256 + 2 * 256);
	/* An exhausted budget still gives the minimum; a small client less. */
	CU_ASSERT_EQUAL(credits_for(256, 256, 100, 16, 2, 8), 2);
	CU_ASSERT_EQUAL(credits_for(256, 300, 100, 16, 2, 8), 2);
	CU_ASSERT_EQUAL(credits_for(256, 0, 0, 16, 1, 1), 1);
}

int unit_add_sched_suite(void)
{
	CU_pSuite s = CU_add_suite("buffer pool and fair queue", NULL, NULL);

	if (!s ||
	    !CU_add_test(s, "pool: bounded, aligned, reusable", test_pool) ||
	    !CU_add_test(s, "fair queue: round robin across connections", test_round_robin) ||
	    !CU_add_test(s, "fair queue: weighted classes, no starvation", test_classes) ||
	    !CU_add_test(s, "fair queue: by bytes, across flows and classes", test_bytes) ||
	    !CU_add_test(s, "fair queue: a closing connection leaves", test_remove) ||
	    !CU_add_test(s, "credits: a shared receive budget, bounded", test_credits))
		return -1;
	return 0;
}

/* ---- the replay cache (server/replay.c) ------------------------------- */

#include "server/replay.h"

static void test_replay(void)
{
	static struct replay rp;
	struct replay_entry *e, *f;
	uint8_t big[REPLAY_BODY_MAX + 1] = { 0 };
	int fresh, i;

	replay_init(&rp);
	e = replay_get(&rp, 1, 1, 100, 1000, &fresh);
	CU_ASSERT_PTR_NOT_NULL_FATAL(e);
	CU_ASSERT_TRUE(fresh);
	/* A retransmission while it runs finds it running. */
	f = replay_get(&rp, 1, 1, 100, 1001, &fresh);
	CU_ASSERT_PTR_EQUAL(f, e);
	CU_ASSERT_FALSE(fresh);
	CU_ASSERT_FALSE(f->done);
	replay_done(&rp, e, 0, "answer", 6);
	f = replay_get(&rp, 1, 1, 100, 1002, &fresh);
	CU_ASSERT_PTR_EQUAL(f, e);
	CU_ASSERT_TRUE(f->done);
	CU_ASSERT_EQUAL(f->body_len, 6);
	CU_ASSERT_EQUAL(memcmp(f->body, "answer", 6), 0);
	/* Another client, the same xid: its own entry. */
	f = replay_get(&rp, 2, 2, 100, 1002, &fresh);
	CU_ASSERT_TRUE(fresh);
	CU_ASSERT_PTR_NOT_EQUAL(f, e);
	replay_done(&rp, f, 17, NULL, 0);
	/* Too old: a new entry. */
	f = replay_get(&rp, 1, 1, 100, 1002 + REPLAY_SECONDS + 1, &fresh);
	CU_ASSERT_TRUE(fresh);
	replay_done(&rp, f, 0, NULL, 0);
	/* An answer too large to keep is forgotten, not truncated. */
	e = replay_get(&rp, 3, 3, 1, 2000, &fresh);
	replay_done(&rp, e, 0, big, sizeof(big));
	e = replay_get(&rp, 3, 3, 1, 2000, &fresh);
	CU_ASSERT_TRUE(fresh);
	replay_done(&rp, e, 0, NULL, 0);
	/* Bounded: after REPLAY_ENTRIES more, the first is gone. */
	for (i = 0; i < REPLAY_ENTRIES; i++) {
		e = replay_get(&rp, 9, 9, (uint64_t)i + 1000, 3000, &fresh);
		CU_ASSERT_PTR_NOT_NULL_FATAL(e);
		replay_done(&rp, e, 0, NULL, 0);
	}
	replay_get(&rp, 2, 2, 100, 3000, &fresh);
	CU_ASSERT_TRUE(fresh);
}

/*
 * A host that sends one non-idempotent request after another (rotating
 * its client ids, too) reuses its own answers past its share: another
 * host's answers stay, to be replayed when it retransmits.
 */
static void test_replay_hosts(void)
{
	static struct replay rp;
	struct replay_entry *e;
	uint64_t i, mine = 0;
	int fresh;

	replay_init(&rp);
	for (i = 0; i < 10; i++) {
		e = replay_get(&rp, 7, 700, i, 1000, &fresh);
		CU_ASSERT_PTR_NOT_NULL_FATAL(e);
		replay_done(&rp, e, 0, NULL, 0);
	}
	for (i = 0; i < 4 * REPLAY_ENTRIES; i++) {
		e = replay_get(&rp, 100 + i, 900, i, 1001, &fresh);
		CU_ASSERT_PTR_NOT_NULL_FATAL(e);
		replay_done(&rp, e, 0, NULL, 0);
	}
	for (i = 0; i < 10; i++) {
		replay_get(&rp, 7, 700, i, 1002, &fresh);
		CU_ASSERT_FALSE(fresh);		/* still answered from the cache */
	}
	for (i = 0; i < REPLAY_ENTRIES; i++)
		mine += rp.e[i].client_id && rp.e[i].host == 900;
	CU_ASSERT_EQUAL(mine, REPLAY_HOST_SHARE);
	CU_ASSERT(rp.host_reuses >= 4 * REPLAY_ENTRIES - REPLAY_HOST_SHARE);
}

/* replay_begin(): the engine's one-step look, as several threads use it. */
static void test_replay_begin(void)
{
	static struct replay rp;
	struct replay_entry *e, *f;
	uint8_t body[REPLAY_BODY_MAX];
	uint32_t status = 99, len = 99;
	int i;

	replay_init(&rp);
	CU_ASSERT_EQUAL(replay_begin(&rp, 5, 5, 7, 100, &e, &status, body, &len), REPLAY_NEW);
	CU_ASSERT_PTR_NOT_NULL_FATAL(e);
	CU_ASSERT_EQUAL(status, 99);	/* untouched */
	CU_ASSERT_EQUAL(replay_begin(&rp, 5, 5, 7, 101, &f, &status, body, &len), REPLAY_RUNNING);
	CU_ASSERT_PTR_NULL(f);
	replay_done(&rp, e, 13, "abc", 3);
	CU_ASSERT_EQUAL(replay_begin(&rp, 5, 5, 7, 102, &f, &status, body, &len), REPLAY_DONE);
	CU_ASSERT_PTR_NULL(f);
	CU_ASSERT_EQUAL(status, 13);
	CU_ASSERT_EQUAL(len, 3);
	CU_ASSERT_EQUAL(memcmp(body, "abc", 3), 0);
	/* Every entry running: the operation runs without a record. */
	replay_init(&rp);
	for (i = 0; i < REPLAY_ENTRIES; i++)
		CU_ASSERT_EQUAL(replay_begin(&rp, 6, 6, (uint64_t)i, 200, &e, &status, body, &len),
				REPLAY_NEW);
	CU_ASSERT_EQUAL(replay_begin(&rp, 6, 6, REPLAY_ENTRIES, 200, &e, &status, body, &len),
			REPLAY_UNCACHED);
	CU_ASSERT_PTR_NULL(e);
}

int unit_add_replay_suite(void)
{
	CU_pSuite s = CU_add_suite("replay cache", NULL, NULL);

	if (!s || !CU_add_test(s, "answers kept per client and xid, bounded, aged", test_replay) ||
	    !CU_add_test(s, "one-step lookup: new, running, answered, uncached", test_replay_begin) ||
	    !CU_add_test(s, "a host past its share reuses its own answers", test_replay_hosts))
		return -1;
	return 0;
}

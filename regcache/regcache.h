/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * regcache: registration ("pin-down") cache for user memory, kept correct
 * by MMU interval notifiers. This is the interface knet uses; upper layers
 * never call it directly.
 */
#ifndef _REGCACHE_H
#define _REGCACHE_H

#include <linux/types.h>

struct regcache;

/**
 * struct regcache_stats - counters of one cache, read as a snapshot
 * @hits: lookups served by a cached, still valid entry
 * @misses: lookups that had to pin and map pages
 * @invalidations: entries killed by an MMU notifier
 * @evictions: idle entries dropped to respect the limits
 * @entries: entries currently in the cache
 * @pinned_bytes: bytes of user memory currently pinned by the cache
 */
struct regcache_stats {
	u64 hits;
	u64 misses;
	u64 invalidations;
	u64 evictions;
	u64 entries;
	u64 pinned_bytes;
};

struct regcache *regcache_create(const char *name);
void regcache_destroy(struct regcache *rc);
void regcache_get_stats(struct regcache *rc, struct regcache_stats *st);

#endif /* _REGCACHE_H */

/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * regcache: registration ("pin-down") cache for user memory, kept correct
 * by MMU interval notifiers. This is the interface knet uses; upper layers
 * never call it directly.
 */
#ifndef _REGCACHE_H
#define _REGCACHE_H

#include <linux/interval_tree.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mmu_notifier.h>
#include <linux/types.h>
#include <linux/workqueue.h>

struct ib_device;
struct regcache;

/**
 * struct regcache_stats - counters of one cache, read as a snapshot
 * @hits: lookups served by a cached, still valid entry
 * @misses: lookups that had to pin and map pages
 * @uncacheable: misses pinned for their I/O only, not cached: write pins of
 *	shared file mappings the kernel tracks writes to
 * @invalidations: entries killed by an MMU notifier
 * @evictions: idle entries dropped to respect the limits
 * @entries: entries currently in the cache
 * @pinned_bytes: bytes of user memory currently pinned (cached or not)
 * @live: entries allocated and not yet freed (cached, in use, or dying)
 * @hit_ns: nanoseconds spent in lookups that hit, in all
 * @miss_ns: nanoseconds spent in lookups that missed (pin, map, insert)
 */
struct regcache_stats {
	u64 hits;
	u64 misses;
	u64 uncacheable;
	u64 invalidations;
	u64 evictions;
	u64 entries;
	u64 pinned_bytes;
	u64 live;
	u64 hit_ns;
	u64 miss_ns;
};

/**
 * struct regcache_entry - pinned, DMA-mapped pages of a user range
 * @it: the page-aligned range [start, last] in the cache's tree
 * @mni: the interval notifier watching the range (cached entries)
 * @rc: the cache
 * @mm: the address space the pages belong to (held with mmgrab())
 * @ref: one for the cache while the entry is in its tree, one per user
 * @lru: position in the cache's LRU while cached
 * @free_work: frees the entry in process context after the last put
 * @npages: pages pinned
 * @writable: pinned for writing (the device may write the pages)
 * @cached: in the tree, found by lookups
 * @dead: invalidated or evicted; never found again
 * @notifier: @mni is registered
 * @pages: the pinned pages
 * @dma: the DMA address of each page for the cache's device
 *
 * Users see only @it.start, @npages, @pages and @dma, through
 * regcache_page() and regcache_dma().
 */
struct regcache_entry {
	struct interval_tree_node	it;
	struct mmu_interval_notifier	mni;
	struct regcache			*rc;
	struct mm_struct		*mm;
	struct kref			ref;
	struct list_head		lru;
	struct work_struct		free_work;
	unsigned int			npages;
	bool				writable;
	bool				cached;
	bool				dead;
	bool				notifier;
	struct page			**pages;
	u64				*dma;
};

/* Flags of regcache_get() */
#define REGCACHE_WRITE		0x1	/* the device will write the memory */
#define REGCACHE_NOCACHE	0x2	/* pin for this use only, cache nothing */

struct regcache *regcache_create(struct ib_device *dev);
void regcache_destroy(struct regcache *rc);
void regcache_get_stats(struct regcache *rc, struct regcache_stats *st);
struct regcache_entry *regcache_get(struct regcache *rc, unsigned long addr, size_t len,
				    unsigned int flags);
void regcache_put(struct regcache_entry *e);

/**
 * regcache_dma() - the DMA address of a user address inside an entry
 * @e: an entry from regcache_get()
 * @addr: a user address inside the range the entry was looked up for
 *
 * Return: the DMA address of @addr's byte, valid while @e is held.
 */
static inline u64 regcache_dma(const struct regcache_entry *e, unsigned long addr)
{
	unsigned long off = addr - e->it.start;

	return e->dma[off >> PAGE_SHIFT] + (off & ~PAGE_MASK);
}

/**
 * regcache_page() - the pinned page of a user address inside an entry
 * @e: an entry from regcache_get()
 * @addr: a user address inside the range the entry was looked up for
 *
 * The CPU may write the page in any context (kmap_local_page(); with
 * REGCACHE_WRITE) while @e is held: it stays pinned, so the data lands
 * where the buffer was when the entry was taken, as a device's would.
 *
 * Return: the page that holds @addr's byte.
 */
static inline struct page *regcache_page(const struct regcache_entry *e, unsigned long addr)
{
	return e->pages[(addr - e->it.start) >> PAGE_SHIFT];
}

#endif /* _REGCACHE_H */

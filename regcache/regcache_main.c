// SPDX-License-Identifier: GPL-2.0-only
/*
 * regcache: registration cache for user memory.
 *
 * A cache is created per RDMA device by knet. This file holds the cache
 * objects, their limits and their debugfs statistics; the pinning and
 * interval-notifier machinery lives beside it.
 */
#define pr_fmt(fmt) "regcache: " fmt

#include <linux/atomic.h>
#include <linux/debugfs.h>
#include <linux/list.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "regcache.h"

static unsigned int max_entries = 4096;
module_param(max_entries, uint, 0644);
MODULE_PARM_DESC(max_entries, "Largest number of cached registrations per device (default 4096)");

static unsigned int max_mb = 1024;
module_param(max_mb, uint, 0644);
MODULE_PARM_DESC(max_mb, "Largest amount of pinned user memory per device, in MiB (default 1024)");

struct regcache {
	struct list_head	node;		/* in regcache_list */
	char			name[32];
	struct dentry		*dir;
	atomic64_t		hits;
	atomic64_t		misses;
	atomic64_t		invalidations;
	atomic64_t		evictions;
	atomic64_t		entries;
	atomic64_t		pinned_bytes;
};

static struct dentry *regcache_debugfs;
static LIST_HEAD(regcache_list);
static DEFINE_MUTEX(regcache_list_lock);

/**
 * regcache_get_stats() - read a snapshot of the counters of a cache
 * @rc: the cache
 * @st: filled with the counters
 */
void regcache_get_stats(struct regcache *rc, struct regcache_stats *st)
{
	st->hits = atomic64_read(&rc->hits);
	st->misses = atomic64_read(&rc->misses);
	st->invalidations = atomic64_read(&rc->invalidations);
	st->evictions = atomic64_read(&rc->evictions);
	st->entries = atomic64_read(&rc->entries);
	st->pinned_bytes = atomic64_read(&rc->pinned_bytes);
}
EXPORT_SYMBOL_GPL(regcache_get_stats);

static int regcache_stats_show(struct seq_file *m, void *v)
{
	struct regcache *rc = m->private;
	struct regcache_stats st;

	regcache_get_stats(rc, &st);
	seq_printf(m, "hits %llu\n", st.hits);
	seq_printf(m, "misses %llu\n", st.misses);
	seq_printf(m, "invalidations %llu\n", st.invalidations);
	seq_printf(m, "evictions %llu\n", st.evictions);
	seq_printf(m, "entries %llu\n", st.entries);
	seq_printf(m, "pinned_bytes %llu\n", st.pinned_bytes);
	seq_printf(m, "max_entries %u\n", READ_ONCE(max_entries));
	seq_printf(m, "max_bytes %llu\n", (u64)READ_ONCE(max_mb) << 20);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(regcache_stats);

/**
 * regcache_create() - create an empty registration cache
 * @name: name shown in debugfs, normally the RDMA device name
 *
 * Context: process context, may sleep.
 * Return: the cache, or an ERR_PTR() on failure.
 */
struct regcache *regcache_create(const char *name)
{
	struct regcache *rc;

	rc = kzalloc(sizeof(*rc), GFP_KERNEL);
	if (!rc)
		return ERR_PTR(-ENOMEM);
	strscpy(rc->name, name, sizeof(rc->name));

	/* debugfs is best effort: a missing directory is not an error. */
	rc->dir = debugfs_create_dir(rc->name, regcache_debugfs);
	debugfs_create_file("stats", 0444, rc->dir, rc, &regcache_stats_fops);

	mutex_lock(&regcache_list_lock);
	list_add_tail(&rc->node, &regcache_list);
	mutex_unlock(&regcache_list_lock);
	pr_debug("created cache %s\n", rc->name);
	return rc;
}
EXPORT_SYMBOL_GPL(regcache_create);

/**
 * regcache_destroy() - tear down a cache created by regcache_create()
 * @rc: the cache; may be an error pointer or NULL, which is ignored
 *
 * Context: process context, may sleep. The caller guarantees that no
 * lookup on @rc is running or will start.
 */
void regcache_destroy(struct regcache *rc)
{
	if (IS_ERR_OR_NULL(rc))
		return;
	mutex_lock(&regcache_list_lock);
	list_del(&rc->node);
	mutex_unlock(&regcache_list_lock);
	debugfs_remove_recursive(rc->dir);
	WARN_ON(atomic64_read(&rc->entries) || atomic64_read(&rc->pinned_bytes));
	pr_debug("destroyed cache %s\n", rc->name);
	kfree(rc);
}
EXPORT_SYMBOL_GPL(regcache_destroy);

static int __init regcache_init(void)
{
	regcache_debugfs = debugfs_create_dir("regcache", NULL);
	pr_info("loaded (max_entries=%u max_mb=%u)\n", max_entries, max_mb);
	return 0;
}

static void __exit regcache_exit(void)
{
	/* Every cache belongs to a module that depends on us and is gone. */
	WARN_ON(!list_empty(&regcache_list));
	debugfs_remove_recursive(regcache_debugfs);
	pr_info("unloaded\n");
}

module_init(regcache_init);
module_exit(regcache_exit);

MODULE_DESCRIPTION("Registration cache for user memory over RDMA");
MODULE_LICENSE("GPL");

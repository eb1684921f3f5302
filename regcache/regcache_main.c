// SPDX-License-Identifier: GPL-2.0-only
/*
 * regcache: registration ("pin-down") cache for user memory.
 *
 * knet creates one cache per RDMA device. A lookup names a range of the
 * calling process's memory; the cache answers with an entry holding the
 * range's pages pinned (pin_user_pages_fast(), FOLL_LONGTERM) and mapped
 * for the device. Entries stay cached after use, so the next I/O from the
 * same buffer costs a tree lookup instead of a page-table walk, a pin and
 * a mapping. A range the kernel will not pin for long (a shared, writable
 * mapping of a file whose writes it tracks, for a device that writes it:
 * an O_DIRECT read into a mapped file) is pinned for its I/O only and not
 * cached, as the block layer pins O_DIRECT buffers.
 *
 * Correctness: each cached entry has an mmu_interval_notifier on its
 * range. Whatever changes the mapping (munmap, mremap, mprotect,
 * madvise(DONTNEED), fork's write protection, exit) invalidates the range
 * first; the notifier then marks the entry dead and unlinks it, so no
 * later lookup can return pages that are no longer the process's. The
 * notifier only marks and unlinks (it may run where sleeping is not
 * allowed); the entry is unmapped, unpinned and freed from a work item
 * once its last user is gone. A user still holding a dead entry keeps
 * valid, pinned pages: a device write lands in the pages that were the
 * buffer when the I/O started, never in a page that belongs to someone
 * else. The pin is checked against invalidations that race with it with
 * the notifier's sequence (mmu_interval_read_begin()/read_retry()).
 *
 * Limits: entries and pinned bytes per cache (module parameters), with an
 * LRU of idle entries evicted first; pinned pages are accounted to the
 * owning mm (pinned_vm) against RLIMIT_MEMLOCK unless CAP_IPC_LOCK.
 * Under memory pressure a shrinker evicts idle entries of every cache.
 *
 * Locking: rc->lock (a spinlock, irq-safe since entries are put from
 * completion context) protects the tree, the LRU and the cached/dead
 * flags. Pinning and mapping happen outside it.
 */
#define pr_fmt(fmt) "regcache: " fmt

#include <linux/atomic.h>
#include <linux/debugfs.h>
#include <linux/list.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/ktime.h>
#include <linux/mutex.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/seq_file.h>
#include <linux/shrinker.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/wait.h>
#include <rdma/ib_verbs.h>

#include "regcache.h"

static unsigned int max_entries = 4096;
module_param(max_entries, uint, 0644);
MODULE_PARM_DESC(max_entries, "Largest number of cached registrations per device (default 4096)");

static unsigned int max_mb = 1024;
module_param(max_mb, uint, 0644);
MODULE_PARM_DESC(max_mb, "Largest amount of cached pinned user memory per device, in MiB (default 1024)");

#define REGCACHE_PIN_RETRIES	16

struct regcache {
	struct list_head	node;		/* in regcache_list */
	struct ib_device	*dev;
	char			name[IB_DEVICE_NAME_MAX];
	struct dentry		*dir;
	spinlock_t		lock;		/* tree, lru, entry cached/dead */
	struct rb_root_cached	tree;
	struct list_head	lru;		/* cached entries, least recent first */
	unsigned long		cached_pages;
	wait_queue_head_t	freed;		/* an entry was freed */
	atomic64_t		hits;
	atomic64_t		misses;
	atomic64_t		uncacheable;
	atomic64_t		invalidations;
	atomic64_t		evictions;
	atomic64_t		entries;
	atomic64_t		pinned_bytes;
	atomic64_t		live;
	atomic64_t		hit_ns;		/* time spent in lookups that hit */
	atomic64_t		miss_ns;	/* ... that missed: pin, map, insert */
};

static struct dentry *regcache_debugfs;
static LIST_HEAD(regcache_list);
static DEFINE_MUTEX(regcache_list_lock);
static struct workqueue_struct *regcache_wq;

/* ---- entries ---------------------------------------------------------- */

static void regcache_unpin(struct regcache_entry *e, unsigned int npages)
{
	struct ib_device *dev = e->rc->dev;
	unsigned int i;

	for (i = 0; dev && i < npages; i++)
		ib_dma_unmap_page(dev, e->dma[i], PAGE_SIZE, DMA_BIDIRECTIONAL);
	unpin_user_pages_dirty_lock(e->pages, npages, e->writable);
}

static void regcache_free_work(struct work_struct *w)
{
	struct regcache_entry *e = container_of(w, struct regcache_entry, free_work);
	struct regcache *rc = e->rc;

	if (e->notifier)
		mmu_interval_notifier_remove(&e->mni);
	regcache_unpin(e, e->npages);
	atomic64_sub(e->npages, &e->mm->pinned_vm);
	atomic64_sub((u64)e->npages << PAGE_SHIFT, &rc->pinned_bytes);
	mmdrop(e->mm);
	kvfree(e->pages);
	kvfree(e->dma);
	kfree(e);
	atomic64_dec(&rc->live);
	wake_up_all(&rc->freed);
}

static void regcache_release(struct kref *ref)
{
	struct regcache_entry *e = container_of(ref, struct regcache_entry, ref);

	/* Unpinning may sleep and the last put may come from softirq. */
	queue_work(regcache_wq, &e->free_work);
}

/**
 * regcache_put() - drop a reference taken by regcache_get()
 * @e: the entry
 *
 * Context: any; never sleeps.
 */
void regcache_put(struct regcache_entry *e)
{
	kref_put(&e->ref, regcache_release);
}
EXPORT_SYMBOL_GPL(regcache_put);

/* Under rc->lock: take a cached entry out of the tree and the LRU. */
static void regcache_unlink(struct regcache *rc, struct regcache_entry *e)
{
	interval_tree_remove(&e->it, &rc->tree);
	list_del_init(&e->lru);
	e->cached = false;
	e->dead = true;
	rc->cached_pages -= e->npages;
	atomic64_dec(&rc->entries);
}

static bool regcache_invalidate(struct mmu_interval_notifier *mni,
				const struct mmu_notifier_range *range,
				unsigned long cur_seq)
{
	struct regcache_entry *e = container_of(mni, struct regcache_entry, mni);
	struct regcache *rc = e->rc;
	unsigned long flags;
	bool drop = false;

	/* Mark and unlink only: this may run where sleeping is forbidden. */
	spin_lock_irqsave(&rc->lock, flags);
	mmu_interval_set_seq(mni, cur_seq);
	if (e->cached) {
		regcache_unlink(rc, e);
		atomic64_inc(&rc->invalidations);
		drop = true;
	}
	e->dead = true;
	spin_unlock_irqrestore(&rc->lock, flags);
	if (drop)
		regcache_put(e);
	return true;
}

static const struct mmu_interval_notifier_ops regcache_mni_ops = {
	.invalidate = regcache_invalidate,
};

/*
 * Evict idle entries, least recently used first: with SCAN set, until
 * SCAN pages are evicted (memory pressure); else with MM set, all of that
 * mm's idle entries; else until the cache can take NEED more pages and
 * one more entry. The pages go back from a work item. Never sleeps.
 * Return: the number of pages evicted.
 */
static unsigned long regcache_evict(struct regcache *rc, unsigned long need,
				    struct mm_struct *mm, unsigned long scan)
{
	unsigned long max_pages = (unsigned long)READ_ONCE(max_mb) << (20 - PAGE_SHIFT);
	struct regcache_entry *e, *tmp;
	unsigned long flags, evicted = 0;
	LIST_HEAD(victims);

	spin_lock_irqsave(&rc->lock, flags);
	list_for_each_entry_safe(e, tmp, &rc->lru, lru) {
		if (scan ? evicted >= scan :
		    !mm && rc->cached_pages + need <= max_pages &&
		    atomic64_read(&rc->entries) < READ_ONCE(max_entries))
			break;
		if (mm && e->mm != mm)
			continue;
		if (kref_read(&e->ref) > 1)
			continue;		/* in use */
		evicted += e->npages;
		regcache_unlink(rc, e);
		list_add_tail(&e->lru, &victims);
		atomic64_inc(&rc->evictions);
	}
	spin_unlock_irqrestore(&rc->lock, flags);
	list_for_each_entry_safe(e, tmp, &victims, lru) {
		list_del_init(&e->lru);
		regcache_put(e);
	}
	return evicted;
}

/*
 * Memory pressure: cached idle entries hold pinned pages the kernel cannot
 * reclaim, so a shrinker gives them back, least recently used first, in
 * every device's cache. The objects it counts are pinned pages.
 */
static unsigned long regcache_shrink_count(struct shrinker *sh, struct shrink_control *sc)
{
	unsigned long pages = 0;
	struct regcache *rc;

	if (!mutex_trylock(&regcache_list_lock))
		return 0;
	list_for_each_entry(rc, &regcache_list, node)
		pages += READ_ONCE(rc->cached_pages);
	mutex_unlock(&regcache_list_lock);
	return pages ?: SHRINK_EMPTY;
}

static unsigned long regcache_shrink_scan(struct shrinker *sh, struct shrink_control *sc)
{
	unsigned long freed = 0;
	struct regcache *rc;

	if (!mutex_trylock(&regcache_list_lock))
		return SHRINK_STOP;
	list_for_each_entry(rc, &regcache_list, node) {
		if (freed >= sc->nr_to_scan)
			break;
		freed += regcache_evict(rc, 0, NULL, sc->nr_to_scan - freed);
	}
	mutex_unlock(&regcache_list_lock);
	return freed ?: SHRINK_STOP;
}

#ifdef REGCACHE_HAVE_SHRINKER_ALLOC
static struct shrinker *regcache_shrinker;

static int regcache_shrinker_register(void)
{
	regcache_shrinker = shrinker_alloc(0, "regcache");
	if (!regcache_shrinker)
		return -ENOMEM;
	regcache_shrinker->count_objects = regcache_shrink_count;
	regcache_shrinker->scan_objects = regcache_shrink_scan;
	shrinker_register(regcache_shrinker);
	return 0;
}

static void regcache_shrinker_unregister(void)
{
	shrinker_free(regcache_shrinker);
}
#else
static struct shrinker regcache_shrinker_s = {
	.count_objects	= regcache_shrink_count,
	.scan_objects	= regcache_shrink_scan,
	.seeks		= DEFAULT_SEEKS,
};

static int regcache_shrinker_register(void)
{
	return register_shrinker(&regcache_shrinker_s, "regcache");
}

static void regcache_shrinker_unregister(void)
{
	unregister_shrinker(&regcache_shrinker_s);
}
#endif

/* Charge NPAGES to the caller's mm against RLIMIT_MEMLOCK. */
static int regcache_charge(struct regcache *rc, struct mm_struct *mm, unsigned long npages)
{
	unsigned long limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	bool evicted = false;

	for (;;) {
		u64 total = atomic64_add_return(npages, &mm->pinned_vm);

		if (total <= limit || capable(CAP_IPC_LOCK))
			return 0;
		atomic64_sub(npages, &mm->pinned_vm);
		if (evicted)
			return -ENOMEM;
		/* Our own idle entries of this mm count too: drop them first. */
		regcache_evict(rc, 0, mm, 0);
		flush_workqueue(regcache_wq);
		evicted = true;
	}
}

/*
 * Pin the pages of E from START: for as long as the cache keeps them
 * (FOLL_LONGTERM) when LONGTERM, else for one I/O, as the block layer pins
 * an O_DIRECT buffer.
 */
static int regcache_pin(struct regcache_entry *e, unsigned long start, bool longterm)
{
	unsigned int gup = (longterm ? FOLL_LONGTERM : 0) | (e->writable ? FOLL_WRITE : 0);
	struct ib_device *dev = e->rc->dev;
	unsigned int done = 0, i;
	int ret;

	while (done < e->npages) {
		ret = pin_user_pages_fast(start + ((unsigned long)done << PAGE_SHIFT),
					  e->npages - done, gup, e->pages + done);
		if (ret <= 0) {
			ret = ret ?: -EFAULT;
			goto unpin;
		}
		done += ret;
	}
	for (i = 0; dev && i < e->npages; i++) {
		e->dma[i] = ib_dma_map_page(dev, e->pages[i], 0, PAGE_SIZE, DMA_BIDIRECTIONAL);
		if (ib_dma_mapping_error(dev, e->dma[i])) {
			while (i--)
				ib_dma_unmap_page(dev, e->dma[i], PAGE_SIZE, DMA_BIDIRECTIONAL);
			ret = -ENOMEM;
			goto unpin;
		}
	}
	return 0;

unpin:
	unpin_user_pages(e->pages, done);
	return ret;
}

static struct regcache_entry *regcache_lookup(struct regcache *rc, unsigned long start,
					      unsigned long last, bool write)
{
	struct interval_tree_node *it;
	struct regcache_entry *e;
	unsigned long flags;

	spin_lock_irqsave(&rc->lock, flags);
	for (it = interval_tree_iter_first(&rc->tree, start, last); it;
	     it = interval_tree_iter_next(it, start, last)) {
		e = container_of(it, struct regcache_entry, it);
		if (e->mm != current->mm || it->start > start || it->last < last ||
		    (write && !e->writable))
			continue;
		kref_get(&e->ref);
		list_move_tail(&e->lru, &rc->lru);
		spin_unlock_irqrestore(&rc->lock, flags);
		atomic64_inc(&rc->hits);
		return e;
	}
	spin_unlock_irqrestore(&rc->lock, flags);
	return NULL;
}

/**
 * regcache_get() - pinned, DMA-mapped pages for a range of the caller's memory
 * @rc: the cache of the device that will access the memory
 * @addr: user address in the calling process
 * @len: bytes, at least one
 * @flags: REGCACHE_WRITE when the device will write the memory;
 *	REGCACHE_NOCACHE to pin for this use only
 *
 * A cached entry covering the range is returned when there is one;
 * otherwise the range's pages are pinned and mapped, and the entry is
 * cached unless @flags says not to. The pages are the ones mapped at the
 * range at the time of the call and stay pinned until regcache_put().
 *
 * Context: process context of the memory's owner, may sleep.
 * Return: the entry, or an ERR_PTR(): -EFAULT (not mapped, or not
 * writable for REGCACHE_WRITE), -ENOMEM (out of memory, or over
 * RLIMIT_MEMLOCK), -EINVAL, -EAGAIN (the range kept changing), -EINTR.
 */
struct regcache_entry *regcache_get(struct regcache *rc, unsigned long addr, size_t len,
				    unsigned int flags)
{
	struct mm_struct *mm = current->mm;
	bool write = flags & REGCACHE_WRITE;
	bool cache = !(flags & REGCACHE_NOCACHE);
	unsigned long start, last, irqf;
	struct regcache_entry *e;
	unsigned int tries = 0;
	unsigned long seq = 0;
	u64 t0 = ktime_get_ns();
	int ret;

	if (!mm || !len || addr + len < addr)
		return ERR_PTR(-EINVAL);
	start = addr & PAGE_MASK;
	last = PAGE_ALIGN(addr + len) - 1;
	if (!access_ok((void __user *)addr, len))
		return ERR_PTR(-EFAULT);
	if (cache) {
		e = regcache_lookup(rc, start, last, write);
		if (e) {
			atomic64_add(ktime_get_ns() - t0, &rc->hit_ns);
			return e;
		}
	}
	atomic64_inc(&rc->misses);

	e = kzalloc(sizeof(*e), GFP_KERNEL);
	if (!e)
		return ERR_PTR(-ENOMEM);
	e->rc = rc;
	mmgrab(mm);
	e->mm = mm;
	e->it.start = start;
	e->it.last = last;
	e->npages = (last + 1 - start) >> PAGE_SHIFT;
	e->writable = write;
	kref_init(&e->ref);
	INIT_LIST_HEAD(&e->lru);
	INIT_WORK(&e->free_work, regcache_free_work);
	e->pages = kvmalloc_array(e->npages, sizeof(*e->pages), GFP_KERNEL);
	e->dma = kvmalloc_array(e->npages, sizeof(*e->dma), GFP_KERNEL);
	if (!e->pages || !e->dma) {
		ret = -ENOMEM;
		goto free;
	}
	if (cache)
		regcache_evict(rc, e->npages, NULL, 0);
	ret = regcache_charge(rc, mm, e->npages);
	if (ret)
		goto free;
	if (cache) {
		ret = mmu_interval_notifier_insert(&e->mni, mm, start, last + 1 - start,
						   &regcache_mni_ops);
		if (ret)
			goto uncharge;
		e->notifier = true;
	}
	for (;;) {
		if (cache)
			seq = mmu_interval_read_begin(&e->mni);
		ret = regcache_pin(e, start, cache);
		if (ret == -EFAULT && cache && write) {
			/*
			 * The kernel refuses long-term write pins of a shared
			 * mapping of a file whose writes it tracks (a file of a
			 * file system with write-back, ORFS's own included): an
			 * O_DIRECT read into one is pinned for its I/O only.
			 */
			mmu_interval_notifier_remove(&e->mni);
			e->notifier = false;
			cache = false;
			continue;
		}
		if (ret)
			goto remove;
		if (!cache)
			break;
		spin_lock_irqsave(&rc->lock, irqf);
		if (!mmu_interval_read_retry(&e->mni, seq)) {
			/* Valid now, and the notifier will tell us when not. */
			interval_tree_insert(&e->it, &rc->tree);
			list_add_tail(&e->lru, &rc->lru);
			rc->cached_pages += e->npages;
			e->cached = true;
			kref_get(&e->ref);		/* the cache's */
			atomic64_inc(&rc->entries);
			spin_unlock_irqrestore(&rc->lock, irqf);
			break;
		}
		spin_unlock_irqrestore(&rc->lock, irqf);
		/* The range changed while we pinned: those pages may be stale. */
		regcache_unpin(e, e->npages);
		e->dead = false;
		if (++tries == REGCACHE_PIN_RETRIES) {
			ret = -EAGAIN;
			goto remove;
		}
		if (fatal_signal_pending(current)) {
			ret = -EINTR;
			goto remove;
		}
		cond_resched();
	}
	if (!cache && !(flags & REGCACHE_NOCACHE))
		atomic64_inc(&rc->uncacheable);
	atomic64_add((u64)e->npages << PAGE_SHIFT, &rc->pinned_bytes);
	atomic64_inc(&rc->live);
	atomic64_add(ktime_get_ns() - t0, &rc->miss_ns);
	return e;

remove:
	if (e->notifier)
		mmu_interval_notifier_remove(&e->mni);
uncharge:
	atomic64_sub(e->npages, &mm->pinned_vm);
free:
	mmdrop(mm);
	kvfree(e->pages);
	kvfree(e->dma);
	kfree(e);
	return ERR_PTR(ret);
}
EXPORT_SYMBOL_GPL(regcache_get);

/* ---- caches ----------------------------------------------------------- */

/**
 * regcache_get_stats() - read a snapshot of the counters of a cache
 * @rc: the cache
 * @st: filled with the counters
 */
void regcache_get_stats(struct regcache *rc, struct regcache_stats *st)
{
	st->hits = atomic64_read(&rc->hits);
	st->misses = atomic64_read(&rc->misses);
	st->uncacheable = atomic64_read(&rc->uncacheable);
	st->invalidations = atomic64_read(&rc->invalidations);
	st->evictions = atomic64_read(&rc->evictions);
	st->entries = atomic64_read(&rc->entries);
	st->pinned_bytes = atomic64_read(&rc->pinned_bytes);
	st->live = atomic64_read(&rc->live);
	st->hit_ns = atomic64_read(&rc->hit_ns);
	st->miss_ns = atomic64_read(&rc->miss_ns);
}
EXPORT_SYMBOL_GPL(regcache_get_stats);

static int regcache_stats_show(struct seq_file *m, void *v)
{
	struct regcache *rc = m->private;
	struct regcache_stats st;

	regcache_get_stats(rc, &st);
	seq_printf(m, "hits %llu\n", st.hits);
	seq_printf(m, "misses %llu\n", st.misses);
	seq_printf(m, "uncacheable %llu\n", st.uncacheable);
	seq_printf(m, "invalidations %llu\n", st.invalidations);
	seq_printf(m, "evictions %llu\n", st.evictions);
	seq_printf(m, "entries %llu\n", st.entries);
	seq_printf(m, "pinned_bytes %llu\n", st.pinned_bytes);
	seq_printf(m, "live %llu\n", st.live);
	seq_printf(m, "hit_ns %llu\n", st.hit_ns);
	seq_printf(m, "miss_ns %llu\n", st.miss_ns);
	seq_printf(m, "max_entries %u\n", READ_ONCE(max_entries));
	seq_printf(m, "max_bytes %llu\n", (u64)READ_ONCE(max_mb) << 20);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(regcache_stats);

/* Writing anything to "flush" drops every idle entry (tests, benchmarks). */
static ssize_t regcache_flush_write(struct file *file, const char __user *buf, size_t count,
				    loff_t *ppos)
{
	struct regcache *rc = file_inode(file)->i_private;

	regcache_evict(rc, ULONG_MAX / 2, NULL, 0);
	flush_workqueue(regcache_wq);
	return count;
}

static const struct file_operations regcache_flush_fops = {
	.owner	= THIS_MODULE,
	.open	= simple_open,
	.write	= regcache_flush_write,
	.llseek	= noop_llseek,
};

/**
 * regcache_create() - create an empty registration cache for a device
 * @dev: the RDMA device the cached pages are mapped for, or NULL for
 *	pages only the CPU reaches (a socket's sends and receives): they
 *	are pinned but not mapped, and regcache_dma() means nothing
 *
 * Context: process context, may sleep.
 * Return: the cache, or an ERR_PTR() on failure.
 */
struct regcache *regcache_create(struct ib_device *dev)
{
	struct regcache *rc;

	rc = kzalloc(sizeof(*rc), GFP_KERNEL);
	if (!rc)
		return ERR_PTR(-ENOMEM);
	rc->dev = dev;
	strscpy(rc->name, dev ? dev_name(&dev->dev) : "tcp", sizeof(rc->name));
	spin_lock_init(&rc->lock);
	rc->tree = RB_ROOT_CACHED;
	INIT_LIST_HEAD(&rc->lru);
	init_waitqueue_head(&rc->freed);

	/* debugfs is best effort: a missing directory is not an error. */
	rc->dir = debugfs_create_dir(rc->name, regcache_debugfs);
	debugfs_create_file("stats", 0444, rc->dir, rc, &regcache_stats_fops);
	debugfs_create_file("flush", 0200, rc->dir, rc, &regcache_flush_fops);

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
 * Drops every cached entry and waits until the entries still held by
 * users (requests in flight) are put and freed.
 *
 * Context: process context, may sleep. No new lookup may start.
 */
void regcache_destroy(struct regcache *rc)
{
	struct regcache_entry *e;
	unsigned long flags;

	if (IS_ERR_OR_NULL(rc))
		return;
	mutex_lock(&regcache_list_lock);
	list_del(&rc->node);
	mutex_unlock(&regcache_list_lock);
	debugfs_remove_recursive(rc->dir);

	spin_lock_irqsave(&rc->lock, flags);
	while (!list_empty(&rc->lru)) {
		e = list_first_entry(&rc->lru, struct regcache_entry, lru);
		regcache_unlink(rc, e);
		spin_unlock_irqrestore(&rc->lock, flags);
		regcache_put(e);
		spin_lock_irqsave(&rc->lock, flags);
	}
	spin_unlock_irqrestore(&rc->lock, flags);
	/*
	 * The endpoints on the device are gone, so nothing should hold an
	 * entry. One still held after a while is a leak: warn and leave the
	 * cache allocated rather than hang or free what it points to.
	 */
	if (!wait_event_timeout(rc->freed, !atomic64_read(&rc->live), 30 * HZ)) {
		WARN(1, "regcache: %s: %lld entries still held at teardown\n", rc->name,
		     atomic64_read(&rc->live));
		return;
	}
	flush_workqueue(regcache_wq);
	WARN_ON(atomic64_read(&rc->entries) || atomic64_read(&rc->pinned_bytes));
	pr_debug("destroyed cache %s\n", rc->name);
	kfree(rc);
}
EXPORT_SYMBOL_GPL(regcache_destroy);

static int __init regcache_init(void)
{
	int ret;

	regcache_wq = alloc_workqueue("regcache", WQ_UNBOUND | WQ_MEM_RECLAIM, 0);
	if (!regcache_wq)
		return -ENOMEM;
	ret = regcache_shrinker_register();
	if (ret) {
		pr_err("cannot register a shrinker: %d\n", ret);
		goto destroy_wq;
	}
	regcache_debugfs = debugfs_create_dir("regcache", NULL);
	pr_info("loaded (max_entries=%u max_mb=%u)\n", max_entries, max_mb);
	return 0;

destroy_wq:
	destroy_workqueue(regcache_wq);
	return ret;
}

static void __exit regcache_exit(void)
{
	/* Every cache belongs to a module that depends on us and is gone. */
	WARN_ON(!list_empty(&regcache_list));
	regcache_shrinker_unregister();
	destroy_workqueue(regcache_wq);
	debugfs_remove_recursive(regcache_debugfs);
	pr_info("unloaded\n");
}

module_init(regcache_init);
module_exit(regcache_exit);

MODULE_DESCRIPTION("Registration cache for user memory over RDMA");
MODULE_LICENSE("GPL");

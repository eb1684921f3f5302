// SPDX-License-Identifier: GPL-2.0-only
/*
 * ORFS regular files: the page cache path (read_folio and readahead send
 * page-cache folios to knet as page descriptors, several per request;
 * writeback sends dirty pages the same way) and O_DIRECT, zero copy from
 * the caller's buffer through knet and regcache. Close-to-open: open asks
 * the server for fresh attributes (dropping cached pages when the change
 * attribute moved), close writes dirty pages back.
 */
#define pr_fmt(fmt) "orfs: " fmt

#include <linux/cred.h>
#include <linux/mm.h>
#include <linux/pagemap.h>
#include <linux/pagevec.h>
#include <linux/rmap.h>
#include <linux/slab.h>
#include <linux/splice.h>
#include <linux/uio.h>
#include <linux/writeback.h>

#include "orfs.h"

/* LEN bytes of a folio from OFF as a page descriptor entry (bvec_set_folio() is newer than 6.1). */
static void orfs_bvec_folio(struct bio_vec *bv, struct folio *folio, size_t off, size_t len)
{
	bv->bv_page = folio_page(folio, off >> PAGE_SHIFT);
	bv->bv_offset = offset_in_page(off);
	bv->bv_len = len;
}

/*
 * Large folios (largefolio=on, on kernels that bound a file's folio size):
 * a file's page cache holds folios of up to what one READ or WRITE moves,
 * so read-ahead, write-back and the page cache handle a few folios a
 * request rather than a page each.
 *
 * What write-back sends: a write() into a folio, small or large, records
 * which bytes it dirtied (struct orfs_folio, the folio's private data), a
 * store through a shared mapping the page it went to (orfs_page_mkwrite(),
 * a page at a time), and write-back sends those, not the whole folio:
 * bytes this client did not write do not go back over what another client
 * wrote since, in another page of the folio or in the same page. Up to
 * ORFS_SPANS runs of dirty bytes apart are kept apart, each sent as a
 * WRITE of its own; past that, the two closest are joined, and the bytes
 * between them go too. A folio dirtied any other way (pinned pages), or
 * with no memory for its record, goes back whole.
 */
#define ORFS_SPANS	4

/* Bytes [first, end) of a folio. */
struct orfs_span {
	unsigned int	first;
	unsigned int	end;
};

/*
 * A folio's record, its private data. Besides the dirty spans, it keeps
 * what write-back sent unstable (ORFS_WRITE_VERF) until a COMMIT answers
 * the verifier the WRITEs were answered with; while it does, the folio
 * is on its inode's @unstable list and cannot be released, and a COMMIT
 * that finds another verifier marks those spans dirty again, so that
 * write-back sends them again (orfs_commit()). The unstable fields are
 * under the inode's i_lock.
 */
struct orfs_folio {
	spinlock_t	lock;		/* dirtying without the folio lock (pins) */
	unsigned int	n;		/* spans; none: a dirty folio goes back whole */
	struct orfs_span span[ORFS_SPANS];	/* in order, apart */
	atomic_t	wb_left;	/* spans under write-back not yet over, when several */
	struct folio	*folio;
	struct list_head ulink;		/* in the inode's @unstable list while @un */
	unsigned int	un;		/* unstable spans */
	bool		resend;		/* taken off @unstable by a COMMIT, to send again */
	struct orfs_span uspan[ORFS_SPANS];
	u64		verf;		/* of the unstable WRITEs; 0: not all the same */
	u64		useq;		/* the inode's @useq at the last one */
};

/* Add bytes [FIRST, END) to the *NP spans of SPAN (ORFS_SPANS at most). */
static void orfs_spans_add(struct orfs_span *span, unsigned int *np, unsigned int first,
			   unsigned int end)
{
	struct orfs_span s[ORFS_SPANS + 1];
	unsigned int i, j, n = 0;

	/* The spans it overlaps or touches join it; the others stay. */
	for (i = 0; i < *np; i++) {
		if (span[i].end < first || span[i].first > end) {
			s[n++] = span[i];
			continue;
		}
		first = min(first, span[i].first);
		end = max(end, span[i].end);
	}
	for (i = n; i > 0 && s[i - 1].first > first; i--)
		s[i] = s[i - 1];
	s[i].first = first;
	s[i].end = end;
	n++;
	if (n > ORFS_SPANS) {
		/* One too many: the two with the fewest bytes between them join. */
		for (j = 0, i = 1; i + 1 < n; i++)
			if (s[i + 1].first - s[i].end < s[j + 1].first - s[j].end)
				j = i;
		s[j].end = s[j + 1].end;
		for (i = j + 1; i + 1 < n; i++)
			s[i] = s[i + 1];
		n--;
	}
	memcpy(span, s, n * sizeof(s[0]));
	*np = n;
}

/* Add bytes [FIRST, END) to OF's dirty spans; under of->lock. */
static void orfs_span_add(struct orfs_folio *of, unsigned int first, unsigned int end)
{
	orfs_spans_add(of->span, &of->n, first, end);
}

/* OF records the whole of FOLIO; under of->lock. */
static void orfs_span_whole(struct orfs_folio *of, struct folio *folio)
{
	of->n = 1;
	of->span[0].first = 0;
	of->span[0].end = folio_size(folio);
}

/**
 * orfs_set_folio_size() - let a new regular file's page cache hold large folios
 * @inode: the inode, not yet visible (I_NEW)
 *
 * Folios of up to the smaller of rsize and wsize, so that one always fits
 * in a request, when the mount has largefolio=on.
 */
void orfs_set_folio_size(struct inode *inode)
{
#ifdef ORFS_HAVE_FOLIO_ORDER
	struct orfs_sb *sbi = ORFS_SB(inode->i_sb);
	unsigned int max = ilog2(min(sbi->rsize, sbi->wsize) >> PAGE_SHIFT);

	if (sbi->opts.largefolio && max)
		mapping_set_folio_order_range(inode->i_mapping, 0, max);
#endif
}

/* A new record for FOLIO (locked), or NULL without memory. */
static struct orfs_folio *orfs_folio_record(struct folio *folio)
{
	struct orfs_folio *of = kzalloc(sizeof(*of), GFP_NOFS);

	if (!of)
		return NULL;
	spin_lock_init(&of->lock);
	INIT_LIST_HEAD(&of->ulink);
	of->folio = folio;
	folio_attach_private(folio, of);
	return of;
}

/* A write() or a mapped store dirtied LEN bytes of FOLIO (locked) from OFF. */
static void orfs_folio_dirtied(struct address_space *mapping, struct folio *folio, size_t off,
			       size_t len)
{
	struct orfs_folio *of = folio_get_private(folio);
	unsigned int first = off, end = off + len;
	unsigned long flags;

	/* Without a record (no memory), the folio goes back whole. */
	if (!of && !folio_test_dirty(folio))
		of = orfs_folio_record(folio);
	if (of) {
		spin_lock_irqsave(&of->lock, flags);
		if (!folio_test_dirty(folio))
			of->n = 0;
		else if (!of->n)
			/* Dirty with no record goes back whole: it stays so. */
			orfs_span_whole(of, folio);
		orfs_span_add(of, first, end);
		spin_unlock_irqrestore(&of->lock, flags);
	}
	/* Not folio_mark_dirty(): orfs_dirty_folio() would record the whole folio. */
	filemap_dirty_folio(mapping, folio);
}

/*
 * Dirtied other than by write() or orfs_page_mkwrite(): which bytes is
 * unknown, so all of them. A folio already dirty is being told of the
 * stores its pages' table entries saw (write-back cleaning them, an
 * unmap), and a table entry takes a store only after orfs_page_mkwrite()
 * recorded its page since the last write-back; that record stands,
 * unless the folio is pinned, when a device may have written anywhere.
 */
static bool orfs_dirty_folio(struct address_space *mapping, struct folio *folio)
{
	struct orfs_folio *of = folio_get_private(folio);
	unsigned long flags;

	if (of && (!folio_test_dirty(folio) || folio_maybe_dma_pinned(folio))) {
		spin_lock_irqsave(&of->lock, flags);
		orfs_span_whole(of, folio);
		spin_unlock_irqrestore(&of->lock, flags);
	}
	return filemap_dirty_folio(mapping, folio);
}

/*
 * What write-back sends of FOLIO (locked, its dirty bit just cleared), up
 * to the end of the file, into SPANS: how many; none, the folio unlocked,
 * when nothing is left.
 */
static unsigned int orfs_folio_wb_spans(struct folio *folio, struct orfs_span *spans)
{
	struct orfs_folio *of = folio_get_private(folio);
	loff_t isize = i_size_read(folio->mapping->host);
	unsigned int i, n = 0, kept = 0;
	unsigned long flags;

	if (of) {
		spin_lock_irqsave(&of->lock, flags);
		n = of->n;
		memcpy(spans, of->span, n * sizeof(*spans));
		of->n = 0;
		spin_unlock_irqrestore(&of->lock, flags);
	}
	if (!n) {
		spans[0].first = 0;
		spans[0].end = folio_size(folio);
		n = 1;
	}
	/* Past the end (truncated): not written. */
	for (i = 0; i < n; i++) {
		loff_t pos = folio_pos(folio) + spans[i].first;

		if (pos >= isize)
			break;
		spans[i].end = min_t(loff_t, spans[i].end, spans[i].first + (isize - pos));
		kept++;
	}
	if (!kept)
		folio_unlock(folio);
	return kept;
}

/*
 * FOLIO (locked) goes under write-back for its N spans, each ended by
 * orfs_folio_end_wb(): it is over with the last.
 */
static void orfs_folio_start_wb(struct folio *folio, unsigned int n)
{
	struct orfs_folio *of = folio_get_private(folio);

	if (n > 1)
		atomic_set(&of->wb_left, n);
	folio_start_writeback(folio);
	folio_unlock(folio);
}

static void orfs_folio_end_wb(struct folio *folio)
{
	struct orfs_folio *of = folio_get_private(folio);

	/* One span (a record may have come meanwhile, uncounted), or the last. */
	if (!of || !atomic_read(&of->wb_left) || atomic_dec_and_test(&of->wb_left))
		folio_end_writeback(folio);
}

/* OF leaves its inode's unstable list (or a COMMIT's resend list); under i_lock. */
static void orfs_unstable_del(struct inode *inode, struct orfs_folio *of)
{
	struct orfs_inode *ci = ORFS_I(inode);

	if (!of->un)
		return;
	list_del_init(&of->ulink);
	of->un = 0;
	of->resend = false;
	ci->unstable_bytes -= folio_size(of->folio);
	atomic_long_sub(folio_size(of->folio), &ORFS_SB(inode->i_sb)->unstable);
}

/*
 * Bytes [FIRST, END) of FOLIO (under write-back) went back unstable, the
 * server answering VERF: they are kept until a COMMIT answers VERF. The
 * inode is marked dirty so that the flusher commits them (write_inode).
 */
static void orfs_folio_unstable(struct inode *inode, struct folio *folio, unsigned int first,
				unsigned int end, u64 verf)
{
	struct orfs_folio *of = folio_get_private(folio);
	struct orfs_inode *ci = ORFS_I(inode);

	if (WARN_ON_ONCE(!of))
		return;
	orfs_stats_wb(ORFS_SB(inode->i_sb), ORFS_WB_UNSTABLE, end - first);
	spin_lock(&inode->i_lock);
	if (!of->un) {
		of->verf = verf;
		list_add_tail(&of->ulink, &ci->unstable);
		ci->unstable_bytes += folio_size(folio);
		atomic_long_add(folio_size(folio), &ORFS_SB(inode->i_sb)->unstable);
	} else if (of->verf != verf) {
		of->verf = 0;
	}
	orfs_spans_add(of->uspan, &of->un, first, end);
	of->useq = ++ci->useq;
	spin_unlock(&inode->i_lock);
	__mark_inode_dirty(inode, I_DIRTY_DATASYNC);
}

/* Does FOLIO (locked) hold bytes written unstable and not yet committed? */
static bool orfs_folio_is_unstable(struct folio *folio)
{
	struct orfs_folio *of = folio_get_private(folio);
	struct inode *inode = folio->mapping->host;
	bool un;

	if (!of)
		return false;
	spin_lock(&inode->i_lock);
	un = of->un;
	spin_unlock(&inode->i_lock);
	return un;
}

static bool orfs_release_folio(struct folio *folio, gfp_t gfp)
{
	/*
	 * A dirty folio's record says what to send, an unstable one's what
	 * to send again: keep it, and the folio whole.
	 */
	if (folio_test_dirty(folio) || orfs_folio_is_unstable(folio))
		return false;
	kfree(folio_detach_private(folio));
	return true;
}

static void orfs_invalidate_folio(struct folio *folio, size_t offset, size_t len)
{
	struct orfs_folio *of = folio_get_private(folio);
	struct inode *inode = folio->mapping->host;

	/*
	 * Part of a folio (truncate, a hole punched): write-back stops at the
	 * end of the file anyway, and the part that went reads as zeroes now,
	 * as the server has it, if it is sent again.
	 */
	if (!of || offset || len != folio_size(folio))
		return;
	spin_lock(&inode->i_lock);
	orfs_unstable_del(inode, of);
	spin_unlock(&inode->i_lock);
	kfree(folio_detach_private(folio));
}

/* Do FOLIO's (locked) dirty bytes touch bytes [START, END] of the file? */
static bool orfs_folio_dirty_in(struct folio *folio, loff_t start, loff_t end)
{
	struct orfs_folio *of = folio_get_private(folio);
	loff_t pos = folio_pos(folio);
	unsigned int i, n = 0;
	unsigned long flags;
	bool in = false;

	if (!folio_test_dirty(folio))
		return false;
	if (of) {
		spin_lock_irqsave(&of->lock, flags);
		n = of->n;
		for (i = 0; i < n && !in; i++)
			in = pos + of->span[i].first <= end && pos + of->span[i].end > start;
		spin_unlock_irqrestore(&of->lock, flags);
	}
	/* No record: the whole folio is dirty. */
	return n ? in : pos <= end && pos + folio_size(folio) > start;
}

/*
 * Forget the unstable bytes of FOLIO (locked) when some are in bytes
 * [START, END] of the file: they are not sent again. True if it did.
 */
static bool orfs_folio_forget_in(struct folio *folio, loff_t start, loff_t end)
{
	struct orfs_folio *of = folio_get_private(folio);
	struct inode *inode = folio->mapping->host;
	loff_t pos = folio_pos(folio);
	bool in = false;
	unsigned int i;

	if (!of)
		return false;
	spin_lock(&inode->i_lock);
	for (i = 0; i < of->un && !in; i++)
		in = pos + of->uspan[i].first <= end && pos + of->uspan[i].end > start;
	if (in)
		orfs_unstable_del(inode, of);
	spin_unlock(&inode->i_lock);
	return in;
}

/**
 * orfs_drop_dirty() - drop, unwritten, what was dirtied under a lost lock
 * @inode: a regular file, its pages unmapped since the lock was found lost
 * @start: the lock's first byte
 * @end: its last byte
 *
 * Dirty data in the lock's range was written under it (an unlock writes
 * back first): sent now, it would go over what the lock's next holder
 * wrote. Each folio whose dirty bytes touch the range is made clean
 * without being written, and the file's descriptors see EIO at their next
 * fsync() or close(), as after a failed write-back. Then every clean
 * folio of the range leaves the page cache, so that reads ask the server:
 * those, and those whose write-back the server refused, hold bytes the
 * next holder may have written over.
 *
 * Context: process context, no page locks held; may sleep.
 * Return: the dirty folios dropped.
 */
unsigned int orfs_drop_dirty(struct inode *inode, loff_t start, loff_t end)
{
	struct address_space *mapping = inode->i_mapping;
	pgoff_t index = start >> PAGE_SHIFT;
	struct folio_batch fbatch;
	unsigned int i, dropped = 0;

	folio_batch_init(&fbatch);
	while (filemap_get_folios(mapping, &index, end >> PAGE_SHIFT, &fbatch)) {
		for (i = 0; i < folio_batch_count(&fbatch); i++) {
			struct folio *folio = fbatch.folios[i];

			folio_lock(folio);
			folio_wait_writeback(folio);
			if (folio->mapping == mapping && orfs_folio_dirty_in(folio, start, end)) {
				folio_cancel_dirty(folio);
				dropped++;
			}
			/* Nor is what went unstable under the lock sent again. */
			if (folio->mapping == mapping && orfs_folio_forget_in(folio, start, end))
				dropped++;
			folio_unlock(folio);
		}
		folio_batch_release(&fbatch);
		cond_resched();
	}
	if (dropped)
		mapping_set_error(mapping, -EIO);
	/* -EBUSY: a folio dirtied again meanwhile by another owner, which stays. */
	invalidate_inode_pages2_range(mapping, start >> PAGE_SHIFT, end >> PAGE_SHIFT);
	return dropped;
}

/*
 * N consecutive folios were read, COUNT bytes from the first on (or ERR):
 * zero what the server did not have and mark them up to date; unlock them
 * when UNLOCK. On an error they stay not up to date: read_folio tries again.
 */
static void orfs_read_end(struct folio **folios, unsigned int n, int err, u32 count,
			  bool unlock)
{
	size_t done = 0;
	unsigned int i;

	for (i = 0; i < n; i++) {
		struct folio *folio = folios[i];
		size_t fs = folio_size(folio);

		if (!err) {
			if (count < done + fs)
				folio_zero_segment(folio, count > done ? count - done : 0, fs);
			folio_mark_uptodate(folio);
		}
		done += fs;
		if (unlock)
			folio_unlock(folio);
	}
}

/*
 * Read FOLIO, waiting (read_folio, and a partly written page): up to date
 * with zeroes past what the server had, unlocked when UNLOCK.
 */
static int orfs_read_one(struct inode *inode, struct folio *folio, bool unlock)
{
	struct knet_mem mem = { .type = KNET_MEM_BVEC, .nr = 1, .len = folio_size(folio) };
	struct bio_vec bv;
	u32 count = 0;
	u64 verf;
	int ret = 0;

	if (folio_pos(folio) < i_size_read(inode)) {
		orfs_bvec_folio(&bv, folio, 0, mem.len);
		mem.bvec = &bv;
		ret = orfs_io(inode, ORFS_OP_READ, folio_pos(folio), &mem, 0, &count, &verf);
	}
	orfs_read_end(&folio, 1, ret, count, unlock);
	return ret;
}

static int orfs_read_folio(struct file *file, struct folio *folio)
{
	return orfs_read_one(folio->mapping->host, folio, true);
}

/* Remember who writes the file: write-back runs with these credentials. */
static void orfs_set_wb_cred(struct inode *inode, const struct cred *cred)
{
	struct orfs_inode *ci = ORFS_I(inode);
	const struct cred *old;

	if (READ_ONCE(ci->wb_cred) == cred)
		return;
	get_cred(cred);
	spin_lock(&inode->i_lock);
	old = ci->wb_cred;
	ci->wb_cred = cred;
	spin_unlock(&inode->i_lock);
	if (old)
		put_cred(old);
}

static const struct cred *orfs_wb_cred(struct inode *inode)
{
	struct orfs_inode *ci = ORFS_I(inode);
	const struct cred *cred;

	spin_lock(&inode->i_lock);
	cred = ci->wb_cred ? get_cred(ci->wb_cred) : get_current_cred();
	spin_unlock(&inode->i_lock);
	return cred;
}

/*
 * A batch of consecutive folios moved by one request: read-ahead and
 * write-back keep several in flight.
 */
struct orfs_batch {
	struct orfs_areq	a;
	bool			stable;	/* a folio without a record: write it stable */
	unsigned int		n;
	size_t			len;
	struct folio		**folios;
	struct bio_vec		*bv;
};

static struct orfs_batch *orfs_batch_alloc(struct inode *inode, u16 op, unsigned int max,
					   gfp_t gfp)
{
	struct orfs_batch *b;

	b = kzalloc(sizeof(*b) + max * (sizeof(*b->folios) + sizeof(*b->bv)), gfp);
	if (!b)
		return NULL;
	b->bv = (struct bio_vec *)(b + 1);
	b->folios = (struct folio **)(b->bv + max);
	b->a.inode = inode;
	b->a.op = op;
	b->a.priv = b;
	return b;
}

/* LEN bytes of FOLIO from OFF, right after what B holds. */
static void orfs_batch_add(struct orfs_batch *b, struct folio *folio, size_t off, size_t len)
{
	if (!b->n)
		b->a.pos = folio_pos(folio) + off;
	b->folios[b->n] = folio;
	orfs_bvec_folio(&b->bv[b->n], folio, off, len);
	b->n++;
	b->len += len;
}

/*
 * The flags of a write-back WRITE: unstable, unless the mount says
 * writeback=stable, the server has no verifiers, or a folio has no record
 * to keep what it sent (STABLE).
 */
static u32 orfs_wb_flags(struct inode *inode, bool stable)
{
	struct orfs_sb *sbi = ORFS_SB(inode->i_sb);

	if (stable || sbi->opts.stable_wb || !READ_ONCE(sbi->verf_ok))
		return ORFS_WRITE_DSYNC;
	return ORFS_WRITE_VERF;
}

static void orfs_batch_start(struct orfs_batch *b, void (*end)(struct orfs_areq *, int, u32))
{
	b->a.mem.type = KNET_MEM_BVEC;
	b->a.mem.nr = b->n;
	b->a.mem.len = b->len;
	b->a.mem.bvec = b->bv;
	b->a.end = end;
	orfs_io_start(&b->a, b->a.op == ORFS_OP_WRITE ? orfs_wb_flags(b->a.inode, b->stable) : 0);
}

static void orfs_ra_end(struct orfs_areq *a, int err, u32 count)
{
	struct orfs_batch *b = a->priv;

	orfs_read_end(b->folios, b->n, err, count, true);
	kfree(b);
}

static void orfs_readahead(struct readahead_control *ractl)
{
	struct inode *inode = ractl->mapping->host;
	u32 max = ORFS_SB(inode->i_sb)->rsize;
	unsigned int cap = max / PAGE_SIZE;
	struct orfs_batch *b = NULL;
	struct folio *folio;

	while ((folio = readahead_folio(ractl))) {
		if (folio_pos(folio) >= i_size_read(inode)) {
			/* Past the end: zeroes, no request. */
			folio_zero_segment(folio, 0, folio_size(folio));
			folio_mark_uptodate(folio);
			folio_unlock(folio);
			continue;
		}
		if (b && (b->n == cap || b->len + folio_size(folio) > max)) {
			orfs_batch_start(b, orfs_ra_end);
			b = NULL;
		}
		if (!b)
			b = orfs_batch_alloc(inode, ORFS_OP_READ, cap, GFP_KERNEL);
		if (!b) {
			folio_unlock(folio);	/* read_folio will do */
			continue;
		}
		orfs_batch_add(b, folio, 0, folio_size(folio));
	}
	if (b)
		orfs_batch_start(b, orfs_ra_end);
}

/*
 * Write span SP of FOLIO (under write-back, unlocked), waiting, with the
 * caller's credentials; the span's write-back is over then.
 */
static int orfs_write_span(struct folio *folio, const struct orfs_span *sp)
{
	size_t len = sp->end - sp->first;
	struct knet_mem mem = { .type = KNET_MEM_BVEC, .nr = 1, .len = len };
	struct address_space *mapping = folio->mapping;
	struct bio_vec bv;
	u32 count = 0;
	int ret;

	u64 verf = 0;

	orfs_bvec_folio(&bv, folio, sp->first, len);
	mem.bvec = &bv;
	ret = orfs_io(mapping->host, ORFS_OP_WRITE, folio_pos(folio) + sp->first, &mem,
		      orfs_wb_flags(mapping->host, !folio_get_private(folio)), &count, &verf);
	if (!ret && count != mem.len)
		ret = -EIO;
	if (ret)
		mapping_set_error(mapping, ret);
	else if (verf)
		orfs_folio_unstable(mapping->host, folio, sp->first, sp->end, verf);
	orfs_folio_end_wb(folio);
	return ret;
}

/* Write the N SPANS of FOLIO (locked, its dirty bit cleared), waiting. */
static int orfs_write_sync(struct folio *folio, const struct orfs_span *spans, unsigned int n)
{
	const struct cred *old, *cred;
	unsigned int i;
	int ret = 0, err;

	cred = orfs_wb_cred(folio->mapping->host);
	if (!folio_get_private(folio))
		orfs_folio_record(folio);
	orfs_folio_start_wb(folio, n);
	old = override_creds(cred);
	for (i = 0; i < n; i++) {
		err = orfs_write_span(folio, &spans[i]);
		ret = ret ?: err;
	}
	revert_creds(old);
	put_cred(cred);
	return ret;
}

static int orfs_writepage(struct page *page, struct writeback_control *wbc)
{
	struct folio *folio = page_folio(page);
	struct orfs_span spans[ORFS_SPANS];
	unsigned int n;

	n = orfs_folio_wb_spans(folio, spans);
	return n ? orfs_write_sync(folio, spans, n) : 0;
}

/*
 * Write-back in large requests: write_cache_pages() hands us the dirty
 * folios in file order; contiguous ones are gathered (up to wsize) and sent
 * as one WRITE whose page descriptors the server reads by RDMA, several
 * WRITEs in flight. The folios stay under write-back until theirs ends.
 */
struct orfs_wb {
	struct inode		*inode;
	struct orfs_batch	*b;
	unsigned int		max;
};

static void orfs_wb_end(struct orfs_areq *a, int err, u32 count)
{
	struct orfs_batch *b = a->priv;
	unsigned int i;

	loff_t pos = a->pos;

	if (!err && count != b->len)
		err = -EIO;
	if (err)
		mapping_set_error(a->inode->i_mapping, err);
	for (i = 0; i < b->n; i++) {
		struct folio *folio = b->folios[i];
		unsigned int first = pos - folio_pos(folio);

		/* Each folio's part of it: a span of its own. */
		if (!err && a->verf)
			orfs_folio_unstable(a->inode, folio, first, first + b->bv[i].bv_len,
					    a->verf);
		pos += b->bv[i].bv_len;
		orfs_folio_end_wb(folio);
	}
	kfree(b);
}

static void orfs_wb_send(struct orfs_wb *wb)
{
	if (wb->b)
		orfs_batch_start(wb->b, orfs_wb_end);
	wb->b = NULL;
}

static int orfs_wb_add(struct folio *folio, struct writeback_control *wbc, void *data)
{
	struct orfs_span spans[ORFS_SPANS];
	struct orfs_wb *wb = data;
	unsigned int i, n;
	int ret = 0, err;

	n = orfs_folio_wb_spans(folio, spans);
	if (!n)
		return 0;
	/* What goes unstable is kept in the record until a COMMIT. */
	if (!folio_get_private(folio))
		orfs_folio_record(folio);
	orfs_folio_start_wb(folio, n);
	for (i = 0; i < n; i++) {
		size_t off = spans[i].first, len = spans[i].end - spans[i].first;
		loff_t pos = folio_pos(folio) + off;
		struct orfs_batch *b = wb->b;

		/*
		 * One request registers its pages as one memory region: what
		 * it holds must end where this starts, on a page boundary.
		 */
		if (b && (pos != b->a.pos + b->len || b->n == wb->max ||
			  b->len + len > ORFS_SB(wb->inode->i_sb)->wsize || !PAGE_ALIGNED(pos)))
			orfs_wb_send(wb);
		if (!wb->b) {
			wb->b = orfs_batch_alloc(wb->inode, ORFS_OP_WRITE, wb->max, GFP_NOFS);
			if (!wb->b) {
				/* Short of memory: this span alone, waiting for it. */
				err = orfs_write_span(folio, &spans[i]);
				ret = ret ?: err;
				continue;
			}
		}
		orfs_batch_add(wb->b, folio, off, len);
		if (!folio_get_private(folio))
			wb->b->stable = true;
	}
	return ret;
}

#ifdef ORFS_WRITEPAGE_T_FOLIO
static int orfs_wb_add_cb(struct folio *folio, struct writeback_control *wbc, void *data)
{
	return orfs_wb_add(folio, wbc, data);
}
#else
static int orfs_wb_add_cb(struct page *page, struct writeback_control *wbc, void *data)
{
	return orfs_wb_add(page_folio(page), wbc, data);
}
#endif

/* Bytes of one file kept for a COMMIT past which background write-back commits. */
#define ORFS_UNSTABLE_COMMIT	(64UL << 20)

static int orfs_writepages(struct address_space *mapping, struct writeback_control *wbc)
{
	struct orfs_wb wb = { .inode = mapping->host };
	const struct cred *old, *cred;
	int ret;

	wb.max = ORFS_SB(mapping->host->i_sb)->wsize / PAGE_SIZE;
	/* As the last writer of the file, not as the flusher thread. */
	cred = orfs_wb_cred(mapping->host);
	old = override_creds(cred);
	ret = write_cache_pages(mapping, wbc, orfs_wb_add_cb, &wb);
	orfs_wb_send(&wb);
	revert_creds(old);
	put_cred(cred);
	/*
	 * Folios kept for a COMMIT cannot be reclaimed: past a bound, the
	 * flusher commits them now rather than at its next write_inode().
	 */
	if (!ret && wbc->sync_mode == WB_SYNC_NONE &&
	    READ_ONCE(ORFS_I(mapping->host)->unstable_bytes) >= ORFS_UNSTABLE_COMMIT) {
		ret = filemap_fdatawait(mapping);
		if (!ret)
			ret = orfs_commit(mapping->host, true, false);
	}
	return ret;
}

/*
 * Read pages [OFF, OFF + LEN) of FOLIO, zeroes past what the server had;
 * the folio stays not up to date.
 */
static int orfs_read_pages(struct inode *inode, struct folio *folio, size_t off, size_t len)
{
	struct knet_mem mem = { .type = KNET_MEM_BVEC, .nr = 1, .len = len };
	loff_t pos = folio_pos(folio) + off;
	struct bio_vec bv;
	u32 count = 0;
	u64 verf;
	int ret;

	if (pos < i_size_read(inode)) {
		orfs_bvec_folio(&bv, folio, off, len);
		mem.bvec = &bv;
		ret = orfs_io(inode, ORFS_OP_READ, pos, &mem, 0, &count, &verf);
		if (ret)
			return ret;
	}
	if (count < len)
		folio_zero_segment(folio, off + count, off + len);
	return 0;
}

/*
 * Make FOLIO ready for a write of LEN bytes at POS: read what the write
 * keeps. Of a large folio, only the pages the write does not cover are
 * read; write_end marks it up to date once the write has filled the rest.
 */
static int orfs_prepare_write(struct inode *inode, struct folio *folio, loff_t pos,
			      unsigned int len)
{
	size_t off = offset_in_folio(folio, pos), fs = folio_size(folio);
	/* The write may be longer than the folio found: it stops at its end. */
	size_t end = min_t(size_t, off + len, fs);
	size_t head = round_up(off, PAGE_SIZE), tail = round_down(end, PAGE_SIZE);
	int ret;

	if (folio_test_uptodate(folio) || (!off && end == fs))
		return 0;
	if (folio_pos(folio) >= i_size_read(inode)) {
		folio_zero_segments(folio, 0, off, end, fs);
		folio_mark_uptodate(folio);
		return 0;
	}
	if (!folio_test_large(folio) || head >= tail) {
		ret = orfs_read_one(inode, folio, false);
	} else {
		ret = head ? orfs_read_pages(inode, folio, 0, head) : 0;
		if (!ret && tail < fs)
			ret = orfs_read_pages(inode, folio, tail, fs - tail);
	}
	if (ret) {
		folio_unlock(folio);
		folio_put(folio);
	}
	return ret;
}

/* The end of a write into FOLIO: COPIED bytes landed at POS. */
static int orfs_finish_write(struct inode *inode, struct folio *folio, loff_t pos,
			     unsigned int len, unsigned int copied)
{
	if (!folio_test_uptodate(folio)) {
		/* The write fills what was not read: a short copy redoes it all. */
		if (copied < len)
			copied = 0;
		else
			folio_mark_uptodate(folio);
	}
	if (copied) {
		if (pos + copied > i_size_read(inode))
			i_size_write(inode, pos + copied);
		orfs_folio_dirtied(inode->i_mapping, folio, offset_in_folio(folio, pos), copied);
	}
	folio_unlock(folio);
	folio_put(folio);
	return copied;
}

#ifdef ORFS_WRITE_BEGIN_FOLIO
static int orfs_write_begin(struct file *file, struct address_space *mapping, loff_t pos,
			    unsigned int len, struct folio **foliop, void **fsdata)
{
	fgf_t fgp = FGP_WRITEBEGIN;
	struct folio *folio;

#ifdef ORFS_HAVE_FOLIO_ORDER
	/* A folio as large as the write, where the file may have large ones. */
	fgp |= fgf_set_order(len);
#endif
	folio = __filemap_get_folio(mapping, pos >> PAGE_SHIFT, fgp, mapping_gfp_mask(mapping));
	if (IS_ERR(folio))
		return PTR_ERR(folio);
	*foliop = folio;
	return orfs_prepare_write(mapping->host, folio, pos, len);
}

static int orfs_write_end(struct file *file, struct address_space *mapping, loff_t pos,
			  unsigned int len, unsigned int copied, struct folio *folio, void *fsdata)
{
	return orfs_finish_write(mapping->host, folio, pos, len, copied);
}
#else
static int orfs_write_begin(struct file *file, struct address_space *mapping, loff_t pos,
			    unsigned int len, struct page **pagep, void **fsdata)
{
	struct page *page;

	page = grab_cache_page_write_begin(mapping, pos >> PAGE_SHIFT);
	if (!page)
		return -ENOMEM;
	*pagep = page;
	return orfs_prepare_write(mapping->host, page_folio(page), pos, len);
}

static int orfs_write_end(struct file *file, struct address_space *mapping, loff_t pos,
			  unsigned int len, unsigned int copied, struct page *page, void *fsdata)
{
	return orfs_finish_write(mapping->host, page_folio(page), pos, len, copied);
}
#endif

/*
 * O_DIRECT: the caller's memory goes to knet as it is (user memory through
 * regcache, or the kernel vectors of an internal caller), one request per
 * contiguous piece of at most rsize/wsize bytes. Any alignment works. A
 * synchronous call waits for each piece in turn; an asynchronous one (aio,
 * io_uring) sends them all and completes the kiocb when the last ends.
 */
struct orfs_dio {
	struct kiocb	*iocb;
	atomic_t	pending;	/* pieces in flight, and one for the sender */
	spinlock_t	lock;
	loff_t		start;
	size_t		total;		/* bytes sent for */
	size_t		limit;		/* where the first short or failed piece stopped */
	int		err;		/* the error of the first failed piece */
};

struct orfs_dio_piece {
	struct orfs_areq	a;
	struct orfs_dio		*dio;
};

static void orfs_dio_put(struct orfs_dio *dio)
{
	long res;

	if (!atomic_dec_and_test(&dio->pending))
		return;
	res = min(dio->total, dio->limit);
	if (!res && dio->err)
		res = dio->err;
	dio->iocb->ki_complete(dio->iocb, res);
	kfree(dio);
}

/*
 * Direct I/O went to the server unstable, answered VERF: the next COMMIT
 * must answer the same, or fsync() fails (the data is not here to send
 * again).
 */
static void orfs_dio_unstable(struct inode *inode, u64 verf)
{
	struct orfs_inode *ci = ORFS_I(inode);

	spin_lock(&inode->i_lock);
	if (!ci->dio_un) {
		ci->dio_un = true;
		ci->dio_verf = verf;
	} else if (ci->dio_verf != verf) {
		ci->dio_verf = 0;
	}
	ci->dio_seq++;
	spin_unlock(&inode->i_lock);
	__mark_inode_dirty(inode, I_DIRTY_DATASYNC);
}

static void orfs_dio_end(struct orfs_areq *a, int err, u32 count)
{
	struct orfs_dio_piece *p = a->priv;
	struct orfs_dio *dio = p->dio;
	size_t off = a->pos - dio->start;

	if (!err && a->verf)
		orfs_dio_unstable(a->inode, a->verf);
	spin_lock_bh(&dio->lock);
	if (err && off <= dio->limit) {
		dio->limit = off;
		dio->err = err;
	} else if (!err && count < a->mem.len && off + count < dio->limit) {
		dio->limit = off + count;
	}
	spin_unlock_bh(&dio->lock);
	kfree(p);
	orfs_dio_put(dio);
}

/* The next piece of ITER: at most MAX bytes, one contiguous user range. */
static int orfs_dio_piece(struct iov_iter *iter, size_t max, struct knet_mem *mem, bool cache)
{
	size_t chunk = min(iov_iter_count(iter), max);
	int ret;

	if (user_backed_iter(iter))
		chunk = min(chunk, iov_iter_single_seg_count(iter));
	ret = knet_mem_from_iter(mem, iter, chunk);
	if (ret)
		return ret;
	if (mem->type == KNET_MEM_UVEC) {
		/* Our own copy of the range: the caller's iovec array may go away. */
		mem->one.iov_base = mem->iov[0].iov_base + mem->skip;
		mem->one.iov_len = mem->len;
		mem->iov = &mem->one;
		mem->skip = 0;
		mem->nr = 1;
		if (!cache)
			mem->flags |= KNET_MEM_NOCACHE;
	}
	return 0;
}

static ssize_t orfs_direct_async(struct kiocb *iocb, struct iov_iter *iter, bool write,
				 u32 flags)
{
	struct inode *inode = file_inode(iocb->ki_filp);
	struct orfs_sb *sbi = ORFS_SB(inode->i_sb);
	size_t max = write ? sbi->wsize : sbi->rsize;
	struct orfs_dio *dio;
	loff_t pos = iocb->ki_pos;
	int ret = 0;

	dio = kzalloc(sizeof(*dio), GFP_KERNEL);
	if (!dio)
		return -ENOMEM;
	dio->iocb = iocb;
	atomic_set(&dio->pending, 1);
	spin_lock_init(&dio->lock);
	dio->start = pos;
	dio->limit = SIZE_MAX;
	while (iov_iter_count(iter)) {
		struct orfs_dio_piece *p = kzalloc(sizeof(*p), GFP_KERNEL);

		if (!p) {
			ret = -ENOMEM;
			break;
		}
		ret = orfs_dio_piece(iter, max, &p->a.mem, sbi->opts.regcache);
		if (ret) {
			kfree(p);
			break;
		}
		p->dio = dio;
		p->a.inode = inode;
		p->a.op = write ? ORFS_OP_WRITE : ORFS_OP_READ;
		p->a.pos = pos;
		p->a.end = orfs_dio_end;
		/*
		 * Reads end in softirq, as a block device's do, and writes in
		 * the completion's task where there is one: one wake-up less.
		 * orfs_dio_end() takes spinlocks only and never waits for knet.
		 */
		p->a.end_softirq = true;
		p->a.priv = p;
		pos += p->a.mem.len;
		iov_iter_advance(iter, p->a.mem.len);
		spin_lock_bh(&dio->lock);
		dio->total += p->a.mem.len;
		spin_unlock_bh(&dio->lock);
		atomic_inc(&dio->pending);
		orfs_io_start(&p->a, flags);
	}
	if (ret && !dio->total) {
		kfree(dio);
		return ret;
	}
	if (ret) {
		/* What was sent completes; the rest is this error. */
		spin_lock_bh(&dio->lock);
		if (dio->total < dio->limit) {
			dio->limit = dio->total;
			dio->err = ret;
		}
		spin_unlock_bh(&dio->lock);
	}
	orfs_dio_put(dio);
	return -EIOCBQUEUED;
}

static ssize_t orfs_direct_IO(struct kiocb *iocb, struct iov_iter *iter)
{
	struct inode *inode = file_inode(iocb->ki_filp);
	struct orfs_sb *sbi = ORFS_SB(inode->i_sb);
	bool write = iov_iter_rw(iter) == WRITE;
	loff_t pos = iocb->ki_pos;
	ssize_t total = 0;
	u32 flags = 0;
	u64 verf;
	int ret = 0;

	if (write && (iocb->ki_flags & IOCB_DSYNC))
		flags = iocb->ki_flags & IOCB_SYNC ? ORFS_WRITE_SYNC : ORFS_WRITE_DSYNC;
	else if (write && READ_ONCE(sbi->verf_ok))
		flags = ORFS_WRITE_VERF;
	if (!is_sync_kiocb(iocb))
		return orfs_direct_async(iocb, iter, write, flags);
	while (iov_iter_count(iter)) {
		struct knet_mem mem;
		u32 count;

		ret = orfs_dio_piece(iter, write ? sbi->wsize : sbi->rsize, &mem,
				     sbi->opts.regcache);
		if (ret)
			break;
		ret = orfs_io(inode, write ? ORFS_OP_WRITE : ORFS_OP_READ, pos, &mem, flags,
			      &count, &verf);
		if (ret)
			break;
		if (verf)
			orfs_dio_unstable(inode, verf);
		iov_iter_advance(iter, count);
		pos += count;
		total += count;
		if (count < mem.len)
			break;		/* end of file, or the server's disk is full */
	}
	return total ?: ret;
}

static int orfs_file_open(struct inode *inode, struct file *file)
{
	int ret;

	/*
	 * Close-to-open: what another client wrote before its close shows now.
	 * Attributes the server sent within this tick (a create) are fresh.
	 */
	ret = orfs_revalidate_file(inode, time_after(jiffies, ORFS_I(inode)->attr_time));
	if (ret)
		return ret;
	ret = generic_file_open(inode, file);
	if (ret)
		return ret;
	atomic_inc(&ORFS_I(inode)->open_count);
	return 0;
}

static int orfs_file_flush(struct file *file, fl_owner_t id)
{
	int ret;

	if (!(file->f_mode & FMODE_WRITE))
		return 0;
	/* Close-to-open: written back, and committed, as NFS does at close. */
	ret = filemap_write_and_wait(file->f_mapping);
	return ret ?: orfs_commit(file_inode(file), true, false);
}

static int orfs_file_release(struct inode *inode, struct file *file)
{
	if (atomic_dec_and_test(&ORFS_I(inode)->open_count) && ORFS_I(inode)->silly_name[0]) {
		filemap_write_and_wait(inode->i_mapping);
		orfs_silly_unlink(inode);
	}
	return 0;
}

static ssize_t orfs_file_read_iter(struct kiocb *iocb, struct iov_iter *to)
{
	struct inode *inode = file_inode(iocb->ki_filp);
	int ret;

	if (unlikely(orfs_lock_lost(iocb->ki_filp)))
		return -EIO;
	if (!(iocb->ki_flags & IOCB_DIRECT)) {
		ret = orfs_revalidate_file(inode, false);
		if (ret)
			return ret;
	}
	return generic_file_read_iter(iocb, to);
}

/**
 * orfs_clear_past_eof() - the file grows: clear what was stored past its end
 * @inode: a regular file
 * @from: the end of the file now
 * @to: its end to be
 *
 * A store through a shared mapping may land past the end of the file in
 * the page that holds the end (POSIX: it is not part of the file, and
 * write-back never sends it). When the file grows over those bytes, they
 * must read as the zeroes the server has there, so they are cleared
 * before the size moves. The caller moves it with the folio still locked
 * (write-back, which sends up to the end, locks it first), then unlocks
 * and puts it.
 *
 * Context: process context, no folio of the file locked; may sleep.
 * Return: the folio that holds the end, locked, or NULL when the end is
 * on a page boundary, the file does not grow or the page is not cached.
 */
struct folio *orfs_clear_past_eof(struct inode *inode, loff_t from, loff_t to)
{
	struct folio *folio;
	loff_t end;

	if (from >= to || !offset_in_page(from))
		return NULL;
	folio = __filemap_get_folio(inode->i_mapping, from >> PAGE_SHIFT, FGP_LOCK, 0);
	if (IS_ERR_OR_NULL(folio))	/* NULL on 6.1, an error pointer later */
		return NULL;
	/* Stores after this fault again, inside the file, and count as writes. */
	if (folio_mkclean(folio))
		folio_mark_dirty(folio);
	if (folio_test_uptodate(folio)) {
		end = min_t(loff_t, to, round_up(from, PAGE_SIZE));
		folio_zero_segment(folio, offset_in_folio(folio, from), end - folio_pos(folio));
	}
	return folio;
}

/**
 * orfs_zero_past_eof() - orfs_clear_past_eof() when the inode lock holds the size
 * @inode: a regular file, its inode lock held
 * @from: the end of the file now
 * @to: its end to be
 */
void orfs_zero_past_eof(struct inode *inode, loff_t from, loff_t to)
{
	struct folio *folio = orfs_clear_past_eof(inode, from, to);

	if (folio) {
		folio_unlock(folio);
		folio_put(folio);
	}
}

static ssize_t orfs_file_write_iter(struct kiocb *iocb, struct iov_iter *from)
{
	struct inode *inode = file_inode(iocb->ki_filp);
	ssize_t ret;

	if (unlikely(orfs_lock_lost(iocb->ki_filp)))
		return -EIO;
	orfs_set_wb_cred(inode, iocb->ki_filp->f_cred);
	/* Appends go to the end the server knows. */
	if (iocb->ki_flags & IOCB_APPEND) {
		ret = orfs_revalidate(inode, true);
		if (ret)
			return ret;
	}
	/* generic_file_write_iter(), with the end of the file cleared first. */
	inode_lock(inode);
	ret = generic_write_checks(iocb, from);
	if (ret > 0) {
		orfs_zero_past_eof(inode, i_size_read(inode), iocb->ki_pos);
		ret = __generic_file_write_iter(iocb, from);
	}
	inode_unlock(inode);
	if (ret > 0)
		ret = generic_write_sync(iocb, ret);
	return ret;
}

/* COMMITs of one file that find the verifier changed, before it fails. */
#define ORFS_COMMIT_TRIES	8

/*
 * FSYNC of INODE; with a server that has verifiers, a COMMIT whose
 * verifier goes to *VERF (0 without).
 */
static int orfs_fsync_call(struct inode *inode, bool datasync, u64 *verf)
{
	struct orfs_sb *sbi = ORFS_SB(inode->i_sb);
	bool want = READ_ONCE(sbi->verf_ok);
	u32 flags = (datasync ? ORFS_FSYNC_DATA : 0) | (want ? ORFS_FSYNC_VERF : 0);
	struct orfs_fhop_req r = { .fh = ORFS_I(inode)->fh, .flags = cpu_to_le32(flags) };
	struct orfs_verf_rep rep = {};
	int ret;

	ret = orfs_call(sbi, ORFS_OP_FSYNC, &r, sizeof(r), want ? &rep : NULL,
			want ? sizeof(rep) : 0);
	*verf = le64_to_cpu(rep.verf);
	if (!ret && want && !*verf)
		ret = -EIO;
	if (!ret && want)
		orfs_stats_wb(sbi, ORFS_WB_COMMITS, 1);
	return ret;
}

/*
 * The folios of RESEND (a COMMIT found their verifier changed) are dirty
 * again, for write-back to send again what they sent unstable. Returns
 * the bytes.
 */
static u64 orfs_redirty(struct inode *inode, struct list_head *resend)
{
	struct address_space *mapping = inode->i_mapping;
	struct orfs_span spans[ORFS_SPANS];
	struct orfs_folio *of;
	struct folio *folio;
	unsigned int i, n;
	u64 bytes = 0;

	for (;;) {
		spin_lock(&inode->i_lock);
		of = list_first_entry_or_null(resend, struct orfs_folio, ulink);
		if (!of) {
			spin_unlock(&inode->i_lock);
			break;
		}
		/* The record holds a reference to the folio: it lives while listed. */
		folio = of->folio;
		folio_get(folio);
		spin_unlock(&inode->i_lock);

		folio_lock(folio);
		n = 0;
		spin_lock(&inode->i_lock);
		/* Not released or invalidated meanwhile (that takes it off the list). */
		if (folio_get_private(folio) == of && of->resend) {
			n = of->un;
			memcpy(spans, of->uspan, n * sizeof(spans[0]));
			orfs_unstable_del(inode, of);
		}
		spin_unlock(&inode->i_lock);
		for (i = 0; i < n && folio->mapping == mapping; i++) {
			orfs_folio_dirtied(mapping, folio, spans[i].first,
					   spans[i].end - spans[i].first);
			bytes += spans[i].end - spans[i].first;
		}
		folio_unlock(folio);
		folio_put(folio);
	}
	return bytes;
}

/**
 * orfs_commit() - make what INODE wrote back unstable durable
 * @inode: a regular file
 * @datasync: its data only (and what reading it needs), as fdatasync()
 * @always: send the FSYNC even with nothing unstable (fsync())
 *
 * Sends a COMMIT (FSYNC with ORFS_FSYNC_VERF). The folios whose unstable
 * WRITEs ended before it and were answered with the verifier it answers
 * are durable and leave the unstable list; those answered with another
 * (the server restarted, or its store failed a sync, in between) are
 * marked dirty again, written back, and committed again, up to
 * ORFS_COMMIT_TRIES times. Direct I/O written unstable under another
 * verifier cannot be sent again: -EIO, once.
 *
 * Context: process context, no folio of the file locked; may sleep.
 * Return: 0 once all is durable, or a negative errno.
 */
int orfs_commit(struct inode *inode, bool datasync, bool always)
{
	struct orfs_inode *ci = ORFS_I(inode);
	struct orfs_sb *sbi = ORFS_SB(inode->i_sb);
	struct orfs_folio *of, *tmp;
	unsigned int tries;
	int ret, err = 0;

	if (!S_ISREG(inode->i_mode))
		return 0;
	if (mutex_lock_killable(&ci->commit_mutex))
		return -EINTR;
	for (tries = 0;; tries++) {
		LIST_HEAD(resend);
		u64 seq, dseq, verf;
		bool any, lost = false;

		spin_lock(&inode->i_lock);
		seq = ci->useq;
		dseq = ci->dio_seq;
		any = !list_empty(&ci->unstable) || ci->dio_un;
		spin_unlock(&inode->i_lock);
		ret = 0;
		if (!any && !always)
			break;
		ret = orfs_fsync_call(inode, datasync, &verf);
		if (ret)
			break;
		spin_lock(&inode->i_lock);
		list_for_each_entry_safe(of, tmp, &ci->unstable, ulink) {
			/* Ended after the COMMIT was sent: the next one covers it. */
			if (of->useq > seq)
				continue;
			if (verf && of->verf == verf) {
				orfs_unstable_del(inode, of);
			} else {
				list_move_tail(&of->ulink, &resend);
				of->resend = true;
			}
		}
		/* Told once; direct I/O written after the COMMIT was sent is for the next. */
		if (ci->dio_un) {
			lost = !verf || ci->dio_verf != verf;
			if (lost || ci->dio_seq == dseq)
				ci->dio_un = false;
		}
		spin_unlock(&inode->i_lock);
		if (lost) {
			pr_warn_ratelimited("%pISc restarted and lost direct I/O written to a file (ino %lu) since its last fsync\n",
					    &sbi->addr, inode->i_ino);
			orfs_stats_wb(sbi, ORFS_WB_LOST, 1);
			err = -EIO;
		}
		if (list_empty(&resend))
			break;
		orfs_stats_wb(sbi, ORFS_WB_RESENT, orfs_redirty(inode, &resend));
		if (tries + 1 >= ORFS_COMMIT_TRIES) {
			ret = -EIO;
			break;
		}
		/* Sent again, then committed: the loop's next COMMIT. */
		ret = filemap_write_and_wait(inode->i_mapping);
		if (ret)
			break;
		always = true;
	}
	mutex_unlock(&ci->commit_mutex);
	return ret ?: err;
}

static int orfs_fsync(struct file *file, loff_t start, loff_t end, int datasync)
{
	struct inode *inode = file_inode(file);
	int ret;

	ret = file_write_and_wait_range(file, start, end);
	if (ret)
		return ret;
	return orfs_commit(inode, datasync, true);
}

/*
 * A store through a shared mapping into a clean page: the kernel asks
 * first, one page at a time (write-back write-protects the folio's pages
 * again), so the page is recorded as a write() records what it covers and
 * write-back of a large folio sends the pages stored into, not all of it.
 */
static vm_fault_t orfs_page_mkwrite(struct vm_fault *vmf)
{
	struct file *file = vmf->vma->vm_file;
	struct inode *inode = file_inode(file);
	struct folio *folio = page_folio(vmf->page);
	vm_fault_t ret = VM_FAULT_LOCKED;

	/* As write() fails with EIO for the owner of a lost lock. */
	if (unlikely(orfs_lock_lost(file)))
		return VM_FAULT_SIGBUS;
	sb_start_pagefault(inode->i_sb);
	file_update_time(file);
	folio_lock(folio);
	if (folio->mapping != inode->i_mapping) {
		/* Truncated or dropped meanwhile: the fault is taken again. */
		folio_unlock(folio);
		ret = VM_FAULT_NOPAGE;
		goto out;
	}
	orfs_folio_dirtied(inode->i_mapping, folio,
			   folio_page_idx(folio, vmf->page) << PAGE_SHIFT, PAGE_SIZE);
	folio_wait_stable(folio);
out:
	sb_end_pagefault(inode->i_sb);
	return ret;
}

static const struct vm_operations_struct orfs_file_vm_ops = {
	.fault		= filemap_fault,
	.map_pages	= filemap_map_pages,
	.page_mkwrite	= orfs_page_mkwrite,
};

static int orfs_file_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct inode *inode = file_inode(file);
	int ret;

	ret = orfs_revalidate_file(inode, false);
	if (ret)
		return ret;
	if ((vma->vm_flags & VM_SHARED) && (vma->vm_flags & VM_MAYWRITE))
		orfs_set_wb_cred(inode, file->f_cred);
	file_accessed(file);
	vma->vm_ops = &orfs_file_vm_ops;
	return 0;
}

/*
 * SEEK_DATA or SEEK_HOLE (WHENCE) from OFFSET, asked of the server once our
 * dirty pages are there: the place found, or -EOPNOTSUPP from a server
 * without SEEK.
 */
static loff_t orfs_seek_server(struct inode *inode, loff_t offset, int whence)
{
	struct orfs_sb *sbi = ORFS_SB(inode->i_sb);
	struct orfs_seek_req r = {
		.fh = ORFS_I(inode)->fh,
		.offset = cpu_to_le64(offset),
		.whence = cpu_to_le32(whence == SEEK_DATA ? ORFS_SEEK_DATA : ORFS_SEEK_HOLE),
	};
	struct orfs_seek_rep rep;
	loff_t at;
	int ret;

	ret = filemap_write_and_wait(inode->i_mapping);
	if (!ret)
		ret = orfs_call(sbi, ORFS_OP_SEEK, &r, sizeof(r), &rep, sizeof(rep));
	if (ret)
		return ret;
	at = (loff_t)le64_to_cpu(rep.offset);
	if (at < offset || at > inode->i_sb->s_maxbytes) {
		pr_warn_ratelimited("%pISc: SEEK from %lld answered %lld: not a place of the file\n",
				    &sbi->addr, offset, at);
		return -EIO;
	}
	return at;
}

/*
 * SEEK_END from the server's size (another client may have grown the
 * file), as NFS does; SEEK_DATA and SEEK_HOLE from the server's file. A
 * server without SEEK: all of the file is data, as the kernel says of a
 * file system that cannot tell.
 */
static loff_t orfs_file_llseek(struct file *file, loff_t offset, int whence)
{
	struct inode *inode = file_inode(file);
	loff_t at;
	int ret;

	switch (whence) {
	case SEEK_END:
		ret = orfs_revalidate(inode, false);
		if (ret)
			return ret;
		break;
	case SEEK_DATA:
	case SEEK_HOLE:
		if (offset < 0)
			return -ENXIO;
		at = orfs_seek_server(inode, offset, whence);
		if (at == -EOPNOTSUPP)
			break;
		if (at < 0)
			return at;
		return vfs_setpos(file, at, inode->i_sb->s_maxbytes);
	}
	return generic_file_llseek(file, offset, whence);
}

/*
 * copy_file_range(2): on the server between files of one mount; else,
 * or where the server has no COPY, through the page cache as the kernel
 * copies for file systems without the method (its caller does not).
 */
static ssize_t orfs_copy_file_range(struct file *in, loff_t pos_in, struct file *out,
				    loff_t pos_out, size_t len, unsigned int flags)
{
	ssize_t ret = orfs_copy_range(in, pos_in, out, pos_out, len);

	if (ret != -EOPNOTSUPP && ret != -EXDEV)
		return ret;
#ifdef ORFS_HAVE_SPLICE_COPY_FILE_RANGE
	return splice_copy_file_range(in, pos_in, out, pos_out, len);
#else
	return generic_copy_file_range(in, pos_in, out, pos_out, len, flags);
#endif
}

const struct file_operations orfs_file_fops = {
	.llseek		= orfs_file_llseek,
	.read_iter	= orfs_file_read_iter,
	.write_iter	= orfs_file_write_iter,
	.mmap		= orfs_file_mmap,
	.open		= orfs_file_open,
	.flush		= orfs_file_flush,
	.release	= orfs_file_release,
	.fsync		= orfs_fsync,
	.fallocate	= orfs_fallocate,
	.lock		= orfs_lock,
	.flock		= orfs_flock,
	/* A lease only this client knows of would not be broken by others. */
	.setlease	= simple_nosetlease,
#ifdef ORFS_HAVE_FILEMAP_SPLICE_READ
	.splice_read	= filemap_splice_read,
#else
	.splice_read	= generic_file_splice_read,
#endif
	.splice_write	= iter_file_splice_write,
	.copy_file_range = orfs_copy_file_range,
	.remap_file_range = orfs_remap_range,
};

const struct address_space_operations orfs_aops = {
	.read_folio	= orfs_read_folio,
	.readahead	= orfs_readahead,
	.writepage	= orfs_writepage,
	.writepages	= orfs_writepages,
	.write_begin	= orfs_write_begin,
	.write_end	= orfs_write_end,
	.dirty_folio	= orfs_dirty_folio,
	.release_folio	= orfs_release_folio,
	.invalidate_folio = orfs_invalidate_folio,
#ifdef CONFIG_MIGRATION
	.migrate_folio	= filemap_migrate_folio,
#endif
	.direct_IO	= orfs_direct_IO,
};

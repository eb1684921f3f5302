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

#include <linux/mm.h>
#include <linux/pagemap.h>
#include <linux/slab.h>
#include <linux/uio.h>
#include <linux/writeback.h>

#include "orfs.h"

/* A folio as a page descriptor entry (bvec_set_folio() is newer than 6.1). */
static void orfs_bvec_folio(struct bio_vec *bv, struct folio *folio, size_t len)
{
	bv->bv_page = &folio->page;
	bv->bv_offset = 0;
	bv->bv_len = len;
}

/* READ or WRITE of MEM at POS; *COUNT is what the server did. */
static int orfs_io(struct inode *inode, u16 op, loff_t pos, const struct knet_mem *mem,
		   u32 flags, u32 *count)
{
	struct orfs_sb *sbi = ORFS_SB(inode->i_sb);
	struct orfs_io_req *r;
	struct orfs_io_rep rep;
	struct orfs_msg m;
	int ret;

	ret = orfs_msg_init(&m, sbi, sizeof(struct orfs_req) + sizeof(*r));
	if (ret)
		return ret;
	r = orfs_msg_put(&m, NULL, sizeof(*r));
	if (r) {
		r->fh = ORFS_I(inode)->fh;
		r->offset = cpu_to_le64(pos);
		r->length = cpu_to_le32(mem->len);
		r->flags = cpu_to_le32(flags);
	}
	ret = orfs_rpc(sbi, op, &m, &rep, sizeof(rep), sizeof(rep), NULL, mem,
		       op == ORFS_OP_WRITE ? KNET_DIR_TO_SERVER : KNET_DIR_FROM_SERVER);
	orfs_msg_free(&m);
	if (ret)
		return ret;
	*count = le32_to_cpu(rep.count);
	if (*count > mem->len || orfs_check_attr(&rep.attr) ||
	    !S_ISREG(le32_to_cpu(rep.attr.mode))) {
		pr_warn_ratelimited("the server's answer to an I/O did not add up\n");
		return -EIO;
	}
	if (op == ORFS_OP_WRITE) {
		/* Our own change: keep our pages. */
		spin_lock(&inode->i_lock);
		ORFS_I(inode)->change = le64_to_cpu(rep.attr.change);
		spin_unlock(&inode->i_lock);
		if (pos + *count > i_size_read(inode))
			i_size_write(inode, pos + *count);
	}
	return 0;
}

/*
 * Read N consecutive folios in one request; mark them up to date (zeroes
 * past what the server had), and unlock them when UNLOCK.
 */
static int orfs_read_folios(struct inode *inode, struct folio **folios, unsigned int n,
			    bool unlock)
{
	loff_t pos = folio_pos(folios[0]), isize = i_size_read(inode);
	struct knet_mem mem = { .type = KNET_MEM_BVEC };
	struct bio_vec *bv = NULL;
	u32 count = 0;
	unsigned int i;
	size_t done;
	int ret = 0;

	if (pos < isize) {
		bv = kmalloc_array(n, sizeof(*bv), GFP_KERNEL);
		if (!bv) {
			ret = -ENOMEM;
			goto out;
		}
		for (i = 0; i < n; i++) {
			orfs_bvec_folio(&bv[i], folios[i], folio_size(folios[i]));
			mem.len += folio_size(folios[i]);
		}
		mem.nr = n;
		mem.bvec = bv;
		ret = orfs_io(inode, ORFS_OP_READ, pos, &mem, 0, &count);
	}
out:
	for (i = 0, done = 0; i < n; i++) {
		struct folio *folio = folios[i];
		size_t fs = folio_size(folio);

		if (!ret) {
			if (count < done + fs)
				folio_zero_segment(folio, count > done ? count - done : 0, fs);
			folio_mark_uptodate(folio);
		}
		done += fs;
		if (unlock)
			folio_unlock(folio);
	}
	kfree(bv);
	return ret;
}

static int orfs_read_folio(struct file *file, struct folio *folio)
{
	return orfs_read_folios(folio->mapping->host, &folio, 1, true);
}

static void orfs_readahead(struct readahead_control *ractl)
{
	struct inode *inode = ractl->mapping->host;
	u32 max = ORFS_SB(inode->i_sb)->rsize;
	unsigned int n = 0, cap = max / PAGE_SIZE;
	struct folio **batch, *folio;
	size_t bytes = 0;

	batch = kmalloc_array(cap, sizeof(*batch), GFP_KERNEL);
	if (!batch)
		return;		/* read_folio will do */
	while ((folio = readahead_folio(ractl))) {
		if (n && (n == cap || bytes + folio_size(folio) > max)) {
			orfs_read_folios(inode, batch, n, true);
			n = 0;
			bytes = 0;
		}
		batch[n++] = folio;
		bytes += folio_size(folio);
	}
	if (n)
		orfs_read_folios(inode, batch, n, true);
	kfree(batch);
}

static int orfs_writepage(struct page *page, struct writeback_control *wbc)
{
	struct folio *folio = page_folio(page);
	struct inode *inode = folio->mapping->host;
	struct knet_mem mem = { .type = KNET_MEM_BVEC, .nr = 1 };
	loff_t pos = folio_pos(folio), isize = i_size_read(inode);
	struct bio_vec bv;
	u32 count = 0;
	int ret;

	if (pos >= isize) {
		/* Past the end (truncated): nothing to write. */
		folio_unlock(folio);
		return 0;
	}
	mem.len = min_t(loff_t, folio_size(folio), isize - pos);
	orfs_bvec_folio(&bv, folio, mem.len);
	mem.bvec = &bv;
	folio_start_writeback(folio);
	folio_unlock(folio);
	ret = orfs_io(inode, ORFS_OP_WRITE, pos, &mem, 0, &count);
	if (!ret && count != mem.len)
		ret = -EIO;
	if (ret)
		mapping_set_error(folio->mapping, ret);
	folio_end_writeback(folio);
	return ret;
}

/* Make FOLIO ready for a write of LEN bytes at POS: read what the write keeps. */
static int orfs_prepare_write(struct inode *inode, struct folio *folio, loff_t pos,
			      unsigned int len)
{
	size_t off = offset_in_folio(folio, pos);
	int ret;

	if (folio_test_uptodate(folio) || (!off && len == folio_size(folio)))
		return 0;
	if (folio_pos(folio) >= i_size_read(inode)) {
		folio_zero_segments(folio, 0, off, off + len, folio_size(folio));
		folio_mark_uptodate(folio);
		return 0;
	}
	ret = orfs_read_folios(inode, &folio, 1, false);
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
		/* Only a whole-folio write skips the read; a short copy redoes it. */
		if (copied < folio_size(folio))
			copied = 0;
		else
			folio_mark_uptodate(folio);
	}
	if (copied) {
		if (pos + copied > i_size_read(inode))
			i_size_write(inode, pos + copied);
		folio_mark_dirty(folio);
	}
	folio_unlock(folio);
	folio_put(folio);
	return copied;
}

#ifdef ORFS_WRITE_BEGIN_FOLIO
static int orfs_write_begin(struct file *file, struct address_space *mapping, loff_t pos,
			    unsigned int len, struct folio **foliop, void **fsdata)
{
	struct folio *folio;

	folio = __filemap_get_folio(mapping, pos >> PAGE_SHIFT, FGP_WRITEBEGIN,
				    mapping_gfp_mask(mapping));
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
 * contiguous piece of at most rsize/wsize bytes. Any alignment works.
 */
static ssize_t orfs_direct_IO(struct kiocb *iocb, struct iov_iter *iter)
{
	struct inode *inode = file_inode(iocb->ki_filp);
	struct orfs_sb *sbi = ORFS_SB(inode->i_sb);
	bool write = iov_iter_rw(iter) == WRITE;
	loff_t pos = iocb->ki_pos;
	ssize_t total = 0;
	int ret = 0;

	while (iov_iter_count(iter)) {
		size_t chunk = min_t(size_t, iov_iter_count(iter), write ? sbi->wsize : sbi->rsize);
		struct knet_mem mem;
		u32 flags = 0, count;

		if (user_backed_iter(iter))
			chunk = min(chunk, iov_iter_single_seg_count(iter));
		ret = knet_mem_from_iter(&mem, iter, chunk);
		if (ret)
			break;
		if (!sbi->opts.regcache)
			mem.flags |= KNET_MEM_NOCACHE;
		if (write && (iocb->ki_flags & IOCB_DSYNC))
			flags = iocb->ki_flags & IOCB_SYNC ? ORFS_WRITE_SYNC : ORFS_WRITE_DSYNC;
		ret = orfs_io(inode, write ? ORFS_OP_WRITE : ORFS_OP_READ, pos, &mem, flags,
			      &count);
		if (ret)
			break;
		iov_iter_advance(iter, count);
		pos += count;
		total += count;
		if (count < chunk)
			break;		/* end of file, or the server's disk is full */
	}
	return total ?: ret;
}

static int orfs_file_open(struct inode *inode, struct file *file)
{
	int ret;

	/* Close-to-open: what another client wrote before its close shows now. */
	ret = orfs_revalidate(inode, true);
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
	if (!(file->f_mode & FMODE_WRITE))
		return 0;
	return filemap_write_and_wait(file->f_mapping);
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

	if (!(iocb->ki_flags & IOCB_DIRECT)) {
		ret = orfs_revalidate(inode, false);
		if (ret)
			return ret;
	}
	return generic_file_read_iter(iocb, to);
}

static ssize_t orfs_file_write_iter(struct kiocb *iocb, struct iov_iter *from)
{
	struct inode *inode = file_inode(iocb->ki_filp);
	int ret;

	/* Appends go to the end the server knows. */
	if (iocb->ki_flags & IOCB_APPEND) {
		ret = orfs_revalidate(inode, true);
		if (ret)
			return ret;
	}
	return generic_file_write_iter(iocb, from);
}

static int orfs_fsync(struct file *file, loff_t start, loff_t end, int datasync)
{
	struct inode *inode = file_inode(file);
	struct orfs_sb *sbi = ORFS_SB(inode->i_sb);
	struct orfs_fhop_req *r;
	struct orfs_msg m;
	int ret;

	ret = file_write_and_wait_range(file, start, end);
	if (ret)
		return ret;
	ret = orfs_msg_init(&m, sbi, sizeof(struct orfs_req) + sizeof(*r));
	if (ret)
		return ret;
	r = orfs_msg_put(&m, NULL, sizeof(*r));
	if (r) {
		r->fh = ORFS_I(inode)->fh;
		r->flags = cpu_to_le32(datasync ? 1 : 0);
	}
	ret = orfs_rpc(sbi, ORFS_OP_FSYNC, &m, NULL, 0, 0, NULL, NULL, KNET_DIR_NONE);
	orfs_msg_free(&m);
	return ret;
}

static int orfs_file_mmap(struct file *file, struct vm_area_struct *vma)
{
	int ret = orfs_revalidate(file_inode(file), false);

	return ret ?: generic_file_mmap(file, vma);
}

const struct file_operations orfs_file_fops = {
	.llseek		= generic_file_llseek,
	.read_iter	= orfs_file_read_iter,
	.write_iter	= orfs_file_write_iter,
	.mmap		= orfs_file_mmap,
	.open		= orfs_file_open,
	.flush		= orfs_file_flush,
	.release	= orfs_file_release,
	.fsync		= orfs_fsync,
#ifdef ORFS_HAVE_FILEMAP_SPLICE_READ
	.splice_read	= filemap_splice_read,
#else
	.splice_read	= generic_file_splice_read,
#endif
	.splice_write	= iter_file_splice_write,
};

const struct address_space_operations orfs_aops = {
	.read_folio	= orfs_read_folio,
	.readahead	= orfs_readahead,
	.writepage	= orfs_writepage,
	.write_begin	= orfs_write_begin,
	.write_end	= orfs_write_end,
	.dirty_folio	= filemap_dirty_folio,
	.direct_IO	= orfs_direct_IO,
};

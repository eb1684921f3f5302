// SPDX-License-Identifier: GPL-2.0-only
/*
 * knet's typed memory descriptors (kernel-virtual, pages, user-virtual):
 * walking them piece by piece, and copying between them and a buffer (the
 * inline data of a request or reply), user memory through the pages a
 * request pinned.
 */
#define pr_fmt(fmt) "knet: " fmt

#include <linux/highmem.h>
#include <linux/uio.h>
#include <linux/uaccess.h>

#include "knet_int.h"
#include "regcache.h"

/* Bytes of entry I of M, before the descriptor's skip and length apply. */
static size_t knet_mem_entry_len(const struct knet_mem *m, unsigned int i)
{
	switch (m->type) {
	case KNET_MEM_KVEC:
		return m->kvec[i].iov_len;
	case KNET_MEM_BVEC:
		return m->bvec[i].bv_len;
	default:
		return m->iov[i].iov_len;
	}
}

/*
 * Walk the data of M: for each non-empty piece, FN(M, entry, offset in the
 * entry, bytes, ARG). Stops at the first non-zero return, which it returns;
 * -EINVAL when the entries hold less than M->len bytes.
 */
int knet_mem_walk(const struct knet_mem *m, knet_piece_fn fn, void *arg)
{
	size_t done = 0;
	unsigned int i;
	int ret;

	for (i = 0; i < m->nr && done < m->len; i++) {
		size_t off = i ? 0 : m->skip;
		size_t raw = knet_mem_entry_len(m, i);
		size_t n;

		if (off >= raw)
			continue;
		n = min(raw - off, m->len - done);
		ret = fn(m, i, off, n, arg);
		if (ret)
			return ret;
		done += n;
	}
	return done == m->len ? 0 : -EINVAL;
}

struct knet_copy {
	u8			*buf;
	bool			to_mem;
	struct knet_request	*pinned;	/* user memory through its pins */
	unsigned int		pin;
};

/* Copy N bytes of BUF into user memory at ADDR through the pinned pages of E. */
static void knet_copy_to_pins(struct regcache_entry *e, unsigned long addr, const u8 *buf,
			      size_t n)
{
	while (n) {
		size_t po = offset_in_page(addr);
		size_t k = min(n, PAGE_SIZE - po);

		memcpy_to_page(regcache_page(e, addr), po, buf, k);
		addr += k;
		buf += k;
		n -= k;
	}
}

static int knet_copy_piece(const struct knet_mem *m, unsigned int i, size_t off, size_t n,
			   void *arg)
{
	struct knet_copy *c = arg;

	if (m->type == KNET_MEM_KVEC) {
		void *p = m->kvec[i].iov_base + off;

		if (c->to_mem)
			memcpy(p, c->buf, n);
		else
			memcpy(c->buf, p, n);
	} else if (m->type == KNET_MEM_BVEC) {
		size_t pos = m->bvec[i].bv_offset + off, left = n;
		struct page *page = m->bvec[i].bv_page;

		/* A bvec may span pages: copy page by page. */
		while (left) {
			struct page *pg = nth_page(page, pos >> PAGE_SHIFT);
			size_t po = offset_in_page(pos);
			size_t k = min(left, PAGE_SIZE - po);

			if (c->to_mem)
				memcpy_to_page(pg, po, c->buf + (n - left), k);
			else
				memcpy_from_page(c->buf + (n - left), pg, po, k);
			pos += k;
			left -= k;
		}
	} else if (c->pinned) {
		/* Any context: the pages the request pinned, one entry a piece. */
		if (!c->to_mem || c->pin >= c->pinned->npin)
			return -EINVAL;
		knet_copy_to_pins(c->pinned->pin[c->pin++], (unsigned long)m->iov[i].iov_base + off,
				  c->buf, n);
	} else {
		/* Otherwise user memory is copied only by its owner, in process context. */
		u8 __user *u = (u8 __user *)m->iov[i].iov_base + off;

		if (c->to_mem ? copy_to_user(u, c->buf, n) : copy_from_user(c->buf, u, n))
			return -EFAULT;
	}
	c->buf += n;
	return 0;
}

/**
 * knet_pin_pages() - the pinned pages of one piece of user memory
 * @rq: the request whose pins hold the memory, one entry a piece
 * @pin: in and out: the next entry of @rq->pin
 * @addr: the piece's first user address
 * @n: its bytes
 * @fn: called for each page's part: the entry, the address, the bytes
 *	(up to the page's end); a non-zero return stops the walk
 * @arg: passed to @fn
 *
 * For a knet_mem_walk() over user memory that @rq pinned (knet_pin()).
 *
 * Return: 0, -EINVAL when @rq has no pin left, or what @fn returned.
 */
int knet_pin_pages(const struct knet_request *rq, unsigned int *pin, unsigned long addr,
		   size_t n, knet_page_fn fn, void *arg)
{
	unsigned long end = addr + n;
	struct regcache_entry *e;
	int ret;

	if (*pin >= rq->npin)
		return -EINVAL;
	e = rq->pin[(*pin)++];
	while (addr < end) {
		size_t k = min_t(size_t, end - addr, PAGE_SIZE - offset_in_page(addr));

		ret = fn(e, addr, k, arg);
		if (ret)
			return ret;
		addr += k;
	}
	return 0;
}

/*
 * Copy between the data of a descriptor and a linear buffer. User memory
 * is reached through the pins of PINNED when set (into it only), else
 * with copy_{to,from}_user() in its owner's context.
 */
int knet_mem_copy(const struct knet_mem *m, void *buf, size_t len, bool to_mem,
		  struct knet_request *pinned)
{
	struct knet_mem part = *m;
	struct knet_copy c = { .buf = buf, .to_mem = to_mem, .pinned = pinned };

	if (m->type == KNET_MEM_UVEC && m->iov == &m->one)
		part.iov = &part.one;
	part.len = min(len, m->len);
	return knet_mem_walk(&part, knet_copy_piece, &c);
}

/**
 * knet_mem_from_iter() - describe the data of an iov_iter
 * @m: the descriptor to fill; it refers to @it's arrays, which must stay
 *	valid while @m is used, and must not be copied (it may refer to
 *	itself)
 * @it: user (ubuf, iovec), kernel (kvec) or page (bvec) memory; not
 *	advanced
 * @len: bytes wanted from @it's position on; less when @it holds less
 *
 * User memory is taken as the calling process's.
 *
 * Return: 0, or -EINVAL for an iterator of another kind or without data.
 */
int knet_mem_from_iter(struct knet_mem *m, const struct iov_iter *it, size_t len)
{
	memset(m, 0, sizeof(*m));
	m->len = min(len, iov_iter_count(it));
	m->skip = it->iov_offset;
	m->nr = it->nr_segs;
	if (!m->len)
		return -EINVAL;
	if (iter_is_ubuf(it)) {
		m->type = KNET_MEM_UVEC;
		m->one.iov_base = it->ubuf;
		m->one.iov_len = it->iov_offset + iov_iter_count(it);
		m->iov = &m->one;
		m->nr = 1;
	} else if (iter_is_iovec(it)) {
		m->type = KNET_MEM_UVEC;
#ifdef KNET_HAVE_ITER_IOV
		m->iov = iter_iov(it);
#else
		m->iov = it->iov;
#endif
	} else if (iov_iter_is_kvec(it)) {
		m->type = KNET_MEM_KVEC;
		m->kvec = it->kvec;
	} else if (iov_iter_is_bvec(it)) {
		m->type = KNET_MEM_BVEC;
		m->bvec = it->bvec;
	} else {
		return -EINVAL;
	}
	return 0;
}
EXPORT_SYMBOL_GPL(knet_mem_from_iter);

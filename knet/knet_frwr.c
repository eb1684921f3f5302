// SPDX-License-Identifier: GPL-2.0-only
/*
 * Memory a request lends the server: user memory pinned through regcache,
 * then every kind mapped and registered with a fast registration (FRWR)
 * whose key exists for that request only.
 */
#define pr_fmt(fmt) "knet: " fmt

#include <linux/scatterlist.h>
#include <rdma/ib_verbs.h>

#include "knet_int.h"
#include "regcache.h"

/* Give back the regcache entries of a request's user memory. */
void knet_unpin(struct knet_request *rq)
{
	while (rq->npin) {
		regcache_put(rq->pin[--rq->npin]);
		knet_obj_add(KNET_OBJ_PIN, -1);
	}
}

struct knet_sg_build {
	struct knet_ep		*ep;
	struct knet_slot	*s;
	struct knet_request	*rq;
	unsigned int		n;	/* scatterlist entries used */
	unsigned int		pin;	/* next entry of rq->pin */
};

/* Kernel memory and pages: one scatterlist entry per piece, mapped later. */
static int knet_sg_piece(const struct knet_mem *m, unsigned int i, size_t off, size_t n,
			 void *arg)
{
	struct knet_sg_build *b = arg;
	struct scatterlist *sg;

	if (b->n == b->ep->max_pages)
		return -EINVAL;
	sg = &b->s->sg[b->n++];
	if (m->type == KNET_MEM_KVEC) {
		void *p = m->kvec[i].iov_base + off;

		if (!virt_addr_valid(p))
			return -EINVAL;
		sg_set_buf(sg, p, n);
	} else {
		sg_set_page(sg, m->bvec[i].bv_page, n, m->bvec[i].bv_offset + off);
	}
	return 0;
}

/* A page's part of user memory: its cached DMA address. */
static int knet_user_page(struct regcache_entry *e, unsigned long addr, size_t k, void *arg)
{
	struct knet_sg_build *b = arg;
	struct scatterlist *sg;

	if (b->n == b->ep->max_pages)
		return -EINVAL;
	sg = &b->s->sg[b->n++];
	sg_dma_address(sg) = regcache_dma(e, addr);
	sg_dma_len(sg) = k;
	ib_dma_sync_single_for_device(b->ep->dev, sg_dma_address(sg), k, DMA_BIDIRECTIONAL);
	return 0;
}

/* User memory: the cached DMA addresses of its pinned pages, page by page. */
static int knet_user_piece(const struct knet_mem *m, unsigned int i, size_t off, size_t n,
			   void *arg)
{
	struct knet_sg_build *b = arg;

	return knet_pin_pages(b->rq, &b->pin, (unsigned long)m->iov[i].iov_base + off, n,
			      knet_user_page, b);
}

/* Map the request's memory and register it; fills SEG. */
int knet_map_mem(struct knet_ep *ep, struct knet_slot *s, struct knet_request *rq,
		 struct knet_seg *seg)
{
	struct ib_reg_wr *reg = &s->reg;
	const struct knet_mem *m = rq->mem;
	struct knet_sg_build b = { .ep = ep, .s = s, .rq = rq };
	int n, ret;

	s->sg_nents = 0;
	s->usg = 0;
	memset(reg, 0, sizeof(*reg));
	/* A new key for each request: an old one never reaches this memory. */
	ib_update_fast_reg_key(s->mr, ib_inc_rkey(s->mr->rkey));
	sg_init_table(s->sg, ep->max_pages);
	s->dma_dir = rq->dir == KNET_DIR_TO_SERVER ? DMA_TO_DEVICE : DMA_FROM_DEVICE;
	if (m->type == KNET_MEM_UVEC) {
		ret = knet_mem_walk(m, knet_user_piece, &b);
		s->usg = b.n;
		if (ret)
			return ret;
		n = ib_map_mr_sg(s->mr, s->sg, b.n, NULL, PAGE_SIZE);
		if (n != b.n)
			return n < 0 ? n : -EINVAL;
	} else {
		ret = knet_mem_walk(m, knet_sg_piece, &b);
		if (ret)
			return ret;
		sg_mark_end(&s->sg[b.n - 1]);
		s->sg_orig = b.n;
		s->sg_nents = ib_dma_map_sg(ep->dev, s->sg, b.n, s->dma_dir);
		if (!s->sg_nents)
			return -EIO;
		knet_obj_add(KNET_OBJ_MAP, 1);
		n = ib_map_mr_sg(s->mr, s->sg, s->sg_nents, NULL, PAGE_SIZE);
		if (n != s->sg_nents)
			/* A gap inside a page between entries: not one registration. */
			return n < 0 ? n : -EINVAL;
	}
	reg->wr.opcode = IB_WR_REG_MR;
	reg->wr.wr_cqe = &s->reg_cqe;
	reg->wr.send_flags = 0;
	reg->mr = s->mr;
	reg->key = s->mr->rkey;
	reg->access = rq->dir == KNET_DIR_TO_SERVER ? IB_ACCESS_REMOTE_READ :
		      IB_ACCESS_REMOTE_WRITE | IB_ACCESS_LOCAL_WRITE;
	seg->addr = cpu_to_le64(s->mr->iova);
	seg->rkey = cpu_to_le32(s->mr->rkey);
	seg->len = cpu_to_le32(m->len);
	s->mr_used = true;
	return 0;
}

struct knet_pinner {
	struct knet_ep		*ep;
	struct knet_request	*rq;
	unsigned int		flags;
};

static int knet_pin_piece(const struct knet_mem *m, unsigned int i, size_t off, size_t n,
			  void *arg)
{
	struct knet_pinner *p = arg;
	struct regcache_entry *e;

	if (p->rq->npin == KNET_UVEC_MAX)
		return -EINVAL;
	e = regcache_get(p->ep->rc, (unsigned long)m->iov[i].iov_base + off, n, p->flags);
	if (IS_ERR(e))
		return PTR_ERR(e);
	p->rq->pin[p->rq->npin++] = e;
	knet_obj_add(KNET_OBJ_PIN, 1);
	return 0;
}

/* Pin the user memory of RQ: the server reaches it by RDMA, or an inline reply lands in it. */
int knet_pin(struct knet_ep *ep, struct knet_request *rq)
{
	const struct knet_mem *m = rq->mem;
	struct knet_pinner p = { .ep = ep, .rq = rq };
	int ret;

	rq->npin = 0;
	if (!m || m->type != KNET_MEM_UVEC || knet_inline_out(ep, rq))
		return 0;
	if (!ep->rc)
		return -EOPNOTSUPP;
	if (rq->dir == KNET_DIR_FROM_SERVER)
		p.flags |= REGCACHE_WRITE;
	if (m->flags & KNET_MEM_NOCACHE)
		p.flags |= REGCACHE_NOCACHE;
	ret = knet_mem_walk(m, knet_pin_piece, &p);
	if (ret)
		knet_unpin(rq);
	return ret;
}

// SPDX-License-Identifier: GPL-2.0-only
/*
 * The request engine: what happens to a request between its receive and
 * its reply. Server-driven data movement:
 *
 *  WRITE  chunk <- RDMA READ from the client's segments, then a worker
 *         writes the chunk to the volume;
 *  READ   a worker reads the volume into a chunk, then RDMA WRITE to the
 *         client's segments;
 *
 * one pool chunk at a time per piece, at most SRV_REQ_CHUNKS pieces of one
 * request at once so that disk and network overlap. A request gets a chunk
 * only when one is free (delayed allocation); until then it waits in the
 * fair queue, costing nothing but its queue link. Small payloads travel
 * inline and need no chunk at all. The reply goes after the data: RDMA
 * WRITEs and the SEND on one queue pair are delivered in order.
 *
 * All of this runs on the progress thread that owns the connection (its
 * shard); workers only run struct job. The replay and open-file caches
 * are shared by the shards and lock themselves.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/srv.h"

#define REQ_OF(it) ((struct req *)((char *)(it) - offsetof(struct req, qi)))

/*
 * What a job does: a block request's operation, a chunk's piece, a file
 * operation, a file opened for its READ or WRITE of segments, a file
 * opened and its inline data moved, inline data moved on a file open in
 * the cache.
 */
enum { JOB_TAG_REQ = 1, JOB_TAG_CHUNK, JOB_TAG_FSVC, JOB_TAG_FOPEN, JOB_TAG_FOPEN_IO, JOB_TAG_FIO };

static void schedule(struct shard *s);

static void req_finish(struct req *r)
{
	struct conn *c = r->c;

	if (r->fde)
		fdc_put(r->fde);
	else if (r->fd >= 0)
		close(r->fd);
	r->fde = NULL;
	r->fd = -1;
	free(r->fbody);
	r->fbody = NULL;
	r->active = 0;
	c->active--;
	c->sh->active--;
	conn_maybe_free(c);
}

/* R's reply body (INFO and IDENT have one) into B; returns its length. */
static uint32_t block_body(struct req *r, union block_body *b)
{
	if (r->f.status || r->c->ex->cfg.service != KNET_SVC_BLOCK)
		return 0;
	switch (r->br.opcode) {
	case MXBD_OP_INFO:
		block_info(&r->c->ex->vol, &b->info);
		return sizeof(b->info);
	case MXBD_OP_IDENT:
		memcpy(b->ident.uuid, r->c->ex->uuid, sizeof(b->ident.uuid));
		return sizeof(b->ident);
	}
	return 0;
}

/*
 * The flags of an operation C posts after its RDMA READs. Verbs complete a
 * send queue's work in the order it was posted, and libfabric's verbs
 * provider relies on it (it pairs each completion with the oldest
 * operation of the queue pair). siw, the kernel's soft-iWARP, does not:
 * it completes a SEND or WRITE once sent, before an earlier READ whose
 * response has not come, and libfabric then corrupts its lists. On iWARP
 * an operation posted while READs are out carries a fence: the device
 * starts it once they are over, so it completes after them. Nothing else
 * is held back, and neither RoCE nor InfiniBand pays for it.
 */
static uint64_t conn_fence(const struct conn *c)
{
	return FI_COMPLETION | (c->sh->fence_reads && c->reads_out ? FI_FENCE : 0);
}

/* Send N bytes of C's reply buffer BUF. */
static ssize_t conn_send(struct conn *c, void *buf, size_t n, struct fi_context *ctx)
{
	struct iovec iov = { .iov_base = buf, .iov_len = n };
	void *desc;
	struct fi_msg msg = {
		.msg_iov = &iov, .desc = &desc, .iov_count = 1, .context = ctx,
	};

	if (c->tcp)
		return tcp_send(c, buf, n, (struct op *)ctx);
	desc = fi_mr_desc(c->mr);
	return fi_sendmsg(c->ep, &msg, conn_fence(c));
}

/* RDMA WRITE N bytes of BUF (registered as DESC) to the client's RADDR, RKEY. */
static ssize_t conn_write(struct conn *c, void *buf, size_t n, void *desc, uint64_t raddr,
			  uint64_t rkey, struct fi_context *ctx)
{
	struct iovec iov = { .iov_base = buf, .iov_len = n };
	struct fi_rma_iov rma = { .addr = raddr, .len = n, .key = rkey };
	struct fi_msg_rma msg = {
		.msg_iov = &iov, .desc = &desc, .iov_count = 1,
		.rma_iov = &rma, .rma_iov_count = 1, .context = ctx,
	};

	return fi_writemsg(c->ep, &msg, conn_fence(c));
}

/*
 * Send R's reply, built from its state; parks R if no reply buffer is free.
 * Closing the connection finishes R with every other request that is not
 * in flight (eng_conn_closing()), so a failure here must not finish it again.
 */
static void reply(struct req *r)
{
	struct conn *c = r->c;
	int lie = fault_lies(c, r);
	union block_body b;
	uint32_t blen, ilen;
	size_t n;
	ssize_t ret;
	int t;

	if (c->closing) {
		req_finish(r);
		return;
	}
	/* An error met while executing (backend, RDMA) is the answer. */
	if (r->status && !r->f.status)
		r->f.status = (uint32_t)r->status;
	for (t = 0; t < c->ntx; t++)
		if (!c->tx_busy[t])
			break;
	if (t == c->ntx) {
		r->tx_next = NULL;
		*c->tx_wait_tail = r;
		c->tx_wait_tail = &r->tx_next;
		return;
	}
	if (r->f.opcode == KNET_OP_AUTH) {
		/* Step 1's answer has a body: the server's nonce and MAC. */
		blen = !r->f.status && c->auth_step == 1 ? sizeof(r->auth_rep) : 0;
		ilen = 0;
		n = proto_build_reply(conn_tx_buf(c, t), SRV_TX_SIZE, &r->f, 1, &r->auth_rep, blen,
				      NULL, 0);
	} else if (conn_is_file(c)) {
		const uint8_t *body = r->fbody;

		if (lie && c->s->fault >= FAULT_FS_NAME)
			inject_fs_fault(c->s->fault, r);
		blen = r->f.status || !body ? 0 : r->fbody_len;
		ilen = 0;
		/* An inline READ's data follows its reply body as inline data. */
		if (blen && r->fr.op == ORFS_OP_READ && !r->fr.nsegs) {
			ilen = blen - (uint32_t)sizeof(struct orfs_io_rep);
			blen = sizeof(struct orfs_io_rep);
		}
		n = proto_build_reply(conn_tx_buf(c, t), SRV_TX_SIZE, &r->f, 1, body, blen,
				      body ? body + blen : NULL, ilen);
	} else {
		blen = block_body(r, &b);
		if (lie)
			blen = inject_block_fault(c->s->fault, r, &b, blen);
		ilen = r->f.status ? 0 : r->inl_reply;
		/* Inline read data was read into the request's receive buffer. */
		n = proto_build_reply(conn_tx_buf(c, t), SRV_TX_SIZE, &r->f, 1, &b, blen,
				      conn_rx_buf(c, r->slot), ilen);
	}
	if (!n) {
		conn_close(c, "reply too large (internal error)");
		return;
	}
	if (lie && c->s->fault < FAULT_FS_NAME)
		n = inject_fault(c->s->fault, conn_tx_buf(c, t), n);
	c->bytes_out += ilen;
	/* The receive goes back before the reply that returns its credit. */
	if (conn_post_recv(c, r->slot)) {
		conn_close(c, "cannot post a receive");
		return;
	}
	ret = conn_send(c, conn_tx_buf(c, t), n, &c->tx[t].ctx);
	if (ret) {
		fab_err("fi_send", (int)ret);
		conn_close(c, "cannot send a reply");
		return;
	}
	c->tx_busy[t] = 1;
	c->pending++;
	req_finish(r);
}

/* Block jobs: one backend call on a volume. */
enum { JOB_READ, JOB_WRITE, JOB_FLUSH, JOB_DISCARD, JOB_WRITE_ZEROES, JOB_NOTHING };

static int run_block_job(struct job *j)
{
	const struct volume *v = j->target;

	switch (j->kind) {
	case JOB_READ:
		return block_read(v, j->buf, j->off, j->len);
	case JOB_WRITE:
		return block_write(v, j->buf, j->off, j->len, j->fua);
	case JOB_FLUSH:
		return block_flush(v);
	case JOB_DISCARD:
		return block_discard(v, j->off, j->len);
	case JOB_NOTHING:
		return 0;
	default:
		return block_write_zeroes(v, j->off, j->len);
	}
}

/*
 * Larger pieces go to the workers even when they would not wait: copying
 * them here would hold up every other connection, and workers copy several
 * at once.
 */
#define TRY_NOW_MAX	(64u << 10)
/* READ chunks from this size may go through a pipe (chunk_wants_pipe()). */
#define SPLICE_MIN	(16u << 10)

/*
 * Hand job J to a worker, or, when it was done here without waiting (a read
 * the page cache holds, a write the store takes at once), queue it as done:
 * a small request then needs no thread hop, which is most of its time on
 * the server. Its completion still runs from the loop (eng_run_now()),
 * never from inside the caller.
 */
static void dispatch_job(struct shard *s, struct job *j, int try_now)
{
	if (try_now) {
		j->next = s->now;
		s->now = j;
		s->jobs_now++;
		return;
	}
	workers_submit(&s->s->w, j, &s->box);
}

static void submit(struct shard *s, struct job *j, int kind, struct volume *v,
		   void *buf, uint64_t off, uint32_t len, int fua)
{
	if (s->s->fault == FAULT_NO_SYNC) {
		/* The store's cache is left as it is: a power cut loses it. */
		fua = 0;
		if (kind == JOB_FLUSH)
			kind = JOB_NOTHING;
	}
	j->run = run_block_job;
	j->kind = kind;
	j->target = v;
	j->buf = buf;
	j->off = off;
	j->len = len;
	j->fua = fua;
	j->result = 0;
	dispatch_job(s, j, (kind == JOB_READ || (kind == JOB_WRITE && !fua)) &&
		     len <= TRY_NOW_MAX && block_try_now(v, kind == JOB_WRITE, buf, off, len));
}

static void req_job(struct req *r, int kind, void *buf)
{
	struct conn *c = r->c;

	r->inflight++;
	r->job.owner = r;
	r->job.peer = c->peer_key;
	r->job.tag = JOB_TAG_REQ;
	submit(c->sh, &r->job, kind, &c->ex->vol, buf, r->br.offset, r->br.length,
	       !!(r->br.flags & MXBD_IO_FUA));
}

static void want_chunk(struct req *r)
{
	struct shard *s = r->c->sh;

	uint32_t left = r->br.length - r->next;

	r->queued = 1;
	/* Its cost: the bytes of the chunk it waits for. */
	r->qi.bytes = left < s->pool.chunk ? left : (uint32_t)s->pool.chunk;
	fq_push(&s->fq, &r->c->flow, &r->qi);
	if (!s->pool.nfree)
		s->buffer_waits++;
}

struct rdma_post {
	struct chunk	*ch;
	void		*desc;		/* of the registration of CH's buffer */
	int		is_read;
	int		k;
};

/* CH's READs are over: their sink's key goes (see shard_init()). */
static void sink_release(struct chunk *ch)
{
	int ret;

	if (!ch->sink_mr)
		return;
	ret = fi_close(&ch->sink_mr->fid);
	if (ret)
		fab_err("closing a READ sink's registration", ret);
	ch->sink_mr = NULL;
	ch->c->sh->sink_live--;
}

static int post_piece(void *arg, const struct seg_piece *p)
{
	struct rdma_post *rp = arg;
	struct chunk *ch = rp->ch;
	struct conn *c = ch->r->c;
	struct op *op = &ch->ops[rp->k];
	void *desc = rp->desc;
	ssize_t ret;

	op->kind = OP_RDMA;
	op->owner = ch;
	op->idx = rp->k;
	op->read = rp->is_read;
	if (c->tcp)
		ret = tcp_rdma(c, ch->buf + p->local, ch->pipe >= 0 ? &c->sh->pipes[ch->pipe] : NULL,
			       p->len, ch->r->f.tag, p->raddr, op);
	else if (rp->is_read)
		ret = fi_read(c->ep, ch->buf + p->local, p->len, desc, 0, p->raddr, p->rkey,
			      &op->ctx);
	else
		ret = conn_write(c, ch->buf + p->local, p->len, desc, p->raddr, p->rkey,
				 &op->ctx);
	if (ret) {
		/* Earlier ones complete (or flush) and are counted. */
		fab_err(rp->is_read ? "fi_read" : "fi_write", (int)ret);
		return (int)ret;
	}
	ch->pending++;
	c->pending++;
	c->sq_free--;
	c->reads_out += rp->is_read;
	rp->k++;
	return 0;
}

/*
 * Post the RDMA operations moving chunk CH between its buffer and the
 * client's segments: READs for a WRITE request, WRITEs for a READ.
 * Returns 0, or -FI_EAGAIN when the connection's send queue has no room
 * for them yet (nothing is posted then), or another error.
 */
static int post_rdma(struct chunk *ch)
{
	struct req *r = ch->r;
	struct conn *c = r->c;
	const char *msg = conn_rx_buf(c, r->slot);
	struct rdma_post rp = { .ch = ch, .is_read = r->br.opcode == MXBD_OP_WRITE };
	struct shard *sh = c->sh;
	int ret;

	/* Count first, so that a chunk is posted whole or not at all. */
	ret = block_map_segments(msg, &r->br, ch->off, ch->len, NULL, NULL);
	if (ret > c->sq_free)
		return -FI_EAGAIN;
	/* A WRITE's pipe takes its chunk's data in one piece, in order. */
	if (rp.is_read && ch->pipe >= 0 && ret != 1) {
		spipe_put(sh, ch->pipe, 0);
		ch->pipe = -1;
	}
	rp.desc = sh->pool_mr ? fi_mr_desc(sh->pool_mr) : NULL;
	if (rp.is_read && sh->sink_per_read && !ch->sink_mr && !c->tcp) {
		/* A key for these READs alone, closed when they complete. */
		ret = fi_mr_reg(sh->s->dev[sh->dev].domain, ch->buf, ch->len, FI_READ, 0, 0, 0,
				&ch->sink_mr, NULL);
		if (ret) {
			ch->sink_mr = NULL;
			fab_err("registering a READ sink", ret);
			return ret == -FI_EAGAIN ? -FI_ENOMEM : ret;
		}
		sh->sink_regs++;
		sh->sink_live++;
	}
	if (ch->sink_mr)
		rp.desc = fi_mr_desc(ch->sink_mr);
	ret = block_map_segments(msg, &r->br, ch->off, ch->len, post_piece, &rp);
	if (ret < 0)
		return ret;
	if (rp.is_read)
		c->bytes_in += ch->len;
	else
		c->bytes_out += ch->len;
	return 0;
}

static void chunk_done(struct chunk *ch, int err);
static void req_progress(struct req *r);

/*
 * CH's RDMA is posted. A read's chunk is then done as far as its
 * request is concerned: the reply may go now, without waiting for the
 * WRITEs to complete. A reliable connection delivers the reply after the
 * data it follows, and a WRITE that fails breaks the connection, so the
 * reply is then lost, never taken for a success. The chunk keeps its
 * buffer until the WRITEs complete (eng_on_rdma_done()), but lets go of
 * the request, whose slot the reply gives back to the client.
 */
static void chunk_posted(struct chunk *ch)
{
	struct req *r = ch->r;

	if (r->br.opcode != MXBD_OP_READ)
		return;	/* a write's chunk goes on to the store when its READs complete */
	if (ch->c->s->fault == FAULT_LATE_WRITE) {
		/* Keep the request unanswered and the data going (eng_on_rdma_done()). */
		ch->late = 1;
		return;
	}
	ch->r = NULL;
	r->inflight--;
	r->done += ch->len;
	req_progress(r);
	schedule(ch->c->sh);
}

/* Post CH's RDMA, or park it until the send queue drains. */
static void chunk_rdma(struct chunk *ch)
{
	struct conn *c = ch->r->c;
	int ret;

	if (c->closing) {
		chunk_done(ch, ECONNRESET);
		return;
	}
	ret = post_rdma(ch);
	if (ret == -FI_EAGAIN && !ch->pending) {
		ch->wait_next = NULL;
		*c->rdma_wait_tail = ch;
		c->rdma_wait_tail = &ch->wait_next;
		return;
	}
	if (ret) {
		ch->err = EIO;
		conn_close(c, "cannot post RDMA");
		if (!ch->pending)
			chunk_done(ch, EIO);
		return;
	}
	chunk_posted(ch);
}

/* A file's piece: plain pread/pwrite; a read returns what it got. */
static int run_file_io(struct job *j)
{
	int done = rw_full(j->fd, j->kind == JOB_WRITE, j->buf, j->len, j->off);

	if (j->kind == JOB_READ && done >= 0)
		memset((char *)j->buf + done, 0, j->len - (uint32_t)done);
	return done;
}

/*
 * A file's piece done now if it cannot wait (see dispatch_job()): whole
 * from the page cache (RWF_NOWAIT) or an export in memory. Sets the job's
 * result as a worker would; 0 leaves it to a worker.
 */
static int file_try_now(struct fsvc_export *fx, struct job *j)
{
	if (fx->in_memory) {
		j->result = run_file_io(j);
		return 1;
	}
	if (!rw_nowait(j->fd, j->kind == JOB_WRITE, j->buf, j->off, j->len, &fx->no_nowait))
		return 0;
	j->result = (int)j->len;
	return 1;
}

/* Is C's volume or export in memory (tmpfs, ramfs): nothing on it waits for a disk? */
static int store_in_memory(const struct conn *c)
{
	return conn_is_file(c) ? c->ex->fx.in_memory : c->ex->vol.in_memory;
}

/*
 * Read CH's data into its pipe (splice.c), now if the store is in memory
 * (nothing is copied, nothing waits), else on a worker. Or write what its
 * pipe received into the store: a copy into the page cache, on a worker
 * past TRY_NOW_MAX as any such copy.
 */
static void chunk_splice(struct chunk *ch, int kind)
{
	struct req *r = ch->r;
	struct conn *c = r->c;
	struct job *j = &ch->job;
	int now = store_in_memory(c) && (kind == JOB_READ || ch->len <= TRY_NOW_MAX);

	j->run = kind == JOB_READ ? splice_read : splice_write;
	j->kind = kind;
	j->fd = conn_is_file(c) ? r->fd : c->ex->vol.fd;
	j->pipe = kind == JOB_READ ? c->sh->pipes[ch->pipe].w : c->sh->pipes[ch->pipe].r;
	j->buf = ch->buf;
	j->off = r->br.offset + ch->off;
	j->len = ch->len;
	j->fua = 0;
	if (now)
		j->result = j->run(j);
	dispatch_job(c->sh, j, now);
}

/* Move chunk CH between its buffer (or pipe) and the volume or file. */
static void chunk_job(struct chunk *ch, int kind)
{
	struct req *r = ch->r;
	struct conn *c = r->c;

	ch->job.owner = ch;
	ch->job.peer = c->peer_key;
	ch->job.tag = JOB_TAG_CHUNK;
	if (ch->pipe >= 0) {
		chunk_splice(ch, kind);
		return;
	}
	if (conn_is_file(c)) {
		ch->job.run = run_file_io;
		ch->job.kind = kind;
		ch->job.fd = r->fd;
		ch->job.buf = ch->buf;
		ch->job.off = r->br.offset + ch->off;
		ch->job.len = ch->len;
		dispatch_job(c->sh, &ch->job, ch->len <= TRY_NOW_MAX &&
			     file_try_now(&c->ex->fx, &ch->job));
		return;
	}
	submit(c->sh, &ch->job, kind, &c->ex->vol, ch->buf, r->br.offset + ch->off, ch->len,
	       kind == JOB_WRITE && (r->br.flags & MXBD_IO_FUA));
}

/*
 * Does chunk CH go through a pipe (splice.c)? Not with a data digest
 * (made over the bytes) or lies to tell (-F). A pipe takes two system
 * calls more than a copy and, on a store not in memory, a worker: a READ
 * chunk small enough to be tried on the spot (TRY_NOW_MAX) is copied
 * there, as a small one anywhere is. A WRITE's pipe saves the copy into
 * the chunk, which the store copies again: on a store in memory (nothing
 * there waits for a disk, and FUA asks for nothing more). A store on a
 * disk takes aligned writes straight from the chunk (O_DIRECT).
 */
static int chunk_wants_pipe(const struct chunk *ch)
{
	const struct conn *c = ch->c;

	if (!tcp_can_splice(c) || c->s->fault != FAULT_NONE || ch->len < SPLICE_MIN)
		return 0;
	if (ch->r->br.opcode == MXBD_OP_WRITE)
		return store_in_memory(c);
	return store_in_memory(c) || ch->len > TRY_NOW_MAX;
}

static void start_chunk(struct req *r)
{
	struct shard *s = r->c->sh;
	char *buf = pool_get(&s->pool);
	struct chunk *ch = &s->chunks[(size_t)(buf - s->pool.base) / s->pool.chunk];
	uint32_t left = r->br.length - r->next;

	ch->r = r;
	ch->c = r->c;
	ch->buf = buf;
	ch->off = r->next;
	ch->len = left < s->pool.chunk ? left : (uint32_t)s->pool.chunk;
	ch->pending = 0;
	ch->err = 0;
	ch->late = 0;
	ch->late_writes = 0;
	ch->pipe = -1;
	if (r->c->tcp && chunk_wants_pipe(ch)) {
		ch->pipe = spipe_get(s);
		s->splice_chunks += ch->pipe >= 0 && r->br.opcode == MXBD_OP_READ;
	}
	r->next += ch->len;
	r->inflight++;
	if (r->br.opcode == MXBD_OP_WRITE)
		chunk_rdma(ch);
	else
		chunk_job(ch, JOB_READ);
}

/* A segment READ or WRITE of a file moved its data: the reply body. */
static void file_io_finish(struct req *r)
{
	uint64_t count = r->br.length;
	int err;

	if (r->status)
		return;
	if (r->br.opcode == MXBD_OP_READ && r->eof_at < r->br.offset + count)
		count = r->eof_at > r->br.offset ? r->eof_at - r->br.offset : 0;
	err = fsvc_io_reply(&r->fr, r->fd, (uint32_t)count, r->fbody,
			    SRV_TX_SIZE - sizeof(struct knet_hdr), &r->fbody_len);
	if (err)
		r->status = err;
}

/* Decide what R does next after one of its pieces finished. */
static void req_progress(struct req *r)
{
	if (r->c->closing) {
		if (!r->inflight)
			req_finish(r);
		return;
	}
	if (r->status || r->done == r->br.length) {
		if (r->inflight)
			return;
		if (conn_is_file(r->c))
			file_io_finish(r);
		reply(r);
		return;
	}
	if (!r->queued && r->next < r->br.length && r->inflight < SRV_REQ_CHUNKS)
		want_chunk(r);
}

/* CH's buffer, and its pipe if it had one, go back; ERR: the pipe may not be empty. */
static void chunk_release(struct shard *s, struct chunk *ch, int err)
{
	pool_put(&s->pool, ch->buf);
	ch->buf = NULL;
	spipe_put(s, ch->pipe, err);
	ch->pipe = -1;
}

static void chunk_done(struct chunk *ch, int err)
{
	struct req *r = ch->r;
	struct shard *s = r->c->sh;

	sink_release(ch);	/* its READs, if any, are over */
	chunk_release(s, ch, err || ch->err);
	ch->r = NULL;
	r->inflight--;
	r->done += ch->len;
	if (err && !r->status)
		r->status = err;
	req_progress(r);
	schedule(s);
}

/* Hand free chunks to waiting requests, fairly. */
static void schedule(struct shard *s)
{
	while (s->pool.nfree && s->fq.queued) {
		struct req *r = REQ_OF(fq_pop(&s->fq, NULL));

		r->queued = 0;
		start_chunk(r);
		/* More to move: back to the tail of its connection's queue. */
		if (!r->c->closing && !r->status && r->next < r->br.length &&
		    r->inflight < SRV_REQ_CHUNKS)
			want_chunk(r);
	}
}

static void start(struct req *r, char *msg)
{
	struct block_req *br = &r->br;

	switch (br->opcode) {
	case MXBD_OP_INFO:
		/* A volume may have grown (or shrunk) since: clients ask to see it. */
		if (volume_refresh(&r->c->ex->vol, r->c->ex->cfg.path))
			srv_log("volume '%s' is now %llu bytes", r->c->ex->cfg.name,
				(unsigned long long)r->c->ex->vol.size);
		reply(r);
		return;
	case MXBD_OP_IDENT:
		reply(r);
		return;
	case MXBD_OP_FLUSH:
		req_job(r, JOB_FLUSH, NULL);
		return;
	case MXBD_OP_DISCARD:
		req_job(r, JOB_DISCARD, NULL);
		return;
	case MXBD_OP_WRITE_ZEROES:
		req_job(r, JOB_WRITE_ZEROES, NULL);
		return;
	case MXBD_OP_WRITE:
		if (!br->nsegs) {
			r->c->bytes_in += br->length;
			req_job(r, JOB_WRITE, msg + br->inl_off);
			return;
		}
		break;
	case MXBD_OP_READ:
		if (!br->nsegs) {
			r->inl_reply = br->length;
			req_job(r, JOB_READ, msg);
			return;
		}
		break;
	}
	want_chunk(r);
	schedule(r->c->sh);
}

static int run_fsvc_job(struct job *j)
{
	struct req *r = j->owner;

	return -fsvc_execute(j->target, &r->fr, &r->fd, r->fbody,
			     SRV_TX_SIZE - sizeof(struct knet_hdr), &r->fbody_len);
}

static int run_fsvc_open(struct job *j)
{
	struct req *r = j->owner;

	return -fsvc_io_open(j->target, &r->fr, &r->fd);
}

/* An inline READ or WRITE on R's open file: no credentials needed. */
static int run_fsvc_io(struct job *j)
{
	struct req *r = j->owner;

	return -fsvc_io_inline(&r->fr, r->fd, r->fbody, SRV_TX_SIZE - sizeof(struct knet_hdr),
			       &r->fbody_len, 0, NULL);
}

static int run_fsvc_open_io(struct job *j)
{
	int err = run_fsvc_open(j);

	return err ? err : run_fsvc_io(j);
}

/*
 * A file service job, always on a worker: it takes the caller's
 * credentials, and a thread that ever changed its credentials may no
 * longer write to the verbs and rdma_cm devices (the kernel's
 * ib_safe_file_access() wants the opener's credentials), which the
 * progress thread must.
 */
static void file_job(struct req *r, int tag, job_fn fn)
{
	r->inflight++;
	r->job.owner = r;
	r->job.peer = r->c->peer_key;
	r->job.tag = tag;
	r->job.run = fn;
	r->job.target = &r->c->ex->fx;
	workers_submit(&r->c->s->w, &r->job, &r->c->sh->box);
}

/*
 * A file service request done here, on the progress thread, when that
 * needs no waiting and the thread may take the caller's credentials
 * (fsvc_runs_here()): an export in memory, and on an RDMA shard a caller
 * with the server's own credentials (root, not squashed; see file_job()),
 * on a TCP shard anyone. It then needs no thread hop, as data that needs
 * no waiting (dispatch_job()). 0 leaves it to a worker.
 */
static int name_op_now(struct req *r)
{
	struct shard *s = r->c->sh;
	struct job *j = &r->job;

	if (!fsvc_runs_here(&r->c->ex->fx, &r->fr))
		return 0;
	j->owner = r;
	j->tag = JOB_TAG_FSVC;
	j->run = run_fsvc_job;
	j->target = &r->c->ex->fx;
	j->result = run_fsvc_job(j);
	if (j->result == -FSVC_ELSEWHERE)
		return 0;	/* nothing done: a worker does it all */
	r->inflight++;
	s->names_now++;
	dispatch_job(s, j, 1);
	return 1;
}

/* The open-file cache's key for R: its export, file, open flags, credentials. */
static void file_key(const struct req *r, struct fdc_key *k)
{
	const struct fsvc_req *fr = &r->fr;

	fdc_key(k, &r->c->ex->fx, &fr->fh, fsvc_io_flags(fr), fr->uid, fr->gid, fr->ngroups,
		fr->groups);
}

/*
 * An inline READ or WRITE on a cached open file, done now if it needs no
 * waiting (an export in memory, or RWF_NOWAIT); 0 leaves it to a worker.
 */
static int file_io_now(struct req *r)
{
	struct fsvc_export *fx = &r->c->ex->fx;
	int sync = r->fr.op == ORFS_OP_WRITE && (fsvc_io_flags(&r->fr) & O_DSYNC);
	int err;

	if (!fx->in_memory && (sync || fx->no_nowait))
		return 0;
	err = fsvc_io_inline(&r->fr, r->fd, r->fbody, SRV_TX_SIZE - sizeof(struct knet_hdr),
			     &r->fbody_len, !fx->in_memory, &fx->no_nowait);
	if (err == EAGAIN && !fx->in_memory)
		return 0;
	r->status = err;
	r->c->sh->jobs_now++;
	return 1;
}

/*
 * A READ or WRITE. With the file open in the cache (for these
 * credentials), segment data goes straight to the pool's chunks and
 * inline data moves now when that needs no waiting. Otherwise a worker
 * opens the file with the caller's credentials (and moves inline data),
 * and the open file joins the cache when the job is over.
 */
static void file_io_start(struct req *r, char *msg)
{
	struct fsvc_req *fr = &r->fr;
	struct fdc_key k;

	file_key(r, &k);
	r->fde = fdc_get(&r->c->s->fdc, &k, (time_t)(now_us() / 1000000));
	if (r->fde) {
		r->fd = r->fde->fd;
		r->f.status = (uint32_t)fsvc_io_refused(fr, r->fd);
		if (r->f.status) {
			reply(r);
			return;
		}
	}
	if (fr->nsegs) {
		/* Data through the pool, like a volume's, once the file is open. */
		r->br.opcode = fr->op == ORFS_OP_READ ? MXBD_OP_READ : MXBD_OP_WRITE;
		r->br.offset = le64toh(fr->u.io.offset);
		r->br.length = le32toh(fr->u.io.length);
		r->br.nsegs = fr->nsegs;
		r->br.seg_off = fr->seg_off;
		r->eof_at = UINT64_MAX;
		if (r->fde)
			start(r, msg);
		else
			file_job(r, JOB_TAG_FOPEN, run_fsvc_open);
		return;
	}
	if (!r->fde)
		file_job(r, JOB_TAG_FOPEN_IO, run_fsvc_open_io);
	else if (file_io_now(r))
		reply(r);
	else
		file_job(r, JOB_TAG_FIO, run_fsvc_io);
}

/* The cache's key for R's directory, opened O_PATH by root: no credentials. */
static void dir_key(const struct req *r, struct fdc_key *k)
{
	fdc_key(k, &r->c->ex->fx, &r->fr.fh, O_PATH, 0, 0, 0, r->fr.groups);
}

/*
 * A worker opened R's file for its READ or WRITE, or (DIR) the directory
 * of its name operation: keep it for the next request.
 */
static void file_opened(struct req *r, int dir)
{
	struct fdc_key k;

	if (r->fd < 0 || r->fde)
		return;
	if (dir)
		dir_key(r, &k);
	else
		file_key(r, &k);
	r->fde = fdc_add(&r->c->s->fdc, &k, r->fd, (time_t)(now_us() / 1000000));
}

/* A name operation: its directory, if open in the cache, goes to the worker. */
static void dir_get(struct req *r)
{
	struct fdc_key k;

	if (!fsvc_op_dir_fh(r->fr.op))
		return;
	dir_key(r, &k);
	r->fde = fdc_get(&r->c->s->fdc, &k, (time_t)(now_us() / 1000000));
	if (r->fde)
		r->fd = r->fde->fd;
}

/* Operations after which no open file of the export is used again. */
static int file_op_forgets(uint16_t op)
{
	switch (op) {
	case ORFS_OP_SETATTR: case ORFS_OP_SETXATTR: case ORFS_OP_REMOVEXATTR:
	case ORFS_OP_UNLINK: case ORFS_OP_RMDIR: case ORFS_OP_RENAME:
		return 1;
	default:
		return 0;
	}
}

/* A file service request: decode, answer from the replay cache, or run. */
static void file_start(struct req *r, char *msg, uint32_t len)
{
	struct conn *c = r->c;
	struct fsvc_req *fr = &r->fr;
	int err;

	err = fsvc_decode(&c->ex->fx, msg, len, c->inline_max, fr);
	if (err) {
		r->f.status = (uint32_t)err;
		reply(r);
		return;
	}
	r->fbody = malloc(SRV_TX_SIZE);
	if (!r->fbody) {
		r->f.status = ENOMEM;
		reply(r);
		return;
	}
	if (fr->op == ORFS_OP_SESSION && c->client_id != le64toh(fr->u.session.client_id)) {
		/* The client's locks outlive this connection for a lease. */
		if (c->client_id)
			locks_detach(&c->s->locks, c->client_id, (time_t)(now_us() / 1000000));
		c->client_id = le64toh(fr->u.session.client_id);
		c->revoked = 0;
		if (c->client_id) {
			int ret = locks_attach(&c->s->locks, c->client_id, c->peer_key);

			if (ret < 0) {
				/* Another host's id, or this host holds too many. */
				srv_log("%s: SESSION refused: client id %#llx %s", c->peer,
					(unsigned long long)c->client_id,
					ret == -EPERM ? "belongs to another host" :
							"is one too many for this host");
				c->client_id = 0;
				r->f.status = (uint32_t)-ret;
				reply(r);
				return;
			}
			c->revoked = ret;
		}
		if (c->revoked)
			fr->session_flags |= ORFS_SESSION_LOCKS_REVOKED;
	}
	if (fr->op == ORFS_OP_FSYNC && c->s->fault == FAULT_NO_SYNC) {
		/* Answered as done, and nothing done: a power cut loses the data. */
		r->f.status = 0;
		r->fbody_len = 0;
		if (le32toh(fr->u.fhop.flags) & ORFS_FSYNC_VERF) {
			struct orfs_verf_rep v = { htole64(fsvc_verf(&c->s->verf)) };

			memcpy(r->fbody, &v, sizeof(v));
			r->fbody_len = sizeof(v);
		}
		reply(r);
		return;
	}
	if (fr->op == ORFS_OP_SESSION && c->s->locks.hold_max)
		fr->session_flags |= ORFS_SESSION_LOCK_HOLD;
	/* The client's word that it saw it, on whatever connection (locks_apply()). */
	if (fr->op == ORFS_OP_LOCK && (le32toh(fr->u.lock.flags) & ORFS_LOCK_REVOKED_SEEN))
		c->revoked = 0;
	fr->locks = &c->s->locks;
	fr->chg = &c->s->chg;
	fr->verf = &c->s->verf;
	fr->client_id = c->client_id;
	fr->revoked = c->revoked;
	if (c->client_id && fsvc_op_nonidempotent(fr->op)) {
		switch (replay_begin(&c->s->replay, c->client_id, c->peer_key, fr->xid, time(NULL),
				     &r->replay, &r->f.status, r->fbody, &r->fbody_len)) {
		case REPLAY_RUNNING:
			/* A retransmission: the first one's answer, not a second run. */
			r->f.status = EINPROGRESS;
			reply(r);
			return;
		case REPLAY_DONE:
			reply(r);
			return;
		default:
			break;
		}
	}
	if (fr->op == ORFS_OP_READ || fr->op == ORFS_OP_WRITE) {
		file_io_start(r, msg);
		return;
	}
	dir_get(r);
	if (!name_op_now(r))
		file_job(r, JOB_TAG_FSVC, run_fsvc_job);
}

/*
 * KNET_OP_AUTH on C (knet_proto.h): step 1 answers the server's nonce and
 * MAC, step 2 checks the client's MAC. Any failure is answered EACCES and
 * closes the connection once the answer is sent (eng_on_recv() refuses
 * whatever comes after).
 */
static void auth_step(struct req *r, const char *msg)
{
	struct conn *c = r->c;
	static const uint8_t zero[sizeof(((struct knet_auth_req *)0)->reserved)];
	struct knet_auth_req a;
	uint8_t mac[KNET_AUTH_MAC];

	r->f.status = EACCES;
	if (le32toh(((const struct knet_hdr *)msg)->body_len) != sizeof(a) ||
	    ((const struct knet_hdr *)msg)->nsegs || ((const struct knet_hdr *)msg)->inline_len) {
		r->f.status = EINVAL;
		c->auth_step = -1;
		return;
	}
	memcpy(&a, msg + sizeof(struct knet_hdr), sizeof(a));
	if (!c->auth.len || c->authed || c->auth_step < 0 || a.step != c->auth_step + 1 ||
	    memcmp(a.reserved, zero, sizeof(zero)))
		goto fail;
	if (a.step == 1) {
		memcpy(c->auth_nc, a.data, sizeof(c->auth_nc));
		if (auth_nonce(c->auth_ns) ||
		    auth_mac(&c->auth, 1, c->auth_nc, c->auth_ns, c->p.service, c->p.name,
			     r->auth_rep.mac))
			goto fail;
		memcpy(r->auth_rep.nonce, c->auth_ns, sizeof(c->auth_ns));
		c->auth_step = 1;
		r->f.status = 0;
		return;
	}
	if (auth_mac(&c->auth, 0, c->auth_nc, c->auth_ns, c->p.service, c->p.name, mac) ||
	    !auth_mac_equal(mac, a.data))
		goto fail;
	c->auth_step = 2;
	c->authed = 1;
	r->f.status = 0;
	return;
fail:
	c->auth_step = -1;
	srv_log("%s: authentication to %s '%s' failed", c->peer,
		c->p.service == KNET_SVC_FILE ? "export" : "volume", c->p.name);
}

void eng_on_recv(struct conn *c, int slot, uint32_t len)
{
	struct req *r = &c->req[slot];
	char *msg = conn_rx_buf(c, slot);
	enum dispatch_verdict verdict;
	int err;

	memset(r, 0, sizeof(*r));
	r->c = c;
	r->slot = slot;
	r->fd = -1;
	r->active = 1;
	c->active++;
	c->sh->active++;

	verdict = dispatch_frame(msg, len, &r->f, &c->st);
	if (verdict == DISPATCH_DROP) {
		/* Closing finishes R, as it finishes every request not in flight. */
		conn_close(c, "unreadable message, dropping the connection");
		return;
	}
	if (verdict == DISPATCH_AUTH) {
		auth_step(r, msg);
		reply(r);
		return;
	}
	/* Nothing but the authentication before it succeeded. */
	if (!c->authed) {
		conn_close(c, c->auth_step < 0 ? "a request after a failed authentication" :
						   "a request before the authentication");
		return;
	}
	if (verdict == DISPATCH_REPLY) {
		reply(r);
		return;
	}
	if (conn_is_file(c)) {
		file_start(r, msg, len);
		return;
	}
	err = block_decode(&c->ex->vol, msg, len, c->inline_max, &r->br);
	if (err) {
		r->f.status = (uint32_t)err;
		reply(r);
		return;
	}
	start(r, msg);
}

void eng_on_send_done(struct conn *c, int t)
{
	c->tx_busy[t] = 0;
	while (c->tx_wait && !c->closing) {
		struct req *r = c->tx_wait;
		int busy = 1, i;

		for (i = 0; i < c->ntx && busy; i++)
			busy = c->tx_busy[i];
		if (busy)
			break;
		c->tx_wait = r->tx_next;
		if (!c->tx_wait)
			c->tx_wait_tail = &c->tx_wait;
		reply(r);
	}
}

/* Post the chunks that waited for room in C's send queue. */
static void retry_rdma_waiters(struct conn *c)
{
	while (c->rdma_wait && !c->closing) {
		struct chunk *ch = c->rdma_wait;

		if (post_rdma(ch) == -FI_EAGAIN)
			return;
		c->rdma_wait = ch->wait_next;
		if (!c->rdma_wait)
			c->rdma_wait_tail = &c->rdma_wait;
		/* post_rdma() failing otherwise closed nothing yet. */
		if (!ch->pending) {
			conn_close(c, "cannot post RDMA");
			chunk_done(ch, EIO);
			return;
		}
		chunk_posted(ch);
	}
}

void eng_on_rdma_done(struct chunk *ch, int err)
{
	struct req *r = ch->r;
	struct conn *c = ch->c;

	c->sq_free++;
	retry_rdma_waiters(c);
	if (err && !ch->err)
		ch->err = err;
	if (--ch->pending)
		return;
	sink_release(ch);
	if (r && ch->late) {
		if (!ch->err && !c->closing) {
			ch->late_writes++;
			if (!post_rdma(ch))
				return;
			conn_close(c, "cannot post RDMA");
		}
		srv_log("late-write fault: %llu RDMA WRITEs of a READ's data completed, then %s",
			(unsigned long long)ch->late_writes,
			ch->err ? "one failed" : "the connection closed");
	}
	if (!r) {
		/* A read's posted data (see chunk_posted()): only the buffer is left. */
		chunk_release(c->sh, ch, ch->err);
		schedule(c->sh);
		return;
	}
	if (ch->err || c->closing || r->br.opcode == MXBD_OP_READ) {
		chunk_done(ch, ch->err ? ch->err : (c->closing ? ECONNRESET : 0));
		return;
	}
	/* Pulled the client's data: now to the volume or file. */
	if (ch->pipe >= 0 && ch->ops[0].tcp_sink < 0) {
		/* Its pipe filled up: the data is in the buffer, the pipe empty. */
		spipe_put(c->sh, ch->pipe, 0);
		ch->pipe = -1;
	}
	c->sh->sink_chunks += ch->pipe >= 0;
	chunk_job(ch, JOB_WRITE);
}

/* Jobs are over (list J): move their requests on. */
static void jobs_done(struct job *j)
{
	while (j) {
		struct job *next = j->next;

		if (j->tag != JOB_TAG_CHUNK) {
			/* A whole request's job: block, file operation, or file open. */
			struct req *r = j->owner;
			struct conn *c = r->c;

			conn_get(c);
			r->inflight--;
			if (j->result && !r->status)
				r->status = -j->result;
			if (j->tag == JOB_TAG_FOPEN || j->tag == JOB_TAG_FOPEN_IO ||
			    j->tag == JOB_TAG_FSVC)
				file_opened(r, j->tag == JOB_TAG_FSVC);
			if (j->tag == JOB_TAG_FSVC && file_op_forgets(r->fr.op))
				fdc_forget(&c->s->fdc, &c->ex->fx, 1);
			if (j->tag == JOB_TAG_FSVC && r->replay) {
				/* Recorded even if the link died: the retry gets it. */
				replay_done(&c->s->replay, r->replay, (uint32_t)r->status, r->fbody,
					    r->status ? 0 : r->fbody_len);
				r->replay = NULL;
			}
			if (c->closing)
				req_finish(r);
			else if (j->tag == JOB_TAG_FOPEN && !r->status)
				start(r, conn_rx_buf(c, r->slot));
			else
				reply(r);
			conn_put(c);
		} else {
			struct chunk *ch = j->owner;
			struct conn *c = ch->r->c;

			conn_get(c);
			if (j->result < 0 || j->kind == JOB_WRITE) {
				chunk_done(ch, j->result < 0 ? -j->result : 0);
			} else {
				/* Read from the volume or file: push it. */
				if (conn_is_file(c) && (uint32_t)j->result < ch->len &&
				    ch->r->br.offset + ch->off + (uint32_t)j->result < ch->r->eof_at)
					ch->r->eof_at = ch->r->br.offset + ch->off + (uint32_t)j->result;
				chunk_rdma(ch);
			}
			conn_put(c);
		}
		j = next;
	}
}

void eng_run_now(struct shard *s)
{
	while (s->now) {
		struct job *j = s->now;

		s->now = NULL;
		jobs_done(j);
	}
}

void eng_on_jobs(struct shard *s)
{
	jobs_done(box_reap(&s->box));
	eng_run_now(s);
}

void eng_conn_closing(struct conn *c)
{
	int i;

	fq_flow_remove(&c->sh->fq, &c->flow);
	while (c->rdma_wait) {
		struct chunk *ch = c->rdma_wait;

		c->rdma_wait = ch->wait_next;
		chunk_done(ch, ECONNRESET);
	}
	c->rdma_wait_tail = &c->rdma_wait;
	c->tx_wait = NULL;
	c->tx_wait_tail = &c->tx_wait;
	for (i = 0; i < c->ncredits; i++) {
		struct req *r = &c->req[i];

		if (!r->active)
			continue;
		r->queued = 0;
		if (!r->inflight)
			req_finish(r);
	}
}

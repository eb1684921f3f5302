// SPDX-License-Identifier: GPL-2.0-only
/*
 * knet_test: a test-only misc device that lets a userspace program drive
 * knet against a real server. Loaded by the tests, never by the suite.
 * Each open file may connect one endpoint; requests copy the caller's data
 * into kernel memory of the kind asked (a kmalloc buffer, or pages starting
 * at any offset) so that knet's descriptors are exercised as a kernel
 * client would use them. Its data requests are the server's volume
 * service's READ and WRITE, whose wire format MXBD's uapi header holds:
 * only that header, not the MXBD module.
 */
#define pr_fmt(fmt) "knet_test: " fmt

#include <linux/delay.h>
#include <linux/fs.h>
#include <linux/highmem.h>
#include <linux/kthread.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/uio.h>

#include "knet/knet.h"
#include "mxbd/uapi/mxbd_proto.h"
#include "knet_test.h"

#define KNET_TEST_MAX_DATA	SZ_1M
#define KNET_TEST_MAX_BODY	4096

struct knet_test_file {
	struct mutex	lock;		/* connect */
	struct knet_ep	*ep;		/* the endpoint, or the group's first */
	struct knet_mq	*mq;		/* a completion group, or NULL */
};

struct knet_test_data {
	struct knet_mem	mem;
	struct kvec	kv;
	struct bio_vec	*bv;
	void		*buf;
};

static void knet_test_data_free(struct knet_test_data *d)
{
	unsigned int i;

	if (d->bv) {
		for (i = 0; i < d->mem.nr; i++)
			if (d->bv[i].bv_page)
				__free_page(d->bv[i].bv_page);
		kfree(d->bv);
	}
	kfree(d->buf);
}

static int knet_test_data_alloc(struct knet_test_data *d, u32 type, u32 len, u32 off)
{
	unsigned int i;
	u32 left = len;

	memset(d, 0, sizeof(*d));
	d->mem.len = len;
	if (type == KNET_TEST_MEM_KVEC) {
		d->buf = kmalloc(len, GFP_KERNEL | __GFP_NOWARN);
		if (!d->buf)
			return -ENOMEM;
		d->kv.iov_base = d->buf;
		d->kv.iov_len = len;
		d->mem.type = KNET_MEM_KVEC;
		d->mem.nr = 1;
		d->mem.kvec = &d->kv;
		return 0;
	}
	d->mem.type = KNET_MEM_BVEC;
	d->mem.nr = DIV_ROUND_UP(off + len, PAGE_SIZE);
	d->bv = kcalloc(d->mem.nr, sizeof(*d->bv), GFP_KERNEL);
	if (!d->bv)
		return -ENOMEM;
	for (i = 0; i < d->mem.nr; i++) {
		u32 o = i ? 0 : off, n = min_t(u32, left, PAGE_SIZE - o);

		d->bv[i].bv_page = alloc_page(GFP_KERNEL);
		if (!d->bv[i].bv_page)
			return -ENOMEM;
		d->bv[i].bv_offset = o;
		d->bv[i].bv_len = n;
		left -= n;
	}
	d->mem.bvec = d->bv;
	return 0;
}

/* Copy between the user's buffer and the data, either way. */
static int knet_test_data_copy(struct knet_test_data *d, u64 ubuf, bool to_user)
{
	void __user *u = u64_to_user_ptr(ubuf);
	unsigned int i;
	unsigned long left;

	if (d->mem.type == KNET_MEM_KVEC)
		left = to_user ? copy_to_user(u, d->buf, d->mem.len) :
				 copy_from_user(d->buf, u, d->mem.len);
	else
		for (i = 0, left = 0; i < d->mem.nr && !left; i++) {
			void *p = kmap_local_page(d->bv[i].bv_page) + d->bv[i].bv_offset;

			left = to_user ? copy_to_user(u, p, d->bv[i].bv_len) :
					 copy_from_user(p, u, d->bv[i].bv_len);
			kunmap_local(p);
			u += d->bv[i].bv_len;
		}
	return left ? -EFAULT : 0;
}

#define KNET_TEST_CANARY	0x5a

/*
 * Fill the data with the canary (FILL), or count the bytes that are not
 * the canary any more: what a server wrote after the request ended.
 */
static u32 knet_test_canary(struct knet_test_data *d, bool fill)
{
	unsigned int i;
	u32 j, changed = 0;

	for (i = 0; i < (d->mem.type == KNET_MEM_KVEC ? 1 : d->mem.nr); i++) {
		u8 *p = d->mem.type == KNET_MEM_KVEC ? d->buf :
			kmap_local_page(d->bv[i].bv_page) + d->bv[i].bv_offset;
		u32 n = d->mem.type == KNET_MEM_KVEC ? d->mem.len : d->bv[i].bv_len;

		if (fill)
			memset(p, KNET_TEST_CANARY, n);
		else
			for (j = 0; j < n; j++)
				changed += p[j] != KNET_TEST_CANARY;
		if (d->mem.type != KNET_MEM_KVEC)
			kunmap_local(p);
	}
	return changed;
}

/*
 * The caller's own memory, described through an iov_iter as a file system
 * would for direct I/O: one buffer (ubuf) or NR_IOV iovecs, advanced by
 * PAGE_OFFSET bytes. *IOV is the imported vector, to free.
 */
static int knet_test_user_mem(struct knet_test_call *c, struct knet_test_data *d,
			      struct iovec **iov)
{
	int dir = c->dir == KNET_DIR_TO_SERVER ? ITER_SOURCE : ITER_DEST;
	struct iov_iter it;
	struct iovec *fast;
	ssize_t n;
	int ret;

	memset(d, 0, sizeof(*d));
	if (c->nr_iov) {
		struct iovec *big;

		fast = kmalloc_array(UIO_FASTIOV, sizeof(*fast), GFP_KERNEL);
		if (!fast)
			return -ENOMEM;
		big = fast;
		/* Uses FAST (and sets BIG to NULL) when it is large enough. */
		n = import_iovec(dir, u64_to_user_ptr(c->data), c->nr_iov, UIO_FASTIOV, &big, &it);
		if (n < 0) {
			kfree(fast);
			return n;
		}
		if (big) {
			kfree(fast);
			*iov = big;
		} else {
			*iov = fast;
		}
	} else {
		iov_iter_ubuf(&it, dir, u64_to_user_ptr(c->data),
			      (size_t)c->page_offset + c->data_len);
	}
	if (iov_iter_count(&it) < (size_t)c->page_offset + c->data_len)
		return -EINVAL;
	iov_iter_advance(&it, c->page_offset);
	ret = knet_mem_from_iter(&d->mem, &it, c->data_len);
	if (ret)
		return ret;
	if (c->mem_type == KNET_TEST_MEM_USER_NOCACHE)
		d->mem.flags |= KNET_MEM_NOCACHE;
	return 0;
}

static long knet_test_connect(struct knet_test_file *tf, void __user *arg)
{
	struct knet_test_connect c;
	struct knet_ep_params p = {};
	struct sockaddr_in *sin = (struct sockaddr_in *)&p.addr;
	struct knet_limits lim;
	struct knet_ep *ep;
	int reason, ret = 0;

	if (copy_from_user(&c, arg, sizeof(c)))
		return -EFAULT;
	if (strnlen(c.name, sizeof(c.name)) == sizeof(c.name) ||
	    (c.service != KNET_SVC_FILE && c.service != KNET_SVC_BLOCK))
		return -EINVAL;
	mutex_lock(&tf->lock);
	if (tf->ep) {
		ret = -EISCONN;
		goto unlock;
	}
	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = c.addr;
	sin->sin_port = htons(c.port ?: KNET_DEFAULT_PORT);
	p.service = c.service;
	p.name = c.name;
	if (c.transport > KNET_TRANSPORT_AUTO) {
		ret = -EINVAL;
		goto unlock;
	}
	p.transport = c.transport;
	if (c.digests & ~KNET_CMF_DIGESTS) {
		ret = -EINVAL;
		goto unlock;
	}
	p.digests = c.digests;
	if (c.queues > 1) {
		tf->mq = knet_mq_connect(&p, c.queues, &reason);
		ep = IS_ERR(tf->mq) ? ERR_CAST(tf->mq) : tf->mq->q[0];
		if (IS_ERR(tf->mq))
			tf->mq = NULL;
	} else {
		ep = knet_ep_connect(&p, &reason);
	}
	c.reason = reason;
	if (IS_ERR(ep)) {
		ret = PTR_ERR(ep);
	} else {
		tf->ep = ep;
		knet_ep_limits(ep, &lim);
		c.credits = lim.credits;
		c.inline_max = lim.inline_max;
		c.max_io = lim.max_io;
	}
	if (copy_to_user(arg, &c, sizeof(c)) && !ret)
		ret = -EFAULT;
unlock:
	mutex_unlock(&tf->lock);
	return ret;
}

static long knet_test_call(struct knet_test_file *tf, void __user *arg)
{
	struct knet_test_data d = {};
	struct knet_request rq = {};
	struct knet_test_call c;
	struct knet_ep *ep;
	void *body = NULL, *reply = NULL;
	struct iovec *iov = NULL;
	int ret;

	if (copy_from_user(&c, arg, sizeof(c)))
		return -EFAULT;
	if (c.body_len > KNET_TEST_MAX_BODY || c.reply_max > KNET_TEST_MAX_BODY ||
	    c.data_len > KNET_TEST_MAX_DATA || c.dir > KNET_DIR_FROM_SERVER ||
	    c.mem_type > KNET_TEST_MEM_USER_NOCACHE || c.page_offset >= PAGE_SIZE ||
	    (c.data_len && c.dir == KNET_DIR_NONE))
		return -EINVAL;
	mutex_lock(&tf->lock);
	ep = tf->ep;
	mutex_unlock(&tf->lock);
	if (!ep)
		return -ENOTCONN;

	if (c.body_len) {
		body = memdup_user(u64_to_user_ptr(c.body), c.body_len);
		if (IS_ERR(body))
			return PTR_ERR(body);
	}
	reply = kzalloc(c.reply_max ?: 1, GFP_KERNEL);
	if (!reply) {
		ret = -ENOMEM;
		goto out;
	}
	if (c.data_len && c.mem_type >= KNET_TEST_MEM_USER) {
		ret = knet_test_user_mem(&c, &d, &iov);
		if (ret)
			goto out;
		rq.mem = &d.mem;
	} else if (c.data_len) {
		ret = knet_test_data_alloc(&d, c.mem_type, c.data_len, c.page_offset);
		if (!ret && c.dir == KNET_DIR_TO_SERVER)
			ret = knet_test_data_copy(&d, c.data, false);
		if (ret)
			goto out;
		rq.mem = &d.mem;
	}
	rq.opcode = c.opcode;
	rq.body = body;
	rq.body_len = c.body_len;
	rq.dir = c.dir;
	rq.reply = reply;
	rq.reply_max = c.reply_max;
	ret = knet_call(ep, &rq, msecs_to_jiffies(c.timeout_ms ?: 30000));
	if (c.late_check_ms && c.data_len && c.mem_type < KNET_TEST_MEM_USER) {
		/* The request is over: nothing may write its memory now. */
		knet_test_canary(&d, true);
		msleep(min_t(u32, c.late_check_ms, 10000));
		c.late_changed = knet_test_canary(&d, false);
		c.error = ret;
		ret = copy_to_user(arg, &c, sizeof(c)) ? -EFAULT : 0;
		goto out;
	}
	if (ret)
		goto out;
	if (c.data_len && c.mem_type < KNET_TEST_MEM_USER && c.dir == KNET_DIR_FROM_SERVER &&
	    !rq.status) {
		ret = knet_test_data_copy(&d, c.data, true);
		if (ret)
			goto out;
	}
	c.status = rq.status;
	c.reply_len = rq.reply_len;
	c.inline_len = rq.inline_len;
	if (copy_to_user(u64_to_user_ptr(c.reply), reply, rq.reply_len) ||
	    copy_to_user(arg, &c, sizeof(c)))
		ret = -EFAULT;
out:
	knet_test_data_free(&d);
	kfree(iov);
	kfree(reply);
	kfree(body);
	return ret;
}

#define KNET_TEST_MAX_DEPTH	64

struct knet_test_slot {
	struct knet_request	rq;
	struct knet_test_data	d;
	struct mxbd_io		io;
	u64			block;
	bool			in_use;
	int			over;		/* callback mode: set by knet_test_cb() */
};

struct knet_test_run {
	struct knet_test_batch	b;
	struct knet_test_slot	*slots;
	atomic_t		ended;		/* callback mode: requests over */
	wait_queue_head_t	wait;
	bool			reading;
	spinlock_t		lock;		/* group mode: slots and counts */
	u64			done_count;	/* group mode: requests over */
};

static u8 knet_test_byte(u64 block, u32 i)
{
	return (u8)(i * 131 + block * 7 + 1);
}

static void knet_test_fill(struct knet_test_slot *t, u32 bs, bool check, u32 *bad)
{
	u32 i, done = 0;
	unsigned int k;

	for (k = 0; k < t->d.mem.nr; k++) {
		const struct bio_vec *bv = &t->d.bv[k];
		u8 *p = kmap_local_page(bv->bv_page) + bv->bv_offset;

		for (i = 0; i < bv->bv_len && done + i < bs; i++) {
			if (!check)
				p[i] = knet_test_byte(t->block, done + i);
			else if (p[i] != knet_test_byte(t->block, done + i))
				break;
		}
		kunmap_local(p);
		if (check && i < bv->bv_len) {
			(*bad)++;
			return;
		}
		done += bv->bv_len;
	}
}

static void knet_test_cb(struct knet_request *rq)
{
	struct knet_test_slot *t = container_of(rq, struct knet_test_slot, rq);
	struct knet_test_run *run = rq->priv;

	/* Pairs with the acquire in knet_test_reap(): the results before the flag. */
	smp_store_release(&t->over, 1);
	atomic_inc(&run->ended);
	wake_up(&run->wait);
}

/* The next slot whose request is over, by the chosen strategy. */
static struct knet_test_slot *knet_test_reap(struct knet_ep *ep, struct knet_test_run *run)
{
	unsigned int i;

	if (!run->b.mode) {
		struct knet_request *rq = knet_ep_wait_any(ep, msecs_to_jiffies(30000));

		return rq ? container_of(rq, struct knet_test_slot, rq) : NULL;
	}
	if (!wait_event_timeout(run->wait, atomic_read(&run->ended) > 0, msecs_to_jiffies(30000)))
		return NULL;
	atomic_dec(&run->ended);
	/* Any slot whose callback ran: its request no longer belongs to knet. */
	for (i = 0; i < run->b.depth; i++) {
		struct knet_test_slot *t = &run->slots[i];

		/* Pairs with the release in knet_test_cb(). */
		if (t->in_use && smp_load_acquire(&t->over)) {
			t->over = 0;
			return t;
		}
	}
	return NULL;
}

static void knet_test_retire(struct knet_test_run *run, struct knet_test_slot *t)
{
	if (t->rq.error || t->rq.status)
		run->b.errors++;
	else if (run->reading)
		knet_test_fill(t, run->b.bs, true, &run->b.mismatches);
	t->in_use = false;
}

/* Slot T carries block BLOCK of the pass: a write of its pattern, or a read. */
static void knet_test_prepare(struct knet_test_run *run, struct knet_test_slot *t, u64 block)
{
	t->block = block;
	t->io.offset = cpu_to_le64(run->b.offset + block * run->b.bs);
	t->io.length = cpu_to_le32(run->b.bs);
	t->io.flags = 0;
	if (!run->reading)
		knet_test_fill(t, run->b.bs, false, NULL);
	t->rq.opcode = run->reading ? MXBD_OP_READ : MXBD_OP_WRITE;
	t->rq.dir = run->reading ? KNET_DIR_FROM_SERVER : KNET_DIR_TO_SERVER;
	/*
	 * Half the requests may sleep (the ioctl's context): a TCP endpoint
	 * sends those from here, the others from its worker, side by side.
	 */
	t->rq.flags = (block & 1) ? KNET_RQ_MAY_SLEEP : 0;
}

static int knet_test_pass(struct knet_ep *ep, struct knet_test_run *run)
{
	struct knet_test_batch *b = &run->b;
	unsigned int i;
	int ret;
	u64 next = 0, ended = 0;

	while (ended < b->count) {
		struct knet_test_slot *t = NULL;

		for (i = 0; i < b->depth && next < b->count; i++)
			if (!run->slots[i].in_use)
				break;
		if (i < b->depth && next < b->count) {
			t = &run->slots[i];
			knet_test_prepare(run, t, next);
			t->over = 0;
			t->in_use = true;
			ret = knet_submit(ep, &t->rq);
			if (!ret) {
				next++;
				continue;
			}
			t->in_use = false;
			if (ret != -EAGAIN)
				return ret;
			b->busy++;
		}
		/* All in flight, or no credit: wait for one to end. */
		t = knet_test_reap(ep, run);
		if (!t)
			return -ETIMEDOUT;
		knet_test_retire(run, t);
		ended++;
	}
	return 0;
}

/*
 * Completion groups: the requests are spread over the endpoints of MQ, and
 * one thread per endpoint collects its ends with knet_ep_wait_any(),
 * retiring them; this thread only submits.
 */
struct knet_test_server {
	struct knet_test_run	*run;
	struct knet_ep		*ep;
	struct task_struct	*task;
	u32			served;
};

static int knet_test_serve(void *arg)
{
	struct knet_test_server *sv = arg;
	struct knet_test_run *run = sv->run;

	while (!kthread_should_stop()) {
		struct knet_request *rq = knet_ep_wait_any(sv->ep, HZ / 10);
		struct knet_test_slot *t;

		if (!rq)
			continue;
		t = container_of(rq, struct knet_test_slot, rq);
		spin_lock(&run->lock);
		knet_test_retire(run, t);
		run->done_count++;
		spin_unlock(&run->lock);
		sv->served++;
		wake_up(&run->wait);
	}
	return 0;
}

static struct knet_test_slot *knet_test_free_slot(struct knet_test_run *run)
{
	struct knet_test_slot *t = NULL;
	unsigned int i;

	spin_lock(&run->lock);
	for (i = 0; i < run->b.depth; i++) {
		if (!run->slots[i].in_use) {
			t = &run->slots[i];
			t->in_use = true;
			break;
		}
	}
	spin_unlock(&run->lock);
	return t;
}

static int knet_test_pass_groups(struct knet_mq *mq, struct knet_test_run *run)
{
	struct knet_test_batch *b = &run->b;
	struct knet_test_server *sv;
	unsigned int i, started = 0;
	u64 next = 0;
	int ret = 0;

	sv = kcalloc(mq->nr, sizeof(*sv), GFP_KERNEL);
	if (!sv)
		return -ENOMEM;
	run->done_count = 0;
	for (i = 0; i < mq->nr; i++) {
		sv[i].run = run;
		sv[i].ep = mq->q[i];
		sv[i].task = kthread_run(knet_test_serve, &sv[i], "knet_test/%u", i);
		if (IS_ERR(sv[i].task)) {
			ret = PTR_ERR(sv[i].task);
			goto stop;
		}
		started++;
	}
	while (next < b->count) {
		struct knet_test_slot *t = NULL;
		long left;

		left = wait_event_timeout(run->wait, (t = knet_test_free_slot(run)) != NULL,
					  msecs_to_jiffies(30000));
		if (!left) {
			ret = -ETIMEDOUT;
			goto stop;
		}
		knet_test_prepare(run, t, next);
		t->rq.done = NULL;
		/* Steered: request N to group N modulo the group count. */
		ret = knet_submit_wait(mq->q[next % mq->nr], &t->rq, msecs_to_jiffies(30000));
		if (ret) {
			spin_lock(&run->lock);
			t->in_use = false;
			spin_unlock(&run->lock);
			goto stop;
		}
		next++;
	}
	if (!wait_event_timeout(run->wait, READ_ONCE(run->done_count) == b->count,
				msecs_to_jiffies(30000)))
		ret = -ETIMEDOUT;
stop:
	b->min_served = U32_MAX;
	for (i = 0; i < started; i++) {
		kthread_stop(sv[i].task);
		b->min_served = min(b->min_served, sv[i].served);
	}
	kfree(sv);
	return ret;
}

static long knet_test_batch(struct knet_test_file *tf, void __user *arg)
{
	struct knet_test_run *run;
	struct knet_mq *mq;
	struct knet_ep *ep;
	unsigned int i, n;
	u64 t0;
	int ret = 0;

	mutex_lock(&tf->lock);
	ep = tf->ep;
	mq = tf->mq;
	mutex_unlock(&tf->lock);
	if (!ep)
		return -ENOTCONN;
	run = kzalloc(sizeof(*run), GFP_KERNEL);
	if (!run)
		return -ENOMEM;
	if (copy_from_user(&run->b, arg, sizeof(run->b))) {
		ret = -EFAULT;
		goto free_run;
	}
	if (!run->b.depth || run->b.depth > KNET_TEST_MAX_DEPTH || !run->b.bs ||
	    run->b.bs > KNET_TEST_MAX_DATA || run->b.bs % 512 || run->b.mode > 2 ||
	    (run->b.mode == 2 && !mq) ||
	    run->b.page_offset >= PAGE_SIZE || run->b.offset % 512) {
		ret = -EINVAL;
		goto free_run;
	}
	init_waitqueue_head(&run->wait);
	spin_lock_init(&run->lock);
	run->slots = kcalloc(run->b.depth, sizeof(*run->slots), GFP_KERNEL);
	if (!run->slots) {
		ret = -ENOMEM;
		goto free_run;
	}
	for (i = 0; i < run->b.depth && !ret; i++) {
		struct knet_test_slot *t = &run->slots[i];

		ret = knet_test_data_alloc(&t->d, KNET_TEST_MEM_PAGES, run->b.bs,
					   run->b.page_offset);
		t->rq.body = &t->io;
		t->rq.body_len = sizeof(t->io);
		t->rq.mem = &t->d.mem;
		t->rq.done = run->b.mode == 1 ? knet_test_cb : NULL;
		t->rq.priv = run;
	}
	run->b.errors = 0;
	run->b.mismatches = 0;
	run->b.busy = 0;
	t0 = ktime_get_ns();
	if (!ret)
		ret = run->b.mode == 2 ? knet_test_pass_groups(mq, run) : knet_test_pass(ep, run);
	run->b.write_ns = ktime_get_ns() - t0;
	run->reading = true;
	if (!ret)
		ret = run->b.mode == 2 ? knet_test_pass_groups(mq, run) : knet_test_pass(ep, run);
	run->b.elapsed_ns = ktime_get_ns() - t0;
	if (run->b.mode == 2 && ret) {
		/* The serving threads are gone; what they did not collect may still run. */
		pr_err("group pass failed (%d); leaking its memory\n", ret);
		return ret;
	}
	/* Nothing may still be in flight when the memory goes. */
	for (i = 0, n = 0; i < run->b.depth; i++)
		n += run->slots[i].in_use;
	while (n) {
		struct knet_test_slot *t = knet_test_reap(ep, run);

		if (!t) {
			/*
			 * Still reachable by the server, and their callbacks
			 * still to come: better leaked than reused.
			 */
			pr_err("%u requests never ended; leaking their memory\n", n);
			return -EIO;
		}
		t->in_use = false;
		n--;
	}
	if (!ret && copy_to_user(arg, &run->b, sizeof(run->b)))
		ret = -EFAULT;
	for (i = 0; i < run->b.depth; i++)
		knet_test_data_free(&run->slots[i].d);
	kfree(run->slots);
free_run:
	kfree(run);
	return ret;
}

static long knet_test_ioctl(struct file *f, unsigned int cmd, unsigned long arg)
{
	struct knet_test_file *tf = f->private_data;

	switch (cmd) {
	case KNET_TEST_CONNECT:
		return knet_test_connect(tf, (void __user *)arg);
	case KNET_TEST_CALL:
		return knet_test_call(tf, (void __user *)arg);
	case KNET_TEST_BATCH:
		return knet_test_batch(tf, (void __user *)arg);
	default:
		return -ENOTTY;
	}
}

static int knet_test_open(struct inode *inode, struct file *f)
{
	struct knet_test_file *tf = kzalloc(sizeof(*tf), GFP_KERNEL);

	if (!tf)
		return -ENOMEM;
	mutex_init(&tf->lock);
	f->private_data = tf;
	return 0;
}

static int knet_test_release(struct inode *inode, struct file *f)
{
	struct knet_test_file *tf = f->private_data;

	if (tf->mq)
		knet_mq_destroy(tf->mq);
	else if (tf->ep)
		knet_ep_destroy(tf->ep);
	kfree(tf);
	return 0;
}

static const struct file_operations knet_test_fops = {
	.owner		= THIS_MODULE,
	.open		= knet_test_open,
	.release	= knet_test_release,
	.unlocked_ioctl	= knet_test_ioctl,
};

static struct miscdevice knet_test_dev = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= "knet_test",
	.fops	= &knet_test_fops,
	.mode	= 0600,
};

module_misc_device(knet_test_dev);

MODULE_DESCRIPTION("Test device driving knet from userspace (tests only)");
MODULE_LICENSE("GPL");

// SPDX-License-Identifier: GPL-2.0-only
/*
 * MXBD devices: a blk-mq driver whose requests go to knet unchanged. The
 * bio pages of a request become a page descriptor, the server RDMAs
 * straight into or out of them (no copy), and knet's completion callback
 * ends the request. The queue's virtual boundary keeps every request
 * registrable as one FRWR.
 *
 * Failures. Any transport error breaks the connection (knet fails every
 * request of an endpoint together). Its requests are requeued, not ended,
 * and knet's connection group (struct knet_group) recovers: it has MXBD
 * quiesce the queue (down), connects again with knet's backoff, has MXBD
 * check the volume's identity and ask INFO again (setup: the volume may
 * have grown), and has it let the held requests go (up), in the order
 * blk-mq keeps. A server away past the loss time-out fails them, and
 * everything after. A request the server answered with a lie (-EPROTO)
 * ends with EIO: it is not sent again to the server that lied about it.
 */
#define pr_fmt(fmt) "mxbd: " fmt

#include <linux/blkdev.h>
#include <linux/sizes.h>
#include <linux/slab.h>

#include "mxbd.h"

/* A request is sent again at most this many times after connection losses. */
#define MXBD_MAX_RETRIES	10
#define MXBD_MAX_SEGS		128
#define MXBD_MAX_PHYS_BLOCK	SZ_1M

static int mxbd_major;
static unsigned long mxbd_rescan_every;	/* jiffies, 0 for never */
static struct workqueue_struct *mxbd_wq;

/* Per request: what knet needs, next to the block layer's request. */
struct mxbd_cmd {
	struct knet_request	rq;
	struct mxbd_io		io;
	struct knet_mem		mem;
	unsigned int		retries;
	struct bio_vec		bv[MXBD_MAX_SEGS];
};

static const char *const mxbd_state_names[] = {
	[KNET_GROUP_NEW]		= "attaching",
	[KNET_GROUP_LIVE]		= "live",
	[KNET_GROUP_RECONNECTING]	= "reconnecting",
	[KNET_GROUP_FAILED]		= "failed",
	[KNET_GROUP_CLOSING]		= "detaching",
};

static const char *mxbd_name(struct mxbd_dev *d)
{
	return d->disk->disk_name;
}

static blk_status_t mxbd_errno_to_blk(u32 status)
{
	switch (status) {
	case 0:
		return BLK_STS_OK;
	case ENOSPC:
		return BLK_STS_NOSPC;
	case EOPNOTSUPP:
		return BLK_STS_NOTSUPP;
	case EROFS:
	case EPERM:
		return BLK_STS_PROTECTION;
	default:
		return BLK_STS_IOERR;
	}
}

/* Errors of the connection, after which the server may not have seen it. */
/*
 * knet_group_hold()'s: the connection broke under request ARG, which the
 * group may hold: requeue it for the next connection, unless it was sent
 * too often. True when held.
 */
static bool mxbd_hold(void *arg)
{
	struct request *req = arg;
	struct mxbd_cmd *cmd = blk_mq_rq_to_pdu(req);
	struct mxbd_dev *d = req->q->queuedata;

	if (cmd->retries >= MXBD_MAX_RETRIES)
		return false;
	cmd->retries++;
	/* Sent again when the recovery kicks the requeue list. */
	blk_mq_requeue_request(req, false);
	atomic64_inc(&d->held);
	return true;
}

/* knet says the request is over, its pages out of the server's reach. */
static void mxbd_done(struct knet_request *krq)
{
	struct mxbd_cmd *cmd = container_of(krq, struct mxbd_cmd, rq);
	struct request *req = blk_mq_rq_from_pdu(cmd);
	struct mxbd_dev *d = req->q->queuedata;
	blk_status_t sts;

	if (krq->error) {
		if (knet_group_hold(&d->g, krq->error, mxbd_hold, req))
			return;
		pr_err_ratelimited("%s: request at sector %llu failed: %d\n", mxbd_name(d),
				   (unsigned long long)blk_rq_pos(req), krq->error);
		atomic64_inc(&d->failed);
		sts = BLK_STS_IOERR;
	} else {
		sts = mxbd_errno_to_blk(krq->status);
	}
	cmd->retries = 0;
	blk_mq_end_request(req, sts);
}

/* Describe REQ to knet; false for an operation MXBD does not carry. */
static bool mxbd_build(struct mxbd_cmd *cmd, struct request *req)
{
	struct req_iterator iter;
	struct bio_vec bv;
	unsigned int n = 0;
	bool data = false;

	memset(&cmd->rq, 0, sizeof(cmd->rq));
	cmd->io.offset = cpu_to_le64(blk_rq_pos(req) << SECTOR_SHIFT);
	cmd->io.length = cpu_to_le32(blk_rq_bytes(req));
	cmd->io.flags = 0;
	cmd->rq.body = &cmd->io;
	cmd->rq.body_len = sizeof(cmd->io);
	cmd->rq.done = mxbd_done;
	cmd->rq.flags = KNET_RQ_MAY_SLEEP;
	switch (req_op(req)) {
	case REQ_OP_READ:
		cmd->rq.opcode = MXBD_OP_READ;
		cmd->rq.dir = KNET_DIR_FROM_SERVER;
		data = true;
		break;
	case REQ_OP_WRITE:
		cmd->rq.opcode = MXBD_OP_WRITE;
		cmd->rq.dir = KNET_DIR_TO_SERVER;
		if (req->cmd_flags & REQ_FUA)
			cmd->io.flags = cpu_to_le32(MXBD_IO_FUA);
		data = true;
		break;
	case REQ_OP_FLUSH:
		cmd->rq.opcode = MXBD_OP_FLUSH;
		cmd->rq.body_len = 0;
		break;
	case REQ_OP_DISCARD:
		cmd->rq.opcode = MXBD_OP_DISCARD;
		break;
	case REQ_OP_WRITE_ZEROES:
		cmd->rq.opcode = MXBD_OP_WRITE_ZEROES;
		break;
	default:
		return false;
	}
	if (!data)
		return true;
	rq_for_each_bvec(bv, req, iter) {
		if (n == MXBD_MAX_SEGS)
			return false;	/* the queue limits forbid it */
		cmd->bv[n++] = bv;
	}
	cmd->mem.type = KNET_MEM_BVEC;
	cmd->mem.flags = 0;
	cmd->mem.skip = 0;
	cmd->mem.nr = n;
	cmd->mem.len = blk_rq_bytes(req);
	cmd->mem.bvec = cmd->bv;
	cmd->rq.mem = &cmd->mem;
	return true;
}

static blk_status_t mxbd_queue_rq(struct blk_mq_hw_ctx *hctx, const struct blk_mq_queue_data *bd)
{
	struct request *req = bd->rq;
	struct mxbd_dev *d = req->q->queuedata;
	struct mxbd_cmd *cmd = blk_mq_rq_to_pdu(req);
	struct knet_mq *mq;
	int ret;

	switch (knet_group_state(&d->g)) {
	case KNET_GROUP_LIVE:
		break;
	case KNET_GROUP_RECONNECTING:
		/* The recovery is about to quiesce the queue: it runs again after. */
		return BLK_STS_RESOURCE;
	default:
		cmd->retries = 0;
		return BLK_STS_IOERR;
	}
	if (!mxbd_build(cmd, req)) {
		cmd->retries = 0;
		return BLK_STS_NOTSUPP;
	}
	blk_mq_start_request(req);
	/*
	 * Each hardware queue has its own connection, completion queue and
	 * credits; a request takes another queue's connection when that one
	 * has fewer requests in flight, so that one CPU's deep stream is
	 * served by all of them. The recovery replaces them only with the
	 * queue quiesced, after every queue_rq() in progress has returned.
	 */
	mq = knet_group_mq(&d->g);
	ret = mq ? knet_mq_submit(mq, hctx->queue_num, &cmd->rq) : -ENOTCONN;
	switch (ret) {
	case 0:
		return BLK_STS_OK;
	case -EAGAIN:
		return BLK_STS_RESOURCE;	/* no credit: rerun when one comes back */
	case -ENOTCONN:
		knet_group_lost(&d->g);
		return BLK_STS_RESOURCE;
	default:
		cmd->retries = 0;
		return BLK_STS_IOERR;
	}
}

static int mxbd_init_request(struct blk_mq_tag_set *set, struct request *req,
			     unsigned int hctx_idx, unsigned int numa_node)
{
	struct mxbd_cmd *cmd = blk_mq_rq_to_pdu(req);

	cmd->retries = 0;
	return 0;
}

static const struct blk_mq_ops mxbd_mq_ops = {
	.queue_rq	= mxbd_queue_rq,
	.init_request	= mxbd_init_request,
};

static const struct block_device_operations mxbd_fops = {
	.owner		= THIS_MODULE,
};

/* What is wrong with an INFO reply of LEN bytes, or NULL if nothing is. */
static const char *mxbd_info_fault(const struct mxbd_info *info, u32 len)
{
	u32 lbs = le32_to_cpu(info->logical_block);
	u32 pbs = le32_to_cpu(info->physical_block);

	if (len != sizeof(*info))
		return "wrong length";
	if (!is_power_of_2(lbs) || lbs < SECTOR_SIZE || lbs > PAGE_SIZE)
		return "logical block size not a power of two from 512 to the page size";
	/* 0, or below the logical block, is taken as the logical block. */
	if (pbs > lbs && (!is_power_of_2(pbs) || pbs > MXBD_MAX_PHYS_BLOCK))
		return "physical block size not a power of two up to 1 MiB";
	if (le64_to_cpu(info->size) % lbs)
		return "size not a whole number of blocks";
	if (le32_to_cpu(info->max_io) < PAGE_SIZE)
		return "largest I/O below a page";
	return NULL;
}

/* Ask the server on EP for the volume's geometry; a bad answer is -EPROTO. */
static int mxbd_get_info(const struct mxbd_dev *d, struct knet_ep *ep, struct mxbd_info *info)
{
	struct knet_request rq = {
		.opcode = MXBD_OP_INFO,
		.reply = info,
		.reply_max = sizeof(*info),
	};
	const char *fault;
	int ret = knet_call(ep, &rq, 10 * HZ);

	if (ret)
		return ret;
	if (rq.status)
		return -(int)rq.status;
	fault = mxbd_info_fault(info, rq.reply_len);
	if (fault) {
		pr_warn_ratelimited("volume '%s' of %pISc: INFO refused: %s\n", d->opts.volume,
				    &d->opts.addr, fault);
		return -EPROTO;
	}
	return 0;
}

/*
 * Ask the server on EP for the volume's identity into ID: null from a
 * server that has no IDENT; a bad answer is -EPROTO.
 */
static int mxbd_get_ident(const struct mxbd_dev *d, struct knet_ep *ep, uuid_t *id)
{
	struct mxbd_ident ident;
	struct knet_request rq = {
		.opcode = MXBD_OP_IDENT,
		.reply = &ident,
		.reply_max = sizeof(ident),
	};
	int ret = knet_call(ep, &rq, 10 * HZ);

	if (ret)
		return ret;
	if (rq.status == EOPNOTSUPP) {
		uuid_copy(id, &uuid_null);
		return 0;
	}
	if (rq.status)
		return -(int)rq.status;
	if (rq.reply_len != sizeof(ident)) {
		pr_warn_ratelimited("volume '%s' of %pISc: IDENT refused: wrong length\n",
				    d->opts.volume, &d->opts.addr);
		return -EPROTO;
	}
	import_uuid(id, ident.uuid);
	return 0;
}

/*
 * Under d->g.lock, connecting again: is the volume on EP the one attached?
 * A server that lost its state (or now serves another file under the
 * name) must not get the writes meant for the old one: -EPROTO. Where
 * either side has no identity (a server without IDENT, before or now),
 * there is nothing to compare.
 */
static int mxbd_check_ident(struct mxbd_dev *d, struct knet_ep *ep)
{
	uuid_t id;
	int ret = mxbd_get_ident(d, ep, &id);

	if (ret)
		return ret;
	if (!uuid_is_null(&id) && !uuid_is_null(&d->uuid) && !uuid_equal(&id, &d->uuid)) {
		pr_err("%s: the volume's identity changed from %pUb to %pUb: not the volume attached\n",
		       mxbd_name(d), &d->uuid, &id);
		return -EPROTO;
	}
	return 0;
}

static bool mxbd_info_ro(const struct mxbd_dev *d, const struct mxbd_info *info)
{
	return d->opts.read_only || (le32_to_cpu(info->flags) & MXBD_INFO_READ_ONLY);
}

/*
 * Under d->g.lock: a new INFO of a device already attached. Its size may
 * have changed (the block layer and user space are told); a volume whose
 * block size changed is not the one attached.
 */
static int mxbd_apply_info(struct mxbd_dev *d, const struct mxbd_info *info)
{
	u64 size = le64_to_cpu(info->size);

	if (info->logical_block != d->info.logical_block) {
		pr_err("%s: the volume's block size changed from %u to %u\n", mxbd_name(d),
		       le32_to_cpu(d->info.logical_block), le32_to_cpu(info->logical_block));
		return -EPROTO;
	}
	if (size != le64_to_cpu(d->info.size)) {
		pr_info("%s: the volume is now %llu bytes (was %llu)\n", mxbd_name(d), size,
			le64_to_cpu(d->info.size));
		set_capacity_and_notify(d->disk, size >> SECTOR_SHIFT);
	}
	if (mxbd_info_ro(d, info) != mxbd_info_ro(d, &d->info))
		set_disk_ro(d->disk, mxbd_info_ro(d, info));
	d->info = *info;
	return 0;
}

/* knet_group_ops.setup: connected again; the same volume, its INFO now. */
static int mxbd_setup(struct knet_group *g, struct knet_mq *mq)
{
	struct mxbd_dev *d = g->priv;
	struct mxbd_info info;
	int ret;

	ret = mxbd_check_ident(d, mq->q[0]);
	if (!ret)
		ret = mxbd_get_info(d, mq->q[0], &info);
	if (!ret)
		ret = mxbd_apply_info(d, &info);
	if (!ret)
		WRITE_ONCE(d->transport, knet_ep_transport(mq->q[0]));
	return ret;
}

/* knet_group_ops.down: the connections are lost; nothing goes meanwhile. */
static void mxbd_down(struct knet_group *g)
{
	struct mxbd_dev *d = g->priv;

	if (!d->quiesced) {
		blk_mq_quiesce_queue(d->disk->queue);
		d->quiesced = true;
	}
}

/* knet_group_ops.up: the queue runs again; held requests go, or fail. */
static void mxbd_up(struct knet_group *g)
{
	struct mxbd_dev *d = g->priv;

	if (d->quiesced) {
		blk_mq_unquiesce_queue(d->disk->queue);
		d->quiesced = false;
	}
	blk_mq_kick_requeue_list(d->disk->queue);
}

static const struct knet_group_ops mxbd_group_ops = {
	.setup	= mxbd_setup,
	.down	= mxbd_down,
	.up	= mxbd_up,
};

/* Under d->g.lock: ask the server the volume's size (it may have grown). */
static int mxbd_rescan(struct mxbd_dev *d)
{
	struct mxbd_info info;
	int ret;

	if (knet_group_state(&d->g) != KNET_GROUP_LIVE || !d->g.mq)
		return -ENOTCONN;
	ret = mxbd_get_info(d, d->g.mq->q[0], &info);
	if (ret)
		return ret;
	return mxbd_apply_info(d, &info);
}

static void mxbd_rescan_work(struct work_struct *w)
{
	struct mxbd_dev *d = container_of(to_delayed_work(w), struct mxbd_dev, rescan_work);

	mutex_lock(&d->g.lock);
	mxbd_rescan(d);
	mutex_unlock(&d->g.lock);
	if (knet_group_state(&d->g) != KNET_GROUP_CLOSING)
		queue_delayed_work(mxbd_wq, &d->rescan_work, mxbd_rescan_every);
}

static struct mxbd_dev *mxbd_from_dev(struct device *dev)
{
	return dev_to_disk(dev)->private_data;
}

static ssize_t server_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct mxbd_dev *d = mxbd_from_dev(dev);

	return sysfs_emit(buf, "%pISpc\n", &d->opts.addr);
}
static DEVICE_ATTR_RO(server);

static ssize_t srcaddr_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	const struct sockaddr_storage *src = &mxbd_from_dev(dev)->opts.srcaddr;

	/* None: the routing table's choice, shown as the IPv4 "any". */
	return src->ss_family ? sysfs_emit(buf, "%pISc\n", src) : sysfs_emit(buf, "0.0.0.0\n");
}
static DEVICE_ATTR_RO(srcaddr);

static ssize_t transport_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%s\n", READ_ONCE(mxbd_from_dev(dev)->transport));
}
static DEVICE_ATTR_RO(transport);

/* The digests its connections carry ("none" over RDMA, where they are not used). */
static ssize_t digest_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct mxbd_dev *d = mxbd_from_dev(dev);

	return sysfs_emit(buf, "%s\n", strcmp(READ_ONCE(d->transport), "tcp") ? "none" :
			  knet_digest_str(d->opts.digests));
}
static DEVICE_ATTR_RO(digest);

static ssize_t volume_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%s\n", mxbd_from_dev(dev)->opts.volume);
}
static DEVICE_ATTR_RO(volume);

static ssize_t uuid_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	const uuid_t *id = &mxbd_from_dev(dev)->uuid;

	/* Empty when the server gives none: nothing to match paths by. */
	return uuid_is_null(id) ? sysfs_emit(buf, "\n") : sysfs_emit(buf, "%pUb\n", id);
}
static DEVICE_ATTR_RO(uuid);

static ssize_t state_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%s\n", mxbd_state_names[knet_group_state(&mxbd_from_dev(dev)->g)]);
}
static DEVICE_ATTR_RO(state);

static ssize_t queues_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", mxbd_from_dev(dev)->opts.nr_queues);
}
static DEVICE_ATTR_RO(queues);

static ssize_t io_timeout_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", mxbd_from_dev(dev)->opts.io_timeout);
}
static DEVICE_ATTR_RO(io_timeout);

static ssize_t loss_timeout_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%d\n", mxbd_from_dev(dev)->opts.loss_timeout);
}
static DEVICE_ATTR_RO(loss_timeout);

static ssize_t stats_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct mxbd_dev *d = mxbd_from_dev(dev);

	return sysfs_emit(buf, "reconnects %d\nheld %lld\nfailed %lld\n",
			  atomic_read(&d->g.reconnects), atomic64_read(&d->held),
			  atomic64_read(&d->failed));
}
static DEVICE_ATTR_RO(stats);

static ssize_t rescan_store(struct device *dev, struct device_attribute *attr,
			    const char *buf, size_t count)
{
	struct mxbd_dev *d = mxbd_from_dev(dev);
	int ret;

	if (mutex_lock_killable(&d->g.lock))
		return -EINTR;
	ret = mxbd_rescan(d);
	mutex_unlock(&d->g.lock);
	return ret ?: count;
}
static DEVICE_ATTR_WO(rescan);

static struct attribute *mxbd_attrs[] = {
	&dev_attr_server.attr,
	&dev_attr_srcaddr.attr,
	&dev_attr_transport.attr,
	&dev_attr_digest.attr,
	&dev_attr_volume.attr,
	&dev_attr_uuid.attr,
	&dev_attr_state.attr,
	&dev_attr_queues.attr,
	&dev_attr_io_timeout.attr,
	&dev_attr_loss_timeout.attr,
	&dev_attr_stats.attr,
	&dev_attr_rescan.attr,
	NULL,
};

static const struct attribute_group mxbd_attr_group = {
	.name	= "mxbd",
	.attrs	= mxbd_attrs,
};

static const struct attribute_group *mxbd_attr_groups[] = {
	&mxbd_attr_group,
	NULL,
};

/*
 * The largest request: the server's (both what the connection and what the
 * volume allow), lowered by the attach's max_io; whole pages, as every
 * request is registered as one FRWR of whole pages.
 */
static u32 mxbd_max_io(const struct mxbd_dev *d, const struct knet_limits *kl)
{
	u32 max_io = min(kl->max_io, le32_to_cpu(d->info.max_io));

	if (d->opts.max_io)
		max_io = min(max_io, d->opts.max_io);
	return max_t(u32, round_down(max_io, PAGE_SIZE), PAGE_SIZE);
}

static struct gendisk *mxbd_alloc_disk(struct mxbd_dev *d, const struct knet_limits *kl)
{
	u32 lbs = le32_to_cpu(d->info.logical_block);
	u32 pbs = max(lbs, le32_to_cpu(d->info.physical_block));
	u32 max_io = mxbd_max_io(d, kl);
	u32 flags = le32_to_cpu(d->info.flags);
	/* The most a 32-bit length can say, in whole logical blocks. */
	unsigned int most = round_down(UINT_MAX >> SECTOR_SHIFT, lbs >> SECTOR_SHIFT);
	unsigned int trim = (flags & MXBD_INFO_DISCARD) ? most : 0;
	unsigned int zeroes = (flags & MXBD_INFO_WRITE_ZEROES) ? most : 0;
#ifdef MXBD_QUEUE_LIMITS_AT_ALLOC
	struct queue_limits lim = {
		.logical_block_size	= lbs,
		.physical_block_size	= pbs,
		.max_hw_sectors		= max_io >> SECTOR_SHIFT,
		.max_segments		= MXBD_MAX_SEGS,
		.virt_boundary_mask	= PAGE_SIZE - 1,
		.max_hw_discard_sectors	= trim,
		.discard_granularity	= pbs,
		.max_write_zeroes_sectors = zeroes,
		.features		= BLK_FEAT_WRITE_CACHE | BLK_FEAT_FUA,
	};

	return blk_mq_alloc_disk(&d->tag_set, &lim, d);
#else
	struct gendisk *disk = blk_mq_alloc_disk(&d->tag_set, d);
	struct request_queue *q;

	if (IS_ERR(disk))
		return disk;
	q = disk->queue;
	blk_queue_logical_block_size(q, lbs);
	blk_queue_physical_block_size(q, pbs);
	blk_queue_max_hw_sectors(q, max_io >> SECTOR_SHIFT);
	blk_queue_max_segments(q, MXBD_MAX_SEGS);
	blk_queue_virt_boundary(q, PAGE_SIZE - 1);
	blk_queue_max_discard_sectors(q, trim);
	/* 6.1 leaves it 0 and warns on the first discard if the driver does too. */
	q->limits.discard_granularity = pbs;
	blk_queue_max_write_zeroes_sectors(q, zeroes);
	blk_queue_write_cache(q, true, true);
	return disk;
#endif
}

static void mxbd_report_connect_error(const struct mxbd_opts *o, int ret, int reason)
{
	if (ret == -ECONNREFUSED && reason)
		pr_err("cannot attach volume '%s' of %pISc: refused: %s\n", o->volume,
		       &o->addr, knet_reject_str(reason));
	else
		pr_err("cannot attach volume '%s' of %pISpc: %pe%s%s\n", o->volume, &o->addr,
		       ERR_PTR(ret), *knet_connect_hint(ret, o->transport) ? ": " : "",
		       knet_connect_hint(ret, o->transport));
}

/**
 * mxbd_dev_create() - attach a volume as /dev/mxbdN
 * @o: what and how; copied
 * @index: N, free
 * @out: the device
 *
 * Context: process context, may sleep (connects, asks the volume's
 * geometry, adds the disk).
 * Return: 0, or a negative errno (the reason is logged).
 */
int mxbd_dev_create(const struct mxbd_opts *o, int index, struct mxbd_dev **out)
{
	struct knet_limits kl;
	struct knet_mq *mq;
	struct mxbd_dev *d;
	int reason, ret;

	d = kzalloc(sizeof(*d), GFP_KERNEL);
	if (!d)
		return -ENOMEM;
	d->opts = *o;
	d->index = index;
	INIT_DELAYED_WORK(&d->rescan_work, mxbd_rescan_work);
	atomic64_set(&d->held, 0);
	atomic64_set(&d->failed, 0);

	d->g.params = (struct knet_ep_params){
		.addr = o->addr,
		.transport = o->transport,
		.digests = o->digests,
		.src = o->srcaddr,
		.service = KNET_SVC_BLOCK,
		.name = d->opts.volume,
		.request_timeout_ms = o->io_timeout * 1000,
		/* An idle connection is checked too, so a lost server shows. */
		.keepalive_ms = min(o->io_timeout * 500, 10000U),
		.secret = d->opts.secret.len ? &d->opts.secret : NULL,
	};
	d->g.nr = o->nr_queues;
	d->g.loss_timeout = o->loss_timeout;
	d->g.ops = &mxbd_group_ops;
	d->g.priv = d;
	/* The group's messages read as the device's own. */
	snprintf(d->g.name, sizeof(d->g.name), KBUILD_MODNAME ": mxbd%d", index);
	ret = knet_group_open(&d->g, &reason);
	if (ret) {
		mxbd_report_connect_error(o, ret, reason);
		goto free_dev;
	}
	mq = knet_group_mq(&d->g);
	d->transport = knet_ep_transport(mq->q[0]);
	ret = mxbd_get_info(d, mq->q[0], &d->info);
	if (ret) {
		pr_err("volume '%s': the server's INFO failed: %pe\n", o->volume, ERR_PTR(ret));
		goto close_group;
	}
	ret = mxbd_get_ident(d, mq->q[0], &d->uuid);
	if (ret) {
		pr_err("volume '%s': the server's IDENT failed: %pe\n", o->volume, ERR_PTR(ret));
		goto close_group;
	}
	knet_ep_limits(mq->q[0], &kl);

	d->tag_set.ops = &mxbd_mq_ops;
	d->tag_set.nr_hw_queues = mq->nr;
	/* One tag a credit: the server's grant, lowered by the attach's depth. */
	d->tag_set.queue_depth = d->opts.queue_depth ? min(kl.credits, d->opts.queue_depth) :
			       kl.credits;
	d->tag_set.numa_node = NUMA_NO_NODE;
	d->tag_set.cmd_size = sizeof(struct mxbd_cmd);
	/* queue_rq() may sleep: knet's TCP transport then sends from it. */
	d->tag_set.flags = BLK_MQ_F_BLOCKING;
	d->tag_set.driver_data = d;
	ret = blk_mq_alloc_tag_set(&d->tag_set);
	if (ret)
		goto close_group;

	d->disk = mxbd_alloc_disk(d, &kl);
	if (IS_ERR(d->disk)) {
		ret = PTR_ERR(d->disk);
		goto free_tags;
	}
	d->disk->major = mxbd_major;
	d->disk->first_minor = index * MXBD_MINORS;
	d->disk->minors = MXBD_MINORS;
	d->disk->fops = &mxbd_fops;
	d->disk->private_data = d;
	snprintf(d->disk->disk_name, sizeof(d->disk->disk_name), "mxbd%d", index);
	set_capacity(d->disk, le64_to_cpu(d->info.size) >> SECTOR_SHIFT);
	set_disk_ro(d->disk, mxbd_info_ro(d, &d->info));
	/* The disk is there for the recovery to quiesce: failures count now. */
	knet_group_start(&d->g);
	ret = device_add_disk(NULL, d->disk, mxbd_attr_groups);
	if (ret)
		goto stop_group;
	if (mxbd_rescan_every)
		queue_delayed_work(mxbd_wq, &d->rescan_work, mxbd_rescan_every);
	pr_info("%s: volume '%s' of %pISc, %llu bytes, %u-byte blocks, %u queues of depth %u, largest I/O %u KiB%s\n",
		d->disk->disk_name, o->volume, &o->addr, le64_to_cpu(d->info.size),
		le32_to_cpu(d->info.logical_block), mq->nr, d->tag_set.queue_depth,
		mxbd_max_io(d, &kl) / SZ_1K, get_disk_ro(d->disk) ? ", read-only" : "");
	*out = d;
	return 0;

stop_group:
	knet_group_stop(&d->g, true);
	put_disk(d->disk);
free_tags:
	blk_mq_free_tag_set(&d->tag_set);
close_group:
	knet_group_close(&d->g);
free_dev:
	kfree_sensitive(d);
	return ret;
}

/**
 * mxbd_dev_busy() - is the device open (mounted, in use)?
 * @d: the device
 *
 * Return: true when something holds it open.
 */
bool mxbd_dev_busy(struct mxbd_dev *d)
{
	return disk_openers(d->disk) > 0;
}

/**
 * mxbd_dev_remove() - detach a device and free it
 * @d: the device, no longer findable by its owner's registry
 * @force: break the connection first, so that requests in flight fail
 *	at once instead of being answered
 *
 * Requests held for a reconnect fail; requests in flight are answered
 * (or fail, with @force or a lost server); nothing waits for a server
 * longer than the I/O time-out.
 *
 * Context: process context, may sleep.
 */
void mxbd_dev_remove(struct mxbd_dev *d, bool force)
{
	/* Nothing is held or sent again from now on; what was held fails. */
	knet_group_stop(&d->g, force);
	cancel_delayed_work_sync(&d->rescan_work);
	/* Every request ends before del_gendisk() returns. */
	del_gendisk(d->disk);
	knet_group_close(&d->g);
	put_disk(d->disk);
	blk_mq_free_tag_set(&d->tag_set);
	pr_info("mxbd%d: detached\n", d->index);
	kfree_sensitive(d);
}

/**
 * mxbd_dev_init() - set up what every device shares
 * @major: the block major of /dev/mxbdN
 * @rescan_interval: seconds between asking servers for volume sizes, 0 never
 *
 * Return: 0 or -ENOMEM.
 */
int mxbd_dev_init(int major, unsigned int rescan_interval)
{
	mxbd_major = major;
	mxbd_rescan_every = rescan_interval * HZ;
	mxbd_wq = alloc_workqueue("mxbd", WQ_MEM_RECLAIM, 0);
	return mxbd_wq ? 0 : -ENOMEM;
}

/**
 * mxbd_dev_exit() - undo mxbd_dev_init(), every device removed
 */
void mxbd_dev_exit(void)
{
	destroy_workqueue(mxbd_wq);
}

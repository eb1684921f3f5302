// SPDX-License-Identifier: GPL-2.0-only
/*
 * MXBD: network block device over RDMA.
 *
 * A blk-mq driver whose requests go to knet unchanged: the bio pages of a
 * request become a page descriptor, the server RDMAs straight into or out
 * of them (no copy), and knet's completion callback ends the request. The
 * queue's virtual boundary keeps every request registrable as one FRWR.
 *
 * This version attaches one volume at load time:
 *	modprobe mxbd server=192.0.2.10 volume=vol0 [port=20077]
 */
#define pr_fmt(fmt) "mxbd: " fmt

#include <linux/blk-mq.h>
#include <linux/blkdev.h>
#include <linux/debugfs.h>
#include <linux/inet.h>
#include <linux/module.h>

#include "knet.h"
#include "uapi/mxbd_proto.h"

#define MXBD_MAX_SEGS	128
#define MXBD_MINORS	16
#define MXBD_MAX_QUEUES	16

static char *server;
module_param(server, charp, 0444);
MODULE_PARM_DESC(server, "IPv4 address of the server to attach a volume from at load");
static char *volume;
module_param(volume, charp, 0444);
MODULE_PARM_DESC(volume, "Name of the volume to attach at load");
static ushort port = KNET_DEFAULT_PORT;
module_param(port, ushort, 0444);
MODULE_PARM_DESC(port, "Server port (default 20077)");
static unsigned int nr_queues;
module_param(nr_queues, uint, 0444);
MODULE_PARM_DESC(nr_queues, "Hardware queues, one connection each (default: one per online CPU, at most 16)");
static unsigned int io_timeout = 30;
module_param(io_timeout, uint, 0444);
MODULE_PARM_DESC(io_timeout, "Seconds a request may wait for the server before the connection is dropped (default 30)");

static u32 mxbd_major;
static struct dentry *mxbd_debugfs;

static struct knet_ulp mxbd_ulp = {
	.name		= "mxbd",
	.service	= KNET_SVC_BLOCK,
	.owner		= THIS_MODULE,
};

/**
 * struct mxbd_dev - one attached volume
 * @mq: the connections to its server, one per hardware queue (a knet
 *	completion group each)
 * @tag_set: blk-mq tags, one per server credit
 * @disk: the block device
 * @info: the volume's geometry, from INFO
 * @index: N of /dev/mxbdN
 */
struct mxbd_dev {
	struct knet_mq		*mq;
	struct blk_mq_tag_set	tag_set;
	struct gendisk		*disk;
	struct mxbd_info	info;
	int			index;
};

/* Per request: what knet needs, next to the block layer's request. */
struct mxbd_cmd {
	struct knet_request	rq;
	struct mxbd_io		io;
	struct knet_mem		mem;
	struct bio_vec		bv[MXBD_MAX_SEGS];
};

static struct mxbd_dev *mxbd_dev0;

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

/* knet says the request is over, its pages out of the server's reach. */
static void mxbd_done(struct knet_request *krq)
{
	struct mxbd_cmd *cmd = container_of(krq, struct mxbd_cmd, rq);
	struct request *req = blk_mq_rq_from_pdu(cmd);
	blk_status_t sts;

	if (krq->error) {
		pr_err_ratelimited("%s: request at sector %llu failed: %d\n",
				   req->q->disk ? req->q->disk->disk_name : "mxbd",
				   (unsigned long long)blk_rq_pos(req), krq->error);
		sts = BLK_STS_IOERR;
	} else {
		sts = mxbd_errno_to_blk(krq->status);
	}
	blk_mq_end_request(req, sts);
}

static blk_status_t mxbd_queue_rq(struct blk_mq_hw_ctx *hctx, const struct blk_mq_queue_data *bd)
{
	struct request *req = bd->rq;
	struct mxbd_dev *d = req->q->queuedata;
	struct mxbd_cmd *cmd = blk_mq_rq_to_pdu(req);
	struct req_iterator iter;
	struct bio_vec bv;
	unsigned int n = 0;
	bool data = false;
	int ret;

	memset(&cmd->rq, 0, sizeof(cmd->rq));
	cmd->io.offset = cpu_to_le64(blk_rq_pos(req) << SECTOR_SHIFT);
	cmd->io.length = cpu_to_le32(blk_rq_bytes(req));
	cmd->io.flags = 0;
	cmd->rq.body = &cmd->io;
	cmd->rq.body_len = sizeof(cmd->io);
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
		return BLK_STS_NOTSUPP;
	}
	if (data) {
		rq_for_each_bvec(bv, req, iter) {
			if (n == MXBD_MAX_SEGS)
				return BLK_STS_IOERR;	/* the queue limits forbid it */
			cmd->bv[n++] = bv;
		}
		cmd->mem.type = KNET_MEM_BVEC;
		cmd->mem.flags = 0;
		cmd->mem.skip = 0;
		cmd->mem.nr = n;
		cmd->mem.len = blk_rq_bytes(req);
		cmd->mem.bvec = cmd->bv;
		cmd->rq.mem = &cmd->mem;
	}
	cmd->rq.done = mxbd_done;

	blk_mq_start_request(req);
	/* Each hardware queue has its own connection, completion queue and credits. */
	ret = knet_submit(d->mq->q[hctx->queue_num % d->mq->nr], &cmd->rq);
	if (ret == -EAGAIN)
		return BLK_STS_RESOURCE;	/* no credit: rerun when one comes back */
	if (ret)
		return BLK_STS_IOERR;
	return BLK_STS_OK;
}

static const struct blk_mq_ops mxbd_mq_ops = {
	.queue_rq	= mxbd_queue_rq,
};

static const struct block_device_operations mxbd_fops = {
	.owner		= THIS_MODULE,
};

static int mxbd_get_info(struct mxbd_dev *d)
{
	struct knet_request rq = {
		.opcode = MXBD_OP_INFO,
		.reply = &d->info,
		.reply_max = sizeof(d->info),
	};
	int ret = knet_call(d->mq->q[0], &rq, 10 * HZ);

	if (ret)
		return ret;
	if (rq.status)
		return -(int)rq.status;
	if (rq.reply_len != sizeof(d->info) || !le32_to_cpu(d->info.logical_block) ||
	    !is_power_of_2(le32_to_cpu(d->info.logical_block)))
		return -EPROTO;
	return 0;
}

static struct gendisk *mxbd_alloc_disk(struct mxbd_dev *d, const struct knet_limits *kl)
{
	u32 lbs = le32_to_cpu(d->info.logical_block);
	u32 pbs = max(lbs, le32_to_cpu(d->info.physical_block));
	u32 max_io = min(kl->max_io, le32_to_cpu(d->info.max_io));
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

static int mxbd_attach(const char *addr, u16 port_nr, const char *name, int index,
		       struct mxbd_dev **out)
{
	struct knet_ep_params p = {
		.service = KNET_SVC_BLOCK,
		.name = name,
		.request_timeout_ms = io_timeout * 1000,
	};
	struct knet_limits kl;
	struct mxbd_dev *d;
	int reason, ret;

	p.addr.sin_family = AF_INET;
	p.addr.sin_port = htons(port_nr);
	if (!in4_pton(addr, -1, (u8 *)&p.addr.sin_addr.s_addr, -1, NULL)) {
		pr_err("server '%s' is not an IPv4 address\n", addr);
		return -EINVAL;
	}
	d = kzalloc(sizeof(*d), GFP_KERNEL);
	if (!d)
		return -ENOMEM;
	d->index = index;
	d->mq = knet_mq_connect(&p, clamp_t(unsigned int, nr_queues ?: num_online_cpus(), 1,
					    MXBD_MAX_QUEUES), &reason);
	if (IS_ERR(d->mq)) {
		ret = PTR_ERR(d->mq);
		if (ret == -ECONNREFUSED)
			pr_err("cannot attach volume '%s' of %s: refused: %s\n", name, addr,
			       knet_reject_str(reason));
		else
			pr_err("cannot attach volume '%s' of %s: %d\n", name, addr, ret);
		goto free_dev;
	}
	ret = mxbd_get_info(d);
	if (ret) {
		pr_err("volume '%s': INFO failed: %d\n", name, ret);
		goto destroy_ep;
	}
	knet_ep_limits(d->mq->q[0], &kl);

	d->tag_set.ops = &mxbd_mq_ops;
	d->tag_set.nr_hw_queues = d->mq->nr;
	d->tag_set.queue_depth = kl.credits;
	d->tag_set.numa_node = NUMA_NO_NODE;
	d->tag_set.cmd_size = sizeof(struct mxbd_cmd);
	d->tag_set.driver_data = d;
	ret = blk_mq_alloc_tag_set(&d->tag_set);
	if (ret)
		goto destroy_ep;

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
	set_disk_ro(d->disk, !!(le32_to_cpu(d->info.flags) & MXBD_INFO_READ_ONLY));
	ret = add_disk(d->disk);
	if (ret)
		goto put_disk;
	pr_info("%s: volume '%s' of %s, %llu bytes, %u-byte blocks, %u queues%s\n",
		d->disk->disk_name, name, addr, le64_to_cpu(d->info.size),
		le32_to_cpu(d->info.logical_block), d->mq->nr,
		get_disk_ro(d->disk) ? ", read-only" : "");
	*out = d;
	return 0;

put_disk:
	put_disk(d->disk);
free_tags:
	blk_mq_free_tag_set(&d->tag_set);
destroy_ep:
	knet_mq_destroy(d->mq);
free_dev:
	kfree(d);
	return ret;
}

static void mxbd_detach(struct mxbd_dev *d)
{
	/* Every request ends before del_gendisk() returns. */
	del_gendisk(d->disk);
	put_disk(d->disk);
	blk_mq_free_tag_set(&d->tag_set);
	knet_mq_destroy(d->mq);
	kfree(d);
}

static int __init mxbd_init(void)
{
	int ret;

	ret = knet_register_ulp(&mxbd_ulp);
	if (ret)
		return ret;

	ret = register_blkdev(0, "mxbd");
	if (ret < 0) {
		pr_err("cannot register a block major: %d\n", ret);
		goto unregister_ulp;
	}
	mxbd_major = ret;

	if (server || volume) {
		if (!server || !volume) {
			pr_err("attaching at load needs both server= and volume=\n");
			ret = -EINVAL;
			goto unregister_blkdev;
		}
		ret = mxbd_attach(server, port, volume, 0, &mxbd_dev0);
		if (ret)
			goto unregister_blkdev;
	}

	mxbd_debugfs = debugfs_create_dir("mxbd", NULL);
	debugfs_create_u32("major", 0444, mxbd_debugfs, &mxbd_major);
	pr_info("loaded, major %u\n", mxbd_major);
	return 0;

unregister_blkdev:
	unregister_blkdev(mxbd_major, "mxbd");
unregister_ulp:
	knet_unregister_ulp(&mxbd_ulp);
	return ret;
}

static void __exit mxbd_exit(void)
{
	debugfs_remove_recursive(mxbd_debugfs);
	if (mxbd_dev0)
		mxbd_detach(mxbd_dev0);
	unregister_blkdev(mxbd_major, "mxbd");
	knet_unregister_ulp(&mxbd_ulp);
	pr_info("unloaded\n");
}

module_init(mxbd_init);
module_exit(mxbd_exit);

MODULE_DESCRIPTION("Network block device over RDMA");
MODULE_LICENSE("GPL");

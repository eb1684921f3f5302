// SPDX-License-Identifier: GPL-2.0-only
/*
 * MXBD: network block device over RDMA. Module life cycle and the block
 * major.
 */
#define pr_fmt(fmt) "mxbd: " fmt

#include <linux/blkdev.h>
#include <linux/debugfs.h>
#include <linux/module.h>

#include "knet.h"

static u32 mxbd_major;
static struct dentry *mxbd_debugfs;

static struct knet_ulp mxbd_ulp = {
	.name		= "mxbd",
	.service	= KNET_SVC_BLOCK,
	.owner		= THIS_MODULE,
};

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

	mxbd_debugfs = debugfs_create_dir("mxbd", NULL);
	debugfs_create_u32("major", 0444, mxbd_debugfs, &mxbd_major);
	pr_info("loaded, major %u\n", mxbd_major);
	return 0;

unregister_ulp:
	knet_unregister_ulp(&mxbd_ulp);
	return ret;
}

static void __exit mxbd_exit(void)
{
	debugfs_remove_recursive(mxbd_debugfs);
	unregister_blkdev(mxbd_major, "mxbd");
	knet_unregister_ulp(&mxbd_ulp);
	pr_info("unloaded\n");
}

module_init(mxbd_init);
module_exit(mxbd_exit);

MODULE_DESCRIPTION("Network block device over RDMA");
MODULE_LICENSE("GPL");

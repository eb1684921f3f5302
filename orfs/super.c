// SPDX-License-Identifier: GPL-2.0-only
/*
 * ORFS: remote file system over RDMA. Module life cycle and the file
 * system type.
 */
#define pr_fmt(fmt) "orfs: " fmt

#include <linux/fs.h>
#include <linux/fs_context.h>
#include <linux/module.h>

#include "knet.h"

static struct knet_ulp orfs_ulp = {
	.name		= "orfs",
	.service	= KNET_SVC_FILE,
	.owner		= THIS_MODULE,
};

static int orfs_get_tree(struct fs_context *fc)
{
	return invalfc(fc, "this build of orfs has no client yet; mounting is not supported");
}

static const struct fs_context_operations orfs_context_ops = {
	.get_tree	= orfs_get_tree,
};

static int orfs_init_fs_context(struct fs_context *fc)
{
	fc->ops = &orfs_context_ops;
	return 0;
}

static struct file_system_type orfs_fs_type = {
	.owner			= THIS_MODULE,
	.name			= "orfs",
	.init_fs_context	= orfs_init_fs_context,
	.kill_sb		= kill_anon_super,
};
MODULE_ALIAS_FS("orfs");

static int __init orfs_init(void)
{
	int ret;

	ret = knet_register_ulp(&orfs_ulp);
	if (ret)
		return ret;
	ret = register_filesystem(&orfs_fs_type);
	if (ret) {
		pr_err("cannot register the file system type: %d\n", ret);
		goto unregister_ulp;
	}
	pr_info("loaded\n");
	return 0;

unregister_ulp:
	knet_unregister_ulp(&orfs_ulp);
	return ret;
}

static void __exit orfs_exit(void)
{
	unregister_filesystem(&orfs_fs_type);
	knet_unregister_ulp(&orfs_ulp);
	pr_info("unloaded\n");
}

module_init(orfs_init);
module_exit(orfs_exit);

MODULE_DESCRIPTION("Remote file system over RDMA");
MODULE_LICENSE("GPL");

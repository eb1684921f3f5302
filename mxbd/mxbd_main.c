// SPDX-License-Identifier: GPL-2.0-only
/*
 * MXBD: network block device over RDMA. The module: its parameters, the
 * registry of devices, and the control files that attach and detach them.
 *
 * At load, for the simple case:
 *	modprobe mxbd server=192.0.2.10 volume=vol0 [port=20077]
 * (an IPv6 server: server=fd00::10, with or without brackets)
 * At run time (tools/mxbdctl wraps these):
 *	echo "server=192.0.2.10 volume=vol0 [port=N] [srcaddr=ADDRESS] [queues=N]
 *	      [io_timeout=S] [loss_timeout=S|-1] [queue_depth=N] [max_io_kb=N] [ro]
 *	      [key=NAME]"
 *	      > /sys/class/mxbd/attach
 *	echo "mxbd0 [force]" > /sys/class/mxbd/detach
 */
#define pr_fmt(fmt) "mxbd: " fmt

#include <linux/blkdev.h>
#include <linux/ctype.h>
#include <linux/device.h>
#include <linux/idr.h>
#include <linux/module.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "mxbd.h"

static char *server;
module_param(server, charp, 0444);
MODULE_PARM_DESC(server, "IPv4 or IPv6 address of the server to attach a volume from at load");
static char *volume;
module_param(volume, charp, 0444);
MODULE_PARM_DESC(volume, "Name of the volume to attach at load");
static ushort port = KNET_DEFAULT_PORT;
module_param(port, ushort, 0444);
MODULE_PARM_DESC(port, "Server port of the volume attached at load (default 20077)");
static int transport = KNET_TRANSPORT_RDMA;
module_param_cb(transport, &knet_transport_param_ops, &transport, 0644);
MODULE_PARM_DESC(transport, "Default transport of an attach: rdma, tcp, or auto (RDMA when an RDMA device routes to the server, else TCP) (default rdma)");
static unsigned int nr_queues;
module_param(nr_queues, uint, 0444);
MODULE_PARM_DESC(nr_queues, "Hardware queues, one connection each (default: one per online CPU, at most 16)");
static unsigned int io_timeout = 30;
module_param(io_timeout, uint, 0444);
MODULE_PARM_DESC(io_timeout, "Default seconds a request may wait for the server before the connection is dropped and made again (default 30, 0 none, at most 3600)");
static int loss_timeout = 120;
module_param(loss_timeout, int, 0444);
MODULE_PARM_DESC(loss_timeout, "Default seconds I/O is held for a lost server before it fails (default 120, at most 86400, -1 for ever)");
static unsigned int queue_depth;
module_param(queue_depth, uint, 0444);
MODULE_PARM_DESC(queue_depth, "Default most requests in flight per hardware queue (default 0: as many as the server grants; it can only lower that)");
static unsigned int max_io_kb;
module_param(max_io_kb, uint, 0444);
MODULE_PARM_DESC(max_io_kb, "Default largest request in KiB, a multiple of the page size (default 0: the server's largest; it can only lower that)");
static unsigned int rescan_interval = 10;
module_param(rescan_interval, uint, 0444);
MODULE_PARM_DESC(rescan_interval, "Seconds between asking servers for volume sizes, to follow a volume that grows (default 10, 0 never, at most 86400)");

static struct knet_ulp mxbd_ulp = {
	.name		= "mxbd",
	.service	= KNET_SVC_BLOCK,
	.owner		= THIS_MODULE,
};

static int mxbd_major;
static DEFINE_IDR(mxbd_devs);		/* index -> device */
static DEFINE_MUTEX(mxbd_devs_lock);

static unsigned int mxbd_default_queues(void)
{
	return clamp_t(unsigned int, nr_queues ?: num_online_cpus(), 1, MXBD_MAX_QUEUES);
}

/* 0 (the server's) or 1 to MXBD_MAX_DEPTH. */
static bool mxbd_depth_ok(unsigned int depth)
{
	return depth <= MXBD_MAX_DEPTH;
}

/* 0 (the server's), or whole pages up to MXBD_MAX_IO_KB. */
static bool mxbd_max_io_kb_ok(unsigned int kb)
{
	return kb <= MXBD_MAX_IO_KB && !(kb % (PAGE_SIZE / SZ_1K));
}

/* What separates the options of an attach. */
#define MXBD_OPT_SEPARATORS	" \t\n,"

/* Parse "key=value ..." (spaces, tabs, commas or newlines between) into O. */
static int mxbd_parse_opts(char *s, struct mxbd_opts *o)
{
	bool have_server = false;
	u16 port_nr = KNET_DEFAULT_PORT;
	char *tok, *val;
	int ret = 0;

	memset(o, 0, sizeof(*o));
	o->nr_queues = mxbd_default_queues();
	o->io_timeout = io_timeout;
	o->loss_timeout = loss_timeout;
	o->queue_depth = queue_depth;
	o->max_io = max_io_kb * SZ_1K;
	o->transport = READ_ONCE(transport);
	while ((tok = strsep(&s, MXBD_OPT_SEPARATORS)) != NULL) {
		if (!*tok)
			continue;
		val = strchr(tok, '=');
		if (val)
			*val++ = '\0';
		if (!strcmp(tok, "ro")) {
			/* "ro" alone, or ro=1/0 (y/n, on/off) */
			if (val && kstrtobool(val, &o->read_only)) {
				pr_err("attach: bad value '%s' for ro (give 'ro' alone, or ro=1 or ro=0)\n",
				       val);
				return -EINVAL;
			}
			if (!val)
				o->read_only = true;
		} else if (!val) {
			pr_err("attach: '%s' needs a value\n", tok);
			return -EINVAL;
		} else if (!strcmp(tok, "server")) {
			if (knet_parse_addr(val, strlen(val), 0, &o->addr)) {
				pr_err("attach: server '%s' is not an IPv4 or IPv6 address\n", val);
				return -EINVAL;
			}
			have_server = true;
		} else if (!strcmp(tok, "srcaddr")) {
			if (knet_parse_addr(val, strlen(val), 0, &o->srcaddr)) {
				pr_err("attach: srcaddr '%s' is not an IPv4 or IPv6 address\n",
				       val);
				return -EINVAL;
			}
		} else if (!strcmp(tok, "key")) {
			/* The writer's keyrings: the device keeps a copy for reconnections. */
			if (!*val || strscpy(o->key, val, sizeof(o->key)) < 0) {
				pr_err("attach: a key name is 1 to %d bytes\n", KNET_NAME_MAX);
				return -EINVAL;
			}
			ret = knet_secret_lookup(o->key, &o->secret);
			if (ret) {
				pr_err("attach: key=%s: no usable logon key 'knet:%s' in the keyrings (%pe)\n",
				       val, val, ERR_PTR(ret));
				return ret;
			}
		} else if (!strcmp(tok, "volume")) {
			if (!*val || strscpy(o->volume, val, sizeof(o->volume)) < 0) {
				pr_err("attach: a volume name is 1 to %d bytes\n", KNET_NAME_MAX);
				return -EINVAL;
			}
		} else if (!strcmp(tok, "port")) {
			ret = kstrtou16(val, 10, &port_nr);
			if (!ret && !port_nr)
				ret = -EINVAL;
		} else if (!strcmp(tok, "transport")) {
			ret = knet_transport_parse(val);
			if (ret >= 0) {
				o->transport = ret;
				ret = 0;
			}
		} else if (!strcmp(tok, "digest")) {
			ret = knet_digest_parse(val);
			if (ret >= 0) {
				o->digests = ret;
				ret = 0;
			}
		} else if (!strcmp(tok, "queues")) {
			ret = kstrtouint(val, 10, &o->nr_queues);
			if (!ret && (!o->nr_queues || o->nr_queues > MXBD_MAX_QUEUES))
				ret = -EINVAL;
		} else if (!strcmp(tok, "io_timeout")) {
			ret = kstrtouint(val, 10, &o->io_timeout);
			if (!ret && o->io_timeout > MXBD_MAX_IO_TIMEOUT)
				ret = -EINVAL;
		} else if (!strcmp(tok, "loss_timeout")) {
			ret = kstrtoint(val, 10, &o->loss_timeout);
			if (!ret && (o->loss_timeout < MXBD_LOSS_FOREVER ||
				     o->loss_timeout > MXBD_MAX_LOSS_TIMEOUT))
				ret = -EINVAL;
		} else if (!strcmp(tok, "queue_depth")) {
			ret = kstrtouint(val, 10, &o->queue_depth);
			if (!ret && (!o->queue_depth || !mxbd_depth_ok(o->queue_depth)))
				ret = -EINVAL;
		} else if (!strcmp(tok, "max_io_kb")) {
			unsigned int kb = 0;

			ret = kstrtouint(val, 10, &kb);
			if (!ret && (!kb || !mxbd_max_io_kb_ok(kb)))
				ret = -EINVAL;
			o->max_io = kb * SZ_1K;
		} else {
			pr_err("attach: unknown option '%s'\n", tok);
			return -EINVAL;
		}
		if (ret) {
			pr_err("attach: bad value '%s' for %s\n", val, tok);
			return -EINVAL;
		}
	}
	if (!have_server || !o->volume[0]) {
		pr_err("attach: server= and volume= are needed\n");
		return -EINVAL;
	}
	if (o->srcaddr.ss_family && o->srcaddr.ss_family != o->addr.ss_family) {
		pr_err("attach: srcaddr %pISc and server %pISc are not of one family\n",
		       &o->srcaddr, &o->addr);
		return -EINVAL;
	}
	knet_addr_set_port(&o->addr, port_nr);
	return 0;
}

/* Under mxbd_devs_lock: the device attached from O's server and volume. */
static struct mxbd_dev *mxbd_find(const struct mxbd_opts *o)
{
	struct mxbd_dev *d;
	int id;

	idr_for_each_entry(&mxbd_devs, d, id)
		if (knet_addr_same(&d->opts.addr, &o->addr) && !strcmp(d->opts.volume, o->volume))
			return d;
	return NULL;
}

static int mxbd_attach(const struct mxbd_opts *o)
{
	struct mxbd_dev *d;
	int index, ret;

	mutex_lock(&mxbd_devs_lock);
	if (mxbd_find(o)) {
		pr_err("attach: volume '%s' of %pISpc is attached already\n", o->volume, &o->addr);
		ret = -EEXIST;
		goto unlock;
	}
	/* Reserve the index; the device is published once it works. */
	index = idr_alloc(&mxbd_devs, NULL, 0, MXBD_MAX_DEVS, GFP_KERNEL);
	if (index < 0) {
		ret = index == -ENOSPC ? -EMFILE : index;
		goto unlock;
	}
	ret = mxbd_dev_create(o, index, &d);
	if (ret)
		idr_remove(&mxbd_devs, index);
	else
		idr_replace(&mxbd_devs, d, index);
unlock:
	mutex_unlock(&mxbd_devs_lock);
	return ret;
}

static int mxbd_detach(const char *name, bool force)
{
	struct mxbd_dev *d;
	unsigned int index;

	/* "mxbdN" or "/dev/mxbdN", N in decimal without sign or leading zero */
	if (str_has_prefix(name, "/dev/"))
		name += 5;
	if (!str_has_prefix(name, "mxbd") || !isdigit(name[4]) ||
	    (name[4] == '0' && name[5]) || kstrtouint(name + 4, 10, &index)) {
		pr_err("detach: '%s' is not a device name (mxbdN)\n", name);
		return -EINVAL;
	}
	mutex_lock(&mxbd_devs_lock);
	d = idr_find(&mxbd_devs, index);
	if (!d) {
		mutex_unlock(&mxbd_devs_lock);
		pr_err("detach: no device mxbd%u is attached\n", index);
		return -ENODEV;
	}
	if (!force && mxbd_dev_busy(d)) {
		mutex_unlock(&mxbd_devs_lock);
		pr_err("detach: %s is open (mounted?); umount it, or detach with force\n",
		       d->disk->disk_name);
		return -EBUSY;
	}
	idr_remove(&mxbd_devs, index);
	mutex_unlock(&mxbd_devs_lock);
	mxbd_dev_remove(d, force);
	return 0;
}

#ifdef MXBD_CLASS_CONST
#define MXBD_CLASS_ARGS const struct class *cls, const struct class_attribute *attr
#else
#define MXBD_CLASS_ARGS struct class *cls, struct class_attribute *attr
#endif

static ssize_t attach_store(MXBD_CLASS_ARGS, const char *buf, size_t count)
{
	struct mxbd_opts o;
	char *s;
	int ret;

	s = kstrndup(buf, count, GFP_KERNEL);
	if (!s)
		return -ENOMEM;
	ret = mxbd_parse_opts(s, &o);
	kfree(s);
	if (!ret)
		ret = mxbd_attach(&o);
	knet_secret_clear(&o.secret);
	return ret ?: count;
}
static CLASS_ATTR_WO(attach);

static ssize_t detach_store(MXBD_CLASS_ARGS, const char *buf, size_t count)
{
	char *s, *p, *name, *opt;
	bool force = false;
	int ret = 0;

	s = kstrndup(buf, count, GFP_KERNEL);
	if (!s)
		return -ENOMEM;
	p = strim(s);
	name = strsep(&p, " \t");
	while (p && (opt = strsep(&p, " \t")) != NULL) {
		if (!*opt)
			continue;
		if (strcmp(opt, "force")) {
			pr_err("detach: unknown option '%s'\n", opt);
			ret = -EINVAL;
		}
		force = true;
	}
	if (!ret)
		ret = mxbd_detach(name, force);
	kfree(s);
	return ret ?: count;
}
static CLASS_ATTR_WO(detach);

static struct attribute *mxbd_class_attrs[] = {
	&class_attr_attach.attr,
	&class_attr_detach.attr,
	NULL,
};
ATTRIBUTE_GROUPS(mxbd_class);

static struct class mxbd_class = {
	.name		= "mxbd",
	.class_groups	= mxbd_class_groups,
};

/* server= and volume= at load: attached as if written to the attach file. */
static int __init mxbd_attach_at_load(void)
{
	struct mxbd_opts o;
	char *opts;
	int ret;

	if (!server && !volume)
		return 0;
	if (!server || !volume) {
		pr_err("attaching at load needs both server= and volume=\n");
		return -EINVAL;
	}
	/* Values, not options: the string below must not get one more. */
	if (strpbrk(server, MXBD_OPT_SEPARATORS "=") || strpbrk(volume, MXBD_OPT_SEPARATORS "=")) {
		pr_err("server= and volume= are an address and a name, without spaces, commas or '='\n");
		return -EINVAL;
	}
	opts = kasprintf(GFP_KERNEL, "server=%s volume=%s port=%u", server, volume, port);
	if (!opts)
		return -ENOMEM;
	ret = mxbd_parse_opts(opts, &o);
	kfree(opts);
	return ret ?: mxbd_attach(&o);
}

static void mxbd_detach_all(void)
{
	struct mxbd_dev *d;
	int id;

	mutex_lock(&mxbd_devs_lock);
	idr_for_each_entry(&mxbd_devs, d, id) {
		idr_remove(&mxbd_devs, id);
		mxbd_dev_remove(d, true);
	}
	mutex_unlock(&mxbd_devs_lock);
}

static int __init mxbd_init(void)
{
	int ret;

	if (io_timeout > MXBD_MAX_IO_TIMEOUT) {
		pr_err("io_timeout=%u: seconds, 0 to %u\n", io_timeout, MXBD_MAX_IO_TIMEOUT);
		return -EINVAL;
	}
	if (loss_timeout < MXBD_LOSS_FOREVER || loss_timeout > MXBD_MAX_LOSS_TIMEOUT) {
		pr_err("loss_timeout=%d: seconds, 0 to %u, or -1 for ever\n", loss_timeout,
		       MXBD_MAX_LOSS_TIMEOUT);
		return -EINVAL;
	}
	if (rescan_interval > MXBD_MAX_RESCAN) {
		pr_err("rescan_interval=%u: seconds, 0 (never) to %u\n", rescan_interval,
		       MXBD_MAX_RESCAN);
		return -EINVAL;
	}
	if (nr_queues > MXBD_MAX_QUEUES) {
		pr_err("nr_queues=%u: 0 (one per CPU) to %u\n", nr_queues, MXBD_MAX_QUEUES);
		return -EINVAL;
	}
	if (!mxbd_depth_ok(queue_depth)) {
		pr_err("queue_depth is at most %u\n", MXBD_MAX_DEPTH);
		return -EINVAL;
	}
	if (!mxbd_max_io_kb_ok(max_io_kb)) {
		pr_err("max_io_kb is whole pages of %lu KiB, at most %u\n", PAGE_SIZE / SZ_1K,
		       MXBD_MAX_IO_KB);
		return -EINVAL;
	}
	ret = knet_register_ulp(&mxbd_ulp);
	if (ret)
		return ret;
	ret = register_blkdev(0, "mxbd");
	if (ret < 0) {
		pr_err("cannot register a block major: %d\n", ret);
		goto unregister_ulp;
	}
	mxbd_major = ret;
	ret = mxbd_dev_init(mxbd_major, rescan_interval);
	if (ret)
		goto unregister_blkdev;
	ret = class_register(&mxbd_class);
	if (ret)
		goto dev_exit;
	ret = mxbd_attach_at_load();
	if (ret)
		goto unregister_class;
	pr_info("loaded, major %d\n", mxbd_major);
	return 0;

unregister_class:
	class_unregister(&mxbd_class);
dev_exit:
	mxbd_dev_exit();
unregister_blkdev:
	unregister_blkdev(mxbd_major, "mxbd");
unregister_ulp:
	knet_unregister_ulp(&mxbd_ulp);
	return ret;
}

static void __exit mxbd_exit(void)
{
	/* No attach or detach runs once the control files are gone. */
	class_unregister(&mxbd_class);
	mxbd_detach_all();
	idr_destroy(&mxbd_devs);
	mxbd_dev_exit();
	unregister_blkdev(mxbd_major, "mxbd");
	knet_unregister_ulp(&mxbd_ulp);
	pr_info("unloaded\n");
}

module_init(mxbd_init);
module_exit(mxbd_exit);

MODULE_DESCRIPTION("Network block device over RDMA");
MODULE_LICENSE("GPL");

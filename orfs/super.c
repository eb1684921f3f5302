// SPDX-License-Identifier: GPL-2.0-only
/*
 * ORFS: remote file system over RDMA. The file system type, mount options,
 * the super block, and the module's life cycle.
 *
 *   mount -t orfs 10.0.0.1:/export /mnt -o rsize=262144,acregmax=30,soft
 *
 * The source names the server by IPv4 or IPv6 address (mount.orfs resolves
 * host names and passes addr=), an IPv6 one in brackets as for NFS
 * ([fd00::1]:/export), and the export by name.
 */
#define pr_fmt(fmt) "orfs: " fmt

#include <linux/backing-dev.h>
#include <linux/cpumask.h>
#include <linux/cred.h>
#include <linux/fs.h>
#include <linux/fs_context.h>
#include <linux/fs_parser.h>
#include <linux/in6.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/pagemap.h>
#include <linux/random.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/statfs.h>

#include "orfs.h"

#define ORFS_MAGIC		0x4f524653	/* "ORFS" */

static struct kmem_cache *orfs_inode_cachep;

static struct knet_ulp orfs_ulp = {
	.name		= "orfs",
	.service	= KNET_SVC_FILE,
	.owner		= THIS_MODULE,
};

/* ---- options ---------------------------------------------------------- */

static int orfs_transport = KNET_TRANSPORT_RDMA;
module_param_cb(transport, &knet_transport_param_ops, &orfs_transport, 0644);
MODULE_PARM_DESC(transport, "Transport of a mount that names none: rdma, tcp, or auto (RDMA when an RDMA device routes to the server, else TCP) (default rdma)");

enum {
	ORFS_OPT_ADDR, ORFS_OPT_PORT, ORFS_OPT_RSIZE, ORFS_OPT_WSIZE,
	ORFS_OPT_ACREGMIN, ORFS_OPT_ACREGMAX, ORFS_OPT_ACDIRMIN, ORFS_OPT_ACDIRMAX,
	ORFS_OPT_ACTIMEO, ORFS_OPT_AC, ORFS_OPT_HARD, ORFS_OPT_SOFT,
	ORFS_OPT_TIMEO, ORFS_OPT_RETRANS,
	ORFS_OPT_REGCACHE, ORFS_OPT_NCONNECT, ORFS_OPT_LARGEFOLIO, ORFS_OPT_LOCKS,
	ORFS_OPT_SRCADDR, ORFS_OPT_KEY, ORFS_OPT_WRITEBACK, ORFS_OPT_TRANSPORT,
	ORFS_OPT_DIGEST,
};

static const struct constant_table orfs_onoff[] = {
	{ "on",		1 },
	{ "off",	0 },
	{}
};

static const struct constant_table orfs_writeback[] = {
	{ "unstable",	0 },
	{ "stable",	1 },
	{}
};

static const struct constant_table orfs_locks[] = {
	{ "remote",	0 },
	{ "local",	1 },
	{}
};

/* As enum knet_transport_sel. */
static const struct constant_table orfs_transports[] = {
	{ "rdma",	KNET_TRANSPORT_RDMA },
	{ "tcp",	KNET_TRANSPORT_TCP },
	{ "auto",	KNET_TRANSPORT_AUTO },
	{}
};

/* As knet_digest_parse(). */
static const struct constant_table orfs_digests[] = {
	{ "none",	0 },
	{ "header",	KNET_CMF_HDGST },
	{ "data",	KNET_CMF_DDGST },
	{ "both",	KNET_CMF_DIGESTS },
	{}
};

static const struct fs_parameter_spec orfs_params[] = {
	fsparam_string("addr",		ORFS_OPT_ADDR),
	fsparam_u32("port",		ORFS_OPT_PORT),
	fsparam_u32("rsize",		ORFS_OPT_RSIZE),
	fsparam_u32("wsize",		ORFS_OPT_WSIZE),
	fsparam_u32("acregmin",		ORFS_OPT_ACREGMIN),
	fsparam_u32("acregmax",		ORFS_OPT_ACREGMAX),
	fsparam_u32("acdirmin",		ORFS_OPT_ACDIRMIN),
	fsparam_u32("acdirmax",		ORFS_OPT_ACDIRMAX),
	fsparam_u32("actimeo",		ORFS_OPT_ACTIMEO),
	fsparam_flag_no("ac",		ORFS_OPT_AC),
	fsparam_flag("hard",		ORFS_OPT_HARD),
	fsparam_flag("soft",		ORFS_OPT_SOFT),
	fsparam_u32("timeo",		ORFS_OPT_TIMEO),
	fsparam_u32("retrans",		ORFS_OPT_RETRANS),
	fsparam_enum("regcache",	ORFS_OPT_REGCACHE, orfs_onoff),
	fsparam_u32("nconnect",		ORFS_OPT_NCONNECT),
	fsparam_enum("largefolio",	ORFS_OPT_LARGEFOLIO, orfs_onoff),
	fsparam_enum("locks",		ORFS_OPT_LOCKS, orfs_locks),
	fsparam_string("srcaddr",	ORFS_OPT_SRCADDR),
	fsparam_string("key",		ORFS_OPT_KEY),
	fsparam_enum("writeback",	ORFS_OPT_WRITEBACK, orfs_writeback),
	fsparam_enum("transport",	ORFS_OPT_TRANSPORT, orfs_transports),
	fsparam_enum("digest",		ORFS_OPT_DIGEST, orfs_digests),
	{}
};

struct orfs_fs_context {
	struct orfs_opts	opts;
	struct sockaddr_storage	addr;	/* from addr=; family 0: none */
};

static int orfs_parse_param(struct fs_context *fc, struct fs_parameter *param)
{
	struct orfs_fs_context *ctx = fc->fs_private;
	struct orfs_opts *o = &ctx->opts;
	struct fs_parse_result r;
	int opt;

	opt = fs_parse(fc, orfs_params, param, &r);
	if (opt < 0)
		return opt;
	switch (opt) {
	case ORFS_OPT_ADDR:
		if (knet_parse_addr(param->string, strlen(param->string), 0, &ctx->addr))
			return invalfc(fc, "addr=%s is not an IPv4 or IPv6 address", param->string);
		break;
	case ORFS_OPT_SRCADDR:
		if (knet_parse_addr(param->string, strlen(param->string), 0, &o->srcaddr))
			return invalfc(fc, "srcaddr=%s is not an IPv4 or IPv6 address",
				       param->string);
		break;
	case ORFS_OPT_KEY:
		if (!*param->string || strscpy(o->key, param->string, sizeof(o->key)) < 0)
			return invalfc(fc, "key=%s: a name of 1 to %d bytes", param->string,
				       KNET_NAME_MAX);
		break;
	case ORFS_OPT_PORT:
		if (!r.uint_32 || r.uint_32 > 65535)
			return invalfc(fc, "port=%u is out of range", r.uint_32);
		o->port = r.uint_32;
		break;
	case ORFS_OPT_RSIZE:
	case ORFS_OPT_WSIZE:
		if (r.uint_32 < PAGE_SIZE || r.uint_32 > SZ_1M || r.uint_32 % PAGE_SIZE)
			return invalfc(fc, "%s=%u: a multiple of %lu up to 1 MiB", param->key,
				       r.uint_32, PAGE_SIZE);
		if (opt == ORFS_OPT_RSIZE)
			o->rsize = r.uint_32;
		else
			o->wsize = r.uint_32;
		break;
	case ORFS_OPT_ACREGMIN:
		o->acregmin = r.uint_32;
		break;
	case ORFS_OPT_ACREGMAX:
		o->acregmax = r.uint_32;
		break;
	case ORFS_OPT_ACDIRMIN:
		o->acdirmin = r.uint_32;
		break;
	case ORFS_OPT_ACDIRMAX:
		o->acdirmax = r.uint_32;
		break;
	case ORFS_OPT_ACTIMEO:
		o->acregmin = r.uint_32;
		o->acregmax = r.uint_32;
		o->acdirmin = r.uint_32;
		o->acdirmax = r.uint_32;
		break;
	case ORFS_OPT_AC:
		o->noac = r.negated;
		break;
	case ORFS_OPT_HARD:
		o->soft = false;
		break;
	case ORFS_OPT_SOFT:
		o->soft = true;
		break;
	case ORFS_OPT_TIMEO:
		if (!r.uint_32 || r.uint_32 > 36000)
			return invalfc(fc, "timeo=%u: tenths of a second, 1 to 36000", r.uint_32);
		o->timeo = r.uint_32;
		break;
	case ORFS_OPT_RETRANS:
		if (!r.uint_32 || r.uint_32 > 100)
			return invalfc(fc, "retrans=%u: 1 to 100", r.uint_32);
		o->retrans = r.uint_32;
		break;
	case ORFS_OPT_REGCACHE:
		o->regcache = r.uint_32;
		break;
	case ORFS_OPT_NCONNECT:
		if (!r.uint_32 || r.uint_32 > ORFS_MAX_CONNECT)
			return invalfc(fc, "nconnect=%u: 1 to %d connections", r.uint_32,
				       ORFS_MAX_CONNECT);
		o->nconnect = r.uint_32;
		break;
	case ORFS_OPT_LARGEFOLIO:
		if (r.uint_32 && !ORFS_LARGE_FOLIOS)
			return invalfc(fc, "largefolio=on: this kernel has no folio size bound");
		o->largefolio = r.uint_32;
		break;
	case ORFS_OPT_LOCKS:
		o->local_locks = r.uint_32;
		break;
	case ORFS_OPT_WRITEBACK:
		o->stable_wb = r.uint_32;
		break;
	case ORFS_OPT_TRANSPORT:
		o->transport = r.uint_32;
		break;
	case ORFS_OPT_DIGEST:
		o->digests = r.uint_32;
		break;
	}
	return 0;
}

/*
 * "10.0.0.1:/export", "[fd00::1]:/export": the address (unless addr= gave
 * it) and the export's name.
 */
static int orfs_parse_source(struct fs_context *fc, struct orfs_sb *sbi)
{
	struct orfs_fs_context *ctx = fc->fs_private;
	const char *src = fc->source, *colon, *name;
	size_t hlen, nlen;

	if (!src)
		return invalfc(fc, "no source: mount -t orfs SERVER:/EXPORT DIR");
	colon = strrchr(src, ':');
	if (!colon || colon[1] != '/')
		return invalfc(fc, "source %s: expected SERVER:/EXPORT", src);
	hlen = colon - src;
	name = colon + 2;
	nlen = strlen(name);
	while (nlen && name[nlen - 1] == '/')
		nlen--;
	if (!nlen || nlen > KNET_NAME_MAX || memchr(name, '/', nlen))
		return invalfc(fc, "source %s: the export must be one name of 1 to %d bytes",
			       src, KNET_NAME_MAX);
	memcpy(sbi->export, name, nlen);
	sbi->export[nlen] = 0;
	if (ctx->addr.ss_family) {
		sbi->addr = ctx->addr;
		knet_addr_set_port(&sbi->addr, ctx->opts.port);
	} else if (knet_parse_addr(src, hlen, ctx->opts.port, &sbi->addr)) {
		return invalfc(fc, "server in %s: not an IPv4 or IPv6 address (use mount.orfs)",
			       src);
	}
	if (ctx->opts.srcaddr.ss_family && ctx->opts.srcaddr.ss_family != sbi->addr.ss_family)
		return invalfc(fc,
			       "srcaddr=%pISc and the server's address %pISc are not of one family",
			       &ctx->opts.srcaddr, &sbi->addr);
	return 0;
}

/* ---- super block ------------------------------------------------------ */

static struct inode *orfs_alloc_inode(struct super_block *sb)
{
	struct orfs_inode *ci = alloc_inode_sb(sb, orfs_inode_cachep, GFP_KERNEL);

	if (!ci)
		return NULL;
	memset(&ci->fh, 0, sizeof(ci->fh));
	ci->change = 0;
	ci->attr_time = 0;
	ci->attr_timeo = 0;
	atomic_set(&ci->open_count, 0);
	ci->silly_name[0] = 0;
	ci->wb_cred = NULL;
	atomic_set(&ci->stale_gen, 0);
	ci->dropped_gen = 0;
	ci->useq = 0;
	ci->unstable_bytes = 0;
	ci->dio_un = false;
	ci->dio_verf = 0;
	ci->dio_seq = 0;
	return &ci->vfs_inode;
}

static void orfs_free_inode(struct inode *inode)
{
	kmem_cache_free(orfs_inode_cachep, ORFS_I(inode));
}

/*
 * The flusher, sync(2) and syncfs(2) write the inode once its pages are
 * written back: what went back unstable is committed here (write-back
 * marks the inode dirty when it leaves unstable pages). A sync first
 * waits for the write-back it started, so that its COMMIT covers it.
 */
static int orfs_write_inode(struct inode *inode, struct writeback_control *wbc)
{
	int ret = 0;

	if (wbc->sync_mode == WB_SYNC_ALL)
		ret = filemap_fdatawait(inode->i_mapping);
	if (!ret)
		ret = orfs_commit(inode, true, false);
	/* Not committed (a soft mount's time-out): the flusher tries again. */
	if (ret && !list_empty_careful(&ORFS_I(inode)->unstable))
		__mark_inode_dirty(inode, I_DIRTY_DATASYNC);
	return ret;
}

static void orfs_evict_inode(struct inode *inode)
{
	truncate_inode_pages_final(&inode->i_data);
	clear_inode(inode);
	orfs_lock_forget(inode);
	if (ORFS_I(inode)->wb_cred)
		put_cred(ORFS_I(inode)->wb_cred);
	ORFS_I(inode)->wb_cred = NULL;
}

static int orfs_statfs(struct dentry *dentry, struct kstatfs *buf)
{
	struct orfs_sb *sbi = ORFS_SB(dentry->d_sb);
	struct orfs_fhop_req r = { .fh = ORFS_I(d_inode(dentry->d_sb->s_root))->fh };
	struct orfs_statfs_rep rep;
	int ret;

	ret = orfs_call(sbi, ORFS_OP_STATFS, &r, sizeof(r), &rep, sizeof(rep));
	if (ret)
		return ret;
	buf->f_type = ORFS_MAGIC;
	buf->f_bsize = le32_to_cpu(rep.bsize);
	buf->f_frsize = le32_to_cpu(rep.frsize);
	buf->f_blocks = le64_to_cpu(rep.blocks);
	buf->f_bfree = le64_to_cpu(rep.bfree);
	buf->f_bavail = le64_to_cpu(rep.bavail);
	buf->f_files = le64_to_cpu(rep.files);
	buf->f_ffree = le64_to_cpu(rep.ffree);
	buf->f_namelen = min_t(u32, le32_to_cpu(rep.namelen), ORFS_NAME_MAX);
	return 0;
}

/*
 * ",KEY=ADDRESS", with the zone of a link-local IPv6 address as a number
 * (fe80::1%2): what a mount option takes back (%pISsc would bracket the
 * address and put the zone after, which it does not).
 */
static void orfs_show_addr(struct seq_file *m, const char *key, const struct sockaddr_storage *ss)
{
	const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)ss;

	if (ss->ss_family == AF_INET6 && sin6->sin6_scope_id)
		seq_printf(m, ",%s=%pI6c%%%u", key, &sin6->sin6_addr, sin6->sin6_scope_id);
	else
		seq_printf(m, ",%s=%pISc", key, ss);
}

static int orfs_show_options(struct seq_file *m, struct dentry *root)
{
	struct orfs_sb *sbi = ORFS_SB(root->d_sb);
	struct orfs_opts *o = &sbi->opts;

	orfs_show_addr(m, "addr", &sbi->addr);
	seq_printf(m, ",port=%u,rsize=%u,wsize=%u", knet_addr_port(&sbi->addr), sbi->rsize,
		   sbi->wsize);
	if (o->srcaddr.ss_family)
		orfs_show_addr(m, "srcaddr", &o->srcaddr);
	if (o->key[0])
		seq_show_option(m, "key", o->key);
	seq_printf(m, ",acregmin=%u,acregmax=%u,acdirmin=%u,acdirmax=%u", o->acregmin,
		   o->acregmax, o->acdirmin, o->acdirmax);
	if (o->noac)
		seq_puts(m, ",noac");
	seq_printf(m, ",%s,timeo=%u,retrans=%u,regcache=%s,nconnect=%u,largefolio=%s,locks=%s",
		   o->soft ? "soft" : "hard", o->timeo, o->retrans, o->regcache ? "on" : "off",
		   sbi->g.nr, o->largefolio ? "on" : "off", o->local_locks ? "local" : "remote");
	seq_printf(m, ",writeback=%s", o->stable_wb ? "stable" : "unstable");
	/* What the mount connected with: "auto" shows its choice. */
	seq_printf(m, ",transport=%s", READ_ONCE(sbi->transport));
	/* Digests go over TCP only: shown when asked for. */
	if (o->digests)
		seq_printf(m, ",digest=%s", knet_digest_str(o->digests));
	return 0;
}

/* umount -f: calls in progress and to come fail instead of waiting for the server. */
static void orfs_umount_begin(struct super_block *sb)
{
	struct orfs_sb *sbi = ORFS_SB(sb);

	orfs_abort(sbi);
}

static void orfs_put_super(struct super_block *sb)
{
	struct orfs_sb *sbi = ORFS_SB(sb);

	orfs_unlocks_end(sbi);
	orfs_disconnect(sbi);
}

static const struct super_operations orfs_sops = {
	.alloc_inode	= orfs_alloc_inode,
	.free_inode	= orfs_free_inode,
	.evict_inode	= orfs_evict_inode,
	.write_inode	= orfs_write_inode,
	.statfs		= orfs_statfs,
	.show_options	= orfs_show_options,
	.show_stats	= orfs_show_stats,
	.umount_begin	= orfs_umount_begin,
	.put_super	= orfs_put_super,
};

static int orfs_get_root(struct super_block *sb)
{
	struct orfs_sb *sbi = ORFS_SB(sb);
	struct orfs_entry_rep *rep;
	struct inode *inode;
	struct orfs_msg m;
	int ret;

	rep = kmalloc(sizeof(*rep), GFP_KERNEL);
	if (!rep)
		return -ENOMEM;
	ret = orfs_msg_init(&m, sbi, sizeof(struct orfs_req));
	if (ret)
		goto out;
	ret = orfs_rpc(sbi, ORFS_OP_GETROOT, &m, rep, sizeof(*rep), sizeof(*rep), NULL, NULL,
		       KNET_DIR_NONE);
	orfs_msg_free(&m);
	if (ret)
		goto out;
	if (!S_ISDIR(le32_to_cpu(rep->attr.mode))) {
		ret = -ENOTDIR;
		goto out;
	}
	inode = orfs_iget(sb, &rep->fh, &rep->attr);
	if (IS_ERR(inode)) {
		ret = PTR_ERR(inode);
		goto out;
	}
	sb->s_root = d_make_root(inode);
	if (!sb->s_root)
		ret = -ENOMEM;
out:
	kfree(rep);
	return ret;
}

static int orfs_fill_super(struct super_block *sb, struct fs_context *fc)
{
	struct orfs_sb *sbi = sb->s_fs_info;
	int ret;

	sbi->sb = sb;
	sb->s_magic = ORFS_MAGIC;
	sb->s_op = &orfs_sops;
	sb->s_xattr = orfs_xattr_handlers;
	sb->s_maxbytes = MAX_LFS_FILESIZE;
	sb->s_blocksize = PAGE_SIZE;
	sb->s_blocksize_bits = PAGE_SHIFT;
	sb->s_time_gran = 1;
	sb->s_flags |= SB_NOSEC;
	/* ACLs are the server's: the VFS leaves the umask to orfs_acl_mode(). */
	sb->s_flags |= SB_POSIXACL;

	ret = orfs_connect(sbi);
	if (ret) {
		errorfc(fc, "cannot reach %pISpc export '%s': %d", &sbi->addr, sbi->export, ret);
		return ret;
	}
	ret = super_setup_bdi(sb);
	if (ret)
		return ret;
	sb->s_bdi->ra_pages = 4 * (sbi->rsize >> PAGE_SHIFT);
	sb->s_bdi->io_pages = sbi->rsize >> PAGE_SHIFT;
	ret = orfs_get_root(sb);
	if (ret)
		return ret;
	/* The root is never looked up again; the rest is revalidated. */
	sb->s_d_op = &orfs_dentry_ops;
	return 0;
}

static int orfs_get_tree(struct fs_context *fc)
{
	struct orfs_fs_context *ctx = fc->fs_private;
	struct orfs_sb *sbi;
	int ret;

	if (!ctx->opts.soft && ctx->opts.retrans != 3)
		warnfc(fc, "retrans applies to soft mounts only");
	if (ctx->opts.acregmin > ctx->opts.acregmax || ctx->opts.acdirmin > ctx->opts.acdirmax)
		return invalfc(fc, "attribute cache minimum above its maximum");
	sbi = kzalloc(sizeof(*sbi), GFP_KERNEL);
	if (!sbi)
		return -ENOMEM;
	ret = orfs_stats_alloc(sbi);
	if (ret)
		goto out_free;
	sbi->opts = ctx->opts;
	sbi->transport = knet_transport_str(ctx->opts.transport);
	sbi->client_id = get_random_u64();
	get_random_bytes(&sbi->lock_key, sizeof(sbi->lock_key));
	INIT_WORK(&sbi->reclaim_work, orfs_reclaim_work);
	spin_lock_init(&sbi->reclaim_lock);
	init_waitqueue_head(&sbi->reclaim_wq);
	INIT_LIST_HEAD(&sbi->reclaimed);
	INIT_LIST_HEAD(&sbi->locked);
	spin_lock_init(&sbi->locked_lock);
	INIT_DELAYED_WORK(&sbi->renew_work, orfs_renew_work);
	ret = orfs_parse_source(fc, sbi);
	if (ret)
		goto out_stats;
	/* The mounter's own keyrings: reconnections use the copy. */
	if (sbi->opts.key[0]) {
		ret = knet_secret_lookup(sbi->opts.key, &sbi->secret);
		if (ret) {
			errorfc(fc, "key=%s: no usable logon key 'knet:%s' in the keyrings (%d)",
				sbi->opts.key, sbi->opts.key, ret);
			goto out_stats;
		}
	}
	fc->s_fs_info = sbi;
	return get_tree_nodev(fc, orfs_fill_super);

out_stats:
	orfs_stats_free(sbi);
out_free:
	kfree_sensitive(sbi);
	return ret;
}

static void orfs_free_fc(struct fs_context *fc)
{
	struct orfs_sb *sbi = fc->s_fs_info;	/* not taken by a super block */

	if (sbi)
		orfs_stats_free(sbi);
	kfree_sensitive(sbi);
	kfree(fc->fs_private);
}

/* Are the source addresses A and B (family 0: none) the same? */
static bool orfs_same_src(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	return a->ss_family == b->ss_family && (!a->ss_family || knet_addr_same(a, b));
}

/*
 * mount -o remount: the attribute cache's times (acregmin...acdirmax,
 * actimeo, ac/noac), hard/soft with retrans, and regcache change; ro/rw
 * is the VFS's. The rest is the connection's and the page cache's: given
 * again with the value in force it is accepted (mount(8) may repeat what
 * /proc/mounts shows), another value is refused and nothing changes.
 */
static int orfs_reconfigure(struct fs_context *fc)
{
	struct orfs_fs_context *ctx = fc->fs_private;
	struct super_block *sb = fc->root->d_sb;
	struct orfs_sb *sbi = ORFS_SB(sb);
	struct orfs_opts *n = &ctx->opts, *o = &sbi->opts;
	const char *what = NULL;
	int ret;

	if (n->acregmin > n->acregmax || n->acdirmin > n->acdirmax)
		return invalfc(fc, "attribute cache minimum above its maximum");
	if (ctx->addr.ss_family) {
		knet_addr_set_port(&ctx->addr, knet_addr_port(&sbi->addr));
		if (!knet_addr_same(&ctx->addr, &sbi->addr))
			what = "addr";
	}
	if (n->port != knet_addr_port(&sbi->addr))
		what = "port";
	else if (n->rsize != sbi->rsize)
		what = "rsize";
	else if (n->wsize != sbi->wsize)
		what = "wsize";
	else if (!orfs_same_src(&n->srcaddr, &o->srcaddr))
		what = "srcaddr";
	else if (n->nconnect != sbi->g.nr)
		what = "nconnect";
	else if (n->timeo != o->timeo)
		what = "timeo";
	else if (n->largefolio != o->largefolio)
		what = "largefolio";
	else if (n->local_locks != o->local_locks)
		what = "locks";
	else if (strcmp(n->key, o->key))
		what = "key";
	/* The options shown name the transport "auto" chose: that is no change. */
	else if (n->transport != o->transport &&
		 strcmp(knet_transport_str(n->transport), READ_ONCE(sbi->transport)))
		what = "transport";
	else if (n->digests != o->digests)
		what = "digest";
	if (what)
		return invalfc(fc, "%s= cannot change on a remount", what);
	/* Going read-only: what this client holds dirty is written first. */
	if ((fc->sb_flags_mask & SB_RDONLY) && (fc->sb_flags & SB_RDONLY) && !sb_rdonly(sb)) {
		ret = sync_filesystem(sb);
		if (ret)
			return ret;
	}
	WRITE_ONCE(o->acregmin, n->acregmin);
	WRITE_ONCE(o->acregmax, n->acregmax);
	WRITE_ONCE(o->acdirmin, n->acdirmin);
	WRITE_ONCE(o->acdirmax, n->acdirmax);
	WRITE_ONCE(o->noac, n->noac);
	WRITE_ONCE(o->regcache, n->regcache);
	/* Folios already kept for a COMMIT still get one. */
	WRITE_ONCE(o->stable_wb, n->stable_wb);
	WRITE_ONCE(o->soft, n->soft);
	WRITE_ONCE(o->retrans, n->retrans);
	WRITE_ONCE(sbi->g.tries, n->soft ? n->retrans : 0);
	return 0;
}

static const struct fs_context_operations orfs_context_ops = {
	.parse_param	= orfs_parse_param,
	.get_tree	= orfs_get_tree,
	.reconfigure	= orfs_reconfigure,
	.free		= orfs_free_fc,
};

static int orfs_init_fs_context(struct fs_context *fc)
{
	struct orfs_fs_context *ctx;

	ctx = kzalloc(sizeof(*ctx), GFP_KERNEL);
	if (!ctx)
		return -ENOMEM;
	fc->fs_private = ctx;
	fc->ops = &orfs_context_ops;
	/* A remount starts from what is in force, as /proc/mounts shows it. */
	if (fc->purpose == FS_CONTEXT_FOR_RECONFIGURE) {
		struct orfs_sb *sbi = ORFS_SB(fc->root->d_sb);

		ctx->opts = sbi->opts;
		ctx->opts.port = knet_addr_port(&sbi->addr);
		ctx->opts.rsize = sbi->rsize;
		ctx->opts.wsize = sbi->wsize;
		ctx->opts.nconnect = sbi->g.nr;
		return 0;
	}
	ctx->opts.port = KNET_DEFAULT_PORT;
	ctx->opts.transport = READ_ONCE(orfs_transport);
	ctx->opts.acregmin = 3;
	ctx->opts.acregmax = 60;
	ctx->opts.acdirmin = 30;
	ctx->opts.acdirmax = 60;
	ctx->opts.timeo = 600;
	ctx->opts.retrans = 3;
	ctx->opts.regcache = true;
	ctx->opts.largefolio = ORFS_LARGE_FOLIOS;
	/*
	 * One connection per CPU, as MXBD's queues: a deep stream spreads
	 * over the server's progress threads, while requests sent one at a
	 * time stay on the first connection (orfs_sess_get()).
	 */
	ctx->opts.nconnect = min_t(unsigned int, num_online_cpus(), ORFS_AUTO_CONNECT);
	return 0;
}

static void orfs_kill_sb(struct super_block *sb)
{
	struct orfs_sb *sbi = ORFS_SB(sb);

	/* Reclaims hold inodes: over, and none to come, before they go. */
	if (sbi) {
		spin_lock(&sbi->reclaim_lock);
		sbi->dying = true;
		spin_unlock(&sbi->reclaim_lock);
		cancel_delayed_work_sync(&sbi->renew_work);
		cancel_work_sync(&sbi->reclaim_work);
		/* Writes held for a reclaim that will not run go now. */
		orfs_reclaim_end(sbi);
	}
	kill_anon_super(sb);
	if (sbi) {
		orfs_disconnect(sbi);	/* the mount failed before put_super */
		orfs_stats_free(sbi);
	}
	kfree_sensitive(sbi);
}

static struct file_system_type orfs_fs_type = {
	.owner			= THIS_MODULE,
	.name			= "orfs",
	.init_fs_context	= orfs_init_fs_context,
	.parameters		= orfs_params,
	.kill_sb		= orfs_kill_sb,
};
MODULE_ALIAS_FS("orfs");

static void orfs_inode_init_once(void *p)
{
	struct orfs_inode *ci = p;

	inode_init_once(&ci->vfs_inode);
	mutex_init(&ci->drop_mutex);
	mutex_init(&ci->commit_mutex);
	INIT_LIST_HEAD(&ci->unstable);
	INIT_LIST_HEAD(&ci->lock_link);
	INIT_LIST_HEAD(&ci->lost);
}

static int __init orfs_init(void)
{
	int ret;

	orfs_inode_cachep = kmem_cache_create("orfs_inode", sizeof(struct orfs_inode), 0,
					      SLAB_RECLAIM_ACCOUNT | SLAB_ACCOUNT,
					      orfs_inode_init_once);
	if (!orfs_inode_cachep)
		return -ENOMEM;
	ret = knet_register_ulp(&orfs_ulp);
	if (ret)
		goto free_cache;
	ret = register_filesystem(&orfs_fs_type);
	if (ret) {
		pr_err("cannot register the file system type: %d\n", ret);
		goto unregister_ulp;
	}
	pr_info("loaded\n");
	return 0;

unregister_ulp:
	knet_unregister_ulp(&orfs_ulp);
free_cache:
	kmem_cache_destroy(orfs_inode_cachep);
	return ret;
}

static void __exit orfs_exit(void)
{
	unregister_filesystem(&orfs_fs_type);
	knet_unregister_ulp(&orfs_ulp);
	/* Inodes are freed after an RCU grace period. */
	rcu_barrier();
	kmem_cache_destroy(orfs_inode_cachep);
	pr_info("unloaded\n");
}

module_init(orfs_init);
module_exit(orfs_exit);

MODULE_DESCRIPTION("Remote file system over RDMA");
MODULE_LICENSE("GPL");

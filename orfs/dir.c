// SPDX-License-Identifier: GPL-2.0-only
/*
 * ORFS directories: lookup with revalidation (positive dentries while
 * their inode's attributes are fresh, else by a new LOOKUP; negative ones
 * while the directory's change attribute stays), the namespace operations,
 * readdir over cookies, and hiding an open file that is unlinked.
 */
#define pr_fmt(fmt) "orfs: " fmt

#include <linux/namei.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "orfs.h"

#define ORFS_READDIR_BYTES	4096

/* The directory changed: its attributes (and negative dentries) are stale. */
static void orfs_dir_changed(struct inode *dir)
{
	orfs_attr_expire(dir);
}

static bool orfs_name_ok(const char *name, u32 len)
{
	return len && len <= ORFS_NAME_MAX && !memchr(name, '/', len) && !memchr(name, 0, len) &&
	       !(len == 1 && name[0] == '.') && !(len == 2 && name[0] == '.' && name[1] == '.');
}

/* Ask DIR for NAME: the entry's handle and attributes. */
static int orfs_lookup_rpc(struct inode *dir, const struct qstr *name, struct orfs_entry_rep *rep)
{
	struct orfs_sb *sbi = ORFS_SB(dir->i_sb);
	struct orfs_dirop_req *r;
	struct orfs_msg m;
	int ret;

	ret = orfs_msg_init(&m, sbi, sizeof(struct orfs_req) + sizeof(*r) + 2 + name->len);
	if (ret)
		return ret;
	r = orfs_msg_put(&m, NULL, sizeof(*r));
	if (r)
		r->dir = ORFS_I(dir)->fh;
	orfs_msg_name(&m, name->name, name->len);
	ret = orfs_rpc(sbi, ORFS_OP_LOOKUP, &m, rep, sizeof(*rep), sizeof(*rep), NULL, NULL,
		       KNET_DIR_NONE);
	orfs_msg_free(&m);
	return ret ?: orfs_check_attr(&rep->attr);
}

static struct dentry *orfs_lookup(struct inode *dir, struct dentry *dentry, unsigned int flags)
{
	struct orfs_entry_rep *rep;
	struct inode *inode = NULL;
	struct dentry *res;
	int ret;

	if (dentry->d_name.len > ORFS_NAME_MAX)
		return ERR_PTR(-ENAMETOOLONG);
	/* O_EXCL creates ask the server anyway (CREATE fails with EEXIST). */
	if (flags & LOOKUP_EXCL)
		return NULL;
	rep = kmalloc(sizeof(*rep), GFP_KERNEL);
	if (!rep)
		return ERR_PTR(-ENOMEM);
	/*
	 * A negative answer stays true while the directory does not change;
	 * a positive one for the inode's attribute timeout from now.
	 */
	dentry->d_time = (unsigned long)ORFS_I(dir)->change;
	ret = orfs_lookup_rpc(dir, &dentry->d_name, rep);
	if (!ret) {
		inode = orfs_iget(dir->i_sb, &rep->fh, &rep->attr);
		dentry->d_time = jiffies;
	} else if (ret != -ENOENT) {
		inode = ERR_PTR(ret);
	}
	kfree(rep);
	res = d_splice_alias(inode, dentry);
	if (!IS_ERR_OR_NULL(res))
		res->d_time = jiffies;	/* a directory's alias, moved here */
	return res;
}

/*
 * What the cache alone says of DENTRY's answer: 1 still true, 0 stale,
 * -ECHILD only the server can tell. Takes no lock and no reference, so an
 * RCU path walk can use it.
 */
static int orfs_dentry_cached(struct inode *dir, struct dentry *dentry, struct inode *inode,
			      unsigned int flags)
{
	unsigned long checked = READ_ONCE(dentry->d_time);

	if (!inode) {
		/* About to create: make sure with a real lookup. */
		if (flags & (LOOKUP_EXCL | LOOKUP_RENAME_TARGET))
			return 0;
		/* True while the directory does not change, once its attributes are fresh. */
		if (!orfs_attr_fresh(dir))
			return -ECHILD;
		return checked == (unsigned long)READ_ONCE(ORFS_I(dir)->change);
	}
	/*
	 * The name was checked (d_time) within its directory's attribute
	 * timeout, as NFS trusts a name while its directory's cached
	 * attributes hold. Not the attributes' own age: our changes to a
	 * directory expire its attributes, not the names in it.
	 */
	if (!READ_ONCE(ORFS_SB(dir->i_sb)->opts.noac) &&
	    time_before(jiffies, checked + orfs_attr_timeo(dir)))
		return 1;
	return -ECHILD;
}

static int orfs_d_revalidate(struct dentry *dentry, unsigned int flags)
{
	struct inode *inode, *dir;
	struct orfs_entry_rep *rep;
	struct dentry *parent;
	int ret, valid;

	if (flags & LOOKUP_RCU) {
		/* A path walk under RCU: answer from the cache or have it walk again. */
		parent = READ_ONCE(dentry->d_parent);
		dir = d_inode_rcu(parent);
		if (!dir)
			return -ECHILD;
		return orfs_dentry_cached(dir, dentry, d_inode_rcu(dentry), flags);
	}
	parent = dget_parent(dentry);
	dir = d_inode(parent);
	inode = d_inode(dentry);
	valid = orfs_dentry_cached(dir, dentry, inode, flags);
	if (valid != -ECHILD)
		goto out;
	valid = 0;
	if (!inode) {
		valid = !orfs_revalidate(dir, false) &&
			dentry->d_time == (unsigned long)ORFS_I(dir)->change;
		goto out;
	}
	rep = kmalloc(sizeof(*rep), GFP_KERNEL);
	if (!rep)
		goto out;
	ret = orfs_lookup_rpc(dir, &dentry->d_name, rep);
	if (!ret && !memcmp(&rep->fh, &ORFS_I(inode)->fh, sizeof(rep->fh)) &&
	    !((le32_to_cpu(rep->attr.mode) ^ inode->i_mode) & S_IFMT)) {
		orfs_refresh(inode, &rep->attr);
		dentry->d_time = jiffies;
		valid = 1;
	} else if (ret && ret != -ENOENT && ret != -ESTALE) {
		valid = ret;	/* cannot tell now: say so rather than drop it */
	}
	kfree(rep);
out:
	dput(parent);
	return valid;
}

const struct dentry_operations orfs_dentry_ops = {
	.d_revalidate	= orfs_d_revalidate,
};

/* CREATE, MKDIR, MKNOD, SYMLINK: a new entry NAME in DIR. */
static int orfs_new_entry(struct inode *dir, struct dentry *dentry, u16 op, umode_t mode,
			  u32 flags, dev_t rdev, const char *target)
{
	struct orfs_sb *sbi = ORFS_SB(dir->i_sb);
	size_t tlen = target ? strlen(target) : 0;
	struct orfs_create_req *r;
	struct orfs_entry_rep *rep;
	struct inode *inode;
	struct orfs_msg m;
	int ret;

	if (tlen > ORFS_PATH_MAX)
		return -ENAMETOOLONG;
	if (op != ORFS_OP_SYMLINK) {
		ret = orfs_acl_mode(dir, &mode);
		if (ret)
			return ret;
	}
	rep = kmalloc(sizeof(*rep), GFP_KERNEL);
	if (!rep)
		return -ENOMEM;
	ret = orfs_msg_init(&m, sbi, sizeof(struct orfs_req) + sizeof(*r) + 2 +
			    dentry->d_name.len + 4 + tlen);
	if (ret)
		goto out;
	r = orfs_msg_put(&m, NULL, sizeof(*r));
	if (r) {
		r->dir = ORFS_I(dir)->fh;
		r->mode = cpu_to_le32(mode);
		r->flags = cpu_to_le32(flags);
		r->rdev = cpu_to_le64(orfs_encode_rdev(mode, rdev));
	}
	orfs_msg_name(&m, dentry->d_name.name, dentry->d_name.len);
	if (target)
		orfs_msg_blob(&m, target, tlen);
	ret = orfs_rpc(sbi, op, &m, rep, sizeof(*rep), sizeof(*rep), NULL, NULL, KNET_DIR_NONE);
	orfs_msg_free(&m);
	orfs_dir_changed(dir);
	if (ret)
		goto out;
	inode = orfs_iget(dir->i_sb, &rep->fh, &rep->attr);
	if (IS_ERR(inode)) {
		ret = PTR_ERR(inode);
		goto out;
	}
	/* An O_EXCL create skipped the lookup: the dentry is not hashed yet. */
	dentry->d_time = jiffies;
	if (d_unhashed(dentry))
		d_add(dentry, inode);
	else
		d_instantiate(dentry, inode);
out:
	kfree(rep);
	return ret;
}

static int orfs_create(orfs_idmap_t *map, struct inode *dir, struct dentry *dentry,
		       umode_t mode, bool excl)
{
	return orfs_new_entry(dir, dentry, ORFS_OP_CREATE, S_IFREG | (mode & S_IALLUGO),
			      excl ? ORFS_CREATE_EXCL : 0, 0, NULL);
}

static int orfs_mkdir(orfs_idmap_t *map, struct inode *dir, struct dentry *dentry, umode_t mode)
{
	return orfs_new_entry(dir, dentry, ORFS_OP_MKDIR, S_IFDIR | (mode & S_IALLUGO), 0, 0,
			      NULL);
}

static int orfs_mknod(orfs_idmap_t *map, struct inode *dir, struct dentry *dentry,
		      umode_t mode, dev_t rdev)
{
	/*
	 * The server makes fifos, sockets and device nodes (for callers its
	 * kernel lets: unsquashed root) and never opens them; opening one
	 * here opens this host's device, unless the mount is nodev.
	 */
	if (S_ISREG(mode))
		return orfs_create(map, dir, dentry, mode, false);
	if (!S_ISFIFO(mode) && !S_ISSOCK(mode) && !S_ISCHR(mode) && !S_ISBLK(mode))
		return -EPERM;
	return orfs_new_entry(dir, dentry, ORFS_OP_MKNOD, mode, 0, rdev, NULL);
}

static int orfs_symlink(orfs_idmap_t *map, struct inode *dir, struct dentry *dentry,
			const char *target)
{
	if (!*target)
		return -ENOENT;
	return orfs_new_entry(dir, dentry, ORFS_OP_SYMLINK, S_IFLNK | 0777, 0, 0, target);
}

static int orfs_link(struct dentry *old, struct inode *dir, struct dentry *dentry)
{
	struct inode *inode = d_inode(old);
	struct orfs_sb *sbi = ORFS_SB(dir->i_sb);
	struct orfs_link_req *r;
	struct orfs_attr attr;
	struct orfs_msg m;
	int ret;

	ret = orfs_msg_init(&m, sbi, sizeof(struct orfs_req) + sizeof(*r) + 2 + dentry->d_name.len);
	if (ret)
		return ret;
	r = orfs_msg_put(&m, NULL, sizeof(*r));
	if (r) {
		r->fh = ORFS_I(inode)->fh;
		r->dir = ORFS_I(dir)->fh;
	}
	orfs_msg_name(&m, dentry->d_name.name, dentry->d_name.len);
	ret = orfs_rpc(sbi, ORFS_OP_LINK, &m, &attr, sizeof(attr), sizeof(attr), NULL, NULL,
		       KNET_DIR_NONE);
	orfs_msg_free(&m);
	orfs_dir_changed(dir);
	if (!ret)
		ret = orfs_check_attr(&attr);
	if (ret)
		return ret;
	orfs_refresh(inode, &attr);
	ihold(inode);
	dentry->d_time = jiffies;
	d_instantiate(dentry, inode);
	return 0;
}

/* UNLINK or RMDIR of NAME in DIR. */
static int orfs_remove(struct inode *dir, const char *name, u32 len, u16 op)
{
	struct orfs_sb *sbi = ORFS_SB(dir->i_sb);
	struct orfs_dirop_req *r;
	struct orfs_msg m;
	int ret;

	ret = orfs_msg_init(&m, sbi, sizeof(struct orfs_req) + sizeof(*r) + 2 + len);
	if (ret)
		return ret;
	r = orfs_msg_put(&m, NULL, sizeof(*r));
	if (r)
		r->dir = ORFS_I(dir)->fh;
	orfs_msg_name(&m, name, len);
	ret = orfs_rpc(sbi, op, &m, NULL, 0, 0, NULL, NULL, KNET_DIR_NONE);
	orfs_msg_free(&m);
	orfs_dir_changed(dir);
	return ret;
}

static int orfs_rename_rpc(struct inode *odir, const char *oname, u32 olen,
			   struct inode *ndir, const char *nname, u32 nlen, u32 flags)
{
	struct orfs_sb *sbi = ORFS_SB(odir->i_sb);
	struct orfs_rename_req *r;
	struct orfs_msg m;
	int ret;

	ret = orfs_msg_init(&m, sbi, sizeof(struct orfs_req) + sizeof(*r) + 4 + olen + nlen);
	if (ret)
		return ret;
	r = orfs_msg_put(&m, NULL, sizeof(*r));
	if (r) {
		r->olddir = ORFS_I(odir)->fh;
		r->newdir = ORFS_I(ndir)->fh;
		r->flags = cpu_to_le32(flags);
	}
	orfs_msg_name(&m, oname, olen);
	orfs_msg_name(&m, nname, nlen);
	ret = orfs_rpc(sbi, ORFS_OP_RENAME, &m, NULL, 0, 0, NULL, NULL, KNET_DIR_NONE);
	orfs_msg_free(&m);
	orfs_dir_changed(odir);
	orfs_dir_changed(ndir);
	return ret;
}

/*
 * An open file loses its last name: the server would free it, so it gets
 * a hidden name instead, removed when the last open file is closed.
 */
static int orfs_silly_rename(struct inode *dir, struct dentry *dentry)
{
	struct orfs_inode *ci = ORFS_I(d_inode(dentry));
	static atomic_t seq = ATOMIC_INIT(0);
	char name[sizeof(ci->silly_name)];
	int ret;

	snprintf(name, sizeof(name), ".orfs-%lx-%x", d_inode(dentry)->i_ino,
		 (unsigned int)atomic_inc_return(&seq));
	ret = orfs_rename_rpc(dir, dentry->d_name.name, dentry->d_name.len, dir, name,
			      strlen(name), ORFS_RENAME_NOREPLACE);
	if (ret)
		return ret;
	orfs_attr_expire(d_inode(dentry));
	spin_lock(&d_inode(dentry)->i_lock);
	ci->silly_dir = ORFS_I(dir)->fh;
	strscpy(ci->silly_name, name, sizeof(ci->silly_name));
	spin_unlock(&d_inode(dentry)->i_lock);
	return 0;
}

/**
 * orfs_silly_unlink() - remove the hidden name of a closed, unlinked file
 * @inode: its inode, its last open file just closed
 */
void orfs_silly_unlink(struct inode *inode)
{
	struct orfs_sb *sbi = ORFS_SB(inode->i_sb);
	struct orfs_inode *ci = ORFS_I(inode);
	char name[sizeof(ci->silly_name)];
	struct orfs_dirop_req *r;
	struct orfs_fh dir;
	struct orfs_msg m;

	spin_lock(&inode->i_lock);
	strscpy(name, ci->silly_name, sizeof(name));
	dir = ci->silly_dir;
	ci->silly_name[0] = 0;
	spin_unlock(&inode->i_lock);
	if (!name[0] || orfs_msg_init(&m, sbi, sizeof(struct orfs_req) + sizeof(*r) + 2 +
				      strlen(name)))
		return;
	r = orfs_msg_put(&m, NULL, sizeof(*r));
	if (r)
		r->dir = dir;
	orfs_msg_name(&m, name, strlen(name));
	if (orfs_rpc(sbi, ORFS_OP_UNLINK, &m, NULL, 0, 0, NULL, NULL, KNET_DIR_NONE))
		pr_warn_ratelimited("could not remove hidden file %s\n", name);
	orfs_msg_free(&m);
}

static bool orfs_is_open(struct inode *inode)
{
	return S_ISREG(inode->i_mode) && atomic_read(&ORFS_I(inode)->open_count) > 0 &&
	       !ORFS_I(inode)->silly_name[0];
}

static int orfs_unlink(struct inode *dir, struct dentry *dentry)
{
	struct inode *inode = d_inode(dentry);
	int ret;

	if (orfs_is_open(inode) && inode->i_nlink == 1)
		ret = orfs_silly_rename(dir, dentry);
	else
		ret = orfs_remove(dir, dentry->d_name.name, dentry->d_name.len, ORFS_OP_UNLINK);
	if (ret)
		return ret;
	drop_nlink(inode);
	orfs_attr_expire(inode);
	return 0;
}

static int orfs_rmdir(struct inode *dir, struct dentry *dentry)
{
	int ret = orfs_remove(dir, dentry->d_name.name, dentry->d_name.len, ORFS_OP_RMDIR);

	if (!ret)
		clear_nlink(d_inode(dentry));
	return ret;
}

static int orfs_rename(orfs_idmap_t *map, struct inode *odir, struct dentry *old,
		       struct inode *ndir, struct dentry *new, unsigned int flags)
{
	struct inode *target = d_inode(new);
	u32 f = 0;
	int ret;

	if (flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE))
		return -EINVAL;
	if (flags & RENAME_NOREPLACE)
		f |= ORFS_RENAME_NOREPLACE;
	if (flags & RENAME_EXCHANGE)
		f |= ORFS_RENAME_EXCHANGE;
	/* An open file about to be replaced keeps living under a hidden name. */
	if (target && !(flags & RENAME_EXCHANGE) && orfs_is_open(target) &&
	    target->i_nlink == 1) {
		ret = orfs_silly_rename(ndir, new);
		if (ret)
			return ret;
	}
	ret = orfs_rename_rpc(odir, old->d_name.name, old->d_name.len, ndir, new->d_name.name,
			      new->d_name.len, f);
	if (ret)
		return ret;
	/*
	 * The server's file system moved the ctime of the renamed file and of
	 * the one it replaced or swapped with, which may have other names.
	 */
	orfs_attr_expire(d_inode(old));
	if (target) {
		orfs_attr_expire(target);
		if (!(flags & RENAME_EXCHANGE)) {
			if (S_ISDIR(target->i_mode))
				clear_nlink(target);
			else
				drop_nlink(target);
		}
	}
	return 0;
}

static int orfs_readdir(struct file *file, struct dir_context *ctx)
{
	struct inode *dir = file_inode(file);
	struct orfs_sb *sbi = ORFS_SB(dir->i_sb);
	struct orfs_readdir_rep *rep;
	struct orfs_readdir_req *r;
	struct orfs_msg m;
	int ret = 0;

	if (!dir_emit_dots(file, ctx) || ctx->pos == LLONG_MAX)
		return 0;
	rep = kmalloc(sizeof(*rep) + ORFS_READDIR_BYTES, GFP_KERNEL);
	if (!rep)
		return -ENOMEM;
	for (;;) {
		u32 len, off = sizeof(*rep), i, count;
		bool eof;

		ret = orfs_msg_init(&m, sbi, sizeof(struct orfs_req) + sizeof(*r));
		if (ret)
			break;
		r = orfs_msg_put(&m, NULL, sizeof(*r));
		if (r) {
			r->dir = ORFS_I(dir)->fh;
			r->cookie = cpu_to_le64(ctx->pos - 2);
			r->max_bytes = cpu_to_le32(ORFS_READDIR_BYTES);
		}
		ret = orfs_rpc(sbi, ORFS_OP_READDIR, &m, rep, sizeof(*rep),
			       sizeof(*rep) + ORFS_READDIR_BYTES, &len, NULL, KNET_DIR_NONE);
		orfs_msg_free(&m);
		if (ret)
			break;
		count = le32_to_cpu(rep->count);
		eof = rep->eof;
		for (i = 0; i < count; i++) {
			struct orfs_dirent d;
			const char *name;
			u32 nl, rec;
			u64 cookie;

			if (off + sizeof(d) > len)
				goto bad;
			memcpy(&d, (u8 *)rep + off, sizeof(d));
			nl = le16_to_cpu(d.name_len);
			rec = ALIGN(sizeof(d) + nl, 8);
			name = (const char *)rep + off + sizeof(d);
			cookie = le64_to_cpu(d.cookie);
			if (off + sizeof(d) + nl > len || !orfs_name_ok(name, nl))
				goto bad;
			if (!dir_emit(ctx, name, nl, le64_to_cpu(d.ino), d.type))
				goto out;
			/*
			 * Positions are the server's cookies shifted past the
			 * dots; a cookie too large for that is the end marker
			 * of hashed directories (ext4's is LLONG_MAX).
			 */
			ctx->pos = cookie > (u64)LLONG_MAX - 2 ? LLONG_MAX : cookie + 2;
			off += rec;
		}
		/* The entries fill the reply: bytes beyond them are a lie. */
		if (off != len)
			goto bad;
		if (eof || !count || ctx->pos == LLONG_MAX)
			break;
	}
	goto out;
bad:
	pr_warn_ratelimited("malformed directory listing from the server\n");
	ret = -EIO;
out:
	kfree(rep);
	return ret;
}

/*
 * fsync() of a directory: the server syncs it, so that the entries made,
 * renamed or removed in it are durable, as POSIX and ext4 ask before a
 * program counts on a new or renamed file after a crash.
 */
static int orfs_dir_fsync(struct file *file, loff_t start, loff_t end, int datasync)
{
	struct inode *inode = file_inode(file);
	struct orfs_fhop_req r = {
		.fh = ORFS_I(inode)->fh,
		.flags = cpu_to_le32(datasync ? ORFS_FSYNC_DATA : 0),
	};

	return orfs_call(ORFS_SB(inode->i_sb), ORFS_OP_FSYNC, &r, sizeof(r), NULL, 0);
}

const struct inode_operations orfs_dir_iops = {
	.lookup		= orfs_lookup,
	.create		= orfs_create,
	.mkdir		= orfs_mkdir,
	.mknod		= orfs_mknod,
	.symlink	= orfs_symlink,
	.link		= orfs_link,
	.unlink		= orfs_unlink,
	.rmdir		= orfs_rmdir,
	.rename		= orfs_rename,
	.getattr	= orfs_getattr,
	.setattr	= orfs_setattr,
	.listxattr	= orfs_listxattr,
	ORFS_ACL_IOPS
};

const struct file_operations orfs_dir_fops = {
	.llseek		= generic_file_llseek,
	.read		= generic_read_dir,
	.iterate_shared	= orfs_readdir,
	.fsync		= orfs_dir_fsync,
	.lock		= orfs_lock,
	.flock		= orfs_flock,
	/* A lease only this client knows of would not be broken by others. */
	.setlease	= simple_nosetlease,
};

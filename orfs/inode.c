// SPDX-License-Identifier: GPL-2.0-only
/*
 * ORFS inodes: identified by the server's handles, attributes cached for
 * the mount's timeouts (acregmin..acregmax, acdirmin..acdirmax, doubling
 * while nothing changes), cached pages dropped when the server's change
 * attribute moves under us. Symlinks, special files and xattrs.
 */
#define pr_fmt(fmt) "orfs: " fmt

#include <linux/namei.h>
#include <linux/falloc.h>	/* after a header with the kernel's types */
#include <linux/pagemap.h>
#include <linux/posix_acl.h>
#include <linux/posix_acl_xattr.h>
#include <linux/slab.h>
#include <linux/xattr.h>

#include "orfs.h"

#define ORFS_XATTR_REPLY_MAX	4096

/* Times, through accessors where the kernel has them. */
static struct timespec64 orfs_ts(const struct orfs_time *t)
{
	return (struct timespec64){ .tv_sec = le64_to_cpu(t->sec),
				    .tv_nsec = le32_to_cpu(t->nsec) };
}

#ifdef ORFS_HAVE_INODE_TIME_ACCESSORS
static void orfs_set_times(struct inode *inode, const struct orfs_attr *a)
{
	inode_set_atime_to_ts(inode, orfs_ts(&a->atime));
	inode_set_mtime_to_ts(inode, orfs_ts(&a->mtime));
	inode_set_ctime_to_ts(inode, orfs_ts(&a->ctime));
}

void orfs_set_write_times(struct inode *inode, const struct orfs_attr *a)
{
	inode_set_mtime_to_ts(inode, orfs_ts(&a->mtime));
	inode_set_ctime_to_ts(inode, orfs_ts(&a->ctime));
}

/* Did the ctime move while the mtime stayed (a change of metadata alone)? */
static bool orfs_meta_moved(struct inode *inode, const struct orfs_attr *a)
{
	struct timespec64 c = orfs_ts(&a->ctime), m = orfs_ts(&a->mtime);
	struct timespec64 ic = inode_get_ctime(inode), im = inode_get_mtime(inode);

	return !timespec64_equal(&c, &ic) && timespec64_equal(&m, &im);
}
#else
static void orfs_set_times(struct inode *inode, const struct orfs_attr *a)
{
	inode->i_atime = orfs_ts(&a->atime);
	inode->i_mtime = orfs_ts(&a->mtime);
	inode->i_ctime = orfs_ts(&a->ctime);
}

void orfs_set_write_times(struct inode *inode, const struct orfs_attr *a)
{
	inode->i_mtime = orfs_ts(&a->mtime);
	inode->i_ctime = orfs_ts(&a->ctime);
}

/* Did the ctime move while the mtime stayed (a change of metadata alone)? */
static bool orfs_meta_moved(struct inode *inode, const struct orfs_attr *a)
{
	struct timespec64 c = orfs_ts(&a->ctime), m = orfs_ts(&a->mtime);

	return !timespec64_equal(&c, &inode->i_ctime) && timespec64_equal(&m, &inode->i_mtime);
}
#endif

/**
 * orfs_check_attr() - are these attributes possible?
 * @a: attributes from the server
 *
 * Return: 0, or -EIO for a file type we do not know, mode bits no file
 * has, an owner or group of (uid_t)-1 (no id: chown's "unchanged"), a
 * time past range or a size past the largest file.
 */
int orfs_check_attr(const struct orfs_attr *a)
{
	if (le32_to_cpu(a->mode) & ~(S_IFMT | 07777) || le32_to_cpu(a->uid) == U32_MAX ||
	    le32_to_cpu(a->gid) == U32_MAX)
		return -EIO;
	switch (le32_to_cpu(a->mode) & S_IFMT) {
	case S_IFREG:
	case S_IFDIR:
	case S_IFLNK:
	case S_IFIFO:
	case S_IFSOCK:
		break;
	case S_IFCHR:
	case S_IFBLK:
		/* A device number no dev_t holds is a lie. */
		if (le64_to_cpu(a->rdev) >> 32 > ORFS_RDEV_MAJOR_MAX ||
		    (u32)le64_to_cpu(a->rdev) > ORFS_RDEV_MINOR_MAX)
			return -EIO;
		break;
	default:
		return -EIO;
	}
	if (le32_to_cpu(a->mtime.nsec) >= NSEC_PER_SEC ||
	    le32_to_cpu(a->atime.nsec) >= NSEC_PER_SEC ||
	    le32_to_cpu(a->ctime.nsec) >= NSEC_PER_SEC || le64_to_cpu(a->size) > MAX_LFS_FILESIZE)
		return -EIO;
	return 0;
}

static unsigned long orfs_timeo_min(struct inode *inode)
{
	struct orfs_opts *o = &ORFS_SB(inode->i_sb)->opts;

	return (unsigned long)(S_ISDIR(inode->i_mode) ? READ_ONCE(o->acdirmin) :
			       READ_ONCE(o->acregmin)) * HZ;
}

static unsigned long orfs_timeo_max(struct inode *inode)
{
	struct orfs_opts *o = &ORFS_SB(inode->i_sb)->opts;

	return (unsigned long)(S_ISDIR(inode->i_mode) ? READ_ONCE(o->acdirmax) :
			       READ_ONCE(o->acregmax)) * HZ;
}

static void __orfs_refresh(struct inode *inode, const struct orfs_attr *a, bool own)
{
	struct orfs_inode *ci = ORFS_I(inode);
	u64 change = le64_to_cpu(a->change);
	loff_t size = le64_to_cpu(a->size);
	struct folio *eof = NULL;
	unsigned int nlink;
	bool moved, acls;

	/*
	 * Another client grew the file: what a mapping stored past our end is
	 * cleared first, and its folio stays locked until the size has moved,
	 * so that write-back never sends those bytes as part of the file.
	 */
	if (!own && S_ISREG(inode->i_mode))
		eof = orfs_clear_past_eof(inode, i_size_read(inode), size);
	spin_lock(&inode->i_lock);
	/*
	 * ACLs changed with the metadata alone: the ctime, not the mtime
	 * (which a directory's entries and a file's data move), or the
	 * mode, owner or group (a chmod changes an ACL's mask).
	 */
	acls = orfs_meta_moved(inode, a) ||
	       (inode->i_mode & ~S_IFMT) != (le32_to_cpu(a->mode) & ~S_IFMT) ||
	       i_uid_read(inode) != le32_to_cpu(a->uid) || i_gid_read(inode) != le32_to_cpu(a->gid);
	inode->i_mode = (inode->i_mode & S_IFMT) | (le32_to_cpu(a->mode) & ~S_IFMT);
	nlink = le32_to_cpu(a->nlink);
	/* The hidden name of an unlinked open file is not a link the user made. */
	if (ci->silly_name[0] && nlink)
		nlink--;
	set_nlink(inode, nlink);
	i_uid_write(inode, le32_to_cpu(a->uid));
	i_gid_write(inode, le32_to_cpu(a->gid));
	orfs_set_times(inode, a);
	inode->i_blocks = le64_to_cpu(a->blocks);
	/* Our own dirty pages not yet written make the file longer than the server says. */
	/* Nor those kept for a COMMIT, which a server restarting may have lost. */
	if (!S_ISREG(inode->i_mode) || size >= i_size_read(inode) ||
	    (!mapping_tagged(inode->i_mapping, PAGECACHE_TAG_DIRTY) &&
	     list_empty(&ci->unstable)))
		i_size_write(inode, size);
	moved = ci->change != change;
	ci->change = change;
	if (moved)
		ci->attr_timeo = orfs_timeo_min(inode);
	else
		ci->attr_timeo = min(max(ci->attr_timeo * 2, orfs_timeo_min(inode)),
				     orfs_timeo_max(inode));
	ci->attr_time = jiffies;
	spin_unlock(&inode->i_lock);
	if (eof) {
		folio_unlock(eof);
		folio_put(eof);
	}
	if (acls)
		forget_all_cached_acls(inode);

	/*
	 * Someone else changed the file: what we cached of it is stale. What
	 * is not in use goes now; the rest at orfs_revalidate_mapping().
	 */
	if (moved && !own && S_ISREG(inode->i_mode)) {
		atomic_inc(&ci->stale_gen);
		invalidate_mapping_pages(inode->i_mapping, 0, -1);
	}
}

/**
 * orfs_refresh() - take attributes the server sent
 * @inode: the inode
 * @attr: its attributes, checked with orfs_check_attr()
 *
 * For attributes that follow a change we made ourselves, the change
 * attribute moves without our cached pages being dropped.
 */
void orfs_refresh(struct inode *inode, const struct orfs_attr *attr)
{
	__orfs_refresh(inode, attr, false);
}

static void orfs_refresh_own(struct inode *inode, const struct orfs_attr *attr)
{
	__orfs_refresh(inode, attr, true);
}

static int orfs_test(struct inode *inode, void *data)
{
	return !memcmp(&ORFS_I(inode)->fh, data, sizeof(struct orfs_fh));
}

static int orfs_set(struct inode *inode, void *data)
{
	memcpy(&ORFS_I(inode)->fh, data, sizeof(struct orfs_fh));
	return 0;
}

/**
 * orfs_iget() - the inode of a handle
 * @sb: the mount
 * @fh: the server's handle
 * @attr: its attributes as the server sent them
 *
 * Return: the inode (a reference), or an ERR_PTR(): -EIO for attributes
 * that cannot be, -ESTALE when a known handle changed type, -ENOMEM.
 */
struct inode *orfs_iget(struct super_block *sb, const struct orfs_fh *fh,
			const struct orfs_attr *attr)
{
	u32 mode = le32_to_cpu(attr->mode);
	struct inode *inode;

	if (orfs_check_attr(attr))
		return ERR_PTR(-EIO);
	inode = iget5_locked(sb, (unsigned long)le64_to_cpu(attr->ino), orfs_test, orfs_set,
			     (void *)fh);
	if (!inode)
		return ERR_PTR(-ENOMEM);
	if (!(inode->i_state & I_NEW)) {
		if ((inode->i_mode ^ mode) & S_IFMT) {
			iput(inode);
			return ERR_PTR(-ESTALE);
		}
		orfs_refresh(inode, attr);
		return inode;
	}
	inode->i_ino = le64_to_cpu(attr->ino);
	inode->i_mode = mode & S_IFMT;
	ORFS_I(inode)->change = le64_to_cpu(attr->change);
	ORFS_I(inode)->attr_timeo = orfs_timeo_min(inode);
	switch (mode & S_IFMT) {
	case S_IFREG:
		inode->i_op = &orfs_file_iops;
		inode->i_fop = &orfs_file_fops;
		inode->i_mapping->a_ops = &orfs_aops;
		orfs_set_folio_size(inode);
		break;
	case S_IFDIR:
		inode->i_op = &orfs_dir_iops;
		inode->i_fop = &orfs_dir_fops;
		break;
	case S_IFLNK:
		inode->i_op = &orfs_symlink_iops;
		inode_nohighmem(inode);
		break;
	default:
		inode->i_op = &orfs_special_iops;
		init_special_inode(inode, mode & S_IFMT, orfs_decode_rdev(le64_to_cpu(attr->rdev)));
		break;
	}
	__orfs_refresh(inode, attr, true);
	unlock_new_inode(inode);
	return inode;
}

/**
 * orfs_revalidate() - make the cached attributes fresh enough
 * @inode: the inode
 * @force: ask the server whatever the timeouts say
 *
 * Return: 0, or the call's error (-ESTALE: the file is gone).
 */
int orfs_revalidate(struct inode *inode, bool force)
{
	struct orfs_sb *sbi = ORFS_SB(inode->i_sb);
	struct orfs_inode *ci = ORFS_I(inode);
	struct orfs_attr attr;
	struct orfs_fhop_req *r;
	struct orfs_msg m;
	int ret;

	if (!force && orfs_attr_fresh(inode))
		return 0;
	ret = orfs_msg_init(&m, sbi, sizeof(struct orfs_req) + sizeof(*r));
	if (ret)
		return ret;
	r = orfs_msg_put(&m, NULL, sizeof(*r));
	if (r)
		r->fh = ci->fh;
	ret = orfs_rpc(sbi, ORFS_OP_GETATTR, &m, &attr, sizeof(attr), sizeof(attr), NULL, NULL,
		       KNET_DIR_NONE);
	orfs_msg_free(&m);
	if (!ret)
		ret = orfs_check_attr(&attr);
	if (!ret && ((le32_to_cpu(attr.mode) ^ inode->i_mode) & S_IFMT))
		ret = -ESTALE;
	if (!ret)
		orfs_refresh(inode, &attr);
	return ret;
}

/**
 * orfs_settle() - nothing of a file left dirty or kept for a COMMIT
 * @inode: a regular file
 * @start: the first byte whose dirty pages go to the server
 * @end: the last one
 *
 * Before the server moves or replaces bytes of the file on its own
 * (collapse, insert, copy or clone into it), or before our cache of it is
 * dropped: the dirty pages of the range are written back, then everything
 * written back unstable is committed (sent again first where the server
 * lost it). No folio is then kept for a COMMIT that could send its bytes
 * again to where they no longer belong after the server's change, every
 * cached folio may leave the page cache, and a size the server answers is
 * the file's (orfs_refresh() keeps ours while folios are held).
 *
 * Context: process context, no folio of the file locked; may sleep.
 * Return: 0, or the error of the write-back or the COMMIT.
 */
static int orfs_settle(struct inode *inode, loff_t start, loff_t end)
{
	int ret = filemap_write_and_wait_range(inode->i_mapping, start, end);

	return ret ?: orfs_commit(inode, true, false);
}

/*
 * Drop the pages of regular file INODE that another client's change left.
 *
 * When attributes from the server show that another client changed the
 * file, the pages nobody uses are dropped at once (orfs_refresh()); those
 * mapped, dirty, locked or under write-back then stay. They are dropped
 * here, on the way into a read, an open or a new mapping: our dirty pages
 * are written first, mapped ones unmapped, so that the next access, by
 * read() or through a mapping, reads the server's copy. A page dirtied
 * again meanwhile (a store through a mapping) stays: it holds our newer
 * data, which write-back sends.
 *
 * Process context without page locks; returns 0, -EINTR when killed while
 * another caller drops them, or the write-back's error.
 */
static int orfs_revalidate_mapping(struct inode *inode)
{
	struct orfs_inode *ci = ORFS_I(inode);
	int gen = atomic_read(&ci->stale_gen);
	int ret;

	/* Pairs with the release below: the drop is done once this is seen. */
	if (gen == smp_load_acquire(&ci->dropped_gen))
		return 0;
	/* Callers that come meanwhile wait: they must not read what is being dropped. */
	if (mutex_lock_killable(&ci->drop_mutex))
		return -EINTR;
	gen = atomic_read(&ci->stale_gen);
	ret = 0;
	if (gen == ci->dropped_gen)
		goto out;
	/* Our unstable pages are committed (sent again if lost) before the drop. */
	ret = orfs_settle(inode, 0, LLONG_MAX);
	if (ret)
		goto out;
	/* -EBUSY: a page dirtied again, which stays (above). */
	invalidate_inode_pages2(inode->i_mapping);
	/* After the drop: a caller that sees GEN reads no page it dropped. */
	smp_store_release(&ci->dropped_gen, gen);
out:
	mutex_unlock(&ci->drop_mutex);
	return ret;
}

/**
 * orfs_revalidate_file() - before a regular file is opened, read or mapped
 * @inode: a regular file
 * @force: ask the server for attributes whatever the timeouts say
 *
 * Fresh enough attributes (orfs_revalidate()), then no cached page that
 * another client's change left (orfs_revalidate_mapping()).
 *
 * Context: process context without page locks; may sleep.
 * Return: 0, or the first error of the two.
 */
int orfs_revalidate_file(struct inode *inode, bool force)
{
	int ret = orfs_revalidate(inode, force);

	return ret ?: orfs_revalidate_mapping(inode);
}

int orfs_getattr(orfs_idmap_t *map, const struct path *path, struct kstat *st,
		 u32 mask, unsigned int flags)
{
	struct inode *inode = d_inode(path->dentry);
	int ret;

	if ((flags & AT_STATX_SYNC_TYPE) != AT_STATX_DONT_SYNC) {
		/* Sizes and times of data still in our cache are the server's after a flush. */
		if (S_ISREG(inode->i_mode) && (mask & (STATX_SIZE | STATX_MTIME | STATX_CTIME |
						       STATX_BLOCKS))) {
			ret = filemap_write_and_wait(inode->i_mapping);
			if (ret)
				return ret;
		}
		ret = orfs_revalidate(inode, (flags & AT_STATX_SYNC_TYPE) == AT_STATX_FORCE_SYNC);
		if (ret)
			return ret;
	}
	orfs_fillattr(map, mask, inode, st);
	if (S_ISREG(inode->i_mode) && (mask & STATX_DIOALIGN)) {
		/* The server reaches any byte of the buffer: no alignment needed. */
		st->result_mask |= STATX_DIOALIGN;
		st->dio_mem_align = 1;
		st->dio_offset_align = 1;
	}
	return 0;
}

int orfs_setattr(orfs_idmap_t *map, struct dentry *dentry, struct iattr *ia)
{
	struct inode *inode = d_inode(dentry);
	struct orfs_sb *sbi = ORFS_SB(inode->i_sb);
	struct orfs_setattr_req *r;
	struct orfs_attr attr;
	struct orfs_msg m;
	umode_t killed = 0;
	u32 valid = 0;
	int ret;

	ret = setattr_prepare(map, dentry, ia);
	if (ret)
		return ret;
	/*
	 * The kernel's kill-suid at a write or truncate (ATTR_KILL_SUID or
	 * _SGID with the mode that drops the bits) is not sent as a chmod
	 * with the writer's credentials, which a writer that does not own the
	 * file may not do: the server's kernel clears the bits itself at that
	 * write or truncate, as it does for any writer (NFS does the same).
	 * This inode drops them now.
	 */
	if ((ia->ia_valid & (ATTR_KILL_SUID | ATTR_KILL_SGID)) && (ia->ia_valid & ATTR_MODE)) {
		killed = ia->ia_mode;
		ia->ia_valid &= ~ATTR_MODE;
	}
	if ((ia->ia_valid & ATTR_SIZE) && S_ISREG(inode->i_mode)) {
		ret = filemap_write_and_wait(inode->i_mapping);
		if (ret)
			return ret;
	}
	ret = orfs_msg_init(&m, sbi, sizeof(struct orfs_req) + sizeof(*r));
	if (ret)
		return ret;
	r = orfs_msg_put(&m, NULL, sizeof(*r));
	if (!r)
		goto out;
	r->fh = ORFS_I(inode)->fh;
	if (ia->ia_valid & ATTR_MODE) {
		valid |= ORFS_SET_MODE;
		r->mode = cpu_to_le32(ia->ia_mode & S_IALLUGO);
	}
	if (ia->ia_valid & ATTR_UID) {
		valid |= ORFS_SET_UID;
		r->uid = cpu_to_le32(from_kuid(&init_user_ns, ia->ia_uid));
	}
	if (ia->ia_valid & ATTR_GID) {
		valid |= ORFS_SET_GID;
		r->gid = cpu_to_le32(from_kgid(&init_user_ns, ia->ia_gid));
	}
	if (ia->ia_valid & ATTR_SIZE) {
		valid |= ORFS_SET_SIZE;
		r->size = cpu_to_le64(ia->ia_size);
	}
	if (ia->ia_valid & ATTR_ATIME) {
		valid |= ia->ia_valid & ATTR_ATIME_SET ? ORFS_SET_ATIME : ORFS_SET_ATIME_NOW;
		r->atime.sec = cpu_to_le64(ia->ia_atime.tv_sec);
		r->atime.nsec = cpu_to_le32(ia->ia_atime.tv_nsec);
	}
	if (ia->ia_valid & ATTR_MTIME) {
		valid |= ia->ia_valid & ATTR_MTIME_SET ? ORFS_SET_MTIME : ORFS_SET_MTIME_NOW;
		r->mtime.sec = cpu_to_le64(ia->ia_mtime.tv_sec);
		r->mtime.nsec = cpu_to_le32(ia->ia_mtime.tv_nsec);
	}
	r->valid = cpu_to_le32(valid);
	if (!valid)
		goto killed;
	ret = orfs_rpc(sbi, ORFS_OP_SETATTR, &m, &attr, sizeof(attr), sizeof(attr), NULL, NULL,
		       KNET_DIR_NONE);
	/*
	 * A descriptor open for writing keeps its right when the mode no
	 * longer gives it (open(O_CREAT | O_RDWR, 0), then ftruncate()): ask
	 * again as such, which the server grants the file's owner. A server
	 * that does not know the flag refuses it: the first answer stands.
	 */
	if (ret == -EACCES && (valid & ORFS_SET_SIZE) && (ia->ia_valid & ATTR_FILE) &&
	    ia->ia_file && (ia->ia_file->f_mode & FMODE_WRITE)) {
		r->valid = cpu_to_le32(valid | ORFS_SET_SIZE_OPEN);
		ret = orfs_rpc(sbi, ORFS_OP_SETATTR, &m, &attr, sizeof(attr), sizeof(attr), NULL,
			       NULL, KNET_DIR_NONE);
		if (ret == -EINVAL)
			ret = -EACCES;
	}
	if (!ret)
		ret = orfs_check_attr(&attr);
	if (ret)
		goto out;
	if (ia->ia_valid & ATTR_SIZE) {
		if (S_ISREG(inode->i_mode))
			orfs_zero_past_eof(inode, i_size_read(inode), ia->ia_size);
		truncate_setsize(inode, ia->ia_size);
	}
	orfs_refresh_own(inode, &attr);
killed:
	if (killed) {
		spin_lock(&inode->i_lock);
		inode->i_mode &= ~(S_ISUID | S_ISGID) | killed;
		spin_unlock(&inode->i_lock);
	}
out:
	ret = ret ?: m.err;
	orfs_msg_free(&m);
	return ret;
}

/**
 * orfs_fallocate() - fallocate(2) of an ORFS file, done by the server
 * @file: the file, open for writing (vfs_fallocate() checked the mode's
 *	combination, the range and the file's type)
 * @mode: 0, FALLOC_FL_KEEP_SIZE, FALLOC_FL_UNSHARE_RANGE (with or without
 *	FALLOC_FL_KEEP_SIZE), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
 *	FALLOC_FL_ZERO_RANGE with or without FALLOC_FL_KEEP_SIZE,
 *	FALLOC_FL_COLLAPSE_RANGE or FALLOC_FL_INSERT_RANGE
 * @offset: the range's start
 * @len: its length
 *
 * Dirty pages go to the server first, so that the server's file is ours
 * when it changes it; before a collapse or an insert, what was written
 * back unstable is committed too (orfs_settle()). A hole or zeroed range
 * leaves our cache of it (and every mapping of it), a collapsed or
 * inserted range everything from its start: new faults wait on the
 * mapping's invalidate lock until the server has done it.
 *
 * Context: process context, may sleep.
 * Return: 0, -EOPNOTSUPP for other modes (or where the server's file
 * system lacks the mode), -EIO after a lost lock, or the server's error.
 */
long orfs_fallocate(struct file *file, int mode, loff_t offset, loff_t len)
{
	struct inode *inode = file_inode(file);
	struct address_space *mapping = inode->i_mapping;
	bool shift = mode & (FALLOC_FL_COLLAPSE_RANGE | FALLOC_FL_INSERT_RANGE);
	bool zeroes = shift || (mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE));
	struct orfs_fallocate_req r = {
		.fh = ORFS_I(inode)->fh,
		.offset = cpu_to_le64(offset),
		.length = cpu_to_le64(len),
	};
	struct orfs_attr attr;
	int ret;

	switch (mode) {
	case 0:
	case FALLOC_FL_KEEP_SIZE:
	case FALLOC_FL_UNSHARE_RANGE:
	case FALLOC_FL_UNSHARE_RANGE | FALLOC_FL_KEEP_SIZE:
	case FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE:
	case FALLOC_FL_ZERO_RANGE:
	case FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE:
	case FALLOC_FL_COLLAPSE_RANGE:
	case FALLOC_FL_INSERT_RANGE:
		break;
	default:
		return -EOPNOTSUPP;
	}
	r.mode = cpu_to_le32((mode & FALLOC_FL_KEEP_SIZE ? ORFS_FALLOC_KEEP_SIZE : 0) |
			     (mode & FALLOC_FL_PUNCH_HOLE ? ORFS_FALLOC_PUNCH_HOLE : 0) |
			     (mode & FALLOC_FL_ZERO_RANGE ? ORFS_FALLOC_ZERO_RANGE : 0) |
			     (mode & FALLOC_FL_COLLAPSE_RANGE ? ORFS_FALLOC_COLLAPSE_RANGE : 0) |
			     (mode & FALLOC_FL_INSERT_RANGE ? ORFS_FALLOC_INSERT_RANGE : 0) |
			     (mode & FALLOC_FL_UNSHARE_RANGE ? ORFS_FALLOC_UNSHARE_RANGE : 0));
	if (orfs_lock_lost(file))
		return -EIO;
	inode_lock(inode);
	if (zeroes)
		filemap_invalidate_lock(mapping);
	/*
	 * A shift moves bytes we may keep for a COMMIT, and a collapse makes
	 * the file shorter than ours: nothing may stay held (orfs_settle()).
	 */
	ret = shift ? orfs_settle(inode, 0, LLONG_MAX) : filemap_write_and_wait(mapping);
	if (ret)
		goto out;
	ret = orfs_call(ORFS_SB(inode->i_sb), ORFS_OP_FALLOCATE, &r, sizeof(r), &attr,
			sizeof(attr));
	if (!ret)
		ret = orfs_check_attr(&attr);
	if (ret)
		goto out;
	if (shift) {
		/*
		 * Everything from OFFSET on moved: what we cached of it is
		 * stale (written back above, nothing dirtied it since under
		 * the locks), edges included, not to be zeroed.
		 */
		if (invalidate_inode_pages2_range(mapping, offset >> PAGE_SHIFT, -1))
			atomic_inc(&ORFS_I(inode)->stale_gen);
	} else if (zeroes) {
		truncate_pagecache_range(inode, offset, offset + len - 1);
	}
	/* What a mapping stored past the end reads as zeros once the end moves. */
	if (!(mode & FALLOC_FL_KEEP_SIZE) && offset + len > i_size_read(inode))
		orfs_zero_past_eof(inode, i_size_read(inode), offset + len);
	orfs_refresh_own(inode, &attr);
out:
	if (zeroes)
		filemap_invalidate_unlock(mapping);
	inode_unlock(inode);
	return ret;
}

/**
 * orfs_copy_range() - copy_file_range(2) between two files of a mount, on the server
 * @in: the source, open for reading
 * @pos_in: where the copy starts in it
 * @out: the destination, open for writing, of the same mount
 * @pos_out: where the copy goes in it
 * @len: bytes to copy (vfs_copy_file_range() cut it at the source's end)
 *
 * The data does not cross the network: COPY requests of ORFS_COPY_MAX
 * bytes at most. Dirty pages of both ranges go to the server first, and
 * what the destination keeps for a COMMIT is committed (orfs_settle()); the
 * destination's range then leaves the page cache and every mapping, in
 * whole pages, page faults waiting on the mapping's invalidate lock until
 * the copy is done.
 *
 * Context: process context, may sleep.
 * Return: bytes copied (fewer than @len where the source ended, or a later
 * request failed), -EXDEV for another mount, -EOPNOTSUPP from a server
 * without COPY (the caller copies through the page cache then), or an
 * error.
 */
ssize_t orfs_copy_range(struct file *in, loff_t pos_in, struct file *out, loff_t pos_out,
			size_t len)
{
	struct inode *src = file_inode(in), *dst = file_inode(out);
	struct orfs_sb *sbi = ORFS_SB(dst->i_sb);
	struct orfs_copy_req r = {
		.src = ORFS_I(src)->fh,
		.dst = ORFS_I(dst)->fh,
	};
	struct orfs_copy_rep *rep;
	size_t done = 0;
	u64 n, want;
	int ret;

	if (src->i_sb != dst->i_sb)
		return -EXDEV;
	if (orfs_lock_lost(out))
		return -EIO;
	rep = kmalloc(sizeof(*rep), GFP_KERNEL);
	if (!rep)
		return -ENOMEM;
	ret = filemap_write_and_wait_range(in->f_mapping, pos_in, pos_in + len - 1);
	if (ret)
		goto free;
	inode_lock(dst);
	filemap_invalidate_lock(dst->i_mapping);
	ret = orfs_settle(dst, pos_out, pos_out + len - 1);
	while (!ret && done < len) {
		want = min_t(u64, len - done, ORFS_COPY_MAX);
		r.src_offset = cpu_to_le64(pos_in + done);
		r.dst_offset = cpu_to_le64(pos_out + done);
		r.length = cpu_to_le64(want);
		ret = orfs_call(sbi, ORFS_OP_COPY, &r, sizeof(r), rep, sizeof(*rep));
		if (!ret)
			ret = orfs_check_attr(&rep->attr);
		if (ret)
			break;
		n = le64_to_cpu(rep->copied);
		if (n > want) {
			pr_warn_ratelimited("%pISc: COPY of %llu bytes answered %llu copied\n",
					    &sbi->addr, want, n);
			ret = -EIO;
			break;
		}
		/*
		 * Our own change; what we cached of the range is stale, the
		 * pages at its edges too (not to be zeroed, as for a hole). A
		 * page dirtied again meanwhile stays until the next open.
		 */
		if (n) {
			if (invalidate_inode_pages2_range(dst->i_mapping,
							  (pos_out + done) >> PAGE_SHIFT,
							  (pos_out + done + n - 1) >> PAGE_SHIFT))
				atomic_inc(&ORFS_I(dst)->stale_gen);
			if (pos_out + done + n > i_size_read(dst))
				orfs_zero_past_eof(dst, i_size_read(dst), pos_out + done + n);
		}
		orfs_refresh_own(dst, &rep->attr);
		done += n;
		if (n < want)
			break;	/* the source's end */
	}
	filemap_invalidate_unlock(dst->i_mapping);
	inode_unlock(dst);
free:
	kfree(rep);
	return done ? (ssize_t)done : ret;
}

/**
 * orfs_remap_range() - FICLONE, FICLONERANGE and FIDEDUPERANGE between files of a mount
 * @in: the source, open for reading
 * @pos_in: where the range starts in it
 * @out: the destination (for a dedupe, open for writing or its caller's)
 * @pos_out: where the range goes in it
 * @len: its length (0 for a clone: to the source's end)
 * @flags: REMAP_FILE_DEDUP for a dedupe; REMAP_FILE_CAN_SHORTEN allowed
 *
 * The server's file system shares the blocks (CLONE); ORFS passes what it
 * can do and its errors through, as NFSv4.2 does. Dirty pages of both
 * ranges go to the server first, and what the destination keeps for a
 * COMMIT is committed (orfs_settle()); the destination's range then
 * leaves the page cache and every mapping, page faults waiting on the
 * mapping's invalidate lock until the server is done.
 *
 * Context: process context, may sleep.
 * Return: bytes remapped, -EXDEV for another mount, -EOPNOTSUPP where the
 * server or its file system shares no blocks, -EBADE for a dedupe of
 * ranges that differ, or an error.
 */
loff_t orfs_remap_range(struct file *in, loff_t pos_in, struct file *out, loff_t pos_out,
			loff_t len, unsigned int flags)
{
	struct inode *src = file_inode(in), *dst = file_inode(out);
	struct orfs_sb *sbi = ORFS_SB(dst->i_sb);
	bool dedupe = flags & REMAP_FILE_DEDUP;
	loff_t end = len ? pos_out + len - 1 : LLONG_MAX;
	struct orfs_copy_req r = {
		.src = ORFS_I(src)->fh,
		.dst = ORFS_I(dst)->fh,
		.src_offset = cpu_to_le64(pos_in),
		.dst_offset = cpu_to_le64(pos_out),
		.length = cpu_to_le64(len),
		.flags = cpu_to_le32(dedupe ? ORFS_CLONE_DEDUPE : 0),
	};
	struct orfs_copy_rep *rep;
	u64 n = 0;
	int ret;

	if (flags & ~(REMAP_FILE_DEDUP | REMAP_FILE_CAN_SHORTEN))
		return -EINVAL;
	if (src->i_sb != dst->i_sb)
		return -EXDEV;
	if (orfs_lock_lost(out))
		return -EIO;
	rep = kmalloc(sizeof(*rep), GFP_KERNEL);
	if (!rep)
		return -ENOMEM;
	ret = filemap_write_and_wait_range(in->f_mapping, pos_in,
					   len ? pos_in + len - 1 : LLONG_MAX);
	if (ret)
		goto free;
	inode_lock(dst);
	filemap_invalidate_lock(dst->i_mapping);
	ret = orfs_settle(dst, pos_out, end);
	if (!ret)
		ret = orfs_call(sbi, ORFS_OP_CLONE, &r, sizeof(r), rep, sizeof(*rep));
	if (!ret)
		ret = orfs_check_attr(&rep->attr);
	if (!ret) {
		n = le64_to_cpu(rep->copied);
		if ((len && n > len) || n > LLONG_MAX) {
			pr_warn_ratelimited("%pISc: CLONE of %lld bytes answered %llu\n",
					    &sbi->addr, len, n);
			ret = -EIO;
		}
	}
	if (!ret) {
		/* Our own change: the range's cached pages are stale, edges too. */
		if (!dedupe && invalidate_inode_pages2_range(dst->i_mapping, pos_out >> PAGE_SHIFT,
							     end >> PAGE_SHIFT))
			atomic_inc(&ORFS_I(dst)->stale_gen);
		if (le64_to_cpu(rep->attr.size) > i_size_read(dst))
			orfs_zero_past_eof(dst, i_size_read(dst), le64_to_cpu(rep->attr.size));
		orfs_refresh_own(dst, &rep->attr);
	}
	filemap_invalidate_unlock(dst->i_mapping);
	inode_unlock(dst);
free:
	kfree(rep);
	return ret ? ret : (loff_t)n;
}

/* ---- symlinks --------------------------------------------------------- */

static const char *orfs_get_link(struct dentry *dentry, struct inode *inode,
				 struct delayed_call *done)
{
	struct orfs_sb *sbi = ORFS_SB(inode->i_sb);
	struct orfs_fhop_req *r;
	struct orfs_msg m;
	const char *t;
	char *reply, *link;
	u32 len, tlen;
	__le32 l;
	int ret;

	if (!dentry)
		return ERR_PTR(-ECHILD);
	reply = kmalloc(ORFS_PATH_MAX + 8, GFP_KERNEL);
	if (!reply)
		return ERR_PTR(-ENOMEM);
	ret = orfs_msg_init(&m, sbi, sizeof(struct orfs_req) + sizeof(*r));
	if (ret)
		goto out;
	r = orfs_msg_put(&m, NULL, sizeof(*r));
	if (r)
		r->fh = ORFS_I(inode)->fh;
	ret = orfs_rpc(sbi, ORFS_OP_READLINK, &m, reply, sizeof(l), ORFS_PATH_MAX + 8, &len,
		       NULL, KNET_DIR_NONE);
	orfs_msg_free(&m);
	if (ret)
		goto out;
	memcpy(&l, reply, sizeof(l));
	tlen = le32_to_cpu(l);
	t = reply + sizeof(l);
	if (!tlen || tlen > ORFS_PATH_MAX || sizeof(l) + tlen > len || memchr(t, 0, tlen)) {
		ret = -EIO;
		goto out;
	}
	link = kmemdup_nul(t, tlen, GFP_KERNEL);
	kfree(reply);
	if (!link)
		return ERR_PTR(-ENOMEM);
	set_delayed_call(done, kfree_link, link);
	return link;
out:
	kfree(reply);
	return ERR_PTR(ret);
}

/* ---- xattrs ----------------------------------------------------------- */

/**
 * orfs_xattr_fetch() - GETXATTR or LISTXATTR
 * @inode: the file
 * @name: the attribute's full name, or NULL for the list of names
 * @buf: where the value (or the names) go when @size is not 0
 * @size: room at @buf, or 0 to ask the size
 *
 * Return: the size of the value (or of the names), or a negative errno.
 */
ssize_t orfs_xattr_fetch(struct inode *inode, const char *name, void *buf, size_t size)
{
	struct orfs_sb *sbi = ORFS_SB(inode->i_sb);
	u32 room = min_t(size_t, size, ORFS_XATTR_REPLY_MAX), len, vlen;
	size_t nlen = name ? strlen(name) : 0;
	struct orfs_xattr_rep *rep;
	struct orfs_fhop_req *r;
	struct orfs_msg m;
	ssize_t ret;

	rep = kmalloc(sizeof(*rep) + room, GFP_KERNEL);
	if (!rep)
		return -ENOMEM;
	ret = orfs_msg_init(&m, sbi, sizeof(struct orfs_req) + sizeof(*r) + 2 + nlen);
	if (ret)
		goto out;
	r = orfs_msg_put(&m, NULL, sizeof(*r));
	if (r) {
		r->fh = ORFS_I(inode)->fh;
		r->size = cpu_to_le32(size);
	}
	if (name)
		orfs_msg_name(&m, name, nlen);
	ret = orfs_rpc(sbi, name ? ORFS_OP_GETXATTR : ORFS_OP_LISTXATTR, &m, rep, sizeof(*rep),
		       sizeof(*rep) + room, &len, NULL, KNET_DIR_NONE);
	orfs_msg_free(&m);
	if (ret)
		goto out;
	vlen = le32_to_cpu(rep->size);
	ret = -EIO;
	if (vlen > (name ? XATTR_SIZE_MAX : XATTR_LIST_MAX))
		goto out;
	if (size) {
		if (vlen > size) {
			ret = -ERANGE;
			goto out;
		}
		if (sizeof(*rep) + vlen > len)
			goto out;
		memcpy(buf, rep + 1, vlen);
	}
	ret = vlen;
out:
	kfree(rep);
	return ret;
}

static int orfs_xattr_get(const struct xattr_handler *h, struct dentry *dentry,
			  struct inode *inode, const char *name, void *buf, size_t size)
{
	return orfs_xattr_fetch(inode, xattr_full_name(h, name), buf, size);
}

/**
 * orfs_xattr_store() - SETXATTR, or REMOVEXATTR when @value is NULL
 * @inode: the file
 * @full: the attribute's full name
 * @value: its value, or NULL to remove it
 * @size: bytes at @value
 * @flags: XATTR_CREATE or XATTR_REPLACE, or 0
 *
 * Return: 0 or a negative errno.
 */
int orfs_xattr_store(struct inode *inode, const char *full, const void *value, size_t size,
		     int flags)
{
	struct orfs_sb *sbi = ORFS_SB(inode->i_sb);
	struct orfs_fhop_req *r;
	struct orfs_msg m;
	int ret;

	ret = orfs_msg_init(&m, sbi, sizeof(struct orfs_req) + sizeof(*r) + 2 + strlen(full) +
			    4 + size);
	if (ret)
		return ret;
	r = orfs_msg_put(&m, NULL, sizeof(*r));
	if (r) {
		r->fh = ORFS_I(inode)->fh;
		r->flags = cpu_to_le32(flags & (XATTR_CREATE | XATTR_REPLACE));
	}
	orfs_msg_name(&m, full, strlen(full));
	if (value)
		orfs_msg_blob(&m, value, size);
	ret = orfs_rpc(sbi, value ? ORFS_OP_SETXATTR : ORFS_OP_REMOVEXATTR, &m, NULL, 0, 0, NULL,
		       NULL, KNET_DIR_NONE);
	orfs_msg_free(&m);
	/* The ctime moved: fetch the attributes again next time. */
	if (!ret)
		orfs_attr_expire(inode);
	return ret;
}

static int orfs_xattr_set(const struct xattr_handler *h, orfs_idmap_t *map,
			  struct dentry *dentry, struct inode *inode, const char *name,
			  const void *value, size_t size, int flags)
{
	return orfs_xattr_store(inode, xattr_full_name(h, name), value, size, flags);
}

/**
 * orfs_listxattr() - the names of a file's extended attributes
 * @dentry: the file
 * @list: where the NUL-separated names go, or NULL to ask the size
 * @size: room at @list
 *
 * Return: bytes of names, or a negative errno.
 */
ssize_t orfs_listxattr(struct dentry *dentry, char *list, size_t size)
{
	ssize_t n = orfs_xattr_fetch(d_inode(dentry), NULL, list, size);

	/* The names are NUL-terminated, the last one too. */
	if (n > 0 && size && list[n - 1])
		return -EIO;
	return n;
}

static const struct xattr_handler orfs_xattr_user = {
	.prefix	= XATTR_USER_PREFIX,
	.get	= orfs_xattr_get,
	.set	= orfs_xattr_set,
};

static const struct xattr_handler orfs_xattr_trusted = {
	.prefix	= XATTR_TRUSTED_PREFIX,
	.get	= orfs_xattr_get,
	.set	= orfs_xattr_set,
};

const struct xattr_handler *orfs_xattr_handlers[] = {
	&orfs_xattr_user,
	&orfs_xattr_trusted,
#ifndef ORFS_HAVE_GET_INODE_ACL
	/* Before 6.2, system.posix_acl_* go through handlers to ->get_acl(). */
	&posix_acl_access_xattr_handler,
	&posix_acl_default_xattr_handler,
#endif
	NULL,
};

const struct inode_operations orfs_file_iops = {
	.getattr	= orfs_getattr,
	.setattr	= orfs_setattr,
	.listxattr	= orfs_listxattr,
	ORFS_ACL_IOPS
};

const struct inode_operations orfs_symlink_iops = {
	.get_link	= orfs_get_link,
	.getattr	= orfs_getattr,
	.setattr	= orfs_setattr,
	.listxattr	= orfs_listxattr,
};

const struct inode_operations orfs_special_iops = {
	.getattr	= orfs_getattr,
	.setattr	= orfs_setattr,
	.listxattr	= orfs_listxattr,
	ORFS_ACL_IOPS
};

// SPDX-License-Identifier: GPL-2.0-only
/*
 * POSIX ACLs: the server's system.posix_acl_access and _default extended
 * attributes, in the kernel's xattr form with the server's ids (the
 * initial namespace's, as for every id ORFS carries). The server's kernel
 * enforces them, updates the mode with an access ACL and gives new files
 * their directory's default ACL; the client caches them for its own
 * permission checks, as it caches attributes, and forgets them when a
 * refresh shows a change of metadata alone (__orfs_refresh()).
 */
#include <linux/fs.h>
#include <linux/posix_acl.h>
#include <linux/posix_acl_xattr.h>
#include <linux/slab.h>
#include <linux/xattr.h>

#include "orfs.h"

static const char *orfs_acl_name(int type)
{
	return type == ACL_TYPE_ACCESS ? XATTR_NAME_POSIX_ACL_ACCESS : XATTR_NAME_POSIX_ACL_DEFAULT;
}

/* INODE's ACL of TYPE from the server: NULL for none, or an error pointer. */
static struct posix_acl *orfs_acl_fetch(struct inode *inode, int type)
{
	const char *name = orfs_acl_name(type);
	struct posix_acl *acl;
	ssize_t n;
	void *buf;

	if (type == ACL_TYPE_DEFAULT && !S_ISDIR(inode->i_mode))
		return NULL;
	n = orfs_xattr_fetch(inode, name, NULL, 0);
	/* None, or an export whose file system has no ACLs. */
	if (n == -ENODATA || n == -EOPNOTSUPP || !n)
		return NULL;
	if (n < 0)
		return ERR_PTR(n);
	buf = kmalloc(n, GFP_KERNEL);
	if (!buf)
		return ERR_PTR(-ENOMEM);
	n = orfs_xattr_fetch(inode, name, buf, n);
	if (n == -ENODATA) {
		acl = NULL;		/* removed meanwhile */
	} else if (n < 0) {
		acl = ERR_PTR(n == -ERANGE ? -EAGAIN : n);	/* grew meanwhile */
	} else {
		acl = posix_acl_from_xattr(&init_user_ns, buf, n);
		/* A server that sends what no ACL is gets no trust. */
		if (!IS_ERR_OR_NULL(acl) && posix_acl_valid(&init_user_ns, acl)) {
			posix_acl_release(acl);
			acl = ERR_PTR(-EIO);
		} else if (IS_ERR(acl)) {
			acl = ERR_PTR(-EIO);
		}
	}
	kfree(buf);
	return acl;
}

/* Set (or, for NULL, remove) INODE's ACL of TYPE on the server. */
static int orfs_acl_store(struct inode *inode, struct posix_acl *acl, int type)
{
	const char *name = orfs_acl_name(type);
	size_t size = 0;
	void *buf = NULL;
	int ret;

	if (type == ACL_TYPE_DEFAULT && !S_ISDIR(inode->i_mode))
		return acl ? -EACCES : 0;
	if (acl) {
		size = posix_acl_xattr_size(acl->a_count);
		buf = kmalloc(size, GFP_KERNEL);
		if (!buf)
			return -ENOMEM;
		ret = posix_acl_to_xattr(&init_user_ns, acl, buf, size);
		if (ret < 0)
			goto out;
	}
	ret = orfs_xattr_store(inode, name, buf, size, 0);
	if (ret == -ENODATA && !acl)
		ret = 0;	/* there was none to remove */
	if (!ret)
		set_cached_acl(inode, type, acl);
out:
	kfree(buf);
	return ret;
}

#ifdef ORFS_HAVE_GET_INODE_ACL
/**
 * orfs_get_inode_acl() - an inode's ACL for the permission checks
 * @inode: the inode
 * @type: ACL_TYPE_ACCESS or ACL_TYPE_DEFAULT
 * @rcu: under an RCU path walk, which must not sleep
 *
 * The VFS caches what this returns until orfs_refresh() forgets it.
 *
 * Return: the ACL, NULL for none, ERR_PTR(-ECHILD) under RCU (the walk
 * goes on with references), or another error pointer.
 */
struct posix_acl *orfs_get_inode_acl(struct inode *inode, int type, bool rcu)
{
	if (rcu)
		return ERR_PTR(-ECHILD);
	return orfs_acl_fetch(inode, type);
}

/**
 * orfs_get_acl() - a file's ACL for getxattr(2) of system.posix_acl_*
 * @map: the mount's idmap (ids go to the caller's view in the VFS)
 * @dentry: the file
 * @type: ACL_TYPE_ACCESS or ACL_TYPE_DEFAULT
 *
 * Return: the ACL, NULL for none, or an error pointer.
 */
struct posix_acl *orfs_get_acl(struct mnt_idmap *map, struct dentry *dentry, int type)
{
	return orfs_acl_fetch(d_inode(dentry), type);
}

/**
 * orfs_set_acl() - set or remove a file's ACL on the server
 * @map: the mount's idmap
 * @dentry: the file
 * @acl: the ACL (checked by the VFS), or NULL to remove it
 * @type: ACL_TYPE_ACCESS or ACL_TYPE_DEFAULT
 *
 * The server's kernel checks the caller's right (owner or CAP_FOWNER)
 * again and moves the mode with an access ACL; the attributes are fetched
 * again at the next look.
 *
 * Return: 0 or a negative errno.
 */
int orfs_set_acl(struct mnt_idmap *map, struct dentry *dentry, struct posix_acl *acl, int type)
{
	return orfs_acl_store(d_inode(dentry), acl, type);
}
#else
/**
 * orfs_get_acl() - an inode's ACL, for the permission checks and getxattr(2)
 * @inode: the inode
 * @type: ACL_TYPE_ACCESS or ACL_TYPE_DEFAULT
 * @rcu: under an RCU path walk, which must not sleep
 *
 * Return: the ACL, NULL for none, ERR_PTR(-ECHILD) under RCU, or another
 * error pointer.
 */
struct posix_acl *orfs_get_acl(struct inode *inode, int type, bool rcu)
{
	if (rcu)
		return ERR_PTR(-ECHILD);
	return orfs_acl_fetch(inode, type);
}

/**
 * orfs_set_acl() - set or remove an inode's ACL on the server
 * @ns: the mount's user namespace
 * @inode: the inode
 * @acl: the ACL (checked by the VFS), or NULL to remove it
 * @type: ACL_TYPE_ACCESS or ACL_TYPE_DEFAULT
 *
 * Return: 0 or a negative errno.
 */
int orfs_set_acl(struct user_namespace *ns, struct inode *inode, struct posix_acl *acl,
		 int type)
{
	return orfs_acl_store(inode, acl, type);
}
#endif

/**
 * orfs_acl_mode() - the mode a new file of DIR is made with
 * @dir: the directory
 * @mode: the mode asked, to be adjusted
 *
 * With ACLs the VFS leaves the umask to the file system: it applies where
 * DIR has no default ACL; where it has one, the server's kernel derives
 * the new file's ACL from it and the mode asked, as locally.
 *
 * Return: 0 or a negative errno (DIR's default ACL could not be read).
 */
int orfs_acl_mode(struct inode *dir, umode_t *mode)
{
	struct posix_acl *dacl, *acl;
	int ret;

	ret = posix_acl_create(dir, mode, &dacl, &acl);
	if (ret)
		return ret;
	posix_acl_release(dacl);
	posix_acl_release(acl);
	return 0;
}

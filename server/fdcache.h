/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Open files of the file service, kept for the next READ or WRITE of the
 * same file with the same open flags by the same credentials, so that a
 * data request skips open_by_handle_at(), the credential switch and the
 * reopen, and can run on a progress thread (which never switches
 * credentials). The kernel checked the caller's permission when the file
 * was opened with its credentials; an entry is used again only while
 *   - it is younger than FDC_SECONDS,
 *   - the file's mode, owner and group are those it was opened with and it
 *     still has a name (fstat at each use),
 *   - no metadata operation of this server changed the export since
 *     (attributes, xattrs and so ACLs, names: fdc_forget()).
 * Progress thread only: no lock. Requests using an entry hold a reference;
 * its descriptor is closed when it is dropped and unused.
 *
 * It also keeps directories opened O_PATH by root (flags O_PATH, no
 * credentials in the key), so that the next name operation in the same
 * directory skips open_by_handle_at(). Such a descriptor carries no
 * permission: every call made relative to it is checked against its
 * caller's credentials. The same age, attribute and name checks apply (a
 * removed directory is not served); the export's metadata changes do not
 * forget them.
 */
#ifndef ORFS_SERVER_FDCACHE_H
#define ORFS_SERVER_FDCACHE_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "orfs/uapi/orfs_proto.h"

#define FDC_ENTRIES	64
#define FDC_SECONDS	2

/* What an entry is for; compared whole, so built zeroed by fdc_key(). */
struct fdc_key {
	const void	*owner;		/* the export */
	struct orfs_fh	fh;
	int32_t		flags;		/* open flags */
	uint32_t	uid, gid, ngroups;
	uint32_t	groups[ORFS_MAX_GROUPS];
};

struct fdcache;

struct fdc_entry {
	struct fdcache	*fc;		/* the cache it belongs to */
	struct fdc_key	key;
	int		fd;		/* -1: a free slot */
	int		refs;		/* requests using fd */
	int		dead;		/* not to be found again; closed when unused */
	time_t		born;
	uint64_t	used;		/* LRU clock */
	mode_t		mode;		/* at open */
	uid_t		uid;
	gid_t		gid;
};

/* Shared by the progress threads: every function takes the lock. */
struct fdcache {
	pthread_mutex_t		lock;
	struct fdc_entry	e[FDC_ENTRIES];
	uint64_t		clock;
	unsigned long		hits, dir_hits, misses;
};

void fdc_init(struct fdcache *fc);

/* Build K for OWNER's file FH opened with FLAGS by the credentials given. */
void fdc_key(struct fdc_key *k, const void *owner, const struct orfs_fh *fh, int flags,
	     uint32_t uid, uint32_t gid, uint32_t ngroups, const uint32_t *groups);

/* The entry for K, with a reference, or NULL. NOW is CLOCK_MONOTONIC seconds. */
struct fdc_entry *fdc_get(struct fdcache *fc, const struct fdc_key *k, time_t now);

/*
 * Keep FD (opened for K) in the cache: returns its entry, with a reference,
 * which now owns FD; or NULL (every slot in use, or FD not a regular file,
 * or for O_PATH not a directory), and FD stays the caller's.
 */
struct fdc_entry *fdc_add(struct fdcache *fc, const struct fdc_key *k, int fd, time_t now);

/* Drop a reference from fdc_get() or fdc_add(). */
void fdc_put(struct fdc_entry *e);

/* Forget every entry of OWNER (NULL: all of them); with KEEP_DIRS, not its directories. */
void fdc_forget(struct fdcache *fc, const void *owner, int keep_dirs);

#endif /* ORFS_SERVER_FDCACHE_H */

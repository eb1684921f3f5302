// SPDX-License-Identifier: GPL-2.0-only
/*
 * The file service's cache of open files (see fdcache.h).
 */
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/fdcache.h"

void fdc_init(struct fdcache *fc)
{
	int i;

	memset(fc, 0, sizeof(*fc));
	pthread_mutex_init(&fc->lock, NULL);
	for (i = 0; i < FDC_ENTRIES; i++) {
		fc->e[i].fc = fc;
		fc->e[i].fd = -1;
	}
}

void fdc_key(struct fdc_key *k, const void *owner, const struct orfs_fh *fh, int flags,
	     uint32_t uid, uint32_t gid, uint32_t ngroups, const uint32_t *groups)
{
	memset(k, 0, sizeof(*k));
	k->owner = owner;
	k->fh = *fh;
	k->flags = flags;
	k->uid = uid;
	k->gid = gid;
	k->ngroups = ngroups < ORFS_MAX_GROUPS ? ngroups : ORFS_MAX_GROUPS;
	memcpy(k->groups, groups, k->ngroups * sizeof(*groups));
}

static void entry_close(struct fdc_entry *e)
{
	close(e->fd);
	e->fd = -1;
	e->dead = 0;
}

/* E is not to be used again: close it now, or when its last user is done. */
static void entry_kill(struct fdc_entry *e)
{
	e->dead = 1;
	if (!e->refs)
		entry_close(e);
}

struct fdc_entry *fdc_get(struct fdcache *fc, const struct fdc_key *k, time_t now)
{
	struct fdc_entry *found = NULL;
	struct stat st;
	int i;

	pthread_mutex_lock(&fc->lock);
	for (i = 0; i < FDC_ENTRIES; i++) {
		struct fdc_entry *e = &fc->e[i];

		if (e->fd < 0 || e->dead || memcmp(&e->key, k, sizeof(*k)))
			continue;
		/* Too old, or the file's permissions or names changed: open again. */
		if (now - e->born >= FDC_SECONDS || fstat(e->fd, &st) || st.st_mode != e->mode ||
		    st.st_uid != e->uid || st.st_gid != e->gid || !st.st_nlink) {
			entry_kill(e);
			break;
		}
		e->refs++;
		e->used = ++fc->clock;
		if (k->flags == O_PATH)
			fc->dir_hits++;
		else
			fc->hits++;
		found = e;
		break;
	}
	if (!found)
		fc->misses++;
	pthread_mutex_unlock(&fc->lock);
	return found;
}

struct fdc_entry *fdc_add(struct fdcache *fc, const struct fdc_key *k, int fd, time_t now)
{
	struct fdc_entry *e, *victim = NULL;
	struct stat st;
	int i;

	if (fstat(fd, &st) || (k->flags == O_PATH ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)))
		return NULL;
	pthread_mutex_lock(&fc->lock);
	for (i = 0; i < FDC_ENTRIES; i++) {
		e = &fc->e[i];
		if (e->fd >= 0 && e->refs)
			continue;
		if (e->fd < 0) {
			victim = e;
			break;
		}
		if (!victim || e->used < victim->used)
			victim = e;
	}
	if (victim) {
		if (victim->fd >= 0)
			entry_close(victim);
		victim->key = *k;
		victim->fd = fd;
		victim->refs = 1;
		victim->dead = 0;
		victim->born = now;
		victim->used = ++fc->clock;
		victim->mode = st.st_mode;
		victim->uid = st.st_uid;
		victim->gid = st.st_gid;
	}
	pthread_mutex_unlock(&fc->lock);
	return victim;
}

void fdc_put(struct fdc_entry *e)
{
	struct fdcache *fc = e->fc;

	pthread_mutex_lock(&fc->lock);
	if (!--e->refs && e->dead)
		entry_close(e);
	pthread_mutex_unlock(&fc->lock);
}

void fdc_forget(struct fdcache *fc, const void *owner, int keep_dirs)
{
	int i;

	pthread_mutex_lock(&fc->lock);
	for (i = 0; i < FDC_ENTRIES; i++) {
		struct fdc_entry *e = &fc->e[i];

		if (e->fd >= 0 && !e->dead && (!owner || e->key.owner == owner) &&
		    !(keep_dirs && e->key.flags == O_PATH))
			entry_kill(e);
	}
	pthread_mutex_unlock(&fc->lock);
}

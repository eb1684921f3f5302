// SPDX-License-Identifier: GPL-2.0-only
/*
 * orfs-server: READs over TCP sent from the page cache, WRITEs received
 * into it.
 *
 * A READ's chunk is otherwise copied twice by the server: pread() from
 * the volume or file into the pool chunk, then writev() from the chunk
 * into the socket. Over TCP without a data digest it goes through a pipe
 * instead: a worker splices the file's range into the pipe (the pipe
 * takes references to the page-cache pages, and waits for the disk if it
 * must), and the progress thread splices the pipe into the socket after
 * the DATA PDU's header (tcp.c), which hands the same pages to TCP. No
 * byte is copied by the server. The chunk is still taken from the pool
 * and held until its data is in the socket: flow control is the same.
 *
 * A WRITE's chunk is likewise copied twice: recv() from the socket into
 * the chunk, pwrite() from the chunk into the store. On a store in memory,
 * over TCP without a data digest, the progress thread splices the DATA's
 * payload from the socket into a pipe (references to the socket's pages),
 * and the chunk's job splices the pipe into the file: one copy, into the
 * page cache. The chunk is still taken before its R2T is sent. Its pipe
 * must hold the payload whole: a peer whose segments are too small to fit
 * fills it first, and the bytes then go to the chunk (tcp.c).
 *
 * Each TCP progress thread keeps up to SRV_PIPES pipes, made when first
 * needed, each with room for a chunk (SPIPE_ROOMY). A pipe whose chunk
 * ended in an error may still hold bytes: it is closed, and made again
 * when needed.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "server/srv.h"

/* Pages of room a pipe needs beyond a chunk: an unaligned range and a tail of zeroes. */
#define SPIPE_SLACK	(4 * 4096)

void spipe_init(struct shard *sh)
{
	int i;

	for (i = 0; i < SRV_PIPES; i++)
		sh->pipes[i].r = sh->pipes[i].w = -1;
	sh->npipe_free = 0;
}

static void spipe_close(struct spipe *p)
{
	if (p->r >= 0)
		close(p->r);
	if (p->w >= 0)
		close(p->w);
	p->r = p->w = -1;
}

/*
 * A pipe holds a buffer for each piece TCP received, and a piece may take
 * two (one that crosses from one page of the socket's memory to the
 * next): a WRITE's chunk off a 1500-byte network comes in pieces of about
 * 1448 bytes, a 256 KiB chunk in about 180. So a pipe asks for this many
 * times a chunk's pages first (512 slots for 256 KiB chunks, past
 * /proc/sys/fs/pipe-max-size's default, which CAP_SYS_RESOURCE lifts),
 * then for half that (the limit's default), then for a chunk's. A slot
 * only refers to a page: a roomy pipe holds no more memory than its data.
 */
#define SPIPE_ROOMY	8

/* Make pipe P, with room for a chunk: 0, or -1 with the reason logged. */
static int spipe_make(struct shard *sh, struct spipe *p)
{
	int fds[2], want = (int)(sh->s->chunk_size + SPIPE_SLACK), got;
	int roomy = (int)(sh->s->chunk_size * SPIPE_ROOMY);

	/*
	 * With the process's own capabilities (CAP_SYS_RESOURCE lifts the
	 * per-user limits on pipe memory): a TCP progress thread may be in a
	 * caller's (fsvc_cred_progress()). A fixed thread answers EPERM.
	 */
	fsvc_cred_reset();
	if (pipe2(fds, O_CLOEXEC | O_NONBLOCK)) {
		srv_log("progress thread %d: pipe: %s: data over TCP is copied", sh->id,
			strerror(errno));
		return -1;
	}
	p->r = fds[0];
	p->w = fds[1];
	got = fcntl(p->w, F_SETPIPE_SZ, roomy);
	if (got < want)
		got = fcntl(p->w, F_SETPIPE_SZ, roomy / 2);
	if (got < want)
		got = fcntl(p->w, F_SETPIPE_SZ, want);
	if (got < want) {
		srv_log("progress thread %d: a pipe of %d bytes: %s: data over TCP is copied "
			"(see /proc/sys/fs/pipe-max-size)", sh->id, want,
			got < 0 ? strerror(errno) : "refused");
		spipe_close(p);
		return -1;
	}
	return 0;
}

/*
 * An empty pipe of SH for one chunk's data, or -1: every pipe is in use,
 * or pipes cannot be made (the data is then copied, as with digests).
 */
int spipe_get(struct shard *sh)
{
	int i;

	if (sh->npipe_free)
		return sh->pipe_free[--sh->npipe_free];
	if (sh->splice_off)
		return -1;
	for (i = 0; i < SRV_PIPES; i++) {
		if (sh->pipes[i].r >= 0)
			continue;
		if (spipe_make(sh, &sh->pipes[i])) {
			sh->splice_off = 1;
			return -1;
		}
		return i;
	}
	return -1;
}

/* Pipe I is free again; DIRTY: it may still hold bytes, so it goes. */
void spipe_put(struct shard *sh, int i, int dirty)
{
	if (i < 0)
		return;
	if (dirty) {
		spipe_close(&sh->pipes[i]);
		return;
	}
	sh->pipe_free[sh->npipe_free++] = i;
}

void spipe_close_all(struct shard *sh)
{
	int i;

	for (i = 0; i < SRV_PIPES; i++)
		spipe_close(&sh->pipes[i]);
	sh->npipe_free = 0;
}

/* Write N bytes of BUF, or of zeroes if BUF is NULL, into the pipe J's: 0 or -errno. */
static int pipe_fill(const struct job *j, const char *buf, uint32_t n)
{
	static const char zero[16384];

	while (n) {
		size_t k = buf ? n : n < sizeof(zero) ? n : sizeof(zero);
		ssize_t w = write(j->pipe, buf ? buf : zero, k);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return errno == EAGAIN ? -EIO : -errno;
		n -= (uint32_t)w;
		if (buf)
			buf += w;
	}
	return 0;
}

/* J's range read into its chunk, then written into its pipe: one copy. */
static int copy_read(struct job *j)
{
	int got = rw_full(j->fd, 0, j->buf, j->len, j->off), err;

	if (got < 0)
		return got;
	err = pipe_fill(j, j->buf, (uint32_t)got);
	if (!err)
		err = pipe_fill(j, NULL, j->len - (uint32_t)got);
	return err ? err : got;
}

/* N bytes from pipe FD (its read end) into BUF: 0, or -errno (-EIO: fewer there). */
int pipe_take(int fd, void *buf, uint32_t n)
{
	uint32_t got = 0;
	ssize_t r;

	while (got < n) {
		r = read(fd, (char *)buf + got, n - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 && errno != EAGAIN ? -errno : -EIO;
		got += (uint32_t)r;
	}
	return 0;
}

/* J's pipe read into its chunk, then written to its file: one copy more. */
static int copy_write(struct job *j)
{
	int err = pipe_take(j->pipe, j->buf, j->len);

	return err ? err : rw_full(j->fd, 1, j->buf, j->len, j->off);
}

/*
 * A worker's job (or the progress thread's, on a store in memory): J's
 * range of its file (fd, off, len) into its pipe. As a read into a chunk:
 * what lies past the end of the file is zeroes, and the result is the
 * bytes the file had. A file system that cannot splice is read into the
 * chunk (buf) and written into the pipe.
 */
int splice_read(struct job *j)
{
	loff_t off = (loff_t)j->off;
	uint32_t done = 0, got;
	int have = 0, err;

	/* A pipe is given back empty or closed: anything else is a bug here. */
	if (ioctl(j->pipe, FIONREAD, &have) || have) {
		srv_log("a READ's pipe is not empty (%d bytes): internal error", have);
		return -EIO;
	}
	while (done < j->len) {
		ssize_t n = splice(j->fd, &off, j->pipe, NULL, j->len - done, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EINVAL || errno == ENOSYS) && !done)
			return copy_read(j);
		if (n < 0)	/* EAGAIN: the pipe is full, it was made too small */
			return errno == EAGAIN ? -EIO : -errno;
		if (n == 0)
			break;
		done += (uint32_t)n;
	}
	got = done;
	err = pipe_fill(j, NULL, j->len - done);
	return err ? err : (int)got;
}

/*
 * A worker's job (or the progress thread's, for a small chunk on a store
 * in memory): the J->len bytes in J's pipe, which a WRITE's DATA brought
 * from the socket (tcp.c), into its file at J->off: the one copy they
 * take on the server, into the page cache. A file system that cannot
 * splice gets them read into the chunk (buf) and written from there.
 * Returns the bytes written, or -errno; the pipe is then given back dirty.
 */
int splice_write(struct job *j)
{
	loff_t off = (loff_t)j->off;
	uint32_t done = 0;
	ssize_t n;

	while (done < j->len) {
		n = splice(j->pipe, NULL, j->fd, &off, j->len - done, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EINVAL || errno == ENOSYS) && !done)
			return copy_write(j);
		if (n < 0 && errno != EAGAIN)
			return -errno;
		if (n <= 0) {
			/* The pipe does not block: empty, it says EAGAIN. */
			srv_log("a WRITE's pipe ran dry (%u of %u bytes): internal error", done,
				j->len);
			return -EIO;
		}
		done += (uint32_t)n;
	}
	return (int)done;
}

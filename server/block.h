/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Block service: volumes (a regular file or a block device) and the
 * decoding of MXBD requests against them.
 */
#ifndef ORFS_SERVER_BLOCK_H
#define ORFS_SERVER_BLOCK_H

#include <stddef.h>
#include <stdint.h>

#include "mxbd/uapi/mxbd_proto.h"

struct volume {
	int		fd;		/* buffered */
	int		fd_direct;	/* O_DIRECT, or -1 when the store refuses it */
	int		is_blockdev;
	int		read_only;
	uint64_t	size;
	uint32_t	lbs;		/* logical block size */
	uint32_t	pbs;		/* physical block size */
	uint32_t	max_io;
	int		no_nowait;	/* the store refuses RWF_NOWAIT: do not ask again */
	int		in_memory;	/* tmpfs or ramfs: I/O never waits for a device */
};

/* A decoded, validated block request. Offsets are within the message. */
struct block_req {
	uint16_t	opcode;
	uint32_t	tag;
	uint64_t	offset;
	uint32_t	length;
	uint32_t	flags;
	uint16_t	nsegs;
	uint32_t	seg_off;	/* where the knet_seg list starts */
	uint32_t	inl_off;	/* where inline data starts */
	uint32_t	inl_len;
};

/* Open PATH as a volume; returns 0 or -errno (message printed). */
int volume_open(struct volume *v, const char *path, int read_only, uint32_t max_io);
void volume_close(struct volume *v);

/*
 * Read the size of V (opened from PATH) again, for a volume grown or shrunk
 * under the server. Returns 1 when it changed, else 0 (a failure to read it
 * keeps the old size; the message is printed).
 */
int volume_refresh(struct volume *v, const char *path);

/*
 * Decode the block request MSG of LEN bytes, whose framing knet_hdr_check()
 * has accepted. INLINE_MAX is the inline size negotiated with this client.
 * Returns 0 with *out filled, or the errno value to answer with.
 */
int block_decode(const struct volume *v, const void *msg, uint32_t len,
		 uint32_t inline_max, struct block_req *out);

/* One piece of a request's data range in one client segment. */
struct seg_piece {
	uint32_t	local;		/* offset from the start of the range */
	uint64_t	raddr;		/* client address */
	uint32_t	rkey;
	uint32_t	len;
};

/*
 * Split the bytes [OFF, OFF + LEN) of decoded request BR (in message MSG)
 * into pieces, one per client segment they touch, calling FN for each
 * (FN may be NULL to count). Stops at the first non-zero FN result and
 * returns it; otherwise returns the number of pieces.
 */
int block_map_segments(const void *msg, const struct block_req *br, uint32_t off,
		       uint32_t len, int (*fn)(void *arg, const struct seg_piece *p), void *arg);

/* Fill the INFO reply body. */
void block_info(const struct volume *v, struct mxbd_info *info);

/*
 * The backend operations. Each returns 0 or -errno. BUF must be aligned to
 * the page size for the O_DIRECT path to be used.
 */
int block_read(const struct volume *v, void *buf, uint64_t off, uint32_t len);
int block_write(const struct volume *v, const void *buf, uint64_t off, uint32_t len, int fua);
int block_flush(const struct volume *v);
int block_discard(const struct volume *v, uint64_t off, uint64_t len);
int block_write_zeroes(const struct volume *v, uint64_t off, uint64_t len);

/*
 * A read or (not FUA) write done now if it needs no waiting: the data is
 * in the page cache, or the store takes it at once (RWF_NOWAIT). Returns 1
 * when done whole, 0 when it must go to a worker (it would block, came out
 * short, failed, or the store refuses RWF_NOWAIT, then never tried again).
 * A store in memory (tmpfs, ramfs) is read and written here whatever the
 * kernel says of RWF_NOWAIT (tmpfs takes it only since 6.6 or so).
 */
int block_try_now(struct volume *v, int write, void *buf, uint64_t off, uint32_t len);

/*
 * One read or write of LEN bytes at OFF on FD with RWF_NOWAIT, for the
 * volume and file paths alike. Returns 1 when done whole, else 0; a store
 * that refuses RWF_NOWAIT sets *REFUSED, and callers do not ask it again.
 */
int rw_nowait(int fd, int write, void *buf, uint64_t off, uint32_t len, int *refused);
/*
 * Read (WRITE 0) or write all LEN bytes of BUF at OFF of FD, a read short
 * only at the end of the file: the bytes moved, or -errno.
 */
int rw_full(int fd, int write, void *buf, uint32_t len, uint64_t off);

#endif /* ORFS_SERVER_BLOCK_H */

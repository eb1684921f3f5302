// SPDX-License-Identifier: GPL-2.0-only
/*
 * Block service: volumes and MXBD request decoding. Every value a client
 * sends is checked here before any byte of the volume is touched.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/uio.h>
#include <unistd.h>

#include "server/block.h"
#include "server/proto.h"

/* The size of V's file or device now, in whole logical blocks. */
static int volume_size(const struct volume *v, const char *path, uint64_t *size)
{
	struct stat st;

	if (v->is_blockdev) {
		if (ioctl(v->fd, BLKGETSIZE64, size)) {
			fprintf(stderr, "orfs-server: volume %s: size: %s\n", path, strerror(errno));
			return -errno;
		}
	} else {
		if (fstat(v->fd, &st)) {
			fprintf(stderr, "orfs-server: volume %s: fstat: %s\n", path, strerror(errno));
			return -errno;
		}
		*size = (uint64_t)st.st_size;
	}
	*size -= *size % v->lbs;
	return 0;
}

/*
 * The size of V at its opening: a volume without one whole logical block
 * has nothing to serve and is refused (a file left empty by mistake
 * would be a device of size 0); bytes past the last whole block are not
 * served, said once.
 */
static int volume_check_size(const struct volume *v, const char *path, uint64_t *size)
{
	struct stat st;
	uint64_t bytes;
	int err;

	if (v->is_blockdev)
		return volume_size(v, path, size);
	if (fstat(v->fd, &st)) {
		err = -errno;
		fprintf(stderr, "orfs-server: volume %s: fstat: %s\n", path, strerror(errno));
		return err;
	}
	bytes = (uint64_t)st.st_size;
	if (bytes < v->lbs) {
		fprintf(stderr, "orfs-server: volume %s: %llu bytes, less than one %u-byte block: "
			"nothing to serve (give the file its size first, e.g. truncate -s 10G)\n",
			path, (unsigned long long)bytes, v->lbs);
		return -EINVAL;
	}
	if (bytes % v->lbs)
		fprintf(stderr, "orfs-server: volume %s: %llu bytes is not a multiple of %u: "
			"its last %llu bytes are not served\n", path, (unsigned long long)bytes,
			v->lbs, (unsigned long long)(bytes % v->lbs));
	*size = bytes - bytes % v->lbs;
	return 0;
}

int volume_open(struct volume *v, const char *path, int read_only, uint32_t max_io)
{
	int flags = (read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC;
	struct stat st;
	int err;

	memset(v, 0, sizeof(*v));
	v->fd = v->fd_direct = -1;
	v->read_only = read_only;
	v->max_io = max_io;
	v->fd = open(path, flags);
	if (v->fd < 0) {
		err = -errno;
		fprintf(stderr, "orfs-server: volume %s: %s\n", path, strerror(errno));
		return err;
	}
	if (fstat(v->fd, &st)) {
		err = -errno;
		fprintf(stderr, "orfs-server: volume %s: fstat: %s\n", path, strerror(errno));
		goto fail;
	}
	if (S_ISBLK(st.st_mode)) {
		int lbs = 0;
		unsigned int pbs = 0;

		v->is_blockdev = 1;
		if (ioctl(v->fd, BLKSSZGET, &lbs) || ioctl(v->fd, BLKPBSZGET, &pbs)) {
			err = -errno;
			fprintf(stderr, "orfs-server: volume %s: %s\n", path, strerror(errno));
			goto fail;
		}
		v->lbs = (uint32_t)lbs;
		v->pbs = pbs;
	} else if (S_ISREG(st.st_mode)) {
		struct statfs fs;

		v->lbs = 512;
		v->pbs = 4096;
		v->in_memory = !fstatfs(v->fd, &fs) &&
			       (fs.f_type == TMPFS_MAGIC || fs.f_type == RAMFS_MAGIC);
	} else {
		err = -EINVAL;
		fprintf(stderr, "orfs-server: volume %s: not a file or a block device\n", path);
		goto fail;
	}
	err = volume_check_size(v, path, &v->size);
	if (err)
		goto fail;
	/* tmpfs before 6.6, among others, refuses O_DIRECT: then go buffered. */
	v->fd_direct = open(path, flags | O_DIRECT);
	return 0;
fail:
	close(v->fd);
	v->fd = -1;
	return err;
}

int volume_refresh(struct volume *v, const char *path)
{
	uint64_t size;

	if (volume_size(v, path, &size) || size == v->size)
		return 0;
	v->size = size;
	return 1;
}

void volume_close(struct volume *v)
{
	if (v->fd_direct >= 0)
		close(v->fd_direct);
	if (v->fd >= 0)
		close(v->fd);
	v->fd = v->fd_direct = -1;
}

void block_info(const struct volume *v, struct mxbd_info *info)
{
	uint32_t flags = MXBD_INFO_DISCARD | MXBD_INFO_WRITE_ZEROES;

	if (v->read_only)
		flags = MXBD_INFO_READ_ONLY;
	memset(info, 0, sizeof(*info));
	info->size = htole64(v->size);
	info->logical_block = htole32(v->lbs);
	info->physical_block = htole32(v->pbs);
	info->max_io = htole32(v->max_io);
	info->flags = htole32(flags);
}

int block_decode(const struct volume *v, const void *msg, uint32_t len,
		 uint32_t inline_max, struct block_req *out)
{
	struct knet_hdr h;
	struct mxbd_io io;
	uint32_t body_len;

	(void)len;	/* knet_hdr_check() tied every length to it already */
	memcpy(&h, msg, sizeof(h));
	memset(out, 0, sizeof(*out));
	out->opcode = le16toh(h.opcode);
	out->tag = le32toh(h.tag);
	out->nsegs = le16toh(h.nsegs);
	body_len = le32toh(h.body_len);
	out->seg_off = (uint32_t)sizeof(h) + body_len;
	out->inl_off = out->seg_off + out->nsegs * (uint32_t)sizeof(struct knet_seg);
	out->inl_len = le32toh(h.inline_len);

	switch (out->opcode) {
	case MXBD_OP_INFO:
	case MXBD_OP_IDENT:
	case MXBD_OP_FLUSH:
		if (body_len || out->nsegs || out->inl_len)
			return EINVAL;
		if (out->opcode == MXBD_OP_FLUSH && v->read_only)
			return EROFS;
		return 0;
	case MXBD_OP_READ:
	case MXBD_OP_WRITE:
	case MXBD_OP_DISCARD:
	case MXBD_OP_WRITE_ZEROES:
		break;
	default:
		return EOPNOTSUPP;
	}

	if (body_len != sizeof(io))
		return EINVAL;
	memcpy(&io, (const char *)msg + sizeof(h), sizeof(io));
	out->offset = le64toh(io.offset);
	out->length = le32toh(io.length);
	out->flags = le32toh(io.flags);
	if (out->flags & ~MXBD_IO_ALL)
		return EINVAL;
	if ((out->flags & MXBD_IO_FUA) && out->opcode != MXBD_OP_WRITE)
		return EINVAL;
	if (!out->length || out->offset % v->lbs || out->length % v->lbs)
		return EINVAL;
	if (out->offset > v->size || out->length > v->size - out->offset)
		return ENOSPC;
	if (out->opcode != MXBD_OP_READ && v->read_only)
		return EROFS;

	if (out->opcode == MXBD_OP_DISCARD || out->opcode == MXBD_OP_WRITE_ZEROES)
		return (out->nsegs || out->inl_len) ? EINVAL : 0;

	if (out->length > v->max_io)
		return EINVAL;
	return proto_check_data(msg, out->seg_off, out->nsegs, out->inl_len, out->length,
				inline_max, out->opcode == MXBD_OP_WRITE);
}

int block_map_segments(const void *msg, const struct block_req *br, uint32_t off,
		       uint32_t len, int (*fn)(void *arg, const struct seg_piece *p), void *arg)
{
	uint64_t a = off, b = (uint64_t)off + len, pos = 0;
	int n = 0, ret;
	uint32_t i;

	for (i = 0; i < br->nsegs && pos < b; i++) {
		struct knet_seg sg;
		uint64_t s0, s1, slen;

		memcpy(&sg, (const char *)msg + br->seg_off + i * sizeof(sg), sizeof(sg));
		slen = le32toh(sg.len);
		s0 = pos > a ? pos : a;
		s1 = pos + slen < b ? pos + slen : b;
		if (s0 < s1) {
			struct seg_piece p = {
				.local = (uint32_t)(s0 - a),
				.raddr = le64toh(sg.addr) + (s0 - pos),
				.rkey = le32toh(sg.rkey),
				.len = (uint32_t)(s1 - s0),
			};

			if (fn) {
				ret = fn(arg, &p);
				if (ret)
					return ret;
			}
			n++;
		}
		pos += slen;
	}
	return n;
}

static int aligned(const struct volume *v, const void *buf, uint64_t off, uint32_t len)
{
	uint64_t a = (uint64_t)v->pbs > 4096 ? v->pbs : 4096;

	return v->fd_direct >= 0 && !((uintptr_t)buf % a) && !(off % v->lbs) && !(len % v->lbs);
}

int block_read(const struct volume *v, void *buf, uint64_t off, uint32_t len)
{
	int got = rw_full(aligned(v, buf, off, len) ? v->fd_direct : v->fd, 0, buf, len, off);

	if (got < 0)
		return got;
	/* The store shrank under us: what is past its end is zero. */
	memset((char *)buf + got, 0, len - (uint32_t)got);
	return 0;
}

int rw_full(int fd, int write, void *buf, uint32_t len, uint64_t off)
{
	uint32_t done = 0;

	while (done < len) {
		ssize_t n = write ?
			pwrite(fd, (char *)buf + done, len - done, (off_t)(off + done)) :
			pread(fd, (char *)buf + done, len - done, (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		done += (uint32_t)n;
	}
	return (int)done;
}

int rw_nowait(int fd, int write, void *buf, uint64_t off, uint32_t len, int *refused)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	ssize_t n;

	if (*refused)
		return 0;
	n = write ? pwritev2(fd, &iov, 1, (off_t)off, RWF_NOWAIT) :
		    preadv2(fd, &iov, 1, (off_t)off, RWF_NOWAIT);
	if (n < 0 && errno == EOPNOTSUPP)
		*refused = 1;
	/* Short (the end of the store, or part of it cached): the worker's loop handles it. */
	return n == (ssize_t)len;
}

int block_try_now(struct volume *v, int write, void *buf, uint64_t off, uint32_t len)
{
	if (v->in_memory)
		return !(write ? block_write(v, buf, off, len, 0) : block_read(v, buf, off, len));
	return rw_nowait(aligned(v, buf, off, len) ? v->fd_direct : v->fd, write, buf, off, len,
			 &v->no_nowait);
}

int block_write(const struct volume *v, const void *buf, uint64_t off, uint32_t len, int fua)
{
	int fd = aligned(v, buf, off, len) ? v->fd_direct : v->fd;
	uint32_t done = 0;

	while (done < len) {
		struct iovec iov = { .iov_base = (char *)buf + done, .iov_len = len - done };
		ssize_t n = pwritev2(fd, &iov, 1, (off_t)(off + done), fua ? RWF_DSYNC : 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		done += (uint32_t)n;
	}
	return 0;
}

int block_flush(const struct volume *v)
{
	return fdatasync(v->fd) ? -errno : 0;
}

int block_discard(const struct volume *v, uint64_t off, uint64_t len)
{
	if (v->is_blockdev) {
		uint64_t range[2] = { off, len };

		return ioctl(v->fd, BLKDISCARD, range) ? -errno : 0;
	}
	if (fallocate(v->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len))
		return -errno;
	return 0;
}

int block_write_zeroes(const struct volume *v, uint64_t off, uint64_t len)
{
	if (v->is_blockdev) {
		uint64_t range[2] = { off, len };

		return ioctl(v->fd, BLKZEROOUT, range) ? -errno : 0;
	}
	/* A punched hole reads back as zeroes on every file system that has one. */
	if (!fallocate(v->fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len))
		return 0;
	if (errno != EOPNOTSUPP)
		return -errno;
	return block_discard(v, off, len);
}

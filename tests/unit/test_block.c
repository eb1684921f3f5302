// SPDX-License-Identifier: GPL-2.0-only
/* Unit tests of the block service: request decoding and the file backend. */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/block.h"
#include "server/proto.h"
#include "tests/unit/unit.h"

#define VOL_SIZE (1024 * 1024)

static struct volume vol = { .fd = -1, .fd_direct = -1 };
static char vol_path[] = "/tmp/orfs-unit-volXXXXXX";

static int setup(void)
{
	int fd = mkstemp(vol_path);

	if (fd < 0 || ftruncate(fd, VOL_SIZE)) {
		return -1;
	}
	close(fd);
	return volume_open(&vol, vol_path, 0, 1 << 20) ? -1 : 0;
}

static int teardown(void)
{
	volume_close(&vol);
	unlink(vol_path);
	return 0;
}

/* A block request of the given shape in BUF; returns its length. */
static uint32_t req(unsigned char *buf, uint16_t op, uint64_t off, uint32_t len, uint32_t flags,
		    uint16_t nsegs, const uint32_t *seglens, uint32_t inl)
{
	struct knet_hdr h;
	struct mxbd_io io = { htole64(off), htole32(len), htole32(flags) };
	uint32_t pos = sizeof(h), i;

	proto_hdr_init(&h, op, 9, 0);
	h.body_len = htole32(sizeof(io));
	h.nsegs = htole16(nsegs);
	h.inline_len = htole32(inl);
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + pos, &io, sizeof(io));
	pos += sizeof(io);
	for (i = 0; i < nsegs; i++) {
		struct knet_seg s = { htole64(0x1000 * (i + 1)), htole32(77), htole32(seglens[i]) };

		memcpy(buf + pos, &s, sizeof(s));
		pos += sizeof(s);
	}
	memset(buf + pos, 0xab, inl);
	return pos + inl;
}

static int decode(unsigned char *buf, uint32_t len, struct block_req *out)
{
	CU_ASSERT_EQUAL_FATAL(knet_hdr_check((struct knet_hdr *)buf, len, KNET_MAX_SEGS), KNET_HDR_OK);
	return block_decode(&vol, buf, len, 4096, out);
}

static void test_decode_good(void)
{
	static unsigned char buf[8192];
	uint32_t segs[3] = { 4096, 8192, 4096 };
	struct block_req r;

	CU_ASSERT_EQUAL(decode(buf, req(buf, MXBD_OP_WRITE, 8192, 16384, MXBD_IO_FUA, 3, segs, 0), &r), 0);
	CU_ASSERT_EQUAL(r.opcode, MXBD_OP_WRITE);
	CU_ASSERT_EQUAL(r.offset, 8192);
	CU_ASSERT_EQUAL(r.length, 16384);
	CU_ASSERT_EQUAL(r.flags, MXBD_IO_FUA);
	CU_ASSERT_EQUAL(r.nsegs, 3);
	CU_ASSERT_EQUAL(r.seg_off, sizeof(struct knet_hdr) + sizeof(struct mxbd_io));
	CU_ASSERT_EQUAL(decode(buf, req(buf, MXBD_OP_WRITE, 0, 4096, 0, 0, NULL, 4096), &r), 0);
	CU_ASSERT_EQUAL(r.inl_len, 4096);
	CU_ASSERT_EQUAL(r.inl_off, sizeof(struct knet_hdr) + sizeof(struct mxbd_io));
	CU_ASSERT_EQUAL(decode(buf, req(buf, MXBD_OP_READ, VOL_SIZE - 512, 512, 0, 0, NULL, 0), &r), 0);
	CU_ASSERT_EQUAL(decode(buf, req(buf, MXBD_OP_DISCARD, 0, VOL_SIZE, 0, 0, NULL, 0), &r), 0);
}

static void test_decode_bad(void)
{
	static unsigned char buf[8192];
	uint32_t segs[2] = { 4096, 4096 };
	uint32_t zero[1] = { 0 };
	struct block_req r;

	/* Misaligned, empty, past the end, wrapping past 2^64. */
	CU_ASSERT_EQUAL(decode(buf, req(buf, MXBD_OP_READ, 100, 512, 0, 1, segs, 0), &r), EINVAL);
	CU_ASSERT_EQUAL(decode(buf, req(buf, MXBD_OP_READ, 0, 0, 0, 0, NULL, 0), &r), EINVAL);
	CU_ASSERT_EQUAL(decode(buf, req(buf, MXBD_OP_READ, VOL_SIZE, 512, 0, 0, NULL, 0), &r), ENOSPC);
	CU_ASSERT_EQUAL(decode(buf, req(buf, MXBD_OP_DISCARD, UINT64_MAX - 511, 1024, 0, 0, NULL, 0), &r),
			ENOSPC);
	/* Segments that do not add up, a zero-length segment. */
	CU_ASSERT_EQUAL(decode(buf, req(buf, MXBD_OP_WRITE, 0, 4096, 0, 2, segs, 0), &r), EINVAL);
	CU_ASSERT_EQUAL(decode(buf, req(buf, MXBD_OP_WRITE, 0, 16384, 0, 2, segs, 0), &r), EINVAL);
	CU_ASSERT_EQUAL(decode(buf, req(buf, MXBD_OP_WRITE, 0, 512, 0, 1, zero, 0), &r), EINVAL);
	/* Inline data that does not match, or is larger than negotiated. */
	CU_ASSERT_EQUAL(decode(buf, req(buf, MXBD_OP_WRITE, 0, 1024, 0, 0, NULL, 512), &r), EINVAL);
	CU_ASSERT_EQUAL(decode(buf, req(buf, MXBD_OP_READ, 0, 512, 0, 0, NULL, 512), &r), EINVAL);
	CU_ASSERT_EQUAL(decode(buf, req(buf, MXBD_OP_READ, 0, 8192, 0, 0, NULL, 0), &r), EINVAL);
	/* Unknown flags, FUA on a read, data on a discard, unknown opcode. */
	CU_ASSERT_EQUAL(decode(buf, req(buf, MXBD_OP_WRITE, 0, 512, 0x80, 0, NULL, 512), &r), EINVAL);
	CU_ASSERT_EQUAL(decode(buf, req(buf, MXBD_OP_READ, 0, 512, MXBD_IO_FUA, 0, NULL, 0), &r), EINVAL);
	CU_ASSERT_EQUAL(decode(buf, req(buf, MXBD_OP_DISCARD, 0, 4096, 0, 1, segs, 0), &r), EINVAL);
	CU_ASSERT_EQUAL(decode(buf, req(buf, 99, 0, 512, 0, 0, NULL, 0), &r), EOPNOTSUPP);
	/* IDENT, like INFO, has no body. */
	CU_ASSERT_EQUAL(decode(buf, req(buf, MXBD_OP_IDENT, 0, 512, 0, 0, NULL, 0), &r), EINVAL);
	/* A read-only volume refuses every change. */
	vol.read_only = 1;
	CU_ASSERT_EQUAL(decode(buf, req(buf, MXBD_OP_WRITE, 0, 512, 0, 0, NULL, 512), &r), EROFS);
	CU_ASSERT_EQUAL(decode(buf, req(buf, MXBD_OP_WRITE_ZEROES, 0, 512, 0, 0, NULL, 0), &r), EROFS);
	CU_ASSERT_EQUAL(decode(buf, req(buf, MXBD_OP_READ, 0, 512, 0, 0, NULL, 0), &r), 0);
	vol.read_only = 0;
}

struct pieces {
	struct seg_piece p[8];
	int n;
};

static int collect(void *arg, const struct seg_piece *p)
{
	struct pieces *ps = arg;

	if (ps->n == 8)
		return -1;
	ps->p[ps->n++] = *p;
	return 0;
}

static void test_map_segments(void)
{
	static unsigned char buf[8192];
	uint32_t segs[3] = { 3000, 5000, 8384 };	/* 16384 bytes */
	struct block_req r;
	struct pieces ps = { .n = 0 };

	CU_ASSERT_EQUAL_FATAL(decode(buf, req(buf, MXBD_OP_WRITE, 0, 16384, 0, 3, segs, 0), &r), 0);
	/* Bytes 2000..10000 touch all three segments. */
	CU_ASSERT_EQUAL(block_map_segments(buf, &r, 2000, 8000, NULL, NULL), 3);
	CU_ASSERT_EQUAL(block_map_segments(buf, &r, 2000, 8000, collect, &ps), 3);
	CU_ASSERT_EQUAL(ps.p[0].local, 0);
	CU_ASSERT_EQUAL(ps.p[0].raddr, 0x1000 + 2000);
	CU_ASSERT_EQUAL(ps.p[0].len, 1000);
	CU_ASSERT_EQUAL(ps.p[0].rkey, 77);
	CU_ASSERT_EQUAL(ps.p[1].local, 1000);
	CU_ASSERT_EQUAL(ps.p[1].raddr, 0x2000);
	CU_ASSERT_EQUAL(ps.p[1].len, 5000);
	CU_ASSERT_EQUAL(ps.p[2].local, 6000);
	CU_ASSERT_EQUAL(ps.p[2].raddr, 0x3000);
	CU_ASSERT_EQUAL(ps.p[2].len, 2000);
	/* Inside one segment; the last byte; nothing. */
	CU_ASSERT_EQUAL(block_map_segments(buf, &r, 3100, 100, NULL, NULL), 1);
	CU_ASSERT_EQUAL(block_map_segments(buf, &r, 16383, 1, NULL, NULL), 1);
	CU_ASSERT_EQUAL(block_map_segments(buf, &r, 0, 0, NULL, NULL), 0);
}

static void test_backend(void)
{
	unsigned char *a, *b;
	unsigned int i;

	CU_ASSERT_FATAL(!posix_memalign((void **)&a, 4096, 65536));
	CU_ASSERT_FATAL(!posix_memalign((void **)&b, 4096, 65536));
	for (i = 0; i < 65536; i++)
		a[i] = (unsigned char)(i * 7 + 3);
	CU_ASSERT_EQUAL(block_write(&vol, a, 65536, 65536, 0), 0);
	CU_ASSERT_EQUAL(block_write(&vol, a + 1, 512, 1000, 1), 0);	/* unaligned: buffered */
	CU_ASSERT_EQUAL(block_flush(&vol), 0);
	memset(b, 0, 65536);
	CU_ASSERT_EQUAL(block_read(&vol, b, 65536, 65536), 0);
	CU_ASSERT_EQUAL(memcmp(a, b, 65536), 0);
	CU_ASSERT_EQUAL(block_read(&vol, b, 512, 1000), 0);
	CU_ASSERT_EQUAL(memcmp(a + 1, b, 1000), 0);

	CU_ASSERT_EQUAL(block_write_zeroes(&vol, 65536 + 4096, 8192), 0);
	CU_ASSERT_EQUAL(block_discard(&vol, 65536 + 32768, 4096), 0);
	CU_ASSERT_EQUAL(block_read(&vol, b, 65536, 65536), 0);
	for (i = 0; i < 65536; i++) {
		int zero = (i >= 4096 && i < 12288) || (i >= 32768 && i < 36864);

		if (b[i] != (zero ? 0 : a[i])) {
			CU_FAIL("wrong byte after write-zeroes or discard");
			break;
		}
	}
	free(a);
	free(b);
}

/* A volume grown or shrunk under the server: INFO sees it, decoding follows. */
static void test_refresh(void)
{
	unsigned char buf[256];
	struct block_req r;
	uint32_t n;

	CU_ASSERT_EQUAL(volume_refresh(&vol, vol_path), 0);
	n = req(buf, MXBD_OP_READ, VOL_SIZE, 4096, 0, 0, NULL, 0);
	CU_ASSERT_EQUAL(block_decode(&vol, buf, n, 4096, &r), ENOSPC);
	CU_ASSERT_FATAL(!truncate(vol_path, 2 * VOL_SIZE + 100));
	CU_ASSERT_EQUAL(volume_refresh(&vol, vol_path), 1);
	CU_ASSERT_EQUAL(vol.size, 2 * VOL_SIZE);	/* the partial block is not served */
	CU_ASSERT_EQUAL(block_decode(&vol, buf, n, 4096, &r), 0);
	CU_ASSERT_FATAL(!truncate(vol_path, VOL_SIZE));
	CU_ASSERT_EQUAL(volume_refresh(&vol, vol_path), 1);
	CU_ASSERT_EQUAL(vol.size, VOL_SIZE);
	CU_ASSERT_EQUAL(block_decode(&vol, buf, n, 4096, &r), ENOSPC);
}

/* Opening: less than one block is refused; a partial last block is not served. */
static void test_open_sizes(void)
{
	static const struct { off_t bytes; int ok; uint64_t size; } c[] = {
		{ 0, 0, 0 }, { 100, 0, 0 }, { 511, 0, 0 }, { 512, 1, 512 }, { 1000, 1, 512 },
		{ 8192 + 7, 1, 8192 },
	};
	char path[] = "/tmp/orfs-unit-sizeXXXXXX";
	struct volume v;
	unsigned int i;
	int fd = mkstemp(path);

	CU_ASSERT_FATAL(fd >= 0);
	close(fd);
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		CU_ASSERT_FATAL(!truncate(path, c[i].bytes));
		if (c[i].ok) {
			CU_ASSERT_EQUAL(volume_open(&v, path, 0, 1 << 20), 0);
			CU_ASSERT_EQUAL(v.size, c[i].size);
			volume_close(&v);
		} else {
			CU_ASSERT_EQUAL(volume_open(&v, path, 0, 1 << 20), -EINVAL);
			CU_ASSERT_EQUAL(v.fd, -1);
		}
	}
	unlink(path);
}

/* Reads and writes done on the spot: whole, right, or left to a worker. */
static void test_try_now(void)
{
	unsigned char *a, *b;
	int saved = vol.in_memory, r;
	unsigned int i;

	CU_ASSERT_FATAL(!posix_memalign((void **)&a, 4096, 8192));
	CU_ASSERT_FATAL(!posix_memalign((void **)&b, 4096, 8192));
	for (i = 0; i < 8192; i++)
		a[i] = (unsigned char)(i * 13 + 1);
	/* A store in memory: always done here. */
	vol.in_memory = 1;
	CU_ASSERT_EQUAL(block_try_now(&vol, 1, a, 8192, 8192), 1);
	memset(b, 0, 8192);
	CU_ASSERT_EQUAL(block_try_now(&vol, 0, b, 8192, 8192), 1);
	CU_ASSERT_EQUAL(memcmp(a, b, 8192), 0);
	/* Past the end: zero-filled here in memory; elsewhere short, left to the worker. */
	CU_ASSERT_EQUAL(block_try_now(&vol, 0, b, VOL_SIZE - 4096, 8192), 1);
	vol.in_memory = 0;
	CU_ASSERT_EQUAL(block_try_now(&vol, 0, b, VOL_SIZE - 4096, 8192), 0);
	/* Elsewhere RWF_NOWAIT decides; done means done right. */
	memset(b, 0, 8192);
	r = block_try_now(&vol, 0, b, 8192, 8192);
	CU_ASSERT(r == 0 || r == 1);
	if (r)
		CU_ASSERT_EQUAL(memcmp(a, b, 8192), 0);
	vol.in_memory = saved;
	free(a);
	free(b);
}

int unit_add_block_suite(void)
{
	CU_pSuite s = CU_add_suite("block service", setup, teardown);

	if (!s ||
	    !CU_add_test(s, "decode: good requests", test_decode_good) ||
	    !CU_add_test(s, "decode: bad requests get their errno", test_decode_bad) ||
	    !CU_add_test(s, "segments: a range split over uneven segments", test_map_segments) ||
	    !CU_add_test(s, "backend: write, read, flush, zeroes, discard", test_backend) ||
	    !CU_add_test(s, "refresh: a volume that grows and shrinks", test_refresh) ||
	    !CU_add_test(s, "open: a volume of less than one block is refused", test_open_sizes) ||
	    !CU_add_test(s, "try now: done on the spot or left to a worker", test_try_now))
		return -1;
	return 0;
}

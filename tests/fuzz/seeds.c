// SPDX-License-Identifier: GPL-2.0-only
/*
 * Writes the fuzzer's seed corpus into the directory given: one file per
 * well-formed message shape, so that the fuzzer starts from inputs that
 * pass the framing checks.
 */
#include <stdio.h>
#include <string.h>

#include "mxbd/uapi/mxbd_proto.h"
#include "orfs/uapi/orfs_proto.h"
#include "server/proto.h"

static int put(const char *dir, const char *name, const void *buf, size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(buf, 1, len, f) != len || fclose(f)) {
		perror(path);
		return 1;
	}
	return 0;
}

static size_t msg(unsigned char *buf, uint16_t op, uint64_t off, uint32_t len, int nsegs,
		  uint32_t inl)
{
	struct knet_hdr h;
	struct mxbd_io io = { htole64(off), htole32(len), 0 };
	size_t pos = sizeof(h);
	int i;

	proto_hdr_init(&h, op, 1, 0);
	if (op != MXBD_OP_INFO && op != MXBD_OP_FLUSH && op != KNET_OP_NOP) {
		h.body_len = htole32(sizeof(io));
		memcpy(buf + pos, &io, sizeof(io));
		pos += sizeof(io);
	}
	for (i = 0; i < nsegs; i++) {
		struct knet_seg s = {
			htole64(0x7f0000000000ULL + (uint64_t)i * (len / nsegs)),
			htole32(0x1234), htole32(i == nsegs - 1 ? len - (len / nsegs) * i : len / nsegs),
		};

		memcpy(buf + pos, &s, sizeof(s));
		pos += sizeof(s);
	}
	memset(buf + pos, 0x5a, inl);
	pos += inl;
	h.nsegs = htole16((uint16_t)nsegs);
	h.inline_len = htole32(inl);
	memcpy(buf, &h, sizeof(h));
	return pos;
}

/* A file service request: orfs_req, FIXED bytes of fixed part, then NAMES. */
static size_t fmsg(unsigned char *buf, uint16_t op, size_t fixed, const char *n1, const char *n2)
{
	struct knet_hdr h;
	size_t pos = sizeof(h) + sizeof(struct orfs_req) + fixed;
	const char *names[2] = { n1, n2 };
	int i;

	memset(buf, 0, pos);
	proto_hdr_init(&h, op, 1, 0);
	for (i = 0; i < 2; i++)
		if (names[i])
			pos += proto_put_name(buf + pos, names[i]);
	h.body_len = htole32((uint32_t)(pos - sizeof(h)));
	memcpy(buf, &h, sizeof(h));
	return pos;
}

int main(int argc, char **argv)
{
	static unsigned char b[8192];
	struct knet_cm_req r = { htole16(KNET_PROTO_VERSION), KNET_SVC_BLOCK, 4,
				 htole16(8), 0, htole32(4096), "vol0" };
	int e = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: fuzz-seeds DIR\n");
		return 2;
	}
	e |= put(argv[1], "nop", b, msg(b, KNET_OP_NOP, 0, 0, 0, 0));
	e |= put(argv[1], "info", b, msg(b, MXBD_OP_INFO, 0, 0, 0, 0));
	e |= put(argv[1], "flush", b, msg(b, MXBD_OP_FLUSH, 0, 0, 0, 0));
	e |= put(argv[1], "read-inline", b, msg(b, MXBD_OP_READ, 4096, 512, 0, 0));
	e |= put(argv[1], "write-inline", b, msg(b, MXBD_OP_WRITE, 8192, 1024, 0, 1024));
	e |= put(argv[1], "read-3segs", b, msg(b, MXBD_OP_READ, 65536, 196608, 3, 0));
	e |= put(argv[1], "write-7segs", b, msg(b, MXBD_OP_WRITE, 0, 1048576, 7, 0));
	e |= put(argv[1], "discard", b, msg(b, MXBD_OP_DISCARD, 0, 65536, 0, 0));
	e |= put(argv[1], "zeroes", b, msg(b, MXBD_OP_WRITE_ZEROES, 4096, 4096, 0, 0));
	e |= put(argv[1], "connect", &r, sizeof(r));
	e |= put(argv[1], "f-lookup", b, fmsg(b, ORFS_OP_LOOKUP, 64, "root", NULL));
	e |= put(argv[1], "f-create", b, fmsg(b, ORFS_OP_CREATE, sizeof(struct orfs_create_req), "new", NULL));
	e |= put(argv[1], "f-mkdir", b, fmsg(b, ORFS_OP_MKDIR, sizeof(struct orfs_create_req), "d", NULL));
	e |= put(argv[1], "f-unlink", b, fmsg(b, ORFS_OP_UNLINK, 64, "file", NULL));
	e |= put(argv[1], "f-rename", b, fmsg(b, ORFS_OP_RENAME, sizeof(struct orfs_rename_req), "file", "moved"));
	e |= put(argv[1], "f-readdir", b, fmsg(b, ORFS_OP_READDIR, sizeof(struct orfs_readdir_req), NULL, NULL));
	e |= put(argv[1], "f-getattr", b, fmsg(b, ORFS_OP_GETATTR, sizeof(struct orfs_fhop_req), NULL, NULL));
	e |= put(argv[1], "f-setxattr", b, fmsg(b, ORFS_OP_SETXATTR, sizeof(struct orfs_fhop_req), "user.a", NULL));
	/* A user's, after the privileged xattrs and mode of root's export directory. */
	{
		size_t n = fmsg(b, ORFS_OP_SETXATTR, sizeof(struct orfs_fhop_req), "trusted.evil", NULL);
		struct knet_hdr h;
		struct orfs_req r;

		/* The value after the name; the body grows by it. */
		n += proto_put_blob(b + n, "x", 1);
		memcpy(&h, b, sizeof(h));
		h.body_len = htole32((uint32_t)(n - sizeof(h)));
		memcpy(b, &h, sizeof(h));
		memcpy(&r, b + sizeof(struct knet_hdr), sizeof(r));
		r.cred.uid = htole32(1000);
		r.cred.gid = htole32(1000);
		memcpy(b + sizeof(struct knet_hdr), &r, sizeof(r));
		e |= put(argv[1], "f-setxattr-user", b, n);
		n = fmsg(b, ORFS_OP_SETATTR, sizeof(struct orfs_setattr_req), NULL, NULL);
		memcpy(b + sizeof(struct knet_hdr), &r, sizeof(r));
		e |= put(argv[1], "f-setattr-user", b, n);
	}
	e |= put(argv[1], "f-fallocate", b, fmsg(b, ORFS_OP_FALLOCATE, sizeof(struct orfs_fallocate_req), NULL, NULL));
	e |= put(argv[1], "f-seek", b, fmsg(b, ORFS_OP_SEEK, sizeof(struct orfs_seek_req), NULL, NULL));
	e |= put(argv[1], "f-copy", b, fmsg(b, ORFS_OP_COPY, sizeof(struct orfs_copy_req), NULL, NULL));
	e |= put(argv[1], "f-clone", b, fmsg(b, ORFS_OP_CLONE, sizeof(struct orfs_copy_req), NULL, NULL));
	return e;
}

/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause */
/*
 * MXBD block service: the operations a client sends on a knet connection
 * opened with service KNET_SVC_BLOCK, and their bodies. The transport
 * framing (header, segments, inline data, credits) is knet's; see
 * knet/uapi/knet_proto.h. One definition, compiled by mxbd.ko and the server.
 */
#ifndef _UAPI_MXBD_PROTO_H
#define _UAPI_MXBD_PROTO_H

#include "../../knet/uapi/knet_proto.h"

enum mxbd_opcode {
	MXBD_OP_INFO		= KNET_OP_SERVICE_BASE,	/* reply body: mxbd_info */
	MXBD_OP_READ,		/* body: mxbd_io; data to the segments or inline */
	MXBD_OP_WRITE,		/* body: mxbd_io; data from the segments or inline */
	MXBD_OP_FLUSH,		/* no body: make every acknowledged write durable */
	MXBD_OP_DISCARD,	/* body: mxbd_io; the range may read back as zeroes */
	MXBD_OP_WRITE_ZEROES,	/* body: mxbd_io; the range reads back as zeroes */
	MXBD_OP_IDENT,		/* no body; reply body: mxbd_ident */
};

/* mxbd_io.flags */
#define MXBD_IO_FUA	0x1	/* WRITE: durable before the reply */
#define MXBD_IO_ALL	MXBD_IO_FUA

/*
 * Body of READ, WRITE, DISCARD and WRITE_ZEROES. offset and length are in
 * bytes, multiples of the volume's logical block size. Data of a READ or
 * WRITE is either in the request's segments (their lengths add up to
 * length) or, when length is at most the negotiated inline size and there
 * are no segments, inline: after the WRITE request, or after the READ reply.
 */
struct mxbd_io {
	__le64	offset;
	__le32	length;
	__le32	flags;
};

/* mxbd_info.flags */
#define MXBD_INFO_READ_ONLY	0x1
#define MXBD_INFO_DISCARD	0x2	/* DISCARD is supported */
#define MXBD_INFO_WRITE_ZEROES	0x4	/* WRITE_ZEROES is supported */

/* Reply body of INFO. */
struct mxbd_info {
	__le64	size;			/* bytes */
	__le32	logical_block;		/* bytes, a power of two >= 512 */
	__le32	physical_block;		/* bytes */
	__le32	max_io;			/* largest READ or WRITE length */
	__le32	flags;			/* MXBD_INFO_* */
};

/*
 * Reply body of IDENT: the volume's identity, an RFC 9562 UUID, the same
 * through every address of its server and across its restarts, so that a
 * client knows two paths to one volume (multipath) and the volume it
 * attached when it connects again. A server that predates IDENT answers
 * EOPNOTSUPP: the volume has no identity.
 */
struct mxbd_ident {
	__u8	uuid[16];
};

static_assert(sizeof(struct mxbd_io) == 16, "mxbd_io layout");
static_assert(sizeof(struct mxbd_ident) == 16, "mxbd_ident layout");
static_assert(sizeof(struct mxbd_info) == 24, "mxbd_info layout");

#endif /* _UAPI_MXBD_PROTO_H */

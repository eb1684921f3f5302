/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Framing-level dispatch: what to do with one received message, decided
 * with no knowledge of the fabric, so that it can be tested and fuzzed alone.
 */
#ifndef ORFS_SERVER_DISPATCH_H
#define ORFS_SERVER_DISPATCH_H

#include <stddef.h>
#include <stdint.h>

#include "server/proto.h"

enum dispatch_verdict {
	DISPATCH_DROP,		/* not even the tag is readable: drop the link */
	DISPATCH_REPLY,		/* answer now with frame.status (NOP or bad framing) */
	DISPATCH_SERVICE,	/* well formed: the service decodes the operation */
	DISPATCH_AUTH,		/* well formed KNET_OP_AUTH: the connection's step */
};

struct frame {
	uint16_t	opcode;
	uint32_t	tag;
	uint32_t	status;	/* with DISPATCH_REPLY: 0 or the errno to answer */
};

/* Per-connection counters. */
struct dispatch_stats {
	uint64_t requests;	/* well-formed requests */
	uint64_t malformed;	/* malformed messages answered with an error */
	uint64_t dropped;	/* messages so broken that the link was dropped */
};

enum dispatch_verdict dispatch_frame(const void *msg, uint32_t len, struct frame *f,
				     struct dispatch_stats *st);

/*
 * Build a reply in BUF (CAP bytes): header, BODY_LEN bytes of body, then
 * INL_LEN bytes of inline data. Returns its length, or 0 if it does not fit.
 */
size_t proto_build_reply(void *buf, size_t cap, const struct frame *f, uint16_t grant,
			 const void *body, uint32_t body_len, const void *inl, uint32_t inl_len);

#endif /* ORFS_SERVER_DISPATCH_H */

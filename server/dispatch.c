// SPDX-License-Identifier: GPL-2.0-only
/*
 * Framing-level dispatch. A malformed message is never acted on: it gets an
 * error reply when its tag can be read, and the connection survives.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "server/dispatch.h"

/* Bytes needed to read a message's tag. */
#define TAG_END (offsetof(struct knet_hdr, tag) + sizeof(((struct knet_hdr *)0)->tag))

enum dispatch_verdict dispatch_frame(const void *msg, uint32_t len, struct frame *f,
				     struct dispatch_stats *st)
{
	struct knet_hdr h;
	enum knet_hdr_error err;

	memset(f, 0, sizeof(*f));
	if (len < TAG_END) {
		st->dropped++;
		return DISPATCH_DROP;
	}
	/* Work on an aligned copy of the header: MSG may be any buffer. */
	memset(&h, 0, sizeof(h));
	memcpy(&h, msg, len < sizeof(h) ? len : sizeof(h));
	f->opcode = le16toh(h.opcode);
	f->tag = le32toh(h.tag);

	err = len < sizeof(h) ? KNET_HDR_SHORT : knet_hdr_check(&h, len, KNET_MAX_SEGS);
	if (err == KNET_HDR_OK && (h.flags & KNET_HF_REPLY))
		err = KNET_HDR_RESERVED;	/* a client never sends replies */
	if (err != KNET_HDR_OK) {
		st->malformed++;
		f->status = (uint32_t)proto_hdr_errno(err);
		return DISPATCH_REPLY;
	}
	st->requests++;
	if (f->opcode == KNET_OP_AUTH)
		return DISPATCH_AUTH;
	if (f->opcode < KNET_OP_SERVICE_BASE) {
		f->status = f->opcode == KNET_OP_NOP ? 0 : EOPNOTSUPP;
		return DISPATCH_REPLY;
	}
	return DISPATCH_SERVICE;
}

size_t proto_build_reply(void *buf, size_t cap, const struct frame *f, uint16_t grant,
			 const void *body, uint32_t body_len, const void *inl, uint32_t inl_len)
{
	struct knet_hdr rep;
	size_t len = sizeof(rep) + (size_t)body_len + inl_len;

	if (cap < len)
		return 0;
	proto_hdr_init(&rep, f->opcode, f->tag, KNET_HF_REPLY);
	rep.credits = htole16(grant);
	rep.status = htole32(f->status);
	rep.body_len = htole32(body_len);
	rep.inline_len = htole32(inl_len);
	memcpy(buf, &rep, sizeof(rep));
	if (body_len)
		memcpy((char *)buf + sizeof(rep), body, body_len);
	if (inl_len)
		memmove((char *)buf + sizeof(rep) + body_len, inl, inl_len);
	return len;
}

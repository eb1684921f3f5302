// SPDX-License-Identifier: GPL-2.0-only
/*
 * Request dispatch. A malformed message is never acted on: it gets an
 * error reply when its tag can be read, and the connection survives.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "server/dispatch.h"

/* Bytes needed to read a message's tag. */
#define TAG_END (offsetof(struct knet_hdr, tag) + sizeof(((struct knet_hdr *)0)->tag))

static size_t make_reply(void *reply, size_t cap, const struct knet_hdr *req,
			 uint32_t status, uint16_t grant)
{
	struct knet_hdr *rep = reply;

	if (cap < sizeof(*rep))
		return 0;
	proto_hdr_init(rep, le16toh(req->opcode), le32toh(req->tag), KNET_HF_REPLY);
	rep->credits = htole16(grant);
	rep->status = htole32(status);
	return sizeof(*rep);
}

size_t dispatch_message(const void *msg, uint32_t len, void *reply, size_t cap,
			uint16_t grant, struct dispatch_stats *st)
{
	struct knet_hdr req;
	enum knet_hdr_error err;

	if (len < TAG_END) {
		st->dropped++;
		return 0;
	}
	/* Work on an aligned copy of the header: MSG may be any buffer. */
	memset(&req, 0, sizeof(req));
	memcpy(&req, msg, len < sizeof(req) ? len : sizeof(req));

	err = len < sizeof(req) ? KNET_HDR_SHORT : knet_hdr_check(&req, len, KNET_MAX_SEGS);
	if (err == KNET_HDR_OK && (req.flags & KNET_HF_REPLY))
		err = KNET_HDR_RESERVED;	/* a client never sends replies */
	if (err != KNET_HDR_OK) {
		st->malformed++;
		return make_reply(reply, cap, &req, (uint32_t)proto_hdr_errno(err), grant);
	}

	st->requests++;
	switch (le16toh(req.opcode)) {
	case KNET_OP_NOP:
		return make_reply(reply, cap, &req, 0, grant);
	default:
		return make_reply(reply, cap, &req, EOPNOTSUPP, grant);
	}
}

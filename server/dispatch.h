/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Request dispatch: turns one received message into one reply, with no
 * knowledge of the fabric, so that it can be tested (and fuzzed) alone.
 */
#ifndef ORFS_SERVER_DISPATCH_H
#define ORFS_SERVER_DISPATCH_H

#include <stddef.h>
#include <stdint.h>

#include "server/proto.h"

/* Per-connection counters kept by the dispatcher. */
struct dispatch_stats {
	uint64_t requests;	/* well-formed requests answered */
	uint64_t malformed;	/* malformed messages answered with an error */
	uint64_t dropped;	/* messages so broken that the link was dropped */
};

/*
 * dispatch_message() - answer the message MSG of LEN bytes into REPLY
 * (CAP bytes), granting GRANT send credits back. Returns the length of the
 * reply, or 0 when the message is too broken to answer (not even its tag
 * can be read): the caller then drops the connection.
 */
size_t dispatch_message(const void *msg, uint32_t len, void *reply, size_t cap,
			uint16_t grant, struct dispatch_stats *st);

#endif /* ORFS_SERVER_DISPATCH_H */

/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Server side of the knet wire protocol: parsing what a client sends before
 * anything acts on it. Layouts come from knet/uapi/knet_proto.h only.
 */
#ifndef ORFS_SERVER_PROTO_H
#define ORFS_SERVER_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "knet/uapi/knet_proto.h"

/* A parsed, validated connect request. */
struct conn_params {
	uint16_t version;
	uint8_t service;		/* enum knet_service */
	uint16_t recv_depth;
	uint32_t inline_max;
	uint16_t flags;			/* KNET_CMF_* */
	char name[KNET_NAME_MAX + 1];	/* NUL-terminated, validated */
};

/*
 * Parse the private data of a connect request (libfabric has already
 * removed its length byte). Returns 0, or the enum knet_cm_reject reason
 * to send back.
 */
int proto_parse_cm_req(const void *data, size_t len, struct conn_params *out);

/*
 * Is NAME acceptable as an export or volume name: 1 to KNET_NAME_MAX bytes
 * of [A-Za-z0-9._-], not "." or "..". Names are keys, never paths.
 */
int proto_name_ok(const char *name, size_t len);

/* Fill H as a message header with no body, segments or inline data. */
void proto_hdr_init(struct knet_hdr *h, uint16_t opcode, uint32_t tag, uint8_t flags);

/*
 * The string encodings of the service bodies: a name is __le16 length +
 * bytes, a blob (symlink target, xattr value) __le32 length + bytes. Each
 * writes at P and returns the bytes written.
 */
size_t proto_put_name(uint8_t *p, const char *s);
size_t proto_put_blob(uint8_t *p, const void *data, uint32_t len);

/*
 * Where a READ's or WRITE's LENGTH bytes of data are, the same rule for
 * every service: in the NSEGS segments at SEG_OFF of MSG (each non-empty,
 * adding up to LENGTH exactly, no inline data), or, without segments,
 * inline (at most INLINE_MAX bytes, carried by a WRITE, none in a READ).
 * Returns 0 or EINVAL.
 */
int proto_check_data(const void *msg, uint32_t seg_off, uint16_t nsegs, uint32_t inl_len,
		     uint32_t length, uint32_t inline_max, int is_write);

/* The errno value a framing error is answered with (EPROTO or EBADMSG). */
int proto_hdr_errno(enum knet_hdr_error e);

/* Human-readable text for a framing error or a reject reason. */
const char *proto_hdr_strerror(enum knet_hdr_error e);
const char *proto_reject_str(int reason);

/*
 * The CRC32C (Castagnoli) of N bytes at P, as a TCP PDU digest carries it:
 * initial value and final XOR 0xffffffff ("123456789" gives 0xe3069283).
 */
uint32_t proto_crc32c(const void *p, size_t n);

#endif /* ORFS_SERVER_PROTO_H */

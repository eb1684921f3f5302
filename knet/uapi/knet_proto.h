/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause */
/*
 * knet wire protocol: the transport layer shared by the ORFS and MXBD
 * kernel clients and the userspace server.
 *
 * This header is the one definition of the format. The kernel modules and
 * the server both compile it; nothing else may restate these layouts.
 * Every multi-byte field is little-endian and every structure has a fixed
 * size checked at compile time.
 *
 * A message is laid out as
 *
 *	struct knet_hdr | body (body_len) | struct knet_seg[nsegs] | inline data
 *
 * and its total length must equal the length of the receive completion.
 * See Documentation/wire-protocol.md for the semantics.
 */
#ifndef _UAPI_KNET_PROTO_H
#define _UAPI_KNET_PROTO_H

#include <linux/types.h>

#ifdef __KERNEL__
#include <linux/build_bug.h>
#define KNET_LE16(x)	le16_to_cpu(x)
#define KNET_LE32(x)	le32_to_cpu(x)
#else
#include <assert.h>	/* static_assert */
#include <endian.h>
#include <stddef.h>
#define KNET_LE16(x)	le16toh(x)
#define KNET_LE32(x)	le32toh(x)
#endif

#define KNET_PROTO_MAGIC	0x54454e4bU	/* "KNET" in memory order */
#define KNET_PROTO_VERSION	1

/* Default TCP-style port space of the rdma_cm service. */
#define KNET_DEFAULT_PORT	20077

/* Services a connection can ask for. */
enum knet_service {
	KNET_SVC_FILE	= 1,	/* ORFS export (a directory) */
	KNET_SVC_BLOCK	= 2,	/* MXBD volume (a file or a block device) */
};

/* Hard limits every peer enforces whatever the other side claims. */
#define KNET_NAME_MAX		40	/* export or volume name in connect data */
#define KNET_MAX_SEGS		64	/* memory segments in one request */
#define KNET_MAX_MSG		65536	/* largest SEND, header included */

/*
 * Connect request, carried as rdma_cm private data from client to server.
 * libfabric's verbs provider puts one length byte in front of the user's
 * private data and allows at most 55 bytes of it, so this must fit in 55.
 */
struct knet_cm_req {
	__le16	version;	/* KNET_PROTO_VERSION */
	__u8	service;	/* enum knet_service */
	__u8	name_len;	/* bytes used in name[], no NUL */
	__le16	recv_depth;	/* receives the client keeps posted */
	__le16	flags;		/* KNET_CMF_* */
	__le32	inline_max;	/* largest inline payload the client accepts */
	char	name[KNET_NAME_MAX];
};

/* Connect accept, carried as private data from server to client. */
struct knet_cm_rep {
	__le16	version;	/* version the server speaks on this link */
	__le16	credits;	/* initial send credits granted to the client */
	__le32	inline_max;	/* largest inline payload the server accepts */
	__le32	max_io;		/* largest data transfer of one request */
	__le16	max_segs;	/* largest segment list of one request */
	__le16	flags;		/* KNET_CMF_* */
};

/*
 * Connect flags. KNET_CMF_AUTH in a request: the client holds a secret
 * and will authenticate (KNET_OP_AUTH) before anything else, and so must
 * the server; in an accept: the server holds the client's secret and
 * takes no other request before the authentication succeeded.
 */
#define KNET_CMF_AUTH		0x0001
/*
 * TCP only (an RDMA server ignores them): in a request, the client asks
 * for CRC32C digests of every PDU header (HDGST) or payload (DDGST) after
 * the handshake; the accept carries the ones both sides then use, which
 * are the ones asked for or the connection is refused by the client.
 */
#define KNET_CMF_HDGST		0x0002
#define KNET_CMF_DDGST		0x0004
#define KNET_CMF_DIGESTS	(KNET_CMF_HDGST | KNET_CMF_DDGST)
#define KNET_CMF_ALL		(KNET_CMF_AUTH | KNET_CMF_DIGESTS)

/* The name of the digests of FLAGS, the same on both sides of the wire. */
static inline const char *knet_digests_str(unsigned int flags)
{
	switch (flags & KNET_CMF_DIGESTS) {
	case KNET_CMF_HDGST:
		return "header";
	case KNET_CMF_DDGST:
		return "data";
	case KNET_CMF_DIGESTS:
		return "both";
	default:
		return "none";
	}
}

/* Reasons a server rejects a connection, carried as reject private data. */
enum knet_cm_reject {
	KNET_REJ_VERSION	= 1,	/* unsupported protocol version */
	KNET_REJ_SERVICE	= 2,	/* unknown service */
	KNET_REJ_NOENT		= 3,	/* no such export or volume */
	KNET_REJ_ACCESS		= 4,	/* client address not allowed */
	KNET_REJ_BUSY		= 5,	/* out of connection resources */
	KNET_REJ_MALFORMED	= 6,	/* private data did not parse */
	KNET_REJ_AUTH		= 7,	/* a secret needed on one side only */
};

struct knet_cm_rej {
	__le16	version;	/* highest version the server speaks */
	__le16	reason;		/* enum knet_cm_reject */
};

/* Text for a reject reason, the same on both sides of the wire. */
static inline const char *knet_reject_str(int reason)
{
	switch (reason) {
	case 0:
		return "no reason given";
	case KNET_REJ_VERSION:
		return "unsupported protocol version";
	case KNET_REJ_SERVICE:
		return "unknown service";
	case KNET_REJ_NOENT:
		return "no such export or volume";
	case KNET_REJ_ACCESS:
		return "client not allowed";
	case KNET_REJ_BUSY:
		return "server out of connection resources";
	case KNET_REJ_MALFORMED:
		return "malformed connect data";
	case KNET_REJ_AUTH:
		return "authentication required, or not set up for this client";
	}
	return "unknown reason";
}

/*
 * Opcodes below KNET_OP_SERVICE_BASE belong to the transport and mean the
 * same for every service; the services number theirs from the base up.
 */
enum knet_opcode {
	KNET_OP_NOP		= 0,	/* no operation: ping and keep-alive */
	KNET_OP_AUTH		= 1,	/* a step of the authentication */
	KNET_OP_SERVICE_BASE	= 16,
};

/*
 * Mutual authentication with a shared secret (KNET_CMF_AUTH), in two
 * requests before any other, with MAC = HMAC-SHA256(secret, label |
 * client nonce | server nonce | service | name length | name), the
 * label being KNET_AUTH_SERVER or KNET_AUTH_CLIENT (16 bytes each):
 *
 *   step 1: the client sends its nonce (32 random bytes); the server
 *           answers its own nonce and the server MAC, which proves it
 *           holds the secret (the client checks it before going on);
 *   step 2: the client sends the client MAC; the server answers 0, or
 *           EACCES and closes the connection.
 *
 * Fresh nonces on both sides defeat replays, the two labels reflection,
 * and the export's name binds the proof to the connection's service.
 */
#define KNET_AUTH_NONCE		32
#define KNET_AUTH_MAC		32
#define KNET_AUTH_SERVER	"knet-auth-server"
#define KNET_AUTH_CLIENT	"knet-auth-client"
#define KNET_AUTH_LABEL		16
#define KNET_SECRET_MIN		16	/* bytes of a secret, at least */
#define KNET_SECRET_MAX		128	/* and at most */

struct knet_auth_req {
	__u8	step;		/* 1 or 2 */
	__u8	reserved[7];	/* must be zero */
	__u8	data[32];	/* step 1: the client's nonce; step 2: the client MAC */
};

struct knet_auth_rep {
	__u8	nonce[KNET_AUTH_NONCE];	/* step 1: the server's nonce */
	__u8	mac[KNET_AUTH_MAC];	/* step 1: the server MAC */
};

/* Header flags. */
#define KNET_HF_REPLY	0x01	/* message is a reply to the request of tag */

/* Message header: 32 bytes at the start of every SEND. */
struct knet_hdr {
	__le32	magic;		/* KNET_PROTO_MAGIC */
	__u8	version;	/* KNET_PROTO_VERSION */
	__u8	flags;		/* KNET_HF_* */
	__le16	opcode;		/* service-specific operation */
	__le32	tag;		/* request identifier, echoed in the reply */
	__le16	credits;	/* reply: send credits granted back */
	__le16	nsegs;		/* struct knet_seg entries after the body */
	__le32	body_len;	/* bytes of typed body after this header */
	__le32	inline_len;	/* bytes of inline payload after the segments */
	__le32	status;		/* reply: 0 or a Linux errno value (see KNET_STATUS_MAX) */
	__le32	reserved;	/* must be zero */
};

/*
 * The largest status a reply may carry: the last errno of Linux's generic
 * numbering (EHWPOISON). Larger values are no errno a program knows, and
 * in the kernel some are internal codes (ERESTARTSYS, EIOCBQUEUED...) that
 * must never come from a peer: a client takes them as EIO. It takes the
 * two holes below it the same way (41 and 58: no errno has them, since
 * EWOULDBLOCK and EDEADLOCK are other names of EAGAIN and EDEADLK).
 */
#define KNET_STATUS_MAX		133
#define KNET_STATUS_HOLE1	41
#define KNET_STATUS_HOLE2	58

/* One piece of client memory the server may RDMA READ or WRITE. */
struct knet_seg {
	__le64	addr;		/* remote address (I/O virtual address) */
	__le32	rkey;		/* remote key, valid for this request only */
	__le32	len;		/* bytes */
};

/*
 * The TCP transport. A connection is a byte stream of PDUs, each a
 * struct knet_tcp_pdu followed by @length bytes of payload, except R2T
 * whose @length is what it asks for and which carries none:
 *
 *   CONNECT  client: struct knet_cm_req, as rdma_cm carries it (without
 *            libfabric's length byte); the first PDU of a connection
 *   ACCEPT   server: struct knet_cm_rep; REJECT: struct knet_cm_rej, then
 *            the server closes
 *   MSG      either way: one message (struct knet_hdr ...), as one SEND
 *            of RDMA; at most KNET_TCP_MSG_MAX bytes
 *   R2T      server: "send @length bytes of request @tag's data from
 *            @offset" (the request offered them in struct knet_seg
 *            entries of key 0 whose addresses are offsets into its data;
 *            the kernel offers one, of address 0)
 *   DATA     server to client: @length bytes of request @tag's data at
 *            @offset (what RDMA WRITE does); client to server: the bytes
 *            an R2T asked for, exactly
 *
 * The server drives every transfer, as on RDMA: a client sends data only
 * inline in its message or when asked, and a PDU that does not fit a
 * request (unknown tag, a range beyond what it offered, data it did not
 * ask for) is a protocol error that ends the connection.
 *
 * Digests (KNET_CMF_HDGST, KNET_CMF_DDGST), once accepted, apply to every
 * PDU after the ACCEPT: a header is followed by the CRC32C of its 16
 * bytes, a payload (MSG, DATA; not an empty one) by the CRC32C of its
 * bytes, each KNET_TCP_DIGEST bytes, little-endian (CRC32C as iSCSI and
 * NVMe/TCP compute it: initial value and final XOR 0xffffffff). A digest
 * that does not match ends the connection.
 */
enum knet_tcp_type {
	KNET_TCP_CONNECT	= 1,
	KNET_TCP_ACCEPT		= 2,
	KNET_TCP_REJECT		= 3,
	KNET_TCP_MSG		= 4,
	KNET_TCP_R2T		= 5,
	KNET_TCP_DATA		= 6,
};

#define KNET_TCP_MSG_MAX	8192	/* largest MSG payload either way */
#define KNET_TCP_DIGEST		4	/* bytes of a digest */

struct knet_tcp_pdu {
	__u8	type;		/* enum knet_tcp_type */
	__u8	flags;		/* must be zero */
	__le16	reserved;	/* must be zero */
	__le32	length;		/* payload bytes (R2T: bytes asked) */
	__le32	tag;		/* R2T, DATA: the request's tag */
	__le32	offset;		/* R2T, DATA: where in the request's data */
};

static_assert(sizeof(struct knet_cm_req) <= 55, "knet_cm_req too large");
static_assert(sizeof(struct knet_cm_req) == 52, "knet_cm_req layout");
static_assert(sizeof(struct knet_cm_rep) == 16, "knet_cm_rep layout");
static_assert(sizeof(struct knet_cm_rej) == 4, "knet_cm_rej layout");
static_assert(sizeof(struct knet_hdr) == 32, "knet_hdr layout");
static_assert(sizeof(struct knet_auth_req) == 40, "knet_auth_req layout");
static_assert(sizeof(struct knet_auth_rep) == 64, "knet_auth_rep layout");
static_assert(sizeof(KNET_AUTH_SERVER) == KNET_AUTH_LABEL + 1, "label length");
static_assert(sizeof(KNET_AUTH_CLIENT) == KNET_AUTH_LABEL + 1, "label length");
static_assert(sizeof(struct knet_seg) == 16, "knet_seg layout");
static_assert(sizeof(struct knet_tcp_pdu) == 16, "knet_tcp_pdu layout");

/* Results of knet_hdr_check(); zero means the message is well formed. */
enum knet_hdr_error {
	KNET_HDR_OK = 0,
	KNET_HDR_SHORT,		/* shorter than a header */
	KNET_HDR_MAGIC,		/* bad magic */
	KNET_HDR_VERSION,	/* version other than KNET_PROTO_VERSION */
	KNET_HDR_RESERVED,	/* reserved field or unknown flag set */
	KNET_HDR_SEGS,		/* more segments than allowed */
	KNET_HDR_LENGTH,	/* lengths do not add up to the message size */
};

#define KNET_HF_ALL	KNET_HF_REPLY

/**
 * knet_hdr_check() - validate the framing of a received message
 * @hdr: the message, at least @len bytes readable
 * @len: length of the receive completion
 * @max_segs: largest segment count the receiver accepts
 *
 * Checks only what the transport owns: magic, version, reserved bits and
 * that header, body, segment list and inline data exactly fill @len. The
 * arithmetic is done in 64 bits so that no field value can wrap it.
 *
 * Return: %KNET_HDR_OK or the first problem found.
 */
static inline enum knet_hdr_error
knet_hdr_check(const struct knet_hdr *hdr, __u32 len, __u32 max_segs)
{
	__u64 need;

	if (len < sizeof(*hdr))
		return KNET_HDR_SHORT;
	if (KNET_LE32(hdr->magic) != KNET_PROTO_MAGIC)
		return KNET_HDR_MAGIC;
	if (hdr->version != KNET_PROTO_VERSION)
		return KNET_HDR_VERSION;
	if ((hdr->flags & ~KNET_HF_ALL) || hdr->reserved)
		return KNET_HDR_RESERVED;
	if (KNET_LE16(hdr->nsegs) > max_segs)
		return KNET_HDR_SEGS;
	need = (__u64)sizeof(*hdr) + KNET_LE32(hdr->body_len) +
	       (__u64)KNET_LE16(hdr->nsegs) * sizeof(struct knet_seg) +
	       KNET_LE32(hdr->inline_len);
	if (need != len)
		return KNET_HDR_LENGTH;
	return KNET_HDR_OK;
}

#endif /* _UAPI_KNET_PROTO_H */

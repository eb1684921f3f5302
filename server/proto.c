// SPDX-License-Identifier: GPL-2.0-only
/*
 * Server side of the knet wire protocol: connect data and framing checks.
 */
#include <errno.h>
#include <string.h>

#include "server/proto.h"

int proto_name_ok(const char *name, size_t len)
{
	size_t i;

	if (len == 0 || len > KNET_NAME_MAX)
		return 0;
	if ((len == 1 && name[0] == '.') ||
	    (len == 2 && name[0] == '.' && name[1] == '.'))
		return 0;
	for (i = 0; i < len; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
			return 0;
	}
	return 1;
}

int proto_parse_cm_req(const void *data, size_t len, struct conn_params *out)
{
	struct knet_cm_req req;

	memset(out, 0, sizeof(*out));
	/* The version comes first so that any future layout can be told apart. */
	if (!data || len < sizeof(req.version))
		return KNET_REJ_MALFORMED;
	memcpy(&req.version, data, sizeof(req.version));
	out->version = le16toh(req.version);
	if (out->version != KNET_PROTO_VERSION)
		return KNET_REJ_VERSION;
	if (len < sizeof(req))
		return KNET_REJ_MALFORMED;
	memcpy(&req, data, sizeof(req));
	if (le16toh(req.flags) & ~KNET_CMF_ALL)
		return KNET_REJ_MALFORMED;
	out->flags = le16toh(req.flags);
	if (req.service != KNET_SVC_FILE && req.service != KNET_SVC_BLOCK)
		return KNET_REJ_SERVICE;
	if (!proto_name_ok(req.name, req.name_len))
		return KNET_REJ_MALFORMED;
	out->service = req.service;
	out->recv_depth = le16toh(req.recv_depth);
	out->inline_max = le32toh(req.inline_max);
	if (out->recv_depth == 0)
		return KNET_REJ_MALFORMED;
	memcpy(out->name, req.name, req.name_len);
	out->name[req.name_len] = '\0';
	return 0;
}

void proto_hdr_init(struct knet_hdr *h, uint16_t opcode, uint32_t tag, uint8_t flags)
{
	memset(h, 0, sizeof(*h));
	h->magic = htole32(KNET_PROTO_MAGIC);
	h->version = KNET_PROTO_VERSION;
	h->flags = flags;
	h->opcode = htole16(opcode);
	h->tag = htole32(tag);
}

size_t proto_put_name(uint8_t *p, const char *s)
{
	uint16_t n = htole16((uint16_t)strlen(s));

	memcpy(p, &n, sizeof(n));
	memcpy(p + sizeof(n), s, strlen(s));
	return sizeof(n) + strlen(s);
}

size_t proto_put_blob(uint8_t *p, const void *data, uint32_t len)
{
	uint32_t n = htole32(len);

	memcpy(p, &n, sizeof(n));
	if (len)
		memcpy(p + sizeof(n), data, len);
	return sizeof(n) + len;
}

int proto_check_data(const void *msg, uint32_t seg_off, uint16_t nsegs, uint32_t inl_len,
		     uint32_t length, uint32_t inline_max, int is_write)
{
	uint32_t i, total = 0;

	if (!nsegs) {
		if (length > inline_max || inl_len != (is_write ? length : 0))
			return EINVAL;
		return 0;
	}
	if (inl_len)
		return EINVAL;
	for (i = 0; i < nsegs; i++) {
		struct knet_seg s;

		memcpy(&s, (const char *)msg + seg_off + i * sizeof(s), sizeof(s));
		if (!le32toh(s.len) || le32toh(s.len) > length - total)
			return EINVAL;
		total += le32toh(s.len);
	}
	return total == length ? 0 : EINVAL;
}

int proto_hdr_errno(enum knet_hdr_error e)
{
	switch (e) {
	case KNET_HDR_OK:
		return 0;
	case KNET_HDR_VERSION:
		return EPROTO;
	default:
		return EBADMSG;
	}
}

const char *proto_hdr_strerror(enum knet_hdr_error e)
{
	switch (e) {
	case KNET_HDR_OK:
		return "well formed";
	case KNET_HDR_SHORT:
		return "shorter than a header";
	case KNET_HDR_MAGIC:
		return "bad magic";
	case KNET_HDR_VERSION:
		return "unsupported version";
	case KNET_HDR_RESERVED:
		return "reserved bits set";
	case KNET_HDR_SEGS:
		return "too many segments";
	case KNET_HDR_LENGTH:
		return "lengths do not match the message size";
	}
	return "unknown framing error";
}

const char *proto_reject_str(int reason)
{
	return knet_reject_str(reason);
}

/*
 * CRC32C: the CPU's CRC32 instruction where it has one (x86's SSE4.2),
 * else eight bytes a step from tables ("slicing by 8": crc_tab[k][b] is
 * the CRC of byte b followed by k zero bytes). The choice and the tables
 * are made before main(), while one thread runs.
 */
static uint32_t crc_tab[8][256];
static int crc_hw;

#if defined(__x86_64__)
#include <nmmintrin.h>

__attribute__((target("sse4.2")))
static uint32_t crc32c_hw(uint32_t c, const uint8_t *b, size_t n)
{
	uint64_t c64 = c, v;

	while (n >= 8) {
		memcpy(&v, b, 8);
		c64 = _mm_crc32_u64(c64, v);
		b += 8;
		n -= 8;
	}
	c = (uint32_t)c64;
	while (n--)
		c = _mm_crc32_u8(c, *b++);
	return c;
}
#endif

__attribute__((constructor)) static void crc_tab_init(void)
{
	uint32_t c;
	int b, k, i;

	for (b = 0; b < 256; b++) {
		c = (uint32_t)b;
		for (i = 0; i < 8; i++)
			c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
		crc_tab[0][b] = c;
	}
	for (b = 0; b < 256; b++)
		for (k = 1; k < 8; k++)
			crc_tab[k][b] = (crc_tab[k - 1][b] >> 8) ^ crc_tab[0][crc_tab[k - 1][b] & 0xff];
#if defined(__x86_64__)
	__builtin_cpu_init();
	crc_hw = __builtin_cpu_supports("sse4.2");
#endif
}

uint32_t proto_crc32c(const void *p, size_t n)
{
	const uint8_t *b = p;
	uint32_t c = 0xffffffffu;

#if defined(__x86_64__)
	if (crc_hw)
		return ~crc32c_hw(c, b, n);
#endif
	while (n >= 8) {
		uint32_t lo = c ^ ((uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
				   (uint32_t)b[3] << 24);

		c = crc_tab[7][lo & 0xff] ^ crc_tab[6][(lo >> 8) & 0xff] ^
		    crc_tab[5][(lo >> 16) & 0xff] ^ crc_tab[4][lo >> 24] ^
		    crc_tab[3][b[4]] ^ crc_tab[2][b[5]] ^ crc_tab[1][b[6]] ^ crc_tab[0][b[7]];
		b += 8;
		n -= 8;
	}
	while (n--)
		c = (c >> 8) ^ crc_tab[0][(c ^ *b++) & 0xff];
	return ~c;
}

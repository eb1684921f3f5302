// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests of the wire framing (knet/uapi/knet_proto.h) and of the
 * server's connect-data parser (server/proto.c).
 */
#include <endian.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "server/proto.h"
#include "tests/unit/unit.h"

#define MSG_CAP 4096

/* A well-formed message of the given shape, in buf; returns its length. */
static uint32_t make_msg(uint8_t *buf, uint32_t body, uint16_t nsegs, uint32_t inl)
{
	struct knet_hdr *h = (struct knet_hdr *)buf;
	uint32_t len = sizeof(*h) + body + nsegs * sizeof(struct knet_seg) + inl;

	memset(buf, 0, MSG_CAP);
	proto_hdr_init(h, 3, 77, 0);
	h->nsegs = htole16(nsegs);
	h->body_len = htole32(body);
	h->inline_len = htole32(inl);
	return len;
}

static void test_hdr_well_formed(void)
{
	uint8_t buf[MSG_CAP];
	const struct knet_hdr *h = (const struct knet_hdr *)buf;

	CU_ASSERT_EQUAL(knet_hdr_check(h, make_msg(buf, 0, 0, 0), KNET_MAX_SEGS), KNET_HDR_OK);
	CU_ASSERT_EQUAL(knet_hdr_check(h, make_msg(buf, 24, 3, 100), KNET_MAX_SEGS), KNET_HDR_OK);
	CU_ASSERT_EQUAL(knet_hdr_check(h, make_msg(buf, 8, KNET_MAX_SEGS, 0), KNET_MAX_SEGS),
			KNET_HDR_OK);
	buf[5] = KNET_HF_REPLY;	/* flags */
	CU_ASSERT_EQUAL(knet_hdr_check(h, make_msg(buf, 0, 0, 0), KNET_MAX_SEGS), KNET_HDR_OK);
}

static void test_hdr_short(void)
{
	uint8_t buf[MSG_CAP];
	const struct knet_hdr *h = (const struct knet_hdr *)buf;

	make_msg(buf, 0, 0, 0);
	CU_ASSERT_EQUAL(knet_hdr_check(h, 0, KNET_MAX_SEGS), KNET_HDR_SHORT);
	CU_ASSERT_EQUAL(knet_hdr_check(h, sizeof(struct knet_hdr) - 1, KNET_MAX_SEGS),
			KNET_HDR_SHORT);
	CU_ASSERT_EQUAL(proto_hdr_errno(KNET_HDR_SHORT), EBADMSG);
}

static void test_hdr_magic_version_reserved(void)
{
	uint8_t buf[MSG_CAP];
	struct knet_hdr *h = (struct knet_hdr *)buf;
	uint32_t len = make_msg(buf, 0, 0, 0);

	h->magic = htole32(KNET_PROTO_MAGIC ^ 1);
	CU_ASSERT_EQUAL(knet_hdr_check(h, len, KNET_MAX_SEGS), KNET_HDR_MAGIC);

	len = make_msg(buf, 0, 0, 0);
	h->version = KNET_PROTO_VERSION + 1;
	CU_ASSERT_EQUAL(knet_hdr_check(h, len, KNET_MAX_SEGS), KNET_HDR_VERSION);
	CU_ASSERT_EQUAL(proto_hdr_errno(KNET_HDR_VERSION), EPROTO);

	len = make_msg(buf, 0, 0, 0);
	h->flags = 0x80;
	CU_ASSERT_EQUAL(knet_hdr_check(h, len, KNET_MAX_SEGS), KNET_HDR_RESERVED);

	len = make_msg(buf, 0, 0, 0);
	h->reserved = htole32(1);
	CU_ASSERT_EQUAL(knet_hdr_check(h, len, KNET_MAX_SEGS), KNET_HDR_RESERVED);
}

static void test_hdr_segments(void)
{
	uint8_t buf[MSG_CAP];
	const struct knet_hdr *h = (const struct knet_hdr *)buf;
	uint32_t len = make_msg(buf, 0, 5, 0);

	CU_ASSERT_EQUAL(knet_hdr_check(h, len, 4), KNET_HDR_SEGS);
	CU_ASSERT_EQUAL(knet_hdr_check(h, len, 5), KNET_HDR_OK);
}

static void test_hdr_lengths(void)
{
	uint8_t buf[MSG_CAP];
	struct knet_hdr *h = (struct knet_hdr *)buf;
	uint32_t len = make_msg(buf, 16, 2, 10);

	/* One byte more or less than the fields announce. */
	CU_ASSERT_EQUAL(knet_hdr_check(h, len - 1, KNET_MAX_SEGS), KNET_HDR_LENGTH);
	CU_ASSERT_EQUAL(knet_hdr_check(h, len + 1, KNET_MAX_SEGS), KNET_HDR_LENGTH);

	/* Lengths chosen so that 32-bit arithmetic would wrap to len. */
	make_msg(buf, 0, 0, 0);
	h->body_len = htole32(0xffffffffu);
	h->inline_len = htole32(1);
	CU_ASSERT_EQUAL(knet_hdr_check(h, sizeof(*h), KNET_MAX_SEGS), KNET_HDR_LENGTH);
	h->body_len = htole32(0x80000000u);
	h->inline_len = htole32(0x80000000u);
	CU_ASSERT_EQUAL(knet_hdr_check(h, sizeof(*h), KNET_MAX_SEGS), KNET_HDR_LENGTH);
}

static size_t make_cm_req(struct knet_cm_req *r, const char *name, uint8_t service)
{
	memset(r, 0, sizeof(*r));
	r->version = htole16(KNET_PROTO_VERSION);
	r->service = service;
	r->name_len = (uint8_t)strlen(name);
	r->recv_depth = htole16(32);
	r->inline_max = htole32(4096);
	memcpy(r->name, name, r->name_len);
	return sizeof(*r);
}

static void test_cm_req_good(void)
{
	struct knet_cm_req r;
	struct conn_params p;
	size_t len = make_cm_req(&r, "vol-1.data_x", KNET_SVC_BLOCK);

	CU_ASSERT_EQUAL(proto_parse_cm_req(&r, len, &p), 0);
	CU_ASSERT_EQUAL(p.version, KNET_PROTO_VERSION);
	CU_ASSERT_EQUAL(p.service, KNET_SVC_BLOCK);
	CU_ASSERT_EQUAL(p.recv_depth, 32);
	CU_ASSERT_EQUAL(p.inline_max, 4096);
	CU_ASSERT_STRING_EQUAL(p.name, "vol-1.data_x");

	/* Longest name: no room for a NUL on the wire, one in the result. */
	memset(r.name, 'a', KNET_NAME_MAX);
	r.name_len = KNET_NAME_MAX;
	CU_ASSERT_EQUAL(proto_parse_cm_req(&r, len, &p), 0);
	CU_ASSERT_EQUAL(strlen(p.name), KNET_NAME_MAX);
}

static void test_cm_req_bad(void)
{
	struct knet_cm_req r;
	struct conn_params p;
	size_t len = make_cm_req(&r, "export", KNET_SVC_FILE);

	CU_ASSERT_EQUAL(proto_parse_cm_req(NULL, 0, &p), KNET_REJ_MALFORMED);
	CU_ASSERT_EQUAL(proto_parse_cm_req(&r, 1, &p), KNET_REJ_MALFORMED);
	CU_ASSERT_EQUAL(proto_parse_cm_req(&r, len - 1, &p), KNET_REJ_MALFORMED);

	r.version = htole16(KNET_PROTO_VERSION + 1);
	/* A newer client is told the version even if its data is shorter. */
	CU_ASSERT_EQUAL(proto_parse_cm_req(&r, 2, &p), KNET_REJ_VERSION);

	make_cm_req(&r, "export", 9);
	CU_ASSERT_EQUAL(proto_parse_cm_req(&r, len, &p), KNET_REJ_SERVICE);

	/* An unknown flag; the authentication and digest flags are known and kept. */
	make_cm_req(&r, "export", KNET_SVC_FILE);
	r.flags = htole16(8);
	CU_ASSERT_EQUAL(proto_parse_cm_req(&r, len, &p), KNET_REJ_MALFORMED);
	make_cm_req(&r, "export", KNET_SVC_FILE);
	r.flags = htole16(KNET_CMF_AUTH);
	CU_ASSERT_EQUAL(proto_parse_cm_req(&r, len, &p), 0);
	CU_ASSERT_EQUAL(p.flags, KNET_CMF_AUTH);
	make_cm_req(&r, "export", KNET_SVC_FILE);
	r.flags = htole16(KNET_CMF_HDGST | KNET_CMF_DDGST);
	CU_ASSERT_EQUAL(proto_parse_cm_req(&r, len, &p), 0);
	CU_ASSERT_EQUAL(p.flags, KNET_CMF_DIGESTS);

	make_cm_req(&r, "export", KNET_SVC_FILE);
	r.recv_depth = 0;
	CU_ASSERT_EQUAL(proto_parse_cm_req(&r, len, &p), KNET_REJ_MALFORMED);

	make_cm_req(&r, "export", KNET_SVC_FILE);
	r.name_len = KNET_NAME_MAX + 1;
	CU_ASSERT_EQUAL(proto_parse_cm_req(&r, len, &p), KNET_REJ_MALFORMED);
}

static void test_names(void)
{
	CU_ASSERT_TRUE(proto_name_ok("data", 4));
	CU_ASSERT_TRUE(proto_name_ok("a.b-c_9", 7));
	CU_ASSERT_TRUE(proto_name_ok("...", 3));
	CU_ASSERT_FALSE(proto_name_ok("", 0));
	CU_ASSERT_FALSE(proto_name_ok(".", 1));
	CU_ASSERT_FALSE(proto_name_ok("..", 2));
	CU_ASSERT_FALSE(proto_name_ok("a/b", 3));
	CU_ASSERT_FALSE(proto_name_ok("/etc", 4));
	CU_ASSERT_FALSE(proto_name_ok("a\0b", 3));
	CU_ASSERT_FALSE(proto_name_ok("sp ace", 6));
	CU_ASSERT_FALSE(proto_name_ok("x", KNET_NAME_MAX + 1));
}

static void test_strings(void)
{
	int r;

	for (r = KNET_REJ_VERSION; r <= KNET_REJ_AUTH; r++)
		CU_ASSERT_STRING_NOT_EQUAL(proto_reject_str(r), "unknown reason");
	CU_ASSERT_STRING_EQUAL(proto_reject_str(0), "no reason given");
	CU_ASSERT_STRING_EQUAL(proto_reject_str(99), "unknown reason");
	for (r = KNET_HDR_SHORT; r <= KNET_HDR_LENGTH; r++)
		CU_ASSERT_STRING_NOT_EQUAL(proto_hdr_strerror((enum knet_hdr_error)r),
					   "unknown framing error");
}

/* The TCP digests: CRC32C's check value, and its known answers for 32 zero and 0xff bytes. */
static void test_crc32c(void)
{
	uint8_t b[32];

	CU_ASSERT_EQUAL(proto_crc32c("123456789", 9), 0xe3069283u);
	CU_ASSERT_EQUAL(proto_crc32c("", 0), 0);
	memset(b, 0, sizeof(b));
	CU_ASSERT_EQUAL(proto_crc32c(b, sizeof(b)), 0x8a9136aau);
	memset(b, 0xff, sizeof(b));
	CU_ASSERT_EQUAL(proto_crc32c(b, sizeof(b)), 0x62a8ab43u);
	/* Every length and alignment the eight-byte steps split differently. */
	for (size_t off = 0; off < 8; off++) {
		memset(b, 0, sizeof(b));
		memcpy(b + off, "123456789", 9);
		CU_ASSERT_EQUAL(proto_crc32c(b + off, 9), 0xe3069283u);
	}
	/* Against the CRC computed bit by bit, over random bytes of every length to 300. */
	{
		static uint8_t r[310];
		uint32_t x = 12345;

		for (size_t i = 0; i < sizeof(r); i++) {
			x = x * 1103515245u + 12345u;
			r[i] = (uint8_t)(x >> 16);
		}
		for (size_t n = 0; n <= 300; n++) {
			uint32_t c = 0xffffffffu;

			for (size_t i = 0; i < n; i++) {
				c ^= r[i + n % 8];
				for (int k = 0; k < 8; k++)
					c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
			}
			CU_ASSERT_EQUAL(proto_crc32c(r + n % 8, n), ~c);
		}
	}
}

int unit_add_proto_suite(void)
{
	static const struct {
		const char *name;
		CU_TestFunc fn;
	} tests[] = {
		{ "header: well-formed messages pass", test_hdr_well_formed },
		{ "header: short messages", test_hdr_short },
		{ "header: magic, version, reserved", test_hdr_magic_version_reserved },
		{ "header: segment count limit", test_hdr_segments },
		{ "header: lengths, no wrap-around", test_hdr_lengths },
		{ "connect: good request", test_cm_req_good },
		{ "connect: bad requests rejected with reasons", test_cm_req_bad },
		{ "names: containment", test_names },
		{ "strings: every code has text", test_strings },
		{ "CRC32C of the TCP digests: known answers", test_crc32c },
	};
	CU_pSuite s = CU_add_suite("wire protocol", NULL, NULL);
	size_t i;

	if (!s)
		return -1;
	for (i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
		if (!CU_add_test(s, tests[i].name, tests[i].fn))
			return -1;
	return 0;
}

// SPDX-License-Identifier: GPL-2.0-only
/* Unit tests of the server's dispatcher (server/dispatch.c). */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "server/dispatch.h"
#include "tests/unit/unit.h"

static size_t nop(unsigned char *buf, uint32_t tag)
{
	struct knet_hdr h;

	proto_hdr_init(&h, KNET_OP_NOP, tag, 0);
	memcpy(buf, &h, sizeof(h));
	return sizeof(h);
}

/* Dispatch BUF and return the reply's status; checks the reply's framing. */
static uint32_t answer(const unsigned char *buf, uint32_t len, uint32_t tag,
		       struct dispatch_stats *st)
{
	unsigned char out[256];
	struct knet_hdr r;
	size_t n = dispatch_message(buf, len, out, sizeof(out), 3, st);

	CU_ASSERT_EQUAL_FATAL(n, sizeof(struct knet_hdr));
	memcpy(&r, out, sizeof(r));
	CU_ASSERT_EQUAL(knet_hdr_check(&r, (uint32_t)n, 0), KNET_HDR_OK);
	CU_ASSERT_EQUAL(r.flags, KNET_HF_REPLY);
	CU_ASSERT_EQUAL(le32toh(r.tag), tag);
	CU_ASSERT_EQUAL(le16toh(r.credits), 3);
	return le32toh(r.status);
}

static void test_nop(void)
{
	unsigned char buf[64];
	struct dispatch_stats st = { 0 };

	CU_ASSERT_EQUAL(answer(buf, (uint32_t)nop(buf, 42), 42, &st), 0);
	CU_ASSERT_EQUAL(st.requests, 1);
	CU_ASSERT_EQUAL(st.malformed, 0);
}

static void test_unknown_opcode(void)
{
	unsigned char buf[64];
	struct dispatch_stats st = { 0 };
	size_t len = nop(buf, 5);

	buf[6] = 0xff;	/* opcode low byte */
	CU_ASSERT_EQUAL(answer(buf, (uint32_t)len, 5, &st), EOPNOTSUPP);
}

static void test_malformed_answered(void)
{
	unsigned char buf[64];
	struct dispatch_stats st = { 0 };
	size_t len;

	len = nop(buf, 7);
	buf[0] ^= 0xff;				/* magic */
	CU_ASSERT_EQUAL(answer(buf, (uint32_t)len, 7, &st), EBADMSG);
	len = nop(buf, 8);
	buf[4] = 2;				/* version */
	CU_ASSERT_EQUAL(answer(buf, (uint32_t)len, 8, &st), EPROTO);
	len = nop(buf, 9);
	buf[5] = KNET_HF_REPLY;			/* clients never send replies */
	CU_ASSERT_EQUAL(answer(buf, (uint32_t)len, 9, &st), EBADMSG);
	len = nop(buf, 10);
	CU_ASSERT_EQUAL(answer(buf, (uint32_t)len - 1, 10, &st), EBADMSG);	/* short */
	len = nop(buf, 11);
	CU_ASSERT_EQUAL(answer(buf, (uint32_t)len + 8, 11, &st), EBADMSG);	/* trailing bytes */
	CU_ASSERT_EQUAL(st.malformed, 5);
	CU_ASSERT_EQUAL(st.requests, 0);
}

static void test_unanswerable(void)
{
	unsigned char buf[64], out[64];
	struct dispatch_stats st = { 0 };

	nop(buf, 1);
	CU_ASSERT_EQUAL(dispatch_message(buf, 11, out, sizeof(out), 1, &st), 0);
	CU_ASSERT_EQUAL(dispatch_message(buf, 0, out, sizeof(out), 1, &st), 0);
	CU_ASSERT_EQUAL(st.dropped, 2);
	/* No room for a reply: nothing is written past the buffer. */
	CU_ASSERT_EQUAL(dispatch_message(buf, sizeof(struct knet_hdr), out, 8, 1, &st), 0);
}

int unit_add_dispatch_suite(void)
{
	CU_pSuite s = CU_add_suite("server dispatch", NULL, NULL);

	if (!s ||
	    !CU_add_test(s, "NOP is answered with the tag and the credits", test_nop) ||
	    !CU_add_test(s, "unknown opcode gets EOPNOTSUPP", test_unknown_opcode) ||
	    !CU_add_test(s, "malformed messages get EBADMSG/EPROTO", test_malformed_answered) ||
	    !CU_add_test(s, "messages without a readable tag are dropped", test_unanswerable))
		return -1;
	return 0;
}

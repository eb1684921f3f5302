// SPDX-License-Identifier: GPL-2.0-only
/* Unit tests of the server's framing dispatch (server/dispatch.c). */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "server/dispatch.h"
#include "tests/unit/unit.h"

static size_t msg(unsigned char *buf, uint16_t op, uint32_t tag)
{
	struct knet_hdr h;

	proto_hdr_init(&h, op, tag, 0);
	memcpy(buf, &h, sizeof(h));
	return sizeof(h);
}

/* Dispatch BUF, expecting a reply verdict; returns the status to answer. */
static uint32_t verdict_status(const unsigned char *buf, uint32_t len, uint32_t tag,
			       struct dispatch_stats *st)
{
	struct frame f;

	CU_ASSERT_EQUAL_FATAL(dispatch_frame(buf, len, &f, st), DISPATCH_REPLY);
	CU_ASSERT_EQUAL(f.tag, tag);
	return f.status;
}

static void test_nop_and_transport_ops(void)
{
	unsigned char buf[64];
	struct dispatch_stats st = { 0 };

	CU_ASSERT_EQUAL(verdict_status(buf, (uint32_t)msg(buf, KNET_OP_NOP, 42), 42, &st), 0);
	CU_ASSERT_EQUAL(verdict_status(buf, (uint32_t)msg(buf, 5, 43), 43, &st), EOPNOTSUPP);
	CU_ASSERT_EQUAL(st.requests, 2);
	/* AUTH goes to the connection's authentication (engine.c). */
	{
		struct frame f;

		CU_ASSERT_EQUAL(dispatch_frame(buf, (uint32_t)msg(buf, KNET_OP_AUTH, 44), &f, &st),
				DISPATCH_AUTH);
		CU_ASSERT_EQUAL(f.tag, 44);
	}
	CU_ASSERT_EQUAL(st.malformed, 0);
}

static void test_service_ops_pass(void)
{
	unsigned char buf[64];
	struct dispatch_stats st = { 0 };
	struct frame f;

	CU_ASSERT_EQUAL(dispatch_frame(buf, (uint32_t)msg(buf, KNET_OP_SERVICE_BASE + 3, 7), &f, &st),
			DISPATCH_SERVICE);
	CU_ASSERT_EQUAL(f.opcode, KNET_OP_SERVICE_BASE + 3);
	CU_ASSERT_EQUAL(f.tag, 7);
}

static void test_malformed_answered(void)
{
	unsigned char buf[64];
	struct dispatch_stats st = { 0 };
	size_t len;

	len = msg(buf, KNET_OP_SERVICE_BASE, 7);
	buf[0] ^= 0xff;				/* magic */
	CU_ASSERT_EQUAL(verdict_status(buf, (uint32_t)len, 7, &st), EBADMSG);
	len = msg(buf, KNET_OP_SERVICE_BASE, 8);
	buf[4] = 2;				/* version */
	CU_ASSERT_EQUAL(verdict_status(buf, (uint32_t)len, 8, &st), EPROTO);
	len = msg(buf, KNET_OP_SERVICE_BASE, 9);
	buf[5] = KNET_HF_REPLY;			/* clients never send replies */
	CU_ASSERT_EQUAL(verdict_status(buf, (uint32_t)len, 9, &st), EBADMSG);
	len = msg(buf, KNET_OP_SERVICE_BASE, 10);
	CU_ASSERT_EQUAL(verdict_status(buf, (uint32_t)len - 1, 10, &st), EBADMSG);	/* short */
	len = msg(buf, KNET_OP_SERVICE_BASE, 11);
	CU_ASSERT_EQUAL(verdict_status(buf, (uint32_t)len + 8, 11, &st), EBADMSG);	/* trailing */
	CU_ASSERT_EQUAL(st.malformed, 5);
	CU_ASSERT_EQUAL(st.requests, 0);
}

static void test_unanswerable(void)
{
	unsigned char buf[64];
	struct dispatch_stats st = { 0 };
	struct frame f;

	msg(buf, KNET_OP_NOP, 1);
	CU_ASSERT_EQUAL(dispatch_frame(buf, 11, &f, &st), DISPATCH_DROP);
	CU_ASSERT_EQUAL(dispatch_frame(buf, 0, &f, &st), DISPATCH_DROP);
	CU_ASSERT_EQUAL(st.dropped, 2);
}

static void test_build_reply(void)
{
	unsigned char out[128];
	struct frame f = { .opcode = 17, .tag = 99, .status = EROFS };
	struct knet_hdr r;
	size_t n = proto_build_reply(out, sizeof(out), &f, 3, "body", 4, "inline", 6);

	CU_ASSERT_EQUAL_FATAL(n, sizeof(r) + 10);
	memcpy(&r, out, sizeof(r));
	CU_ASSERT_EQUAL(knet_hdr_check(&r, (uint32_t)n, 0), KNET_HDR_OK);
	CU_ASSERT_EQUAL(r.flags, KNET_HF_REPLY);
	CU_ASSERT_EQUAL(le16toh(r.opcode), 17);
	CU_ASSERT_EQUAL(le32toh(r.tag), 99);
	CU_ASSERT_EQUAL(le16toh(r.credits), 3);
	CU_ASSERT_EQUAL(le32toh(r.status), EROFS);
	CU_ASSERT_EQUAL(memcmp(out + sizeof(r), "bodyinline", 10), 0);
	/* Too small a buffer: nothing is written past it. */
	CU_ASSERT_EQUAL(proto_build_reply(out, sizeof(r) + 9, &f, 1, "body", 4, "inline", 6), 0);
}

int unit_add_dispatch_suite(void)
{
	CU_pSuite s = CU_add_suite("server dispatch", NULL, NULL);

	if (!s ||
	    !CU_add_test(s, "NOP answered, other transport ops EOPNOTSUPP", test_nop_and_transport_ops) ||
	    !CU_add_test(s, "service operations go to the service", test_service_ops_pass) ||
	    !CU_add_test(s, "malformed messages get EBADMSG/EPROTO", test_malformed_answered) ||
	    !CU_add_test(s, "messages without a readable tag are dropped", test_unanswerable) ||
	    !CU_add_test(s, "replies carry tag, credits, status, body, inline", test_build_reply))
		return -1;
	return 0;
}

// SPDX-License-Identifier: GPL-2.0-only
/* Unit tests of the server configuration (server/config.c). */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <unistd.h>

#include "server/config.h"
#include "server/fsvc.h"
#include "tests/unit/unit.h"

/* The address S (IPv4 or IPv6), as the server takes a client's. */
static struct cfg_addr ip(const char *s)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6 };
	struct cfg_addr a = { { 0 } };

	if (inet_pton(AF_INET, s, &sin.sin_addr) == 1) {
		CU_ASSERT_EQUAL(config_addr_from_sa(&sin, sizeof(sin), &a), 0);
	} else if (inet_pton(AF_INET6, s, &sin6.sin6_addr) == 1) {
		CU_ASSERT_EQUAL(config_addr_from_sa(&sin6, sizeof(sin6), &a), 0);
	} else {
		CU_FAIL("not an address");
	}
	return a;
}

#define AT(s) (&(struct cfg_addr[]){ ip(s) }[0])

static void test_specs(void)
{
	struct config c;
	char err[256];

	config_init(&c);
	CU_ASSERT_EQUAL(config_add_spec(&c, KNET_SVC_BLOCK, "vol0=/dev/sdb,ro,prio=high", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(config_add_spec(&c, KNET_SVC_FILE, "home=/srv/home,squash", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(c.nex, 2);
	CU_ASSERT_STRING_EQUAL(c.ex[0].name, "vol0");
	CU_ASSERT_STRING_EQUAL(c.ex[0].path, "/dev/sdb");
	CU_ASSERT_TRUE(c.ex[0].read_only);
	CU_ASSERT_EQUAL(c.ex[0].class, FQ_HIGH);
	CU_ASSERT_TRUE(c.ex[1].squash);
	CU_ASSERT_PTR_EQUAL(config_find(&c, KNET_SVC_FILE, "home"), &c.ex[1]);
	CU_ASSERT_PTR_NULL(config_find(&c, KNET_SVC_BLOCK, "home"));	/* separate namespaces */

	CU_ASSERT_NOT_EQUAL(config_add_spec(&c, KNET_SVC_BLOCK, "vol0=/dev/sdc", err, sizeof(err)), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "named twice"));
	CU_ASSERT_NOT_EQUAL(config_add_spec(&c, KNET_SVC_BLOCK, "a/b=/x", err, sizeof(err)), 0);
	CU_ASSERT_NOT_EQUAL(config_add_spec(&c, KNET_SVC_BLOCK, "..=/x", err, sizeof(err)), 0);
	CU_ASSERT_NOT_EQUAL(config_add_spec(&c, KNET_SVC_BLOCK, "v=relative/path", err, sizeof(err)), 0);
	CU_ASSERT_NOT_EQUAL(config_add_spec(&c, KNET_SVC_BLOCK, "v=/x,bogus", err, sizeof(err)), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "unknown option 'bogus'"));
	CU_ASSERT_NOT_EQUAL(config_add_spec(&c, KNET_SVC_BLOCK, "v=/x,squash", err, sizeof(err)), 0);
	CU_ASSERT_NOT_EQUAL(config_add_spec(&c, KNET_SVC_BLOCK, "novalue", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(c.nex, 2);	/* failures add nothing */
}

/* Root is squashed unless an export says no_root_squash; all_squash, anonuid=, anongid=. */
static void test_squash(void)
{
	struct config c;
	char err[256];

	config_init(&c);
	CU_ASSERT_EQUAL(config_add_spec(&c, KNET_SVC_FILE, "plain=/srv/a", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(config_add_spec(&c, KNET_SVC_FILE, "trusted=/srv/b,no_root_squash", err,
					sizeof(err)), 0);
	CU_ASSERT_EQUAL(config_add_spec(&c, KNET_SVC_FILE, "pub=/srv/c,all_squash,anonuid=1500,anongid=1600",
					err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(config_add_spec(&c, KNET_SVC_BLOCK, "v=/dev/sdb", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(c.ex[0].squash, FSVC_SQUASH_ROOT);
	CU_ASSERT_EQUAL(c.ex[0].anon_uid, 65534);
	CU_ASSERT_EQUAL(c.ex[0].anon_gid, 65534);
	CU_ASSERT_EQUAL(c.ex[1].squash, FSVC_SQUASH_NONE);
	CU_ASSERT_EQUAL(c.ex[2].squash, FSVC_SQUASH_ALL);
	CU_ASSERT_EQUAL(c.ex[2].anon_uid, 1500);
	CU_ASSERT_EQUAL(c.ex[2].anon_gid, 1600);
	CU_ASSERT_EQUAL(c.ex[3].squash, FSVC_SQUASH_NONE);	/* volumes have no callers */
	CU_ASSERT_NOT_EQUAL(config_add_spec(&c, KNET_SVC_FILE, "x=/srv/x,anonuid=-1", err,
					    sizeof(err)), 0);
	CU_ASSERT_NOT_EQUAL(config_add_spec(&c, KNET_SVC_FILE, "x=/srv/x,anonuid=4294967295", err,
					    sizeof(err)), 0);
	CU_ASSERT_NOT_EQUAL(config_add_spec(&c, KNET_SVC_BLOCK, "x=/x,all_squash", err,
					    sizeof(err)), 0);
	/* subtree_check: off unless asked, file exports only. */
	CU_ASSERT_EQUAL(c.ex[0].subtree_check, 0);
	CU_ASSERT_EQUAL(config_add_spec(&c, KNET_SVC_FILE, "st=/srv/d,subtree_check", err,
					sizeof(err)), 0);
	CU_ASSERT_EQUAL(c.ex[4].subtree_check, 1);
	CU_ASSERT_EQUAL(config_add_spec(&c, KNET_SVC_FILE, "nst=/srv/e,subtree_check,no_subtree_check",
					err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(c.ex[5].subtree_check, 0);
	CU_ASSERT_NOT_EQUAL(config_add_spec(&c, KNET_SVC_BLOCK, "x=/x,subtree_check", err,
					    sizeof(err)), 0);
}

static void test_allow(void)
{
	struct config c;
	char err[256];

	config_init(&c);
	CU_ASSERT_TRUE(config_allowed(&c, AT("192.0.2.7")));	/* no list: everyone */
	CU_ASSERT_EQUAL(config_parse_line(&c, "allow 10.1.0.0/16 192.0.2.7", err, sizeof(err)), 0);
	CU_ASSERT_TRUE(config_allowed(&c, AT("10.1.200.3")));
	CU_ASSERT_TRUE(config_allowed(&c, AT("192.0.2.7")));
	CU_ASSERT_FALSE(config_allowed(&c, AT("10.2.0.1")));
	CU_ASSERT_FALSE(config_allowed(&c, AT("192.0.2.8")));
	CU_ASSERT_NOT_EQUAL(config_parse_line(&c, "allow 10.0.0.0/33", err, sizeof(err)), 0);
	CU_ASSERT_NOT_EQUAL(config_parse_line(&c, "allow 300.1.1.1", err, sizeof(err)), 0);
	CU_ASSERT_NOT_EQUAL(config_parse_line(&c, "allow 10.0.0.0/", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(config_parse_line(&c, "allow 0.0.0.0/0", err, sizeof(err)), 0);
	CU_ASSERT_TRUE(config_allowed(&c, AT("203.0.113.1")));
}

/* IPv6 clients and networks, beside IPv4 ones; addresses as text. */
static void test_allow_v6(void)
{
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct cfg_addr a;
	struct config c;
	char err[256], buf[INET6_ADDRSTRLEN];

	config_init(&c);
	CU_ASSERT_EQUAL(config_parse_line(&c, "allow fd77:0:0:1::/64 10.1.0.0/16 2001:db8::5",
					  err, sizeof(err)), 0);
	CU_ASSERT_TRUE(config_allowed(&c, AT("fd77:0:0:1::1")));
	CU_ASSERT_TRUE(config_allowed(&c, AT("fd77::1:ffff:ffff:ffff:ffff")));
	CU_ASSERT_FALSE(config_allowed(&c, AT("fd77:0:0:2::1")));
	CU_ASSERT_TRUE(config_allowed(&c, AT("2001:db8::5")));
	CU_ASSERT_FALSE(config_allowed(&c, AT("2001:db8::6")));
	CU_ASSERT_TRUE(config_allowed(&c, AT("10.1.2.3")));
	/* An IPv4 client is its IPv4 address, however its socket shows it. */
	CU_ASSERT_TRUE(config_allowed(&c, AT("::ffff:10.1.2.3")));
	CU_ASSERT_FALSE(config_allowed(&c, AT("::ffff:10.2.2.3")));
	CU_ASSERT_FALSE(config_allowed(&c, AT("::10.1.2.3")));	/* not mapped: another */
	/* A prefix that does not end on a byte. */
	CU_ASSERT_EQUAL(config_parse_line(&c, "allow 2001:db8:8000::/33", err, sizeof(err)), 0);
	CU_ASSERT_TRUE(config_allowed(&c, AT("2001:db8:ffff::1")));
	CU_ASSERT_FALSE(config_allowed(&c, AT("2001:db8:7fff::1")));
	CU_ASSERT_NOT_EQUAL(config_parse_line(&c, "allow fd77::/129", err, sizeof(err)), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "bad prefix length"));
	CU_ASSERT_NOT_EQUAL(config_parse_line(&c, "allow fd77:::1", err, sizeof(err)), 0);
	CU_ASSERT_NOT_EQUAL(config_parse_line(&c, "allow ::1/", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(config_parse_line(&c, "allow ::/0", err, sizeof(err)), 0);
	CU_ASSERT_TRUE(config_allowed(&c, AT("3fff::1")));

	CU_ASSERT_STRING_EQUAL(config_addr_str(AT("fd77:0::1"), buf, sizeof(buf)), "fd77::1");
	CU_ASSERT_STRING_EQUAL(config_addr_str(AT("192.0.2.7"), buf, sizeof(buf)), "192.0.2.7");
	CU_ASSERT_STRING_EQUAL(config_addr_str(AT("::ffff:192.0.2.7"), buf, sizeof(buf)),
			       "192.0.2.7");
	/* Another family, or too short: not known, and shown as such. */
	CU_ASSERT_NOT_EQUAL(config_addr_from_sa(&un, sizeof(un), &a), 0);
	CU_ASSERT_FALSE(config_addr_known(&a));
	CU_ASSERT_STRING_EQUAL(config_addr_str(&a, buf, sizeof(buf)), "?");
	/* Not known: refused by any list, even ::/0 (in c's), let in by none. */
	CU_ASSERT_FALSE(config_allowed(&c, &a));
	config_init(&c);
	CU_ASSERT_TRUE(config_allowed(&c, &a));
	CU_ASSERT_NOT_EQUAL(config_addr_from_sa(&sin, sizeof(sin) - 1, &a), 0);
	CU_ASSERT_NOT_EQUAL(config_addr_from_sa(NULL, 0, &a), 0);
	CU_ASSERT_EQUAL(config_addr_from_sa(&sin, sizeof(sin), &a), 0);
	CU_ASSERT_TRUE(config_addr_known(&a));	/* 0.0.0.0 is mapped: known */
}

/* Several listen addresses, each with its port or the default. */
static void test_listen(void)
{
	struct config a, b;
	char err[256], line[64];
	int i;

	config_init(&a);
	CU_ASSERT_EQUAL(config_parse_line(&a, "listen 10.0.0.1", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(config_parse_line(&a, "listen fd00::1 20100", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(a.nlisten, 2);
	CU_ASSERT_STRING_EQUAL(a.listen[1].addr, "fd00::1");
	CU_ASSERT_STRING_EQUAL(config_listen_port(&a, 0), "20077");	/* the default */
	CU_ASSERT_STRING_EQUAL(config_listen_port(&a, 1), "20100");
	snprintf(a.port, sizeof(a.port), "20200");			/* -p after the file */
	CU_ASSERT_STRING_EQUAL(config_listen_port(&a, 0), "20200");
	CU_ASSERT_STRING_EQUAL(config_listen_port(&a, 1), "20100");

	config_init(&b);
	CU_ASSERT_EQUAL(config_add_listen(&b, "10.0.0.1", "20200", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(config_add_listen(&b, "fd00::1", "20100", err, sizeof(err)), 0);
	CU_ASSERT_TRUE(config_same_listen(&a, &b));	/* the same ports, however given */
	CU_ASSERT_EQUAL(config_add_listen(&b, "10.0.0.2", NULL, err, sizeof(err)), 0);
	CU_ASSERT_FALSE(config_same_listen(&a, &b));

	config_init(&b);
	for (i = 0; i < CFG_MAX_LISTEN; i++) {
		snprintf(line, sizeof(line), "listen 10.0.0.%d", i + 1);
		CU_ASSERT_EQUAL(config_parse_line(&b, line, err, sizeof(err)), 0);
	}
	CU_ASSERT_NOT_EQUAL(config_parse_line(&b, "listen 10.0.1.1", err, sizeof(err)), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "more than 8 addresses"));
	CU_ASSERT_EQUAL(b.nlisten, CFG_MAX_LISTEN);
	CU_ASSERT_NOT_EQUAL(config_add_listen(&a, "", NULL, err, sizeof(err)), 0);

	/* TCP listeners: a list of their own, with a port in the address or beside it. */
	config_init(&b);
	CU_ASSERT_EQUAL(config_add_listen(&b, "tcp://10.0.0.1", NULL, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(config_add_listen(&b, "tcp://10.0.0.2:20099", NULL, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(config_add_listen(&b, "tcp://[fd00::1]:20100", NULL, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(config_parse_line(&b, "listen tcp://[::] 20101", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(config_add_listen(&b, "rdma://10.0.0.3", NULL, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(b.ntcp, 4);
	CU_ASSERT_EQUAL(b.nlisten, 1);
	CU_ASSERT_STRING_EQUAL(b.listen[0].addr, "10.0.0.3");
	CU_ASSERT_STRING_EQUAL(b.tcp[0].addr, "10.0.0.1");
	CU_ASSERT_STRING_EQUAL(config_tcp_port(&b, 0), "20077");
	CU_ASSERT_STRING_EQUAL(b.tcp[1].addr, "10.0.0.2");
	CU_ASSERT_STRING_EQUAL(config_tcp_port(&b, 1), "20099");
	CU_ASSERT_STRING_EQUAL(b.tcp[2].addr, "fd00::1");
	CU_ASSERT_STRING_EQUAL(config_tcp_port(&b, 2), "20100");
	CU_ASSERT_STRING_EQUAL(b.tcp[3].addr, "::");
	CU_ASSERT_STRING_EQUAL(config_tcp_port(&b, 3), "20101");
	/* Malformed: empty, an IPv6 address with a port out of brackets, brackets open. */
	CU_ASSERT_NOT_EQUAL(config_add_listen(&b, "tcp://", NULL, err, sizeof(err)), 0);
	CU_ASSERT_NOT_EQUAL(config_add_listen(&b, "tcp://fd00::1:20", NULL, err, sizeof(err)), 0);
	CU_ASSERT_NOT_EQUAL(config_add_listen(&b, "tcp://[fd00::1", NULL, err, sizeof(err)), 0);
	CU_ASSERT_NOT_EQUAL(config_add_listen(&b, "tcp://[fd00::1]x", NULL, err, sizeof(err)), 0);
	CU_ASSERT_NOT_EQUAL(config_add_listen(&b, "tcp://10.0.0.1:", NULL, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(b.ntcp, 4);
	config_init(&a);
	CU_ASSERT_EQUAL(config_add_listen(&a, "rdma://10.0.0.3", NULL, err, sizeof(err)), 0);
	CU_ASSERT_FALSE(config_same_listen(&a, &b));	/* the TCP addresses count too */

	/* Any address, in both families, and what only looks like it. */
	config_init(&b);
	CU_ASSERT_EQUAL(config_add_listen(&b, "0.0.0.0", NULL, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(config_add_listen(&b, "::", NULL, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(config_add_listen(&b, "0::0", NULL, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(config_add_listen(&b, "0.0.0.1", NULL, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(config_add_listen(&b, "::1", NULL, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(config_add_listen(&b, "::ffff:0.0.0.0", NULL, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(config_add_listen(&b, "fe80::1%eth0", NULL, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(config_add_listen(&b, "0", NULL, err, sizeof(err)), 0);
	CU_ASSERT_TRUE(config_listen_any(&b, 0));
	CU_ASSERT_TRUE(config_listen_any(&b, 1));
	CU_ASSERT_TRUE(config_listen_any(&b, 2));
	for (i = 3; i < b.nlisten; i++)
		CU_ASSERT_FALSE(config_listen_any(&b, i));
}

/* allow= of one export or volume: its own clients, in both forms. */
static void test_export_allow(void)
{
	struct config c;
	char err[256];
	const struct cfg_export *e;

	config_init(&c);
	CU_ASSERT_EQUAL(config_add_spec(&c, KNET_SVC_BLOCK,
					"db=/dev/sdb,allow=10.1.0.0/16,allow=192.0.2.7,ro", err,
					sizeof(err)), 0);
	CU_ASSERT_EQUAL(config_parse_line(&c, "export home /srv/home allow=198.51.100.0/24 squash",
					  err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(config_parse_line(&c, "export open /srv/open", err, sizeof(err)), 0);
	e = config_find(&c, KNET_SVC_BLOCK, "db");
	CU_ASSERT_PTR_NOT_NULL_FATAL(e);
	CU_ASSERT_EQUAL(e->nallow, 2);
	CU_ASSERT_TRUE(e->read_only);
	CU_ASSERT_TRUE(config_export_allowed(e, AT("10.1.9.9")));
	CU_ASSERT_TRUE(config_export_allowed(e, AT("192.0.2.7")));
	CU_ASSERT_FALSE(config_export_allowed(e, AT("192.0.2.8")));
	CU_ASSERT_FALSE(config_export_allowed(e, AT("10.2.0.1")));
	e = config_find(&c, KNET_SVC_FILE, "home");
	CU_ASSERT_PTR_NOT_NULL_FATAL(e);
	CU_ASSERT_TRUE(e->squash);
	CU_ASSERT_TRUE(config_export_allowed(e, AT("198.51.100.200")));
	CU_ASSERT_FALSE(config_export_allowed(e, AT("10.1.9.9")));
	/* No allow=: every client the server lets in. */
	e = config_find(&c, KNET_SVC_FILE, "open");
	CU_ASSERT_PTR_NOT_NULL_FATAL(e);
	CU_ASSERT_TRUE(config_export_allowed(e, AT("203.0.113.1")));
	CU_ASSERT_FALSE(config_same_allow(&c.ex[0], &c.ex[1]));
	CU_ASSERT_TRUE(config_same_allow(&c.ex[0], &c.ex[0]));

	CU_ASSERT_NOT_EQUAL(config_add_spec(&c, KNET_SVC_FILE, "x=/x,allow=10.0.0.0/33", err,
					    sizeof(err)), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "bad prefix length"));
	CU_ASSERT_NOT_EQUAL(config_add_spec(&c, KNET_SVC_FILE, "x=/x,allow=", err, sizeof(err)), 0);
	CU_ASSERT_NOT_EQUAL(config_parse_line(&c, "volume y /y allow=host.example", err,
					      sizeof(err)), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "not an IPv4 or IPv6 address"));
	CU_ASSERT_EQUAL(c.nex, 3);	/* failures add nothing */
	/* At most CFG_EXPORT_MAX_ALLOW of them. */
	{
		char line[1024] = "export many /many";
		int i;

		for (i = 0; i <= CFG_EXPORT_MAX_ALLOW; i++)
			snprintf(line + strlen(line), sizeof(line) - strlen(line),
				 " allow=10.0.%d.0/24", i);
		CU_ASSERT_NOT_EQUAL(config_parse_line(&c, line, err, sizeof(err)), 0);
		CU_ASSERT_PTR_NOT_NULL(strstr(err, "more than 16 allow= options"));
		*strrchr(line, ' ') = '\0';
		CU_ASSERT_EQUAL(config_parse_line(&c, line, err, sizeof(err)), 0);
		CU_ASSERT_EQUAL(c.ex[3].nallow, CFG_EXPORT_MAX_ALLOW);
	}
}

/* uuid= of a volume: its identity, in the one text form, never all zero. */
static void test_uuid(void)
{
	static const uint8_t want[16] = { 0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0x8d, 0xef,
					  0x80, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0xff };
	char err[256];
	const struct cfg_export *e;
	struct config c;
	uint8_t u[16];

	CU_ASSERT_EQUAL(config_uuid_parse("12345678-9ABC-8def-8001-0203040506ff", u), 0);
	CU_ASSERT_EQUAL(memcmp(u, want, sizeof(want)), 0);
	CU_ASSERT_NOT_EQUAL(config_uuid_parse("123456789abc8def80010203040506ff", u), 0);
	CU_ASSERT_NOT_EQUAL(config_uuid_parse("12345678-9abc-8def-8001-0203040506f", u), 0);
	CU_ASSERT_NOT_EQUAL(config_uuid_parse("12345678-9abc-8def-8001-0203040506ff0", u), 0);
	CU_ASSERT_NOT_EQUAL(config_uuid_parse("12345678-9abc-8def-8001-0203040506fg", u), 0);
	CU_ASSERT_NOT_EQUAL(config_uuid_parse("1234567-89abc-8def-8001-0203040506ff", u), 0);
	CU_ASSERT_NOT_EQUAL(config_uuid_parse("", u), 0);

	config_init(&c);
	CU_ASSERT_EQUAL(config_add_spec(&c, KNET_SVC_BLOCK,
					"db=/dev/sdb,uuid=12345678-9abc-8def-8001-0203040506ff", err,
					sizeof(err)), 0);
	CU_ASSERT_EQUAL(config_parse_line(&c, "volume plain /plain", err, sizeof(err)), 0);
	e = config_find(&c, KNET_SVC_BLOCK, "db");
	CU_ASSERT_PTR_NOT_NULL_FATAL(e);
	CU_ASSERT_TRUE(e->has_uuid);
	CU_ASSERT_EQUAL(memcmp(e->uuid, want, sizeof(want)), 0);
	e = config_find(&c, KNET_SVC_BLOCK, "plain");
	CU_ASSERT_PTR_NOT_NULL_FATAL(e);
	CU_ASSERT_FALSE(e->has_uuid);
	CU_ASSERT_NOT_EQUAL(config_parse_line(&c, "volume z /z uuid=00000000-0000-0000-0000-000000000000",
					      err, sizeof(err)), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "not all zero"));
	CU_ASSERT_NOT_EQUAL(config_parse_line(&c, "volume z /z uuid=volume-one", err, sizeof(err)), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "z: 'volume-one': a UUID"));
	/* A file export has no identity to give. */
	CU_ASSERT_NOT_EQUAL(config_add_spec(&c, KNET_SVC_FILE,
					    "x=/x,uuid=12345678-9abc-8def-8001-0203040506ff", err,
					    sizeof(err)), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "unknown option"));
	CU_ASSERT_EQUAL(c.nex, 2);
}

static void test_file(void)
{
	char path[] = "/tmp/orfs-unit-confXXXXXX", err[256];
	struct config c;
	int fd = mkstemp(path);
	FILE *f;

	CU_ASSERT_FATAL(fd >= 0);
	f = fdopen(fd, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs("# a comment\n\nlisten 10.0.0.1 20099\npool 128   # MiB\nchunk 512\nthreads 8\nprogress 3\npoll 250\n"
	      "export data /srv/data ro squash\nvolume vol0 /dev/nvme0n1 prio=low\n", f);
	fclose(f);
	config_init(&c);
	CU_ASSERT_EQUAL(config_parse_file(&c, path, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(c.nlisten, 1);
	CU_ASSERT_STRING_EQUAL(c.listen[0].addr, "10.0.0.1");
	CU_ASSERT_STRING_EQUAL(config_listen_port(&c, 0), "20099");
	CU_ASSERT_EQUAL(c.pool_mib, 128);
	CU_ASSERT_EQUAL(c.chunk_kib, 512);
	CU_ASSERT_EQUAL(c.threads, 8);
	CU_ASSERT_EQUAL(c.progress, 3);
	CU_ASSERT_EQUAL(c.poll_us, 250);
	CU_ASSERT_EQUAL(c.nex, 2);
	CU_ASSERT_TRUE(c.ex[0].read_only && c.ex[0].squash);
	CU_ASSERT_EQUAL(c.ex[1].class, FQ_LOW);

	f = fopen(path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs("pool 64\nvolume v /x\nchunk 6\n", f);
	fclose(f);
	config_init(&c);
	CU_ASSERT_NOT_EQUAL(config_parse_file(&c, path, err, sizeof(err)), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, ":3: chunk"));	/* the line is named */
	unlink(path);
	CU_ASSERT_NOT_EQUAL(config_parse_file(&c, path, err, sizeof(err)), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "No such file"));
	CU_ASSERT_NOT_EQUAL(config_parse_line(&c, "frobnicate 1", err, sizeof(err)), 0);
	CU_ASSERT_NOT_EQUAL(config_parse_line(&c, "pool 0", err, sizeof(err)), 0);
	CU_ASSERT_NOT_EQUAL(config_parse_line(&c, "poll -1", err, sizeof(err)), 0);
	CU_ASSERT_NOT_EQUAL(config_parse_line(&c, "poll 100001", err, sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(err, "poll: microseconds from 0 to 100000");
	CU_ASSERT_NOT_EQUAL(config_parse_line(&c, "progress 65", err, sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(err, "progress: threads from 1 to 64, or 0 for one a CPU");
	CU_ASSERT_EQUAL(config_parse_line(&c, "progress 0", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(c.progress, 0);
	/* READ sinks: per READ on iWARP only, unless asked everywhere. */
	config_init(&c);
	CU_ASSERT_EQUAL(c.read_sinks, CFG_SINKS_AUTO);
	CU_ASSERT_EQUAL(config_parse_line(&c, "read_sinks per_read", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(c.read_sinks, CFG_SINKS_PER_READ);
	CU_ASSERT_EQUAL(config_parse_line(&c, "read_sinks auto", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(c.read_sinks, CFG_SINKS_AUTO);
	CU_ASSERT_NOT_EQUAL(config_parse_line(&c, "read_sinks pool", err, sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(err, "read_sinks: auto or per_read");
	/* Silent connections: closed after 300 s by default, never with 0. */
	config_init(&c);
	CU_ASSERT_EQUAL(c.idle_timeout, 300);
	CU_ASSERT_EQUAL(config_parse_line(&c, "idle_timeout 0", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(c.idle_timeout, 0);
	CU_ASSERT_EQUAL(config_parse_line(&c, "idle_timeout 86400", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(c.idle_timeout, 86400);
	CU_ASSERT_NOT_EQUAL(config_parse_line(&c, "idle_timeout 86401", err, sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(err, "idle_timeout: seconds from 0 (never) to 86400");
	/* TCP connections that move nothing they owe: 30 s by default. */
	CU_ASSERT_EQUAL(c.stall_timeout, 30);
	CU_ASSERT_EQUAL(config_parse_line(&c, "stall_timeout 1", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(c.stall_timeout, 1);
	CU_ASSERT_NOT_EQUAL(config_parse_line(&c, "stall_timeout 0", err, sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(err, "stall_timeout: seconds from 1 to 3600");
	CU_ASSERT_NOT_EQUAL(config_parse_line(&c, "stall_timeout 3601", err, sizeof(err)), 0);
	/* Locks: the lease and the grace period (which defaults to the lease). */
	config_init(&c);
	CU_ASSERT_EQUAL(c.lease, 60);
	CU_ASSERT_EQUAL(c.grace, CFG_GRACE_LEASE);
	CU_ASSERT_EQUAL(config_parse_line(&c, "lease 5", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(config_parse_line(&c, "grace 0", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(c.lease, 5);
	CU_ASSERT_EQUAL(c.grace, 0);
	CU_ASSERT_NOT_EQUAL(config_parse_line(&c, "lease 0", err, sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(err, "lease: seconds from 1 to 3600");
	CU_ASSERT_NOT_EQUAL(config_parse_line(&c, "grace 3601", err, sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(err, "grace: seconds from 0 to 3600");
	CU_ASSERT_NOT_EQUAL(config_parse_line(&c, "volume onlyname", err, sizeof(err)), 0);
}

int unit_add_config_suite(void)
{
	CU_pSuite s = CU_add_suite("server configuration", NULL, NULL);

	if (!s ||
	    !CU_add_test(s, "exports and volumes from the command line", test_specs) ||
	    !CU_add_test(s, "root squashed by default; no_root_squash, all_squash, anonuid; subtree_check",
			 test_squash) ||
	    !CU_add_test(s, "allowed client networks", test_allow) ||
	    !CU_add_test(s, "IPv6 clients and networks", test_allow_v6) ||
	    !CU_add_test(s, "several listen addresses", test_listen) ||
	    !CU_add_test(s, "clients of one export or volume", test_export_allow) ||
	    !CU_add_test(s, "a volume's identity", test_uuid) ||
	    !CU_add_test(s, "configuration file, errors name their line", test_file))
		return -1;
	return 0;
}

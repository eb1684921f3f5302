// SPDX-License-Identifier: GPL-2.0-only
/*
 * The authentication's MACs against vectors computed apart (Python's
 * hmac module over the layout of knet_proto.h), secret files, and the
 * allow lines that name them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/auth.h"
#include "server/config.h"
#include "tests/unit/unit.h"

static const char server_mac_hex[] =
	"f12c42c18f4693d42a3f5a69dbe81335e082d859ca2a3f200097395680ef89da";
static const char client_mac_hex[] =
	"b70b91d3eb0f1e8ae734169202649336f4d9e2ed65b6bb9af6923028db47e283";

static void unhex(const char *h, uint8_t *out)
{
	size_t i;

	for (i = 0; i < strlen(h) / 2; i++)
		CU_ASSERT_EQUAL_FATAL(sscanf(h + 2 * i, "%2hhx", &out[i]), 1);
}

static void test_macs(void)
{
	struct auth_secret k = { .len = 32 };
	uint8_t nc[KNET_AUTH_NONCE], ns[KNET_AUTH_NONCE], mac[KNET_AUTH_MAC], want[KNET_AUTH_MAC];
	int i;

	memcpy(k.key, "0123456789abcdef0123456789abcdef", 32);
	for (i = 0; i < KNET_AUTH_NONCE; i++) {
		nc[i] = (uint8_t)i;
		ns[i] = (uint8_t)(32 + i);
	}
	CU_ASSERT_EQUAL(auth_mac(&k, 1, nc, ns, KNET_SVC_FILE, "data", mac), 0);
	unhex(server_mac_hex, want);
	CU_ASSERT(auth_mac_equal(mac, want));
	CU_ASSERT_EQUAL(auth_mac(&k, 0, nc, ns, KNET_SVC_FILE, "data", mac), 0);
	unhex(client_mac_hex, want);
	CU_ASSERT(auth_mac_equal(mac, want));
	/* Another name, service, nonce or secret: another MAC. */
	CU_ASSERT_EQUAL(auth_mac(&k, 0, nc, ns, KNET_SVC_FILE, "datb", mac), 0);
	CU_ASSERT(!auth_mac_equal(mac, want));
	CU_ASSERT_EQUAL(auth_mac(&k, 0, nc, ns, KNET_SVC_BLOCK, "data", mac), 0);
	CU_ASSERT(!auth_mac_equal(mac, want));
	CU_ASSERT_EQUAL(auth_mac(&k, 0, ns, nc, KNET_SVC_FILE, "data", mac), 0);
	CU_ASSERT(!auth_mac_equal(mac, want));
	k.key[0] ^= 1;
	CU_ASSERT_EQUAL(auth_mac(&k, 0, nc, ns, KNET_SVC_FILE, "data", mac), 0);
	CU_ASSERT(!auth_mac_equal(mac, want));
	/* No secret: no MAC. */
	k.len = 0;
	CU_ASSERT_EQUAL(auth_mac(&k, 0, nc, ns, KNET_SVC_FILE, "data", mac), -1);
}

/* Write TEXT into a new file P with MODE. */
static void put(const char *p, const char *text, mode_t mode)
{
	FILE *f;

	unlink(p);
	f = fopen(p, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs(text, f);
	fclose(f);
	CU_ASSERT_EQUAL(chmod(p, mode), 0);
}

static void test_secret_files(void)
{
	char dir[] = "/tmp/orfs-unit-authXXXXXX", p[128], q[128], err[256], line[400];
	struct auth_secret k;
	struct config c;
	struct cfg_addr a;
	const struct auth_secret *s;

	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
	snprintf(p, sizeof(p), "%s/good", dir);
	put(p, "a secret of more than sixteen bytes\n", 0600);
	CU_ASSERT_EQUAL(auth_load_secret(p, &k, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(k.len, strlen("a secret of more than sixteen bytes"));
	CU_ASSERT_EQUAL(memcmp(k.key, "a secret", 8), 0);
	/* Others may read it: refused; so is a symbolic link, and a short one. */
	CU_ASSERT_EQUAL(chmod(p, 0640), 0);
	CU_ASSERT_EQUAL(auth_load_secret(p, &k, err, sizeof(err)), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "refused"));
	CU_ASSERT_EQUAL(k.len, 0);
	CU_ASSERT_EQUAL(chmod(p, 0600), 0);
	snprintf(q, sizeof(q), "%s/link", dir);
	CU_ASSERT_EQUAL(symlink(p, q), 0);
	CU_ASSERT_EQUAL(auth_load_secret(q, &k, err, sizeof(err)), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "symbolic link"));
	snprintf(q, sizeof(q), "%s/short", dir);
	put(q, "short\n", 0600);
	CU_ASSERT_EQUAL(auth_load_secret(q, &k, err, sizeof(err)), -1);

	/* Allow lines: the most specific match decides the secret. */
	config_init(&c);
	snprintf(line, sizeof(line), "allow 192.0.2.0/24");
	CU_ASSERT_EQUAL(config_parse_line(&c, line, err, sizeof(err)), 0);
	snprintf(line, sizeof(line), "allow 192.0.2.7 198.51.100.0/24 secret=%s", p);
	CU_ASSERT_EQUAL(config_parse_line(&c, line, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(c.nallow, 3);
	memset(&a, 0, sizeof(a));
	a.b[10] = a.b[11] = 0xff;
	a.b[12] = 192;
	a.b[14] = 2;
	a.b[15] = 7;
	s = config_secret_for(&c, &a);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	CU_ASSERT_EQUAL(s->len, strlen("a secret of more than sixteen bytes"));
	a.b[15] = 8;
	CU_ASSERT_PTR_NULL(config_secret_for(&c, &a));
	CU_ASSERT(config_allowed(&c, &a));
	a.b[12] = 198;
	a.b[13] = 51;
	a.b[14] = 100;
	CU_ASSERT_PTR_NOT_NULL(config_secret_for(&c, &a));
	/* A missing or open secret file fails the line. */
	snprintf(line, sizeof(line), "allow 203.0.113.0/24 secret=%s/none", dir);
	CU_ASSERT_EQUAL(config_parse_line(&c, line, err, sizeof(err)), -1);
	CU_ASSERT_EQUAL(chmod(p, 0644), 0);
	snprintf(line, sizeof(line), "allow 203.0.113.0/24 secret=%s", p);
	CU_ASSERT_EQUAL(config_parse_line(&c, line, err, sizeof(err)), -1);
	snprintf(line, sizeof(line), "allow secret=%s", p);
	CU_ASSERT_EQUAL(config_parse_line(&c, line, err, sizeof(err)), -1);

	snprintf(line, sizeof(line), "rm -rf '%s'", dir);
	CU_ASSERT_EQUAL(system(line), 0);
}

int unit_add_auth_suite(void)
{
	CU_pSuite s = CU_add_suite("authentication", NULL, NULL);

	if (!s || !CU_add_test(s, "MACs: known answers, bound to name, service, nonces, secret",
			       test_macs) ||
	    !CU_add_test(s, "secret files and the allow lines that name them", test_secret_files))
		return -1;
	return 0;
}

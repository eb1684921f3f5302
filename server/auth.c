// SPDX-License-Identifier: GPL-2.0-only
/* knet's mutual authentication: MACs (HMAC-SHA256, OpenSSL) and secret files. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "server/auth.h"

int auth_mac(const struct auth_secret *k, int server_side, const uint8_t *nc, const uint8_t *ns,
	     uint8_t service, const char *name, uint8_t out[KNET_AUTH_MAC])
{
	uint8_t msg[KNET_AUTH_LABEL + 2 * KNET_AUTH_NONCE + 2 + KNET_NAME_MAX];
	size_t n = strlen(name), len = 0;
	unsigned int outlen = 0;

	if (n > KNET_NAME_MAX || !k->len)
		return -1;
	memcpy(msg, server_side ? KNET_AUTH_SERVER : KNET_AUTH_CLIENT, KNET_AUTH_LABEL);
	len += KNET_AUTH_LABEL;
	memcpy(msg + len, nc, KNET_AUTH_NONCE);
	len += KNET_AUTH_NONCE;
	memcpy(msg + len, ns, KNET_AUTH_NONCE);
	len += KNET_AUTH_NONCE;
	msg[len++] = service;
	msg[len++] = (uint8_t)n;
	memcpy(msg + len, name, n);
	len += n;
	if (!HMAC(EVP_sha256(), k->key, (int)k->len, msg, len, out, &outlen) ||
	    outlen != KNET_AUTH_MAC)
		return -1;
	return 0;
}

int auth_mac_equal(const uint8_t *a, const uint8_t *b)
{
	return !CRYPTO_memcmp(a, b, KNET_AUTH_MAC);
}

int auth_nonce(uint8_t *p)
{
	ssize_t n = getrandom(p, KNET_AUTH_NONCE, 0);

	if (n != KNET_AUTH_NONCE) {
		if (n >= 0)
			errno = EIO;
		return -1;
	}
	return 0;
}

int auth_private_file(int fd)
{
	struct stat st;

	return !fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
	       !(st.st_mode & 077);
}

int auth_load_secret(const char *path, struct auth_secret *k, char *err, size_t errlen)
{
	uint8_t buf[KNET_SECRET_MAX + 2];
	ssize_t n;
	int fd;

	memset(k, 0, sizeof(*k));
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "secret %s: %s%s", path, strerror(errno),
			 errno == ELOOP ? " (a symbolic link is refused)" : "");
		return -1;
	}
	if (!auth_private_file(fd)) {
		snprintf(err, errlen, "secret %s: refused: it must be a file of this user that nobody "
			 "else may read or write (mode 0600)", path);
		close(fd);
		return -1;
	}
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n < 0) {
		snprintf(err, errlen, "secret %s: %s", path, strerror(errno));
		return -1;
	}
	if (n > 0 && buf[n - 1] == '\n')
		n--;
	if (n < KNET_SECRET_MIN || n > KNET_SECRET_MAX) {
		snprintf(err, errlen, "secret %s: %d to %d bytes are needed", path, KNET_SECRET_MIN,
			 KNET_SECRET_MAX);
		explicit_bzero(buf, sizeof(buf));
		return -1;
	}
	memcpy(k->key, buf, (size_t)n);
	k->len = (uint32_t)n;
	explicit_bzero(buf, sizeof(buf));
	return 0;
}

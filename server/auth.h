/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * knet's mutual authentication with a shared secret (knet_proto.h,
 * KNET_OP_AUTH): the MACs and the secret files, for the server and the
 * userspace clients alike.
 */
#ifndef ORFS_SERVER_AUTH_H
#define ORFS_SERVER_AUTH_H

#include <stddef.h>
#include <stdint.h>

#include "knet/uapi/knet_proto.h"

/* A secret, as read from its file. */
struct auth_secret {
	uint8_t		key[KNET_SECRET_MAX];
	uint32_t	len;		/* 0: none */
};

/*
 * The MAC of one side (SERVER_SIDE: the server's, else the client's) over
 * the nonces NC (the client's) and NS (the server's), the service and the
 * export's or volume's NAME, into OUT. Returns 0, or -1 if the crypto
 * library failed.
 */
int auth_mac(const struct auth_secret *k, int server_side, const uint8_t *nc, const uint8_t *ns,
	     uint8_t service, const char *name, uint8_t out[KNET_AUTH_MAC]);

/* Are the two MACs equal? In constant time. */
int auth_mac_equal(const uint8_t *a, const uint8_t *b);

/* NONCE_LEN random bytes into P; returns 0 or -1 (errno set). */
int auth_nonce(uint8_t *p);

/*
 * Is the open file FD fit to hold a secret: a regular file of this
 * process's user that nobody else may read or write? (The handle key's
 * rule too.)
 */
int auth_private_file(int fd);

/*
 * Read the secret in PATH into *K: a regular file (not a symbolic link)
 * of this process's user that nobody else may read or write, holding
 * KNET_SECRET_MIN to KNET_SECRET_MAX bytes (one trailing newline is not
 * part of it). Returns 0, or -1 with the reason in ERR.
 */
int auth_load_secret(const char *path, struct auth_secret *k, char *err, size_t errlen);

#endif /* ORFS_SERVER_AUTH_H */

// SPDX-License-Identifier: GPL-2.0-only
/*
 * knet-ping: a userspace client of orfs-server speaking the knet protocol
 * over libfabric or TCP (-t). It connects to an export or volume, sends NOP requests
 * within its credits and checks every reply; with -x it sends one malformed
 * message first and checks that the server answers it with an error (or
 * drops the link when the message cannot be answered) and goes on serving.
 *
 * Exit status: 0 as expected, 1 error, 2 usage, 3 connection rejected.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/src/kclient.h"

#define MSG_SIZE	8192
#define DEPTH		8
#define TIMEOUT_MS	30000	/* generous: emulated guests under load are slow */

struct client {
	struct kc_fabric	f;
	struct kc_conn		k;
	struct kc_mr		mr;
	char			*buf;		/* DEPTH receive buffers, then one send buffer */
	struct fi_context	ctx[DEPTH + 1];
	uint32_t		tag;		/* of the last authentication step */
	struct knet_auth_rep	rep;		/* its answer's body */
	uint32_t		rep_len;
};

static char *rxb(struct client *c, int i)
{
	return c->buf + (size_t)i * MSG_SIZE;
}

static char *txb(struct client *c)
{
	return c->buf + (size_t)DEPTH * MSG_SIZE;
}

static int post_recv(struct client *c, int i)
{
	return kc_recv(&c->k, &c->mr, rxb(c, i), MSG_SIZE, &c->ctx[i]);
}

static int open_client(struct client *c, enum kc_transport tr, const char *addr,
		       const char *port, const char *prov)
{
	size_t size = (size_t)(DEPTH + 1) * MSG_SIZE;
	int i;

	if (kc_open(&c->f, tr, addr, port, prov, 64) || kc_ep_open(&c->f, &c->k, NULL, 16, DEPTH))
		return -1;
	c->buf = calloc(1, size);
	if (!c->buf) {
		fprintf(stderr, "knet-ping: out of memory\n");
		return -FI_ENOMEM;
	}
	if (kc_mr_reg(&c->f, &c->mr, c->buf, size, 0))
		return -1;
	for (i = 0; i < DEPTH; i++)
		if (post_recv(c, i))
			return -1;
	return 0;
}

static void close_client(struct client *c)
{
	kc_ep_close(&c->k);
	kc_mr_close(&c->mr);
	kc_close(&c->f);
	free(c->buf);
}

/*
 * Wait for the reply to one message: the send completion and one receive.
 * Returns 0 with *status set, 4 if the server dropped the link, 1 on error.
 */
static int wait_reply(struct client *c, uint32_t tag, uint32_t *status)
{
	int got_send = 0, got_recv = 0, waited = 0;

	while (!got_send || !got_recv) {
		struct kc_event e;
		int n = kc_wait(&c->f, &e, 1, 100);

		if (n > 0 && e.err) {
			if (e.err == FI_ECANCELED || e.err == FI_EIO || e.err == FI_ENOTCONN) {
				c->k.shutdown = 1;
				return 4;	/* flushed or closed: the link is gone */
			}
			fprintf(stderr, "knet-ping: completion error: %s\n", fi_strerror(e.err));
			return 1;
		}
		if (n == 0) {
			waited += 100;
			if (waited < TIMEOUT_MS)
				continue;
			fprintf(stderr, "knet-ping: no reply within %d ms\n", TIMEOUT_MS);
			return 1;
		}
		if (n < 0)
			return 1;
		if (e.ctx == &c->ctx[DEPTH]) {
			got_send = 1;
		} else {
			int i = (int)((struct fi_context *)e.ctx - c->ctx);
			struct knet_hdr h;

			memcpy(&h, rxb(c, i), sizeof(h));
			if (knet_hdr_check(&h, (uint32_t)e.len, 0) != KNET_HDR_OK ||
			    !(h.flags & KNET_HF_REPLY) || le32toh(h.tag) != tag) {
				fprintf(stderr, "knet-ping: bad reply (tag %u, want %u)\n",
					le32toh(h.tag), tag);
				return 1;
			}
			*status = le32toh(h.status);
			c->k.credits += le16toh(h.credits);
			c->rep_len = le32toh(h.body_len) <= sizeof(c->rep) ? le32toh(h.body_len) : 0;
			memcpy(&c->rep, rxb(c, i) + sizeof(h), c->rep_len);
			got_recv = 1;
			if (post_recv(c, i))
				return 1;
		}
	}
	return 0;
}

static int send_msg(struct client *c, size_t len)
{
	if (c->k.credits < 1) {
		fprintf(stderr, "knet-ping: no credit left\n");
		return 1;
	}
	if (kc_send(&c->k, &c->mr, txb(c), len, &c->ctx[DEPTH]))
		return 1;
	c->k.credits--;
	return 0;
}

static size_t make_nop(struct client *c, uint32_t tag)
{
	struct knet_hdr h;

	proto_hdr_init(&h, KNET_OP_NOP, tag, 0);
	memcpy(txb(c), &h, sizeof(h));
	return sizeof(h);
}

/* Make the NOP in the send buffer malformed as KIND says; returns its length. */
static size_t abuse(struct client *c, const char *kind, size_t len, int *want_drop)
{
	struct knet_hdr *h = (struct knet_hdr *)txb(c);

	*want_drop = 0;
	if (!strcmp(kind, "magic")) {
		h->magic ^= htole32(1);
	} else if (!strcmp(kind, "version")) {
		h->version = 99;
	} else if (!strcmp(kind, "reply")) {
		h->flags = KNET_HF_REPLY;
	} else if (!strcmp(kind, "segs")) {
		h->nsegs = htole16(KNET_MAX_SEGS + 1);
	} else if (!strcmp(kind, "length")) {
		h->body_len = htole32(0xfffffff0u);
		h->inline_len = htole32(0x20u);
	} else if (!strcmp(kind, "truncated")) {
		return len - 4;		/* tag still readable */
	} else if (!strcmp(kind, "tiny")) {
		*want_drop = 1;
		return 6;		/* not even a tag */
	} else if (!strcmp(kind, "opcode")) {
		h->opcode = htole16(0x7fff);
	} else if (!strcmp(kind, "before-auth")) {
		*want_drop = 1;		/* a true NOP, but before the authentication */
	} else {
		return 0;
	}
	return len;
}

/* One step of the authentication (kc_auth()). */
static int auth_call(void *ctx, const void *body, uint32_t len, void *rep, uint32_t *rep_len)
{
	struct client *c = ctx;
	struct knet_hdr h;
	uint32_t status;

	proto_hdr_init(&h, KNET_OP_AUTH, ++c->tag, 0);
	h.body_len = htole32(len);
	memcpy(txb(c), &h, sizeof(h));
	memcpy(txb(c) + sizeof(h), body, len);
	if (send_msg(c, sizeof(h) + len) || wait_reply(c, c->tag, &status))
		return -1;
	memcpy(rep, &c->rep, c->rep_len);
	*rep_len = c->rep_len;
	return (int)status;
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: knet-ping -a ADDRESS -n NAME [-p PORT] [-s file|block] [-c COUNT] [-K SECRET_FILE]\n"
		"                 [-V VERSION] [-t rdma|tcp|auto] [-P PROVIDER]\n"
		"                 [-x magic|version|reply|segs|length|truncated|tiny|opcode|before-auth]\n");
}

int main(int argc, char **argv)
{
	const char *addr = NULL, *name = NULL, *kind = NULL, *prov = "verbs", *secret_file = NULL;
	struct auth_secret secret;
	char port[16];
	struct client c;
	int service = KNET_SVC_FILE, version = KNET_PROTO_VERSION, count = 10;
	enum kc_transport tr = KC_RDMA;
	double t0, t, sum = 0, min = 1e30, max = 0;
	uint32_t status;
	int opt, i, ret;

	snprintf(port, sizeof(port), "%d", KNET_DEFAULT_PORT);
	if (kc_transport_env(&tr))
		return 2;
	while ((opt = getopt(argc, argv, "a:p:n:s:c:V:x:P:K:t:h")) != -1) {
		switch (opt) {
		case 'a': addr = optarg; break;
		case 'p': snprintf(port, sizeof(port), "%s", optarg); break;
		case 'n': name = optarg; break;
		case 's':
			if (!strcmp(optarg, "file")) {
				service = KNET_SVC_FILE;
			} else if (!strcmp(optarg, "block")) {
				service = KNET_SVC_BLOCK;
			} else {
				usage(stderr);
				return 2;
			}
			break;
		case 'c': count = atoi(optarg); break;
		case 'V': version = atoi(optarg); break;
		case 'x': kind = optarg; break;
		case 'P': prov = optarg; break;
		case 'K': secret_file = optarg; break;
		case 't':
			if (kc_transport_parse(optarg, &tr))
				return 2;
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!addr || !name || count < 0 || strlen(name) > KNET_NAME_MAX || optind != argc) {
		usage(stderr);
		return 2;
	}

	if (kc_load_secret(secret_file, &secret))
		return 2;
	memset(&c, 0, sizeof(c));
	if (open_client(&c, tr, addr, port, prov)) {
		close_client(&c);
		return 1;
	}
	ret = kc_connect(&c.f, &c.k, version, service, name, DEPTH,
			 MSG_SIZE - sizeof(struct knet_hdr), &secret, 0);
	if (ret)
		goto out;
	if (c.k.auth && !(kind && !strcmp(kind, "before-auth"))) {
		ret = kc_auth(&secret, service, name, auth_call, &c);
		if (ret) {
			ret = ret < 0 ? 1 : 3;
			goto out;
		}
		printf("authenticated: the server proved the secret, and so did this client\n");
	}
	printf("connected: version %u credits %d inline_max %u max_io %u max_segs %u over %s\n",
	       KNET_PROTO_VERSION, c.k.credits, c.k.inline_max, c.k.max_io, c.k.max_segs,
	       kc_transport_str(c.f.tr));

	if (kind) {
		int want_drop;
		size_t len = abuse(&c, kind, make_nop(&c, 0xabad1dea), &want_drop);

		if (!len) {
			usage(stderr);
			ret = 2;
			goto out;
		}
		ret = send_msg(&c, len);
		if (!ret)
			ret = wait_reply(&c, 0xabad1dea, &status);
		if (want_drop) {
			if (ret == 4) {
				printf("malformed '%s': the server dropped the connection, as it must\n", kind);
				ret = 0;
			} else {
				fprintf(stderr, "knet-ping: '%s' was not answered by a drop\n", kind);
				ret = 1;
			}
			goto out;
		}
		if (ret)
			goto out;
		printf("malformed '%s': answered with status %u (%s)\n", kind, status, strerror((int)status));
		if (!status) {
			fprintf(stderr, "knet-ping: the server accepted a malformed message\n");
			ret = 1;
			goto out;
		}
	}

	for (i = 0; i < count; i++) {
		t0 = now_us();
		ret = send_msg(&c, make_nop(&c, (uint32_t)i));
		if (!ret)
			ret = wait_reply(&c, (uint32_t)i, &status);
		if (ret)
			goto out;
		if (status) {
			fprintf(stderr, "knet-ping: NOP %d failed with status %u\n", i, status);
			ret = 1;
			goto out;
		}
		t = now_us() - t0;
		sum += t;
		min = t < min ? t : min;
		max = t > max ? t : max;
	}
	if (count)
		printf("%d NOPs: mean %.1f us, min %.1f us, max %.1f us\n", count, sum / count, min, max);
out:
	close_client(&c);
	return ret;
}

// SPDX-License-Identifier: GPL-2.0-only
/*
 * knet-ping: a userspace client of orfs-server speaking the knet protocol
 * over libfabric. It connects to an export or volume, sends NOP requests
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

#include "server/fab.h"
#include "server/proto.h"

#define MSG_SIZE	8192
#define DEPTH		8
#define TIMEOUT_MS	10000

struct client {
	struct fi_info		*info;
	struct fid_fabric	*fabric;
	struct fid_eq		*eq;
	struct fid_domain	*domain;
	struct fid_cq		*cq;
	struct fid_ep		*ep;
	struct fid_mr		*mr;
	char			*buf;		/* DEPTH receive buffers, then one send buffer */
	struct fi_context	ctx[DEPTH + 1];
	int			credits;
	int			shutdown;
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
	ssize_t ret = fi_recv(c->ep, rxb(c, i), MSG_SIZE, fi_mr_desc(c->mr), 0, &c->ctx[i]);

	return ret ? fab_err("fi_recv", (int)ret) : 0;
}

static int open_client(struct client *c, const char *addr, const char *port, const char *prov)
{
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_UNSPEC };
	struct fi_cq_attr cq_attr = {
		.format = FI_CQ_FORMAT_DATA, .size = 64, .wait_obj = FI_WAIT_UNSPEC,
	};
	struct fi_info *hints = fab_hints(prov);
	size_t size = (size_t)(DEPTH + 1) * MSG_SIZE;
	int ret, i;

	if (!hints)
		return -FI_ENOMEM;
	ret = fi_getinfo(FAB_VERSION, addr, port, 0, hints, &c->info);
	fi_freeinfo(hints);
	if (ret)
		return fab_err("fi_getinfo", ret);
	if ((ret = fi_fabric(c->info->fabric_attr, &c->fabric, NULL)) ||
	    (ret = fi_eq_open(c->fabric, &eq_attr, &c->eq, NULL)) ||
	    (ret = fi_domain(c->fabric, c->info, &c->domain, NULL)) ||
	    (ret = fi_cq_open(c->domain, &cq_attr, &c->cq, NULL)) ||
	    (ret = fi_endpoint(c->domain, c->info, &c->ep, NULL)) ||
	    (ret = fi_ep_bind(c->ep, &c->eq->fid, 0)) ||
	    (ret = fi_ep_bind(c->ep, &c->cq->fid, FI_TRANSMIT | FI_RECV)) ||
	    (ret = fi_enable(c->ep)))
		return fab_err("setting up the endpoint", ret);
	c->buf = calloc(1, size);
	if (!c->buf) {
		fprintf(stderr, "knet-ping: out of memory\n");
		return -FI_ENOMEM;
	}
	ret = fi_mr_reg(c->domain, c->buf, size, FI_SEND | FI_RECV, 0, 0, 0, &c->mr, NULL);
	if (ret)
		return fab_err("fi_mr_reg", ret);
	for (i = 0; i < DEPTH; i++)
		if (post_recv(c, i))
			return -1;
	return 0;
}

static void close_client(struct client *c)
{
	if (c->ep)
		fi_close(&c->ep->fid);
	if (c->mr)
		fi_close(&c->mr->fid);
	if (c->cq)
		fi_close(&c->cq->fid);
	if (c->domain)
		fi_close(&c->domain->fid);
	if (c->eq)
		fi_close(&c->eq->fid);
	if (c->fabric)
		fi_close(&c->fabric->fid);
	if (c->info)
		fi_freeinfo(c->info);
	free(c->buf);
}

/* Returns 0 when connected, 3 when rejected, 1 on other errors. */
static int connect_client(struct client *c, int version, int service, const char *name)
{
	struct knet_cm_req req;
	union {
		struct fi_eq_cm_entry cm;
		char raw[sizeof(struct fi_eq_cm_entry) + 64];
	} ev;
	struct knet_cm_rep rep;
	uint32_t event;
	ssize_t rd;
	int ret;

	memset(&req, 0, sizeof(req));
	req.version = htole16((uint16_t)version);
	req.service = (uint8_t)service;
	req.name_len = (uint8_t)strlen(name);
	req.recv_depth = htole16(DEPTH);
	req.inline_max = htole32(MSG_SIZE - sizeof(struct knet_hdr));
	memcpy(req.name, name, req.name_len);
	ret = fi_connect(c->ep, c->info->dest_addr, &req, sizeof(req));
	if (ret)
		return fab_err("fi_connect", ret), 1;

	rd = fi_eq_sread(c->eq, &event, &ev, sizeof(ev), TIMEOUT_MS, 0);
	if (rd == -FI_EAVAIL) {
		struct fi_eq_err_entry err;
		struct knet_cm_rej rej;

		memset(&err, 0, sizeof(err));
		if (fi_eq_readerr(c->eq, &err, 0) < 0)
			return 1;
		if (err.err == FI_ECONNREFUSED && err.err_data_size >= sizeof(rej)) {
			memcpy(&rej, err.err_data, sizeof(rej));
			printf("rejected: %s (server speaks version %u)\n",
			       proto_reject_str(le16toh(rej.reason)), le16toh(rej.version));
			return 3;
		}
		fprintf(stderr, "knet-ping: connect failed: %s\n", fi_strerror(err.err));
		return err.err == FI_ECONNREFUSED ? 3 : 1;
	}
	if (rd < 0)
		return fab_err("waiting for the connection", (int)rd), 1;
	if (event != FI_CONNECTED || (size_t)rd < sizeof(ev.cm) + sizeof(rep)) {
		fprintf(stderr, "knet-ping: unexpected event %u (%zd bytes)\n", event, rd);
		return 1;
	}
	memcpy(&rep, ev.cm.data, sizeof(rep));
	c->credits = le16toh(rep.credits);
	printf("connected: version %u credits %d inline_max %u max_io %u max_segs %u\n",
	       le16toh(rep.version), c->credits, le32toh(rep.inline_max),
	       le32toh(rep.max_io), le16toh(rep.max_segs));
	if (c->credits < 1 || c->credits > DEPTH) {
		fprintf(stderr, "knet-ping: the server granted %d credits for %d receives\n",
			c->credits, DEPTH);
		return 1;
	}
	return 0;
}

/* Has the server closed the connection (FI_SHUTDOWN or a CM error)? */
static int peer_gone(struct client *c)
{
	struct fi_eq_cm_entry ev;
	uint32_t event;
	ssize_t rd = fi_eq_read(c->eq, &event, &ev, sizeof(ev), 0);

	if (rd == -FI_EAVAIL) {
		struct fi_eq_err_entry err;

		memset(&err, 0, sizeof(err));
		fi_eq_readerr(c->eq, &err, 0);
		c->shutdown = 1;
		return 1;
	}
	if (rd >= 0 && event == FI_SHUTDOWN) {
		c->shutdown = 1;
		return 1;
	}
	return 0;
}

/*
 * Wait for the reply to one message: the send completion and one receive.
 * Returns 0 with *status set, 4 if the server dropped the link, 1 on error.
 */
static int wait_reply(struct client *c, uint32_t tag, uint32_t *status)
{
	int got_send = 0, got_recv = 0, waited = 0;

	while (!got_send || !got_recv) {
		struct fi_cq_data_entry e;
		ssize_t n = fi_cq_sread(c->cq, &e, 1, NULL, 100);

		if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry err;

			memset(&err, 0, sizeof(err));
			fi_cq_readerr(c->cq, &err, 0);
			if (err.err == FI_ECANCELED || err.err == FI_EIO) {
				c->shutdown = 1;
				return 4;	/* flushed: the link is gone */
			}
			fprintf(stderr, "knet-ping: completion error: %s\n", fi_strerror(err.err));
			return 1;
		}
		if (n == -FI_EAGAIN) {
			/* A disconnect shows on the event queue, not the CQ. */
			if (peer_gone(c))
				return 4;
			waited += 100;
			if (waited < TIMEOUT_MS)
				continue;
			fprintf(stderr, "knet-ping: no reply within %d ms\n", TIMEOUT_MS);
			return 1;
		}
		if (n < 0)
			return fab_err("fi_cq_sread", (int)n), 1;
		if (e.op_context == &c->ctx[DEPTH]) {
			got_send = 1;
		} else {
			int i = (int)((struct fi_context *)e.op_context - c->ctx);
			struct knet_hdr h;

			memcpy(&h, rxb(c, i), sizeof(h));
			if (knet_hdr_check(&h, (uint32_t)e.len, 0) != KNET_HDR_OK ||
			    !(h.flags & KNET_HF_REPLY) || le32toh(h.tag) != tag) {
				fprintf(stderr, "knet-ping: bad reply (tag %u, want %u)\n",
					le32toh(h.tag), tag);
				return 1;
			}
			*status = le32toh(h.status);
			c->credits += le16toh(h.credits);
			got_recv = 1;
			if (post_recv(c, i))
				return 1;
		}
	}
	return 0;
}

static int send_msg(struct client *c, size_t len)
{
	ssize_t ret;

	if (c->credits < 1) {
		fprintf(stderr, "knet-ping: no credit left\n");
		return 1;
	}
	ret = fi_send(c->ep, txb(c), len, fi_mr_desc(c->mr), 0, &c->ctx[DEPTH]);
	if (ret)
		return fab_err("fi_send", (int)ret), 1;
	c->credits--;
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
	} else {
		return 0;
	}
	return len;
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
		"usage: knet-ping -a ADDRESS -n NAME [-p PORT] [-s file|block] [-c COUNT]\n"
		"                 [-V VERSION] [-x magic|version|reply|segs|length|truncated|tiny|opcode]\n");
}

int main(int argc, char **argv)
{
	const char *addr = NULL, *name = NULL, *kind = NULL, *prov = "verbs";
	char port[16];
	struct client c;
	int service = KNET_SVC_FILE, version = KNET_PROTO_VERSION, count = 10;
	double t0, t, sum = 0, min = 1e30, max = 0;
	uint32_t status;
	int opt, i, ret;

	snprintf(port, sizeof(port), "%d", KNET_DEFAULT_PORT);
	while ((opt = getopt(argc, argv, "a:p:n:s:c:V:x:P:h")) != -1) {
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
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!addr || !name || count < 0 || strlen(name) > KNET_NAME_MAX || optind != argc) {
		usage(stderr);
		return 2;
	}

	memset(&c, 0, sizeof(c));
	if (open_client(&c, addr, port, prov)) {
		close_client(&c);
		return 1;
	}
	ret = connect_client(&c, version, service, name);
	if (ret)
		goto out;

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
	if (!c.shutdown && c.ep)
		fi_shutdown(c.ep, 0);
	close_client(&c);
	return ret;
}

// SPDX-License-Identifier: GPL-2.0-only
/* Userspace client side of the knet protocol on libfabric. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "tests/src/kclient.h"

#define CONNECT_TIMEOUT_MS 10000

int kc_open(struct kc_fabric *f, const char *addr, const char *port, const char *prov,
	    size_t cq_size)
{
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_UNSPEC };
	struct fi_cq_attr cq_attr = {
		.format = FI_CQ_FORMAT_DATA, .size = cq_size, .wait_obj = FI_WAIT_UNSPEC,
	};
	struct fi_info *hints = fab_hints(prov, addr);
	int ret;

	memset(f, 0, sizeof(*f));
	if (!hints)
		return -FI_ENOMEM;
	ret = fi_getinfo(FAB_VERSION, addr, port, 0, hints, &f->info);
	fi_freeinfo(hints);
	if (ret)
		return fab_err("fi_getinfo", ret);
	if ((ret = fi_fabric(f->info->fabric_attr, &f->fabric, NULL)) ||
	    (ret = fi_eq_open(f->fabric, &eq_attr, &f->eq, NULL)) ||
	    (ret = fi_domain(f->fabric, f->info, &f->domain, NULL)) ||
	    (ret = fi_cq_open(f->domain, &cq_attr, &f->cq, NULL)))
		return fab_err("opening the fabric", ret);
	return 0;
}

void kc_close(struct kc_fabric *f)
{
	if (f->cq)
		fi_close(&f->cq->fid);
	if (f->domain)
		fi_close(&f->domain->fid);
	if (f->eq)
		fi_close(&f->eq->fid);
	if (f->fabric)
		fi_close(&f->fabric->fid);
	if (f->info)
		fi_freeinfo(f->info);
	memset(f, 0, sizeof(*f));
}

int kc_ep_open(struct kc_fabric *f, struct kc_conn *c, void *context, size_t tx, size_t rx)
{
	int ret;

	memset(c, 0, sizeof(*c));
	f->info->tx_attr->size = tx;
	f->info->rx_attr->size = rx;
	f->info->tx_attr->inject_size = 0;	/* no fi_inject() */
	if ((ret = fi_endpoint(f->domain, f->info, &c->ep, context)) ||
	    (ret = fi_ep_bind(c->ep, &f->eq->fid, 0)) ||
	    (ret = fi_ep_bind(c->ep, &f->cq->fid, FI_TRANSMIT | FI_RECV)) ||
	    (ret = fi_enable(c->ep)))
		return fab_err("opening an endpoint", ret);
	return 0;
}

void kc_ep_close(struct kc_conn *c)
{
	if (!c->ep)
		return;
	if (!c->shutdown)
		fi_shutdown(c->ep, 0);
	fi_close(&c->ep->fid);
	c->ep = NULL;
}

int kc_connect(struct kc_fabric *f, struct kc_conn *c, int version, int service,
	       const char *name, uint16_t depth, uint32_t inline_max,
	       const struct auth_secret *secret, int quiet)
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
	req.recv_depth = htole16(depth);
	req.inline_max = htole32(inline_max);
	req.flags = htole16(secret && secret->len ? KNET_CMF_AUTH : 0);
	memcpy(req.name, name, req.name_len);
	ret = fi_connect(c->ep, f->info->dest_addr, &req, sizeof(req));
	if (ret)
		return fab_err("fi_connect", ret), 1;

	/* Events of other endpoints (an earlier one closing) are passed over. */
	do {
		rd = fi_eq_sread(f->eq, &event, &ev, sizeof(ev), CONNECT_TIMEOUT_MS, 0);
	} while (rd >= (ssize_t)sizeof(ev.cm) && ev.cm.fid != &c->ep->fid);
	if (rd == -FI_EAVAIL) {
		struct fi_eq_err_entry err;
		struct knet_cm_rej rej;

		memset(&err, 0, sizeof(err));
		if (fi_eq_readerr(f->eq, &err, 0) < 0)
			return 1;
		if (err.fid != &c->ep->fid) {
			fprintf(stderr, "connect: an error event of another endpoint: %s\n",
				fi_strerror(err.err));
			return 1;
		}
		c->shutdown = 1;
		if (err.err == FI_ECONNREFUSED && err.err_data_size >= sizeof(rej)) {
			memcpy(&rej, err.err_data, sizeof(rej));
			if (!quiet)
				printf("rejected: %s (server speaks version %u)\n",
				       proto_reject_str(le16toh(rej.reason)), le16toh(rej.version));
			return 3;
		}
		fprintf(stderr, "connect failed: %s\n", fi_strerror(err.err));
		return err.err == FI_ECONNREFUSED ? 3 : 1;
	}
	if (rd < 0)
		return fab_err("waiting for the connection", (int)rd), 1;
	if (event != FI_CONNECTED || (size_t)rd < sizeof(ev.cm) + sizeof(rep)) {
		fprintf(stderr, "unexpected connection event %u (%zd bytes)\n", event, rd);
		return 1;
	}
	memcpy(&rep, ev.cm.data, sizeof(rep));
	c->credits = le16toh(rep.credits);
	c->inline_max = le32toh(rep.inline_max);
	c->max_io = le32toh(rep.max_io);
	c->max_segs = le16toh(rep.max_segs);
	c->auth = !!(le16toh(rep.flags) & KNET_CMF_AUTH);
	if (c->auth != (secret && secret->len)) {
		fprintf(stderr, "connect: the server %s\n", c->auth ?
			"asks for an authentication this client did not offer" :
			"does not authenticate (it may not be the server that holds the secret)");
		return 1;
	}
	if (c->credits < 1 || c->credits > depth) {
		fprintf(stderr, "the server granted %d credits for %u receives\n", c->credits, depth);
		return 1;
	}
	return 0;
}

int kc_auth(const struct auth_secret *k, int service, const char *name, kc_auth_call call,
	    void *ctx)
{
	struct knet_auth_req a;
	struct knet_auth_rep rep;
	uint8_t nc[KNET_AUTH_NONCE], mac[KNET_AUTH_MAC];
	uint32_t len = 0;
	int st;

	memset(&a, 0, sizeof(a));
	a.step = 1;
	if (auth_nonce(nc))
		return fprintf(stderr, "authentication: getrandom: %s\n", strerror(errno)), -1;
	memcpy(a.data, nc, sizeof(nc));
	st = call(ctx, &a, sizeof(a), &rep, &len);
	if (st)
		goto refused;
	if (len != sizeof(rep))
		return fprintf(stderr, "authentication: a step 1 answer of %u bytes\n", len), EACCES;
	/* The server first proves it holds the secret. */
	if (auth_mac(k, 1, nc, rep.nonce, (uint8_t)service, name, mac) ||
	    !auth_mac_equal(mac, rep.mac)) {
		fprintf(stderr, "authentication: the server's proof is wrong: it does not hold the secret\n");
		return EACCES;
	}
	a.step = 2;
	if (auth_mac(k, 0, nc, rep.nonce, (uint8_t)service, name, a.data))
		return fprintf(stderr, "authentication: no HMAC\n"), -1;
	st = call(ctx, &a, sizeof(a), &rep, &len);
	if (!st)
		return 0;
refused:
	if (st > 0)
		fprintf(stderr, "authentication refused by the server: %s\n", strerror(st));
	return st;
}

int kc_load_secret(const char *file, struct auth_secret *k)
{
	char err[512];

	memset(k, 0, sizeof(*k));
	if (!file)
		return 0;
	if (auth_load_secret(file, k, err, sizeof(err)))
		return fprintf(stderr, "%s\n", err), -1;
	return 0;
}

struct fid *kc_peer_gone(struct kc_fabric *f)
{
	struct fi_eq_cm_entry ev;
	uint32_t event;
	ssize_t rd = fi_eq_read(f->eq, &event, &ev, sizeof(ev), 0);

	if (rd == -FI_EAVAIL) {
		struct fi_eq_err_entry err;

		memset(&err, 0, sizeof(err));
		if (fi_eq_readerr(f->eq, &err, 0) < 0)
			return NULL;
		return err.fid;
	}
	return rd >= (ssize_t)sizeof(ev) && event == FI_SHUTDOWN ? ev.fid : NULL;
}

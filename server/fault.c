// SPDX-License-Identifier: GPL-2.0-only
/*
 * orfs-server: fault injection, a test aid. With -F and ORFS_SERVER_FAULT,
 * replies lie in the way named (a wrong tag or length, a status or body no
 * file system or volume can give, an RDMA WRITE after the reply, a sync
 * not done), so that the tests can show what clients do with a lying
 * server. Without -F none of this runs.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "server/srv.h"

/**
 * fault_configure() - the fault that ORFS_SERVER_FAULT names, if ENABLED (-F)
 * @s: the server
 * @enabled: whether -F was given
 *
 * Return: 0, or 2 (the exit status) for an unknown fault or a bad setting.
 */
int fault_configure(struct srv *s, int enabled)
{
	static const char *const names[] = {
		[FAULT_TAG] = "tag", [FAULT_INLINE] = "inline", [FAULT_BODY] = "body",
		[FAULT_OPCODE] = "opcode", [FAULT_FS_NAME] = "fs-name",
		[FAULT_FS_COUNT] = "fs-count", [FAULT_FS_ATTR] = "fs-attr",
		[FAULT_FS_LOOP] = "fs-loop", [FAULT_FS_RANDOM] = "fs-random",
		[FAULT_FS_BUSY] = "fs-busy", [FAULT_FS_STATUS] = "fs-status",
		[FAULT_BLOCK_RANDOM] = "block-random",
		[FAULT_BLOCK_INFO] = "block-info", [FAULT_LATE_WRITE] = "late-write",
		[FAULT_FS_MODE] = "fs-mode", [FAULT_FS_OWNER] = "fs-owner",
		[FAULT_NO_SYNC] = "no-sync",
	};
	const char *f = getenv("ORFS_SERVER_FAULT");
	const char *seed = getenv("ORFS_SERVER_FAULT_SEED");
	int i;

	if (f && !enabled)
		srv_log("ORFS_SERVER_FAULT is ignored: fault injection needs -F");
	if (!f || !enabled)
		return 0;
	for (i = FAULT_TAG; i < (int)(sizeof(names) / sizeof(names[0])); i++)
		if (!strcmp(f, names[i]))
			s->fault = i;
	if (!s->fault) {
		fprintf(stderr, "orfs-server: ORFS_SERVER_FAULT=%s: no such fault\n", f);
		return 2;
	}
	s->fault_seed = seed ? strtoull(seed, NULL, 0) : 0;
	if (!s->fault_seed)
		s->fault_seed = 1;	/* xorshift's one state that never moves */
	if (s->fault == FAULT_FS_STATUS) {
		const char *st = getenv("ORFS_SERVER_FAULT_STATUS");

		if (!st || config_parse_uint(st, 1, UINT32_MAX, &s->fault_status)) {
			fprintf(stderr, "orfs-server: fs-status needs ORFS_SERVER_FAULT_STATUS, 1 to 4294967295\n");
			return 2;
		}
	}
	srv_log("ORFS_SERVER_FAULT=%s: replies will lie (a test aid; seed %llu)", f,
		(unsigned long long)s->fault_seed);
	return 0;
}

/* Make the reply in BUF (N bytes) lie as FAULT says; returns its new length. */
size_t inject_fault(int fault, char *buf, size_t n)
{
	struct knet_hdr h;
	size_t extra = 0;

	memcpy(&h, buf, sizeof(h));
	switch (fault) {
	case FAULT_TAG:
		h.tag = htole32(le32toh(h.tag) ^ 0x5a5a00);
		break;
	case FAULT_INLINE:
		extra = 64;
		h.inline_len = htole32(le32toh(h.inline_len) + (uint32_t)extra);
		break;
	case FAULT_OPCODE:
		h.opcode = htole16(le16toh(h.opcode) ^ 0x5a);
		break;
	case FAULT_BODY:
		extra = 2048;
		h.body_len = htole32(le32toh(h.body_len) + (uint32_t)extra);
		memmove(buf + sizeof(h) + extra, buf + sizeof(h), n - sizeof(h));
		break;
	}
	if (n + extra > SRV_TX_SIZE)
		return n;
	memset(buf + n, 0x5a, fault == FAULT_INLINE ? extra : 0);
	memcpy(buf, &h, sizeof(h));
	return n + extra;
}

/* The next number of the "fs-random" fault's generator (xorshift64). */
static uint32_t fault_rand(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return (uint32_t)(*x >> 32);
}

/*
 * "fs-random" and "block-random": of eight replies, one gets a random
 * status (mostly values no errno has), three get one to four random bytes
 * of their BODY (LEN bytes; none for most block replies) changed (mostly
 * in its first 256 bytes, where the fields are), four stay true.
 */
static void scramble(struct req *r, uint8_t *body, uint32_t len)
{
	uint64_t *rng = &r->c->sh->fault_rng;
	uint32_t roll = fault_rand(rng) % 8, n, span;

	if (roll == 0) {
		n = fault_rand(rng) % 32;	/* one draw after the other: a seed's run repeats */
		r->f.status = fault_rand(rng) >> n;
		return;
	}
	if (roll > 3 || !body || !len || r->f.status)
		return;
	span = len > 256 && fault_rand(rng) % 4 ? 256 : len;
	for (n = 1 + fault_rand(rng) % 4; n; n--)
		body[fault_rand(rng) % span] ^= (uint8_t)(1 + fault_rand(rng) % 255);
}

/*
 * Make a file service reply body lie as FAULT says (a test aid): the
 * framing stays right, the content is what no file system can hold.
 */
void inject_fs_fault(int fault, struct req *r)
{
	uint8_t *b = r->fbody;
	uint32_t v;

	if (fault == FAULT_FS_RANDOM) {
		scramble(r, r->fbody, r->fbody_len);
		return;
	}
	if (fault == FAULT_FS_BUSY) {
		r->f.status = EINPROGRESS;
		return;
	}
	if (fault == FAULT_FS_STATUS) {
		r->f.status = r->c->s->fault_status;
		return;
	}
	if (!b || r->f.status)
		return;
	switch (fault) {
	case FAULT_FS_NAME:
		/* The first entry's name, after the header and the entry. */
		if (r->fr.op == ORFS_OP_READDIR && r->fbody_len > sizeof(struct orfs_readdir_rep) +
		    sizeof(struct orfs_dirent))
			b[sizeof(struct orfs_readdir_rep) + sizeof(struct orfs_dirent)] = '/';
		break;
	case FAULT_FS_COUNT:
		if (r->fr.op == ORFS_OP_READ) {
			v = htole32(le32toh(r->fr.u.io.length) + 4096);
			memcpy(b + offsetof(struct orfs_io_rep, count), &v, sizeof(v));
		}
		break;
	case FAULT_FS_ATTR:
	case FAULT_FS_MODE:
	case FAULT_FS_OWNER:
		/* GETATTR's body is the attributes; LOOKUP's has them after the handle. */
		if (r->fr.op == ORFS_OP_LOOKUP)
			b += offsetof(struct orfs_entry_rep, attr);
		else if (r->fr.op != ORFS_OP_GETATTR)
			break;
		if (fault == FAULT_FS_OWNER) {
			v = htole32(UINT32_MAX);
			memcpy(b + offsetof(struct orfs_attr, uid), &v, sizeof(v));
			break;
		}
		memcpy(&v, b + offsetof(struct orfs_attr, mode), sizeof(v));
		v = htole32(le32toh(v) | (fault == FAULT_FS_MODE ? 0x10000 : S_IFMT));
		memcpy(b + offsetof(struct orfs_attr, mode), &v, sizeof(v));
		break;
	case FAULT_FS_LOOP: {
		/* A subdirectory that is the export's root, its own ancestor. */
		struct orfs_entry_rep *e = (struct orfs_entry_rep *)b, root;
		struct fsvc_req rq = { .op = ORFS_OP_GETROOT };
		int none = -1;

		if (r->fr.op == ORFS_OP_LOOKUP && S_ISDIR(le32toh(e->attr.mode)) &&
		    !fsvc_execute(&r->c->ex->fx, &rq, &none, &root, sizeof(root), &v))
			memcpy(e, &root, sizeof(root));
		break;
	}
	}
}

/*
 * Make a block service reply lie as FAULT says (a test aid), well framed:
 * its body B, BLEN bytes long. Returns the body's new length.
 */
uint32_t inject_block_fault(int fault, struct req *r, union block_body *b, uint32_t blen)
{
	if (fault == FAULT_BLOCK_RANDOM) {
		scramble(r, (uint8_t *)b, blen);
		return r->f.status ? 0 : blen;
	}
	if (fault == FAULT_BLOCK_INFO && blen && r->br.opcode == MXBD_OP_INFO)
		b->info.physical_block = htole32(3000);
	return blen;
}

/*
 * Whether a test fault makes R's reply lie: once the client is set up. A
 * file connection opens with SESSION, and a mount's first one asks GETROOT
 * too: every other reply lies, on every connection of the mount. A block
 * connection lies from its third reply on.
 */
int fault_lies(const struct conn *c, const struct req *r)
{
	if (!c->s->fault || r->f.opcode == KNET_OP_AUTH)
		return 0;
	if (conn_is_file(c))
		return r->f.opcode != ORFS_OP_SESSION && r->f.opcode != ORFS_OP_GETROOT;
	return c->st.requests > 2;
}

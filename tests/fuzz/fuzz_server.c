// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer target over everything the server does with bytes a client
 * controls before any fabric is involved: connect private data, message
 * framing, block request decoding, the split of a request over its client
 * segments, and the execution of accepted requests against a scratch
 * volume. RDMA is modelled by copies to and from a fake client memory
 * with one valid key, bounds-checked as an RDMA device would.
 *
 * Properties checked besides the sanitizers': a rejected request never
 * reaches the volume; an accepted one stays inside it and inside the
 * segments it named; every reply fits its buffer.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/block.h"
#include "server/dispatch.h"

#define VOL_SIZE	(4u << 20)
#define CLIENT_BASE	0x7f0000000000ULL
#define CLIENT_SIZE	(1u << 20)
#define CLIENT_KEY	0x1234u
#define CHUNK		65536u
#define SRV_REPLY_MAX	(4096 + 256)

static struct volume vol = { .fd = -1, .fd_direct = -1 };
static unsigned char client_mem[CLIENT_SIZE];
static unsigned char *chunk;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char path[] = "/tmp/orfs-fuzz-volXXXXXX";
	int fd = mkstemp(path);

	(void)argc;
	(void)argv;
	if (fd < 0 || ftruncate(fd, VOL_SIZE)) {
		perror("fuzz: scratch volume");
		abort();
	}
	close(fd);
	if (volume_open(&vol, path, 0, 1u << 20))
		abort();
	unlink(path);
	if (posix_memalign((void **)&chunk, 4096, CHUNK))
		abort();
	return 0;
}

struct copy {
	int	to_client;
	int	faults;
};

/* What the RDMA device does with one piece: check key and bounds, copy. */
static int rdma_piece(void *arg, const struct seg_piece *p)
{
	struct copy *cp = arg;

	if (p->local + (uint64_t)p->len > CHUNK)
		abort();	/* the split overran the chunk: a server bug */
	if (p->rkey != CLIENT_KEY || p->raddr < CLIENT_BASE ||
	    p->raddr - CLIENT_BASE > CLIENT_SIZE || p->len > CLIENT_SIZE - (p->raddr - CLIENT_BASE)) {
		cp->faults++;	/* a remote access error: the link would drop */
		return -EFAULT;
	}
	if (cp->to_client)
		memcpy(client_mem + (p->raddr - CLIENT_BASE), chunk + p->local, p->len);
	else
		memcpy(chunk + p->local, client_mem + (p->raddr - CLIENT_BASE), p->len);
	return 0;
}

static void execute(const uint8_t *msg, const struct block_req *br)
{
	struct copy cp = { 0 };
	uint32_t off;

	if (br->opcode != MXBD_OP_READ && br->opcode != MXBD_OP_WRITE)
		return;		/* flush, discard and zeroes only call the backend */
	if (br->offset + br->length > vol.size)
		abort();	/* decode let a request out of the volume */
	if (!br->nsegs) {
		if (br->opcode == MXBD_OP_WRITE)
			block_write(&vol, msg + br->inl_off, br->offset, br->length, 0);
		return;
	}
	cp.to_client = br->opcode == MXBD_OP_READ;
	for (off = 0; off < br->length; off += CHUNK) {
		uint32_t len = br->length - off < CHUNK ? br->length - off : CHUNK;

		if (cp.to_client && block_read(&vol, chunk, br->offset + off, len))
			return;
		if (block_map_segments(msg, br, off, len, rdma_piece, &cp) < 0)
			return;
		if (!cp.to_client && block_write(&vol, chunk, br->offset + off, len, 0))
			return;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dispatch_stats st = { 0 };
	unsigned char reply[SRV_REPLY_MAX];
	struct conn_params p;
	struct block_req br;
	struct frame f;
	uint8_t *msg;
	int err;

	/* The same bytes as connect private data. */
	if (!proto_parse_cm_req(data, size, &p) &&
	    (strlen(p.name) != strnlen(p.name, sizeof(p.name)) || !proto_name_ok(p.name, strlen(p.name))))
		abort();

	if (size > 65536)
		return 0;
	/* An exact-size copy, so that any read past the message is caught. */
	msg = malloc(size ? size : 1);
	if (!msg)
		return 0;
	memcpy(msg, data, size);
	switch (dispatch_frame(msg, (uint32_t)size, &f, &st)) {
	case DISPATCH_DROP:
		break;
	case DISPATCH_REPLY:
		if (!proto_build_reply(reply, sizeof(reply), &f, 1, NULL, 0, NULL, 0))
			abort();
		break;
	case DISPATCH_SERVICE:
		err = block_decode(&vol, msg, (uint32_t)size, 4096, &br);
		if (err) {
			f.status = (uint32_t)err;
		} else {
			execute(msg, &br);
			if (br.opcode == MXBD_OP_READ && !br.nsegs && br.length > 4096)
				abort();	/* an inline read larger than negotiated */
		}
		if (!proto_build_reply(reply, sizeof(reply), &f, 1, NULL, 0, NULL, 0))
			abort();
		break;
	}
	free(msg);
	return 0;
}

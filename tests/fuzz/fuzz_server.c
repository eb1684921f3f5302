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
 * segments it named; every reply fits its buffer. The same bytes go to the
 * file service, executed on a scratch export that holds a symlink to /:
 * a canary directory beside the export must never change. Requests run
 * on the export as it is and squashed (root squash), as whatever caller
 * the bytes name: one by a caller other than unsquashed root never
 * changes the owner, the mode or a trusted.* or security.* xattr of a
 * file of root's that anybody may write.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/stat.h>
#include <sys/xattr.h>

#include "server/block.h"
#include "server/dispatch.h"
#include "server/fsvc.h"

#define VOL_SIZE	(4u << 20)
#define CLIENT_BASE	0x7f0000000000ULL
#define CLIENT_SIZE	(1u << 20)
#define CLIENT_KEY	0x1234u
#define CHUNK		65536u
#define SRV_REPLY_MAX	(4096 + 256)

static struct volume vol = { .fd = -1, .fd_direct = -1 };
static unsigned char client_mem[CLIENT_SIZE];
static unsigned char *chunk;

/* A scratch export for the file service, and a canary directory beside it. */
static char fs_dir[] = "/tmp/orfs-fuzz-fsXXXXXX";
static char canary[4096];
static struct fsvc_export fx = { .root_fd = -1 }, fx_sq = { .root_fd = -1 };
static char rootfile[4200], expdir[4200];	/* root's, anybody may write them */
static struct orfs_fh root_fh;
static struct stat canary_st;
static unsigned long runs;
static int trace;	/* ORFS_FUZZ_TRACE=1: say what each input did */

static void cleanup(void)
{
	char cmd[4200];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fs_dir);
	if (system(cmd))
		fprintf(stderr, "fuzz: cannot remove %s\n", fs_dir);
}

static void reset_export(void)
{
	char cmd[4200];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s/export' && mkdir -m 1777 '%s/export' && "
		 "mkdir '%s/export/sub' && ln -s / '%s/export/root' && "
		 "echo data > '%s/export/file' && echo root > '%s/export/rootfile'",
		 fs_dir, fs_dir, fs_dir, fs_dir, fs_dir, fs_dir);
	if (system(cmd))
		abort();
	snprintf(rootfile, sizeof(rootfile), "%s/export/rootfile", fs_dir);
	snprintf(expdir, sizeof(expdir), "%s/export", fs_dir);
	if (setxattr(expdir, "trusted.mark", "root", 4, 0))
		abort();
	if (chmod(rootfile, 0666) || setxattr(rootfile, "trusted.mark", "root", 4, 0))
		abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char path[4096] = "/tmp/orfs-fuzz-volXXXXXX";
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

	if (!mkdtemp(fs_dir))
		abort();
	atexit(cleanup);
	trace = getenv("ORFS_FUZZ_TRACE") != NULL;
	snprintf(canary, sizeof(canary), "%s/canary", fs_dir);
	if (mkdir(canary, 0755) || stat(canary, &canary_st))
		abort();
	reset_export();
	snprintf(path, sizeof(path), "%s", fs_dir);
	{
		char exp[4200];
		static const uint8_t key[16] = "fuzzfuzzfuzzfuzz";

		snprintf(exp, sizeof(exp), "%s/export", fs_dir);
		if (fsvc_export_open(&fx, "data", exp, 0, FSVC_SQUASH_NONE, key, 1) ||
		    fsvc_export_open(&fx_sq, "data", exp, 0, FSVC_SQUASH_ROOT, key, 1) ||
		    fsvc_make_fh(&fx, fx.root_fd, "", &root_fh))
			abort();
	}
	umask(0);
	return 0;
}

/* What a caller other than root may not change of root's file: owner, mode, privileged xattrs. */
static const char *const guarded_names[] = { "trusted.mark", "trusted.evil", "security.capability",
					     "security.evil" };
#define NGUARDED	(sizeof(guarded_names) / sizeof(guarded_names[0]))

struct guarded {
	struct stat	st;
	ssize_t		len[NGUARDED];		/* a value's length, or -errno */
	char		val[NGUARDED][64];
};

static void guard_read(const char *path, struct guarded *g)
{
	size_t i;

	memset(g, 0, sizeof(*g));
	if (lstat(path, &g->st))
		g->st.st_ino = 0;	/* root removed it, or renamed another over it */
	for (i = 0; i < NGUARDED; i++) {
		g->len[i] = getxattr(path, guarded_names[i], g->val[i], sizeof(g->val[i]));
		if (g->len[i] < 0)
			g->len[i] = -errno;
	}
}

static void guard_check(const char *path, const struct guarded *before)
{
	struct guarded after;
	size_t i;

	guard_read(path, &after);
	if (!before->st.st_ino || before->st.st_ino != after.st.st_ino)
		return;		/* not the same file: root's doing, before */
	/* Set-id bits may go (a write drops them), nothing else may change. */
	if (after.st.st_uid != before->st.st_uid || after.st.st_gid != before->st.st_gid ||
	    ((after.st.st_mode ^ before->st.st_mode) & 07777 & ~(mode_t)(S_ISUID | S_ISGID)) ||
	    (after.st.st_mode & ~before->st.st_mode))
		abort();	/* a caller changed root's owner or mode */
	for (i = 0; i < NGUARDED; i++)
		if (after.len[i] != before->len[i] ||
		    (after.len[i] > 0 && memcmp(after.val[i], before->val[i], (size_t)after.len[i])))
			abort();	/* a privileged xattr changed, came or went */
}

/* The file service on the scratch export; the canary must never change. */
static void fuzz_file(const uint8_t *msg, uint32_t size)
{
	static uint8_t out[4352];
	struct guarded before, before_dir;
	struct fsvc_req rq;
	struct stat st;
	int err, dfd = -1;
	uint32_t n;
	/* The same bytes on the export as it is, or squashed, by a bit of their own. */
	const struct fsvc_export *x = size > 40 && (msg[40] & 1) ? &fx_sq : &fx;

	err = fsvc_decode(x, msg, size, 4096, &rq);
	if (trace && err)
		fprintf(stderr, "fuzz: file decode: %s\n", strerror(err));
	if (err)
		return;
	/* Mostly the real root handle, so that names reach the file system. */
	if (!(rq.xid & 1)) {
		rq.fh = root_fh;
		rq.fh2 = root_fh;
	}
	if ((rq.op == ORFS_OP_READ || rq.op == ORFS_OP_WRITE) && rq.nsegs)
		return;		/* segment data is the engine's, tested above */
	guard_read(rootfile, &before);
	guard_read(expdir, &before_dir);
	err = fsvc_execute(x, &rq, &dfd, out, sizeof(out), &n);
	if (dfd >= 0)
		close(dfd);
	if (fsvc_cred_reset())
		abort();	/* the checks below are root's */
	if (rq.eff.uid) {
		guard_check(rootfile, &before);
		guard_check(expdir, &before_dir);
	}
	if (trace)
		fprintf(stderr, "fuzz: file op %u: %s\n", rq.op, strerror(err));
	if (n > sizeof(out))
		abort();
	if (stat(canary, &st) || st.st_mtim.tv_nsec != canary_st.st_mtim.tv_nsec ||
	    st.st_mtim.tv_sec != canary_st.st_mtim.tv_sec || st.st_nlink != canary_st.st_nlink)
		abort();	/* something outside the export changed */
	if (++runs % 2000 == 0 || !before.st.st_ino)
		reset_export();
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
	case DISPATCH_AUTH:	/* the engine's step; its reply has no body but step 1's */
	case DISPATCH_REPLY:
		if (!proto_build_reply(reply, sizeof(reply), &f, 1, NULL, 0, NULL, 0))
			abort();
		break;
	case DISPATCH_SERVICE:
		fuzz_file(msg, (uint32_t)size);
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

// SPDX-License-Identifier: GPL-2.0-only
/*
 * knet-load: a userspace load generator and data checker for the MXBD
 * block service of orfs-server. It opens STREAMS connections to a volume,
 * gives each stream its own region, and keeps DEPTH requests in flight per
 * stream within its credits. Data moves the server-driven way: the client
 * exposes its buffers (registered for remote access, address and key in
 * the request's segments) and the server pulls or pushes; with -i small
 * payloads travel inline instead. -t picks the transport: RDMA (libfabric),
 * TCP, or auto.
 *
 *   -w write    write the region for -T seconds or -N blocks a stream
 *   -w read     read it likewise
 *   -w verify   write a pattern over -N blocks a stream, read them back and
 *               compare every byte (exit 1 on any difference)
 *   -w zero     write the pattern over -N blocks, then DISCARD, WRITE_ZEROES or
 *               leave each block (by its index modulo 4), FLUSH, and read all
 *               back: zeroes where trimmed, the pattern elsewhere
 *   -w info     print the volume's geometry
 *
 * The last line is machine-readable:
 *   result: op=write streams=8 bs=65536 MBps=... iops=... lat_us=... errors=0
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mxbd/uapi/mxbd_proto.h"
#include "tests/src/kclient.h"

#define MSG_SIZE	8192
#define RX_DEPTH	8
#define MAX_DEPTH	RX_DEPTH
#define MAX_STREAMS	1024

enum mode { M_WRITE, M_READ, M_VERIFY, M_ZERO, M_INFO };

/* What blocks a run's phases do: each starts when the last one is done. */
enum phase_op { P_WRITE, P_READ, P_TRIM, P_FLUSH };
#define MAX_PHASES 4
enum op_kind { K_RECV, K_SEND };

struct stream;

struct op {
	struct fi_context	ctx;	/* first: the event's context is the op */
	enum op_kind		kind;
	struct stream		*st;
	int			idx;
};

struct slot {
	int		busy;		/* request outstanding */
	int		sent;		/* its send completed */
	int		replied;
	uint64_t	off;		/* volume offset */
	int		is_read;
	double		t0;
	char		*data;		/* bs bytes, registered */
};

struct stream {
	struct kc_conn	k;
	struct kc_mr	mr;		/* msg buffers and data */
	char		*mem;
	struct op	rx[RX_DEPTH];
	struct op	tx[MAX_DEPTH];
	struct slot	slot[MAX_DEPTH];
	uint64_t	base, size;	/* the stream's region */
	uint64_t	next;		/* next offset within the region */
	int		phase;
	uint64_t	issued, completed;	/* in the current phase */
	uint64_t	block;		/* index of the next block in the phase */
};

struct load {
	struct kc_fabric	f;
	struct stream		*st;
	int			nstreams;
	int			depth;
	uint32_t		bs;
	int			nsegs;
	int			use_inline;
	int			fua;
	enum mode		mode;
	enum phase_op		phases[MAX_PHASES];
	int			nphases;
	double			seconds;
	uint64_t		count;		/* blocks a stream; 0 = by time */
	uint64_t		seed;
	uint64_t		vol_size;
	uint32_t		lbs;
	double			stop_at;
	uint64_t		bytes, ios, errors, mismatches;
	double			lat_sum;
	int			outstanding;
};

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static char *rx_buf(struct stream *st, int i)
{
	return st->mem + (size_t)i * MSG_SIZE;
}

static char *tx_buf(struct stream *st, int i)
{
	return st->mem + (size_t)(RX_DEPTH + i) * MSG_SIZE;
}

/* The pattern: each 8-byte word names its volume offset and the run. */
static uint64_t pattern(uint64_t off, uint64_t seed)
{
	return (off * 0x9e3779b97f4a7c15ULL) ^ seed;
}

static void fill(char *buf, uint64_t off, uint32_t len, uint64_t seed)
{
	uint32_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		uint64_t v = pattern(off + i, seed);

		memcpy(buf + i, &v, 8);
	}
}

/* Compare BUF with the pattern, or with zeroes when ZERO. */
static int check(const char *buf, uint64_t off, uint32_t len, uint64_t seed, int zero)
{
	uint32_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		uint64_t v = zero ? 0 : pattern(off + i, seed), got;

		memcpy(&got, buf + i, 8);
		if (got != v) {
			fprintf(stderr, "knet-load: mismatch at volume offset %llu: got %016llx, want %016llx\n",
				(unsigned long long)(off + i), (unsigned long long)got,
				(unsigned long long)v);
			return -1;
		}
	}
	return 0;
}

static int post_recv(struct stream *st, int i)
{
	return kc_recv(&st->k, &st->mr, rx_buf(st, i), MSG_SIZE, &st->rx[i].ctx);
}

static int stream_open(struct load *L, struct stream *st, const char *name)
{
	size_t size = (size_t)(RX_DEPTH + MAX_DEPTH) * MSG_SIZE + (size_t)L->depth * L->bs;
	int i;

	if (kc_ep_open(&L->f, &st->k, st, MAX_DEPTH * 2, RX_DEPTH))
		return 1;
	if (posix_memalign((void **)&st->mem, 4096, size)) {
		fprintf(stderr, "knet-load: out of memory\n");
		return 1;
	}
	memset(st->mem, 0, size);
	/* Remote access: the server reads and writes the data buffers. */
	if (kc_mr_reg(&L->f, &st->mr, st->mem, size, 1))
		return 1;
	for (i = 0; i < RX_DEPTH; i++) {
		st->rx[i] = (struct op){ .kind = K_RECV, .st = st, .idx = i };
		if (post_recv(st, i))
			return 1;
	}
	for (i = 0; i < L->depth; i++) {
		st->tx[i] = (struct op){ .kind = K_SEND, .st = st, .idx = i };
		st->slot[i].data = st->mem + (size_t)(RX_DEPTH + MAX_DEPTH) * MSG_SIZE +
				   (size_t)i * L->bs;
	}
	/* No -K here: knet-ping and knet-fs authenticate. */
	return kc_connect(&L->f, &st->k, KNET_PROTO_VERSION, KNET_SVC_BLOCK, name, RX_DEPTH,
			  MSG_SIZE - sizeof(struct knet_hdr), NULL, 0);
}

/* Build and send one request on slot I of ST. */
static int issue(struct load *L, struct stream *st, int i, uint16_t op, uint64_t off)
{
	struct slot *sl = &st->slot[i];
	char *m = tx_buf(st, i);
	struct knet_hdr h;
	struct mxbd_io io;
	uint32_t pos = sizeof(h), inl = 0;
	int nsegs = 0, k;

	sl->is_read = op == MXBD_OP_READ;
	sl->off = off;
	proto_hdr_init(&h, op, (uint32_t)i, 0);
	if (op == MXBD_OP_WRITE)
		fill(sl->data, off, L->bs, L->seed);
	if (op == MXBD_OP_INFO || op == MXBD_OP_FLUSH) {
		memcpy(m, &h, sizeof(h));
		goto send;
	}
	io.offset = htole64(off);
	io.length = htole32(L->bs);
	io.flags = htole32(op == MXBD_OP_WRITE && L->fua ? MXBD_IO_FUA : 0);
	memcpy(m + pos, &io, sizeof(io));
	pos += sizeof(io);
	h.body_len = htole32(sizeof(io));
	if (op == MXBD_OP_DISCARD || op == MXBD_OP_WRITE_ZEROES) {
		/* No data. */
	} else if (L->use_inline && L->bs <= st->k.inline_max) {
		if (op == MXBD_OP_WRITE) {
			memcpy(m + pos, sl->data, L->bs);
			inl = L->bs;
		}
	} else {
		/* Uneven pieces, so that server chunks straddle segment edges. */
		uint32_t left = L->bs, each = L->bs / (uint32_t)L->nsegs, at = 0;

		for (k = 0; k < L->nsegs && left; k++) {
			uint32_t len = k == L->nsegs - 1 ? left :
				       (each > 272 ? each + ((k % 2) ? 136 : -136) : each);
			struct knet_seg sg;

			if (!len || len > left)
				len = left;
			sg = kc_seg(&st->k, &st->mr, sl->data, sl->data + at, len);
			memcpy(m + pos, &sg, sizeof(sg));
			pos += sizeof(sg);
			at += len;
			left -= len;
			nsegs++;
		}
		if (kc_lend(&st->k, (uint32_t)i, sl->data, L->bs, op == MXBD_OP_WRITE))
			return -1;
	}
	h.nsegs = htole16((uint16_t)nsegs);
	h.inline_len = htole32(inl);
	memcpy(m, &h, sizeof(h));
	pos += inl;
send:
	if (st->k.credits < 1) {
		fprintf(stderr, "knet-load: no credit\n");
		return -1;
	}
	if (kc_send(&st->k, &st->mr, m,
		    (op == MXBD_OP_INFO || op == MXBD_OP_FLUSH) ? sizeof(h) : pos, &st->tx[i].ctx))
		return -1;
	st->k.credits--;
	sl->busy = 1;
	sl->sent = sl->replied = 0;
	sl->t0 = now_us();
	st->issued++;
	L->outstanding++;
	return 0;
}

/* In the zero run, what the trim phase does to block K, and what K holds after. */
static uint16_t trim_op(uint64_t k)
{
	return k % 4 == 0 ? MXBD_OP_DISCARD : k % 4 == 3 ? MXBD_OP_FLUSH : MXBD_OP_WRITE_ZEROES;
}

static int zeroed(const struct load *L, uint64_t off, const struct stream *st)
{
	return L->mode == M_ZERO && trim_op((off - st->base) / L->bs) != MXBD_OP_FLUSH;
}

/* Next operation for slot I of ST: 1 issued, 0 nothing now, -1 error. */
static int next(struct load *L, struct stream *st, int i)
{
	uint64_t count, off, k;
	uint16_t op;

	if (L->mode == M_INFO || st->phase >= L->nphases)
		return 0;
	count = L->phases[st->phase] == P_FLUSH ? 1 : L->count;
	if (count && st->issued == count) {
		/* A phase starts only when every request of the last is done. */
		if (st->completed < count)
			return 0;
		if (++st->phase == L->nphases)
			return 0;
		st->issued = st->completed = st->block = 0;
		st->next = 0;
		count = L->phases[st->phase] == P_FLUSH ? 1 : L->count;
	}
	if (!count && now_us() >= L->stop_at)
		return 0;
	k = st->block++;
	off = st->base + st->next;
	st->next = (st->next + L->bs) % st->size;
	switch (L->phases[st->phase]) {
	case P_WRITE:
		op = MXBD_OP_WRITE;
		break;
	case P_READ:
		op = MXBD_OP_READ;
		break;
	case P_TRIM:
		op = trim_op(k);
		break;
	default:
		op = MXBD_OP_FLUSH;
		break;
	}
	if (issue(L, st, i, op, off))
		return -1;
	return 1;
}

static int on_reply(struct load *L, struct stream *st, int r, size_t len)
{
	char *m = rx_buf(st, r);
	struct knet_hdr h;
	struct slot *sl;
	uint32_t tag, status;

	memcpy(&h, m, sizeof(h));
	if (knet_hdr_check(&h, (uint32_t)len, 0) != KNET_HDR_OK || !(h.flags & KNET_HF_REPLY) ||
	    le32toh(h.tag) >= (uint32_t)L->depth || !st->slot[le32toh(h.tag)].busy) {
		fprintf(stderr, "knet-load: malformed reply\n");
		return -1;
	}
	tag = le32toh(h.tag);
	sl = &st->slot[tag];
	status = le32toh(h.status);
	st->k.credits += le16toh(h.credits);
	if (status) {
		if (L->errors++ < 5)
			fprintf(stderr, "knet-load: request at %llu failed: %s\n",
				(unsigned long long)sl->off, strerror((int)status));
	} else if (le16toh(h.opcode) == MXBD_OP_INFO) {
		struct mxbd_info info;

		if (le32toh(h.body_len) != sizeof(info)) {
			fprintf(stderr, "knet-load: INFO reply without its body\n");
			return -1;
		}
		memcpy(&info, m + sizeof(h), sizeof(info));
		L->vol_size = le64toh(info.size);
		L->lbs = le32toh(info.logical_block);
		printf("volume: size %llu logical_block %u physical_block %u max_io %u flags %#x\n",
		       (unsigned long long)L->vol_size, L->lbs, le32toh(info.physical_block),
		       le32toh(info.max_io), le32toh(info.flags));
	} else {
		if (sl->is_read && le32toh(h.inline_len)) {
			if (le32toh(h.inline_len) != L->bs) {
				fprintf(stderr, "knet-load: inline reply of %u bytes for %u\n",
					le32toh(h.inline_len), L->bs);
				return -1;
			}
			memcpy(sl->data, m + sizeof(h) + le32toh(h.body_len), L->bs);
		}
		if (sl->is_read && (L->mode == M_VERIFY || L->mode == M_ZERO) &&
		    check(sl->data, sl->off, L->bs, zeroed(L, sl->off, st) ? 0 : L->seed,
			  zeroed(L, sl->off, st)))
			L->mismatches++;
		L->bytes += L->bs;
		L->ios++;
		L->lat_sum += now_us() - sl->t0;
	}
	sl->replied = 1;
	return post_recv(st, r);
}

static int run(struct load *L)
{
	int s, i, active = 1;

	for (s = 0; s < L->nstreams; s++)
		for (i = 0; i < (L->mode == M_INFO ? 1 : L->depth); i++)
			if ((L->mode == M_INFO ? issue(L, &L->st[s], i, MXBD_OP_INFO, 0) :
			     next(L, &L->st[s], i)) < 0)
				return -1;
	while (L->outstanding || active) {
		struct kc_event e[16];
		int n = kc_wait(&L->f, e, 16, 1000), k;

		if (n < 0)
			return -1;
		for (k = 0; k < n; k++) {
			struct op *op = e[k].ctx;
			struct stream *st;
			struct slot *sl;
			int idx;

			if (e[k].err == FI_ENOTCONN) {
				fprintf(stderr, "knet-load: stream %d: the connection went\n",
					(int)((struct stream *)e[k].conn->context - L->st));
				return -1;
			}
			if (e[k].err) {
				fprintf(stderr, "knet-load: completion error: %s\n",
					fi_strerror(e[k].err));
				return -1;
			}
			st = op->st;
			idx = op->idx;
			if (op->kind == K_RECV) {
				if (on_reply(L, st, idx, e[k].len))
					return -1;
				idx = -1;
				for (i = 0; i < L->depth; i++)
					if (st->slot[i].busy && st->slot[i].replied && st->slot[i].sent)
						idx = i;
				if (idx < 0)
					continue;
			} else {
				st->slot[idx].sent = 1;
				if (!st->slot[idx].replied)
					continue;
			}
			sl = &st->slot[idx];
			sl->busy = 0;
			st->completed++;
			L->outstanding--;
			if (next(L, st, idx) < 0)
				return -1;
			/* A verify stream resumes its idle slots when its writes are done. */
			for (i = 0; i < L->depth; i++)
				if (!st->slot[i].busy && next(L, st, i) < 0)
					return -1;
		}
		active = 0;
		for (s = 0; s < L->nstreams && !active; s++)
			for (i = 0; i < L->depth && !active; i++)
				active = L->st[s].slot[i].busy;
	}
	return 0;
}

static const char *mode_name(enum mode m)
{
	static const char *const names[] = { "write", "read", "verify", "zero", "info" };

	return names[m];
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: knet-load -a ADDRESS -n VOLUME [-p PORT] [-w write|read|verify|zero|info]\n"
		"                 [-S STREAMS] [-b BYTES] [-q DEPTH] [-T SECONDS | -N BLOCKS]\n"
		"                 [-g SEGMENTS] [-i] [-F] [-r SEED] [-t rdma|tcp|auto] [-P PROVIDER]\n");
}

int main(int argc, char **argv)
{
	const char *addr = NULL, *name = NULL, *prov = "verbs";
	enum kc_transport tr = KC_RDMA;
	static struct load L;
	char port[16];
	double t0, secs;
	int opt, s, ret = 1;

	snprintf(port, sizeof(port), "%d", KNET_DEFAULT_PORT);
	L.nstreams = 1;
	L.depth = 1;
	L.bs = 65536;
	L.nsegs = 1;
	L.seconds = 5;
	L.seed = 0x5eed;
	L.mode = M_WRITE;
	if (kc_transport_env(&tr))
		return 2;
	while ((opt = getopt(argc, argv, "a:p:n:w:S:b:q:T:N:g:iFr:P:t:h")) != -1) {
		switch (opt) {
		case 'a': addr = optarg; break;
		case 'p': snprintf(port, sizeof(port), "%s", optarg); break;
		case 'n': name = optarg; break;
		case 'w':
			if (!strcmp(optarg, "write")) L.mode = M_WRITE;
			else if (!strcmp(optarg, "read")) L.mode = M_READ;
			else if (!strcmp(optarg, "verify")) L.mode = M_VERIFY;
			else if (!strcmp(optarg, "zero")) L.mode = M_ZERO;
			else if (!strcmp(optarg, "info")) L.mode = M_INFO;
			else { usage(stderr); return 2; }
			break;
		case 'S': L.nstreams = atoi(optarg); break;
		case 'b': L.bs = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'q': L.depth = atoi(optarg); break;
		case 'T': L.seconds = atof(optarg); break;
		case 'N': L.count = strtoull(optarg, NULL, 0); break;
		case 'g': L.nsegs = atoi(optarg); break;
		case 'i': L.use_inline = 1; break;
		case 'F': L.fua = 1; break;
		case 'r': L.seed = strtoull(optarg, NULL, 0); break;
		case 'P': prov = optarg; break;
		case 't':
			if (kc_transport_parse(optarg, &tr))
				return 2;
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!addr || !name || optind != argc || L.nstreams < 1 || L.nstreams > MAX_STREAMS ||
	    L.depth < 1 || L.depth > MAX_DEPTH || !L.bs || L.bs % 512 || L.bs > (1U << 20) ||
	    L.nsegs < 1 || L.nsegs > KNET_MAX_SEGS || L.seconds <= 0 ||
	    ((L.mode == M_VERIFY || L.mode == M_ZERO) && !L.count)) {
		usage(stderr);
		return 2;
	}
	switch (L.mode) {
	case M_WRITE:
		L.phases[L.nphases++] = P_WRITE;
		break;
	case M_READ:
		L.phases[L.nphases++] = P_READ;
		break;
	case M_VERIFY:
		L.phases[L.nphases++] = P_WRITE;
		L.phases[L.nphases++] = P_READ;
		break;
	case M_ZERO:
		L.phases[L.nphases++] = P_WRITE;
		L.phases[L.nphases++] = P_TRIM;
		L.phases[L.nphases++] = P_FLUSH;
		L.phases[L.nphases++] = P_READ;
		break;
	case M_INFO:
		break;
	}
	/*
	 * Geometry first, on a connection and fabric of its own, closed before
	 * the run: its flushed receives must not reach the run's queues.
	 */
	{
		struct load I = L;

		I.mode = M_INFO;
		I.nstreams = 1;
		I.depth = 1;
		I.st = calloc(1, sizeof(*I.st));
		if (!I.st || kc_open(&I.f, tr, addr, port, prov, 64)) {
			free(I.st);
			return 1;
		}
		ret = stream_open(&I, &I.st[0], name);
		if (!ret)
			ret = run(&I) ? 1 : (I.errors ? 1 : 0);
		kc_ep_close(&I.st[0].k);
		kc_mr_close(&I.st[0].mr);
		free(I.st[0].mem);
		free(I.st);
		kc_close(&I.f);
		if (ret)
			return ret;
		L.vol_size = I.vol_size;
		L.lbs = I.lbs;
	}
	L.st = calloc((size_t)L.nstreams, sizeof(*L.st));
	if (!L.st || kc_open(&L.f, tr, addr, port, prov,
			     (size_t)L.nstreams * (RX_DEPTH + 2 * MAX_DEPTH)))
		goto out;
	if (L.mode == M_INFO) {
		ret = 0;
		goto out;
	}
	for (s = 0; s < L.nstreams; s++) {
		struct stream *st = &L.st[s];

		st->size = (L.vol_size / (uint64_t)L.nstreams) / L.bs * L.bs;
		st->base = st->size * (uint64_t)s;
		if (!st->size) {
			fprintf(stderr, "knet-load: the volume is too small for %d streams of %u bytes\n",
				L.nstreams, L.bs);
			goto out;
		}
		if (L.count * L.bs > st->size && L.mode != M_WRITE && L.mode != M_READ) {
			fprintf(stderr, "knet-load: -N %llu blocks do not fit a stream's region\n",
				(unsigned long long)L.count);
			goto out;
		}
		ret = stream_open(&L, st, name);
		if (ret)
			goto out;
	}
	t0 = now_us();
	L.stop_at = t0 + L.seconds * 1e6;
	ret = run(&L) ? 1 : 0;
	secs = (now_us() - t0) / 1e6;
	printf("%s: %d streams, bs %u, depth %d%s: %.1f MB/s, %.0f IOPS, mean latency %.1f us, %llu errors, %llu mismatches\n",
	       mode_name(L.mode), L.nstreams, L.bs, L.depth, L.use_inline ? ", inline" : "", (double)L.bytes / secs / 1e6,
	       (double)L.ios / secs, L.ios ? L.lat_sum / (double)L.ios : 0,
	       (unsigned long long)L.errors, (unsigned long long)L.mismatches);
	printf("result: op=%s streams=%d bs=%u MBps=%.2f iops=%.0f lat_us=%.1f errors=%llu mismatches=%llu\n",
	       mode_name(L.mode), L.nstreams, L.bs,
	       (double)L.bytes / secs / 1e6, (double)L.ios / secs,
	       L.ios ? L.lat_sum / (double)L.ios : 0, (unsigned long long)L.errors,
	       (unsigned long long)L.mismatches);
	if (L.errors || L.mismatches)
		ret = 1;
out:
	for (s = 0; L.st && s < L.nstreams; s++) {
		kc_ep_close(&L.st[s].k);
		kc_mr_close(&L.st[s].mr);
		free(L.st[s].mem);
	}
	kc_close(&L.f);
	free(L.st);
	return ret;
}

// SPDX-License-Identifier: GPL-2.0-only
/*
 * tcp-peer: a peer that breaks knet's TCP protocol on purpose, for the
 * tests of both ends.
 *
 *   tcp-peer client ADDR PORT
 *	against orfs-server serving volume "tvol": one connection for each
 *	way a client can break the protocol (a first PDU that is not a
 *	CONNECT, more requests than its credits, data not asked for, a PDU
 *	type clients do not send, a message larger than any, flags set, a
 *	write whose R2T is never answered: closed within 40 s as stalled,
 *	a header or a payload whose digest is wrong);
 *	each must be closed by the server. Exit 0 when all were.
 *
 *   tcp-peer hangup ADDR PORT PID
 *	against orfs-server (PID) serving volume "tvol": connects, stops the
 *	server (SIGSTOP), sends a request, then ends the connection with a
 *	FIN and a reset, and lets the server go on (SIGCONT). The server
 *	finds the request, then a socket its client reset: writing the
 *	answer fails (EPIPE), and must not kill it. Exit 0 when all went.
 *
 *   tcp-peer server PORT LIE
 *	a lying server for the clients (the kernel's, and knet-load's):
 *	accepts connections on PORT, grants them, answers their requests
 *	(status 0, no data moved; an MXBD INFO with a 64 MiB volume's
 *	geometry) up to the first that offers data (a READ's, for the data
 *	lies; a connection closed before it is followed by the next), and
 *	answers that one with LIE: r2t-range
 *	(an R2T beyond what the request offered), r2t-tag (an R2T for no
 *	request), data-long (DATA longer than the request offered),
 *	data-tag (DATA for no request), bad-type (a PDU of no known type),
 *	huge (a MSG larger than any), reply-tag (a reply for no request),
 *	cut (half a PDU header, then the connection closed); or, granting
 *	the digests the client asked for, answers its first request with a
 *	wrong header digest (hdgst) or payload digest (ddgst). It keeps the
 *	connection open two seconds more, then exits 0.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "knet/uapi/knet_proto.h"
#include "mxbd/uapi/mxbd_proto.h"
#include "server/proto.h"
#include "tests/src/sockio.h"

struct peer {
	int	fd;
	int	port;
	char	addr[64];
};

static int fail(const char *what)
{
	fprintf(stderr, "tcp-peer: %s: %s\n", what, strerror(errno));
	return -1;
}

static int send_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;

	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return fail("send");
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int recv_all(int fd, void *buf, size_t n)
{
	int r = sock_read_full(fd, buf, n);

	return r > 0 ? 0 : r < 0 ? fail("recv") : -1;
}

static struct knet_tcp_pdu pdu(uint8_t type, uint32_t len, uint32_t tag, uint32_t off)
{
	struct knet_tcp_pdu p = {
		.type = type, .length = htole32(len), .tag = htole32(tag), .offset = htole32(off),
	};

	return p;
}

/* ---- client: attacks on the server ------------------------------------ */

static int dial(const struct peer *pr)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons((uint16_t)pr->port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0)
		return fail("socket");
	if (inet_pton(AF_INET, pr->addr, &sin.sin_addr) != 1 ||
	    connect(fd, (struct sockaddr *)&sin, sizeof(sin))) {
		fail("connect");
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * CONNECT to volume "tvol" asking for DEPTH receives and the digests of
 * FLAGS; the server's ACCEPT read.
 */
static int handshake(int fd, uint16_t depth, uint16_t flags)
{
	struct knet_cm_req req = {
		.version = htole16(KNET_PROTO_VERSION), .service = KNET_SVC_BLOCK, .name_len = 4,
		.recv_depth = htole16(depth), .inline_max = htole32(4096), .name = "tvol",
		.flags = htole16(flags),
	};
	struct knet_tcp_pdu p = pdu(KNET_TCP_CONNECT, sizeof(req), 0, 0);
	struct knet_cm_rep rep;

	if (send_all(fd, &p, sizeof(p)) || send_all(fd, &req, sizeof(req)) ||
	    recv_all(fd, &p, sizeof(p)))
		return -1;
	if (p.type != KNET_TCP_ACCEPT || le32toh(p.length) != sizeof(rep) ||
	    recv_all(fd, &rep, sizeof(rep))) {
		fprintf(stderr, "tcp-peer: the server did not accept (PDU type %u)\n", p.type);
		return -1;
	}
	if ((le16toh(rep.flags) & KNET_CMF_DIGESTS) != flags) {
		fprintf(stderr, "tcp-peer: the server did not grant the digests\n");
		return -1;
	}
	return le16toh(rep.credits);
}

/* Does the server close FD within MS (reading and dropping what it sends)? */
static int closed_by_server(int fd, int ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	char buf[4096];

	for (;;) {
		int n = poll(&pfd, 1, ms);
		ssize_t r;

		if (n <= 0)
			return 0;
		r = recv(fd, buf, sizeof(buf), 0);
		if (r <= 0)
			return 1;
	}
}

/* A well-formed request message: header and BODY, tag TAG. */
static size_t msg(uint8_t *out, uint16_t op, uint32_t tag, const void *body, uint32_t blen)
{
	struct knet_tcp_pdu p = pdu(KNET_TCP_MSG, (uint32_t)sizeof(struct knet_hdr) + blen, 0, 0);
	struct knet_hdr h = {
		.magic = htole32(KNET_PROTO_MAGIC), .version = KNET_PROTO_VERSION,
		.opcode = htole16(op), .tag = htole32(tag), .body_len = htole32(blen),
	};

	memcpy(out, &p, sizeof(p));
	memcpy(out + sizeof(p), &h, sizeof(h));
	memcpy(out + sizeof(p) + sizeof(h), body, blen);
	return sizeof(p) + sizeof(h) + blen;
}

static int attack(const struct peer *pr, const char *name)
{
	static uint8_t buf[1 << 20];
	struct knet_tcp_pdu p;
	size_t n = 0;
	int fd, credits, i, ok;

	fd = dial(pr);
	if (fd < 0)
		return -1;
	if (!strcmp(name, "not a CONNECT")) {
		n = msg(buf, KNET_OP_NOP, 1, NULL, 0);
	} else if (strstr(name, "digest")) {
		/* A NOP with both digests, one of them wrong. */
		uint32_t hd, dd, len;

		if (handshake(fd, 4, KNET_CMF_DIGESTS) < 0) {
			close(fd);
			return -1;
		}
		n = msg(buf + 4, KNET_OP_NOP, 1, NULL, 0) + 4;
		memmove(buf, buf + 4, sizeof(p));	/* header, then its digest */
		len = (uint32_t)(n - 4 - sizeof(p));
		hd = htole32(proto_crc32c(buf, sizeof(p)) ^ (name[0] == 'h'));
		memcpy(buf + sizeof(p), &hd, 4);
		dd = htole32(proto_crc32c(buf + sizeof(p) + 4, len) ^ (name[0] == 'd'));
		memcpy(buf + n, &dd, 4);
		n += 4;
	} else {
		credits = handshake(fd, 4, 0);
		if (credits < 0) {
			close(fd);
			return -1;
		}
		if (!strcmp(name, "more requests than its credits")) {
			/* FLUSHes go to the workers: the credits are all held meanwhile. */
			for (i = 0; i < 4 * credits + 8; i++)
				n += msg(buf + n, MXBD_OP_FLUSH, (uint32_t)i, NULL, 0);
		} else if (!strcmp(name, "data it was not asked for")) {
			p = pdu(KNET_TCP_DATA, 4096, 1, 0);
			memcpy(buf, &p, sizeof(p));
			n = sizeof(p) + 4096;
		} else if (!strcmp(name, "a PDU a client does not send")) {
			p = pdu(KNET_TCP_R2T, 4096, 1, 0);
			memcpy(buf, &p, sizeof(p));
			n = sizeof(p);
		} else if (!strcmp(name, "stalled")) {
			/* A 1 MiB write offered, its R2T never answered. */
			struct mxbd_io io = { .length = htole32(1 << 20) };
			struct knet_seg seg = { .len = htole32(1 << 20) };
			struct knet_hdr *h;

			n = msg(buf, MXBD_OP_WRITE, 1, &io, sizeof(io));
			memcpy(buf + n, &seg, sizeof(seg));
			n += sizeof(seg);
			h = (struct knet_hdr *)(buf + sizeof(p));
			h->nsegs = htole16(1);
			p = pdu(KNET_TCP_MSG, (uint32_t)(n - sizeof(p)), 0, 0);
			memcpy(buf, &p, sizeof(p));
		} else if (!strcmp(name, "message of a size no request has")) {
			p = pdu(KNET_TCP_MSG, 1 << 19, 0, 0);
			memcpy(buf, &p, sizeof(p));
			n = sizeof(p) + (1 << 19);
		} else {
			n = msg(buf, KNET_OP_NOP, 1, NULL, 0);
			buf[1] = 0x80;	/* "malformed PDU": a flag no PDU has */
		}
	}
	/* The server may close before it all went: that is the point. */
	(void)send(fd, buf, n, MSG_NOSIGNAL);
	ok = closed_by_server(fd, strcmp(name, "stalled") ? 5000 : 40000);
	close(fd);
	printf("%s: %s\n", name, ok ? "closed by the server" : "NOT CLOSED");
	return ok ? 0 : -1;
}

static int run_client(const struct peer *pr)
{
	static const char *const attacks[] = {
		"not a CONNECT", "more requests than its credits", "data it was not asked for",
		"a PDU a client does not send", "message of a size no request has",
		"malformed PDU", "stalled", "header digest mismatch", "data digest mismatch",
	};
	size_t i;
	int bad = 0;

	for (i = 0; i < sizeof(attacks) / sizeof(attacks[0]); i++)
		bad |= attack(pr, attacks[i]);
	return bad ? 1 : 0;
}

/* ---- server: lies to the clients ---------------------------------------- */

/* With digests: the first request read, its reply's header or payload digest wrong. */
static int lie_digest(int fd, const char *how)
{
	static uint8_t body[KNET_TCP_MSG_MAX + 2 * KNET_TCP_DIGEST];
	struct knet_hdr h, r = {
		.magic = htole32(KNET_PROTO_MAGIC), .version = KNET_PROTO_VERSION,
		.flags = KNET_HF_REPLY, .credits = htole16(1),
	};
	struct knet_tcp_pdu p;
	uint32_t len, hd, dd;

	if (recv_all(fd, &p, sizeof(p)))
		return fail("the client's request");
	len = le32toh(p.length);
	if (p.type != KNET_TCP_MSG || len < sizeof(h) || len > KNET_TCP_MSG_MAX ||
	    recv_all(fd, body, len + 2 * KNET_TCP_DIGEST)) {
		fprintf(stderr, "tcp-peer: the client's PDU is not a request with digests\n");
		return -1;
	}
	memcpy(&h, body + KNET_TCP_DIGEST, sizeof(h));
	printf("request: opcode %u, tag %#x\n", le16toh(h.opcode), le32toh(h.tag));
	r.opcode = h.opcode;
	r.tag = h.tag;
	p = pdu(KNET_TCP_MSG, sizeof(r), 0, 0);
	hd = htole32(proto_crc32c(&p, sizeof(p)) ^ !strcmp(how, "hdgst"));
	dd = htole32(proto_crc32c(&r, sizeof(r)) ^ !strcmp(how, "ddgst"));
	if (send_all(fd, &p, sizeof(p)) || send_all(fd, &hd, sizeof(hd)) ||
	    send_all(fd, &r, sizeof(r)) || send_all(fd, &dd, sizeof(dd)))
		return -1;
	return 0;
}

/* Lie HOW on FD: 0 when told, 1 if the client closed before, -1 on errors. */
static int lie(int fd, const char *how)
{
	static uint8_t body[KNET_TCP_MSG_MAX];
	struct knet_tcp_pdu p;
	struct knet_hdr h;
	struct knet_seg seg = { 0 };
	uint32_t len, tag, seglen = 0;

	for (;;) {
		struct knet_hdr r = {
			.magic = htole32(KNET_PROTO_MAGIC), .version = KNET_PROTO_VERSION,
			.flags = KNET_HF_REPLY, .credits = htole16(1),
		};

		/* A client may go before it offers data (knet-load's INFO connection). */
		if (recv(fd, &p, 1, MSG_PEEK) <= 0)
			return 1;
		if (recv_all(fd, &p, sizeof(p)))
			return fail("the client's request");
		len = le32toh(p.length);
		if (p.type != KNET_TCP_MSG || len < sizeof(h) || len > sizeof(body) ||
		    recv_all(fd, body, len)) {
			fprintf(stderr, "tcp-peer: the client's PDU is not a request\n");
			return -1;
		}
		memcpy(&h, body, sizeof(h));
		tag = le32toh(h.tag);
		seglen = 0;
		if (le16toh(h.nsegs)) {
			memcpy(&seg, body + sizeof(h) + le32toh(h.body_len), sizeof(seg));
			seglen = le32toh(seg.len);
		}
		if (seglen && (strncmp(how, "data-", 5) || le16toh(h.opcode) == MXBD_OP_READ))
			break;
		/* Not the one: answered, without moving its data. */
		r.opcode = h.opcode;
		r.tag = h.tag;
		if (le16toh(h.opcode) == MXBD_OP_INFO) {
			struct mxbd_info info = {
				.size = htole64(64 << 20), .logical_block = htole32(512),
				.max_io = htole32(1 << 20),
			};

			r.body_len = htole32(sizeof(info));
			p = pdu(KNET_TCP_MSG, sizeof(r) + sizeof(info), 0, 0);
			if (send_all(fd, &p, sizeof(p)) || send_all(fd, &r, sizeof(r)) ||
			    send_all(fd, &info, sizeof(info)))
				return -1;
			continue;
		}
		p = pdu(KNET_TCP_MSG, sizeof(r), 0, 0);
		if (send_all(fd, &p, sizeof(p)) || send_all(fd, &r, sizeof(r)))
			return -1;
	}
	printf("request: opcode %u, tag %#x, %u bytes offered\n", le16toh(h.opcode), tag, seglen);
	if (!strcmp(how, "r2t-range")) {
		p = pdu(KNET_TCP_R2T, 4096, tag, seglen);
	} else if (!strcmp(how, "r2t-tag")) {
		p = pdu(KNET_TCP_R2T, 512, tag ^ 0x300, 0);
	} else if (!strcmp(how, "data-long")) {
		p = pdu(KNET_TCP_DATA, seglen + 512, tag, 0);
	} else if (!strcmp(how, "data-tag")) {
		p = pdu(KNET_TCP_DATA, 512, tag ^ 0x300, 0);
	} else if (!strcmp(how, "bad-type")) {
		p = pdu(9, 0, tag, 0);
	} else if (!strcmp(how, "huge")) {
		p = pdu(KNET_TCP_MSG, 1 << 20, 0, 0);
	} else if (!strcmp(how, "reply-tag")) {
		struct knet_hdr r = {
			.magic = htole32(KNET_PROTO_MAGIC), .version = KNET_PROTO_VERSION,
			.flags = KNET_HF_REPLY, .opcode = h.opcode, .tag = htole32(tag ^ 0x300),
			.credits = htole16(1),
		};

		p = pdu(KNET_TCP_MSG, sizeof(r), 0, 0);
		if (send_all(fd, &p, sizeof(p)) || send_all(fd, &r, sizeof(r)))
			return -1;
		return 0;
	} else if (!strcmp(how, "cut")) {
		p = pdu(KNET_TCP_MSG, 64, 0, 0);
		return send_all(fd, &p, sizeof(p) / 2);
	} else {
		fprintf(stderr, "tcp-peer: no lie '%s'\n", how);
		return -1;
	}
	if (send_all(fd, &p, sizeof(p)))
		return -1;
	/* Payload of the DATA lies, or of the huge MSG: zeroes, as far as the client takes them. */
	memset(body, 0, sizeof(body));
	if (p.type == KNET_TCP_DATA || p.type == KNET_TCP_MSG)
		(void)send(fd, body, sizeof(body), MSG_NOSIGNAL | MSG_DONTWAIT);
	return 0;
}

static int run_server(int port, const char *how)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	struct knet_cm_rep rep = {
		.version = htole16(KNET_PROTO_VERSION), .credits = htole16(4),
		.inline_max = htole32(512), .max_io = htole32(1 << 20),
		.max_segs = htole16(KNET_MAX_SEGS),
	};
	struct knet_cm_req req;
	struct knet_tcp_pdu p;
	int lfd, fd, one = 1, ret;

	lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0)
		return fail("socket"), 1;
	if (setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) || listen(lfd, 4))
		return fail("listen"), 1;
	printf("listening\n");
	fflush(stdout);
	do {
		fd = accept(lfd, NULL, NULL);
		if (fd < 0)
			return fail("accept"), 1;
		if (recv_all(fd, &p, sizeof(p)) || p.type != KNET_TCP_CONNECT ||
		    le32toh(p.length) != sizeof(req) || recv_all(fd, &req, sizeof(req))) {
			fprintf(stderr, "tcp-peer: no CONNECT\n");
			return 1;
		}
		/* The digest lies grant the digests asked for; the others none. */
		rep.flags = strstr(how, "dgst") ? req.flags & htole16(KNET_CMF_DIGESTS) : 0;
		p = pdu(KNET_TCP_ACCEPT, sizeof(rep), 0, 0);
		if (send_all(fd, &p, sizeof(p)) || send_all(fd, &rep, sizeof(rep)))
			return 1;
		ret = strstr(how, "dgst") ? lie_digest(fd, how) : lie(fd, how);
		if (!ret && strcmp(how, "cut"))
			sleep(2);
		close(fd);
	} while (ret == 1);
	close(lfd);
	return ret ? 1 : 0;
}

static int run_hangup(const struct peer *pr, pid_t server)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	static uint8_t buf[256];
	size_t n;
	int fd, ok;

	fd = dial(pr);
	if (fd < 0)
		return 1;
	if (handshake(fd, 4, 0) < 0) {
		close(fd);
		return 1;
	}
	if (kill(server, SIGSTOP)) {
		close(fd);
		return fail("kill -STOP"), 1;
	}
	n = msg(buf, KNET_OP_NOP, 1, NULL, 0);
	ok = !send_all(fd, buf, n) && !shutdown(fd, SHUT_WR) &&
	     !setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	if (!ok)
		fail("a request, then a FIN");
	close(fd);	/* the reset */
	usleep(200000);
	if (kill(server, SIGCONT))
		return fail("kill -CONT"), 1;
	printf("hangup: a request, a FIN and a reset sent to a stopped server\n");
	return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
	struct peer pr = { .fd = -1 };

	if (argc == 4 && !strcmp(argv[1], "client")) {
		snprintf(pr.addr, sizeof(pr.addr), "%s", argv[2]);
		pr.port = atoi(argv[3]);
		return run_client(&pr);
	}
	if (argc == 5 && !strcmp(argv[1], "hangup")) {
		snprintf(pr.addr, sizeof(pr.addr), "%s", argv[2]);
		pr.port = atoi(argv[3]);
		return run_hangup(&pr, (pid_t)atoi(argv[4]));
	}
	if (argc == 4 && !strcmp(argv[1], "server"))
		return run_server(atoi(argv[2]), argv[3]);
	fprintf(stderr, "usage: tcp-peer client ADDR PORT | tcp-peer hangup ADDR PORT PID | "
		"tcp-peer server PORT LIE\n");
	return 2;
}

/* SPDX-License-Identifier: GPL-2.0-only */
/* Blocking socket reads of the test tools that speak knet's TCP transport. */
#ifndef ORFS_TOOLS_SOCKIO_H
#define ORFS_TOOLS_SOCKIO_H

#include <errno.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>

/* Read exactly N bytes from FD: 1, 0 at the end of the stream, -1 with errno set. */
static inline int sock_read_full(int fd, void *buf, size_t n)
{
	char *p = buf;

	while (n) {
		ssize_t r = recv(fd, p, n, 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? -1 : 0;
		p += r;
		n -= (size_t)r;
	}
	return 1;
}

#endif /* ORFS_TOOLS_SOCKIO_H */

// SPDX-License-Identifier: GPL-2.0-only
/* libfabric helpers shared by the server and the userspace client tools. */
#include <stdio.h>
#include <string.h>

#include "server/fab.h"

struct fi_info *fab_hints(const char *prov, const char *node)
{
	struct fi_info *h = fi_allocinfo();

	if (!h)
		return NULL;
	h->ep_attr->type = FI_EP_MSG;
	h->caps = FI_MSG | FI_RMA;
	h->mode = FI_CONTEXT;
	/* An IPv6 address has colons; an IPv4 address or a host name none. */
	h->addr_format = node && strchr(node, ':') ? FI_SOCKADDR_IN6 : FI_SOCKADDR_IN;
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				  FI_MR_PROV_KEY;
	h->domain_attr->threading = FI_THREAD_SAFE;
	if (prov) {
		h->fabric_attr->prov_name = strdup(prov);
		if (!h->fabric_attr->prov_name) {
			fi_freeinfo(h);
			return NULL;
		}
	}
	return h;
}

int fab_err(const char *what, int ret)
{
	fprintf(stderr, "%s: %s (%d)\n", what, fi_strerror(ret < 0 ? -ret : ret), ret);
	return ret;
}

int fab_eq_err(struct fid_eq *eq, const char *what, struct fi_eq_err_entry *out)
{
	struct fi_eq_err_entry e;
	ssize_t rd;

	memset(&e, 0, sizeof(e));
	rd = fi_eq_readerr(eq, &e, 0);
	if (rd < 0)
		return fab_err("fi_eq_readerr", (int)rd);
	fprintf(stderr, "%s: %s (prov_errno %d)\n", what, fi_strerror(e.err), e.prov_errno);
	if (out)
		*out = e;
	return -e.err;
}

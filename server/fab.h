/* SPDX-License-Identifier: GPL-2.0-only */
/* libfabric helpers shared by the server and the userspace client tools. */
#ifndef ORFS_SERVER_FAB_H
#define ORFS_SERVER_FAB_H

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#define FAB_VERSION FI_VERSION(1, 10)

/*
 * Hints for a verbs FI_EP_MSG endpoint as the kernel peer expects it, at
 * NODE (an IPv4 or IPv6 address, or a host name, taken as IPv4).
 */
struct fi_info *fab_hints(const char *prov, const char *node);

/* Print "WHAT: libfabric's text (code)" to stderr; returns RET. */
int fab_err(const char *what, int ret);

/* Read and print the pending error entry of EQ; returns its error code. */
int fab_eq_err(struct fid_eq *eq, const char *what, struct fi_eq_err_entry *out);

#endif /* ORFS_SERVER_FAB_H */

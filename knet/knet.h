/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * knet: in-kernel network shim between the ORFS/MXBD clients and RDMA.
 * Upper layers use only this header; they never touch verbs or rkeys.
 */
#ifndef _KNET_H
#define _KNET_H

#include <linux/list.h>
#include <linux/module.h>

#include "uapi/knet_proto.h"

/**
 * struct knet_ulp - an upper-layer protocol (ORFS, MXBD) using knet
 * @name: short name shown in debugfs
 * @service: the service it asks servers for (enum knet_service)
 * @owner: module owning this structure, normally THIS_MODULE
 * @node: private to knet
 */
struct knet_ulp {
	const char		*name;
	enum knet_service	service;
	struct module		*owner;
	struct list_head	node;
};

int knet_register_ulp(struct knet_ulp *ulp);
void knet_unregister_ulp(struct knet_ulp *ulp);
unsigned int knet_device_count(void);

#endif /* _KNET_H */

/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * MXBD: network block device over RDMA. Shared by the device code
 * (mxbd_dev.c) and the module's control interface (mxbd_main.c).
 */
#ifndef _MXBD_H
#define _MXBD_H

#include <linux/blk-mq.h>
#include <linux/mutex.h>
#include <linux/sizes.h>
#include <linux/spinlock.h>
#include <linux/uuid.h>
#include <linux/workqueue.h>

#include "knet.h"
#include "uapi/mxbd_proto.h"

#define MXBD_MINORS		16
#define MXBD_MAX_DEVS		256
#define MXBD_MAX_QUEUES		16
#define MXBD_LOSS_FOREVER	KNET_LOSS_FOREVER
#define MXBD_MAX_DEPTH		4096
#define MXBD_MAX_IO_TIMEOUT	3600	/* s */
#define MXBD_MAX_LOSS_TIMEOUT	86400	/* s */
#define MXBD_MAX_RESCAN		86400	/* s */
#define MXBD_MAX_IO_KB		(SZ_1M)	/* KiB, so 1 GiB: above any server's */

/**
 * struct mxbd_opts - what to attach, and how
 * @addr: the server
 * @srcaddr: the address to connect from (family 0: the routing's choice)
 * @volume: the volume's name on it
 * @nr_queues: hardware queues (connections), 1 to MXBD_MAX_QUEUES
 * @io_timeout: seconds without an answer before the connection is dropped
 *	(and its requests held and sent again), 0 for none
 * @loss_timeout: seconds a lost server is waited for, I/O held, before
 *	I/O fails; MXBD_LOSS_FOREVER to wait for ever
 * @queue_depth: most requests in flight per hardware queue; 0 for as many
 *	as the server grants credits (it can only lower them)
 * @max_io: largest request in bytes, a multiple of the page size; 0 for
 *	the server's largest (it can only lower it)
 * @read_only: attach read-only even if the server allows writes
 * @key: key=, the logon key "knet:KEY" holding the secret; "" for none
 * @secret: that key's secret, read at attach
 * @transport: the transport to connect with
 * @digests: over TCP, the digests to ask for (knet_digest_parse())
 */
struct mxbd_opts {
	struct sockaddr_storage	addr;
	struct sockaddr_storage	srcaddr;
	char			volume[KNET_NAME_MAX + 1];
	unsigned int		nr_queues;
	unsigned int		io_timeout;
	int			loss_timeout;
	unsigned int		queue_depth;
	unsigned int		max_io;
	bool			read_only;
	char			key[KNET_NAME_MAX + 1];
	struct knet_secret	secret;
	enum knet_transport_sel	transport;
	unsigned int		digests;
};

/**
 * struct mxbd_dev - one attached volume
 * @opts: how it was attached
 * @index: N of /dev/mxbdN
 * @g: the connections (one per hardware queue), which knet recovers: I/O
 *	is sent while it is LIVE, held (the queue quiesced, requests
 *	requeued) while it is RECONNECTING, failed once it is FAILED (the
 *	server stayed away past the loss time-out) or CLOSING (detaching);
 *	@g.lock also serializes @quiesced and @info
 * @transport: the transport its connections use, "rdma" or "tcp"
 * @quiesced: the queue is quiesced by the recovery
 * @info: the volume's geometry, from INFO
 * @uuid: the volume's identity, from IDENT (null: its server gives none)
 * @tag_set: blk-mq tags, one per server credit
 * @disk: the block device
 * @rescan_work: asks the server for the volume's size now and then
 * @held: requests held at a connection loss and sent again
 * @failed: requests ended with an error by a transport failure
 */
struct mxbd_dev {
	struct mxbd_opts	opts;
	int			index;
	struct knet_group	g;
	const char		*transport;	/* in use: "rdma" or "tcp" */
	bool			quiesced;
	struct mxbd_info	info;
	uuid_t			uuid;
	struct blk_mq_tag_set	tag_set;
	struct gendisk		*disk;
	struct delayed_work	rescan_work;
	atomic64_t		held;
	atomic64_t		failed;
};

int mxbd_dev_create(const struct mxbd_opts *o, int index, struct mxbd_dev **out);
void mxbd_dev_remove(struct mxbd_dev *d, bool force);
bool mxbd_dev_busy(struct mxbd_dev *d);
int mxbd_dev_init(int major, unsigned int rescan_interval);
void mxbd_dev_exit(void);

#endif /* _MXBD_H */

// SPDX-License-Identifier: GPL-2.0-only
/* knet's per-endpoint counters: debugfs knet/endpoints/<id>/stats. */
#define pr_fmt(fmt) "knet: " fmt

#include <linux/atomic.h>
#include <linux/debugfs.h>
#include <linux/seq_file.h>

#include "knet_int.h"

static atomic_t knet_ep_ids = ATOMIC_INIT(0);

static int knet_ep_stats_show(struct seq_file *m, void *v)
{
	struct knet_ep *ep = m->private;
	unsigned int i;

	seq_printf(m, "peer %pISpc\n", &ep->peer);
	seq_printf(m, "transport %s\n", ep->tr->name);
	seq_printf(m, "digests %s\n", knet_digest_str(ep->digests));
	seq_printf(m, "state %s\n", READ_ONCE(ep->dead) ? "dead" : "connected");
	seq_printf(m, "credits %d of %u\n", READ_ONCE(ep->credits), ep->lim.credits);
	seq_printf(m, "requests %lld\n", atomic64_read(&ep->requests));
	seq_printf(m, "in_flight %u\n", READ_ONCE(ep->in_flight));
	seq_printf(m, "in_flight_peak %u\n", READ_ONCE(ep->in_flight_peak));
	seq_printf(m, "bytes_inline %lld\n", atomic64_read(&ep->bytes_inline));
	seq_printf(m, "bytes_rdma %lld\n", atomic64_read(&ep->bytes_rdma));
	seq_printf(m, "credit_stalls %lld\n", atomic64_read(&ep->credit_stalls));
	seq_printf(m, "errors %lld\n", atomic64_read(&ep->errors));
	seq_printf(m, "timeouts %lld\n", atomic64_read(&ep->timeouts));
	seq_printf(m, "keepalives %lld\n", atomic64_read(&ep->keepalives));
	seq_printf(m, "fences %lld\n", atomic64_read(&ep->fences));
	seq_printf(m, "submitter_sends %lld\n", atomic64_read(&ep->submitter_sends));
	if (ep->group) {
		seq_printf(m, "group_reconnects %d\n", atomic_read(&ep->group->reconnects));
		seq_printf(m, "group_resent %d\n", atomic_read(&ep->group->resent));
		seq_printf(m, "group_connect_failures %d\n",
			   atomic_read(&ep->group->connect_failures));
	}
	seq_puts(m, "latency_us");
	for (i = 0; i < KNET_LAT_BUCKETS - 1; i++)
		seq_printf(m, " <%u:%lld", 16U << i, atomic64_read(&ep->lat_hist[i]));
	seq_printf(m, " >=%u:%lld", 16U << (KNET_LAT_BUCKETS - 2),
		   atomic64_read(&ep->lat_hist[KNET_LAT_BUCKETS - 1]));
	seq_putc(m, '\n');
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(knet_ep_stats);

void knet_ep_debugfs_add(struct knet_ep *ep)
{
	char name[16];

	ep->id = atomic_inc_return(&knet_ep_ids);
	snprintf(name, sizeof(name), "%u", ep->id);
	ep->dir = debugfs_create_dir(name, knet_debugfs_endpoints());
	debugfs_create_file("stats", 0444, ep->dir, ep, &knet_ep_stats_fops);
}

// SPDX-License-Identifier: GPL-2.0-only
/*
 * knet core: module life cycle, the RDMA devices knet may use, and the
 * upper-layer protocols registered on it.
 *
 * knet is an ib_client: the RDMA core tells it about every device that
 * appears or goes away (soft-RoCE links added with "rdma link add" as well
 * as hardware). Each device gets its own registration cache, since pinned
 * pages are DMA-mapped for one device.
 */
#define pr_fmt(fmt) "knet: " fmt

#include <linux/atomic.h>
#include <linux/debugfs.h>
#include <linux/in6.h>
#include <linux/inet.h>
#include <linux/list.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/wait.h>
#include <net/ipv6.h>
#include <rdma/ib_verbs.h>

#include "knet_int.h"
#include "regcache.h"

/**
 * struct knet_device - an RDMA device known to knet
 * @node: in knet_devices
 * @ibdev: the device; valid until knet_remove_one() returns
 * @rc: registration cache for user memory mapped for @ibdev
 * @eps: the endpoints with resources on @ibdev (under knet_lock)
 * @neps: how many
 * @eps_gone: woken when an endpoint leaves @eps
 * @going: being removed: no endpoint joins @eps any more
 */
struct knet_device {
	struct list_head	node;
	struct ib_device	*ibdev;
	struct regcache		*rc;
	struct list_head	eps;
	atomic_t		neps;
	wait_queue_head_t	eps_gone;
	bool			going;
};

static LIST_HEAD(knet_devices);
static LIST_HEAD(knet_ulps);
static DEFINE_MUTEX(knet_lock);		/* protects both lists */
static struct dentry *knet_debugfs;
static struct dentry *knet_debugfs_eps;

/**
 * knet_debugfs_endpoints() - the debugfs directory of endpoint counters
 *
 * Return: the directory (may be an error pointer when debugfs is off;
 * debugfs calls accept that).
 */
struct dentry *knet_debugfs_endpoints(void)
{
	return knet_debugfs_eps;
}

static struct ib_client knet_ib_client;

static atomic_t knet_objs[KNET_OBJ_NR];
static const char * const knet_obj_names[KNET_OBJ_NR] = {
	[KNET_OBJ_EP]		= "endpoints",
	[KNET_OBJ_GROUP]	= "groups",
	[KNET_OBJ_MR]		= "mrs",
	[KNET_OBJ_PIN]		= "user_pins",
	[KNET_OBJ_MAP]		= "dma_maps",
};

/* Count @n more (or, negative, fewer) objects of kind @o. */
void knet_obj_add(enum knet_obj o, int n)
{
	atomic_add(n, &knet_objs[o]);
}

static int knet_objects_show(struct seq_file *m, void *v)
{
	unsigned int i;

	for (i = 0; i < KNET_OBJ_NR; i++)
		seq_printf(m, "%s %d\n", knet_obj_names[i], atomic_read(&knet_objs[i]));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(knet_objects);

/* At unload every object must be gone: anything left is a leak. */
static void knet_check_objects(void)
{
	bool leaked = false;
	unsigned int i;

	for (i = 0; i < KNET_OBJ_NR; i++) {
		int n = atomic_read(&knet_objs[i]);

		if (n) {
			pr_err("%d %s left at unload\n", n, knet_obj_names[i]);
			leaked = true;
		}
	}
	WARN(leaked, "knet: objects leaked\n");
}

/**
 * knet_device_attach() - an endpoint is about to put resources on a device
 * @dev: the device its connection was routed to
 * @ep_node: the endpoint's node, put in the device's list
 * @kdev: out: knet's device, for knet_device_detach()
 * @rc: out: the device's registration cache
 *
 * Context: process context, may sleep.
 * Return: 0, or -ENODEV when knet does not know @dev or it is being
 * removed (the endpoint must not use it).
 */
int knet_device_attach(struct ib_device *dev, struct list_head *ep_node,
		       struct knet_device **kdev, struct regcache **rc)
{
	struct knet_device *k;
	int ret = -ENODEV;

	mutex_lock(&knet_lock);
	k = ib_get_client_data(dev, &knet_ib_client);
	if (k && !k->going) {
		list_add_tail(ep_node, &k->eps);
		atomic_inc(&k->neps);
		*kdev = k;
		*rc = k->rc;
		ret = 0;
	}
	mutex_unlock(&knet_lock);
	return ret;
}

/**
 * knet_device_detach() - an endpoint freed what it had on its device
 * @kdev: from knet_device_attach()
 * @ep_node: as given to it
 *
 * Context: process context, may sleep.
 */
void knet_device_detach(struct knet_device *kdev, struct list_head *ep_node)
{
	mutex_lock(&knet_lock);
	list_del(ep_node);
	atomic_dec(&kdev->neps);
	wake_up_all(&kdev->eps_gone);
	mutex_unlock(&knet_lock);
}

static int knet_add_one(struct ib_device *ibdev)
{
	struct knet_device *kdev;
	int ret;

	kdev = kzalloc(sizeof(*kdev), GFP_KERNEL);
	if (!kdev)
		return -ENOMEM;
	kdev->ibdev = ibdev;
	INIT_LIST_HEAD(&kdev->eps);
	atomic_set(&kdev->neps, 0);
	init_waitqueue_head(&kdev->eps_gone);
	kdev->rc = regcache_create(ibdev);
	if (IS_ERR(kdev->rc)) {
		ret = PTR_ERR(kdev->rc);
		goto free_kdev;
	}

	mutex_lock(&knet_lock);
	list_add_tail(&kdev->node, &knet_devices);
	mutex_unlock(&knet_lock);
	ib_set_client_data(ibdev, &knet_ib_client, kdev);
	pr_info("using RDMA device %s\n", dev_name(&ibdev->dev));
	return 0;

free_kdev:
	kfree(kdev);
	return ret;
}

/*
 * The device goes. Like NVMe's and NFS's RDMA transports, knet lets go of
 * it before returning: every endpoint on it fails at once (-ECONNRESET) and
 * its owner is asked to destroy it (knet_ep_params.removed); the removal
 * waits for that, as the device's queue pairs, CQs, PDs and MRs must all
 * be freed first. Sessions and MXBD then reconnect, through another device
 * if one reaches the server.
 */
static void knet_remove_one(struct ib_device *ibdev, void *client_data)
{
	struct knet_device *kdev = client_data;
	struct list_head *pos;
	int n;

	mutex_lock(&knet_lock);
	list_del(&kdev->node);
	kdev->going = true;
	list_for_each(pos, &kdev->eps)
		knet_ep_device_removed(pos);
	mutex_unlock(&knet_lock);
	n = atomic_read(&kdev->neps);
	if (n)
		pr_info("%s is being removed: closing %d endpoints on it\n",
			dev_name(&ibdev->dev), n);
	while (!wait_event_timeout(kdev->eps_gone, !atomic_read(&kdev->neps), 30 * HZ))
		pr_warn("%s: removal still waits for %d endpoints to be closed\n",
			dev_name(&ibdev->dev), atomic_read(&kdev->neps));
	regcache_destroy(kdev->rc);
	pr_info("released RDMA device %s\n", dev_name(&ibdev->dev));
	kfree(kdev);
}

static struct ib_client knet_ib_client = {
	.name	= "knet",
	.add	= knet_add_one,
	.remove	= knet_remove_one,
};

/**
 * knet_device_count() - number of RDMA devices knet can use now
 *
 * Context: process context, may sleep.
 * Return: the count.
 */
unsigned int knet_device_count(void)
{
	struct knet_device *kdev;
	unsigned int n = 0;

	mutex_lock(&knet_lock);
	list_for_each_entry(kdev, &knet_devices, node)
		n++;
	mutex_unlock(&knet_lock);
	return n;
}
EXPORT_SYMBOL_GPL(knet_device_count);

/**
 * knet_parse_addr() - a server's or a source's address, from text
 * @s: an IPv4 address (192.0.2.10) or an IPv6 address, bare or in
 *	brackets, a link-local one with its zone (fe80::1%eth0 or %2)
 * @len: bytes of @s to read (the text need not end with a NUL)
 * @port: the port to put in it
 * @ss: out: an AF_INET or AF_INET6 address
 *
 * Context: process context.
 * Return: 0, or -EINVAL if @s is not such an address.
 */
int knet_parse_addr(const char *s, size_t len, u16 port, struct sockaddr_storage *ss)
{
	char buf[INET6_ADDRSTRLEN + IFNAMSIZ + 2];

	if (len >= 2 && s[0] == '[' && s[len - 1] == ']') {
		s++;
		len -= 2;
	}
	if (!len || len >= sizeof(buf) || memchr(s, 0, len))
		return -EINVAL;
	memcpy(buf, s, len);
	buf[len] = 0;
	memset(ss, 0, sizeof(*ss));
	if (inet_pton_with_scope(&init_net, AF_UNSPEC, buf, NULL, ss))
		return -EINVAL;
	knet_addr_set_port(ss, port);
	return 0;
}
EXPORT_SYMBOL_GPL(knet_parse_addr);

/**
 * knet_connect_hint() - the likely cause of a failed connect, for a person
 * @err: knet_ep_connect()'s or knet_mq_connect()'s error
 * @t: the transport asked for (knet_ep_params.transport)
 *
 * For the messages of an attach or a mount that failed, beside the
 * error's name (%pe), as mount.nfs and nvme connect say what to look at.
 *
 * Return: a phrase, or "" when there is nothing more to say.
 */
const char *knet_connect_hint(int err, enum knet_transport_sel t)
{
	switch (err) {
	case -ETIMEDOUT:
		if (t == KNET_TRANSPORT_TCP)
			return "no answer: is the server running and listening on TCP (tcp://)?";
		return "no answer: is the server running, reached through an RDMA device?";
	case -ENETUNREACH:
	case -EHOSTUNREACH:
	case -EADDRNOTAVAIL:
	case -ENODEV:
		if (t == KNET_TRANSPORT_TCP)
			return "no route to it (see 'ip route get')";
		return "no RDMA device here routes to it (see 'rdma link', 'ip route get')";
	case -ECONNREFUSED:
		if (t == KNET_TRANSPORT_TCP)
			return "refused: no server listens on TCP at that address and port";
		return "refused: no server listens at that address and port";
	case -ECONNRESET:
		return "cut during the handshake: a server of this suite and version?";
	case -EPROTO:
		return "a reply that did not parse (another version?), or digests not granted";
	case -EKEYREJECTED:
	case -EKEYEXPIRED:
	case -EACCES:
		return "the server did not accept this client's key or address";
	default:
		return "";
	}
}
EXPORT_SYMBOL_GPL(knet_connect_hint);

/**
 * knet_addr_set_port() - set the port of an address
 * @ss: an AF_INET or AF_INET6 address (another family is left alone)
 * @port: the port, host order
 *
 * Context: any.
 */
void knet_addr_set_port(struct sockaddr_storage *ss, u16 port)
{
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)ss)->sin_port = htons(port);
	else if (ss->ss_family == AF_INET6)
		((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
}
EXPORT_SYMBOL_GPL(knet_addr_set_port);

/**
 * knet_addr_port() - the port of an address
 * @ss: an AF_INET or AF_INET6 address
 *
 * Context: any.
 * Return: the port, host order; 0 for another family.
 */
u16 knet_addr_port(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)ss)->sin_port);
	if (ss->ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
	return 0;
}
EXPORT_SYMBOL_GPL(knet_addr_port);

/**
 * knet_addr_same() - do two addresses name the same peer?
 * @a: an address from knet_parse_addr()
 * @b: another
 *
 * Family, address, port and, for IPv6, zone must match.
 *
 * Context: any.
 * Return: true if they do.
 */
bool knet_addr_same(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET) {
		const struct sockaddr_in *x = (const void *)a, *y = (const void *)b;

		return x->sin_addr.s_addr == y->sin_addr.s_addr && x->sin_port == y->sin_port;
	}
	if (a->ss_family == AF_INET6) {
		const struct sockaddr_in6 *x = (const void *)a, *y = (const void *)b;

		return ipv6_addr_equal(&x->sin6_addr, &y->sin6_addr) &&
		       x->sin6_port == y->sin6_port && x->sin6_scope_id == y->sin6_scope_id;
	}
	return false;
}
EXPORT_SYMBOL_GPL(knet_addr_same);

/**
 * knet_register_ulp() - register an upper-layer protocol
 * @ulp: filled-in descriptor; must stay valid until unregistered
 *
 * One protocol may register per service.
 *
 * Context: process context, may sleep.
 * Return: 0, -EINVAL for a malformed descriptor, -EEXIST if the service
 * already has a protocol.
 */
int knet_register_ulp(struct knet_ulp *ulp)
{
	struct knet_ulp *cur;
	int ret = 0;

	if (!ulp->name || (ulp->service != KNET_SVC_FILE &&
			   ulp->service != KNET_SVC_BLOCK))
		return -EINVAL;

	mutex_lock(&knet_lock);
	list_for_each_entry(cur, &knet_ulps, node) {
		if (cur->service == ulp->service) {
			ret = -EEXIST;
			goto unlock;
		}
	}
	list_add_tail(&ulp->node, &knet_ulps);
	pr_info("upper layer %s registered\n", ulp->name);
unlock:
	mutex_unlock(&knet_lock);
	return ret;
}
EXPORT_SYMBOL_GPL(knet_register_ulp);

/**
 * knet_unregister_ulp() - undo knet_register_ulp()
 * @ulp: a registered descriptor
 *
 * Context: process context, may sleep.
 */
void knet_unregister_ulp(struct knet_ulp *ulp)
{
	mutex_lock(&knet_lock);
	list_del(&ulp->node);
	mutex_unlock(&knet_lock);
	pr_info("upper layer %s unregistered\n", ulp->name);
}
EXPORT_SYMBOL_GPL(knet_unregister_ulp);

static int knet_devices_show(struct seq_file *m, void *v)
{
	struct knet_device *kdev;

	mutex_lock(&knet_lock);
	list_for_each_entry(kdev, &knet_devices, node) {
		struct ib_device *ibdev = kdev->ibdev;
		const struct ib_device_attr *a = &ibdev->attrs;

		seq_printf(m, "%s ports %u iwarp %d frwr %d max_qp %d max_sge %d max_sgl_rd %u max_fast_reg_pages %u\n",
			   dev_name(&ibdev->dev), ibdev->phys_port_cnt,
			   rdma_protocol_iwarp(ibdev, rdma_start_port(ibdev)),
			   !!(a->device_cap_flags & IB_DEVICE_MEM_MGT_EXTENSIONS),
			   a->max_qp, a->max_send_sge, a->max_sgl_rd,
			   a->max_fast_reg_page_list_len);
	}
	mutex_unlock(&knet_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(knet_devices);

static int knet_ulps_show(struct seq_file *m, void *v)
{
	struct knet_ulp *ulp;

	mutex_lock(&knet_lock);
	list_for_each_entry(ulp, &knet_ulps, node)
		seq_printf(m, "%s service %d\n", ulp->name, ulp->service);
	mutex_unlock(&knet_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(knet_ulps);

static int __init knet_init(void)
{
	int ret;

	ret = knet_group_init();
	if (ret)
		return ret;
	ret = knet_tcp_init();
	if (ret)
		goto exit_group;
	knet_debugfs = debugfs_create_dir("knet", NULL);
	debugfs_create_file("devices", 0444, knet_debugfs, NULL,
			    &knet_devices_fops);
	debugfs_create_file("ulps", 0444, knet_debugfs, NULL, &knet_ulps_fops);
	debugfs_create_file("objects", 0444, knet_debugfs, NULL, &knet_objects_fops);
	knet_debugfs_eps = debugfs_create_dir("endpoints", knet_debugfs);

	ret = ib_register_client(&knet_ib_client);
	if (ret) {
		pr_err("cannot register as an RDMA client: %d\n", ret);
		goto remove_debugfs;
	}
	pr_info("loaded, protocol version %d\n", KNET_PROTO_VERSION);
	return 0;

remove_debugfs:
	debugfs_remove_recursive(knet_debugfs);
	knet_tcp_exit();
exit_group:
	knet_group_exit();
	return ret;
}

static void __exit knet_exit(void)
{
	/* Calls knet_remove_one() for every device still present. */
	ib_unregister_client(&knet_ib_client);
	WARN_ON(!list_empty(&knet_devices) || !list_empty(&knet_ulps));
	knet_tcp_exit();
	knet_check_objects();
	debugfs_remove_recursive(knet_debugfs);
	knet_group_exit();
	pr_info("unloaded\n");
}

module_init(knet_init);
module_exit(knet_exit);

MODULE_DESCRIPTION("Network shim for remote storage over RDMA and TCP");
MODULE_LICENSE("GPL");

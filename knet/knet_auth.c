// SPDX-License-Identifier: GPL-2.0-only
/*
 * knet's mutual authentication with a shared secret (knet_proto.h,
 * KNET_OP_AUTH), the client side. The secret comes from the kernel's
 * keyring, a "logon" key that no user can read back, and is copied into
 * the upper layer's mount or device so that reconnections need no
 * process context of the user who set it up.
 */
#define pr_fmt(fmt) "knet: " fmt

#include <crypto/algapi.h>
#include <crypto/hash.h>
#include <keys/user-type.h>
#include <linux/key.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "knet_int.h"

/**
 * knet_secret_lookup() - read a secret from the keyring
 * @name: the key's name: the logon key "knet:@name" is read
 * @s: filled in
 *
 * The key is searched in the caller's keyrings (thread, process, session,
 * user), as request_key() does; it must hold %KNET_SECRET_MIN to
 * %KNET_SECRET_MAX bytes.
 *
 * Context: process context of the user who set the key up (mount, attach).
 * Return: 0, -ENOKEY (no such key, or revoked), -EKEYREJECTED (its size),
 * -EINVAL (a bad name), or request_key()'s error.
 */
int knet_secret_lookup(const char *name, struct knet_secret *s)
{
	const struct user_key_payload *ukp;
	char desc[8 + KNET_NAME_MAX + 1];
	struct key *key;
	int ret = 0;

	memset(s, 0, sizeof(*s));
	if (!*name || snprintf(desc, sizeof(desc), "knet:%s", name) >= sizeof(desc))
		return -EINVAL;
	key = request_key(&key_type_logon, desc, NULL);
	if (IS_ERR(key))
		return PTR_ERR(key);
	down_read(&key->sem);
	ukp = user_key_payload_locked(key);
	if (!ukp)
		ret = -ENOKEY;
	else if (ukp->datalen < KNET_SECRET_MIN || ukp->datalen > KNET_SECRET_MAX)
		ret = -EKEYREJECTED;
	if (!ret) {
		memcpy(s->key, ukp->data, ukp->datalen);
		s->len = ukp->datalen;
	}
	up_read(&key->sem);
	key_put(key);
	return ret;
}
EXPORT_SYMBOL_GPL(knet_secret_lookup);

/**
 * knet_secret_clear() - forget a secret
 * @s: the secret
 */
void knet_secret_clear(struct knet_secret *s)
{
	memzero_explicit(s, sizeof(*s));
}
EXPORT_SYMBOL_GPL(knet_secret_clear);

/* One side's MAC (knet_proto.h) into @out. */
static int knet_auth_mac(struct crypto_shash *tfm, bool server, const u8 *nc, const u8 *ns,
			 u8 service, const char *name, u8 *out)
{
	SHASH_DESC_ON_STACK(desc, tfm);
	u8 tail[2] = { service, strlen(name) };
	int ret;

	desc->tfm = tfm;
	ret = crypto_shash_init(desc);
	if (!ret)
		ret = crypto_shash_update(desc, server ? KNET_AUTH_SERVER : KNET_AUTH_CLIENT,
					  KNET_AUTH_LABEL);
	if (!ret)
		ret = crypto_shash_update(desc, nc, KNET_AUTH_NONCE);
	if (!ret)
		ret = crypto_shash_update(desc, ns, KNET_AUTH_NONCE);
	if (!ret)
		ret = crypto_shash_update(desc, tail, sizeof(tail));
	if (!ret)
		ret = crypto_shash_update(desc, name, tail[1]);
	if (!ret)
		ret = crypto_shash_final(desc, out);
	shash_desc_zero(desc);
	return ret;
}

/* One step: send @a, the answer's body into @rep; 0, -EACCES or the call's error. */
static int knet_auth_call(struct knet_ep *ep, const struct knet_ep_params *p,
			  struct knet_auth_req *a, struct knet_auth_rep *rep, u32 *rep_len,
			  unsigned long timeout)
{
	struct knet_request rq = {
		.opcode = KNET_OP_AUTH,
		.body = a,
		.body_len = sizeof(*a),
		.reply = rep,
		.reply_max = sizeof(*rep),
	};
	int ret = knet_call(ep, &rq, timeout);

	if (ret)
		return ret;
	*rep_len = rq.reply_len;
	if (rq.status) {
		pr_warn("%pISpc refused the authentication (step %u): %d\n", &p->addr, a->step,
			rq.status);
		return -EACCES;
	}
	return 0;
}

/*
 * knet_ep_auth() - authenticate a new endpoint both ways
 *
 * Context: process context, may sleep.
 * Return: 0, -EACCES (a proof failed: logged), -EPROTO, or an error of the
 * calls or the crypto API.
 */
int knet_ep_auth(struct knet_ep *ep, const struct knet_ep_params *p)
{
	unsigned long timeout = msecs_to_jiffies(p->timeout_ms ?: 5000);
	struct knet_auth_req a = { .step = 1 };
	struct knet_auth_rep rep;
	u8 nc[KNET_AUTH_NONCE], mac[KNET_AUTH_MAC];
	struct crypto_shash *tfm;
	u32 len = 0;
	int ret;

	tfm = crypto_alloc_shash("hmac(sha256)", 0, 0);
	if (IS_ERR(tfm))
		return PTR_ERR(tfm);
	ret = crypto_shash_setkey(tfm, p->secret->key, p->secret->len);
	if (ret)
		goto out;
	get_random_bytes(nc, sizeof(nc));
	memcpy(a.data, nc, sizeof(nc));
	ret = knet_auth_call(ep, p, &a, &rep, &len, timeout);
	if (ret)
		goto out;
	if (len != sizeof(rep)) {
		ret = -EPROTO;
		goto out;
	}
	/* The server proves it holds the secret first. */
	ret = knet_auth_mac(tfm, true, nc, rep.nonce, p->service, p->name, mac);
	if (ret)
		goto out;
	if (crypto_memneq(mac, rep.mac, sizeof(mac))) {
		pr_err("%pISpc: the server's proof is wrong: it does not hold the secret\n",
		       &p->addr);
		ret = -EACCES;
		goto out;
	}
	a.step = 2;
	ret = knet_auth_mac(tfm, false, nc, rep.nonce, p->service, p->name, a.data);
	if (!ret)
		ret = knet_auth_call(ep, p, &a, &rep, &len, timeout);
out:
	memzero_explicit(&a, sizeof(a));
	crypto_free_shash(tfm);
	return ret;
}

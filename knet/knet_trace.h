/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * knet tracepoints: the life of a request on an endpoint.
 *
 *   echo 1 > /sys/kernel/tracing/events/knet/enable
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM knet

#if !defined(_KNET_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _KNET_TRACE_H

#include <linux/tracepoint.h>

TRACE_EVENT(knet_submit,
	TP_PROTO(unsigned int ep, u32 tag, u16 opcode, u32 len, bool rdma),
	TP_ARGS(ep, tag, opcode, len, rdma),
	TP_STRUCT__entry(
		__field(unsigned int, ep)
		__field(u32, tag)
		__field(u16, opcode)
		__field(u32, len)
		__field(bool, rdma)
	),
	TP_fast_assign(
		__entry->ep = ep;
		__entry->tag = tag;
		__entry->opcode = opcode;
		__entry->len = len;
		__entry->rdma = rdma;
	),
	TP_printk("ep=%u tag=%#x op=%u len=%u %s", __entry->ep, __entry->tag, __entry->opcode,
		  __entry->len, __entry->rdma ? "rdma" : "inline")
);

TRACE_EVENT(knet_complete,
	TP_PROTO(unsigned int ep, u32 tag, int error, u32 status, u64 us),
	TP_ARGS(ep, tag, error, status, us),
	TP_STRUCT__entry(
		__field(unsigned int, ep)
		__field(u32, tag)
		__field(int, error)
		__field(u32, status)
		__field(u64, us)
	),
	TP_fast_assign(
		__entry->ep = ep;
		__entry->tag = tag;
		__entry->error = error;
		__entry->status = status;
		__entry->us = us;
	),
	TP_printk("ep=%u tag=%#x error=%d status=%u %llu us", __entry->ep, __entry->tag,
		  __entry->error, __entry->status, __entry->us)
);

TRACE_EVENT(knet_ep_fail,
	TP_PROTO(unsigned int ep, int error),
	TP_ARGS(ep, error),
	TP_STRUCT__entry(
		__field(unsigned int, ep)
		__field(int, error)
	),
	TP_fast_assign(
		__entry->ep = ep;
		__entry->error = error;
	),
	TP_printk("ep=%u error=%d", __entry->ep, __entry->error)
);

#endif /* _KNET_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE knet_trace
#include <trace/define_trace.h>

// SPDX-License-Identifier: BSD-2-Clause
/*
 * The decoding of CUPTI activity records (user/gpu/gpurec.c) and the table
 * of traced API calls.  These tests check our decoding, not a GPU: the
 * buffers are built here from CUDA 13's own record structs
 * (CUpti_ActivityKernel10, Memcpy6, MemcpyPtoP4, Memset4, Memory4, API) laid
 * out as CUPTI lays them out, back to back at 8-byte alignment, and walked
 * by a stand-in for cuptiActivityGetNextRecord that steps by the size of
 * each record's struct (tests/gpu/cupti_walk.h).  Whether a real GPU and CUPTI produce such records
 * is for a run on a GPU machine.
 *
 * Built without CUPTI's headers, the program reports its tests as skipped
 * and why.
 */
#include "testlib.h"

#ifdef GPU_SKIP_REASON

static void test_gpurec(void)
{
	SKIP_TEST("%s", GPU_SKIP_REASON);
}

int main(void)
{
	RUN_TEST(test_gpurec);
	return test_summary("gpurec");
}

#else

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cupti_callbacks.h>
#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>

#include "cupti_walk.h"
#include "gpurec.h"

/* A buffer as CUPTI fills one. */
struct tbuf {
	_Alignas(8) uint8_t data[64 * 1024];
	size_t len;
};

static void tbuf_add(struct tbuf *b, const void *rec, size_t size)
{
	size_t at = (b->len + 7) & ~(size_t)7;

	if (at + size > sizeof(b->data)) {
		fprintf(stderr, "test buffer full\n");
		abort();
	}
	memcpy(b->data + at, rec, size);
	b->len = at + size;
}

/* What emit received. */
struct sink {
	struct scalene_bpf_gpu_rec recs[512];
	unsigned int n;
	unsigned int calls;
	unsigned int sizes[16];
};

static void sink_emit(const struct scalene_bpf_gpu_rec *recs, unsigned int n, void *ctx)
{
	struct sink *s = ctx;

	if (s->calls < 16)
		s->sizes[s->calls] = n;
	s->calls++;
	CHECK(n >= 1 && n <= SCALENE_BPF_GPU_BATCH);
	if (s->n + n > 512) {
		fprintf(stderr, "sink full\n");
		abort();
	}
	memcpy(&s->recs[s->n], recs, n * sizeof(*recs));
	s->n += n;
}

static int walk(struct tbuf *b, struct sink *s, struct gpurec_counts *c)
{
	return gpurec_walk(b->data, b->len, cupti_walk_next, sink_emit, s, c);
}

static CUpti_ActivityKernel10 kernel(uint32_t corr, uint64_t start, uint64_t end, const char *name)
{
	CUpti_ActivityKernel10 k;

	memset(&k, 0, sizeof(k));
	k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	k.start = start;
	k.end = end;
	k.completed = end;
	k.deviceId = 0;
	k.contextId = 1;
	k.streamId = 7;
	k.correlationId = corr;
	k.gridX = 128;
	k.blockX = 256;
	k.name = name;
	return k;
}

static CUpti_ActivityMemcpy6 memcpy_rec(uint32_t corr, uint8_t copy_kind, uint64_t bytes,
					uint64_t start, uint64_t end)
{
	CUpti_ActivityMemcpy6 m;

	memset(&m, 0, sizeof(m));
	m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
	m.copyKind = copy_kind;
	m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
	m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	m.bytes = bytes;
	m.start = start;
	m.end = end;
	m.deviceId = 1;
	m.contextId = 2;
	m.streamId = 14;
	m.correlationId = corr;
	m.runtimeCorrelationId = corr;
	return m;
}

static CUpti_ActivityMemset4 memset_rec(uint32_t corr, uint64_t bytes, uint64_t start, uint64_t end)
{
	CUpti_ActivityMemset4 m;

	memset(&m, 0, sizeof(m));
	m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
	m.value = 0xab;
	m.bytes = bytes;
	m.start = start;
	m.end = end;
	m.deviceId = 0;
	m.contextId = 1;
	m.streamId = 7;
	m.correlationId = corr;
	m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	return m;
}

static CUpti_ActivityMemory4 memory_rec(uint32_t corr, CUpti_ActivityMemoryOperationType op,
					uint64_t address, uint64_t bytes, uint64_t ts)
{
	CUpti_ActivityMemory4 m;

	memset(&m, 0, sizeof(m));
	m.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
	m.memoryOperationType = op;
	m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	m.correlationId = corr;
	m.address = address;
	m.bytes = bytes;
	m.timestamp = ts;
	m.processId = 4242;
	m.deviceId = 0;
	m.contextId = 1;
	m.streamId = 0xFFFFFFFFu; /* CUPTI: no stream unless asynchronous */
	return m;
}

static struct tbuf buf;
static struct sink sink;

static void reset(void)
{
	memset(&buf, 0, sizeof(buf));
	memset(&sink, 0, sizeof(sink));
}

static void test_kernel(void)
{
	static const char name[] = "_Z6matmulPfS_S_i";
	CUpti_ActivityKernel10 k = kernel(1001, 5000000, 5750000, name);
	struct gpurec_counts c = { 0 };
	const struct scalene_bpf_gpu_rec *r = &sink.recs[0];

	reset();
	k.deviceId = 3;
	k.contextId = 9;
	k.streamId = 21;
	tbuf_add(&buf, &k, sizeof(k));
	CHECK_EQ_INT(walk(&buf, &sink, &c), 1);
	CHECK_EQ_INT(sink.n, 1);
	CHECK_EQ_INT(r->kind, GPU_REC_KERNEL);
	CHECK_EQ_INT(r->correlation_id, 1001);
	CHECK_EQ_INT(r->start_ns, 5000000);
	CHECK_EQ_INT(r->end_ns, 5750000);
	CHECK(r->name == (uint64_t)(uintptr_t)name);
	CHECK_EQ_INT(r->device_id, 3);
	CHECK_EQ_INT(r->context_id, 9);
	CHECK_EQ_INT(r->stream_id, 21);
	CHECK_EQ_INT(r->bytes, 0);
	CHECK_EQ_INT(r->flags, 0);
	CHECK_EQ_INT(r->graph_id, 0);
	CHECK_EQ_INT(c.records, 1);
	CHECK_EQ_INT(c.batches, 1);
	CHECK_EQ_INT(c.first_ns, 5000000);
	CHECK_EQ_INT(c.last_ns, 5750000);

	/* KERNEL (serialised tracing) writes the same struct. */
	reset();
	k.kind = CUPTI_ACTIVITY_KIND_KERNEL;
	k.isDeviceLaunched = 1;
	tbuf_add(&buf, &k, sizeof(k));
	memset(&c, 0, sizeof(c));
	CHECK_EQ_INT(walk(&buf, &sink, &c), 1);
	CHECK_EQ_INT(sink.n, 1);
	CHECK_EQ_INT(sink.recs[0].kind, GPU_REC_KERNEL);
	CHECK_EQ_INT(sink.recs[0].flags, GPU_REC_F_DEVICE_LAUNCHED);
}

static void test_memcpy(void)
{
	CUpti_ActivityMemcpy6 h2d =
		memcpy_rec(10, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 1 << 20, 100, 400);
	CUpti_ActivityMemcpy6 d2h = memcpy_rec(11, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, 4096, 500, 520);
	CUpti_ActivityMemcpy6 d2d =
		memcpy_rec(12, CUPTI_ACTIVITY_MEMCPY_KIND_DTOD, 3u << 30, 600, 900);
	struct gpurec_counts c = { 0 };

	reset();
	d2d.graphId = 5;
	d2d.graphNodeId = 77;
	tbuf_add(&buf, &h2d, sizeof(h2d));
	tbuf_add(&buf, &d2h, sizeof(d2h));
	tbuf_add(&buf, &d2d, sizeof(d2d));
	CHECK_EQ_INT(walk(&buf, &sink, &c), 3);
	CHECK_EQ_INT(sink.n, 3);
	CHECK_EQ_INT(sink.recs[0].kind, GPU_REC_MEMCPY);
	CHECK_EQ_INT(sink.recs[0].copy_kind, GPU_COPY_HTOD);
	CHECK_EQ_INT(sink.recs[0].bytes, 1 << 20);
	CHECK_EQ_INT(sink.recs[0].correlation_id, 10);
	CHECK_EQ_INT(sink.recs[0].start_ns, 100);
	CHECK_EQ_INT(sink.recs[0].end_ns, 400);
	CHECK_EQ_INT(sink.recs[0].device_id, 1);
	CHECK_EQ_INT(sink.recs[0].context_id, 2);
	CHECK_EQ_INT(sink.recs[0].stream_id, 14);
	CHECK_EQ_INT(sink.recs[0].name, 0);
	CHECK_EQ_INT(sink.recs[1].copy_kind, GPU_COPY_DTOH);
	CHECK_EQ_INT(sink.recs[1].bytes, 4096);
	CHECK_EQ_INT(sink.recs[2].copy_kind, GPU_COPY_DTOD);
	CHECK_EQ_INT(sink.recs[2].bytes, 3ull << 30); /* over 32 bits */
	CHECK_EQ_INT(sink.recs[2].flags, GPU_REC_F_GRAPH);
	CHECK_EQ_INT(sink.recs[2].graph_id, 5);
	CHECK_EQ_INT(sink.recs[2].graph_node_id, 77);
	CHECK_EQ_INT(c.records, 3);
	CHECK_EQ_INT(c.first_ns, 100);
	CHECK_EQ_INT(c.last_ns, 900);
}

static void test_peer_copy(void)
{
	CUpti_ActivityMemcpyPtoP4 p;
	struct gpurec_counts c = { 0 };

	reset();
	memset(&p, 0, sizeof(p));
	p.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
	p.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
	p.bytes = 65536;
	p.start = 1000;
	p.end = 1100;
	p.deviceId = 0;
	p.srcDeviceId = 0;
	p.dstDeviceId = 1;
	p.correlationId = 33;
	tbuf_add(&buf, &p, sizeof(p));
	CHECK_EQ_INT(walk(&buf, &sink, &c), 1);
	CHECK_EQ_INT(sink.n, 1);
	CHECK_EQ_INT(sink.recs[0].kind, GPU_REC_MEMCPY);
	CHECK_EQ_INT(sink.recs[0].copy_kind, GPU_COPY_PTOP);
	CHECK_EQ_INT(sink.recs[0].flags, GPU_REC_F_PEER);
	CHECK_EQ_INT(sink.recs[0].device_id, 0);
	CHECK_EQ_INT(sink.recs[0].dst_device, 1);
	CHECK_EQ_INT(sink.recs[0].bytes, 65536);
	CHECK_EQ_INT(sink.recs[0].correlation_id, 33);
}

static void test_memset(void)
{
	CUpti_ActivityMemset4 m = memset_rec(40, 8 << 20, 2000, 2600);
	struct gpurec_counts c = { 0 };

	reset();
	tbuf_add(&buf, &m, sizeof(m));
	CHECK_EQ_INT(walk(&buf, &sink, &c), 1);
	CHECK_EQ_INT(sink.n, 1);
	CHECK_EQ_INT(sink.recs[0].kind, GPU_REC_MEMSET);
	CHECK_EQ_INT(sink.recs[0].bytes, 8 << 20);
	CHECK_EQ_INT(sink.recs[0].memory_kind, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
	CHECK_EQ_INT(sink.recs[0].start_ns, 2000);
	CHECK_EQ_INT(sink.recs[0].end_ns, 2600);
	CHECK_EQ_INT(sink.recs[0].correlation_id, 40);
}

static void test_memory_alloc_free(void)
{
	CUpti_ActivityMemory4 a = memory_rec(50, CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION,
					     0x7f0000200000ull, 1ull << 30, 3000);
	CUpti_ActivityMemory4 f = memory_rec(58, CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE,
					     0x7f0000200000ull, 1ull << 30, 9000);
	CUpti_ActivityMemory4 pool = memory_rec(60, CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION,
						0x7f0040000000ull, 2 << 20, 9500);
	struct gpurec_counts c = { 0 };
	const struct scalene_bpf_gpu_rec *r = sink.recs;

	reset();
	pool.isAsync = 1;
	pool.streamId = 7;
	tbuf_add(&buf, &a, sizeof(a));
	tbuf_add(&buf, &f, sizeof(f));
	tbuf_add(&buf, &pool, sizeof(pool));
	CHECK_EQ_INT(walk(&buf, &sink, &c), 3);
	CHECK_EQ_INT(sink.n, 3);
	CHECK_EQ_INT(r[0].kind, GPU_REC_ALLOC);
	CHECK_EQ_INT(r[0].address, 0x7f0000200000ull);
	CHECK_EQ_INT(r[0].bytes, 1ull << 30);
	CHECK_EQ_INT(r[0].start_ns, 3000);
	CHECK_EQ_INT(r[0].end_ns, 3000);
	CHECK_EQ_INT(r[0].correlation_id, 50);
	CHECK_EQ_INT(r[0].memory_kind, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
	CHECK_EQ_INT(r[0].stream_id, 0xFFFFFFFFu);
	CHECK_EQ_INT(r[0].flags, 0);
	CHECK_EQ_INT(r[1].kind, GPU_REC_FREE);
	CHECK_EQ_INT(r[1].address, 0x7f0000200000ull);
	CHECK_EQ_INT(r[1].correlation_id, 58);
	CHECK_EQ_INT(r[1].start_ns, 9000);
	CHECK_EQ_INT(r[2].kind, GPU_REC_ALLOC);
	CHECK_EQ_INT(r[2].flags, GPU_REC_F_ASYNC);
	CHECK_EQ_INT(r[2].stream_id, 7);
	CHECK_EQ_INT(c.first_ns, 3000);
	CHECK_EQ_INT(c.last_ns, 9500);

	/* An operation type CUPTI does not define, and no timestamp. */
	reset();
	a.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_INVALID;
	f.timestamp = 0;
	tbuf_add(&buf, &a, sizeof(a));
	tbuf_add(&buf, &f, sizeof(f));
	memset(&c, 0, sizeof(c));
	CHECK_EQ_INT(walk(&buf, &sink, &c), 2);
	CHECK_EQ_INT(sink.n, 0);
	CHECK_EQ_INT(sink.calls, 0);
	CHECK_EQ_INT(c.invalid, 2);
	CHECK_EQ_INT(c.records, 0);
}

/* All kernels of one cudaGraphLaunch carry that launch's correlation id. */
static void test_graph_kernels(void)
{
	static const char *names[] = { "_Z4stepPf", "_Z6reducePf", "_Z4stepPf" };
	struct gpurec_counts c = { 0 };
	unsigned int i;

	reset();
	for (i = 0; i < 3; i++) {
		CUpti_ActivityKernel10 k =
			kernel(700, 10000 + i * 1000, 10500 + i * 1000, names[i]);

		k.graphId = 4;
		k.graphNodeId = 0x400000000ull + i;
		tbuf_add(&buf, &k, sizeof(k));
	}
	CHECK_EQ_INT(walk(&buf, &sink, &c), 3);
	CHECK_EQ_INT(sink.n, 3);
	for (i = 0; i < sink.n; i++) {
		CHECK_EQ_INT(sink.recs[i].correlation_id, 700);
		CHECK_EQ_INT(sink.recs[i].flags, GPU_REC_F_GRAPH);
		CHECK_EQ_INT(sink.recs[i].graph_id, 4);
		CHECK_EQ_INT(sink.recs[i].graph_node_id, 0x400000000ull + i);
		CHECK(sink.recs[i].name == (uint64_t)(uintptr_t)names[i]);
	}
	/* One kernel name, one pointer: the name doubles as an id. */
	CHECK(sink.recs[0].name == sink.recs[2].name);
}

/* A forced flush hands out work still running (end = 0); impossible
 * intervals have been seen after very long runs.  Both are dropped and
 * counted; the records around them are not disturbed. */
static void test_incomplete_and_invalid(void)
{
	CUpti_ActivityKernel10 running = kernel(1, 100, 0, "_Z4spinv");
	CUpti_ActivityKernel10 ok = kernel(2, 200, 300, "_Z2okv");
	CUpti_ActivityMemcpy6 copying = memcpy_rec(3, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 64, 400, 0);
	CUpti_ActivityMemset4 setting = memset_rec(4, 64, 500, 0);
	CUpti_ActivityKernel10 backwards = kernel(5, 900, 800, "_Z2bkv");
	CUpti_ActivityKernel10 no_start = kernel(6, 0, 800, "_Z2nsv");
	CUpti_ActivityMemset4 ok2 = memset_rec(7, 32, 1000, 1001);
	struct gpurec_counts c = { 0 };
	struct scalene_bpf_gpu_rec r;

	reset();
	tbuf_add(&buf, &running, sizeof(running));
	tbuf_add(&buf, &ok, sizeof(ok));
	tbuf_add(&buf, &copying, sizeof(copying));
	tbuf_add(&buf, &setting, sizeof(setting));
	tbuf_add(&buf, &backwards, sizeof(backwards));
	tbuf_add(&buf, &no_start, sizeof(no_start));
	tbuf_add(&buf, &ok2, sizeof(ok2));
	CHECK_EQ_INT(walk(&buf, &sink, &c), 7);
	CHECK_EQ_INT(sink.n, 2);
	CHECK_EQ_INT(sink.recs[0].correlation_id, 2);
	CHECK_EQ_INT(sink.recs[1].correlation_id, 7);
	CHECK_EQ_INT(c.records, 2);
	CHECK_EQ_INT(c.incomplete, 3);
	CHECK_EQ_INT(c.invalid, 2);
	/* The dropped ones do not move the run's time span. */
	CHECK_EQ_INT(c.first_ns, 200);
	CHECK_EQ_INT(c.last_ns, 1001);

	memset(&c, 0, sizeof(c));
	CHECK_EQ_INT(gpurec_decode((CUpti_Activity *)&running, &r, &c), -ENODATA);
	CHECK_EQ_INT(gpurec_decode((CUpti_Activity *)&backwards, &r, &c), -ERANGE);
	CHECK_EQ_INT(gpurec_decode((CUpti_Activity *)&ok, &r, &c), 1);
}

/*
 * Completion order is not launch order: kernels on different streams end in
 * any order, and CUPTI may complete a later buffer first.  Records come out
 * in buffer order, one for one, and the span of the run is the earliest
 * start and latest end whatever the order of the walks.
 */
static void test_out_of_order(void)
{
	static struct tbuf later;
	CUpti_ActivityKernel10 a = kernel(100, 1000, 9000, "_Z4longv");	 /* stream 7 */
	CUpti_ActivityKernel10 b = kernel(101, 2000, 2500, "_Z5shortv"); /* ends first */
	CUpti_ActivityKernel10 d = kernel(103, 9500, 9600, "_Z4nextv");
	CUpti_ActivityMemcpy6 m = memcpy_rec(102, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, 128, 9100, 9200);
	struct gpurec_counts c1 = { 0 }, c2 = { 0 }, total = { 0 };
	struct sink s2;

	reset();
	memset(&later, 0, sizeof(later));
	memset(&s2, 0, sizeof(s2));
	b.streamId = 8;
	/* Buffer 1 holds the records completed first (b, then a); buffer 2,
	 * completed and walked before it, holds later work. */
	tbuf_add(&buf, &b, sizeof(b));
	tbuf_add(&buf, &a, sizeof(a));
	tbuf_add(&later, &d, sizeof(d));
	tbuf_add(&later, &m, sizeof(m));
	CHECK_EQ_INT(gpurec_walk(later.data, later.len, cupti_walk_next, sink_emit, &s2, &c2), 2);
	CHECK_EQ_INT(walk(&buf, &sink, &c1), 2);
	CHECK_EQ_INT(s2.n, 2);
	CHECK_EQ_INT(s2.recs[0].correlation_id, 103);
	CHECK_EQ_INT(s2.recs[1].correlation_id, 102);
	CHECK_EQ_INT(sink.n, 2);
	CHECK_EQ_INT(sink.recs[0].correlation_id, 101);
	CHECK_EQ_INT(sink.recs[0].stream_id, 8);
	CHECK_EQ_INT(sink.recs[1].correlation_id, 100);
	CHECK_EQ_INT(sink.recs[1].start_ns, 1000);
	CHECK_EQ_INT(sink.recs[1].end_ns, 9000);
	CHECK_EQ_INT(c2.first_ns, 9100);
	CHECK_EQ_INT(c2.last_ns, 9600);
	CHECK_EQ_INT(c1.first_ns, 1000);
	CHECK_EQ_INT(c1.last_ns, 9000);
	gpurec_counts_add(&total, &c2);
	gpurec_counts_add(&total, &c1);
	CHECK_EQ_INT(total.records, 4);
	CHECK_EQ_INT(total.batches, 2);
	CHECK_EQ_INT(total.first_ns, 1000);
	CHECK_EQ_INT(total.last_ns, 9600);
}

/* A buffer larger than a batch goes out in full batches and a rest. */
static void test_batches(void)
{
	struct gpurec_counts c = { 0 };
	unsigned int i, n = 2 * SCALENE_BPF_GPU_BATCH + 22;

	reset();
	for (i = 0; i < n; i++) {
		CUpti_ActivityKernel10 k = kernel(5000 + i, 100 + i * 10, 105 + i * 10, "_Z1kv");

		tbuf_add(&buf, &k, sizeof(k));
	}
	CHECK_EQ_INT(walk(&buf, &sink, &c), n);
	CHECK_EQ_INT(sink.n, n);
	CHECK_EQ_INT(sink.calls, 3);
	CHECK_EQ_INT(sink.sizes[0], SCALENE_BPF_GPU_BATCH);
	CHECK_EQ_INT(sink.sizes[1], SCALENE_BPF_GPU_BATCH);
	CHECK_EQ_INT(sink.sizes[2], 22);
	CHECK_EQ_INT(c.batches, 3);
	for (i = 0; i < n; i++)
		if (sink.recs[i].correlation_id != 5000 + i) {
			CHECK_EQ_INT(sink.recs[i].correlation_id, 5000 + i);
			break;
		}

	/* Exactly one batch: no empty call after it. */
	reset();
	for (i = 0; i < SCALENE_BPF_GPU_BATCH; i++) {
		CUpti_ActivityKernel10 k = kernel(i + 1, 100, 200, "_Z1kv");

		tbuf_add(&buf, &k, sizeof(k));
	}
	memset(&c, 0, sizeof(c));
	CHECK_EQ_INT(walk(&buf, &sink, &c), SCALENE_BPF_GPU_BATCH);
	CHECK_EQ_INT(sink.calls, 1);

	/* An empty buffer (a flush with nothing new) calls nothing. */
	reset();
	memset(&c, 0, sizeof(c));
	CHECK_EQ_INT(walk(&buf, &sink, &c), 0);
	CHECK_EQ_INT(sink.calls, 0);
	CHECK_EQ_INT(gpurec_walk(NULL, 0, cupti_walk_next, sink_emit, &sink, &c), 0);
}

/* Kinds we do not decode are skipped and counted; a record the walker
 * cannot size ends the walk with an error, keeping what came before. */
static void test_other_kinds_and_bad_buffer(void)
{
	CUpti_ActivityAPI api;
	CUpti_ActivityKernel10 k1 = kernel(1, 10, 20, "_Z1av"), k2 = kernel(2, 30, 40, "_Z1bv");
	CUpti_Activity unknown = { .kind = CUPTI_ACTIVITY_KIND_PC_SAMPLING };
	struct gpurec_counts c = { 0 };

	reset();
	memset(&api, 0, sizeof(api));
	api.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
	api.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
	api.correlationId = 1;
	api.start = 5;
	api.end = 9;
	tbuf_add(&buf, &k1, sizeof(k1));
	tbuf_add(&buf, &api, sizeof(api));
	tbuf_add(&buf, &k2, sizeof(k2));
	CHECK_EQ_INT(walk(&buf, &sink, &c), 3);
	CHECK_EQ_INT(sink.n, 2);
	CHECK_EQ_INT(sink.recs[1].correlation_id, 2);
	CHECK_EQ_INT(c.other_kinds, 1);
	CHECK_EQ_INT(c.records, 2);

	reset();
	tbuf_add(&buf, &k1, sizeof(k1));
	tbuf_add(&buf, &unknown, sizeof(unknown));
	tbuf_add(&buf, &k2, sizeof(k2));
	memset(&c, 0, sizeof(c));
	CHECK_EQ_INT(walk(&buf, &sink, &c), -EPROTO);
	CHECK_EQ_INT(sink.n, 1);
	CHECK_EQ_INT(sink.recs[0].correlation_id, 1);
}

/* The kinds enabled: CONCURRENT_KERNEL, never the serialising KERNEL. */
static void test_kinds(void)
{
	unsigned int i, kernel = 0, serial = 0, memory2 = 0, bits = 0;

	for (i = 0; i < gpurec_nr_kinds; i++) {
		kernel += gpurec_kinds[i].kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
		serial += gpurec_kinds[i].kind == CUPTI_ACTIVITY_KIND_KERNEL;
		memory2 += gpurec_kinds[i].kind == CUPTI_ACTIVITY_KIND_MEMORY2;
		CHECK(!(bits & gpurec_kinds[i].bit)); /* one bit each */
		bits |= gpurec_kinds[i].bit;
	}
	CHECK_EQ_INT(kernel, 1);
	CHECK_EQ_INT(serial, 0);
	CHECK_EQ_INT(memory2, 1);
	CHECK_EQ_INT(bits, (1u << gpurec_nr_kinds) - 1);
}

static void test_api_table(void)
{
	const int rt = CUPTI_CB_DOMAIN_RUNTIME_API, drv = CUPTI_CB_DOMAIN_DRIVER_API;
	unsigned int i, j, launches = 0;

	/* CUDA 13's <<<>>> goes through __cudaLaunchKernel, ids 505 and 506. */
	CHECK_EQ_INT(gpu_api_class(rt, 505), GPU_API_LAUNCH);
	CHECK_EQ_INT(gpu_api_class(rt, 506), GPU_API_LAUNCH);
	CHECK_EQ_INT(gpu_api_class(rt, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000),
		     GPU_API_LAUNCH);
	CHECK_EQ_INT(gpu_api_class(rt, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060),
		     GPU_API_LAUNCH);
	CHECK_EQ_INT(gpu_api_class(drv, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel), GPU_API_LAUNCH);
	CHECK_EQ_INT(gpu_api_class(drv, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx), GPU_API_LAUNCH);
	CHECK_EQ_INT(gpu_api_class(drv, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel),
		     GPU_API_LAUNCH);
	CHECK_EQ_INT(gpu_api_class(rt, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000),
		     GPU_API_GRAPH_LAUNCH);
	CHECK_EQ_INT(gpu_api_class(drv, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch),
		     GPU_API_GRAPH_LAUNCH);
	CHECK_EQ_INT(gpu_api_class(rt, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020),
		     GPU_API_MEMCPY);
	CHECK_EQ_INT(gpu_api_class(drv, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2),
		     GPU_API_MEMCPY);
	CHECK_EQ_INT(gpu_api_class(rt, CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020),
		     GPU_API_MEMSET);
	CHECK_EQ_INT(gpu_api_class(rt, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020), GPU_API_ALLOC);
	CHECK_EQ_INT(gpu_api_class(drv, CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2), GPU_API_FREE);
	/* Calls made on every step by frameworks are not traced. */
	CHECK_EQ_INT(gpu_api_class(rt, CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020), 0);
	CHECK_EQ_INT(gpu_api_class(rt, CUPTI_RUNTIME_TRACE_CBID_cudaStreamIsCapturing_v10000), 0);
	/* Ids are per domain: the driver's 505 is not a launch. */
	CHECK(gpu_api_class(drv, 505) != GPU_API_LAUNCH);

	for (i = 0; i < gpu_api_count; i++) {
		const struct gpu_api *a = &gpu_api_table[i];

		launches += a->class == GPU_API_LAUNCH;
		CHECK(a->domain == rt || a->domain == drv);
		CHECK(a->class >= GPU_API_LAUNCH && a->class <= GPU_API_FREE);
		if (a->domain == rt)
			CHECK(a->cbid > 0 && a->cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE);
		else
			CHECK(a->cbid > 0 && a->cbid < CUPTI_DRIVER_TRACE_CBID_SIZE);
		for (j = i + 1; j < gpu_api_count; j++)
			if (gpu_api_table[j].domain == a->domain &&
			    gpu_api_table[j].cbid == a->cbid)
				CHECK_EQ_STR(gpu_api_table[j].name,
					     "(a duplicate of another entry)");
	}
	CHECK(launches >= 21);
}

/*
 * The fields gpurec reads sit where CUPTI 12's structs (Kernel9, Memcpy5,
 * Memset3, Memory3, in cupti_activity_deprecated.h) have them too: a record
 * of either version decodes the same.  The fixed offsets are the ones a BPF
 * program or a reader of raw buffers may rely on.
 */
#define SAME_OFFSET(a, b, f) CHECK_EQ_INT(offsetof(a, f), offsetof(b, f))

static void test_layout(void)
{
	SAME_OFFSET(CUpti_ActivityKernel10, CUpti_ActivityKernel9, start);
	SAME_OFFSET(CUpti_ActivityKernel10, CUpti_ActivityKernel9, end);
	SAME_OFFSET(CUpti_ActivityKernel10, CUpti_ActivityKernel9, deviceId);
	SAME_OFFSET(CUpti_ActivityKernel10, CUpti_ActivityKernel9, contextId);
	SAME_OFFSET(CUpti_ActivityKernel10, CUpti_ActivityKernel9, streamId);
	SAME_OFFSET(CUpti_ActivityKernel10, CUpti_ActivityKernel9, correlationId);
	SAME_OFFSET(CUpti_ActivityKernel10, CUpti_ActivityKernel9, name);
	SAME_OFFSET(CUpti_ActivityKernel10, CUpti_ActivityKernel9, graphId);
	SAME_OFFSET(CUpti_ActivityKernel10, CUpti_ActivityKernel9, graphNodeId);
	SAME_OFFSET(CUpti_ActivityMemcpy6, CUpti_ActivityMemcpy5, copyKind);
	SAME_OFFSET(CUpti_ActivityMemcpy6, CUpti_ActivityMemcpy5, bytes);
	SAME_OFFSET(CUpti_ActivityMemcpy6, CUpti_ActivityMemcpy5, start);
	SAME_OFFSET(CUpti_ActivityMemcpy6, CUpti_ActivityMemcpy5, end);
	SAME_OFFSET(CUpti_ActivityMemcpy6, CUpti_ActivityMemcpy5, correlationId);
	SAME_OFFSET(CUpti_ActivityMemcpy6, CUpti_ActivityMemcpy5, graphId);
	SAME_OFFSET(CUpti_ActivityMemset4, CUpti_ActivityMemset3, bytes);
	SAME_OFFSET(CUpti_ActivityMemset4, CUpti_ActivityMemset3, start);
	SAME_OFFSET(CUpti_ActivityMemset4, CUpti_ActivityMemset3, end);
	SAME_OFFSET(CUpti_ActivityMemset4, CUpti_ActivityMemset3, correlationId);
	SAME_OFFSET(CUpti_ActivityMemory4, CUpti_ActivityMemory3, memoryOperationType);
	SAME_OFFSET(CUpti_ActivityMemory4, CUpti_ActivityMemory3, correlationId);
	SAME_OFFSET(CUpti_ActivityMemory4, CUpti_ActivityMemory3, address);
	SAME_OFFSET(CUpti_ActivityMemory4, CUpti_ActivityMemory3, bytes);
	SAME_OFFSET(CUpti_ActivityMemory4, CUpti_ActivityMemory3, timestamp);
	SAME_OFFSET(CUpti_ActivityMemory4, CUpti_ActivityMemory3, isAsync);

	CHECK_EQ_INT(offsetof(CUpti_ActivityKernel10, start), 16);
	CHECK_EQ_INT(offsetof(CUpti_ActivityKernel10, end), 24);
	CHECK_EQ_INT(offsetof(CUpti_ActivityKernel10, deviceId), 40);
	CHECK_EQ_INT(offsetof(CUpti_ActivityKernel10, correlationId), 92);
	CHECK_EQ_INT(offsetof(CUpti_ActivityKernel10, name), 104);
	CHECK_EQ_INT(offsetof(CUpti_ActivityKernel10, graphId), 156);
	CHECK_EQ_INT(offsetof(CUpti_ActivityMemory4, correlationId), 12);
	CHECK_EQ_INT(offsetof(CUpti_ActivityMemory4, address), 16);
	CHECK_EQ_INT(offsetof(CUpti_ActivityMemory4, timestamp), 32);
}

int main(void)
{
	RUN_TEST(test_kernel);
	RUN_TEST(test_memcpy);
	RUN_TEST(test_peer_copy);
	RUN_TEST(test_memset);
	RUN_TEST(test_memory_alloc_free);
	RUN_TEST(test_graph_kernels);
	RUN_TEST(test_incomplete_and_invalid);
	RUN_TEST(test_out_of_order);
	RUN_TEST(test_batches);
	RUN_TEST(test_other_kinds_and_bad_buffer);
	RUN_TEST(test_kinds);
	RUN_TEST(test_api_table);
	RUN_TEST(test_layout);
	return test_summary("gpurec");
}

#endif /* GPU_SKIP_REASON */

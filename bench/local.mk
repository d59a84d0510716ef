# bench/ - `make bench` builds and runs the benchmarks (never part of make check).
EXTRA_PROGRAMS += bench/bench
bench_bench_SOURCES = bench/bench.c
bench_bench_LDADD = lib/libreduce.a $(PTHREAD_LIBS) -lm
CLEANFILES += bench/bench bench/sink bench/openloop
# The upload baseline of bench/daemon.sh: a server that only reads bodies.
EXTRA_PROGRAMS += bench/sink
bench_sink_SOURCES = bench/sink.c
bench_sink_CFLAGS = $(AM_CFLAGS) $(MHD_CFLAGS)
bench_sink_LDADD = api/libapi.a $(MHD_LIBS)
# The open-loop load generator of bench/daemon.sh (plain sockets and epoll).
EXTRA_PROGRAMS += bench/openloop
bench_openloop_SOURCES = bench/openloop.c
bench_openloop_LDADD = $(PTHREAD_LIBS) -lm

# BENCH_FLAGS: e.g. --json, --runs 9, --op ReduceSum, --case C (daemon.sh reads
# only --json).  bench/ops.sh runs bench/bench and, on the same inputs,
# ONNX Runtime (onnxruntime-node, pinned, installed into bench/ort-node here
# on first use), and prints the side-by-side table.
bench: bench/bench bench/sink bench/openloop daemon/reduced
	BENCH_FLAGS='$(BENCH_FLAGS)' top_builddir=$(abs_top_builddir) $(srcdir)/bench/ops.sh
	BENCH_FLAGS='$(BENCH_FLAGS)' top_builddir=$(abs_top_builddir) $(srcdir)/bench/daemon.sh
.PHONY: bench
EXTRA_DIST += bench/README.md bench/daemon.sh bench/ops.sh bench/ort.mjs bench/table.mjs
# The pinned onnxruntime-node that bench/ops.sh installs (~300 MB).
distclean-local: bench-distclean
bench-distclean:
	rm -rf bench/ort-node
.PHONY: bench-distclean

# daemon/grpc.mk - the gRPC front end (daemon/grpc.c) in the daemon, on
# Debian's gRPC C core; its messages are api/liboip.a's (api/oip.mk).
if HAVE_GRPC
daemon_reduced_SOURCES += daemon/grpc.h daemon/grpc.c
daemon_reduced_CFLAGS += $(GRPC_CFLAGS) $(PROTOBUF_C_CFLAGS)
daemon_reduced_LDADD += api/liboip.a api/libapi.a lib/libreduce.a $(GRPC_LIBS) $(PROTOBUF_C_LIBS)
daemon/reduced-grpc.$(OBJEXT): api/proto/inference.pb-c.h
endif

# `make bench` also measures gRPC next to HTTP for the same small request.
EXTRA_DIST += bench/grpc.sh
if HAVE_GRPC
BENCH_GRPC = bench-grpc
endif
bench: $(BENCH_GRPC)
bench-grpc: daemon/reduced
	top_builddir=$(abs_top_builddir) $(srcdir)/bench/grpc.sh
.PHONY: bench-grpc

# tests/load/ - sanitizer builds, the load/fault script, and check-all.
#   make check-asan    whole `make check` on an ASan+UBSan build ($(SAN_ASAN))
#   make check-tsan    `make check` on a TSan build ($(SAN_TSAN)): the tests
#                      that run threads (TSAN_TESTS)
#   make check-load    load, overload, faults, shutdown under load (root)
#   make check-all     check + check-style + check-asan + check-tsan + fuzz + check-load
#                      + check-deploy: what CI runs
# LOAD_SECONDS (default 60) is the sustained-load phase of check-load.
SAN_ASAN = $(abs_top_builddir)/san-asan
SAN_TSAN = $(abs_top_builddir)/san-tsan
LOAD_SECONDS = 60

EXTRA_DIST += tests/load/sancheck.sh tests/load/load.sh tests/load/mix.lua \
	tests/load/queue.sh tests/load/bigmix.lua \
	tests/load/README.md

check-asan:
	top_srcdir='$(abs_top_srcdir)' top_builddir='$(abs_top_builddir)' SAN_WORK='$(SAN_ASAN)' \
	  bash '$(abs_top_srcdir)/tests/load/sancheck.sh' asan

# ThreadSanitizer can only report on code that runs on several threads: the
# daemon (every integration script and the conformance suite) and the unit
# tests that start threads of their own.  The others run single-threaded
# and are left to make check-asan, which runs everything.
TSAN_TESTS = $(INTEGRATION_TESTS) tests/conformance/run.sh $(THREADED_UNIT_TESTS)
if SIMD_KERNELS
TSAN_TESTS += $(THREADED_KERNEL_UNIT_TESTS:=-portable) $(THREADED_KERNEL_UNIT_TESTS:=-avx2)
endif

# A unit test that starts threads but is missing from THREADED_UNIT_TESTS
# would silently escape TSan: stop instead.
check-tsan:
	@for f in `grep -l -E 'pthread_create|uv_thread_create|uv_queue_work' '$(abs_top_srcdir)'/tests/unit/*.c`; do \
	  t=tests/unit/`basename "$$f" .c`; \
	  case ' $(THREADED_UNIT_TESTS) ' in *" $$t "*) ;; \
	  *) echo "check-tsan: $$t starts threads but is not in THREADED_UNIT_TESTS"; exit 1;; esac; \
	done
	top_srcdir='$(abs_top_srcdir)' top_builddir='$(abs_top_builddir)' SAN_WORK='$(SAN_TSAN)' \
	SAN_TESTS="$${SAN_TESTS-$(TSAN_TESTS)}" \
	  bash '$(abs_top_srcdir)/tests/load/sancheck.sh' tsan

check-load: $(bin_PROGRAMS) $(check_PROGRAMS)
	top_srcdir='$(abs_top_srcdir)' top_builddir='$(abs_top_builddir)' \
	LOAD_WORK='$(abs_top_builddir)/load-work' LOAD_SECONDS='$(LOAD_SECONDS)' \
	  bash '$(abs_top_srcdir)/tests/load/load.sh'

# One after the other, each part on every core (make -jN, N = nproc: the
# test harness runs N tests side by side); stops at the first failure.
# Each part prints its own summary and duration.
check-all:
	@t0=$$(date +%s); j=$$(nproc 2>/dev/null || echo 2); \
	for t in check check-style check-asan check-tsan fuzz check-load check-deploy; do \
	  s=$$(date +%s); echo "=== make -j$$j $$t"; \
	  $(MAKE) $(AM_MAKEFLAGS) -j$$j $$t FUZZ_SECONDS=60 || { echo "=== make $$t FAILED"; exit 1; }; \
	  echo "=== make $$t: ok, $$(( $$(date +%s) - s )) s"; \
	done; \
	echo "=== check-all: ok, $$(( $$(date +%s) - t0 )) s"

.PHONY: check-asan check-tsan check-load check-all

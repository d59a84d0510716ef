# tests/load/ - sanitizer builds, the load/fault script, and check-all.
#   make check-asan    whole `make check` on an ASan+UBSan build ($(SAN_ASAN))
#   make check-tsan    whole `make check` on a TSan build ($(SAN_TSAN))
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

check-tsan:
	top_srcdir='$(abs_top_srcdir)' top_builddir='$(abs_top_builddir)' SAN_WORK='$(SAN_TSAN)' \
	  bash '$(abs_top_srcdir)/tests/load/sancheck.sh' tsan

check-load: $(bin_PROGRAMS) $(check_PROGRAMS)
	top_srcdir='$(abs_top_srcdir)' top_builddir='$(abs_top_builddir)' \
	LOAD_WORK='$(abs_top_builddir)/load-work' LOAD_SECONDS='$(LOAD_SECONDS)' \
	  bash '$(abs_top_srcdir)/tests/load/load.sh'

# One after the other (each part uses both cores); stops at the first
# failure.  Each part prints its own summary and duration.
check-all:
	@t0=$$(date +%s); \
	for t in check check-style check-asan check-tsan fuzz check-load check-deploy; do \
	  s=$$(date +%s); echo "=== make $$t"; \
	  $(MAKE) $(AM_MAKEFLAGS) $$t FUZZ_SECONDS=60 || { echo "=== make $$t FAILED"; exit 1; }; \
	  echo "=== make $$t: ok, $$(( $$(date +%s) - s )) s"; \
	done; \
	echo "=== check-all: ok, $$(( $$(date +%s) - t0 )) s"

.PHONY: check-asan check-tsan check-load check-all

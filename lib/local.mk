# lib/ - libreduce: the reduction library (pure computation).
noinst_LIBRARIES += lib/libreduce.a
lib_libreduce_a_SOURCES = \
	lib/reduce.h lib/reduce.c lib/optable.c lib/ops.h lib/ops.c \
	lib/finalize.c \
	lib/f16.h lib/f16.c \
	lib/expk.h lib/kernels.h lib/kernels.c lib/kernels_impl.h lib/kernels_avx2.c \
	lib/kernels_avx512.c lib/kernels_rows512.c lib/kernels_rows_int.h \
	lib/kernels_rows_int.c \
	lib/kernels_ops.h lib/kernels_ops_avx2.c lib/kernels_keyrows.c
# Kahan steps must round the product before subtracting, on every compiler
# and -std mode: never contract a*b-c into an FMA.
lib_libreduce_a_CFLAGS = $(AM_CFLAGS) -ffp-contract=off
# lib/ sees its own headers only (Makefile.am, layering).
lib_libreduce_a_CPPFLAGS = $(LIB_CPPFLAGS)

UNIT_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
UNIT_LIBS = lib/libreduce.a $(CMOCKA_LIBS) -lm

# The conversion tests compile the module itself, so they build on their own.
check_PROGRAMS += tests/unit/test_f16 tests/unit/test_plan tests/unit/test_random \
	tests/unit/test_kernels tests/unit/test_golden tests/unit/test_opkernels \
	tests/unit/test_exec_out tests/unit/test_rows_int
LIB_UNIT_TESTS = tests/unit/test_f16 tests/unit/test_plan tests/unit/test_random \
	tests/unit/test_kernels tests/unit/test_golden tests/unit/test_opkernels \
	tests/unit/test_exec_out tests/unit/test_rows_int
UNIT_TESTS += $(LIB_UNIT_TESTS)
# run again on every kernel path (tests/local.mk)
KERNEL_UNIT_TESTS += $(LIB_UNIT_TESTS)
# the parts of one request run on several threads, on every kernel path
THREADED_UNIT_TESTS += tests/unit/test_random
THREADED_KERNEL_UNIT_TESTS = tests/unit/test_random
tests_unit_test_f16_SOURCES = tests/unit/test_f16.c lib/f16.c
tests_unit_test_f16_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_f16_LDADD = $(CMOCKA_LIBS) -lm
tests_unit_test_plan_SOURCES = tests/unit/test_plan.c
tests_unit_test_plan_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_plan_LDADD = $(UNIT_LIBS)
tests_unit_test_random_SOURCES = tests/unit/test_random.c
tests_unit_test_random_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_random_LDADD = $(UNIT_LIBS) $(PTHREAD_LIBS) -lquadmath
tests_unit_test_kernels_SOURCES = tests/unit/test_kernels.c
tests_unit_test_kernels_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_kernels_LDADD = $(UNIT_LIBS)
tests_unit_test_golden_SOURCES = tests/unit/test_golden.c
tests_unit_test_golden_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_golden_LDADD = $(UNIT_LIBS)
tests_unit_test_opkernels_SOURCES = tests/unit/test_opkernels.c
tests_unit_test_opkernels_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_opkernels_LDADD = $(UNIT_LIBS)
tests_unit_test_exec_out_SOURCES = tests/unit/test_exec_out.c
tests_unit_test_exec_out_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_exec_out_LDADD = $(UNIT_LIBS)
tests_unit_test_rows_int_SOURCES = tests/unit/test_rows_int.c
tests_unit_test_rows_int_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_rows_int_LDADD = $(UNIT_LIBS)

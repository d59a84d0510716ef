/* reduce.h - libreduce: the ONNX Reduce operators and ArgMax / ArgMin.
 *
 * Pure computation: no I/O, no global mutable state, no knowledge of HTTP or
 * JSON.  Twelve operators on one table (enum rd_op, rd_op_info()): ReduceL2,
 * ReduceSumSquare, ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd,
 * ReduceL1, ReduceLogSum, ReduceLogSumExp, ArgMax, ArgMin, every ONNX
 * version of each and exactly the element types its schema allows
 * (rd_dtype_in_version()).
 *
 * Use:
 *   struct rd_params p;  rd_params_init(&p);  ...fill p...
 *   struct rd_plan plan; rd_plan_init(&plan, &p, &err)     validate, no I/O
 *   rd_execute(&plan, in, out, &err)                       whole buffer, or
 *   rd_exec_* (parts on several threads), or rd_stream_* (bytes as they come).
 *
 * Thread safety: a plan is immutable once rd_plan_init() returns and may be
 * shared by any number of threads.  An rd_exec may have distinct parts run on
 * distinct threads at once; everything else about one rd_exec or rd_stream
 * must be serialised by the caller.  Distinct objects are independent.
 *
 * Determinism: the order in which terms are combined is a function of the
 * plan alone, never of the number of threads or of how a stream is chunked,
 * so rd_execute(), rd_exec_* and rd_stream_* give bit-identical results.
 *
 * Numerics: float16, bfloat16 and float32 accumulate in double and round
 * once (to nearest even) to the output type; float64 sums are compensated
 * (double-double), ReduceL2 of float64 cannot overflow or underflow in an
 * intermediate, and products track the binary exponent apart (nothing
 * overflows or underflows unless the result does).  ReduceLogSumExp is
 * max-shifted (float32/float16/bfloat16: by a shift at most 64 below the
 * running maximum, moved only past it, so no term exceeds e^64).
 * Integers are exact (wide accumulators, exact integer square
 * root, exact products); a result that does not fit the output type is
 * handled by the overflow policy of the plan, applied to the final value
 * only.  Integer ReduceMean truncates toward zero; integer ReduceLogSum and
 * ReduceLogSumExp are the exact real value truncated toward zero.  A result
 * no integer can represent (the mean of an empty set, the log of a sum
 * <= 0, ArgMax over an empty axis) is RD_E_UNDEFINED.  Max/Min and
 * ArgMax/ArgMin are exact: NaN wins (ArgMax/ArgMin: the first NaN, the last
 * with select_last_index); Max prefers +0 to -0 and Min -0 to +0; ArgMax and
 * ArgMin treat -0 and +0 as a tie.  Every NaN output is the type's default
 * quiet NaN.
 *
 * Errors: functions return 0 (RD_OK) or a negative RD_E_* code and, when
 * `err` is not NULL, fill it with the code and a message that names the
 * offending field and value.
 */
#ifndef REDUCE_H
#define REDUCE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Largest accepted rank (numpy's historical limit). */
#define RD_MAX_RANK 32

/* Marks an optional integer attribute that the caller did not give. */
#define RD_UNSET INT64_MIN

/* ------------------------------------------------------------------ */
/* Errors                                                             */
/* ------------------------------------------------------------------ */

/* The table is aligned by hand. */
/* clang-format off */
/* X(symbol, value, wire name, generic description) */
#define RD_ERROR_MAP(X)                                                        \
  X(RD_E_INVALID,         -1, "INVALID_ARGUMENT",      "invalid argument")     \
  X(RD_E_OP,              -2, "UNKNOWN_OP",            "unknown operator")     \
  X(RD_E_OPSET,           -3, "INVALID_OPSET",         "invalid opset")        \
  X(RD_E_DTYPE,           -4, "UNSUPPORTED_DTYPE",     "unsupported dtype")    \
  X(RD_E_DTYPE_VERSION,   -5, "DTYPE_NOT_IN_VERSION",                          \
    "dtype not allowed in this operator version")                              \
  X(RD_E_RANK,            -6, "RANK_TOO_LARGE",        "rank too large")       \
  X(RD_E_DIM,             -7, "INVALID_DIM",           "invalid dimension")    \
  X(RD_E_TOO_LARGE,       -8, "TENSOR_TOO_LARGE",      "tensor too large")     \
  X(RD_E_AXIS_RANGE,      -9, "AXIS_OUT_OF_RANGE",     "axis out of range")    \
  X(RD_E_AXIS_DUP,       -10, "DUPLICATE_AXIS",        "duplicate axis")       \
  X(RD_E_KEEPDIMS,       -11, "INVALID_KEEPDIMS",      "keepdims must be 0 or 1") \
  X(RD_E_NOOP,           -12, "INVALID_NOOP_WITH_EMPTY_AXES",                  \
    "noop_with_empty_axes must be 0 or 1")                                     \
  X(RD_E_NOOP_VERSION,   -13, "NOOP_NOT_IN_VERSION",                           \
    "noop_with_empty_axes needs the operator's axes-input version")            \
  X(RD_E_POLICY,         -14, "INVALID_OVERFLOW_POLICY", "invalid overflow policy") \
  X(RD_E_OVERFLOW,       -15, "INTEGER_OVERFLOW",                              \
    "integer result does not fit the output type")                             \
  X(RD_E_NOMEM,          -16, "OUT_OF_MEMORY",         "out of memory")        \
  X(RD_E_STREAM,         -17, "INPUT_LENGTH",                                  \
    "input byte count does not match the shape")                               \
  X(RD_E_UNDEFINED,      -18, "UNDEFINED_RESULT",                              \
    "the result has no value in the output type")                              \
  X(RD_E_SELECT_LAST,    -19, "INVALID_SELECT_LAST_INDEX",                     \
    "select_last_index must be 0 or 1")                                        \
  X(RD_E_SELECT_LAST_VERSION, -20, "SELECT_LAST_INDEX_NOT_IN_VERSION",         \
    "select_last_index needs operator version 12")                             \
  X(RD_E_ATTRIBUTE,      -21, "ATTRIBUTE_NOT_ALLOWED",                         \
    "attribute not taken by this operator")                                    \
  X(RD_E_ELEMENT,        -22, "INVALID_ELEMENT",       "invalid element value")

enum rd_errcode {
  RD_OK = 0,
#define RD__ENUM(sym, val, name, desc) sym = val,
  RD_ERROR_MAP(RD__ENUM)
#undef RD__ENUM
  RD_E__LAST = -23
};
/* clang-format on */

#define RD_ERRMSG_MAX 256

struct rd_error {
  int code;                /* RD_OK or an RD_E_* value */
  char msg[RD_ERRMSG_MAX]; /* human message naming field and value */
};

/* Generic description of a code ("axis out of range"); never NULL. */
const char *rd_strerror(int code);
/* Wire name of a code ("AXIS_OUT_OF_RANGE"); NULL for unknown codes. */
const char *rd_errname(int code);

/* ------------------------------------------------------------------ */
/* Element types                                                      */
/* ------------------------------------------------------------------ */

/* Values are ONNX TensorProto.DataType numbers. */
enum rd_dtype {
  RD_FLOAT32 = 1,
  RD_UINT8 = 2,
  RD_INT8 = 3,
  RD_UINT16 = 4,
  RD_INT16 = 5,
  RD_INT32 = 6,
  RD_INT64 = 7,
  RD_BOOL = 9, /* one byte, 0 or 1; any other byte: RD_E_ELEMENT */
  RD_FLOAT16 = 10,
  RD_FLOAT64 = 11,
  RD_UINT32 = 12,
  RD_UINT64 = 13,
  RD_BFLOAT16 = 16
};

/* Every supported dtype, in the order listings use (floats, then signed and
 * unsigned integers by width, then bool). */
#define RD_NDTYPES 13
extern const int rd_dtypes[RD_NDTYPES];

/* Canonical name ("float32", "bfloat16", "int8", "bool", ...); NULL if not a
 * supported type. */
const char *rd_dtype_name(int dtype);
/* Parses a name: the canonical names plus the ONNX aliases "float" and
 * "double".  Returns 0, or RD_E_DTYPE for anything else. */
int rd_dtype_parse(const char *name, enum rd_dtype *out);
/* Bytes per element; 0 if not a supported type. */
size_t rd_dtype_size(int dtype);

/* ------------------------------------------------------------------ */
/* Operators and versions: one table                                  */
/* ------------------------------------------------------------------ */

/* Values 1..RD_OP_COUNT; listings use this order. */
enum rd_op {
  RD_OP_L2 = 1,           /* ReduceL2 */
  RD_OP_SUM_SQUARE = 2,   /* ReduceSumSquare */
  RD_OP_SUM = 3,          /* ReduceSum */
  RD_OP_MEAN = 4,         /* ReduceMean */
  RD_OP_MAX = 5,          /* ReduceMax */
  RD_OP_MIN = 6,          /* ReduceMin */
  RD_OP_PROD = 7,         /* ReduceProd */
  RD_OP_L1 = 8,           /* ReduceL1 */
  RD_OP_LOG_SUM = 9,      /* ReduceLogSum */
  RD_OP_LOG_SUM_EXP = 10, /* ReduceLogSumExp */
  RD_OP_ARGMAX = 11,      /* ArgMax */
  RD_OP_ARGMIN = 12       /* ArgMin */
};
#define RD_OP_COUNT 12

/* "ReduceL2", "ArgMax", ...; NULL if unknown. */
const char *rd_op_name(int op);
/* Parses an operator name (exact, case-sensitive); 0 or RD_E_OP. */
int rd_op_parse(const char *name, enum rd_op *out);

#define RD_MAX_VERSIONS 6

/* What a caller may know of an operator (read-only, static storage). */
struct rd_op_info {
  int op;           /* enum rd_op */
  const char *name; /* "ReduceMax" */
  size_t nversions;
  int versions[RD_MAX_VERSIONS]; /* ascending: ReduceMax {1,11,12,13,18,20} */
  int axes_input_version;        /* first version taking axes as an input and
                                  * noop_with_empty_axes (ReduceSum 13, other
                                  * Reduce ops 18); 0 for ArgMax/ArgMin */
  int select_last_version;       /* ArgMax/ArgMin: 12; others 0 */
  int is_arg;                    /* 1: ArgMax/ArgMin (one `axis`, int64 out) */
};

/* The descriptor of `op`; NULL if unknown. */
const struct rd_op_info *rd_op_info(int op);

/* Maps an ONNX opset (>= 1) to the newest version of `op` <= it (ReduceSum:
 * 12 -> 11, 20 -> 13; ReduceMax: 12 -> 12, 20 -> 20).  Returns the version,
 * RD_E_OPSET for opset < 1, or RD_E_OP for an unknown op. */
int rd_op_version(int op, int64_t opset);
/* 1 if `dtype` is allowed at version `version` of `op` (the exact lists of
 * the ONNX schemas), else 0 (also for an unknown op or version). */
int rd_dtype_in_version(int op, int dtype, int version);
/* The output element type of `op` for input `dtype`: `dtype`, or RD_INT64
 * for ArgMax/ArgMin. */
int rd_op_out_dtype(int op, int dtype);

enum rd_overflow {
  RD_OVERFLOW_ERROR = 0,    /* fail with RD_E_OVERFLOW (default) */
  RD_OVERFLOW_SATURATE = 1, /* clamp to the type's range (ONNX Runtime) */
  RD_OVERFLOW_WRAP = 2      /* two's complement (literal ONNX function body) */
};
/* "error" / "saturate" / "wrap"; NULL if unknown. */
const char *rd_overflow_name(int policy);
/* 0, or RD_E_POLICY. */
int rd_overflow_parse(const char *name, enum rd_overflow *out);

/* ------------------------------------------------------------------ */
/* Sizes                                                              */
/* ------------------------------------------------------------------ */

/* Element count of a shape, checked: RD_E_RANK if rank > RD_MAX_RANK,
 * RD_E_DIM for a negative dim, RD_E_TOO_LARGE if the count times the element
 * size of `dtype` would not fit in int64 (dtype 0: count only). */
int rd_shape_count(size_t rank, const int64_t *shape, int dtype,
                   uint64_t *count, struct rd_error *err);

/* ------------------------------------------------------------------ */
/* Plan                                                               */
/* ------------------------------------------------------------------ */

struct rd_params {
  int op;                       /* enum rd_op */
  int64_t opset;                /* ONNX opset, >= 1; default 18 */
  int dtype;                    /* enum rd_dtype */
  size_t rank;                  /* <= RD_MAX_RANK; 0 is a scalar */
  const int64_t *shape;         /* rank dims, each >= 0; borrowed */
  const int64_t *axes;          /* naxes axes in [-rank, rank-1]; borrowed */
  size_t naxes;                 /* 0: axes omitted or empty */
  int64_t keepdims;             /* 0 or 1; default 1 */
  int64_t noop_with_empty_axes; /* 0, 1, or RD_UNSET (default); only from
                                  * the op's axes_input_version */
  int overflow;                 /* enum rd_overflow; integers only */
  int64_t axis;                 /* ArgMax/ArgMin only: in [-rank, rank-1];
                                  * RD_UNSET (default) means 0.  Other ops:
                                  * must be RD_UNSET (else RD_E_ATTRIBUTE) */
  int64_t select_last_index;    /* ArgMax/ArgMin from v12: 0, 1, or RD_UNSET
                                  * (default, 0); others: RD_UNSET */
};

/* Defaults: opset 18, keepdims 1, noop_with_empty_axes, axis and
 * select_last_index RD_UNSET, overflow error, no axes, rank 0; op and dtype
 * 0 (must be set).  ArgMax/ArgMin take no `axes` (naxes must be 0, else
 * RD_E_ATTRIBUTE) and no noop_with_empty_axes. */
void rd_params_init(struct rd_params *p);

/* The largest number of fixed parts a plan splits into (see rd_exec_*). */
#define RD_MAX_PARTS 64

/* A validated reduction.  Caller-owned (stack or embedded); holds no
 * pointers, so it may be copied.  Fields above `priv` are read-only results
 * for callers; `priv` is private to the library. */
struct rd_plan {
  int op;                /* enum rd_op */
  int version;           /* one of rd_op_info(op)->versions */
  int dtype;             /* input element type */
  int out_dtype;         /* output element type (rd_op_out_dtype) */
  int overflow;          /* enum rd_overflow */
  size_t elem_size;      /* bytes per input element */
  size_t out_elem_size;  /* bytes per output element */
  int64_t axis;          /* ArgMax/ArgMin: the axis, in [0, rank) */
  int select_last_index; /* ArgMax/ArgMin: 0 or 1 */
  size_t in_rank;
  int64_t in_shape[RD_MAX_RANK];
  size_t out_rank;
  int64_t out_shape[RD_MAX_RANK];
  uint64_t in_count, out_count; /* elements */
  uint64_t in_bytes, out_bytes;
  int noop;      /* 1: nothing reduced, elementwise only */
  size_t nparts; /* fixed parts, 1..RD_MAX_PARTS */
  struct {
    /* Canonical shape: size-1 dims dropped, adjacent dims with the same
     * reduce flag merged; alternating kept/reduced groups, outermost first. */
    size_t ngroups;
    uint64_t size[RD_MAX_RANK];
    unsigned char reduced[RD_MAX_RANK];
    uint64_t part_len; /* outer-group extent per part */
    int kernel;        /* internal kernel id */
  } priv;
};

/* Validates `p` and fills `plan`: resolves the version, checks dtype against
 * the version, axes (range, duplicates), keepdims, noop_with_empty_axes and
 * sizes, computes the output shape and chooses the kernel.  Allocates
 * nothing.  Returns 0 or the first error found. */
int rd_plan_init(struct rd_plan *plan, const struct rd_params *p,
                 struct rd_error *err);

/* ------------------------------------------------------------------ */
/* Execute: whole buffer                                              */
/* ------------------------------------------------------------------ */

/* Reduces `in` (plan->in_bytes bytes, host byte order, row-major) into `out`
 * (plan->out_bytes bytes).  Allocates O(out_count) scratch.  Returns 0,
 * RD_E_OVERFLOW (integer result does not fit, policy "error"; message names
 * the output index and the exact value), RD_E_UNDEFINED (e.g. integer
 * ReduceLogSum of a sum <= 0; message names op, output index and why),
 * RD_E_ELEMENT (a bool byte other than 0 or 1; message names the flat
 * element index) or RD_E_NOMEM.  Single-threaded. */
int rd_execute(const struct rd_plan *plan, const void *in, void *out,
               struct rd_error *err);

/* ------------------------------------------------------------------ */
/* Execute: in parts, on several threads                              */
/* ------------------------------------------------------------------ */

/* A plan's work is cut into plan->nparts parts (a function of the plan, not
 * of the thread count).  Create an execution, run every part exactly once in
 * any order on any threads (distinct parts may run concurrently), then
 * finish, which combines the parts in a fixed order and writes the output. */
struct rd_exec;

/* Allocates the execution's accumulators. 0 or RD_E_NOMEM. */
int rd_exec_create(const struct rd_plan *plan, struct rd_exec **out);
/* As rd_exec_create(), for an output buffer `out` (plan->out_bytes bytes,
 * not NULL unless out_bytes is 0) known from the start.  Where the plan's
 * outputs are finished one by one as the parts run (ReduceL2 and
 * ReduceSumSquare reducing exactly the innermost dims of the canonical
 * shape), the parts write them in place into `out`: no accumulator set is
 * allocated and rd_exec_finish() copies nothing.  Where the outermost dims
 * are kept (so no two parts add to one output), each part accumulates and
 * then writes its own outputs into `out` as it ends.  Other plans
 * accumulate as rd_exec_create() does and write `out` at finish.  Either
 * way the bits written are those of rd_exec_create() +
 * rd_exec_finish(out).  While the
 * execution exists, `out` belongs to it: the caller must not read or write
 * it before rd_exec_finish() returns, and rd_exec_finish() fails with
 * RD_E_INVALID (writing nothing) for any other buffer.  On an error of
 * rd_exec_finish() the bytes of `out` that the error's documented contract
 * does not name are unspecified (parts may have written any of them).
 * rd_exec_destroy() never touches `out`, so `out` may be freed before it.
 * Returns 0, RD_E_INVALID (plan or ex NULL, or out NULL with out_bytes > 0)
 * or RD_E_NOMEM. */
int rd_exec_create_out(const struct rd_plan *plan, void *out,
                       struct rd_exec **ex);
/* Runs part `part` (0 <= part < plan->nparts) over the whole input `in`.
 * Thread-safe for distinct parts of one execution. Returns 0 or RD_E_INVALID. */
int rd_exec_part(struct rd_exec *ex, size_t part, const void *in);
/* After every part ran: writes plan->out_bytes bytes to `out` (for an
 * execution from rd_exec_create_out(), `out` must be its buffer).  Returns
 * 0, RD_E_INVALID (a part has not run, out NULL, or not the buffer of
 * rd_exec_create_out()), or an error of rd_execute() (RD_E_OVERFLOW,
 * RD_E_UNDEFINED, RD_E_ELEMENT), the same one rd_execute() gives. */
int rd_exec_finish(struct rd_exec *ex, void *out, struct rd_error *err);
/* Frees; NULL is allowed. */
void rd_exec_destroy(struct rd_exec *ex);

/* ------------------------------------------------------------------ */
/* Execute: streaming                                                 */
/* ------------------------------------------------------------------ */

/* Feeds the input as bytes in row-major order, in chunks of any size
 * (including sizes that split an element).  Memory is O(out_count) plus a
 * small constant, whatever the input size. */
struct rd_stream;

/* 0 or RD_E_NOMEM. */
int rd_stream_create(const struct rd_plan *plan, struct rd_stream **out);
/* Consumes `len` bytes (host byte order). RD_E_STREAM if the total would
 * exceed plan->in_bytes (nothing is consumed then). */
int rd_stream_feed(struct rd_stream *s, const void *bytes, size_t len,
                   struct rd_error *err);
/* Bytes consumed so far. */
uint64_t rd_stream_consumed(const struct rd_stream *s);
/* After exactly plan->in_bytes bytes: writes the output (as rd_execute).
 * RD_E_STREAM if fewer bytes were fed. */
int rd_stream_finish(struct rd_stream *s, void *out, struct rd_error *err);
/* Frees; NULL is allowed. */
void rd_stream_destroy(struct rd_stream *s);

#ifdef __cplusplus
}
#endif
#endif /* REDUCE_H */

/* optable.c - libreduce: element types, operator names and versions.
 *
 * The public half of the operator table: names, ONNX versions, the axes
 * form of each version and the exact element type lists of the ONNX schemas
 * (onnx/defs/reduction: numeric_types_for_math_reduction{,_ir4} for the
 * Reduce ops, plus uint8/int8 for ReduceMax/ReduceMin from 12 and bool from
 * 20; all_numeric_types{,_ir4} for ArgMax/ArgMin).  How each operator
 * computes is the internal half, in ops.c.
 */
#include "reduce.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ops.h"

int rd__set_err(struct rd_error *err, int code, const char *fmt, ...)
{
  if (err) {
    va_list ap;
    err->code = code;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
  }
  return code;
}

/* ------------------------------------------------------------------ */
/* Element types                                                      */
/* ------------------------------------------------------------------ */

static const struct {
  int dtype;
  const char *name;
  size_t size;
} dtype_tab[RD_NDTYPES] = {
  { RD_FLOAT32, "float32", 4 }, { RD_FLOAT64, "float64", 8 },
  { RD_FLOAT16, "float16", 2 }, { RD_BFLOAT16, "bfloat16", 2 },
  { RD_INT8, "int8", 1 },       { RD_UINT8, "uint8", 1 },
  { RD_INT16, "int16", 2 },     { RD_UINT16, "uint16", 2 },
  { RD_INT32, "int32", 4 },     { RD_UINT32, "uint32", 4 },
  { RD_INT64, "int64", 8 },     { RD_UINT64, "uint64", 8 },
  { RD_BOOL, "bool", 1 },
};

const int rd_dtypes[RD_NDTYPES] = {
  RD_FLOAT32, RD_FLOAT64, RD_FLOAT16, RD_BFLOAT16, RD_INT8,
  RD_UINT8,   RD_INT16,   RD_UINT16,  RD_INT32,    RD_UINT32,
  RD_INT64,   RD_UINT64,  RD_BOOL,
};

const char *rd_dtype_name(int dtype)
{
  for (size_t i = 0; i < RD_NDTYPES; i++)
    if (dtype_tab[i].dtype == dtype)
      return dtype_tab[i].name;
  return NULL;
}

size_t rd_dtype_size(int dtype)
{
  for (size_t i = 0; i < RD_NDTYPES; i++)
    if (dtype_tab[i].dtype == dtype)
      return dtype_tab[i].size;
  return 0;
}

int rd_dtype_parse(const char *name, enum rd_dtype *out)
{
  if (!name)
    return RD_E_DTYPE;
  for (size_t i = 0; i < RD_NDTYPES; i++)
    if (strcmp(name, dtype_tab[i].name) == 0) {
      *out = (enum rd_dtype)dtype_tab[i].dtype;
      return 0;
    }
  if (strcmp(name, "float") == 0) {
    *out = RD_FLOAT32;
    return 0;
  }
  if (strcmp(name, "double") == 0) {
    *out = RD_FLOAT64;
    return 0;
  }
  return RD_E_DTYPE;
}

/* ------------------------------------------------------------------ */
/* Operators and versions                                             */
/* ------------------------------------------------------------------ */

/* Indexed by op - 1. */
static const struct rd_op_info op_tab[RD_OP_COUNT] = {
  { RD_OP_L2, "ReduceL2", 4, { 1, 11, 13, 18 }, 18, 0, 0 },
  { RD_OP_SUM_SQUARE, "ReduceSumSquare", 4, { 1, 11, 13, 18 }, 18, 0, 0 },
  { RD_OP_SUM, "ReduceSum", 3, { 1, 11, 13 }, 13, 0, 0 },
  { RD_OP_MEAN, "ReduceMean", 4, { 1, 11, 13, 18 }, 18, 0, 0 },
  { RD_OP_MAX, "ReduceMax", 6, { 1, 11, 12, 13, 18, 20 }, 18, 0, 0 },
  { RD_OP_MIN, "ReduceMin", 6, { 1, 11, 12, 13, 18, 20 }, 18, 0, 0 },
  { RD_OP_PROD, "ReduceProd", 4, { 1, 11, 13, 18 }, 18, 0, 0 },
  { RD_OP_L1, "ReduceL1", 4, { 1, 11, 13, 18 }, 18, 0, 0 },
  { RD_OP_LOG_SUM, "ReduceLogSum", 4, { 1, 11, 13, 18 }, 18, 0, 0 },
  { RD_OP_LOG_SUM_EXP, "ReduceLogSumExp", 4, { 1, 11, 13, 18 }, 18, 0, 0 },
  { RD_OP_ARGMAX, "ArgMax", 4, { 1, 11, 12, 13 }, 0, 12, 1 },
  { RD_OP_ARGMIN, "ArgMin", 4, { 1, 11, 12, 13 }, 0, 12, 1 },
};

const struct rd_op_info *rd_op_info(int op)
{
  if (op < 1 || op > RD_OP_COUNT)
    return NULL;
  return &op_tab[op - 1];
}

const char *rd_op_name(int op)
{
  const struct rd_op_info *i = rd_op_info(op);
  return i ? i->name : NULL;
}

int rd_op_parse(const char *name, enum rd_op *out)
{
  for (int i = 0; name && i < RD_OP_COUNT; i++)
    if (strcmp(name, op_tab[i].name) == 0) {
      *out = (enum rd_op)op_tab[i].op;
      return 0;
    }
  return RD_E_OP;
}

int rd_op_version(int op, int64_t opset)
{
  const struct rd_op_info *i = rd_op_info(op);
  if (!i)
    return RD_E_OP;
  if (opset < 1)
    return RD_E_OPSET;
  for (size_t k = i->nversions; k-- > 0;)
    if (opset >= i->versions[k])
      return i->versions[k];
  return RD_E_OPSET; /* not reached: every op has version 1 */
}

static int is_version(const struct rd_op_info *i, int version)
{
  for (size_t k = 0; k < i->nversions; k++)
    if (i->versions[k] == version)
      return 1;
  return 0;
}

int rd_dtype_in_version(int op, int dtype, int version)
{
  const struct rd_op_info *i = rd_op_info(op);
  if (!i || !is_version(i, version) || !rd_dtype_name(dtype))
    return 0;
  switch (dtype) {
  case RD_FLOAT32:
  case RD_FLOAT64:
  case RD_FLOAT16:
  case RD_INT32:
  case RD_INT64:
  case RD_UINT32:
  case RD_UINT64: return 1;               /* in A, B, C and D */
  case RD_BFLOAT16: return version >= 13; /* B, D */
  case RD_INT8:
  case RD_UINT8:
    return i->is_arg || ((op == RD_OP_MAX || op == RD_OP_MIN) && version >= 12);
  case RD_INT16:
  case RD_UINT16: return i->is_arg; /* C, D only */
  case RD_BOOL: return (op == RD_OP_MAX || op == RD_OP_MIN) && version >= 20;
  default: return 0;
  }
}

int rd_op_out_dtype(int op, int dtype)
{
  const struct rd_op_info *i = rd_op_info(op);
  return i && i->is_arg ? RD_INT64 : dtype;
}

/* ops.h - internal operator descriptors of libreduce (not installed). */
#ifndef OPS_H
#define OPS_H

/* 1 if rd_plan_init can plan `op` (an enum rd_op value). */
int rd__op_implemented(int op);

#endif /* OPS_H */

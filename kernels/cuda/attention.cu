// nvcc translation unit for attention.cuh and attention_blocked.cuh (one .cu per group keeps the
// parallel build balanced; the two share attention_common.cuh's kernels, so one unit).
#include "cuda/attention.cuh"
#include "cuda/attention_blocked.cuh"

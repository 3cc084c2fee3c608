// nvcc translation unit for attention.cuh (one .cu per group keeps the parallel build balanced).
#include "cuda/attention.cuh"

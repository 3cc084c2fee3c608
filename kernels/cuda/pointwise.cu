// nvcc translation unit for pointwise.cuh (one .cu per group keeps the parallel build balanced).
#include "cuda/pointwise.cuh"

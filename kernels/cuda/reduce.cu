// nvcc translation unit for reduce.cuh (one .cu per group keeps the parallel build balanced).
#include "cuda/reduce.cuh"

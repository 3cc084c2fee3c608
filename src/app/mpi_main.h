// main() of an MPI app: make OpenBLAS use this CPU's kernels (kernels/cpu/blas_kernels.h),
// initialise MPI, run, and on an error on any rank print it with the rank and end every rank of the
// job (MPI_Abort), so no rank is left waiting in a collective.
#pragma once

#include <functional>

namespace headroom::app {

int mpi_main(const char* app, int argc, char** argv, const std::function<int()>& body);

}  // namespace headroom::app

# Every dependency is a Debian package (jobs/setup.sh installs them) except CUDA, which is
# preinstalled under /usr/local/cuda on these machines.

find_package(MPI REQUIRED COMPONENTS C CXX)

set(HDF5_PREFER_PARALLEL TRUE)
if(NOT HDF5_C_COMPILER_EXECUTABLE AND EXISTS /usr/bin/h5pcc.openmpi)
  set(HDF5_C_COMPILER_EXECUTABLE /usr/bin/h5pcc.openmpi CACHE FILEPATH "parallel HDF5 wrapper")
endif()
find_package(HDF5 REQUIRED COMPONENTS C)
if(NOT HDF5_IS_PARALLEL)
  message(FATAL_ERROR
    "Headroom needs a parallel (MPI) HDF5; the one found (${HDF5_C_INCLUDE_DIRS}) is serial. "
    "Install Debian's libhdf5-openmpi-dev (jobs/setup.sh does) or point HDF5_C_COMPILER_EXECUTABLE "
    "at an h5pcc built with --enable-parallel.")
endif()

find_package(Boost 1.74 REQUIRED COMPONENTS program_options)
find_package(OpenMP REQUIRED COMPONENTS CXX)

# OpenBLAS's OpenMP build, named by path rather than through Debian's alternatives (where the
# pthread build wins): it runs sgemm on libgomp's threads, the same pool as our own OpenMP loops. The
# pthread build keeps a second pool whose threads spin after every sgemm, competing with the next
# OpenMP region for the same cores: a training step on 2 cores was 29% slower with it
# (bench_train_step --shape 8x64: 1667-1676 vs 2157-2176 tokens/s). The directory is not a default
# library path, so CMake puts it in the binaries' RUNPATH and libopenblas.so.0 resolves to it.
set(HEADROOM_OPENBLAS_DIR /usr/lib/x86_64-linux-gnu/openblas-openmp CACHE PATH
    "directory of the OpenMP build of OpenBLAS (Debian: libopenblas-openmp-dev)")
find_library(HEADROOM_OPENBLAS_LIBRARY openblas PATHS ${HEADROOM_OPENBLAS_DIR} NO_DEFAULT_PATH)
find_path(HEADROOM_CBLAS_INCLUDE_DIR cblas.h
  PATHS /usr/include/x86_64-linux-gnu/openblas-openmp ${HEADROOM_OPENBLAS_DIR}/../include
  NO_DEFAULT_PATH)
if(NOT HEADROOM_OPENBLAS_LIBRARY OR NOT HEADROOM_CBLAS_INCLUDE_DIR)
  # Still correct with any other OpenBLAS build, only slower with more than one thread per rank.
  message(WARNING "OpenBLAS's OpenMP build not found in ${HEADROOM_OPENBLAS_DIR}; using the system "
    "OpenBLAS, whose pthread build costs ~30% on multi-threaded training steps. Install Debian's "
    "libopenblas-openmp-dev (jobs/setup.sh does) or set HEADROOM_OPENBLAS_DIR.")
  set(BLA_VENDOR OpenBLAS)
  find_package(BLAS REQUIRED)
  set(HEADROOM_OPENBLAS_LIBRARY ${BLAS_LIBRARIES})
  find_path(HEADROOM_CBLAS_FALLBACK_INCLUDE_DIR cblas.h
    PATHS /usr/include/x86_64-linux-gnu/openblas-pthread /usr/include/openblas /usr/include
    NO_DEFAULT_PATH)
  if(NOT HEADROOM_CBLAS_FALLBACK_INCLUDE_DIR)
    message(FATAL_ERROR "cblas.h (OpenBLAS) not found; install libopenblas-openmp-dev")
  endif()
  set(HEADROOM_CBLAS_INCLUDE_DIR ${HEADROOM_CBLAS_FALLBACK_INCLUDE_DIR})
endif()
add_library(headroom_blas INTERFACE)
target_link_libraries(headroom_blas INTERFACE ${HEADROOM_OPENBLAS_LIBRARY})
target_include_directories(headroom_blas SYSTEM INTERFACE ${HEADROOM_CBLAS_INCLUDE_DIR})
message(STATUS "Headroom: OpenBLAS ${HEADROOM_OPENBLAS_LIBRARY}")

find_package(nlohmann_json 3.10 REQUIRED)
# ICU: regexes and NFC for Hugging Face tokenizers (src/data/hf_*.cpp).
find_package(ICU REQUIRED COMPONENTS uc i18n)
# prepare reads .gz and .zst inputs as streams (Debian: zlib1g-dev, libzstd-dev).
find_package(ZLIB REQUIRED)
find_package(zstd REQUIRED CONFIG)
find_package(GTest REQUIRED)

find_program(HEADROOM_PYTHON /usr/bin/python3 NO_DEFAULT_PATH)

set(HEADROOM_HAVE_CUDA OFF)
if(HEADROOM_CUDA)
  include(CheckLanguage)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc CACHE FILEPATH "nvcc")
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    # 'native' fails on machines without a GPU (CI): name the architecture.
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 90)
    endif()
    # The static runtime would give two copies of cudart next to cuDNN/NCCL.
    set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
    set(CMAKE_CUDA_HOST_COMPILER ${CMAKE_CXX_COMPILER})
    enable_language(CUDA)
    set(CMAKE_CUDA_STANDARD 17)  # CMake 3.25 knows no CUDA20 flag for nvcc
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    find_package(CUDAToolkit REQUIRED)
    find_path(CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
    find_library(CUDNN_LIBRARY cudnn HINTS ${CUDAToolkit_LIBRARY_DIR})
    find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
    find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR})
    foreach(v CUDNN_INCLUDE_DIR CUDNN_LIBRARY NCCL_INCLUDE_DIR NCCL_LIBRARY)
      if(NOT ${v})
        message(FATAL_ERROR "CUDA was found but ${v} was not; install cuDNN and NCCL or configure with -DHEADROOM_CUDA=OFF")
      endif()
    endforeach()
    add_library(headroom_cudnn UNKNOWN IMPORTED)
    set_target_properties(headroom_cudnn PROPERTIES IMPORTED_LOCATION ${CUDNN_LIBRARY}
      INTERFACE_INCLUDE_DIRECTORIES ${CUDNN_INCLUDE_DIR})
    add_library(headroom_nccl UNKNOWN IMPORTED)
    set_target_properties(headroom_nccl PROPERTIES IMPORTED_LOCATION ${NCCL_LIBRARY}
      INTERFACE_INCLUDE_DIRECTORIES ${NCCL_INCLUDE_DIR})
    set(HEADROOM_HAVE_CUDA ON)
    message(STATUS "Headroom: CUDA backend ON (sm_${CMAKE_CUDA_ARCHITECTURES}, CUDA ${CUDAToolkit_VERSION})")
  else()
    message(STATUS "Headroom: nvcc not found, CUDA backend OFF")
  endif()
endif()

// import_hf: a Hugging Face model directory → a Headroom run directory with one checkpoint
// (src/app/hf_import.h says why conversion, and how it runs under MPI with --parallel.tp N).
#include "app/hf_import.h"
#include "app/mpi_main.h"

int main(int argc, char** argv) {
  return headroom::app::mpi_main("import_hf", argc, argv, [&] { return headroom::app::run_import_hf(argc, argv); });
}

// export_hf: a Headroom checkpoint (a .h5 file or a run directory) → a Hugging Face model directory
// (src/app/hf_export.h).
#include "app/hf_export.h"
#include "app/mpi_main.h"

int main(int argc, char** argv) {
  return headroom::app::mpi_main("export_hf", argc, argv, [&] { return headroom::app::run_export_hf(argc, argv); });
}

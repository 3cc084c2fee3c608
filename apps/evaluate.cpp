// evaluate: score a checkpoint on RULER-style tasks, JSON KV recall, loss by position and multiple
// choice, data-parallel over MPI ranks. Everything is in src/eval (README there).
#include "app/mpi_main.h"
#include "app/evaluate_stage.h"

int main(int argc, char** argv) {
  return headroom::app::mpi_main("evaluate", argc, argv, [&] { return headroom::app::run_evaluate_stage(argc, argv); });
}

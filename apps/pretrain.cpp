// pretrain: train a model from fresh weights on prepared token shards, tensor- and data-parallel.
#include "app/mpi_main.h"
#include "app/training_stage.h"

int main(int argc, char** argv) {
  return headroom::app::mpi_main("pretrain", argc, argv, [&] {
    return headroom::app::run_training_stage(
        {headroom::config::Stage::kPretrain,
         "Trains the [model] from fresh weights (model.seed) on the windows of data.train, "
         "with the [train] recipe, on tp × dp MPI ranks (mpirun -np N, or srun). Writes "
         "config.ini, log.txt, metrics.jsonl and checkpoints/step_XXXXXXXX.h5 into --run-dir. "
         "On SIGTERM/SIGUSR1 it finishes the step, checkpoints and exits with status 75 "
         "(requeue); --resume auto continues.",
         false},
        argc, argv);
  });
}

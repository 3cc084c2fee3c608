// extend: long-context continued pretraining from a checkpoint (--init): a new train.seq_len, a
// raised RoPE base per layer type or YaRN, an annealing schedule, optional frozen parameters, and
// windows of whole documents concatenated up to the new length.
#include "app/mpi_main.h"
#include "app/training_stage.h"

int main(int argc, char** argv) {
  return headroom::app::mpi_main("extend", argc, argv, [&] {
    return headroom::app::run_training_stage(
        {headroom::config::Stage::kExtend,
         "Continues training the --init checkpoint (a .h5 file or a run directory) at a longer "
         "context. Its configuration is the base layer: pass only what the extension changes, "
         "e.g. --train.seq_len 16384 --model.rope_base_full 8e6 (or --model.rope_scaling yarn "
         "--model.yarn_factor 4 --model.yarn_original_len 4096), --train.schedule wsd|linear, "
         "--model.freeze 'layers.*.attn.w?'. Windows are whole documents of data.train "
         "concatenated up to train.seq_len + 1 tokens (data.sampler = auto|documents|windows). "
         "A two-stage recipe is two extend runs, the second --init'ed from the first. Writes "
         "the same run directory as pretrain; the stage is appended to the checkpoint's lineage. "
         "On SIGTERM/SIGUSR1 it checkpoints and exits 75; --resume auto continues.",
         true},
        argc, argv);
  });
}

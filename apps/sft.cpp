// sft: supervised fine-tuning from a checkpoint (--init) on prompt/response pairs (a JSONL file
// and/or generated instruction-style examples) in the instruction template of
// data/prompt_template.h, loss on the responses only.
#include "app/mpi_main.h"
#include "app/training_stage.h"

int main(int argc, char** argv) {
  return headroom::app::mpi_main("sft", argc, argv, [&] {
    return headroom::app::run_training_stage(
        {headroom::config::Stage::kSft,
         "Fine-tunes the --init checkpoint (a .h5 file or a run directory) on prompt/response "
         "examples: pairs from data.sft_file (JSONL, {\"prompt\": ..., \"response\": ...} per "
         "line) and generated ones (retrieval questions over documents of data.train, and the "
         "synthetic tasks of data.synthetic_tasks), each as BOS \"### Instruction:\\n\" prompt "
         "\"\\n\\n### Response:\\n\" response EOS, packed whole into windows of train.seq_len + 1 "
         "tokens (BOS-separated; attention is not masked between examples), loss on the "
         "response tokens and EOS only. On SIGTERM/SIGUSR1 it checkpoints and exits 75; "
         "--resume auto continues.",
         true},
        argc, argv);
  });
}

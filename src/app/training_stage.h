// What pretrain, extend and sft share around the training loop: options, configuration (with the
// input checkpoint's configuration as the base for extend/sft), the process grid, the run
// directory, and the data.
#pragma once

#include "config/choices.h"

#include <string>

namespace headroom::app {

struct StageSpec {
  config::Stage stage;
  std::string description;  // one paragraph for --help
  bool takes_init = false;  // --init CHECKPOINT|RUN_DIR (extend, sft)
};

// The whole stage; returns the process exit status (0, 2 on error, 75 after a stop signal).
int run_training_stage(const StageSpec& spec, int argc, char** argv);

}  // namespace headroom::app

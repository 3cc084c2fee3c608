// What the MPI stages (pretrain, extend, sft, evaluate) do before any work, in one place: read the
// checkpoint named by --init (its stored configuration, less `not_inherited` sections or keys and
// less train.device, is the base layer of the parse), parse, answer --help (before validation, so
// it works with a broken config), validate, make train.device = auto concrete (the same on every
// rank), and answer --print-config on rank 0.
#pragma once

#include "app/cli.h"
#include "config/config.h"
#include "config/schema.h"
#include "io/checkpoint.h"

#include <filesystem>
#include <optional>
#include <set>
#include <string>

namespace headroom::app {

struct StageStart {
  bool answered = false;                      // --help or --print-config printed: exit 0
  std::optional<std::filesystem::path> init;  // the resolved --init checkpoint, if given
  io::CheckpointInfo init_info;
  std::string ini;            // the resolved configuration (config::to_ini)
  std::string device_choice;  // what train.device = auto became and why; "" when it was not auto
};

StageStart start_stage(int argc, char** argv, const config::po::options_description& opts, const config::Schema& schema,
                       config::Config& cfg, unsigned sections, const CommonFlags& flags, const std::string& help_usage,
                       bool takes_init, const std::set<std::string>& not_inherited = {});

}  // namespace headroom::app

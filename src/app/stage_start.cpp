#include "app/stage_start.h"

#include "app/device_choice.h"
#include "config/ini_text.h"
#include "config/keys.h"
#include "config/load.h"
#include "io/checkpoint_files.h"

#include <mpi.h>

#include <iostream>

namespace headroom::app {

StageStart start_stage(int argc, char** argv, const config::po::options_description& opts, const config::Schema& schema,
                       config::Config& cfg, unsigned sections, const CommonFlags& flags, const std::string& help_usage,
                       bool takes_init, const std::set<std::string>& not_inherited) {
  StageStart s;
  std::vector<config::IniText> bases;
  if (const std::string init = flag_value(argc, argv, "--init"); takes_init && !init.empty()) {
    s.init = io::resolve_checkpoint(init);
    s.init_info = io::read_checkpoint_info(*s.init);
    // The device is the machine's, not the model's: each stage chooses it again.
    std::set<std::string> drop = not_inherited;
    drop.insert("train.device");
    bases.push_back({"checkpoint " + s.init->string(), config::ini_without(s.init_info.config_ini, drop)});
  }
  const auto parsed = config::parse_config(argc, argv, opts, schema, bases);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (wants_info(flags)) {
    if (rank == 0) std::cout << info_text(flags, help_usage, opts, schema);
    s.answered = true;
    return s;
  }
  config::validate(cfg, sections, schema, parsed);
  // Before the configuration is printed or stored: what is stored says cpu or cuda.
  if ((sections & config::kTrain) && cfg.train.device == config::Device::kAuto)
    s.device_choice = resolve_auto_device(cfg.train.device, MPI_COMM_WORLD);
  s.ini = config::to_ini(schema);
  if (flags.print_config) {
    if (rank == 0) std::cout << s.ini;
    s.answered = true;
  }
  return s;
}

}  // namespace headroom::app

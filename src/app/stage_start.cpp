#include "app/stage_start.h"

#include "config/ini_text.h"
#include "config/keys.h"
#include "config/load.h"

#include <mpi.h>

#include <iostream>

namespace headroom::app {

StageStart start_stage(int argc, char** argv, const config::po::options_description& opts,
                       const config::Schema& schema, const config::Config& cfg, unsigned sections,
                       const CommonFlags& flags, const std::string& help_usage, bool takes_init,
                       const std::set<std::string>& drop_sections) {
  StageStart s;
  std::vector<config::IniText> bases;
  if (const std::string init = flag_value(argc, argv, "--init"); takes_init && !init.empty()) {
    s.init = io::resolve_checkpoint(init);
    s.init_info = io::read_checkpoint_info(*s.init);
    bases.push_back({"checkpoint " + s.init->string(),
                     config::ini_without_sections(s.init_info.config_ini, drop_sections)});
  }
  const auto parsed = config::parse_config(argc, argv, opts, schema, bases);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (flags.help) {
    if (rank == 0) std::cout << config::help_text(help_usage, opts, schema);
    s.answered = true;
    return s;
  }
  config::validate(cfg, sections, schema, parsed);
  s.ini = config::to_ini(schema);
  if (flags.print_config) {
    if (rank == 0) std::cout << s.ini;
    s.answered = true;
  }
  return s;
}

}  // namespace headroom::app

// What every app's main shares: the common flags and the top-level error handling.
#pragma once

#include "config/load.h"

#include <functional>
#include <string>

namespace headroom::app {

struct CommonFlags {
  bool help = false;
  bool config_reference = false;
  bool print_config = false;
  bool force = false;
  std::vector<std::string> config_files;  // filled by parse_config (Parsed::config_files)
};

// --help, --config-reference, --config FILE (repeatable), --print-config, --force.
config::po::options_description common_options(CommonFlags& flags);

// True when --help or --config-reference was given: the app prints info_text() and exits.
bool wants_info(const CommonFlags& flags);

// --help: usage, the app's options and every key; --config-reference: every key as Markdown tables
// (docs/config.md is made from them). Both from the same key descriptions.
std::string info_text(const CommonFlags& flags, const std::string& usage,
                      const config::po::options_description& app_options, const config::Schema& schema);

// The value of a flag given before the full parse (--init: its checkpoint's configuration is the
// base layer of the parse), as "--flag VALUE" or "--flag=VALUE"; "" when absent. The last one wins,
// as in the parse.
std::string flag_value(int argc, char** argv, const std::string& flag);

// Runs body; a headroom::Error (or any exception) is printed as "<app>: error: <message>" and
// turns into exit status 2. Usage errors and runtime errors alike name what was wrong.
int guarded_main(const char* app, const std::function<int()>& body);

}  // namespace headroom::app

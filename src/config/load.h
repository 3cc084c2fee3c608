// Reading a configuration: command line, --config files and (for later stages) the INI text stored
// in a checkpoint, merged with a fixed precedence and validated before any work starts.
#pragma once

#include "config/schema.h"

#include <map>
#include <string>
#include <vector>

namespace headroom::config {

// An INI text and where it came from ("checkpoint runs/a/step_100.h5"), used as a low-priority base.
struct IniText {
  std::string origin;
  std::string text;
};

struct Parsed {
  po::variables_map vm;                       // app options and keys, resolved
  std::vector<std::string> config_files;      // --config, in the order given
  std::map<std::string, std::string> origin;  // key -> "command line" | "file X" | base origin
};

// Precedence, highest first: command line, the last --config file, ..., the first, `bases` (last
// first), the schema defaults. Unknown keys, malformed values and unreadable files throw
// headroom::Error naming the file (or "command line"), the section and the key.
Parsed parse_config(int argc, const char* const* argv, const po::options_description& app_options, const Schema& schema,
                    const std::vector<IniText>& bases = {});

// "command line", "file inputs/x.ini", or "default".
std::string origin_of(const Parsed& parsed, const std::string& key);

// Runs every key's own check and throws one Error listing every invalid key with its origin.
void check_keys(const Schema& schema, const Parsed& parsed);

// The resolved configuration as INI text: sections in schema order, each key with its help as a
// comment. parse_config() of this text reproduces the same configuration.
std::string to_ini(const Schema& schema, bool with_help = true);

// --help: usage line, the app's own options, then every key of every section with default and meaning.
std::string help_text(const std::string& usage, const po::options_description& app_options, const Schema& schema);

// --config-reference: every key of every section as a Markdown table (key, default, allowed values,
// meaning), from the same descriptions --help prints; docs/config.md is made from it.
std::string reference_markdown(const Schema& schema);

}  // namespace headroom::config

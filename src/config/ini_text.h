// Reading configuration INI text after the fact: the resolved configuration a checkpoint or a run
// directory stores (config::to_ini's output), read back by the stages that inherit it, by evaluate
// and analyze. One reader with Boost's rules (what the parse itself accepts): '#' starts a comment
// anywhere in a line, ';' a comment line, "[section]" a section, "key = value" an entry.
// config/load.h parses INI into a Config; this reads it as text, for what is not a Config.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace headroom::config {

struct IniEntry {
  std::string section, key, value;  // trimmed; section "" before the first [section]
};

// Every "key = value" line in order.
std::vector<IniEntry> ini_entries(const std::string& text);

// The last value of section.key, if any.
std::optional<std::string> ini_value(const std::string& text, const std::string& section, const std::string& key);

// {"section.key": value}; a key repeated in the text (a list key) joins its values with '\n'.
std::map<std::string, std::string> ini_map(const std::string& text);

// The text's lines, verbatim, without those of the named sections (their header included) and
// without the named keys' lines: `drop` holds section names ("parallel") and keys ("train.device").
std::string ini_without(const std::string& text, const std::set<std::string>& drop);

// The header and entry lines of the named sections only (comment and blank lines dropped).
std::string ini_only_sections(const std::string& text, const std::set<std::string>& keep);

}  // namespace headroom::config

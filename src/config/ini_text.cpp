#include "config/ini_text.h"

#include "util/text.h"

#include <sstream>

namespace headroom::config {
namespace {

// The section a header line opens, or nullopt when the line is no header.
std::optional<std::string> header(const std::string& trimmed) {
  if (trimmed.size() >= 2 && trimmed.front() == '[' && trimmed.back() == ']')
    return trim(trimmed.substr(1, trimmed.size() - 2));
  return std::nullopt;
}

std::string without_comment(std::string line) {
  if (const size_t hash = line.find('#'); hash != std::string::npos) line.erase(hash);
  return trim(line);
}

}  // namespace

std::vector<IniEntry> ini_entries(const std::string& text) {
  std::vector<IniEntry> out;
  std::istringstream in(text);
  std::string line, section;
  while (std::getline(in, line)) {
    line = without_comment(line);
    if (line.empty() || line[0] == ';') continue;
    if (const auto h = header(line)) {
      section = *h;
      continue;
    }
    const size_t eq = line.find('=');
    if (eq != std::string::npos) out.push_back({section, trim(line.substr(0, eq)), trim(line.substr(eq + 1))});
  }
  return out;
}

std::optional<std::string> ini_value(const std::string& text, const std::string& section, const std::string& key) {
  std::optional<std::string> v;
  for (const auto& e : ini_entries(text))
    if (e.section == section && e.key == key) v = e.value;
  return v;
}

std::map<std::string, std::string> ini_map(const std::string& text) {
  std::map<std::string, std::string> out;
  std::map<std::string, int> seen;
  for (const auto& e : ini_entries(text)) {
    const std::string key = (e.section.empty() ? "" : e.section + ".") + e.key;
    if (seen[key]++ && !out[key].empty())
      out[key] += "\n" + e.value;
    else
      out[key] = e.value;
  }
  return out;
}

std::string ini_without(const std::string& text, const std::set<std::string>& drop) {
  std::string out, line, section;
  std::istringstream in(text);
  bool skip_section = false;
  while (std::getline(in, line)) {
    const std::string entry = without_comment(line);
    if (const auto h = header(entry)) {
      section = *h;
      skip_section = drop.count(section) > 0;
    }
    const size_t eq = entry.empty() || entry[0] == ';' ? std::string::npos : entry.find('=');
    const bool dropped_key = eq != std::string::npos && drop.count(section + "." + trim(entry.substr(0, eq))) > 0;
    if (!skip_section && !dropped_key) out += line + '\n';
  }
  return out;
}

std::string ini_only_sections(const std::string& text, const std::set<std::string>& keep) {
  std::string out, line;
  std::istringstream in(text);
  bool in_kept = false;
  while (std::getline(in, line)) {
    if (const auto h = header(trim(line))) in_kept = keep.count(*h) > 0;
    if (in_kept && !line.empty() && line[0] != '#') out += line + "\n";
  }
  return out;
}

}  // namespace headroom::config

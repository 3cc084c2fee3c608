#include "config/schema.h"

#include "util/error.h"

#include <sstream>

namespace headroom::config {

Section& section(Schema& schema, const std::string& name, const std::string& title) {
  for (auto& s : schema.sections)
    if (s.name == name) return s;
  // Top-level keys print before any [section] header, so they go first.
  if (name.empty()) {
    schema.sections.emplace_front(Section{name, title, po::options_description(title, 100, 50)});
    return schema.sections.front();
  }
  schema.sections.emplace_back(Section{name, title, po::options_description(title, 100, 50)});
  return schema.sections.back();
}

Section& declared_section(Schema& schema, const std::string& name) {
  for (auto& s : schema.sections)
    if (s.name == name) return s;
  fail("internal: config section '", name, "' used before it was declared");
}

void add_list_key(Schema& schema, const std::string& section_name, const std::string& name,
                  std::vector<std::string>& target, const std::string& help) {
  Section* sec = &declared_section(schema, section_name);
  const std::string full = section_name.empty() ? name : section_name + "." + name;
  sec->options.add_options()(full.c_str(), po::value<std::vector<std::string>>(&target)->multitoken(), help.c_str());
  Key key{full,
          section_name,
          help,
          [&target] {
            std::string out;
            for (const auto& v : target) out += (out.empty() ? "" : "\n") + v;
            return out;
          },
          {},
          true};
  schema.keys.push_back(std::move(key));
}

Check<std::string> one_of(std::initializer_list<const char*> choices) {
  std::vector<std::string> list(choices.begin(), choices.end());
  std::string all;
  for (const auto& c : list) all += (all.empty() ? "" : ", ") + c;
  return {[list, all](const std::string& v) {
            for (const auto& c : list)
              if (v == c) return std::string();
            return cat("must be one of: ", all);
          },
          "one of: " + all};
}

std::string format_value(int v) { return std::to_string(v); }
std::string format_value(long v) { return std::to_string(v); }
std::string format_value(unsigned long v) { return std::to_string(v); }
std::string format_value(bool v) { return v ? "true" : "false"; }
std::string format_value(const std::string& v) { return v; }
std::string format_value(double v) {
  // Shortest text that reads back to the same double, so a printed config round-trips exactly.
  for (int precision = 6; precision <= 17; ++precision) {
    std::ostringstream s;
    s.precision(precision);
    s << v;
    if (std::stod(s.str()) == v) return s.str();
  }
  return std::to_string(v);
}

}  // namespace headroom::config

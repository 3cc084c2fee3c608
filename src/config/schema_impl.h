// Template definitions for schema.h.
#pragma once

#include "util/error.h"

namespace headroom::config {

template <class T>
Check<T> at_least(T lo) {
  return [lo](const T& v) { return v >= lo ? std::string() : cat("must be at least ", lo); };
}

template <class T>
Check<T> in_range(T lo, T hi) {
  return [lo, hi](const T& v) {
    return (v >= lo && v <= hi) ? std::string() : cat("must be in [", lo, ", ", hi, "]");
  };
}

template <class T>
void add_key(Schema& schema, const std::string& section_name, const std::string& name, T& target,
             T default_value, const std::string& help, Check<T> check) {
  Section* sec = nullptr;
  for (auto& s : schema.sections)
    if (s.name == section_name) sec = &s;
  if (!sec) fail("internal: config section '", section_name, "' used before it was declared");
  const std::string full = section_name.empty() ? name : section_name + "." + name;
  target = default_value;
  sec->options.add_options()(full.c_str(),
                             po::value<T>(&target)->default_value(default_value,
                                                                  format_value(default_value)),
                             help.c_str());
  Key key{full, section_name, help, [&target] { return format_value(target); }, {}};
  if (check) key.check = [&target, check] { return check(target); };
  schema.keys.push_back(std::move(key));
}

}  // namespace headroom::config

// Template definitions for schema.h.
#pragma once

#include "util/error.h"

namespace headroom::config {

template <class T>
Check<T> at_least(T lo) {
  return {[lo](const T& v) { return v >= lo ? std::string() : cat("must be at least ", lo); },
          cat("≥ ", format_value(lo))};
}

template <class T>
Check<T> in_range(T lo, T hi) {
  return {
      [lo, hi](const T& v) { return (v >= lo && v <= hi) ? std::string() : cat("must be in [", lo, ", ", hi, "]"); },
      cat("[", format_value(lo), ", ", format_value(hi), "]")};
}

template <class T>
void add_key(Schema& schema, const std::string& section_name, const std::string& name, T& target, T default_value,
             const std::string& help, Check<T> check) {
  Section* sec = &declared_section(schema, section_name);
  const std::string full = section_name.empty() ? name : section_name + "." + name;
  target = default_value;
  sec->options.add_options()(
      full.c_str(), po::value<T>(&target)->default_value(default_value, format_value(default_value)), help.c_str());
  Key key{full, section_name, help, [&target] { return format_value(target); }, {}};
  key.default_text = format_value(default_value);
  if (check) {
    key.check = [&target, check] { return check(target); };
    key.allowed = check.allowed;
  }
  schema.keys.push_back(std::move(key));
}

template <Choice E>
void add_choice_key(Schema& schema, const std::string& section_name, const std::string& name, E& target,
                    E default_value, const std::string& help) {
  Section* sec = &declared_section(schema, section_name);
  const std::string full = section_name.empty() ? name : section_name + "." + name;
  target = default_value;
  std::string& text = schema.choice_text.emplace_back(name_of(default_value));
  sec->options.add_options()(
      full.c_str(),
      po::value<std::string>(&text)->default_value(name_of(default_value))->notifier([&target](const std::string& v) {
        if (const auto e = choice_from<E>(v)) target = *e;
      }),
      help.c_str());
  // The text while it names nothing (so the error shows what was given), else the value itself.
  Key key{full, section_name, help, [&target, &text] { return choice_from<E>(text) ? name_of(target) : text; },
          [&text] { return choice_from<E>(text) ? std::string() : cat("must be one of: ", choice_list<E>()); }};
  key.default_text = name_of(default_value);
  key.allowed = cat("one of: ", choice_list<E>());
  schema.keys.push_back(std::move(key));
}

}  // namespace headroom::config

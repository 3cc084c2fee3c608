// A configuration schema: every key an app accepts, with its type, default, meaning and the checks
// that need only the key itself (ranges, choices). Boost.Program_options does the parsing; the schema
// adds what Boost lacks: printing the resolved value back as INI and per-key validation.
#pragma once

#include "config/choices.h"

#include <boost/program_options.hpp>

#include <functional>
#include <initializer_list>
#include <list>
#include <string>
#include <type_traits>
#include <vector>

namespace headroom::config {

namespace po = boost::program_options;

struct Key {
  std::string name;     // "model.n_heads"
  std::string section;  // "model"
  std::string help;
  std::function<std::string()> print;  // the bound value as INI text
  std::function<std::string()> check;  // "" when valid, else why not
  bool list = false;                   // print() returns one value per line; INI repeats the key
  std::string default_text = {};       // the default as INI text (the config reference prints it)
  std::string allowed = {};            // the values the key's own check accepts, in words; "" = any
};

// A section named "" holds top-level keys (no "[section]" in INI, "--name" on the command line).
struct Section {
  std::string name;
  std::string title;
  po::options_description options;
};

struct Schema {
  std::list<Section> sections;  // a list: Boost option groups cannot be moved or assigned
  std::vector<Key> keys;
  std::list<std::string> choice_text;  // what a choice key was given, as text (add_choice_key)
};

// Returns the section called `name`, adding it (with `title` for --help) if it is new.
Section& section(Schema& schema, const std::string& name, const std::string& title);

// The section called `name`, which section() must have added; throws otherwise (a bug in a schema).
Section& declared_section(Schema& schema, const std::string& name);

// A per-key check: given the value, "" when valid, else the reason; `allowed` says in words what it
// accepts ("≥ 1", "[0, 10]", "one of: a, b"), for the config reference. A check written inline
// leaves it empty, and the key's help says what it accepts.
template <class T>
struct Check {
  std::function<std::string(const T&)> test;
  std::string allowed;

  Check() = default;
  template <class F>
  requires std::is_invocable_r_v<std::string, const F&, const T&> Check(F f, std::string allowed_text = {})
      : test(std::move(f)), allowed(std::move(allowed_text)) {}
  explicit operator bool() const { return static_cast<bool>(test); }
  std::string operator()(const T& v) const { return test(v); }
};

template <class T>
Check<T> at_least(T lo);
template <class T>
Check<T> in_range(T lo, T hi);
Check<std::string> one_of(std::initializer_list<const char*> choices);

// A key given several times (INI: repeated lines; command line: several values after the flag).
void add_list_key(Schema& schema, const std::string& section_name, const std::string& name,
                  std::vector<std::string>& target, const std::string& help);

// Binds `section.name` to `target`, sets the default, and registers printing and checking.
template <class T>
void add_key(Schema& schema, const std::string& section_name, const std::string& name, T& target, T default_value,
             const std::string& help, Check<T> check = {});

// A key whose value is one of an enum's names (config/choices.h). Boost reads the text; its notifier
// sets `target` when the text names a value, and the key's check reports any other text with the
// list of names, so the enum never holds a value nobody chose.
template <Choice E>
void add_choice_key(Schema& schema, const std::string& section_name, const std::string& name, E& target,
                    E default_value, const std::string& help);

std::string format_value(int v);
std::string format_value(long v);
std::string format_value(unsigned long v);
std::string format_value(double v);
std::string format_value(bool v);
std::string format_value(const std::string& v);

}  // namespace headroom::config

#include "config/schema_impl.h"

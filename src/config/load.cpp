#include "config/load.h"

#include "util/error.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace headroom::config {
namespace {

std::string describe_key(const std::string& name) {
  const auto dot = name.find('.');
  if (dot == std::string::npos) return cat("key '", name, "' (outside any [section])");
  return cat("key '", name.substr(dot + 1), "' in section [", name.substr(0, dot), "]");
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1] ? 1u : 0u)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string suggestion(const Schema& schema, const std::string& name) {
  std::string best;
  size_t best_d = 4;  // only suggest close matches
  for (const auto& k : schema.keys) {
    const size_t d = edit_distance(name, k.name);
    if (d > 0 && d < best_d) best_d = d, best = k.name;
  }
  return best.empty() ? "" : cat(" (did you mean '", best, "'?)");
}

po::options_description all_options(const po::options_description& app_options, const Schema& schema) {
  po::options_description all;
  all.add(app_options);
  for (const auto& s : schema.sections) all.add(s.options);
  return all;
}

// Stores one source into the map. Boost keeps the first value stored for a key, so sources are
// stored from the highest precedence down.
void store_source(const po::parsed_options& opts, const std::string& origin, const Schema& schema, Parsed& out) {
  try {
    po::store(opts, out.vm);
  } catch (const po::error_with_option_name& e) {
    const std::string name = e.get_option_name().substr(e.get_option_name().find_first_not_of('-'));
    fail(origin, ": ", describe_key(name), ": ", e.what(), suggestion(schema, name));
  } catch (const po::error& e) {
    fail(origin, ": ", e.what());
  }
  for (const auto& o : opts.options)
    if (!o.string_key.empty()) out.origin.emplace(o.string_key, origin);  // first stored wins
}

// On the command line a key given twice means its last value (so scripts can append overrides),
// except for list keys and --config, which accumulate.
void keep_last_occurrence(po::parsed_options& opts, const Schema& schema) {
  auto accumulates = [&](const std::string& key) {
    if (key == "config") return true;
    for (const auto& k : schema.keys)
      if (k.name == key) return k.list;
    return false;
  };
  std::vector<po::option> kept;
  for (auto it = opts.options.rbegin(); it != opts.options.rend(); ++it) {
    const bool seen =
        std::any_of(kept.begin(), kept.end(), [&](const po::option& o) { return o.string_key == it->string_key; });
    if (!seen || it->string_key.empty() || accumulates(it->string_key)) kept.push_back(*it);
  }
  opts.options.assign(kept.rbegin(), kept.rend());
}

po::parsed_options parse_ini(const std::string& text, const std::string& origin, const po::options_description& all,
                             const Schema& schema) {
  std::istringstream in(text);
  try {
    return po::parse_config_file(in, all, /*allow_unregistered=*/false);
  } catch (const po::unknown_option& e) {
    const std::string name = e.get_option_name();
    fail(origin, ": unknown ", describe_key(name), suggestion(schema, name));
  } catch (const po::error& e) {
    fail(origin, ": ", e.what());
  }
}

std::string read_text(const std::string& path) {
  std::error_code ec;  // an ifstream opens a directory and reads it as empty: the defaults would run
  if (std::filesystem::is_directory(path, ec)) fail("config file ", path, ": is a directory, not an INI file");
  std::ifstream f(path, std::ios::binary);
  if (!f) fail("config file ", path, ": cannot be opened (", std::strerror(errno), ")");
  std::ostringstream s;
  s << f.rdbuf();
  if (f.bad()) fail("config file ", path, ": read failed");
  return s.str();
}

}  // namespace

Parsed parse_config(int argc, const char* const* argv, const po::options_description& app_options, const Schema& schema,
                    const std::vector<IniText>& bases) {
  const po::options_description all = all_options(app_options, schema);
  Parsed out;
  po::parsed_options cli(&all);
  try {
    // No prefix guessing: "--vocab" must not silently mean "--vocab-size".
    const int style = po::command_line_style::default_style & ~po::command_line_style::allow_guessing;
    cli = po::command_line_parser(argc, argv).options(all).style(style).run();
  } catch (const po::unknown_option& e) {
    const std::string name = e.get_option_name().substr(e.get_option_name().find_first_not_of('-'));
    fail("command line: unknown option '--", name, "'", suggestion(schema, name), "; see --help");
  } catch (const po::error& e) {
    fail("command line: ", e.what());
  }
  for (const auto& o : cli.options)
    if (o.string_key == "config")
      for (const auto& v : o.value) out.config_files.push_back(v);
  keep_last_occurrence(cli, schema);

  store_source(cli, "command line", schema, out);
  for (auto it = out.config_files.rbegin(); it != out.config_files.rend(); ++it) {
    const std::string origin = "config file " + *it;
    store_source(parse_ini(read_text(*it), origin, all, schema), origin, schema, out);
  }
  for (auto it = bases.rbegin(); it != bases.rend(); ++it)
    store_source(parse_ini(it->text, it->origin, all, schema), it->origin, schema, out);
  try {
    po::notify(out.vm);
  } catch (const po::error& e) {
    fail("configuration: ", e.what());
  }
  return out;
}

std::string origin_of(const Parsed& parsed, const std::string& key) {
  const auto it = parsed.origin.find(key);
  return it == parsed.origin.end() ? "default" : it->second;
}

void check_keys(const Schema& schema, const Parsed& parsed) {
  std::string problems;
  for (const auto& k : schema.keys) {
    if (!k.check) continue;
    const std::string why = k.check();
    if (!why.empty()) problems += cat("\n  ", k.name, " = ", k.print(), " (", origin_of(parsed, k.name), "): ", why);
  }
  if (!problems.empty()) fail("invalid configuration:", problems);
}

std::string to_ini(const Schema& schema, bool with_help) {
  std::ostringstream s;
  // Top-level keys must come before the first [section] header.
  for (const auto& sec : schema.sections) {
    if (!sec.name.empty()) s << "[" << sec.name << "]\n";
    for (const auto& k : schema.keys) {
      if (k.section != sec.name) continue;
      const std::string name = sec.name.empty() ? k.name : k.name.substr(sec.name.size() + 1);
      if (with_help) s << "# " << k.help << "\n";
      std::istringstream values(k.print());
      std::string v;
      bool any = false;
      while (std::getline(values, v)) s << name << " = " << v << "\n", any = true;
      if (!any && !k.list) s << name << " = \n";
    }
    s << "\n";
  }
  return s.str();
}

std::string help_text(const std::string& usage, const po::options_description& app_options, const Schema& schema) {
  std::ostringstream s;
  s << usage << "\n\n" << app_options << "\n";
  if (!schema.sections.empty()) {
    s << "Configuration keys: set them in an INI file passed with --config (section [model] holds\n"
         "model.*, and so on) or on the command line as --section.key VALUE. The command line wins\n"
         "over files, later files over earlier ones.\n\n";
    for (const auto& sec : schema.sections) s << sec.options << "\n";
  }
  return s.str();
}

namespace {

// Text for one Markdown table cell: pipes escaped, an empty value shown as such.
std::string cell(const std::string& text, bool code) {
  if (text.empty()) return code ? "(empty)" : "";
  std::string out;
  for (char c : text) {
    if (c == '|')
      out += "\\|";
    else if (c == '\n')
      out += ' ';
    else
      out += c;
  }
  return code ? "`" + out + "`" : out;
}

}  // namespace

std::string reference_markdown(const Schema& schema) {
  std::ostringstream s;
  for (const auto& sec : schema.sections) {
    s << "### " << (sec.name.empty() ? sec.title : "[" + sec.name + "]") << "\n\n";
    s << "| key | default | allowed | meaning |\n|---|---|---|---|\n";
    for (const auto& k : schema.keys) {
      if (k.section != sec.name) continue;
      const std::string shown = k.list ? "(none; repeatable)" : cell(k.default_text, true);
      s << "| `" << k.name << "` | " << shown << " | " << cell(k.allowed, false) << " | " << cell(k.help, false)
        << " |\n";
    }
    s << "\n";
  }
  return s.str();
}

}  // namespace headroom::config

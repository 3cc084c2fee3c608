#include "app/cli.h"

#include "util/error.h"

#include <iostream>

namespace headroom::app {

config::po::options_description common_options(CommonFlags& flags) {
  namespace po = config::po;
  po::options_description o("Common options", 100, 50);
  o.add_options()("help", po::bool_switch(&flags.help), "print this help, listing every key, and exit")(
      "config-reference", po::bool_switch(&flags.config_reference),
      "print every key (default, allowed values, meaning) as Markdown tables and exit")(
      "config", po::value<std::vector<std::string>>()->composing(),
      "INI config file; repeatable, later files override earlier ones")(
      "print-config", po::bool_switch(&flags.print_config), "print the resolved configuration as INI and exit")(
      "force", po::bool_switch(&flags.force), "replace the outputs of a finished run in the output directory");
  return o;
}

bool wants_info(const CommonFlags& flags) { return flags.help || flags.config_reference; }

std::string info_text(const CommonFlags& flags, const std::string& usage,
                      const config::po::options_description& app_options, const config::Schema& schema) {
  return flags.help ? config::help_text(usage, app_options, schema) : config::reference_markdown(schema);
}

int guarded_main(const char* app, const std::function<int()>& body) {
  try {
    return body();
  } catch (const Error& e) {
    std::cerr << app << ": error: " << e.what() << std::endl;
  } catch (const std::exception& e) {
    std::cerr << app << ": error: " << e.what() << std::endl;
  }
  return 2;
}

std::string flag_value(int argc, char** argv, const std::string& flag) {
  std::string value;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == flag && i + 1 < argc)
      value = argv[++i];
    else if (a.size() > flag.size() && a.compare(0, flag.size(), flag) == 0 && a[flag.size()] == '=')
      value = a.substr(flag.size() + 1);
  }
  return value;
}

}  // namespace headroom::app

// The subcommands' most common option: a number shown with its default in --help and
// checked at parse time to lie in [lo, hi] (outside it: exit 2 with CLI11's message).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace stet::tools {

template <typename T, typename Bound>
CLI::Option* AddRangeOption(CLI::App* cmd, const std::string& flags, T* value,
                            const std::string& help, Bound lo, Bound hi) {
  return cmd->add_option(flags, *value, help)->capture_default_str()->check(CLI::Range(lo, hi));
}

}  // namespace stet::tools

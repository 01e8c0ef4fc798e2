// Command line of `worker-orcd serve` (spec M0-W-1110): `--name value` or `--name=value`.
#pragma once

#include "http/serve_options.hpp"

#include <stdexcept>
#include <string>

namespace wo::http {

// A bad command line; the message names the option, the value and what is allowed.
class UsageError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

struct ServeArgs {
  ServeOptions options;
  bool help = false; // --help / -h: print serve_usage() and exit 0
};

// argv[0] is the command name (skipped). Throws UsageError.
ServeArgs parse_serve_args(int argc, const char *const *argv);

// The --help text: every option, its default and its bounds.
std::string serve_usage();

} // namespace wo::http

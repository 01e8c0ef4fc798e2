// Subcommands of the worker-orcd executable. Each lives in its own file in this folder and
// registers itself with WORKER_CLI_COMMAND, so adding one touches no other file.
#pragma once

#include <vector>

namespace wo::cli {

// argv[0] is the command's name; returns the process exit code.
using CommandFn = int (*)(int argc, char **argv);

struct Command {
  const char *name;
  const char *summary;
  CommandFn fn;
};

inline std::vector<Command> &commands() {
  static std::vector<Command> all;
  return all;
}

struct Register {
  Register(const char *name, const char *summary, CommandFn fn) { commands().push_back({name, summary, fn}); }
};

} // namespace wo::cli

#define WORKER_CLI_COMMAND(name, summary, fn) static const ::wo::cli::Register wo_cli_register_##fn(name, summary, fn)

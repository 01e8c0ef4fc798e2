// Runs a shell command line and collects what it writes to stdout (append the redirections the test
// wants, e.g. " 2>&1"), for end-to-end tests of the worker-orcd executable.
#pragma once

#include <array>
#include <cstdio>
#include <string>
#include <sys/wait.h>

namespace wo::test {

struct CommandResult {
  int status = -1; // exit status; 128 + signal when killed; -1 when it could not start
  std::string out; // stdout
};

inline CommandResult run_command(const std::string &cmd) {
  CommandResult r;
  FILE *p = ::popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 65536> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0)
    r.out.append(buf.data(), n);
  const int st = ::pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : -1;
  return r;
}

} // namespace wo::test

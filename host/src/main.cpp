// worker-orcd: one GGUF model on one GPU, served over HTTP.
//
//   worker-orcd --worker-id ID --model M --gpu-device N --port P ...   serve (see `serve --help`)
//   worker-orcd <command> [options]                                     developer commands
#include "cli/command.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

namespace {

const wo::cli::Command *find_command(const std::string &name) {
  for (const auto &c : wo::cli::commands())
    if (name == c.name) return &c;
  return nullptr;
}

void print_overview() {
  std::printf("worker-orcd — GPU inference worker: one GGUF model, one GPU, token streaming over HTTP.\n\n"
              "usage: worker-orcd [serve] --worker-id UUID --model PATH --gpu-device N --port P [options]\n"
              "       worker-orcd <command> [options]   (worker-orcd <command> --help for details)\n\n"
              "commands:\n");
  auto cmds = wo::cli::commands();
  std::sort(cmds.begin(), cmds.end(), [](const auto &a, const auto &b) { return std::strcmp(a.name, b.name) < 0; });
  for (const auto &c : cmds) std::printf("  %-12s %s\n", c.name, c.summary);
  std::printf("\n");
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    print_overview();
    return 1;
  }
  std::string first = argv[1];
  if (const auto *cmd = find_command(first)) return cmd->fn(argc - 1, argv + 1);

  // No command word: the spec's command line (`worker-orcd --worker-id ... --model ...`) serves.
  if (first.rfind("-", 0) == 0) {
    const auto *serve = find_command("serve");
    if (first == "--help" || first == "-h") {
      print_overview();
      if (serve) {
        char name[] = "serve";
        char help[] = "--help";
        char *args[] = {name, help, nullptr};
        return serve->fn(2, args);
      }
      return 0;
    }
    if (!serve) {
      std::fprintf(stderr, "worker-orcd: this build has no 'serve' command\n");
      return 1;
    }
    argv[0] = const_cast<char *>("serve");
    return serve->fn(argc, argv);
  }
  std::fprintf(stderr, "worker-orcd: unknown command '%s' (expected one of:", first.c_str());
  for (const auto &c : wo::cli::commands()) std::fprintf(stderr, " %s", c.name);
  std::fprintf(stderr, "; or serve options starting with --)\n");
  return 1;
}

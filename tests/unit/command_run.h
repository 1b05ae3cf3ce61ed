// Test helper: a command run to its end through the shell, its standard output and exit code (append " 2>&1" to
// the command for its errors too). For the tests of the app's and the CLI's command lines.
#pragma once
#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace sf::testing {

struct CommandRun {
  int exit_code = -1;  // -1: it could not be started, or a signal ended it
  std::string output;
};

inline CommandRun run_command(const std::string& command) {
  CommandRun r;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return r;
  char buffer[4096];
  while (size_t n = fread(buffer, 1, sizeof(buffer), pipe)) r.output.append(buffer, n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace sf::testing

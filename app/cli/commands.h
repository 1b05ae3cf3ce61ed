// stepformer-cli subcommands: one file per command in app/cli/, registered in the table in main.cpp.
// Each returns the process exit code; sf::Error escaping a command is printed by main and gives exit code 1.
#pragma once
#include <string>
#include <vector>

namespace sf::cli {

using Args = std::vector<std::string>;  // the arguments after the subcommand name

struct Command {
  const char* name;
  const char* summary;  // one line for `stepformer-cli --help`
  int (*run)(const Args& args);
};

// The registry, defined in main.cpp.
const std::vector<Command>& commands();

}  // namespace sf::cli

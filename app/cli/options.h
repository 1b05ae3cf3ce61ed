// A small option parser shared by the CLI subcommands: `--name VALUE` and `--flag`, with clear messages for
// a missing or malformed value. Positional arguments are collected in order.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "cli/commands.h"

namespace sf::cli {

class OptionParser {
 public:
  explicit OptionParser(std::string command) : command_(std::move(command)) {}
  void flag(const std::string& name, bool* out);
  void value(const std::string& name, std::string* out);
  void value(const std::string& name, int* out, int lo, int hi);
  void value(const std::string& name, float* out, float lo, float hi);
  void value(const std::string& name, uint64_t* out);
  // Calls `apply` with the value; `apply` returns an error message or "".
  void custom(const std::string& name, std::function<std::string(const std::string&)> apply);

  // Parses; on an error prints it (naming the command) and returns false. --help sets help_requested().
  bool parse(const Args& args);
  bool help_requested() const { return help_; }
  const std::vector<std::string>& positional() const { return positional_; }

 private:
  struct Option {
    std::string name;
    bool takes_value;
    std::function<std::string(const std::string&)> apply;
  };
  std::string command_;
  std::vector<Option> options_;
  std::vector<std::string> positional_;
  bool help_ = false;
};

}  // namespace sf::cli

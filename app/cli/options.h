// A small option parser shared by the CLI subcommands: `--name VALUE` and `--flag`, with clear messages for
// a missing or malformed value. Positional arguments are collected in order. An option with a value given twice
// (--beam 2 --beam 3) is refused, naming both values, unless it is declared `repeated` (--head-off, one head
// each); every mistake is bad usage: parse() returns false and the command exits with 2.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "backend/device.h"
#include "cli/commands.h"
#include "transformer/interventions.h"

namespace sf::cli {

// Space-separated token ids (--ids, --prompt-ids): ErrorKind::Input naming `what` and the word that is not one.
std::vector<int> parse_token_ids(const std::string& text, const std::string& command, const std::string& what);

class OptionParser {
 public:
  explicit OptionParser(std::string command) : command_(std::move(command)) {}
  void flag(const std::string& name, bool* out);
  void value(const std::string& name, std::string* out);
  // A text whose presence counts, empty or not (--src "": given, and refused by the command as no words).
  void value(const std::string& name, std::string* out, bool* given);
  void value(const std::string& name, int* out, int lo, int hi);
  void value(const std::string& name, float* out, float lo, float hi);
  void value(const std::string& name, uint64_t* out);
  // auto, cpu or cuda (backend/device.h).
  void device(const std::string& name, DeviceRequest* out);
  // Calls `apply` with the value; `apply` returns an error message or "".
  void custom(const std::string& name, std::function<std::string(const std::string&)> apply);
  // The same for an option that may be given more than once: `apply` is called with each value in turn.
  void repeated(const std::string& name, std::function<std::string(const std::string&)> apply);

  // Parses; on an error prints it (naming the command) and returns false. --help sets help_requested().
  bool parse(const Args& args);
  bool help_requested() const { return help_; }
  const std::vector<std::string>& positional() const { return positional_; }

 private:
  struct Option {
    std::string name;
    bool takes_value;
    std::function<std::string(const std::string&)> apply;
    bool repeats = false;
  };
  std::string command_;
  std::vector<Option> options_;
  std::vector<std::string> positional_;
  bool help_ = false;
};

// The interventions a pass can be run under, as trace and attribute take them: --head-off KIND.L.H (repeatable),
// --no-causal-mask, --no-padding-mask, --no-pos-encoding. add_to() before parse(), result() after.
class InterventionOptions {
 public:
  void add_to(OptionParser& parser);
  Interventions result() const;
  static const char* help();  // the options' lines for a command's --help

 private:
  std::vector<HeadRef> heads_off_;
  bool no_causal_ = false, no_padding_ = false, no_positions_ = false;
};

// The interventions as an output file's metadata records them (JSON: heads_off as index text "enc.0.3", as the
// tensor names number layers; causal_mask, padding_mask, positional_encoding).
std::string interventions_metadata(const Interventions& iv);

}  // namespace sf::cli

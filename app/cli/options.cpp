#include "cli/options.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "util/error.h"
#include "util/printable.h"

namespace sf::cli {

std::vector<int> parse_token_ids(const std::string& text, const std::string& command, const std::string& what) {
  std::vector<int> ids;
  std::istringstream in(text);
  std::string word;
  while (in >> word) {
    size_t used = 0;
    int id = 0;
    try {
      id = std::stoi(word, &used);
    } catch (...) {
      used = 0;
    }
    if (used != word.size()) fail(ErrorKind::Input, command, what + ": '" + word + "' is not a token id");
    ids.push_back(id);
  }
  return ids;
}

void OptionParser::flag(const std::string& name, bool* out) {
  options_.push_back({name, false, [out](const std::string&) {
                        *out = true;
                        return std::string();
                      }});
}

void OptionParser::value(const std::string& name, std::string* out) {
  options_.push_back({name, true, [out](const std::string& v) {
                        *out = v;
                        return std::string();
                      }});
}

void OptionParser::value(const std::string& name, std::string* out, bool* given) {
  options_.push_back({name, true, [out, given](const std::string& v) {
                        *out = v;
                        *given = true;
                        return std::string();
                      }});
}

void OptionParser::value(const std::string& name, int* out, int lo, int hi) {
  options_.push_back({name, true, [=](const std::string& v) {
                        char* end = nullptr;
                        const long x = std::strtol(v.c_str(), &end, 10);
                        if (v.empty() || *end || x < lo || x > hi)
                          return "needs a whole number from " + std::to_string(lo) + " to " + std::to_string(hi);
                        *out = static_cast<int>(x);
                        return std::string();
                      }});
}

void OptionParser::value(const std::string& name, float* out, float lo, float hi) {
  options_.push_back({name, true, [=](const std::string& v) {
                        char* end = nullptr;
                        const float x = std::strtof(v.c_str(), &end);
                        if (v.empty() || *end || !(x >= lo && x <= hi)) {
                          // (%g: 1e-07 and 10 as they are; std::to_string printed 1e-7 as 0.000000)
                          char range[96];
                          std::snprintf(range, sizeof range, "needs a number from %g to %g", static_cast<double>(lo),
                                        static_cast<double>(hi));
                          return std::string(range);
                        }
                        *out = x;
                        return std::string();
                      }});
}

void OptionParser::value(const std::string& name, uint64_t* out) {
  options_.push_back({name, true, [=](const std::string& v) {
                        char* end = nullptr;
                        errno = 0;
                        const unsigned long long x = std::strtoull(v.c_str(), &end, 10);
                        if (v.empty() || *end || v[0] == '-' || errno == ERANGE)
                          return std::string("needs a whole number from 0 to 18446744073709551615");
                        *out = x;
                        return std::string();
                      }});
}

void OptionParser::device(const std::string& name, DeviceRequest* out) {
  options_.push_back({name, true, [out](const std::string& v) {
                        if (v != "auto" && v != "cpu" && v != "cuda") return std::string("needs auto, cpu or cuda");
                        *out = v == "auto" ? DeviceRequest::Auto : v == "cpu" ? DeviceRequest::Cpu : DeviceRequest::Cuda;
                        return std::string();
                      }});
}

void OptionParser::custom(const std::string& name, std::function<std::string(const std::string&)> apply) {
  options_.push_back({name, true, std::move(apply)});
}

void OptionParser::repeated(const std::string& name, std::function<std::string(const std::string&)> apply) {
  options_.push_back({name, true, std::move(apply), true});
}

bool OptionParser::parse(const Args& args) {
  std::map<std::string, std::string> given;  // each option's first value, to name both when one comes again
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      help_ = true;
      return true;
    }
    if (a.size() < 2 || a.compare(0, 2, "--") != 0) {
      positional_.push_back(a);
      continue;
    }
    const Option* found = nullptr;
    for (const Option& o : options_)
      if (o.name == a) found = &o;
    if (!found) {
      std::fprintf(stderr, "stepformer-cli %s: unknown option '%s' (see stepformer-cli %s --help)\n",
                   command_.c_str(), printable(a).c_str(), command_.c_str());
      return false;
    }
    std::string v;
    if (found->takes_value) {
      if (i + 1 >= args.size()) {
        std::fprintf(stderr, "stepformer-cli %s: %s needs a value\n", command_.c_str(), a.c_str());
        return false;
      }
      v = args[++i];
      if (const auto [at, fresh] = given.emplace(a, v); !fresh && !found->repeats) {
        std::fprintf(stderr, "stepformer-cli %s: %s is given twice ('%s', then '%s'): give it once\n", command_.c_str(),
                     a.c_str(), printable(at->second).c_str(), printable(v).c_str());
        return false;
      }
    }
    const std::string error = found->apply(v);
    if (!error.empty()) {
      std::fprintf(stderr, "stepformer-cli %s: %s %s, got '%s'\n", command_.c_str(), a.c_str(), error.c_str(),
                   printable(v).c_str());
      return false;
    }
  }
  return true;
}

void InterventionOptions::add_to(OptionParser& p) {
  p.repeated("--head-off", [this](const std::string& v) {
    try {
      heads_off_.push_back(parse_head_ref(v));
    } catch (const Error& e) {
      return "needs KIND.L.H (KIND enc, dec or cross; layers and heads from 1): " + std::string(e.what());
    }
    return std::string();
  });
  p.flag("--no-causal-mask", &no_causal_);
  p.flag("--no-padding-mask", &no_padding_);
  p.flag("--no-pos-encoding", &no_positions_);
}

Interventions InterventionOptions::result() const {
  Interventions iv;
  iv.heads_off = heads_off_;
  iv.causal_mask = !no_causal_;
  iv.padding_mask = !no_padding_;
  iv.positional_encoding = !no_positions_;
  return iv;
}

const char* InterventionOptions::help() {
  return "  --head-off KIND.L.H switch off head H of layer L of KIND enc, dec or cross, both numbered from 1 as in the\n"
         "                      paper (enc.1.4: encoder layer 1, head 4): its output is zeroed before W^O (repeatable).\n"
         "                      The file's tensor names number layers from 0, as PyTorch's state dicts do\n"
         "  --no-causal-mask    decoder self-attention sees later positions\n"
         "  --no-padding-mask   pad tokens are attended to like any other\n"
         "  --no-pos-encoding   no positional encoding in either embedding\n";
}

std::string interventions_metadata(const Interventions& iv) {
  nlohmann::json heads = nlohmann::json::array();
  for (const HeadRef& h : iv.heads_off) heads.push_back(head_index_text(h));  // indices, as the tensor names
  const nlohmann::json j = {{"heads_off", heads},
                            {"causal_mask", iv.causal_mask},
                            {"padding_mask", iv.padding_mask},
                            {"positional_encoding", iv.positional_encoding}};
  return j.dump();
}

}  // namespace sf::cli

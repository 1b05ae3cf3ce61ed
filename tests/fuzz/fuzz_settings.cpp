// libFuzzer target: the settings file (app/gui/settings.cpp), read at every start of the app from
// $XDG_CONFIG_HOME/stepformer/settings.json, on any bytes, two ways:
//   1. in memory, as the app parses it: the nesting limit (sf::json_nesting_depth > sf::kMaxJsonNesting is
//      refused), nlohmann::json::parse, then sf::gui::settings_from_json;
//   2. as a file: the bytes written to settings.json in a private temporary folder (made once, removed at
//      exit) and read with sf::gui::read_settings, which moves a damaged file aside to settings.json.bad
//      (.bad.2, ...); the folder is emptied after every input so it never grows.
//
// A bug: a crash, a sanitizer report (ASan, UBSan, a leak), a hang, an exception escaping read_settings
// (it throws nothing: every fault becomes SettingsRead::problem), any exception from settings_from_json other
// than the documented std::runtime_error (sf::Error is one), or a broken invariant checked below (abort()):
//   - read_settings agrees with the in-memory parse: no problem and the same settings exactly when the bytes
//     parse, else a problem and the file moved aside to settings.json.bad (or, when that failed, left alone);
//   - settings that were read are within the documented limits and write back (settings_to_json + dump, as
//     write_settings does) and read again the same.
// Run by tests/run_fuzz.sh (seed corpus: tests/fuzz/corpus/settings/).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "gui/options.h"
#include "gui/settings.h"
#include "io/json_text.h"

namespace {

namespace fs = std::filesystem;

void check(bool ok) {
  if (!ok) std::abort();
}

std::string g_dir;

void remove_dir() {
  std::error_code ec;
  if (!g_dir.empty()) fs::remove_all(g_dir, ec);
}

const std::string& folder() {
  if (g_dir.empty()) {
    std::string pattern = (fs::temp_directory_path() / "stepformer-fuzz-settings-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) std::abort();
    g_dir = pattern;
    std::atexit(remove_dir);
  }
  return g_dir;
}

void check_limits(const sf::gui::Settings& s) {
  check(s.recent_models.size() <= static_cast<size_t>(sf::gui::kMaxRecentModels));
  for (size_t i = 0; i < s.recent_models.size(); ++i) {
    check(!s.recent_models[i].empty() && s.recent_models[i].size() <= sf::gui::kMaxSettingsText);
    for (size_t k = 0; k < i; ++k) check(s.recent_models[k] != s.recent_models[i]);
  }
  check(s.last_model.size() <= sf::gui::kMaxSettingsText && s.last_sentence.size() <= sf::gui::kMaxSettingsText &&
        s.last_stage.size() <= sf::gui::kMaxSettingsText);
  check(s.ui_scale >= sf::gui::kMinUiScale && s.ui_scale <= sf::gui::kMaxUiScale);
  // Written back as write_settings writes (dump(2) throws on invalid UTF-8: it must never see any) and read
  // again: the same settings.
  const std::string text = sf::gui::settings_to_json(s).dump(2) + "\n";
  check(sf::gui::settings_from_json(nlohmann::json::parse(text)) == s);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);

  // 1. In memory.
  std::optional<sf::gui::Settings> expected;
  if (sf::json_nesting_depth(text) <= sf::kMaxJsonNesting) {
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!j.is_discarded()) {
      try {
        expected = sf::gui::settings_from_json(j);
      } catch (const std::runtime_error&) {
      }
    }
  }
  if (expected) check_limits(*expected);

  // 2. As a file.
  const std::string path = folder() + "/settings.json";
  if (FILE* f = std::fopen(path.c_str(), "wb")) {
    const bool written = std::fwrite(data, 1, size, f) == size;
    check(std::fclose(f) == 0 && written);
  } else {
    std::abort();
  }
  const sf::gui::SettingsRead r = sf::gui::read_settings(path);
  std::error_code ec;
  if (expected) {
    check(r.problem.empty() && !r.leave_alone && r.settings == *expected);
    check(fs::is_regular_file(path, ec));  // a good file stays where it is
  } else {
    check(!r.problem.empty() && r.settings == sf::gui::Settings{});
    if (!r.leave_alone) check(!fs::exists(path, ec) && fs::is_regular_file(path + ".bad", ec));
  }
  std::vector<fs::path> left;  // settings.json and what was moved aside: listed, then removed
  for (const auto& entry : fs::directory_iterator(folder(), ec)) left.push_back(entry.path());
  for (const fs::path& p : left) fs::remove(p, ec);
  return 0;
}

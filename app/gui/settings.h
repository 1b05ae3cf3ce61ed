// Settings and the last session: recent model files, the last model, sentence and stage, the UI scale.
// Stored as JSON in $XDG_CONFIG_HOME/stepformer/settings.json (else ~/.config/stepformer/settings.json),
// written atomically (a temporary file in the same folder, fsync, rename), so a crash never leaves half a
// file. A damaged file (bad JSON, wrong types) is renamed aside to settings.json.bad (.bad.2, ... when that
// exists), never overwritten, and the defaults are used; the problem is reported once.
//
//   {
//     "version": 1,
//     "recent_models": ["/home/a/de-en.safetensors", ...],   most recent first, at most kMaxRecentModels
//     "last_model": "/home/a/de-en.safetensors",
//     "last_sentence": "Ein Mann ...",
//     "last_stage": "encoder-attention",                    an id of --stage
//     "ui_scale": 1.5,                                      0.5 to 4
//     "language": "ko"                                      en, ko or zh; absent: the system locale's
//   }
#pragma once
#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace sf::gui {

inline constexpr int kMaxRecentModels = 8;
// A settings file is a few hundred bytes; anything past these limits is damage, not settings.
inline constexpr uint64_t kMaxSettingsBytes = 1 << 20;
inline constexpr size_t kMaxSettingsText = 16 * 1024;  // a path or the last sentence
inline constexpr int kSettingsVersion = 1;

struct Settings {
  std::vector<std::string> recent_models;  // most recent first, no duplicates, at most kMaxRecentModels
  std::string last_model;                  // "" = none (the shipped model)
  std::string last_sentence;               // "" = none (the example sentence)
  std::string last_stage;                  // "" = none (tokens)
  float ui_scale = 1.0f;
  std::string language;                    // "" = none chosen (the system locale's); a code from a newer version
                                           // that this one does not speak is kept, and ignored (options.h)

  bool operator==(const Settings& other) const;
  bool operator!=(const Settings& other) const { return !(*this == other); }
};

// Puts `path` first in the recent list (moving it if present) and drops the oldest beyond the limit.
void add_recent_model(Settings& settings, const std::string& path);
void remove_recent_model(Settings& settings, const std::string& path);

nlohmann::json settings_to_json(const Settings& settings);
// Throws std::runtime_error naming the key at fault for a wrong type or value. Unknown keys are ignored (a
// newer version's file still opens).
Settings settings_from_json(const nlohmann::json& j);

// $XDG_CONFIG_HOME/stepformer/settings.json, else $HOME/.config/stepformer/settings.json; "" when neither
// variable is set (settings are then off).
std::string default_settings_path();

struct SettingsRead {
  Settings settings;    // the defaults when the file is missing or damaged
  std::string problem;  // "" or what was wrong and where the damaged file went, for the user
  bool leave_alone = false;  // damaged and could not be moved aside: it must not be written over
};
// A missing file gives the defaults and no problem. A damaged one (not a regular file, over kMaxSettingsBytes,
// bad JSON, nested too deep, wrong types, a text over kMaxSettingsText) is renamed to PATH.bad, or PATH.bad.2,
// .3, ... when earlier copies exist (never replacing one), and reported; the app always starts.
SettingsRead read_settings(const std::string& path);

// Writes atomically (io/user_files.h: a hidden temporary file in the same folder, fsync, rename over PATH;
// never through a link or onto anything but a regular file), creating the folder. Returns ""
// or the reason it failed (the old file is then untouched and no temporary file is left).
std::string write_settings(const Settings& settings, const std::string& path);

// The settings of one run: read at start, written when they change, at most once per `min_interval`, and on
// flush() (exit). A store with an empty path keeps them in memory only (--no-settings).
class SettingsStore {
 public:
  using Clock = std::chrono::steady_clock;
  SettingsStore() = default;  // disabled
  explicit SettingsStore(std::string path, Clock::duration min_interval = std::chrono::seconds(1));
  ~SettingsStore();  // flushes
  SettingsStore(const SettingsStore&) = delete;
  SettingsStore& operator=(const SettingsStore&) = delete;

  bool enabled() const { return !path_.empty(); }
  const std::string& path() const { return path_; }
  const Settings& settings() const { return settings_; }
  // Replaces the settings; they are written by a later save_if_due/flush when they differ from what is stored.
  void update(const Settings& settings) { settings_ = settings; }
  // Writes if something changed and the last write is at least min_interval ago. Returns true if it wrote.
  bool save_if_due(Clock::time_point now = Clock::now());
  void flush();
  // What went wrong reading or writing (a damaged file, a folder that cannot be written); "" if nothing.
  // take_problem returns it once, for the UI.
  const std::string& problem() const { return problem_; }
  std::string take_problem();
  int writes() const { return writes_; }

 private:
  bool write_now(Clock::time_point now);
  std::string path_;
  Clock::duration min_interval_{};
  Settings settings_, stored_;
  Clock::time_point last_write_{};
  std::string problem_;
  bool problem_taken_ = false;
  bool write_failed_ = false;  // reported once, not every second
  int writes_ = 0;
};

}  // namespace sf::gui

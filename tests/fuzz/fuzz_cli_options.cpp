// libFuzzer target: the command lines. The input is split on NUL bytes into words (argv as a shell would hand
// it over), then parsed by
//   1. sf::cli::OptionParser (app/cli/options.cpp) set up as `stepformer-cli train` sets it up (app/cli/
//      cmd_train.cpp: string, int, float and uint64 values, flags), plus a custom option as other commands use;
//   2. sf::gui::parse_app_options (app/gui/options.cpp), the desktop app's options, with argv[0] "stepformer"
//      (when the build found ImGui's headers, which gui/options.cpp includes through gui/script/script.h; see
//      tests/fuzz/CMakeLists.txt; STEPFORMER_FUZZ_APP_OPTIONS is then defined).
// Both print their messages (and --help) themselves: the C streams stdout and stderr are pointed at /dev/null
// once, which leaves libFuzzer's own output and the sanitizers' reports (written to file descriptor 2, or to
// libFuzzer's copy of the stderr stream) where they were.
//
// A bug: a crash, a sanitizer report (ASan, UBSan, a leak), a hang, any exception (neither parser throws), a
// call to exit() (libFuzzer reports "fuzz target exited"; the parsers must return, the caller exits), or a
// broken invariant checked below (abort()): a successful parse leaves every value in its documented range and
// an error always ends the run with exit code 2.
// Run by tests/run_fuzz.sh (seed corpus: tests/fuzz/corpus/cli_options/).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli/options.h"
#include "transformer/interventions.h"
#include "util/error.h"
#ifdef STEPFORMER_FUZZ_APP_OPTIONS
#include "gui/options.h"
#include "gui/stages.h"

// gui/options.cpp's apply_last_session (not fuzzed here) names default_model_path(), which lives in
// gui/app_state.cpp with the whole app state (decoder, trace, every layer): this stand-in keeps it out.
namespace sf::gui {
std::string default_model_path() { return "assets/models/de-en.safetensors"; }
}  // namespace sf::gui
#endif

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

void quiet() {
  // glibc's stdout and stderr are variables: point them at /dev/null. libFuzzer kept its own pointer to the
  // stderr stream at start-up, and ASan/UBSan write to the file descriptor, so their output still shows.
  static FILE* null = [] {
    FILE* f = std::fopen("/dev/null", "w");
    if (!f) std::abort();
    return f;
  }();
  stdout = null;
  stderr = null;
}

void fuzz_cli(const std::vector<std::string>& words) {
  sf::cli::OptionParser p("train");
  std::string data, out, checkpoint, src, tgt, positions, norm, activation, schedule, heads_off;
  int min_freq = 2, max_length = 100, d_model = 256, heads = 8, enc_layers = 3, dec_layers = 3, d_ff = 512;
  int epochs = 20, batch_tokens = 6000, warmup = 4000, threads = 0, final_beam = 4;
  float lr = 1e-3f, dropout = 0.1f, label_smoothing = 0.1f, clip = 1.0f;
  uint64_t seed = 1;
  bool tie = false, no_resume = false, f32 = false;
  p.value("--data", &data);
  p.value("--out", &out);
  p.value("--checkpoint", &checkpoint);
  p.value("--src", &src);
  p.value("--tgt", &tgt);
  p.value("--min-freq", &min_freq, 1, 1000000);
  p.value("--max-length", &max_length, 4, 4096);
  p.value("--d-model", &d_model, 2, 4096);
  p.value("--heads", &heads, 1, 256);
  p.value("--encoder-layers", &enc_layers, 1, 64);
  p.value("--decoder-layers", &dec_layers, 1, 64);
  p.value("--d-ff", &d_ff, 1, 65536);
  p.value("--positions", &positions);
  p.value("--norm", &norm);
  p.value("--activation", &activation);
  p.flag("--tie-output", &tie);
  p.value("--epochs", &epochs, 1, 10000);
  p.value("--batch-tokens", &batch_tokens, 16, 10000000);
  p.value("--lr", &lr, 1e-7f, 10.0f);
  p.value("--warmup", &warmup, 0, 10000000);
  p.value("--schedule", &schedule);
  p.value("--dropout", &dropout, 0.0f, 0.9f);
  p.value("--label-smoothing", &label_smoothing, 0.0f, 0.9f);
  p.value("--clip", &clip, 0.0f, 1e6f);
  p.value("--seed", &seed);
  p.value("--threads", &threads, 0, 256);
  p.value("--final-beam", &final_beam, 1, 64);
  p.flag("--no-resume", &no_resume);
  p.flag("--f32", &f32);
  sf::DeviceRequest device = sf::DeviceRequest::Auto;
  p.device("--device", &device);
  // A repeated option, as `trace --head-off KIND.L.H` takes one: the message of a refused value, or "".
  p.repeated("--head-off", [&](const std::string& v) -> std::string {
    try {
      (void)sf::parse_head_ref(v);
      heads_off += v + " ";
      return "";
    } catch (const sf::Error& e) {
      return std::string("needs KIND.LAYER.HEAD (") + e.what() + ")";
    }
  });
  if (p.parse(words) && !p.help_requested()) {
    check(min_freq >= 1 && min_freq <= 1000000 && max_length >= 4 && max_length <= 4096);
    check(d_model >= 2 && d_model <= 4096 && heads >= 1 && heads <= 256 && d_ff >= 1 && d_ff <= 65536);
    check(enc_layers >= 1 && enc_layers <= 64 && dec_layers >= 1 && dec_layers <= 64);
    check(epochs >= 1 && epochs <= 10000 && batch_tokens >= 16 && batch_tokens <= 10000000);
    check(warmup >= 0 && warmup <= 10000000 && threads >= 0 && threads <= 256 && final_beam >= 1 && final_beam <= 64);
    check(lr >= 1e-7f && lr <= 10.0f && dropout >= 0.0f && dropout <= 0.9f);
    check(label_smoothing >= 0.0f && label_smoothing <= 0.9f && clip >= 0.0f && clip <= 1e6f);
  }
}

#ifdef STEPFORMER_FUZZ_APP_OPTIONS
void fuzz_app(const std::vector<std::string>& words) {
  std::vector<std::string> storage = {"stepformer"};
  storage.insert(storage.end(), words.begin(), words.end());
  std::vector<char*> argv;
  for (std::string& w : storage) argv.push_back(w.data());
  argv.push_back(nullptr);
  const sf::gui::ParsedOptions r = sf::gui::parse_app_options(static_cast<int>(storage.size()), argv.data());
  if (r.exit_code != 0) check(r.exit_now && r.exit_code == 2);
  if (r.exit_now) return;
  const sf::gui::AppOptions& o = r.options;
  check(o.width >= 320 && o.width <= sf::gui::kMaxWindowWidth && o.height >= 240 &&
        o.height <= sf::gui::kMaxWindowHeight);
  check(o.frames >= 1 && o.frames <= 100000);
  check(o.ui_scale >= sf::gui::kMinUiScale && o.ui_scale <= sf::gui::kMaxUiScale);
  sf::gui::Stage stage;
  check(sf::gui::stage_from_name(o.stage, &stage));
  check(o.script_path.empty() || o.lesson_path.empty());
  check(!o.allow_write_folder.empty());
}
#endif

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  quiet();
  std::vector<std::string> words;
  const std::string input(reinterpret_cast<const char*>(data), size);
  for (size_t at = 0; at <= input.size();) {
    const size_t nul = input.find('\0', at);
    const size_t end = nul == std::string::npos ? input.size() : nul;
    words.push_back(input.substr(at, end - at));
    at = end + 1;
  }
  if (size == 0) words.clear();
  fuzz_cli(words);
#ifdef STEPFORMER_FUZZ_APP_OPTIONS
  fuzz_app(words);
#endif
  return 0;
}

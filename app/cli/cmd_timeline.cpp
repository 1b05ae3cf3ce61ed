// stepformer-cli timeline FILE: what a training timeline holds (train/timeline.h: the model's description and
// its snapshots, one line each), and, with --keep and --out, a copy with only the chosen snapshots: how the
// shipped classroom timeline was cut to its size budget from the run's full timeline.
#include <cstdio>
#include <set>
#include <sstream>
#include <string>

#include "cli/commands.h"
#include "cli/options.h"
#include "io/user_files.h"
#include "train/timeline.h"
#include "util/error.h"
#include "util/printable.h"

namespace sf::cli {

namespace {

const char* kUsage =
    "usage: stepformer-cli timeline FILE.timeline.safetensors [--keep STEPS --out OUT] [--storage S] [--force]\n"
    "         [--provenance-from MODEL]\n\n"
    "Prints a training timeline's model (config, vocabularies) and its snapshots: step, epoch, the epoch's\n"
    "running loss, and validation BLEU where the snapshot is an epoch's end.\n\n"
    "  --keep STEPS   with --out: keep only the snapshots of these steps (comma-separated, e.g. 0,50,100,153)\n"
    "  --out OUT      write the kept snapshots as a new timeline (never over FILE; an existing OUT only with\n"
    "                 --force)\n"
    "  --storage S    how OUT stores the weights: int8-rows, f16 or f32 (default: as FILE)\n"
    "  --provenance-from MODEL   with --out: OUT's provenance is MODEL's (the model file the same run wrote:\n"
    "                 its training command, history and scores), checked to be the same model first\n";

// "0,50,100" -> {0, 50, 100}; "" on success, else the problem.
std::string parse_steps(const std::string& text, std::set<int64_t>& steps) {
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    size_t used = 0;
    long long value = -1;
    try {
      value = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || value < 0)
      return "--keep takes steps separated by commas (0,50,100); '" + printable(item) + "' is not a step";
    steps.insert(value);
  }
  if (steps.empty()) return "--keep names no step";
  return "";
}

}  // namespace

int run_timeline(const Args& args) {
  OptionParser p("timeline");
  std::set<int64_t> keep;
  std::string out, storage_name, provenance_from;
  bool force = false;
  p.custom("--keep", [&](const std::string& v) { return parse_steps(v, keep); });
  p.value("--out", &out);
  p.value("--storage", &storage_name);
  p.flag("--force", &force);
  p.value("--provenance-from", &provenance_from);
  if (!p.parse(args)) return 2;
  if (p.help_requested() || p.positional().size() != 1) {
    std::fputs(kUsage, p.help_requested() ? stdout : stderr);
    return p.help_requested() ? 0 : 2;
  }
  if (keep.empty() != out.empty() || (!provenance_from.empty() && out.empty())) {
    std::fprintf(stderr, "stepformer-cli timeline: --keep and --out go together (see stepformer-cli timeline --help)\n");
    return 2;
  }
  const std::string& path = p.positional()[0];
  SnapshotStorage storage = SnapshotStorage::F32;
  if (!storage_name.empty() && !snapshot_storage_from_name(storage_name, storage)) {
    std::fprintf(stderr, "stepformer-cli timeline: --storage takes int8-rows, f16 or f32, not '%s'\n",
                 printable(storage_name).c_str());
    return 2;
  }
  const WriteRules rules{force, {path, provenance_from}, {}};  // (the inputs: never written over, --force or not)
  if (!out.empty()) {  // refused before the read: a wrong OUT says so at once
    const std::string problem = check_output_path(out, rules);
    if (!problem.empty()) fail(ErrorKind::File, "timeline", problem);
  }
  TrainingTimeline timeline = load_timeline(path);
  const Config& c = timeline.model.config;
  std::printf("timeline    %s\n", printable(path).c_str());
  if (c.has_encoder() && c.has_decoder())
    std::printf("model       d_model %d, %d heads, %d+%d layers, d_ff %d; vocabularies %d / %d\n", c.d_model,
                c.n_heads, c.n_encoder_layers, c.n_decoder_layers, c.d_ff, timeline.model.src_vocab.size(),
                timeline.model.tgt_vocab.size());
  else  // one stack (GPT, BERT): its layers and its one vocabulary
    std::printf("model       %s, d_model %d, %d heads, %d layers, d_ff %d; vocabulary %d\n", to_string(c.stacks),
                c.d_model, c.n_heads, c.has_decoder() ? c.n_decoder_layers : c.n_encoder_layers, c.d_ff,
                c.has_decoder() ? timeline.model.tgt_vocab.size() : timeline.model.src_vocab.size());
  std::printf("storage     %s: %s\n", snapshot_storage_name(timeline.storage),
              snapshot_storage_description(timeline.storage).c_str());
  // An epoch's end carries the validation score: BLEU for a translator, perplexity for a language model.
  const bool language_model = !(c.has_encoder() && c.has_decoder());
  std::printf("snapshots   %zu\n\n    step  epoch    loss  %s\n", timeline.snapshots.size(),
              language_model ? "valid perplexity" : "valid BLEU");
  for (const TimelineSnapshot& s : timeline.snapshots) {
    std::printf("  %6lld  %5d  %6.3f", static_cast<long long>(s.step), s.epoch, s.loss);
    if (s.valid_bleu >= 0) std::printf("  %10.2f", s.valid_bleu);
    if (s.valid_perplexity >= 0) std::printf("  %16.2f", s.valid_perplexity);
    std::printf("%s\n", keep.count(s.step) ? "   kept" : "");
  }
  if (out.empty()) return 0;
  std::vector<TimelineSnapshot> kept;
  for (TimelineSnapshot& s : timeline.snapshots)
    if (keep.count(s.step)) kept.push_back(std::move(s));
  for (int64_t step : keep) {
    bool found = false;
    for (const TimelineSnapshot& s : kept) found = found || s.step == step;
    if (!found)
      fail(ErrorKind::Input, "timeline", "--keep names step " + std::to_string(step) + ", which has no snapshot in '" +
                                             printable(path) + "'");
  }
  timeline.snapshots = std::move(kept);
  if (!provenance_from.empty()) {  // the run's model file says what made it: the same model, or refused
    const Model model = load_model(provenance_from, nullptr, /*read_weights=*/false);
    if (config_to_json(model.config) != config_to_json(timeline.model.config) ||
        model.src_vocab.tokens() != timeline.model.src_vocab.tokens() ||
        model.tgt_vocab.tokens() != timeline.model.tgt_vocab.tokens())
      fail(ErrorKind::Input, "timeline", "'" + printable(provenance_from) +
                                             "' is another model (its config or vocabularies differ from the "
                                             "timeline's): its provenance does not describe this run");
    timeline.model.provenance = model.provenance;
  }
  std::string command = "stepformer-cli timeline";
  for (const std::string& a : args) command += " " + a;
  if (!timeline.model.provenance.is_object())
    timeline.model.provenance = {{"earlier", timeline.model.provenance}};
  timeline.model.provenance["cut"] = {{"from", path}, {"command", command}};
  save_timeline(timeline, out, storage_name.empty() ? timeline.storage : storage, rules);
  std::printf("\nwrote %s: %zu snapshots, %s\n", printable(out).c_str(), timeline.snapshots.size(),
              snapshot_storage_name(storage_name.empty() ? timeline.storage : storage));
  return 0;
}

}  // namespace sf::cli

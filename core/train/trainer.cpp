#include "train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "io/json_text.h"
#include "io/safetensors.h"
#include "io/user_files.h"
#include "util/memory.h"
#include "util/parallel.h"
#include "model/hf_marian.h"
#include "model/model.h"
#include "model/name_tables.h"
#include "model/sentencepiece.h"
#include "train/batched_model.h"
#include "train/corpus.h"
#include "train/evaluate.h"
#include "train/init.h"
#include "train/masking.h"
#include "train/parameters.h"
#include "train/timeline.h"
#include "util/error.h"

namespace sf {

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string corpus_path(const TrainOptions& o, const std::string& split, const std::string& language,
                        bool raw_text) {
  return (std::filesystem::path(o.data_dir) / (split + (raw_text ? "." : ".lc.norm.tok.") + language)).string();
}
std::string corpus_path(const TrainOptions& o, const std::string& split, const std::string& language) {
  return corpus_path(o, split, language, o.raw_text);
}

// What a language model's perplexity is, as its provenance says it.
constexpr const char* kPerplexityDefinition =
    "per token: exp of the mean of -ln p(token | <bos> and the tokens before it) over every predicted token, "
    "each word (an unknown one as <unk>) and each sentence's <eos>; the tokens are words, so it is per-word "
    "perplexity";

// A decoder-only model learns its language's next word: one side of the corpus, no source.
bool is_language_model(const TrainOptions& o) { return o.model.stacks == ModelStacks::DecoderOnly; }
// An encoder-only model learns to fill in its language's masked words (train/masking.h): one side, no target.
bool is_masked_language_model(const TrainOptions& o) { return o.model.stacks == ModelStacks::EncoderOnly; }

// What a masked language model's test figures are, as its provenance says them.
constexpr const char* kMaskedScoreDefinition =
    "over the chosen positions of each test caption, masked as training masks by default (15% of the words, at "
    "least one, of them 80% [MASK], 10% a random word, 10% kept) with the fixed masking seed `masking_seed`: "
    "accuracy = share where the most probable token is the original word (an unknown one as <unk>); perplexity = "
    "exp of the mean of -ln p(original word | the masked caption)";

// The masking of a training epoch: the run's rate and seed (validation and test: evaluation_masking, fixed).
MaskingSettings training_masking(const Config& config, const TrainOptions& o, int epoch) {
  MaskingSettings m = evaluation_masking(config);
  m.rate = o.mask_rate;
  m.seed = o.seed;
  m.epoch = epoch;
  return m;
}

// What a run's files say made them (the model file adds its scores; a timeline has this alone).
json run_provenance(const TrainOptions& o) {
  if (is_masked_language_model(o))
    return {{"dataset", "Multi30k task 1, " + o.target_language +
                            " captions alone (a masked language model: the masked words of each caption), tokenized "
                            "lowercase (*.lc.norm.tok.*), vocabulary min frequency " + std::to_string(o.min_frequency) +
                            " plus [MASK]"},
            {"objective", "masked-token cross-entropy: reads <bos> w1 .. wn <eos> with " +
                              std::to_string(static_cast<int>(std::lround(100 * o.mask_rate))) +
                              "% of the words chosen (80% [MASK], 10% a random word, 10% kept), predicts the "
                              "original words at the chosen positions"},
            {"command", o.command_line},
            {"trainer", std::string("stepformer-cli train ") + STEPFORMER_VERSION},
            {"epochs_planned", o.epochs}};
  if (is_language_model(o))
    return {{"dataset", "Multi30k task 1, " + o.target_language +
                            " captions alone (a language model: the next word of each caption), tokenized lowercase "
                            "(*.lc.norm.tok.*), vocabulary min frequency " + std::to_string(o.min_frequency)},
            {"objective", "next-token cross-entropy: reads <bos> w1 .. wn, predicts w1 .. wn <eos>"},
            {"command", o.command_line},
            {"trainer", std::string("stepformer-cli train ") + STEPFORMER_VERSION},
            {"epochs_planned", o.epochs}};
  if (!o.from_model.empty())
    return {{"dataset", o.data_dir + " (" + o.source_language + "-" + o.target_language +
                            (o.raw_text ? ", raw text, split by the model's SentencePiece models)" : ", tokenized)")},
            {"fine_tuned_from", o.from_model},
            {"command", o.command_line},
            {"trainer", std::string("stepformer-cli train ") + STEPFORMER_VERSION},
            {"epochs_planned", o.epochs}};
  if (!o.subwords_path.empty())
    return {{"dataset", "Multi30k task 1, " + o.source_language + "-" + o.target_language +
                            ", tokenized lowercase (*.lc.norm.tok.*), each word split into the byte-pair pieces of '" +
                            o.subwords_path + "', one vocabulary shared by both languages"},
            {"command", o.command_line},
            {"trainer", std::string("stepformer-cli train ") + STEPFORMER_VERSION},
            {"epochs_planned", o.epochs}};
  return {{"dataset", "Multi30k task 1, " + o.source_language + "-" + o.target_language +
                          ", tokenized lowercase (*.lc.norm.tok.*), vocabularies min frequency " +
                          std::to_string(o.min_frequency)},
          {"command", o.command_line},
          {"trainer", std::string("stepformer-cli train ") + STEPFORMER_VERSION},
          {"epochs_planned", o.epochs}};
}

// The files training reads: never to be written over by its outputs.
std::vector<std::string> data_files(const TrainOptions& o) {
  std::vector<std::string> files;
  for (const std::string& split : {std::string("train"), std::string("val"), o.test_name})
    for (const std::string& language : {o.source_language, o.target_language})
      for (bool raw : {false, true}) files.push_back(corpus_path(o, split, language, raw));
  return files;
}

// What training reads and must never write over: the data files, and the model it starts from (a file, or a
// Hugging Face folder with every file in it: io/user_files.h compares by identity).
std::vector<std::string> train_inputs(const TrainOptions& o) {
  std::vector<std::string> files = data_files(o);
  if (!o.from_model.empty()) files.push_back(o.from_model);
  if (!o.subwords_path.empty()) files.push_back(o.subwords_path);  // (never written over by the model it makes)
  return files;
}

// Two outputs that would be one file: the same name, or (both there) the same device and inode.
bool same_path(const std::string& a, const std::string& b) {
  std::error_code ec;
  if (std::filesystem::weakly_canonical(a, ec) == std::filesystem::weakly_canonical(b, ec)) return true;
  return std::filesystem::exists(a, ec) && std::filesystem::exists(b, ec) && std::filesystem::equivalent(a, b, ec);
}

// A rough upper estimate of training's memory, checked before anything is allocated, so an absurd model size is
// refused with the numbers instead of dying of bad_alloc an hour in. Weights, gradients and Adam's two moments:
// 4 floats per parameter; activations kept for the backward pass, per token of a batch and per layer: about 24
// vectors of d_model, 3 of d_ff and 4 attention rows per head of the longest sentence; and the output layer's
// logits, probabilities and their gradient.
void check_training_memory(const Config& config, const TrainOptions& o) {
  double parameters = 0;
  for (const TensorSpec& spec : weight_layout("stepformer", config)) parameters += static_cast<double>(spec.numel());
  const double layers = config.n_encoder_layers + config.n_decoder_layers;
  const double per_token = layers * (24.0 * config.d_model + 3.0 * config.d_ff + 4.0 * config.n_heads * o.max_length) +
                           3.0 * config.output_vocab_size();
  // weights, gradients, Adam's two moments, and the last epochs' weights kept for checkpoint averaging
  const double kept = o.average_last > 1 ? o.average_last + 1.0 : 0.0;  // (+1: their mean at the end)
  const double bytes = 4.0 * ((4.0 + kept) * parameters + per_token * o.batch_tokens);
  const double memory = physical_memory_bytes();
  if (bytes > 0.8 * memory) {
    char text[400];
    std::snprintf(text, sizeof text,
                  "this model (%.0f million parameters) with --batch-tokens %d needs about %.1f GB to train; this "
                  "machine has %.1f GB of memory: choose a smaller --d-model, --d-ff, --heads, layer count or "
                  "--batch-tokens",
                  parameters / 1e6, o.batch_tokens, bytes / 1e9, memory / 1e9);
    fail(ErrorKind::Config, "train", text);
  }
}

json epoch_to_json(const EpochRecord& e) {
  return {{"epoch", e.epoch},           {"train_loss", e.train_loss}, {"train_nll", e.train_nll},
          {"valid_nll", e.valid_nll},   {"valid_bleu", e.valid_bleu}, {"seconds", e.seconds},
          {"tokens_per_second", e.tokens_per_second}, {"learning_rate", e.learning_rate},
          {"valid_masked_accuracy", e.valid_masked_accuracy}};
}

EpochRecord epoch_from_json(const json& j) {
  EpochRecord e;
  e.epoch = j.at("epoch");
  e.train_loss = j.at("train_loss");
  e.train_nll = j.at("train_nll");
  e.valid_nll = j.at("valid_nll");
  e.valid_bleu = j.at("valid_bleu");
  e.seconds = j.at("seconds");
  e.tokens_per_second = j.at("tokens_per_second");
  e.learning_rate = j.at("learning_rate");
  e.valid_masked_accuracy = j.value("valid_masked_accuracy", -1.0);  // older checkpoints: none
  return e;
}

// [SECTION] checkpoint: one safetensors file with the weights, Adam's moments and the run's state.
struct RunState {
  int finished_epochs = 0;
  int64_t step = 0;
  TrainResult result;
  // Checkpoint averaging (TrainOptions::average_last): the weights after each of the last epochs, oldest first.
  std::vector<int> recent_epochs;
  std::vector<ModelWeights> recent_weights;
};

void write_checkpoint(const std::string& path, const Config& config, const Vocabulary& src, const Vocabulary& tgt,
                      ModelWeights& weights, Adam& adam, RunState& state, uint64_t seed,
                      const WriteRules& rules) {
  std::vector<TensorToWrite> tensors;
  auto add_all = [&](const std::string& prefix, ModelWeights& w) {
    for (const ParameterView& p : parameter_views(w))
      tensors.push_back({prefix + p.name, {p.size}, std::span<const float>(p.data, static_cast<size_t>(p.size))});
  };
  add_all("weights.", weights);
  add_all("adam_m.", adam.first_moment());
  add_all("adam_v.", adam.second_moment());
  for (size_t k = 0; k < state.recent_weights.size(); ++k)
    add_all("epoch" + std::to_string(state.recent_epochs[k]) + ".", state.recent_weights[k]);
  json history = json::array();
  for (const auto& e : state.result.history) history.push_back(epoch_to_json(e));
  const json meta = {{"finished_epochs", state.finished_epochs}, {"step", state.step},
                     {"best_epoch", state.result.best_epoch}, {"best_valid_bleu", state.result.best_valid_bleu},
                     {"wall_seconds", state.result.wall_seconds}, {"seed", seed},
                     {"config", config_to_json(config)}, {"history", history},
                     {"recent_epochs", state.recent_epochs}};
  write_safetensors(path, tensors,
                    {{"stepformer_checkpoint", meta.dump()}, {"src_vocab", src.to_json().dump()},
                     {"tgt_vocab", tgt.to_json().dump()}},
                    DType::F32, rules);
}

// Restores weights, Adam and the run state; checks that the checkpoint belongs to this run.
RunState read_checkpoint(const std::string& path, const Config& config, const Vocabulary& src, const Vocabulary& tgt,
                         uint64_t seed, ModelWeights& weights, Adam& adam) {
  const SafetensorsFile file = SafetensorsFile::open(path);
  auto meta_it = file.metadata().find("stepformer_checkpoint");
  if (meta_it == file.metadata().end())
    fail(ErrorKind::Format, "train", "'" + path + "' is not a Stepformer training checkpoint");
  // Depth-limited like every JSON a user's file holds (io/json_text.h).
  const json meta = parse_json_text(meta_it->second, "train", "checkpoint '" + path + "': the metadata");
  if (!meta.is_object()) fail(ErrorKind::Format, "train", "checkpoint '" + path + "': the metadata is not a JSON object");
  const auto text_of = [&](const char* key) {
    const auto it = file.metadata().find(key);
    return it == file.metadata().end() ? std::string() : it->second;
  };
  // Each field of the run state is read as the type it must be: a damaged one is named with the file, never
  // passed on as JSON's own message.
  const auto field = [&](const char* key) -> const json& {
    const auto it = meta.find(key);
    if (it == meta.end()) fail(ErrorKind::Format, "train", "checkpoint '" + path + "': the run state lacks '" + key +
                                                             "'; delete it or pass --no-resume");
    return *it;
  };
  const auto whole_number = [&](const char* key, int64_t most) -> int64_t {
    const json& v = field(key);
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > most)
      fail(ErrorKind::Format, "train", "checkpoint '" + path + "': '" + key + "' is " + v.dump() + ", not a whole " +
                                           "number from 0 to " + std::to_string(most) + "; delete it or pass --no-resume");
    return v.get<int64_t>();
  };
  if (!field("seed").is_number_unsigned())
    fail(ErrorKind::Format, "train", "checkpoint '" + path + "': 'seed' is " + field("seed").dump() +
                                         ", not a whole number; delete it or pass --no-resume");
  if (meta.value("config", json()) != config_to_json(config) || field("seed").get<uint64_t>() != seed ||
      text_of("src_vocab") != src.to_json().dump() || text_of("tgt_vocab") != tgt.to_json().dump())
    fail(ErrorKind::Input, "train",
         "checkpoint '" + path + "' belongs to another run (different model, data or seed); delete it or pass "
         "--no-resume");
  auto load_all = [&](const std::string& prefix, ModelWeights& w) {
    for (const ParameterView& p : parameter_views(w)) {
      const TensorView* t = file.find(prefix + p.name);
      if (!t) fail(ErrorKind::Missing, "train", "checkpoint '" + path + "' lacks '" + prefix + p.name + "'");
      if (t->numel() != p.size) fail(ErrorKind::Shape, "train", "checkpoint tensor '" + prefix + p.name + "' has the wrong size");
      t->read_floats(std::span<float>(p.data, static_cast<size_t>(p.size)));
      // A damaged value would resume and only show as a loss of nan steps later, naming nothing: said here.
      for (int64_t i = 0; i < p.size; ++i)
        if (!std::isfinite(p.data[i]) || (prefix == "adam_v." && p.data[i] < 0.0f))
          fail(ErrorKind::Value, "train",
               "checkpoint '" + path + "' is damaged: '" + prefix + p.name + "' holds " +
                   (std::isfinite(p.data[i]) ? "a negative second moment" : std::isnan(p.data[i]) ? "NaN" : "Inf") +
                   " at index " + std::to_string(i) + "; delete it or pass --no-resume");
    }
  };
  load_all("weights.", weights);
  load_all("adam_m.", adam.first_moment());
  load_all("adam_v.", adam.second_moment());
  RunState s;
  // (epochs as --epochs allows; steps: 2^40, far past any run, far below what would overflow the schedule)
  s.finished_epochs = static_cast<int>(whole_number("finished_epochs", 10000));
  s.step = whole_number("step", int64_t{1} << 40);
  try {
    s.result.best_epoch = meta.at("best_epoch");
    s.result.best_valid_bleu = meta.at("best_valid_bleu");
    s.result.wall_seconds = meta.at("wall_seconds");
    for (const auto& e : meta.at("history")) s.result.history.push_back(epoch_from_json(e));
  } catch (const json::exception& e) {
    fail(ErrorKind::Format, "train", "checkpoint '" + path + "': the run state is damaged (" + e.what() +
                                         "); delete it or pass --no-resume");
  }
  if (s.finished_epochs != static_cast<int>(s.result.history.size()) || s.result.best_epoch < 0 ||
      s.result.best_epoch > static_cast<int>(s.result.history.size()) || (s.finished_epochs > 0) != (s.step > 0))
    fail(ErrorKind::Format, "train", "checkpoint '" + path + "': the run state is inconsistent (epoch " +
                                         std::to_string(s.finished_epochs) + ", step " + std::to_string(s.step) +
                                         "); delete it or pass --no-resume");
  // The last epochs' weights for checkpoint averaging; a checkpoint from before averaging has none (the run's
  // own weights, those of its last finished epoch, start the list then).
  if (const auto it = meta.find("recent_epochs"); it != meta.end()) {
    if (!it->is_array() || it->size() > 100)
      fail(ErrorKind::Format, "train", "checkpoint '" + path + "': 'recent_epochs' is not a list of epochs; delete it "
                                       "or pass --no-resume");
    for (const json& e : *it) {
      if (!e.is_number_integer() || e.get<int>() < 1 || e.get<int>() > s.finished_epochs ||
          (!s.recent_epochs.empty() && e.get<int>() <= s.recent_epochs.back()))
        fail(ErrorKind::Format, "train", "checkpoint '" + path + "': 'recent_epochs' holds " + e.dump() +
                                             ", not one of the finished epochs in order; delete it or pass --no-resume");
      s.recent_epochs.push_back(e.get<int>());
      s.recent_weights.push_back(zeros_like(weights));
      load_all("epoch" + std::to_string(s.recent_epochs.back()) + ".", s.recent_weights.back());
    }
  }
  if (s.recent_epochs.empty() && s.finished_epochs > 0) {
    s.recent_epochs.push_back(s.finished_epochs);
    s.recent_weights.push_back(weights);
  }
  adam.set_step_count(s.step);
  return s;
}

}  // namespace

ModelWeights average_weights(const std::vector<const ModelWeights*>& weights) {
  if (weights.empty()) fail(ErrorKind::Input, "average_weights", "no weights to average");
  ModelWeights mean = zeros_like(*weights.front());
  const std::vector<ParameterView> out = parameter_views(mean);
  // parameter_views needs mutable models (it drops packed copies): copies, so the callers' stay as they are
  std::vector<ModelWeights> copies;
  std::vector<std::vector<ParameterView>> in;
  copies.reserve(weights.size());  // the views point into the copies: they must not move
  for (const ModelWeights* w : weights) {
    copies.push_back(*w);
    in.push_back(parameter_views(copies.back()));
  }
  for (size_t k = 0; k < in.size(); ++k) {
    if (in[k].size() != out.size())
      fail(ErrorKind::Shape, "average_weights", "model " + std::to_string(k + 1) + " has another shape");
    for (size_t p = 0; p < out.size(); ++p)
      if (in[k][p].name != out[p].name || in[k][p].size != out[p].size)
        fail(ErrorKind::Shape, "average_weights", "model " + std::to_string(k + 1) + "'s '" + in[k][p].name +
                                                      "' differs in shape from the first's");
  }
  for (size_t p = 0; p < out.size(); ++p)
    for (Eigen::Index i = 0; i < out[p].size; ++i) {
      double sum = 0;
      for (const auto& views : in) sum += views[p].data[i];
      out[p].data[i] = static_cast<float>(sum / static_cast<double>(in.size()));
    }
  return mean;
}

struct Trainer::State {
  TrainOptions o;
  TrainLog log_fn;
  std::string checkpoint;
  WriteRules outputs;
  bool writes = false;  // out_path given: the model and the checkpoint are written
  bool language_model = false;  // decoder-only: the next word of one language's sentences, scored by perplexity
  bool masked_lm = false;       // encoder-only: the masked words of one language's sentences (train/masking.h)
  SpecialIds ids;
  ParallelCorpus valid;                    // as read: BLEU's references are valid.target
  std::vector<TokenSequence> valid_source; // what the model translates: tokens, or SentencePiece pieces
  ParallelCorpus valid_pieces;             // a SentencePiece model's validation split in pieces
  std::vector<Example> train_examples, valid_examples;
  Model model;  // config, vocabularies, tokenizer; weights only when written (the best so far)
  ModelWeights weights, grads;
  std::unique_ptr<Adam> adam;
  RunState state;
  BatchTrace trace;
  Mat dlogits;
  // The epoch in progress.
  int epoch = 0;
  std::vector<std::vector<int>> plan;
  size_t next_batch = 0;
  double loss_sum = 0, nll_sum = 0, step_seconds = 0;
  long tokens = 0;
  float lr = 0;
  Clock::time_point epoch_start;
  // Training on the GPU: the weights and Adam's moments live there; `weights` and `adam` on the host are brought up
  // to date when read: the weights for whoever reads them (the app every few seconds), Adam's moments only for a
  // checkpoint or to go on on the CPU (the steps taken since each was last copied).
  std::unique_ptr<CudaModel> gpu;
  int64_t weights_copied_at = 0, adam_copied_at = 0;

  void log(const std::string& s) const {
    if (log_fn) log_fn(s);
  }
  // The host's weights (and, with_adam, Adam's state) = the GPU's.
  void catch_up(bool with_adam) {
    if (!gpu) return;
    if (weights_copied_at != state.step) gpu->download_weights(weights);
    weights_copied_at = state.step;
    if (!with_adam || adam_copied_at == state.step) return;
    gpu->download_adam(adam->first_moment(), adam->second_moment());
    adam->set_step_count(gpu->adam_steps());
    adam_copied_at = state.step;
  }
  // The GPU failed (out of memory, say): its state comes back to the host and the CPU goes on, or, where even
  // that fails, the error says what was lost.
  void leave_gpu(const Error& why) {
    try {
      catch_up(true);
    } catch (const Error&) {
      fail(ErrorKind::Unsupported, "train",
           std::string(why.what()) + "; the GPU's weights could not be read back: resume from the checkpoint of epoch " +
               std::to_string(state.finished_epochs));
    }
    gpu.reset();
    log(std::string("the GPU failed (") + why.what() + "): training goes on on the CPU from step " +
        std::to_string(state.step));
  }
  // After the last epoch, for a language model: the best model as its file stores it (F16 where it does) scored on
  // the test split of its language; the per-token perplexity and its definition into the provenance.
  // The best model as its file stores it and the test split's sentences, for the language models' scores after
  // the last epoch; false where nothing was written or the language has no test file.
  bool best_and_test(Model& best, std::vector<TokenSequence>& sentences) {
    const std::string test_path = corpus_path(o, o.test_name, o.target_language);
    std::error_code ec;
    if (!writes || state.result.best_epoch == 0 || !std::filesystem::exists(test_path, ec)) return false;
    best = load_model(o.out_path);
    sentences = read_sentences(test_path);
    return true;
  }
  // The run's figures every test score is written with, then the file saved again with them.
  void save_scored(Model& best, double perplexity, double mean_nll, long tokens) {
    state.result.test_perplexity = perplexity;
    state.result.test_tokens = tokens;
    best.provenance["test_set"] = o.test_name;
    best.provenance["test_perplexity"] = perplexity;
    best.provenance["test_nll_per_token"] = mean_nll;
    best.provenance["test_tokens"] = tokens;
    best.provenance["wall_seconds"] = state.result.wall_seconds;
    best.provenance["epochs_run"] = state.finished_epochs;
    save_model(best, o.out_path, o.store_f16 ? DType::F16 : DType::F32, outputs);
  }
  void finish_language_model() {
    Model best;
    std::vector<TokenSequence> sentences;
    if (!best_and_test(best, sentences)) return;
    const std::vector<Example> test = make_examples(sentences, best.tgt_vocab);
    const LikelihoodScore score = score_likelihood(best.config, best.weights, test, o.batch_tokens, o.max_length);
    best.provenance["perplexity"] = kPerplexityDefinition;
    save_scored(best, score.perplexity(), score.mean_nll(), score.tokens);
    char line[240];
    std::snprintf(line, sizeof(line), "best epoch %d: %s per-token perplexity %.2f (%ld tokens, <eos> included)",
                  state.result.best_epoch, o.test_name.c_str(), score.perplexity(), score.tokens);
    log(line);
  }
  // After the last epoch, for a masked language model: the best model as its file stores it, scored on the test
  // split with the fixed evaluation masking; accuracy, perplexity and their definition into the provenance.
  void finish_masked_language_model() {
    Model best;
    std::vector<TokenSequence> sentences;
    if (!best_and_test(best, sentences)) return;
    const std::vector<Example> test = masked_lm_examples(sentences, best.src_vocab);
    const MaskedLmScore score = score_masked_lm(best.config, best.weights, test, o.batch_tokens, o.max_length,
                                                evaluation_masking(best.config));
    state.result.test_masked_accuracy = score.accuracy();
    best.provenance["test_masked_accuracy"] = score.accuracy();
    best.provenance["masking_seed"] = kEvaluationMaskingSeed;
    best.provenance["masked_scores"] = kMaskedScoreDefinition;
    save_scored(best, score.perplexity(), score.mean_nll(), score.tokens);
    char line[240];
    std::snprintf(line, sizeof(line),
                  "best epoch %d: %s masked-token accuracy %.2f%%, perplexity %.2f (%ld chosen positions, masking "
                  "seed %llu)",
                  state.result.best_epoch, o.test_name.c_str(), 100.0 * score.accuracy(), score.perplexity(),
                  score.tokens, static_cast<unsigned long long>(kEvaluationMaskingSeed));
    log(line);
  }
  // Checkpoint averaging: the mean of the last epochs' weights, scored on the validation set as every epoch is
  // (greedy) and as the model is used at the end (beam search of final_beam); it becomes the model when its
  // validation BLEU with that beam is above the best single epoch's, scored the same way (chosen on validation,
  // never on the test set). Its provenance names the epochs averaged and the scores.
  void average_last_epochs() {
    TrainResult& r = state.result;
    while (static_cast<int>(state.recent_weights.size()) > o.average_last) {  // a run resumed with a smaller N
      state.recent_epochs.erase(state.recent_epochs.begin());
      state.recent_weights.erase(state.recent_weights.begin());
    }
    if (state.recent_weights.size() < 2) {
      log("checkpoint averaging: fewer than two epochs' weights kept (" + std::to_string(state.recent_weights.size()) +
          "): nothing to average");
      return;
    }
    Model best = load_model(o.out_path);  // the best epoch's file: its provenance and history go on
    if (best.provenance.contains("checkpoint_average")) {  // a finished run run again: decided already
      log("checkpoint averaging: '" + o.out_path + "' is already the average of epochs " +
          best.provenance["checkpoint_average"].value("epochs", json::array()).dump());
      return;
    }
    std::vector<const ModelWeights*> parts;
    for (const ModelWeights& w : state.recent_weights) parts.push_back(&w);
    ModelWeights mean = average_weights(parts);
    attach_packed_weights(mean);
    attach_packed_weights(best.weights);
    const double nll =
        score_likelihood(model.config, mean, valid_examples, o.batch_tokens, o.max_length).mean_nll();
    const auto bleu = [&](const ModelWeights& w, int beam) {
      return 100.0 * corpus_bleu(translations_for_bleu(model, w, valid_source, {beam, o.final_length_penalty, 0}), valid.target).bleu;
    };
    r.averaged_first_epoch = state.recent_epochs.front();
    r.averaged_last_epoch = state.recent_epochs.back();
    r.averaged_valid_bleu = bleu(mean, 1);
    r.averaged_valid_bleu_beam = bleu(mean, o.final_beam);
    r.best_valid_bleu_beam = bleu(best.weights, o.final_beam);
    r.average_is_the_model = r.averaged_valid_bleu_beam > r.best_valid_bleu_beam;
    char line[400];
    std::snprintf(line, sizeof(line),
                  "checkpoint averaging: the mean of epochs %d..%d (%zu): valid ppl %.2f, valid BLEU %.2f greedy, "
                  "%.2f beam %d; best single epoch %d: %.2f greedy, %.2f beam %d: %s",
                  r.averaged_first_epoch, r.averaged_last_epoch, parts.size(), std::exp(nll), r.averaged_valid_bleu,
                  r.averaged_valid_bleu_beam, o.final_beam, r.best_epoch, r.best_valid_bleu, r.best_valid_bleu_beam,
                  o.final_beam, r.average_is_the_model ? "the average is the model" : "the single epoch stays the model");
    log(line);
    if (!writes || !r.average_is_the_model) return;
    parameter_views(mean);  // drops the packed copies before the weights are stored
    best.weights = std::move(mean);
    best.provenance["checkpoint_average"] = {{"epochs", state.recent_epochs},
                                             {"command", o.command_line},
                                             {"valid_bleu_greedy", r.averaged_valid_bleu},
                                             {"valid_bleu_beam", r.averaged_valid_bleu_beam},
                                             {"beam_width", o.final_beam},
                                             {"length_penalty", o.final_length_penalty},
                                             {"valid_perplexity", std::exp(nll)},
                                             {"best_single_epoch", r.best_epoch},
                                             {"best_single_epoch_valid_bleu_greedy", r.best_valid_bleu},
                                             {"best_single_epoch_valid_bleu_beam", r.best_valid_bleu_beam}};
    best.provenance["valid_bleu_greedy"] = r.averaged_valid_bleu;
    best.provenance["valid_perplexity"] = std::exp(nll);
    best.provenance.erase("epoch");
    save_model(best, o.out_path, o.store_f16 ? DType::F16 : DType::F32, outputs);
    log("  wrote the average to '" + o.out_path + "'");
  }

  void start_epoch() {
    epoch = state.finished_epochs + 1;
    plan = plan_batches(train_examples, o.batch_tokens, o.seed, epoch);
    next_batch = 0;
    loss_sum = nll_sum = step_seconds = 0;
    tokens = 0;
    epoch_start = Clock::now();
  }
};

Trainer::Trainer(const TrainOptions& o, TrainLog log_fn) : s_(std::make_unique<State>()) {
  State& s = *s_;
  s.o = o;
  s.log_fn = std::move(log_fn);
  s.writes = !o.out_path.empty();
  // Both outputs are checked before any work: an hour of training must not end in "cannot write".
  s.outputs = WriteRules{.replace = true, .inputs = train_inputs(o), .allowed_folder = ""};
  if (s.writes) {
    s.checkpoint = o.checkpoint_path.empty() ? o.out_path + ".checkpoint" : o.checkpoint_path;
    for (const std::string& path : {o.out_path, s.checkpoint})
      if (const std::string problem = check_output_path(path, s.outputs); !problem.empty())
        fail(ErrorKind::File, "train", problem);
    if (same_path(o.out_path, s.checkpoint))
      fail(ErrorKind::Input, "train", "the checkpoint and the model would be the same file '" + o.out_path +
                                          "': give --checkpoint another path");
  }
  if (o.threads > 0) set_parallel_threads(o.threads);  // the one pool of inference and training (util/parallel.h)

  // The shape decides the objective: translation (encoder-decoder), the next word of one language's sentences
  // (decoder-only), or the masked words of one language's sentences (encoder-only, train/masking.h).
  s.language_model = is_language_model(o);
  s.masked_lm = is_masked_language_model(o);
  if ((s.language_model || s.masked_lm) && !o.from_model.empty())
    fail(ErrorKind::Input, "train", std::string("fine-tuning (--from) starts from a translation model; a ") +
                                        (s.masked_lm ? "encoder" : "decoder") + "-only model is trained from new weights");
  if (s.masked_lm && !(o.mask_rate > 0.0f && o.mask_rate <= 1.0f))
    fail(ErrorKind::Config, "train", "the masking rate must lie in (0, 1], got " + std::to_string(o.mask_rate));
  // Fine-tuning: the model to start from gives the config, vocabularies, tokenizer and weights.
  Model base;
  if (!o.from_model.empty()) {
    std::vector<std::string> warnings;
    base = open_model(o.from_model, &warnings);
    // Its corpus is a translation corpus: the other shapes train through batch_forward (train/batched_model.h).
    require_encoder_decoder(base.config, "train --from-model (a translation corpus)");
    for (const std::string& w : warnings) s.log("warning: " + w);
    s.o.raw_text = base.tokenizer.kind == "sentencepiece";
  }
  const bool fine_tuning = !o.from_model.empty();
  // A subword translator from new weights: the SentencePiece model splits the tokenized words, both sides share
  // its pieces as their vocabulary (`base` holds the tokenizer the pieces come from, for pieces_of).
  const bool new_subwords = !o.subwords_path.empty();
  if (new_subwords) {
    if (fine_tuning || s.language_model || s.masked_lm)
      fail(ErrorKind::Input, "train", "--subwords makes a translator from new weights (not with --from, nor for a "
                                      "decoder-only or encoder-only model)");
    const std::string proto = read_user_file(o.subwords_path, 64ll << 20, "SentencePiece model", "train");
    base.tokenizer.kind = "words_bpe";
    base.tokenizer.source_language = o.source_language;
    base.tokenizer.target_language = o.target_language;
    base.sentencepiece =
        std::make_shared<const SentencePieceModels>(proto, proto, o.subwords_path, o.subwords_path, "train");
    const std::vector<std::string> pieces = base.sentencepiece->known_pieces(Side::Source);
    const SpecialIds ids = default_special_ids();
    for (const auto& [id, name] : {std::pair{ids.unk, "<unk>"}, {ids.pad, "<pad>"}, {ids.bos, "<bos>"}, {ids.eos, "<eos>"}})
      if (id < 0 || id >= static_cast<int>(pieces.size()) || pieces[static_cast<size_t>(id)] != name)
        fail(ErrorKind::Input, "train", "'" + o.subwords_path + "' does not hold " + name + " at id " +
                                            std::to_string(id) + ": learn it with stepformer-cli subwords");
    base.src_vocab = base.tgt_vocab = Vocabulary(pieces, ids, o.subwords_path);
  }
  const bool subwords = s.o.raw_text || new_subwords;

  // Data and vocabularies (from the training split only; a fine-tuned model keeps its own).
  Vocabulary src_vocab, tgt_vocab;
  if (s.masked_lm) {
    // One language's captions, <bos> w1 .. wn <eos> with words masked; the words seen fewer than min_frequency
    // times as <unk>, and [MASK] as the last id.
    const std::vector<TokenSequence> train = read_sentences(corpus_path(s.o, "train", o.target_language));
    const std::vector<TokenSequence> valid = read_sentences(corpus_path(s.o, "val", o.target_language));
    if (train.empty() || valid.empty())
      fail(ErrorKind::Input, "train", std::string("the ") + (train.empty() ? "training" : "validation") +
                                          " split in '" + o.data_dir + "' has no sentences: nothing to train on");
    src_vocab = with_mask_token(build_vocabulary(train, o.min_frequency));
    s.train_examples = masked_lm_examples(train, src_vocab);
    s.valid_examples = masked_lm_examples(valid, src_vocab);
    s.log("data: " + std::to_string(s.train_examples.size()) + " training and " +
          std::to_string(s.valid_examples.size()) + " validation sentences (" + o.target_language +
          ", encoder-only: masked words of each); vocabulary " + std::to_string(src_vocab.size()) +
          " tokens: the words seen at least " + std::to_string(o.min_frequency) + " times and [MASK]");
  } else if (s.language_model) {
    // One language's captions: <bos> w1 .. wn -> w1 .. wn <eos>, words seen fewer than min_frequency times as <unk>.
    const std::vector<TokenSequence> train = read_sentences(corpus_path(s.o, "train", o.target_language));
    const std::vector<TokenSequence> valid = read_sentences(corpus_path(s.o, "val", o.target_language));
    if (train.empty() || valid.empty())
      fail(ErrorKind::Input, "train", std::string("the ") + (train.empty() ? "training" : "validation") +
                                          " split in '" + o.data_dir + "' has no sentences: nothing to train on");
    tgt_vocab = build_vocabulary(train, o.min_frequency);
    s.train_examples = make_examples(train, tgt_vocab);
    s.valid_examples = make_examples(valid, tgt_vocab);
    s.log("data: " + std::to_string(s.train_examples.size()) + " training and " +
          std::to_string(s.valid_examples.size()) + " validation sentences (" + o.target_language +
          ", decoder-only: the next word of each); vocabulary " + std::to_string(tgt_vocab.size()) +
          " words seen at least " + std::to_string(o.min_frequency) + " times");
  } else {
    ParallelCorpus train = read_parallel_corpus(corpus_path(s.o, "train", o.source_language),
                                                corpus_path(s.o, "train", o.target_language));
    s.valid = read_parallel_corpus(corpus_path(s.o, "val", o.source_language), corpus_path(s.o, "val", o.target_language));
    if (train.source.empty() || s.valid.source.empty())
      fail(ErrorKind::Input, "train", std::string("the ") + (train.source.empty() ? "training" : "validation") +
                                          " split in '" + o.data_dir + "' has no sentences: nothing to train on");
    if (subwords) {  // raw text: the model's SentencePiece pieces; the validation references stay words
      train.source = pieces_of(base, train.source, Side::Source);
      train.target = pieces_of(base, train.target, Side::Target);
      s.valid_source = pieces_of(base, s.valid.source, Side::Source);
      s.valid_pieces.source = s.valid_source;
      s.valid_pieces.target = pieces_of(base, s.valid.target, Side::Target);
    }
    src_vocab = fine_tuning || new_subwords ? base.src_vocab : build_vocabulary(train.source, o.min_frequency);
    tgt_vocab = fine_tuning || new_subwords ? base.tgt_vocab : build_vocabulary(train.target, o.min_frequency);
    s.train_examples = make_examples(train, src_vocab, tgt_vocab);
    s.valid_examples = make_examples(subwords ? s.valid_pieces : s.valid, src_vocab, tgt_vocab);
    if (!subwords) s.valid_source = s.valid.source;
    s.log("data: " + std::to_string(s.train_examples.size()) + " training pairs, " +
          std::to_string(s.valid_examples.size()) + " validation pairs; vocabularies " +
          std::to_string(src_vocab.size()) + " (" + o.source_language + ") and " + std::to_string(tgt_vocab.size()) +
          " (" + o.target_language + ") " +
          (fine_tuning    ? "of '" + o.from_model + "'" + (subwords ? " (SentencePiece pieces)" : "")
           : new_subwords ? "of '" + o.subwords_path + "' (shared BPE pieces of the tokenized words)"
                          : "words seen at least " + std::to_string(o.min_frequency) + " times"));
  }

  Config config = fine_tuning ? base.config : o.model;
  if (fine_tuning) {
    s.ids = SpecialIds{config.pad_id, config.bos_id, config.eos_id, config.unk_id};
    if (s.o.max_length > config.max_positions) {  // the model's positions bound what it can read
      s.o.max_length = config.max_positions;
      s.log("sentences are cut to " + std::to_string(config.max_positions) + " tokens, the model's max_positions");
    }
  } else {
    config.src_vocab_size = src_vocab.size();  // 0 for a language model: no source vocabulary
    config.tgt_vocab_size = tgt_vocab.size();
    if (s.language_model) {  // GPT's shape: one decoder stack without cross-attention; the encoder's options unused
      config.n_encoder_layers = 0;
      config.encoder_final_norm = config.share_embeddings = false;
    }
    if (s.masked_lm) {  // BERT's shape: one encoder stack, the output head over its vocabulary, [MASK] the last id
      config.n_decoder_layers = 0;
      config.decoder_final_norm = config.share_embeddings = false;
      config.mask_id = src_vocab.size() - 1;
    }
    s.ids = default_special_ids();
    config.pad_id = s.ids.pad;
    config.bos_id = s.ids.bos;
    config.eos_id = s.ids.eos;
    config.unk_id = s.ids.unk;
    config.max_positions = std::max(config.max_positions, o.max_length);
  }
  config.validate();
  if (config.attention != AttentionStyle::SplitHeads)
    fail(ErrorKind::Unsupported, "train",
         "attention \"reshape_heads\" (the study note's from-scratch model) is for loading the note's own trained "
         "models; the trainer has no backward pass for it (use \"split_heads\")");
  check_training_memory(config, o);

  s.weights = fine_tuning ? std::move(base.weights) : initialize_weights(config, o.seed);
  if (fine_tuning) parameter_views(s.weights);  // drops the packed copies: the floats will change
  s.adam = std::make_unique<Adam>(s.weights, o.adam);
  if (std::error_code ec; s.writes && o.resume && std::filesystem::exists(s.checkpoint, ec)) {
    s.state = read_checkpoint(s.checkpoint, config, src_vocab, tgt_vocab, o.seed, s.weights, *s.adam);
    // The steps those epochs can have taken on this data (an epoch's plan varies a little with the shuffle).
    const int64_t batches = static_cast<int64_t>(plan_batches(s.train_examples, o.batch_tokens, o.seed, 1).size());
    if (s.state.step > 2 * batches * s.state.finished_epochs + batches)
      fail(ErrorKind::Format, "train",
           "checkpoint '" + s.checkpoint + "' says step " + std::to_string(s.state.step) + " after " +
               std::to_string(s.state.finished_epochs) + " epochs of about " + std::to_string(batches) +
               " batches: it is damaged or from other data; delete it or pass --no-resume");
    s.log("resuming from '" + s.checkpoint + "' after epoch " + std::to_string(s.state.finished_epochs) +
          " (step " + std::to_string(s.state.step) + ")");
  }
  if (fine_tuning) {  // the model it started from, as it is: naming, tokenizer, SentencePiece, generation
    s.model = std::move(base);
    s.model.weights = ModelWeights();
  } else {
    s.model.family = "stepformer";
    s.model.config = config;
    s.model.src_vocab = src_vocab;
    s.model.tgt_vocab = tgt_vocab;
    s.model.tokenizer.source_language = s.language_model ? "" : s.masked_lm ? o.target_language : o.source_language;
    s.model.tokenizer.target_language = s.masked_lm ? "" : o.target_language;
    if (new_subwords) {  // the word-level rules, then the pieces of the one SentencePiece model
      s.model.tokenizer.kind = "words_bpe";
      s.model.sentencepiece = base.sentencepiece;
    }
  }
  s.grads = zeros_like(s.weights);
  std::string note;
  s.gpu = open_device(o.device, config, s.weights, &note);
  if (!note.empty()) s.log(note);
  if (s.gpu) {
    try {
      s.gpu->start_training(o.adam, &s.adam->first_moment(), &s.adam->second_moment(), s.adam->step_count());
      s.gpu->set_tf32(o.tf32);
      s.weights_copied_at = s.adam_copied_at = s.state.step;  // the GPU starts from the host's state
      s.log("training on the GPU: " + s.gpu->device_name() + (o.tf32 ? " (matrix products in TF32)" : ""));
    } catch (const Error& e) {
      if (o.device == DeviceRequest::Cuda || e.kind() != ErrorKind::Unsupported) throw;
      s.log(std::string("computing on the CPU: ") + e.what());
      s.gpu.reset();
    }
  }
  if (!s.gpu && o.tf32) s.log("--tf32 concerns the GPU only: training in FP32 on the CPU");
  s.start_epoch();
}

Trainer::~Trainer() = default;

bool Trainer::done() const { return s_->state.finished_epochs >= s_->o.epochs; }
bool Trainer::epoch_complete() const { return !done() && s_->next_batch >= s_->plan.size(); }
const Model& Trainer::model() const { return s_->model; }
const ModelWeights& Trainer::weights() const {
  s_->catch_up(false);  // between steps (the trainer's one thread): the GPU holds still
  return s_->weights;
}
std::string Trainer::device() const { return s_->gpu ? s_->gpu->device_name() : std::string(); }
int64_t Trainer::steps() const { return s_->state.step; }
int Trainer::epoch() const { return done() ? s_->state.finished_epochs : s_->epoch; }
int Trainer::batch() const { return static_cast<int>(s_->next_batch); }
int Trainer::batches() const { return static_cast<int>(s_->plan.size()); }
const TrainResult& Trainer::result() const { return s_->state.result; }

StepRecord Trainer::step() {
  State& s = *s_;
  if (done()) fail(ErrorKind::Input, "Trainer::step", "every planned epoch is finished");
  if (epoch_complete()) fail(ErrorKind::Input, "Trainer::step", "the epoch's batches are done: finish_epoch first");
  const auto start = Clock::now();
  const Config& config = s.model.config;
  const Batch batch = s.masked_lm ? make_masked_batch(s.train_examples, s.plan[s.next_batch], s.o.max_length,
                                                     training_masking(config, s.o, s.epoch))
                                  : make_batch(s.train_examples, s.plan[s.next_batch], s.ids, s.o.max_length, config.stacks);
  const int64_t step = s.state.step + 1;
  const DropoutSettings dropout{s.o.dropout, s.o.seed, static_cast<uint64_t>(step)};
  s.lr = s.o.schedule.at(step);
  LossResult r;
  bool stepped = false;
  if (s.gpu) {
    try {
      r = s.gpu->train_step(batch, dropout, s.o.label_smoothing, s.o.clip_norm, s.lr);
      stepped = true;
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::Unsupported) throw;
      s.leave_gpu(e);  // then this step on the CPU
    }
  }
  if (!stepped) {
    r = batch_forward(config, s.weights, batch, dropout, s.o.label_smoothing, s.trace, &s.dlogits);
    if (!std::isfinite(r.loss))  // before the update: the weights stay those of the last good step
      fail(ErrorKind::Value, "train", "the loss became " + std::to_string(r.loss) + " at step " +
                                          std::to_string(step) + " (learning rate too high?)");
    for (ParameterView& p : parameter_views(s.grads)) std::fill(p.data, p.data + p.size, 0.0f);
    batch_backward(config, s.weights, batch, s.trace, s.dlogits, s.grads);
    tie_gradients(config, s.grads);
    clip_gradients(s.grads, s.o.clip_norm);
    s.adam->step(s.weights, s.grads, s.lr);
  }
  s.state.step = step;
  ++s.next_batch;
  s.loss_sum += r.loss * r.tokens;
  s.nll_sum += r.nll * r.tokens;
  s.tokens += r.tokens;
  s.step_seconds += seconds_since(start);
  StepRecord rec;
  rec.step = step;
  rec.epoch = s.epoch;
  rec.batch = static_cast<int>(s.next_batch);
  rec.batches = static_cast<int>(s.plan.size());
  rec.loss = r.loss;
  rec.nll = r.nll;
  rec.epoch_loss = s.loss_sum / std::max<long>(s.tokens, 1);
  rec.tokens_per_second = s.step_seconds > 0 ? s.tokens / s.step_seconds : 0;
  rec.learning_rate = s.lr;
  return rec;
}

EpochRecord Trainer::finish_epoch() {
  State& s = *s_;
  if (!epoch_complete()) fail(ErrorKind::Input, "Trainer::finish_epoch", "the epoch has batches left");
  const Config& config = s.model.config;
  RunState& state = s.state;
  EpochRecord rec;
  rec.epoch = s.epoch;
  rec.train_loss = s.loss_sum / std::max<long>(s.tokens, 1);
  rec.train_nll = s.nll_sum / std::max<long>(s.tokens, 1);
  rec.learning_rate = s.lr;
  rec.tokens_per_second = s.step_seconds > 0 ? s.tokens / s.step_seconds : 0;  // time spent in steps (not paused)
  s.catch_up(s.writes);  // evaluation and the model file read the host's weights; the checkpoint Adam's state
  if (s.o.average_last > 1) {  // this epoch's weights join the last ones (before packing: a plain copy)
    state.recent_epochs.push_back(s.epoch);
    state.recent_weights.push_back(s.weights);
    while (static_cast<int>(state.recent_epochs.size()) > s.o.average_last) {
      state.recent_epochs.erase(state.recent_epochs.begin());
      state.recent_weights.erase(state.recent_weights.begin());
    }
  } else {
    state.recent_epochs.clear();
    state.recent_weights.clear();
  }
  // Validation decodes a few rows a pass, which the few-row kernel reads from packed weights (nn/small_gemm.h):
  // packed once here, not at every call; the next step's parameter_views drops the copies (the floats change).
  attach_packed_weights(s.weights);
  if (s.masked_lm) {
    const MaskedLmScore score = score_masked_lm(config, s.weights, s.valid_examples, s.o.batch_tokens, s.o.max_length,
                                                evaluation_masking(config));
    rec.valid_nll = score.mean_nll();
    rec.valid_masked_accuracy = score.accuracy();
  } else {
    rec.valid_nll = score_likelihood(config, s.weights, s.valid_examples, s.o.batch_tokens, s.o.max_length).mean_nll();
  }
  if (!s.language_model && !s.masked_lm) {  // a language model translates nothing: its score is the perplexity alone
    const auto hyps = translations_for_bleu(s.model, s.weights, s.valid_source, {1, 0.6f, 0});
    rec.valid_bleu = 100.0 * corpus_bleu(hyps, s.valid.target).bleu;
  }
  rec.seconds = seconds_since(s.epoch_start);
  state.result.history.push_back(rec);
  state.finished_epochs = s.epoch;
  state.result.wall_seconds += rec.seconds;
  char line[256];
  if (s.masked_lm)
    std::snprintf(line, sizeof(line),
                  "epoch %d: train loss %.3f (ppl %.2f), valid masked-token accuracy %.2f%%, perplexity %.2f "
                  "(masking seed %llu), lr %.2e, %.0f masked tokens/s, %.0f s",
                  s.epoch, rec.train_loss, std::exp(rec.train_nll), 100.0 * rec.valid_masked_accuracy,
                  std::exp(rec.valid_nll), static_cast<unsigned long long>(kEvaluationMaskingSeed),
                  rec.learning_rate, rec.tokens_per_second, rec.seconds);
  else if (s.language_model)
    std::snprintf(line, sizeof(line),
                  "epoch %d: train loss %.3f (ppl %.2f), valid per-token perplexity %.2f (no BLEU: a language "
                  "model), lr %.2e, %.0f target tokens/s, %.0f s",
                  s.epoch, rec.train_loss, std::exp(rec.train_nll), std::exp(rec.valid_nll), rec.learning_rate,
                  rec.tokens_per_second, rec.seconds);
  else
    std::snprintf(line, sizeof(line),
                  "epoch %d: train loss %.3f (ppl %.2f), valid ppl %.2f, valid BLEU %.2f (greedy), lr %.2e, "
                  "%.0f target tokens/s, %.0f s",
                  s.epoch, rec.train_loss, std::exp(rec.train_nll), std::exp(rec.valid_nll), rec.valid_bleu,
                  rec.learning_rate, rec.tokens_per_second, rec.seconds);
  s.log(line);
  // Best = highest validation BLEU; between equal BLEU (early epochs of a small model score 0), lowest perplexity.
  // A language model has no BLEU (valid_bleu stays 0): the lowest validation perplexity.
  const bool better = state.result.best_epoch == 0 || rec.valid_bleu > state.result.best_valid_bleu ||
                      (rec.valid_bleu == state.result.best_valid_bleu &&
                       rec.valid_nll < state.result.history[state.result.best_epoch - 1].valid_nll);
  if (better) {
    state.result.best_valid_bleu = rec.valid_bleu;
    state.result.best_epoch = s.epoch;
  }
  if (s.writes) {
    if (better) {
      Model& model = s.model;
      model.weights = s.weights;
      json history = json::array();
      for (const auto& e : state.result.history) history.push_back(epoch_to_json(e));
      const json started_from = model.provenance;
      model.provenance = run_provenance(s.o);
      if (!s.o.from_model.empty()) model.provenance["base_provenance"] = started_from;
      if (!s.language_model && !s.masked_lm) model.provenance["valid_bleu_greedy"] = rec.valid_bleu;
      if (s.masked_lm) {
        model.provenance["valid_masked_accuracy"] = rec.valid_masked_accuracy;
        model.provenance["masking_seed"] = kEvaluationMaskingSeed;
      }
      model.provenance.update({{"epoch", s.epoch},
                          {"valid_perplexity", std::exp(rec.valid_nll)},
                          {"wall_seconds_so_far", state.result.wall_seconds},
                          {"threads", parallel_threads()},
                          {"device", s.gpu ? "cuda: " + s.gpu->device_name() : std::string("cpu")},
                          {"history", history}});
      save_model(model, s.o.out_path, s.o.store_f16 ? DType::F16 : DType::F32, s.outputs);
      model.weights = ModelWeights();  // the run's weights are weights(); the file holds the best
      s.log("  best so far: wrote '" + s.o.out_path + "'");
    }
    write_checkpoint(s.checkpoint, config, s.model.src_vocab, s.model.tgt_vocab, s.weights, *s.adam, state, s.o.seed,
                     s.outputs);
  }
  if (!done()) s.start_epoch();
  return rec;
}

TrainResult Trainer::finish() {
  State& s = *s_;
  const TrainOptions& o = s.o;
  RunState& state = s.state;
  if (s.language_model) {
    s.finish_language_model();
    return state.result;
  }
  if (s.masked_lm) {
    s.finish_masked_language_model();
    return state.result;
  }
  if (o.average_last > 1) s.average_last_epochs();
  // The test score of the best model, greedy and with beam search, recorded in its provenance.
  const std::string test_src = corpus_path(o, o.test_name, o.source_language);
  const std::string test_ref = corpus_path(o, o.test_name, o.target_language);
  if (std::error_code ec; s.writes && std::filesystem::exists(test_src, ec) && std::filesystem::exists(test_ref, ec) &&
      state.result.best_epoch > 0) {
    Model best = load_model(o.out_path);
    const ParallelCorpus test = read_parallel_corpus(test_src, test_ref);
    const std::vector<TokenSequence> sources =
        uses_sentencepiece(best.tokenizer) ? pieces_of(best, test.source, Side::Source) : test.source;
    const auto greedy = translations_for_bleu(best, best.weights, sources, {1, 0.6f, 0});
    state.result.test_bleu_greedy = 100.0 * corpus_bleu(greedy, test.target).bleu;
    const auto beam = translations_for_bleu(best, best.weights, sources, {o.final_beam, o.final_length_penalty, 0});
    state.result.test_bleu_beam = 100.0 * corpus_bleu(beam, test.target).bleu;
    best.provenance["test_set"] = o.test_name;
    best.provenance["test_bleu_greedy"] = state.result.test_bleu_greedy;
    best.provenance["test_bleu_beam"] = state.result.test_bleu_beam;
    best.provenance["test_beam_width"] = o.final_beam;
    best.provenance["test_length_penalty"] = o.final_length_penalty;
    best.provenance["wall_seconds"] = state.result.wall_seconds;
    best.provenance["epochs_run"] = state.finished_epochs;
    save_model(best, o.out_path, o.store_f16 ? DType::F16 : DType::F32, s.outputs);
    char line[300];
    // The model: the best epoch, or the average of the last epochs that replaced it.
    const std::string which = best.provenance.contains("checkpoint_average")
                                  ? "the mean of epochs " + best.provenance["checkpoint_average"]["epochs"].dump()
                                  : "best epoch " + std::to_string(state.result.best_epoch);
    std::snprintf(line, sizeof(line), "%s: %s BLEU %.2f greedy, %.2f beam %d (length penalty %.2f)", which.c_str(),
                  o.test_name.c_str(), state.result.test_bleu_greedy, state.result.test_bleu_beam, o.final_beam,
                  o.final_length_penalty);
    s.log(line);
  }
  return state.result;
}

TrainResult train_model(const TrainOptions& o, const TrainProgress& progress, const TrainLog& log) {
  if (o.out_path.empty()) fail(ErrorKind::Input, "train", "no output model path (--out)");
  const bool keep_timeline = !o.timeline_path.empty();
  const std::string checkpoint = o.checkpoint_path.empty() ? o.out_path + ".checkpoint" : o.checkpoint_path;
  // Written as the model and the checkpoint are: never onto the data.
  const WriteRules timeline_rules{.replace = true, .inputs = train_inputs(o), .allowed_folder = ""};
  if (keep_timeline) {
    if (const std::string problem = check_output_path(o.timeline_path, timeline_rules);
        !problem.empty())
      fail(ErrorKind::File, "train", problem);
    if (same_path(o.timeline_path, o.out_path) || same_path(o.timeline_path, checkpoint))
      fail(ErrorKind::Input, "train", "the timeline '" + o.timeline_path + "' would be the model or the checkpoint");
  }
  Trainer trainer(o, log);
  TrainingTimeline timeline;
  if (keep_timeline) {
    timeline.model = trainer.model();
    timeline.model.weights = ModelWeights();
    timeline.model.provenance = run_provenance(o);
    if (std::error_code ec; trainer.steps() > 0 && std::filesystem::exists(o.timeline_path, ec)) {  // resumed: continue its timeline
      TrainingTimeline earlier = load_timeline(o.timeline_path);
      if (config_to_json(earlier.model.config) != config_to_json(timeline.model.config))
        fail(ErrorKind::Input, "train", "the timeline '" + o.timeline_path + "' belongs to another model");
      for (TimelineSnapshot& s : earlier.snapshots)
        if (s.step <= trainer.steps()) timeline.snapshots.push_back(std::move(s));
    }
    // The weights before training (or where the resumed run starts, if not there yet).
    record_snapshot(timeline, trainer.steps(), trainer.steps() == 0 ? 0 : trainer.epoch(), 0, -1, trainer.weights());
  }
  while (!trainer.done()) {
    const StepRecord r = trainer.step();
    if (progress) progress(r.epoch, r.batch, r.batches, r.epoch_loss, r.tokens_per_second);
    if (keep_timeline && snapshot_due(r.step, false)) record_snapshot(timeline, r.step, r.epoch, r.epoch_loss, -1, trainer.weights());
    if (trainer.epoch_complete()) {
      const EpochRecord e = trainer.finish_epoch();
      if (keep_timeline) {
        // A language model's score (either kind) is the validation perplexity, not BLEU.
        const bool language_model = is_language_model(o) || is_masked_language_model(o);
        record_snapshot(timeline, r.step, e.epoch, e.train_loss, language_model ? -1 : e.valid_bleu, trainer.weights(),
                        language_model ? std::exp(e.valid_nll) : -1);
        save_timeline(timeline, o.timeline_path, o.timeline_storage, timeline_rules);
        if (log) log("  timeline: " + std::to_string(timeline.snapshots.size()) + " snapshots in '" + o.timeline_path + "'");
      }
    }
  }
  return trainer.finish();
}

}  // namespace sf

// The decoder-only objective (a GPT-style language model): its batches, its perplexity against the traced
// forward pass sentence by sentence, and `stepformer-cli train --shape decoder-only` end to end on a tiny
// counting language written here: resuming ends bit for bit where an uninterrupted run ends, the model file holds a
// decoder-only config with one vocabulary and its test perplexity, `eval --text` gives that perplexity, the
// timeline and the TrainingSession take the shape, and options of the other shape are refused by name.
#include <gtest/gtest.h>

#include <cstdio>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "command_run.h"
#include "io/safetensors.h"
#include "model/model.h"
#include "train/batching.h"
#include "train/corpus.h"
#include "train/evaluate.h"
#include "train/init.h"
#include "train/parameters.h"
#include "train/session.h"
#include "train/timeline.h"
#include "train/trainer.h"
#include "transformer/forward.h"
#include "util/error.h"

namespace sf {
namespace {

namespace fs = std::filesystem;

testing::CommandRun cli(const std::string& args) {
  return testing::run_command(std::string(STEPFORMER_CLI_PATH) + " " + args + " 2>&1");
}

// A language a tiny model learns in a few epochs: each sentence counts up from a random word, c3 c4 c5 ..., modulo
// 12, 3 to 6 words long. Only the first word (1 of 12) and the length are uncertain: a model that learned it has a
// per-token perplexity near 2; an untrained one near its vocabulary's size (16).
fs::path counting_corpus(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("stepformer_lm_" + name + "_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::mt19937 rng(3);
  for (const auto& [split, n] : {std::pair<std::string, int>{"train", 300}, {"val", 30}, {"test_2016_flickr", 30}}) {
    std::ofstream f(dir / (split + ".lc.norm.tok.zz"));
    for (int i = 0; i < n; ++i) {
      const unsigned start = rng() % 12, length = 3 + rng() % 4;
      for (unsigned k = 0; k < length; ++k) f << (k ? " " : "") << "c" << (start + k) % 12;
      f << "\n";
    }
  }
  return dir;
}

const std::string kShapeArgs =
    " --shape decoder-only --lang zz --d-model 32 --heads 4 --decoder-layers 2 --d-ff 64 --positions learned"
    " --norm pre --activation gelu --tie-output --batch-tokens 120 --lr 3e-3 --warmup 30 --dropout 0.1"
    " --label-smoothing 0 --seed 7 --f32 --device cpu";

std::string train_command(const fs::path& dir, const fs::path& out, int epochs, int threads) {
  std::ostringstream s;
  s << "train --data " << dir.string() << " --out " << out.string() << " --epochs " << epochs << kShapeArgs
    << " --threads " << threads;
  return s.str();
}

Config tiny_decoder_only(int vocabulary) {
  Config c;
  c.stacks = ModelStacks::DecoderOnly;
  c.d_model = 16;
  c.n_heads = 2;
  c.n_encoder_layers = 0;
  c.n_decoder_layers = 2;
  c.d_ff = 32;
  c.src_vocab_size = 0;
  c.tgt_vocab_size = vocabulary;
  c.positional_encoding = PositionalEncoding::Learned;
  c.norm_placement = NormPlacement::Pre;
  c.decoder_final_norm = true;
  c.activation = Activation::GELU;
  c.tie_output_embedding = true;
  c.max_positions = 32;
  c.validate();
  return c;
}

TEST(LanguageModelBatch, ADecoderOnlyBatchReadsBosAndTheWordsAndPredictsTheWordsAndEos) {
  const std::vector<Example> examples = {{{9, 9}, {4, 5, 6}}, {{}, {7}}};  // a source, if any, is not read
  const SpecialIds ids{1, 2, 3, 0};
  const Batch b = make_batch(examples, {0, 1}, ids, 100, ModelStacks::DecoderOnly);
  EXPECT_EQ(b.size, 2);
  EXPECT_EQ(b.source_length, 0);
  EXPECT_TRUE(b.source.empty());
  EXPECT_EQ(b.target_length, 4);
  EXPECT_EQ(b.target_in, (std::vector<int>{2, 4, 5, 6, 2, 7, 1, 1}));
  EXPECT_EQ(b.target_out, (std::vector<int>{4, 5, 6, 3, 7, 3, 1, 1}));
  EXPECT_EQ(b.target_tokens, 6);
  // max_length cuts the input and the targets alike: <bos> 4 5 -> 4 5 6 (the <eos> is cut with the sentence)
  const Batch cut = make_batch(examples, {0}, ids, 3, ModelStacks::DecoderOnly);
  EXPECT_EQ(cut.target_in, (std::vector<int>{2, 4, 5}));
  EXPECT_EQ(cut.target_out, (std::vector<int>{4, 5, 3}));
  // The translators' batches are as they were: a source <bos> x <eos>.
  const Batch pair = make_batch(examples, {0}, ids, 100);
  EXPECT_EQ(pair.source, (std::vector<int>{2, 9, 9, 3}));
  try {
    make_batch(examples, {0}, ids, 100, ModelStacks::EncoderOnly);
    FAIL() << "an encoder-only batch must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Unsupported);
  }
}

// score_likelihood (the trainer's validation, its test score and `eval --text`) against the traced forward of
// each sentence alone: -sum ln softmax(logits)[target] over <bos> w1..wn -> w1..wn <eos>.
TEST(LanguageModelScore, PerplexityEqualsTheTracedForwardSentenceBySentence) {
  const Config c = tiny_decoder_only(12);
  ModelWeights w = initialize_weights(c, 5);
  std::mt19937 rng(9);
  std::vector<Example> examples(7);
  for (Example& e : examples) {
    e.target.resize(1 + rng() % 9);
    // words 4 .. 11 and <unk> (0), scored as itself; never <pad>, <bos>, <eos> inside a sentence
    for (int& id : e.target) id = static_cast<int>(rng() % 9) == 0 ? 0 : 3 + static_cast<int>(rng() % 8) + 1;
  }
  double want = 0;
  long tokens = 0;
  for (const Example& e : examples) {
    std::vector<int> in = {c.bos_id};
    in.insert(in.end(), e.target.begin(), e.target.end());
    std::vector<int> out = e.target;
    out.push_back(c.eos_id);
    const Trace t = forward(c, w, {}, in);
    ASSERT_EQ(t.logits.rows(), static_cast<Eigen::Index>(out.size()));
    for (size_t i = 0; i < out.size(); ++i) {
      const auto row = t.logits.row(static_cast<Eigen::Index>(i)).cast<double>();
      const double log_sum = row.maxCoeff() + std::log((row.array() - row.maxCoeff()).exp().sum());
      want += log_sum - row(out[i]);
    }
    tokens += static_cast<long>(out.size());
  }
  for (int batch_tokens : {16, 1000}) {  // many batches or one: the same sums
    const LikelihoodScore s = score_likelihood(c, w, examples, batch_tokens, 32);
    EXPECT_EQ(s.tokens, tokens);
    EXPECT_EQ(s.sentences, examples.size());
    EXPECT_NEAR(s.nll_sum, want, 1e-4 * want) << "batch tokens " << batch_tokens;
    EXPECT_NEAR(s.perplexity(), std::exp(want / tokens), 1e-4 * s.perplexity());
  }
}

TEST(CliTrainDecoderOnly, ResumesBitForBitAndRecordsItsPerplexity) {
  const fs::path dir = counting_corpus("cli");

  // Eight epochs straight through, with a timeline.
  const fs::path straight = dir / "straight.safetensors", timeline = dir / "straight.timeline.safetensors";
  testing::CommandRun r = cli(train_command(dir, straight, 8, 1) + " --timeline " + timeline.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("decoder-only"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("epoch 8: train loss"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("valid per-token perplexity"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("(no BLEU: a language model)"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("valid BLEU"), std::string::npos) << r.output;

  // Five epochs on two threads, "interrupted", then the same command asked for eight: it resumes after epoch 5
  // and ends with the very weights and Adam moments of the straight run.
  const fs::path resumed = dir / "resumed.safetensors";
  ASSERT_EQ(cli(train_command(dir, resumed, 5, 2)).exit_code, 0);
  r = cli(train_command(dir, resumed, 8, 2) + " --resume");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("resuming from"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("epoch 1: train loss"), std::string::npos) << "finished epochs must not rerun";
  const SafetensorsFile ca = SafetensorsFile::open(straight.string() + ".checkpoint");
  const SafetensorsFile cb = SafetensorsFile::open(resumed.string() + ".checkpoint");
  ASSERT_EQ(ca.tensors().size(), cb.tensors().size());
  for (const TensorView& t : ca.tensors()) {
    const TensorView* u = cb.find(t.name);
    ASSERT_NE(u, nullptr) << t.name;
    EXPECT_TRUE(t.to_floats() == u->to_floats()) << "resumed training differs from uninterrupted training in " << t.name;
  }

  // The model file: GPT's shape, one vocabulary, the language, and its scores.
  const Model m = load_model(straight.string());
  EXPECT_EQ(m.config.stacks, ModelStacks::DecoderOnly);
  EXPECT_EQ(m.config.n_encoder_layers, 0);
  EXPECT_EQ(m.config.n_decoder_layers, 2);
  EXPECT_TRUE(m.src_vocab.empty());
  EXPECT_EQ(m.tgt_vocab.size(), 16);  // <unk> <pad> <bos> <eos> and c0 .. c11
  EXPECT_EQ(m.tokenizer.target_language, "zz");
  EXPECT_EQ(m.tokenizer.source_language, "");
  ASSERT_TRUE(m.provenance.contains("test_perplexity")) << m.provenance.dump();
  EXPECT_FALSE(m.provenance.contains("valid_bleu_greedy"));
  const double test_perplexity = m.provenance["test_perplexity"].get<double>();
  // Eight epochs of counting: 2.20 (seed 7, best epoch 7); untrained about 16, a broken backward pass far above 3.
  EXPECT_LT(test_perplexity, 3.0) << m.provenance.dump();
  EXPECT_GT(test_perplexity, 1.0);
  // 30 test sentences of 3 to 6 words: their words and one <eos> each.
  const long test_tokens = m.provenance["test_tokens"].get<long>();
  EXPECT_GE(test_tokens, 30 * 4);
  EXPECT_LE(test_tokens, 30 * 7);

  // eval --text: the same measure on the same file, printed as the provenance has it.
  r = cli("eval " + straight.string() + " --text " + (dir / "test_2016_flickr.lc.norm.tok.zz").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  char want[64];
  std::snprintf(want, sizeof want, "perplexity = %.2f", test_perplexity);
  EXPECT_NE(r.output.find(want), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("tokens " + std::to_string(test_tokens)), std::string::npos) << r.output;

  // info shows the perplexity and no source vocabulary.
  r = cli("info " + straight.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("test_perplexity"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\"decoder_only\""), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("  source   "), std::string::npos) << r.output;

  // The timeline: a model without an encoder, each epoch's end with its validation perplexity (no BLEU), falling.
  const TrainingTimeline t = load_timeline(timeline.string());
  EXPECT_EQ(t.model.config.stacks, ModelStacks::DecoderOnly);
  std::vector<double> perplexities;
  for (const TimelineSnapshot& s : t.snapshots)
    if (s.valid_perplexity >= 0) {
      perplexities.push_back(s.valid_perplexity);
      EXPECT_EQ(s.valid_bleu, -1);
    }
  ASSERT_EQ(perplexities.size(), 8u);
  EXPECT_LT(perplexities.back(), perplexities.front());
  // `timeline` lists them: one stack's layers, and each epoch's perplexity where a translator's BLEU would be.
  r = cli("timeline " + timeline.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("decoder_only, d_model"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("valid perplexity"), std::string::npos) << r.output;
  char last[32];
  std::snprintf(last, sizeof(last), "%.2f\n", perplexities.back());
  EXPECT_NE(r.output.find(last), std::string::npos) << "the last epoch's perplexity " << last << r.output;
  fs::remove_all(dir);
}

TEST(CliTrainDecoderOnly, RefusesOptionsOfTheOtherShapeByName) {
  const fs::path dir = counting_corpus("refuse");
  const std::string out = (dir / "m.safetensors").string();
  for (const std::string& extra : std::vector<std::string>{" --src zz", " --tgt zz", " --encoder-layers 2",
                                                           " --final-beam 2", " --from " + out}) {
    const testing::CommandRun r = cli(train_command(dir, out, 1, 1) + extra);
    EXPECT_EQ(r.exit_code, 2) << extra << ": " << r.output;
    EXPECT_NE(r.output.find(extra.substr(1, extra.find(' ', 1) - 1) + " is not an option of --shape decoder-only"),
              std::string::npos)
        << r.output;
  }
  testing::CommandRun r = cli("train --data " + dir.string() + " --out " + out + " --lang zz");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--lang is not an option of --shape encoder-decoder"), std::string::npos) << r.output;
  r = cli("train --data " + dir.string() + " --out " + out + " --shape gpt");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--shape must be encoder-decoder, decoder-only or encoder-only"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(out));
  // eval --text scores a decoder-only model; --src/--ref do not go with it.
  r = cli("eval " + std::string(STEPFORMER_SOURCE_DIR) + "/assets/models/de-en.safetensors --text " +
          (dir / "val.lc.norm.tok.zz").string());
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("--text scores a language model (decoder-only, or encoder-only"), std::string::npos) << r.output;
  r = cli("eval " + out + " --text " + (dir / "val.lc.norm.tok.zz").string() + " --beam 2");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  fs::remove_all(dir);
}

// The app's Training stage runs TrainingSession: given the decoder-only shape (the GUI's recipe), it ends with the
// weights a Trainer driven step by step ends with.
TEST(TrainingSessionDecoderOnly, EndsWhereTheTrainerEnds) {
  const fs::path dir = counting_corpus("session");
  TrainOptions o;
  o.data_dir = dir.string();
  o.target_language = "zz";
  o.model = tiny_decoder_only(4);  // the vocabulary size comes from the data
  o.model.n_encoder_layers = 3;    // the encoder's options are not used by a decoder-only run
  o.epochs = 2;
  o.batch_tokens = 120;
  o.schedule.peak = 3e-3f;
  o.schedule.warmup_steps = 30;
  o.label_smoothing = 0;
  o.threads = 1;
  o.seed = 3;
  o.device = DeviceRequest::Cpu;

  Trainer trainer(o);
  while (!trainer.done()) {
    trainer.step();
    if (trainer.epoch_complete()) trainer.finish_epoch();
  }
  EXPECT_EQ(trainer.model().config.n_encoder_layers, 0);
  EXPECT_EQ(trainer.model().config.tgt_vocab_size, 16);

  TrainingSession session(o);
  ASSERT_TRUE(session.wait_until_ended(std::chrono::seconds(120)));
  const TrainingSession::Status s = session.status();
  ASSERT_EQ(s.state, TrainingSession::State::Finished) << s.message;
  ASSERT_EQ(s.history.size(), 2u);
  EXPECT_EQ(s.history.back().valid_nll, trainer.result().history.back().valid_nll);
  Model live;
  int64_t step = -1;
  ASSERT_TRUE(session.weights_now(live, step));
  EXPECT_EQ(step, trainer.steps());
  ModelWeights trained = trainer.weights();
  const auto want = parameter_views(trained);
  const auto got = parameter_views(live.weights);
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_TRUE(std::equal(want[i].data, want[i].data + want[i].size, got[i].data)) << want[i].name;
  // Its snapshots at each epoch's end carry the validation perplexity.
  const TrainingTimeline t = session.timeline();
  EXPECT_NEAR(t.snapshots.back().valid_perplexity, std::exp(s.history.back().valid_nll), 1e-12);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace sf

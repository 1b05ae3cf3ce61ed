// The masked-language-model objective (a BERT-style encoder-only model): the masking (BERT's 15% of the words, of
// them 80% [MASK], 10% a random word, 10% kept; reproducible from the seed, each epoch different), its batches, its
// scores against the traced forward pass sentence by sentence, the gradients of a masked batch against finite
// differences, the tokenizer keeping "[MASK]" whole, and `stepformer-cli train --shape encoder-only`, `eval --text`
// and `fill-mask` end to end on a tiny counting language written here, where a masked word follows from its
// neighbours: resuming ends bit for bit where an uninterrupted run ends, the model file holds an encoder-only
// config with [MASK] and its test scores, eval prints those scores, and fill-mask puts the missing number first.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "command_run.h"
#include "decode/fill_mask.h"
#include "io/safetensors.h"
#include "model/model.h"
#include "model/name_tables.h"
#include "train/batched_model.h"
#include "train/corpus.h"
#include "train/evaluate.h"
#include "train/init.h"
#include "train/masking.h"
#include "train/parameters.h"
#include "transformer/forward.h"
#include "util/error.h"

namespace sf {
namespace {

namespace fs = std::filesystem;

testing::CommandRun cli(const std::string& args) {
  return testing::run_command(std::string(STEPFORMER_CLI_PATH) + " " + args + " 2>&1");
}

MaskingSettings settings_for(int vocabulary, int mask_id, uint64_t seed, int epoch) {
  MaskingSettings s;
  s.mask_id = mask_id;
  s.vocab_size = vocabulary;
  s.ids = SpecialIds{1, 2, 3, 0};
  s.seed = seed;
  s.epoch = epoch;
  return s;
}

// [SECTION] masking

TEST(MaskedLmMasking, ChoosesFifteenPercentOfTheWordsNeverTheEndsAndHidesThemAsBertDoes) {
  // Vocabulary: <unk> 0, <pad> 1, <bos> 2, <eos> 3, words 4 .. 48, [MASK] 49.
  const MaskingSettings s = settings_for(50, 49, 11, 1);
  std::mt19937 rng(4);
  long chosen = 0, masked = 0, random = 0, kept = 0;
  for (uint64_t index = 0; index < 4000; ++index) {
    std::vector<int> words(1 + rng() % 30);
    for (int& w : words) w = 4 + static_cast<int>(rng() % 45);
    const MaskedSentence m = mask_sentence(words, index, s);
    const int n = static_cast<int>(words.size());
    ASSERT_EQ(m.input.size(), words.size() + 2);
    ASSERT_EQ(m.target.size(), words.size() + 2);
    EXPECT_EQ(m.input.front(), 2);  // <bos> and <eos> stay, and are never asked for
    EXPECT_EQ(m.input.back(), 3);
    EXPECT_EQ(m.target.front(), 1);
    EXPECT_EQ(m.target.back(), 1);
    // BERT's count: round(15% of n), at least one.
    EXPECT_EQ(m.chosen, std::max(1, static_cast<int>(std::lround(0.15 * n)))) << "n " << n;
    int targets = 0;
    for (int i = 1; i <= n; ++i) {
      const int original = words[static_cast<size_t>(i - 1)], target = m.target[static_cast<size_t>(i)],
                input = m.input[static_cast<size_t>(i)];
      if (target == 1) {  // not chosen: the word as it was
        EXPECT_EQ(input, original);
        continue;
      }
      ++targets;
      EXPECT_EQ(target, original) << "a chosen position's target is the original word";
      if (input == 49) ++masked;
      else if (input == original) ++kept;  // (a random draw of the same word counts here: 1 in 45 of 10%)
      else {
        ++random;
        EXPECT_GE(input, 4) << "a random replacement is an ordinary word, never a special token";
        EXPECT_LT(input, 49) << "nor [MASK]";
      }
    }
    EXPECT_EQ(targets, m.chosen);
    chosen += m.chosen;
  }
  // About 9,000 chosen positions: the shares within a few standard deviations (0.4 points for 80%, 0.3 for 10%).
  ASSERT_GT(chosen, 8000);
  EXPECT_NEAR(static_cast<double>(masked) / chosen, 0.80, 0.015);
  EXPECT_NEAR(static_cast<double>(random) / chosen, 0.10 * 44.0 / 45.0, 0.012);
  EXPECT_NEAR(static_cast<double>(kept) / chosen, 0.10 + 0.10 / 45.0, 0.012);
}

TEST(MaskedLmMasking, DependsOnSeedEpochAndSentenceAloneAndRandomWordsCoverTheVocabulary) {
  const std::vector<int> words = {4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23};
  const MaskingSettings a = settings_for(30, 29, 5, 3);
  EXPECT_EQ(mask_sentence(words, 17, a).input, mask_sentence(words, 17, a).input);
  EXPECT_EQ(mask_sentence(words, 17, a).target, mask_sentence(words, 17, a).target);
  // Another epoch, another sentence index or another seed: other positions (over many sentences, never all equal).
  int same_epoch = 0, same_index = 0, same_seed = 0;
  for (uint64_t i = 0; i < 50; ++i) {
    const auto t = mask_sentence(words, i, a).target;
    same_epoch += t == mask_sentence(words, i, settings_for(30, 29, 5, 4)).target;
    same_index += t == mask_sentence(words, i + 1000, a).target;
    same_seed += t == mask_sentence(words, i, settings_for(30, 29, 6, 3)).target;
  }
  EXPECT_LT(same_epoch, 10);
  EXPECT_LT(same_index, 10);
  EXPECT_LT(same_seed, 10);
  // Random replacements reach every ordinary word (4 .. 28) and nothing else.
  MaskingSettings all_random = a;
  all_random.rate = 1.0f;
  all_random.mask_share = 0.0f;
  all_random.random_share = 1.0f;
  std::set<int> drawn;
  for (uint64_t i = 0; i < 200; ++i)
    for (int id : mask_sentence(words, i, all_random).input) drawn.insert(id);
  drawn.erase(2);
  drawn.erase(3);
  EXPECT_EQ(drawn.size(), 25u);
  EXPECT_EQ(*drawn.begin(), 4);
  EXPECT_EQ(*drawn.rbegin(), 28);
}

TEST(MaskedLmMasking, RefusesSettingsWithoutAMaskOrOutOfRange) {
  const std::vector<int> words = {4, 5};
  MaskingSettings s = settings_for(10, -1, 1, 1);
  EXPECT_THROW(mask_sentence(words, 0, s), Error);  // no [MASK]
  s.mask_id = 10;
  EXPECT_THROW(mask_sentence(words, 0, s), Error);  // outside the vocabulary
  s.mask_id = 9;
  s.rate = 0.0f;
  EXPECT_THROW(mask_sentence(words, 0, s), Error);
  s.rate = 0.15f;
  s.mask_share = 0.95f;
  EXPECT_THROW(mask_sentence(words, 0, s), Error);  // shares sum past 1
  try {
    mask_sentence(words, 0, settings_for(10, -1, 1, 1));
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Config);
    EXPECT_NE(std::string(e.what()).find("[MASK]"), std::string::npos) << e.what();
  }
}

TEST(MaskedLmBatch, PadsMaskedSentencesWithTargetsOnlyAtTheChosenPositions) {
  const MaskingSettings s = settings_for(30, 29, 8, 2);
  const std::vector<Example> examples = {{{4, 5, 6, 7, 8, 9, 10}, {}}, {{11, 12}, {}}, {{13, 14, 15, 16}, {}}};
  const Batch b = make_masked_batch(examples, {2, 0, 1}, 100, s);
  EXPECT_EQ(b.size, 3);
  EXPECT_EQ(b.source_length, 9);  // the longest: 7 words, <bos> and <eos>
  EXPECT_EQ(b.target_length, 9);
  EXPECT_TRUE(b.target_in.empty());
  ASSERT_EQ(b.source.size(), 27u);
  ASSERT_EQ(b.target_out.size(), 27u);
  // Row 1 is example 0 masked exactly as mask_sentence masks sentence 0, whatever its place in the batch.
  const MaskedSentence m0 = mask_sentence(examples[0].source, 0, s);
  EXPECT_EQ(std::vector<int>(b.source.begin() + 9, b.source.begin() + 18), m0.input);
  EXPECT_EQ(std::vector<int>(b.target_out.begin() + 9, b.target_out.begin() + 18), m0.target);
  // Row 2 (example 1, two words): <bos> w w <eos> then pads, one chosen position.
  const MaskedSentence m1 = mask_sentence(examples[1].source, 1, s);
  std::vector<int> row2_in = m1.input, row2_out = m1.target;
  row2_in.resize(9, 1);
  row2_out.resize(9, 1);
  EXPECT_EQ(std::vector<int>(b.source.begin() + 18, b.source.end()), row2_in);
  EXPECT_EQ(std::vector<int>(b.target_out.begin() + 18, b.target_out.end()), row2_out);
  EXPECT_EQ(b.target_tokens, 1 + 1 + 1);  // round(15% of 4, 7, 2) = 1, 1, 0 -> at least 1
  long targets = 0;
  for (int t : b.target_out) targets += t != 1;
  EXPECT_EQ(targets, b.target_tokens);
  // An encoder-only model's batch as check_batch wants it.
  Config c;
  c.stacks = ModelStacks::EncoderOnly;
  c.n_decoder_layers = 0;
  c.src_vocab_size = 30;
  c.tgt_vocab_size = 0;
  c.mask_id = 29;
  EXPECT_NO_THROW(check_batch(c, b, "test"));
  // max_length cuts the words before masking: <bos> 4 5 6 <eos>.
  const Batch cut = make_masked_batch(examples, {0}, 5, s);
  EXPECT_EQ(cut.source_length, 5);
  EXPECT_EQ(cut.source.front(), 2);
  EXPECT_EQ(cut.source.back(), 3);
}

TEST(MaskedLmVocabulary, AppendsMaskAsTheLastIdAndRefusesACorpusThatHoldsIt) {
  const Vocabulary words = build_vocabulary({{"a", "man", "a"}, {"a", "man"}}, 2);
  const Vocabulary v = with_mask_token(words);
  EXPECT_EQ(v.size(), words.size() + 1);
  EXPECT_EQ(v.token(v.size() - 1), "[MASK]");
  EXPECT_EQ(v.id("a"), words.id("a"));
  const Vocabulary odd = build_vocabulary({{"[MASK]", "x"}, {"[MASK]"}}, 2);
  try {
    with_mask_token(odd);
    FAIL() << "a corpus word [MASK] must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Input);
  }
}

// [SECTION] the model: scores and gradients

Config tiny_encoder_only(int vocabulary) {
  Config c;
  c.stacks = ModelStacks::EncoderOnly;
  c.d_model = 16;
  c.n_heads = 2;
  c.n_encoder_layers = 2;
  c.n_decoder_layers = 0;
  c.d_ff = 32;
  c.src_vocab_size = vocabulary;
  c.tgt_vocab_size = 0;
  c.positional_encoding = PositionalEncoding::Learned;
  c.norm_placement = NormPlacement::Post;
  c.activation = Activation::GELU;
  c.tie_output_embedding = true;
  c.max_positions = 32;
  c.mask_id = vocabulary - 1;
  c.validate();
  return c;
}

// score_masked_lm (the trainer's validation, its test score and `eval --text`) against the traced forward of each
// masked sentence alone: -ln softmax(logits)[original] and the argmax at each chosen position.
TEST(MaskedLmScore, AccuracyAndPerplexityEqualTheTracedForwardSentenceBySentence) {
  const Config c = tiny_encoder_only(14);
  const ModelWeights w = initialize_weights(c, 5);
  std::mt19937 rng(9);
  std::vector<Example> examples(40);
  for (Example& e : examples) {
    e.source.resize(1 + rng() % 12);
    for (int& id : e.source) id = static_cast<int>(rng() % 9) == 0 ? 0 : 4 + static_cast<int>(rng() % 9);
  }
  const MaskingSettings masking = evaluation_masking(c);
  double want_nll = 0;
  long tokens = 0, correct = 0;
  for (size_t i = 0; i < examples.size(); ++i) {
    const MaskedSentence m = mask_sentence(examples[i].source, i, masking);
    const Trace t = forward(c, w, m.input, {});
    for (size_t p = 0; p < m.target.size(); ++p) {
      if (m.target[p] == c.pad_id) continue;
      const auto row = t.logits.row(static_cast<Eigen::Index>(p)).cast<double>();
      const double log_sum = row.maxCoeff() + std::log((row.array() - row.maxCoeff()).exp().sum());
      want_nll += log_sum - row(m.target[p]);
      Eigen::Index best = 0;
      row.maxCoeff(&best);
      correct += best == m.target[p];
      ++tokens;
    }
  }
  ASSERT_GT(correct, 0) << "an untrained model guessing nothing would test no accuracy";
  for (int batch_tokens : {16, 1000}) {  // many batches or one: the same sums
    const MaskedLmScore s = score_masked_lm(c, w, examples, batch_tokens, 32, masking);
    EXPECT_EQ(s.tokens, tokens);
    EXPECT_EQ(s.correct, correct) << "batch tokens " << batch_tokens;
    EXPECT_EQ(s.sentences, examples.size());
    EXPECT_NEAR(s.nll_sum, want_nll, 1e-4 * want_nll) << "batch tokens " << batch_tokens;
    EXPECT_NEAR(s.perplexity(), std::exp(want_nll / tokens), 1e-4 * s.perplexity());
    EXPECT_DOUBLE_EQ(s.accuracy(), static_cast<double>(correct) / tokens);
  }
  Config translator;
  EXPECT_THROW(score_masked_lm(translator, w, examples, 100, 32, masking), Error);
}

// The backward of a masked batch (the loss at the chosen positions only) through the shipped model's shape
// (post-norm, learned positions, GELU, the output head tied to the embedding, dropout on) against central finite
// differences of the loss. (tests/unit/test_shapes_pytorch.cpp checks the same passes against torch autograd.)
TEST(MaskedLmGradients, MatchFiniteDifferences) {
  Config c = tiny_encoder_only(14);
  c.d_model = 8;
  c.d_ff = 12;
  ModelWeights w = initialize_weights(c, 42);
  std::mt19937 rng(5);
  for (ParameterView& p : parameter_views(w))  // biases and norms away from 0 and 1, so their gradients count
    for (Eigen::Index i = 0; i < p.size; ++i) p.data[i] += std::normal_distribution<float>(0.0f, 0.1f)(rng);
  complete_shared_weights(c, w);
  MaskingSettings masking = settings_for(14, 13, 3, 1);
  masking.rate = 0.5f;  // more chosen positions: more of the head's rows in the loss
  const std::vector<Example> examples = {{{4, 5, 6, 7, 8}, {}}, {{9, 10}, {}}, {{11, 12, 4, 0}, {}}};
  const Batch batch = make_masked_batch(examples, {0, 1, 2}, 16, masking);
  ASSERT_GE(batch.target_tokens, 5);
  const DropoutSettings dropout{0.1f, 99, 7};
  BatchTrace trace;
  Mat dlogits;
  batch_forward(c, w, batch, dropout, 0.0f, trace, &dlogits);
  ModelWeights g = zeros_like(w);
  batch_backward(c, w, batch, trace, dlogits, g);
  tie_gradients(c, g);
  auto loss = [&] {
    w.generator.weight = w.src_embedding;  // the tied matrix moves as one
    BatchTrace t;
    return batch_forward(c, w, batch, dropout, 0.0f, t, nullptr).loss;
  };
  auto weights = parameter_views(w);
  auto grads = parameter_views(g);
  ASSERT_EQ(weights.size(), grads.size());
  std::mt19937 pick(6);
  int checked = 0;
  for (size_t p = 0; p < weights.size(); ++p) {
    if (weights[p].name == "generator.weight") continue;  // checked through src_embedding
    for (int k = 0; k < 3; ++k) {
      Eigen::Index i = std::uniform_int_distribution<Eigen::Index>(0, weights[p].size - 1)(pick);
      if (weights[p].name == "src_embedding") i = (4 + 3 * k) * c.d_model + k;  // rows of ids 4, 7, 10: used
      float* x = weights[p].data + i;
      const float saved = *x;
      const double h = 1e-2;
      *x = saved + static_cast<float>(h);
      const double up = loss();
      *x = saved - static_cast<float>(h);
      const double down = loss();
      *x = saved;
      loss();
      const double numeric = (up - down) / (2 * h), analytic = grads[p].data[i];
      EXPECT_NEAR(analytic, numeric, 2e-3 + 2e-2 * std::abs(numeric)) << weights[p].name << "[" << i << "]";
      ++checked;
    }
  }
  EXPECT_GT(checked, 30);
  // The loss counts the chosen positions only: a target changed at an unchosen position (pad) changes nothing.
  EXPECT_EQ(dlogits.rows(), static_cast<Eigen::Index>(batch.target_out.size()));
  for (size_t r = 0; r < batch.target_out.size(); ++r)
    if (batch.target_out[r] == c.pad_id) {
      EXPECT_TRUE(dlogits.row(static_cast<Eigen::Index>(r)).isZero()) << r;
    }
}

// [SECTION] the tokenizer keeps [MASK]

Model word_model_with_mask() {
  Model m;
  m.family = "stepformer";
  m.config = tiny_encoder_only(9);
  std::vector<std::string> tokens = {"<unk>", "<pad>", "<bos>", "<eos>", "a", "man", "in", "orange", "[MASK]"};
  m.src_vocab = Vocabulary(tokens, SpecialIds{1, 2, 3, 0});
  m.tokenizer.source_language = "en";
  return m;
}

TEST(MaskedLmTokenizer, KeepsTheLiteralMaskWholeInAnyCaseWithItsSpan) {
  const Model m = word_model_with_mask();
  const std::string text = "A man in [MASK] orange [mask]!";
  const std::vector<Token> t = encode_text(m, text, Side::Source);
  std::vector<std::string> texts;
  for (const Token& k : t) texts.push_back(k.text);
  EXPECT_EQ(texts, (std::vector<std::string>{"<bos>", "a", "man", "in", "[MASK]", "orange", "[MASK]", "!", "<eos>"}));
  EXPECT_EQ(token_ids(t), (std::vector<int>{2, 4, 5, 6, 8, 7, 8, 0, 3}));
  // Spans: each token's bytes in the text, the masks' six characters as typed.
  EXPECT_EQ(t[4].begin, 9u);
  EXPECT_EQ(t[4].end, 15u);
  EXPECT_EQ(t[4].surface, "[MASK]");
  EXPECT_EQ(t[6].surface, "[mask]");
  EXPECT_EQ(text.substr(t[6].begin, t[6].end - t[6].begin), "[mask]");
  EXPECT_EQ(text.substr(t[5].begin, t[5].end - t[5].begin), "orange");
  EXPECT_EQ(text.substr(t[7].begin, t[7].end - t[7].begin), "!");
  EXPECT_FALSE(t[4].unknown);
  EXPECT_FALSE(t[4].special);
  EXPECT_EQ(t.back().begin, text.size());
  // Glued to a word, and without the specials.
  const std::vector<Token> glued = encode_text(m, "man[MASK]", Side::Source, /*specials=*/false);
  EXPECT_EQ(token_ids(glued), (std::vector<int>{5, 8}));
  // A model without a mask token splits it as the Moses rules do (the translators, the GPT: unchanged).
  Model plain = m;
  plain.config.mask_id = -1;
  std::vector<std::string> split;
  for (const Token& k : encode_text(plain, "in [MASK]", Side::Source, false)) split.push_back(k.text);
  EXPECT_EQ(split, (std::vector<std::string>{"in", "&#91;", "mask", "&#93;"}));
}

// [SECTION] end to end: train, eval --text, fill-mask

// A language where a masked word follows from its neighbours: each sentence counts up from a random number,
// c3 c4 c5 ..., modulo 12, 4 to 9 words long. A model that learned it fills a masked word (its neighbours known)
// with certainty; chance is 1 in 12.
fs::path counting_corpus(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("stepformer_mlm_" + name + "_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::mt19937 rng(3);
  for (const auto& [split, n] : {std::pair<std::string, int>{"train", 600}, {"val", 40}, {"test_2016_flickr", 40}}) {
    std::ofstream f(dir / (split + ".lc.norm.tok.zz"));
    for (int i = 0; i < n; ++i) {
      const unsigned start = rng() % 12, length = 4 + rng() % 6;
      for (unsigned k = 0; k < length; ++k) f << (k ? " " : "") << "c" << (start + k) % 12;
      f << "\n";
    }
  }
  return dir;
}

const std::string kShapeArgs =
    " --shape encoder-only --lang zz --d-model 32 --heads 4 --encoder-layers 2 --d-ff 64 --positions learned"
    " --norm post --activation gelu --tie-output --batch-tokens 200 --lr 3e-3 --warmup 30 --dropout 0.1"
    " --label-smoothing 0 --seed 7 --f32 --device cpu";

std::string train_command(const fs::path& dir, const fs::path& out, int epochs, int threads) {
  std::ostringstream s;
  s << "train --data " << dir.string() << " --out " << out.string() << " --epochs " << epochs << kShapeArgs
    << " --threads " << threads;
  return s.str();
}

// The fill-mask lines "token<TAB>probability", in order.
std::vector<std::pair<std::string, double>> candidates_of(const std::string& output) {
  std::vector<std::pair<std::string, double>> out;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    const size_t tab = line.find('\t');
    if (tab == std::string::npos) continue;
    out.emplace_back(line.substr(0, tab), std::stod(line.substr(tab + 1)));
  }
  return out;
}

TEST(CliTrainEncoderOnly, ResumesBitForBitRecordsItsScoresAndFillsTheMissingNumber) {
  const fs::path dir = counting_corpus("cli");
  const fs::path straight = dir / "straight.safetensors";
  testing::CommandRun r = cli(train_command(dir, straight, 16, 1));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("encoder-only"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("epoch 16: train loss"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("valid masked-token accuracy"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("valid BLEU"), std::string::npos) << r.output;

  // Ten epochs on two threads, "interrupted", then resumed to sixteen: the very weights and Adam moments (the
  // masking of each epoch follows from the seed, the epoch and the sentence, never from where a run started).
  const fs::path resumed = dir / "resumed.safetensors";
  ASSERT_EQ(cli(train_command(dir, resumed, 10, 2)).exit_code, 0);
  r = cli(train_command(dir, resumed, 16, 2) + " --resume");
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

  // The model file: BERT's shape, one vocabulary ending in [MASK], the language, and its scores.
  const Model m = load_model(straight.string());
  EXPECT_EQ(m.config.stacks, ModelStacks::EncoderOnly);
  EXPECT_EQ(m.config.n_encoder_layers, 2);
  EXPECT_EQ(m.config.n_decoder_layers, 0);
  EXPECT_TRUE(m.tgt_vocab.empty());
  ASSERT_EQ(m.src_vocab.size(), 17);  // <unk> <pad> <bos> <eos>, c0 .. c11 and [MASK]
  EXPECT_EQ(m.config.mask_id, 16);
  EXPECT_EQ(m.src_vocab.token(16), "[MASK]");
  EXPECT_EQ(m.tokenizer.source_language, "zz");
  ASSERT_TRUE(m.provenance.contains("test_masked_accuracy")) << m.provenance.dump();
  ASSERT_TRUE(m.provenance.contains("test_perplexity")) << m.provenance.dump();
  EXPECT_FALSE(m.provenance.contains("valid_bleu_greedy"));
  EXPECT_EQ(m.provenance["masking_seed"].get<uint64_t>(), kEvaluationMaskingSeed);
  const double accuracy = m.provenance["test_masked_accuracy"].get<double>();
  const double perplexity = m.provenance["test_perplexity"].get<double>();
  // Chance is 1 in 12 (perplexity about 17 untrained); a broken objective or backward pass stays near it.
  EXPECT_GT(accuracy, 0.6) << m.provenance.dump();
  EXPECT_LT(perplexity, 3.0) << m.provenance.dump();
  EXPECT_GE(perplexity, 1.0);
  const long test_tokens = m.provenance["test_tokens"].get<long>();
  EXPECT_GE(test_tokens, 40);      // at least one chosen word per sentence
  EXPECT_LE(test_tokens, 40 * 2);  // round(15% of at most 9 words) = 1: one each, here

  // eval --text: the same figures on the same file.
  r = cli("eval " + straight.string() + " --text " + (dir / "test_2016_flickr.lc.norm.tok.zz").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  char want[96];
  std::snprintf(want, sizeof want, "masked-token accuracy = %.2f%%", 100.0 * accuracy);
  EXPECT_NE(r.output.find(want), std::string::npos) << r.output;
  std::snprintf(want, sizeof want, "perplexity = %.2f", perplexity);
  EXPECT_NE(r.output.find(want), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("masked positions " + std::to_string(test_tokens)), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("masking seed 20161"), std::string::npos) << r.output;

  // fill-mask: the missing number first, and each line's probability the model's softmax at the mask.
  r = cli("fill-mask " + straight.string() + " \"c3 c4 [MASK] c6 c7\" --top 3");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto top = candidates_of(r.output);
  ASSERT_EQ(top.size(), 3u) << r.output;
  EXPECT_EQ(top[0].first, "c5") << r.output;
  EXPECT_GT(top[0].second, 0.5) << r.output;
  EXPECT_GE(top[0].second, top[1].second);
  EXPECT_GE(top[1].second, top[2].second);
  const Trace t = forward(m.config, m.weights, token_ids(encode_text(m, "c3 c4 [MASK] c6 c7", Side::Source)), {});
  char line[64];
  std::snprintf(line, sizeof line, "c5\t%.4f\n", static_cast<double>(t.probs(3, m.src_vocab.id("c5"))));
  EXPECT_EQ(r.output.rfind(line, 0), 0u) << r.output << " vs " << line;
  r = cli("fill-mask " + straight.string() + " \"c8 c9 [mask] c11\"");  // default 5 lines; lowercase works too
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto first = candidates_of(r.output);
  ASSERT_EQ(first.size(), 5u) << r.output;
  EXPECT_EQ(first[0].first, "c10") << r.output;
  // Every token with --top V: the probabilities of the whole vocabulary, summing to 1.
  r = cli("fill-mask " + straight.string() + " \"c1 [MASK] c3\" --top 17");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto all = candidates_of(r.output);
  ASSERT_EQ(all.size(), 17u) << r.output;
  double sum = 0;
  for (const auto& [token, p] : all) sum += p;
  EXPECT_NEAR(sum, 1.0, 17 * 0.00005 + 1e-6);
  fs::remove_all(dir);
}

TEST(CliTrainEncoderOnly, RefusesOptionsOfTheOtherShapesByName) {
  const fs::path dir = counting_corpus("refuse");
  const std::string out = (dir / "m.safetensors").string();
  for (const std::string& extra : std::vector<std::string>{" --src zz", " --tgt zz", " --decoder-layers 2",
                                                           " --final-beam 2", " --from " + out}) {
    const testing::CommandRun r = cli(train_command(dir, out, 1, 1) + extra);
    EXPECT_EQ(r.exit_code, 2) << extra << ": " << r.output;
    EXPECT_NE(r.output.find(extra.substr(1, extra.find(' ', 1) - 1) + " is not an option of --shape encoder-only"),
              std::string::npos)
        << r.output;
  }
  testing::CommandRun r = cli("train --data " + dir.string() + " --out " + out + " --mask-rate 0.2");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--mask-rate is not an option of --shape encoder-decoder"), std::string::npos) << r.output;
  r = cli("train --data " + dir.string() + " --out " + out + " --shape decoder-only --mask-rate 0.2");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--mask-rate is not an option of --shape decoder-only"), std::string::npos) << r.output;
  r = cli(train_command(dir, out, 1, 1) + " --mask-rate 0");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_FALSE(fs::exists(out));
  fs::remove_all(dir);
}

TEST(CliFillMask, RefusesTextWithoutAMaskAModelWithoutOneAndABadTop) {
  const fs::path dir = counting_corpus("fill");
  const fs::path model = dir / "m.safetensors";
  ASSERT_EQ(cli(train_command(dir, model, 1, 1)).exit_code, 0);
  testing::CommandRun r = cli("fill-mask " + model.string() + " \"c3 c4 c5\"");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("the text holds no [MASK]"), std::string::npos) << r.output;
  r = cli("fill-mask " + model.string() + " \"c3 [MASK]\" --top 18");  // the vocabulary has 17
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("top_k must lie in [1, 17]"), std::string::npos) << r.output;
  r = cli("fill-mask " + model.string() + " \"c3 [MASK]\" --top 0");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  r = cli("fill-mask " + model.string() + " \"c3 [MASK] c5 [MASK]\" --top 1");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("the text holds 2 masks; the candidates are for the first"), std::string::npos) << r.output;
  // A translator and a GPT have no mask token.
  r = cli("fill-mask " + std::string(STEPFORMER_SOURCE_DIR) + "/assets/models/de-en.safetensors \"ein [MASK]\"");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("needs an encoder-only masked language model"), std::string::npos) << r.output;
  r = cli("fill-mask " + std::string(STEPFORMER_SOURCE_DIR) + "/assets/models/gpt-en.safetensors \"a [MASK]\"");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("decoder_only"), std::string::npos) << r.output;
  r = cli("fill-mask " + model.string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("usage: stepformer-cli fill-mask"), std::string::npos) << r.output;
  // eval --text refuses a translator by name.
  r = cli("eval " + std::string(STEPFORMER_SOURCE_DIR) + "/assets/models/de-en.safetensors --text " +
          (dir / "val.lc.norm.tok.zz").string());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("is encoder_decoder"), std::string::npos) << r.output;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace sf

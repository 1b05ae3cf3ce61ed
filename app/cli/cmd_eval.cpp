// stepformer-cli eval MODEL --src FILE --ref FILE: translates a tokenized test set and prints corpus BLEU-4
// (tokenized lowercase text, no smoothing), last line "BLEU = xx.xx".
// stepformer-cli eval MODEL --text FILE: a decoder-only model's per-token perplexity over FILE's sentences, last
// line "perplexity = xx.xx" (train/evaluate.h, score_likelihood: the trainer's own measure); for an encoder-only
// masked language model, its masked-token accuracy and perplexity (score_masked_lm, the fixed masking seed).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>

#include "backend/cuda_model.h"
#include "backend/device.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "decode/decoder.h"
#include "io/user_files.h"
#include "model/hf_marian.h"
#include "model/model.h"
#include "train/corpus.h"
#include "train/evaluate.h"
#include "util/error.h"
#include "util/paths.h"
#include "util/printable.h"

namespace sf::cli {

namespace {

// --text with an encoder-only model: each line <bos> w1 .. wn <eos>, masked as training masks (15% of the words,
// at least one; 80% [MASK], 10% a random word, 10% kept) with the trainer's fixed evaluation seed; the original
// words predicted at the chosen positions.
int evaluate_masked_language_model(const Model& model, const std::string& model_path, const std::string& text_path) {
  const Config& c = model.config;
  if (!c.has_mask_token())
    fail(ErrorKind::Unsupported, "eval", "--text scores an encoder-only model by the words it fills in; '" +
                                             model_path + "' has no mask token (its config has no mask_id)");
  const std::vector<TokenSequence> sentences = read_sentences(text_path);
  if (sentences.empty()) fail(ErrorKind::Input, "eval", "'" + text_path + "' holds no sentences");
  long unknown = 0;
  for (size_t i = 0; i < sentences.size(); ++i) {
    // The model reads <bos>, the words and <eos>: n + 2 positions. A longer line is refused, not scored cut.
    if (static_cast<int>(sentences[i].size()) + 2 > c.max_positions)
      fail(ErrorKind::Input, "eval", "'" + text_path + "' line " + std::to_string(i + 1) + " has " +
                                         std::to_string(sentences[i].size()) + " tokens; the model reads at most " +
                                         std::to_string(c.max_positions - 2));
    for (const std::string& w : sentences[i]) unknown += !model.src_vocab.find(w).has_value();
  }
  const MaskingSettings masking = evaluation_masking(c);  // the trainer's validation and test masking
  const auto start = std::chrono::steady_clock::now();
  const MaskedLmScore score = score_masked_lm(c, model.weights, masked_lm_examples(sentences, model.src_vocab), 3000,
                                              c.max_positions, masking);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%zu sentences, %ld words as <unk>, %.1f s on the CPU\n", score.sentences, unknown, seconds);
  std::printf("masked positions %ld (15%% of each sentence's words, at least one; masking seed %llu), NLL %.1f nats, "
              "%.4f nats per position\n",
              score.tokens, static_cast<unsigned long long>(kEvaluationMaskingSeed), score.nll_sum, score.mean_nll());
  std::printf("masked-token accuracy = %.2f%%\n", 100.0 * score.accuracy());
  std::printf("perplexity = %.2f\n", score.perplexity());
  return 0;
}

// --text: each line <bos> w1 .. wn, every word (outside the vocabulary: <unk>) and the <eos> predicted; the sums
// of -ln p in nats.
int evaluate_language_model(const std::string& model_path, const std::string& text_path) {
  std::vector<std::string> warnings;
  const Model model = open_model(model_path, &warnings);
  for (const std::string& w : warnings) std::fprintf(stderr, "stepformer-cli eval: warning: %s\n", printable(w).c_str());
  if (model.config.stacks == ModelStacks::EncoderDecoder)
    fail(ErrorKind::Unsupported, "eval", "--text scores a language model (decoder-only, or encoder-only with a mask "
                                         "token); '" + model_path + "' is encoder_decoder: give it --src and --ref");
  if (model.config.stacks == ModelStacks::EncoderOnly) return evaluate_masked_language_model(model, model_path, text_path);
  const std::vector<TokenSequence> sentences = read_sentences(text_path);
  if (sentences.empty()) fail(ErrorKind::Input, "eval", "'" + text_path + "' holds no sentences");
  long unknown = 0;
  for (size_t i = 0; i < sentences.size(); ++i) {
    // The model reads <bos> and the words: n + 1 positions. A longer line is refused, not scored cut.
    if (static_cast<int>(sentences[i].size()) + 1 > model.config.max_positions)
      fail(ErrorKind::Input, "eval", "'" + text_path + "' line " + std::to_string(i + 1) + " has " +
                                         std::to_string(sentences[i].size()) + " tokens; the model reads at most " +
                                         std::to_string(model.config.max_positions - 1));
    for (const std::string& w : sentences[i]) unknown += !model.tgt_vocab.find(w).has_value();
  }
  const auto start = std::chrono::steady_clock::now();
  const std::vector<Example> examples = make_examples(sentences, model.tgt_vocab);
  const LikelihoodScore score =
      score_likelihood(model.config, model.weights, examples, 3000, model.config.max_positions);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%zu sentences, %ld words as <unk>, %.1f s on the CPU\n", score.sentences, unknown, seconds);
  std::printf("tokens %ld (every word and each <eos>), NLL %.1f nats, %.4f nats per token\n", score.tokens,
              score.nll_sum, score.mean_nll());
  std::printf("perplexity = %.2f\n", score.perplexity());
  return 0;
}

}  // namespace

int run_eval(const Args& args) {
  OptionParser p("eval");
  std::string src, ref, out, text;
  int beam = 1;
  DeviceRequest device = DeviceRequest::Auto;
  p.device("--device", &device);
  bool tf32 = false;
  p.flag("--tf32", &tf32);
  p.value("--src", &src);
  p.value("--ref", &ref);
  p.value("--out", &out);
  p.value("--beam", &beam, 1, kMaxBeamWidth);
  float length_penalty = 0.6f;  // GNMT's alpha: a finished beam scores sum log p / ((5 + length) / 6)^alpha
  p.value("--length-penalty", &length_penalty, 0.0f, 5.0f);
  p.value("--text", &text);
  if (!p.parse(args)) return 2;
  if (!text.empty() && !p.help_requested()) {  // a language model: no translation options
    if (p.positional().size() != 1) {
      std::fputs("stepformer-cli eval: --text needs the language model (decoder-only or encoder-only) to score\n",
                 stderr);
      return 2;
    }
    for (const char* name : {"--src", "--ref", "--out", "--beam", "--device", "--tf32"})
      if (std::find(args.begin(), args.end(), name) != args.end()) {
        std::fprintf(stderr, "stepformer-cli eval: %s is not an option of --text (a language model's "
                             "perplexity, on the CPU)\n", name);
        return 2;
      }
    return evaluate_language_model(p.positional()[0], text);
  }
  if (p.help_requested() || p.positional().size() > 1 || src.empty() || ref.empty()) {
    std::fputs("usage: stepformer-cli eval [MODEL.safetensors] --src FILE --ref FILE [--beam K] [--length-penalty A]\n"
               "                          [--out HYPOTHESES] [--device auto|cpu|cuda] [--tf32]\n"
               "       stepformer-cli eval MODEL.safetensors --text FILE    (a decoder-only or encoder-only model)\n\n"
               "MODEL defaults to the shipped assets/models/de-en-bpe.safetensors (the subword translator).\n"
               "Translates FILE (one tokenized sentence per line, e.g. test_2016_flickr.lc.norm.tok.de) and scores\n"
               "it against the references: corpus BLEU-4 on tokenized lowercase text, no smoothing, as the\n"
               "Multi30k tutorials report it. A SentencePiece model (a Marian folder) reads raw text instead, split\n"
               "by its own SentencePiece models, and BLEU compares the words of its output with the references'.\n"
               "--beam K: beam search of width K, a finished hypothesis scored sum log p / ((5 + length) / 6)^A\n"
               "(GNMT's length penalty, --length-penalty A, 0.6 as the paper's; a Marian model decodes as its\n"
               "generation config says). --out writes the translations, one per line; it replaces an existing\n"
               "regular file (keeping its permissions), never the model, FILE or the references.\n"
               "FILE and the references are regular files of at most 64 MB and 1,000,000 lines; a line longer than\n"
               "the model accepts is an error naming the line.\n"
               "--device auto (the default: decoding on the GPU where this build has CUDA and a GPU can take the\n"
               "model, else the CPU, saying why), cpu, or cuda (an error where no GPU can); --tf32: the GPU's matrix\n"
               "products on TF32 tensor cores instead of FP32.\n\n"
               "--text FILE (a decoder-only model, e.g. one trained with train --shape decoder-only): its per-token\n"
               "perplexity over FILE, one tokenized sentence a line: the model reads <bos> w1 .. wn and each word\n"
               "and the final <eos> is predicted (a word outside its vocabulary as <unk>); prints the tokens, the\n"
               "negative log-likelihood in nats, and last \"perplexity = x\", exp(NLL per token): with words as\n"
               "tokens, the per-word perplexity. tools/ngram_baseline.py scores a Kneser-Ney trigram the same way.\n"
               "With an encoder-only masked language model (train --shape encoder-only): each line is read as\n"
               "<bos> w1 .. wn <eos> and masked as training masks (15% of the words, at least one, chosen; of them\n"
               "80% [MASK], 10% a random word, 10% kept), drawn with the fixed masking seed 20161 so the figures\n"
               "repeat; prints \"masked-token accuracy = x%\" (the most probable token is the original word) and\n"
               "last \"perplexity = x\", exp of the mean -ln p(original word) over the chosen positions.\n",
               p.help_requested() ? stdout : stderr);
    return p.help_requested() ? 0 : 2;
  }
  // The shipped model when none is named: resolved here, so that --out can never be it either.
  const std::string model_path = p.positional().empty() ? shipped_model_path() : p.positional()[0];
  const WriteRules out_rules{.replace = true, .inputs = {model_path, src, ref}, .allowed_folder = ""};
  if (!out.empty())  // checked before the work, which can take minutes
    if (const std::string problem = check_output_path(out, out_rules); !problem.empty())
      fail(ErrorKind::File, "eval", problem);
  const Model model = load_model_warning("eval", model_path);
  const ParallelCorpus corpus = read_parallel_corpus(src, ref);
  // A SentencePiece model (Marian) reads raw text: its own pieces; a words_bpe model the tokenized words' pieces;
  // BLEU then on the words of its output.
  const bool subwords = uses_sentencepiece(model.tokenizer);
  const std::vector<TokenSequence> sources = subwords ? pieces_of(model, corpus.source, Side::Source) : corpus.source;
  const int specials = model.tokenizer.kind == "sentencepiece" ? 1 : 2;  // </s>; or <bos> and <eos>
  // Every line must fit the model: translate rejects a longer sentence, so eval does too rather than score a cut
  // one.
  for (size_t i = 0; i < sources.size(); ++i)
    if (static_cast<int>(sources[i].size()) + specials > model.config.max_positions)
      fail(ErrorKind::Input, "eval", "'" + src + "' line " + std::to_string(i + 1) + " has " +
                                         std::to_string(sources[i].size()) + (subwords ? " pieces" : " tokens") +
                                         "; the model accepts at most " +
                                         std::to_string(model.config.max_positions - specials));
  const auto start = std::chrono::steady_clock::now();
  std::vector<TokenSequence> hyps;
  // On the GPU where one takes the model (each sentence's steps there: Decoder::compute_on), else the CPU.
  const TranslateSettings how{beam, length_penalty, 0};
  const bool on_gpu = run_on_gpu("eval", device, model, [&](CudaModel& gpu) {
    TranslateSettings there = how;
    there.gpu = &gpu;
    hyps = translations_for_bleu(model, model.weights, sources, there);
  }, tf32);
  if (!on_gpu) hyps = translations_for_bleu(model, model.weights, sources, how);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!out.empty()) {  // atomically, under the rules checked above (io/user_files.h)
    std::string text;
    for (const auto& h : hyps) {
      for (size_t i = 0; i < h.size(); ++i) text += (i ? " " : "") + h[i];
      text += "\n";
    }
    if (const std::string error = write_user_file(out, text, out_rules); !error.empty()) fail(ErrorKind::File, "eval", error);
  }
  const BleuScore s = corpus_bleu(hyps, corpus.target);
  std::printf("%zu sentences, %s, %.1f s on the %s\n", hyps.size(),
              beam > 1 ? ("beam " + std::to_string(beam) + ", length penalty " + std::to_string(length_penalty).substr(0, 4)).c_str()
                       : "greedy",
              seconds, on_gpu ? "GPU" : "CPU");
  std::printf("precisions %.1f/%.1f/%.1f/%.1f, brevity penalty %.3f (hypothesis %ld, reference %ld tokens)\n",
              100 * s.precisions[0], 100 * s.precisions[1], 100 * s.precisions[2], 100 * s.precisions[3],
              s.brevity_penalty, s.hypothesis_length, s.reference_length);
  std::printf("BLEU = %.2f\n", 100.0 * s.bleu);
  return 0;
}

}  // namespace sf::cli

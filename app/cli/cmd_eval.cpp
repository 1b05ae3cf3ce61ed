// stepformer-cli eval MODEL --src FILE --ref FILE: translates a tokenized test set and prints corpus BLEU-4
// (tokenized lowercase text, no smoothing), last line "BLEU = xx.xx".
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "cli/commands.h"
#include "cli/options.h"
#include "model/model.h"
#include "train/corpus.h"
#include "train/evaluate.h"
#include "util/error.h"
#include "util/paths.h"

namespace sf::cli {

int run_eval(const Args& args) {
  OptionParser p("eval");
  std::string src, ref, out;
  int beam = 1;
  p.value("--src", &src);
  p.value("--ref", &ref);
  p.value("--out", &out);
  p.value("--beam", &beam, 1, 64);
  if (!p.parse(args)) return 2;
  if (p.help_requested() || p.positional().size() > 1 || src.empty() || ref.empty()) {
    std::fputs("usage: stepformer-cli eval [MODEL.safetensors] --src FILE --ref FILE [--beam K] [--out HYPOTHESES]\n\n"
               "MODEL defaults to the shipped assets/models/de-en.safetensors.\n"
               "Translates FILE (one tokenized sentence per line, e.g. test_2016_flickr.lc.norm.tok.de) and scores\n"
               "it against the references: corpus BLEU-4 on tokenized lowercase text, no smoothing, as the\n"
               "Multi30k tutorials report it. --out writes the translations, one per line.\n",
               p.help_requested() ? stdout : stderr);
    return p.help_requested() ? 0 : 2;
  }
  const Model model = load_model(p.positional().empty() ? shipped_model_path() : p.positional()[0]);
  const ParallelCorpus corpus = read_parallel_corpus(src, ref);
  const auto start = std::chrono::steady_clock::now();
  const auto hyps = translate_corpus(model.config, model.weights, model.src_vocab, model.tgt_vocab, corpus.source,
                                     {beam, 0.6f, 0});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!out.empty()) {
    // Written beside the target and renamed, so an interrupted run leaves no half-written file.
    const std::string tmp = out + ".tmp";
    {
      std::ofstream f(tmp);
      for (const auto& h : hyps) {
        for (size_t i = 0; i < h.size(); ++i) f << (i ? " " : "") << h[i];
        f << "\n";
      }
      if (!f) fail(ErrorKind::File, "eval", "cannot write '" + tmp + "'");
    }
    std::filesystem::rename(tmp, out);
  }
  const BleuScore s = corpus_bleu(hyps, corpus.target);
  std::printf("%zu sentences, %s, %.1f s\n", hyps.size(), beam > 1 ? ("beam " + std::to_string(beam)).c_str() : "greedy",
              seconds);
  std::printf("precisions %.1f/%.1f/%.1f/%.1f, brevity penalty %.3f (hypothesis %ld, reference %ld tokens)\n",
              100 * s.precisions[0], 100 * s.precisions[1], 100 * s.precisions[2], 100 * s.precisions[3],
              s.brevity_penalty, s.hypothesis_length, s.reference_length);
  std::printf("BLEU = %.2f\n", 100.0 * s.bleu);
  return 0;
}

}  // namespace sf::cli

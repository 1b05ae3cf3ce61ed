// stepformer-cli train: trains a translation model (or, --shape decoder-only, a GPT-style language model of one
// language; --shape encoder-only, a BERT-style masked language model of one language) on Multi30k's tokenized files with the core's own backward pass, writing the model (best validation
// BLEU, or perplexity) and a resumable checkpoint after every epoch.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>

#include "cli/commands.h"
#include "cli/options.h"
#include "train/trainer.h"
#include "util/error.h"
#include "util/printable.h"

namespace sf::cli {

namespace {

const char* kHelp =
    "usage: stepformer-cli train --data DIR --out MODEL.safetensors [OPTIONS]\n\n"
    "Trains an encoder-decoder Transformer on DIR/{train,val}.lc.norm.tok.{SRC,TGT} (Multi30k's tokenized\n"
    "lowercase files; the data are read in place, never copied). Vocabularies hold the words seen at least\n"
    "--min-freq times in the training split. After each epoch: validation perplexity and greedy BLEU, a\n"
    "checkpoint (MODEL.safetensors.checkpoint, written atomically), and MODEL.safetensors when validation BLEU\n"
    "is the best so far. Run it again with the same options to resume after an interrupt. At the end the best\n"
    "model is scored on DIR/test_2016_flickr.* (greedy and beam search) and the scores go into its provenance.\n\n"
    "data:      --src LANG (de)  --tgt LANG (en)  --min-freq N (2)  --max-length N (100)\n"
    "model:     --d-model N (256)  --heads N (8)  --encoder-layers N (3)  --decoder-layers N (3)  --d-ff N (512)\n"
    "           --positions sinusoidal|learned  --norm post|pre  --activation relu|gelu  --tie-output\n"
    "training:  --epochs N (20)  --batch-tokens N (6000)  --lr X (peak, 1e-3)  --warmup N (4000)\n"
    "           --schedule inverse_sqrt|constant  --dropout X (0.1)  --label-smoothing X (0.1)  --clip X (1)\n"
    "           --seed N (1)  --threads N (all cores)  --final-beam K (4)  --length-penalty A (0.6: the final\n"
    "           beam's GNMT alpha)  --f32 (store F32, not F16)\n"
    "           --average-last N (1): checkpoint averaging, as the paper's last 5 checkpoints: at the end the mean of\n"
    "           the weights after each of the last N epochs is scored on the validation set and becomes the model\n"
    "           when its greedy BLEU is above the best single epoch's (those epochs' weights travel in the checkpoint)\n"
    "           --device auto|cpu|cuda (auto: the GPU where this build has CUDA and a GPU can take the run)\n"
    "           --tf32 (on the GPU: matrix products on TF32 tensor cores instead of FP32)\n"
    "           --checkpoint PATH  --no-resume (start over even if a checkpoint exists)\n"
    "           --resume (continue from the checkpoint, which must exist: an error rather than a fresh start)\n"
    "subwords:  --subwords FILE.spm (stepformer-cli subwords): each tokenized word split into the byte-pair\n"
    "           pieces of this SentencePiece model, one vocabulary of its pieces for both languages (the paper's\n"
    "           way: no word is unknown); BLEU on the words the pieces make. --share-embeddings: one embedding\n"
    "           matrix for both languages (with --tie-output also the output layer's, the paper's section 3.4)\n"
    "fine-tune: --from MODEL (a model file or a Hugging Face Marian folder): start from its weights, config,\n"
    "           vocabularies and tokenizer instead of a new model (the model options above are then not used);\n"
    "           a SentencePiece model (Marian) reads raw text, DIR/{train,val,test_2016_flickr}.{SRC,TGT}, one\n"
    "           sentence a line, split by its own SentencePiece models; BLEU on its detokenized output\n"
    "timeline:  --timeline PATH (snapshots of the weights at step 0, every 50 steps to 300, every 100 to 1000\n"
    "           and each epoch's end, written after every epoch: the app replays the run from it)\n"
    "           --timeline-storage int8-rows|f16|f32 (int8-rows: 8-bit weights with a scale per row)\n\n"
    "Every number has a range (a value outside it is named with the range); a model whose training would not\n"
    "fit in this machine's memory is refused before anything starts. The model and the checkpoint replace\n"
    "regular files at their paths (keeping their permissions), never the data, each other, a link, a folder\n"
    "or a device; the data files are regular files of at most 64 MB and 1,000,000 lines and must\n"
    "hold sentences.\n\n"
    "decoder-only (a GPT-style language model of one language):\n"
    "  stepformer-cli train --shape decoder-only --lang LANG --data DIR --out MODEL.safetensors [OPTIONS]\n"
    "           --shape encoder-decoder|decoder-only|encoder-only (encoder-decoder: translation, the default)\n"
    "           --lang LANG (en): the model learns the next word of DIR/{train,val}.lc.norm.tok.LANG: it reads\n"
    "           <bos> w1 .. wn and predicts w1 .. wn <eos>; one vocabulary, the words seen at least --min-freq\n"
    "           times (the others are <unk>). --decoder-layers sets its depth. After each epoch: validation\n"
    "           per-token perplexity (no BLEU: it translates nothing); the model when that is the lowest so far;\n"
    "           at the end the test perplexity on DIR/test_2016_flickr.lc.norm.tok.LANG into its provenance.\n"
    "           Perplexity = exp(mean -ln p per predicted token: every word, an unknown one as <unk>, and each\n"
    "           sentence's <eos>); with words as tokens it is the per-word perplexity.\n"
    "           Not with it: --src, --tgt, --encoder-layers, --from, --final-beam, --average-last,\n"
    "           --length-penalty, --mask-rate.\n\n"
    "encoder-only (a BERT-style masked language model of one language):\n"
    "  stepformer-cli train --shape encoder-only --lang LANG --data DIR --out MODEL.safetensors [OPTIONS]\n"
    "           --lang LANG (en): each sentence of DIR/{train,val}.lc.norm.tok.LANG is read as <bos> w1 .. wn <eos>;\n"
    "           --mask-rate X (0.15) of its words are chosen (at least one), of them 80% replaced by [MASK], 10% by\n"
    "           a random word, 10% kept, and the model learns the original words there (cross-entropy at the chosen\n"
    "           positions only; the masking differs each epoch and follows from --seed). The vocabulary: the words\n"
    "           seen at least --min-freq times, then \"[MASK]\". --encoder-layers sets its depth; the output head\n"
    "           reads the encoder (--tie-output ties it to the embedding). After each epoch: validation masked-token\n"
    "           accuracy and perplexity (exp of the mean -ln p of the original word over the chosen positions), the\n"
    "           masking drawn with the fixed seed 20161 so figures compare across epochs and runs; the model when\n"
    "           the perplexity is the lowest so far; at the end both figures on DIR/test_2016_flickr.lc.norm.tok.LANG\n"
    "           into its provenance. Not with it: --src, --tgt, --decoder-layers, --from, --final-beam, --average-last,\n"
    "           --length-penalty.\n";

std::string format_seconds(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  char buf[32];
  const int total = static_cast<int>(s + 0.5);
  if (total >= 3600) std::snprintf(buf, sizeof(buf), "%dh%02dm", total / 3600, total / 60 % 60);
  else std::snprintf(buf, sizeof(buf), "%dm%02ds", total / 60, total % 60);
  return buf;
}

}  // namespace

int run_train(const Args& args) {
  TrainOptions o;
  o.device = DeviceRequest::Auto;  // the CLI trains on a GPU where there is one
  OptionParser p("train");
  std::string positions = "sinusoidal", norm = "post", activation = "relu", schedule = "inverse_sqrt";
  std::string timeline_storage = "int8-rows";
  std::string shape = "encoder-decoder", language;
  bool tie = false, no_resume = false, must_resume = false, f32 = false;
  int layers_enc = o.model.n_encoder_layers, layers_dec = o.model.n_decoder_layers;
  p.value("--data", &o.data_dir);
  p.value("--from", &o.from_model);
  p.value("--out", &o.out_path);
  p.value("--checkpoint", &o.checkpoint_path);
  p.value("--shape", &shape);
  p.value("--lang", &language);
  p.value("--mask-rate", &o.mask_rate, 0.01f, 1.0f);
  p.value("--src", &o.source_language);
  p.value("--tgt", &o.target_language);
  p.value("--min-freq", &o.min_frequency, 1, 1000000);
  p.value("--max-length", &o.max_length, 4, 4096);
  p.value("--d-model", &o.model.d_model, 2, 4096);
  p.value("--heads", &o.model.n_heads, 1, 256);
  p.value("--encoder-layers", &layers_enc, 1, 64);
  p.value("--decoder-layers", &layers_dec, 1, 64);
  p.value("--d-ff", &o.model.d_ff, 1, 65536);
  p.value("--positions", &positions);
  p.value("--norm", &norm);
  p.value("--activation", &activation);
  p.flag("--tie-output", &tie);
  bool share = false;
  p.flag("--share-embeddings", &share);
  p.value("--subwords", &o.subwords_path);
  p.value("--epochs", &o.epochs, 1, 10000);
  p.value("--batch-tokens", &o.batch_tokens, 16, 10000000);
  p.value("--lr", &o.schedule.peak, 1e-7f, 10.0f);
  p.value("--warmup", &o.schedule.warmup_steps, 0, 10000000);
  p.value("--schedule", &schedule);
  p.value("--dropout", &o.dropout, 0.0f, 0.9f);
  p.value("--label-smoothing", &o.label_smoothing, 0.0f, 0.9f);
  p.value("--clip", &o.clip_norm, 0.0f, 1e6f);
  p.value("--seed", &o.seed);
  p.value("--threads", &o.threads, 0, 256);
  p.device("--device", &o.device);
  p.flag("--tf32", &o.tf32);
  p.value("--final-beam", &o.final_beam, 1, 64);
  p.value("--average-last", &o.average_last, 1, 20);
  p.value("--length-penalty", &o.final_length_penalty, 0.0f, 5.0f);
  p.value("--timeline", &o.timeline_path);
  p.value("--timeline-storage", &timeline_storage);
  p.flag("--no-resume", &no_resume);
  p.flag("--resume", &must_resume);
  p.flag("--f32", &f32);
  if (!p.parse(args)) return 2;
  if (p.help_requested()) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  if (!p.positional().empty()) {
    std::fprintf(stderr, "stepformer-cli train: unexpected argument '%s'\n", p.positional()[0].c_str());
    return 2;
  }
  if (o.data_dir.empty() || o.out_path.empty()) {
    std::fprintf(stderr, "stepformer-cli train: --data DIR and --out MODEL.safetensors are required\n");
    return 2;
  }
  auto choose = [](const std::string& v, const char* a, const char* b, const char* what) {
    if (v != a && v != b) {
      std::fprintf(stderr, "stepformer-cli train: %s must be %s or %s, got '%s'\n", what, a, b, v.c_str());
      return -1;
    }
    return v == a ? 0 : 1;
  };
  // 0 encoder-decoder (translation), 1 decoder-only (GPT), 2 encoder-only (BERT)
  const int shp = shape == "encoder-decoder" ? 0 : shape == "decoder-only" ? 1 : shape == "encoder-only" ? 2 : -1;
  if (shp < 0) {
    std::fprintf(stderr, "stepformer-cli train: --shape must be encoder-decoder, decoder-only or encoder-only, got "
                         "'%s'\n", printable(shape).c_str());
    return 2;
  }
  // Options of one shape given to the other are refused, naming them: they would be silently unused.
  const auto given = [&](const char* name) { return std::find(args.begin(), args.end(), name) != args.end(); };
  const std::vector<const char*> not_for_shape =
      shp == 1   ? std::vector<const char*>{"--src", "--tgt", "--encoder-layers", "--from", "--final-beam", "--mask-rate",
                                             "--subwords", "--share-embeddings", "--average-last", "--length-penalty"}
      : shp == 2 ? std::vector<const char*>{"--src", "--tgt", "--decoder-layers", "--from", "--final-beam", "--subwords",
                                             "--share-embeddings", "--average-last", "--length-penalty"}
                 : std::vector<const char*>{"--lang", "--mask-rate"};
  const char* why_not[] = {"--lang names a language model's language and --mask-rate an encoder-only model's "
                           "masking; a translator has --src and --tgt",
                           "a decoder-only model reads one language, --lang, and has no encoder",
                           "an encoder-only model reads one language, --lang, and has no decoder"};
  for (const char* name : not_for_shape)
    if (given(name)) {
      std::fprintf(stderr, "stepformer-cli train: %s is not an option of --shape %s (%s)\n", name, shape.c_str(),
                   why_not[shp]);
      return 2;
    }
  if (shp == 1) {
    o.model.stacks = ModelStacks::DecoderOnly;
    o.target_language = language.empty() ? "en" : language;
    o.source_language.clear();
    layers_enc = 0;
  }
  if (shp == 2) {
    o.model.stacks = ModelStacks::EncoderOnly;
    o.target_language = language.empty() ? "en" : language;  // the one language (TrainOptions: target_language)
    o.source_language.clear();
    layers_dec = 0;
  }
  const int pos = choose(positions, "sinusoidal", "learned", "--positions");
  const int nrm = choose(norm, "post", "pre", "--norm");
  const int act = choose(activation, "relu", "gelu", "--activation");
  const int sch = choose(schedule, "inverse_sqrt", "constant", "--schedule");
  if (pos < 0 || nrm < 0 || act < 0 || sch < 0) return 2;
  if (!snapshot_storage_from_name(timeline_storage, o.timeline_storage)) {
    std::fprintf(stderr, "stepformer-cli train: --timeline-storage must be int8-rows, f16 or f32, got '%s'\n",
                 timeline_storage.c_str());
    return 2;
  }
  o.model.positional_encoding = pos ? PositionalEncoding::Learned : PositionalEncoding::Sinusoidal;
  o.model.norm_placement = nrm ? NormPlacement::Pre : NormPlacement::Post;
  // pre-norm stacks end with a norm (a decoder-only model has no encoder to norm, an encoder-only one no decoder)
  o.model.encoder_final_norm = nrm == 1 && shp != 1;
  o.model.decoder_final_norm = nrm == 1 && shp != 2;
  o.model.activation = act ? Activation::GELU : Activation::ReLU;
  o.model.tie_output_embedding = tie;
  o.model.share_embeddings = share;
  if (share && o.subwords_path.empty()) {
    std::fprintf(stderr, "stepformer-cli train: --share-embeddings needs one vocabulary for both languages: "
                         "--subwords FILE.spm\n");
    return 2;
  }
  o.model.n_encoder_layers = layers_enc;
  o.model.n_decoder_layers = layers_dec;
  o.model.max_positions = std::max(o.model.max_positions, o.max_length);
  o.schedule.kind = sch ? LearningRateSchedule::Kind::Constant : LearningRateSchedule::Kind::InverseSqrt;
  if (must_resume && no_resume) {
    std::fprintf(stderr, "stepformer-cli train: --resume and --no-resume contradict each other\n");
    return 2;
  }
  o.resume = !no_resume;
  if (must_resume) {  // the checkpoint named (or beside --out) must be there: a typo must not start over
    const std::string checkpoint = o.checkpoint_path.empty() ? o.out_path + ".checkpoint" : o.checkpoint_path;
    std::error_code ec;
    if (!std::filesystem::is_regular_file(checkpoint, ec)) {
      std::fprintf(stderr, "stepformer-cli train: --resume: no checkpoint at '%s' (it is written after each epoch)\n",
                   printable(checkpoint).c_str());
      return 2;
    }
  }
  o.store_f16 = !f32;
  o.command_line = "stepformer-cli train";
  for (const auto& a : args) o.command_line += " " + a;

  const bool tty = isatty(fileno(stderr));
  int last_decile = -1;
  auto progress = [&](int epoch, int batch, int batches, double loss, double tokens_per_second) {
    static auto epoch_start = std::chrono::steady_clock::now();
    if (batch == 1) epoch_start = std::chrono::steady_clock::now();
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - epoch_start).count();
    const double eta_epoch = elapsed / batch * (batches - batch);
    const double eta_all = eta_epoch + elapsed / batch * batches * (o.epochs - epoch);
    const int width = 30, filled = width * batch / batches;
    if (tty) {
      std::fprintf(stderr, "\repoch %d/%d [%.*s%*s] %d/%d loss %.3f  %.0f tok/s  ETA epoch %s, all %s   ", epoch,
                   o.epochs, filled, "##############################", width - filled, "", batch, batches, loss,
                   tokens_per_second, format_seconds(eta_epoch).c_str(), format_seconds(eta_all).c_str());
      if (batch == batches) std::fputc('\n', stderr);
    } else {
      const int decile = 10 * batch / batches;
      if (decile != last_decile || batch == batches) {
        last_decile = decile;
        std::fprintf(stderr, "epoch %d/%d %3d%% (%d/%d batches) loss %.3f  %.0f tok/s  ETA epoch %s, all %s\n",
                     epoch, o.epochs, 100 * batch / batches, batch, batches, loss, tokens_per_second,
                     format_seconds(eta_epoch).c_str(), format_seconds(eta_all).c_str());
      }
    }
    std::fflush(stderr);
  };
  auto log = [](const std::string& s) {
    std::printf("%s\n", s.c_str());
    std::fflush(stdout);
  };
  const TrainResult r = train_model(o, progress, log);
  if (shp == 2) {
    const EpochRecord* best = r.best_epoch > 0 ? &r.history[static_cast<size_t>(r.best_epoch - 1)] : nullptr;
    std::printf("trained %zu epochs in %s; best epoch %d (valid masked-token accuracy %.2f%%, perplexity %.2f)\n",
                r.history.size(), format_seconds(r.wall_seconds).c_str(), r.best_epoch,
                best ? 100.0 * best->valid_masked_accuracy : 0.0, best ? std::exp(best->valid_nll) : 0.0);
  } else if (shp == 1) {
    const double best_perplexity = r.best_epoch > 0 ? std::exp(r.history[r.best_epoch - 1].valid_nll) : 0.0;
    std::printf("trained %zu epochs in %s; best epoch %d (valid per-token perplexity %.2f)\n", r.history.size(),
                format_seconds(r.wall_seconds).c_str(), r.best_epoch, best_perplexity);
  } else {
    std::printf("trained %zu epochs in %s; best epoch %d (valid BLEU %.2f greedy)\n", r.history.size(),
                format_seconds(r.wall_seconds).c_str(), r.best_epoch, r.best_valid_bleu);
  }
  return 0;
}

}  // namespace sf::cli

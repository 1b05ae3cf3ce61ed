// Training a translation model on a parallel corpus with the core's own backward pass: what
// `stepformer-cli train` runs, and how the shipped models were made.
//
// Each epoch: batches of similar-length sentences in an order fixed by (seed, epoch); per batch the forward
// with dropout, label-smoothed loss, backward, gradient clipping and an Adam step at the scheduled learning
// rate. After each epoch: validation loss and greedy BLEU, a checkpoint written atomically (weights, Adam
// moments, step, history: an interrupted run resumes from the last finished epoch and continues exactly as if
// never stopped), and the model file rewritten when validation BLEU is the best so far.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/config.h"
#include "train/optimizer.h"

namespace sf {

struct TrainOptions {
  std::string data_dir;                 // holds train.lc.norm.tok.{src,tgt} and val.lc.norm.tok.{src,tgt}
  std::string source_language = "de";
  std::string target_language = "en";
  std::string test_name = "test_2016_flickr";  // scored at the end when present: provenance gets test BLEU
  std::string out_path;                 // the model file (best validation BLEU)
  std::string checkpoint_path;          // default: out_path + ".checkpoint"
  Config model;                         // shape and variant; vocabulary sizes come from the data
  int min_frequency = 2;
  int epochs = 20;
  int batch_tokens = 6000;              // padded tokens per batch (longest sentence x sentences)
  int max_length = 100;                 // longer sentences are cut
  float dropout = 0.1f;
  float label_smoothing = 0.1f;
  float clip_norm = 1.0f;
  LearningRateSchedule schedule;
  AdamSettings adam;
  uint64_t seed = 1;
  int threads = 0;                      // 0: all cores
  int final_beam = 4;                   // beam width for the test score at the end
  bool resume = true;                   // continue from checkpoint_path when it exists
  std::string command_line;             // recorded in the provenance
  bool store_f16 = true;                // the model file stores F16 (half the size; the checkpoint keeps F32)
};

struct EpochRecord {
  int epoch = 0;
  double train_loss = 0, train_nll = 0, valid_nll = 0, valid_bleu = 0;
  double seconds = 0, tokens_per_second = 0;
  float learning_rate = 0;
};

struct TrainResult {
  std::vector<EpochRecord> history;
  int best_epoch = 0;
  double best_valid_bleu = 0, test_bleu_greedy = -1, test_bleu_beam = -1;
  double wall_seconds = 0;
};

// Progress callback: (epoch, batch index, batches in the epoch, running loss, tokens per second).
using TrainProgress = std::function<void(int, int, int, double, double)>;

TrainResult train_model(const TrainOptions& options, const TrainProgress& progress = nullptr,
                        const std::function<void(const std::string&)>& log = nullptr);

}  // namespace sf

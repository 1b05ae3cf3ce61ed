// Training a translation model on a parallel corpus, or a decoder-only (next word) or encoder-only (masked words)
// language model on one language's sentences, with the core's own backward pass: what `stepformer-cli train` runs,
// and how the shipped models were made.
//
// Each epoch: batches of similar-length sentences in an order fixed by (seed, epoch); per batch the forward
// with dropout, label-smoothed loss, backward, gradient clipping and an Adam step at the scheduled learning
// rate. After each epoch: validation loss and greedy BLEU (a language model: perplexity alone; a masked one:
// masked-token accuracy and perplexity), a checkpoint written atomically (weights, Adam
// moments, step, history: an interrupted run resumes from the last finished epoch and continues exactly as if
// never stopped), and the model file rewritten when validation BLEU is the best so far.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend/device.h"
#include "model/config.h"
#include "model/model.h"
#include "train/timeline.h"
#include "train/optimizer.h"

namespace sf {

// The shape of the model (model.stacks) chooses what is learnt:
//   EncoderDecoder  translation: source_language -> target_language, validation BLEU picks the best model
//   DecoderOnly     a language model (GPT): the next word of target_language's sentences alone, reading
//                   <bos> w1 .. wn and predicting w1 .. wn <eos>; validation perplexity picks the best model and
//                   the test perplexity goes into its provenance. source_language, the encoder's options
//                   (n_encoder_layers, encoder_final_norm, share_embeddings), from_model and final_beam are unused.
//   EncoderOnly     a masked language model (BERT): target_language's sentences alone, read as
//                   <bos> w1 .. wn <eos> with 15% (mask_rate) of the words chosen, of them 80% replaced by [MASK],
//                   10% by a random word, 10% kept (train/masking.h); the loss is the cross-entropy at the chosen
//                   positions. The vocabulary gets "[MASK]" as its last id (config.mask_id). Validation
//                   perplexity over the chosen positions, masked with a fixed seed (kEvaluationMaskingSeed), picks
//                   the best model; test masked-token accuracy and perplexity go into its provenance. The same
//                   options are unused as for DecoderOnly, and the decoder's (n_decoder_layers) too.
struct TrainOptions {
  std::string data_dir;                 // holds train.lc.norm.tok.{src,tgt} and val.lc.norm.tok.{src,tgt}
  std::string source_language = "de";
  std::string target_language = "en";   // a language model's one language
  float mask_rate = 0.15f;               // EncoderOnly: the share of each sentence's words chosen for prediction
  std::string test_name = "test_2016_flickr";  // scored at the end when present: provenance gets test BLEU
  // Fine-tuning: start from this model (a model file or a Hugging Face Marian folder) instead of random weights:
  // its config, vocabularies, tokenizer and weights (the shape options above are not used). A SentencePiece
  // model (Marian) reads raw text, DIR/{train,val,test_2016_flickr}.{src,tgt} (one sentence a line, as written),
  // split by its own tokenizer; BLEU is then on its detokenized output, words split at spaces.
  std::string from_model;
  bool raw_text = false;                // set by the trainer for a SentencePiece model: the raw files above
  // A translator that reads subwords, as the paper's: this SentencePiece model (`stepformer-cli subwords`, a BPE
  // vocabulary shared by both languages) splits each tokenized word of the corpus into pieces; the vocabularies of
  // both sides are its pieces, in its order, and the model file carries it (tokenizer kind words_bpe). BLEU is on
  // the words the pieces make. A translator from new weights only.
  std::string subwords_path;
  std::string out_path;                 // the model file (best validation BLEU; a language model's: perplexity)
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
  int threads = 0;                      // 0: all cores (the CPU's steps, and evaluation in any case)
  // Where the steps run (backend/device.h): cpu, or the GPU (cuda; auto where one is usable). On the GPU the
  // weights, gradients and Adam's moments stay in GPU memory; weights() and each epoch's evaluation and files
  // read them back. A GPU that fails mid-run hands its state back and the CPU goes on.
  DeviceRequest device = DeviceRequest::Cpu;
  // On the GPU: the matrix products (forward and backward) on TF32 tensor cores instead of FP32
  // (CudaModel::set_tf32; the README's GPU section gives what it changes). Ignored on the CPU, said in the log.
  bool tf32 = false;
  int final_beam = 4;                   // beam width for the test score at the end
  float final_length_penalty = 0.6f;    // its GNMT length penalty alpha (the paper's 0.6; chosen on validation)
  // Checkpoint averaging (the paper's section 6.1 averaged its last 5 checkpoints): at the end of a translator's
  // run, the element-wise mean of the weights after each of the last N epochs is scored on the validation set and
  // replaces the model when its BLEU with beam search (final_beam, as the model is scored and used) is higher than
  // the best single epoch's, scored the same way. The N epochs' weights travel in
  // the checkpoint, so an interrupted run averages the same weights. 1: no averaging.
  int average_last = 1;
  bool resume = true;                   // continue from checkpoint_path when it exists
  std::string command_line;             // recorded in the provenance
  bool store_f16 = true;                // the model file stores F16 (half the size; the checkpoint keeps F32)
  // train_model only: the run's timeline (train/timeline.h) written here after every epoch, snapshots where
  // snapshot_due says; empty: none. A resumed run continues the timeline it finds there.
  std::string timeline_path;
  SnapshotStorage timeline_storage = SnapshotStorage::Int8Rows;
};

struct EpochRecord {
  int epoch = 0;
  // valid_nll: mean -ln p per validation target token (exp: the perplexity); valid_bleu 0 for a language model
  double train_loss = 0, train_nll = 0, valid_nll = 0, valid_bleu = 0;
  double valid_masked_accuracy = -1;  // a masked language model's (-1: not one)
  double seconds = 0, tokens_per_second = 0;
  float learning_rate = 0;
};

struct TrainResult {
  std::vector<EpochRecord> history;
  int best_epoch = 0;
  double best_valid_bleu = 0, test_bleu_greedy = -1, test_bleu_beam = -1;
  double test_perplexity = -1;  // a language model's per-token perplexity on the test split (-1: not scored)
  long test_tokens = 0;         // the tokens it predicted there, <eos> included (a masked LM: chosen positions)
  double test_masked_accuracy = -1;  // a masked language model's on the test split (-1: not scored)
  double wall_seconds = 0;
  // average_last > 1: the epochs averaged (first..last), the average's validation BLEU greedy and with beam search
  // (final_beam), the best single epoch's with that beam, and whether the average became the model (its beam
  // BLEU above the best single epoch's).
  int averaged_first_epoch = 0, averaged_last_epoch = 0;
  double averaged_valid_bleu = -1, averaged_valid_bleu_beam = -1, best_valid_bleu_beam = -1;
  bool average_is_the_model = false;
};

// The element-wise mean of models of one shape (checkpoint averaging): every parameter of the result is
// (1/n) sum_k weights[k], summed in double. ErrorKind::Shape when two differ in shape; none given: Input.
ModelWeights average_weights(const std::vector<const ModelWeights*>& weights);

// Progress callback: (epoch, batch index, batches in the epoch, running loss, tokens per second).
using TrainProgress = std::function<void(int, int, int, double, double)>;
using TrainLog = std::function<void(const std::string&)>;

// What one batch did.
struct StepRecord {
  int64_t step = 0;            // optimiser steps so far, this one included
  int epoch = 0, batch = 0;    // the batch's epoch and its index in it (from 1)
  int batches = 0;             // batches in the epoch
  double loss = 0, nll = 0;    // the batch's label-smoothed loss and negative log-likelihood per target token
  double epoch_loss = 0;       // the epoch's running loss so far
  double tokens_per_second = 0;  // target tokens per second of step time in this epoch
  float learning_rate = 0;
};

// One training run, a batch at a time: what train_model loops over, and what a caller that must stop, pause or
// look at the weights between batches (the app's live training) drives itself. The same options and seed give
// the same weights after the same steps, however the calls are spaced.
//
//   Trainer t(options, log);
//   while (!t.done()) { t.step(); if (t.epoch_complete()) t.finish_epoch(); }
//   t.finish();
class Trainer {
 public:
  // Reads the data, builds the vocabularies, checks the outputs and the memory needed, initialises the weights or
  // resumes from the checkpoint. Everything that can be refused is refused here, before any work. With
  // options.out_path empty nothing is written (no model, no checkpoint): the caller keeps what it wants.
  explicit Trainer(const TrainOptions& options, TrainLog log = nullptr);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  bool done() const;            // every planned epoch finished
  bool epoch_complete() const;  // the current epoch's batches are all done: finish_epoch() next
  // One batch of the current epoch: forward with dropout, loss, backward, clipping, an Adam step. ErrorKind::Value
  // when the loss is not finite (the weights are then those before this step).
  StepRecord step();
  // After the epoch's last batch: validation loss and greedy BLEU, the model file when BLEU is the best so far and
  // the checkpoint (when out_path is set). A language model: validation perplexity, the model file when it is the
  // lowest so far.
  EpochRecord finish_epoch();
  // After the last epoch: the best model's test scores into its provenance (when out_path is set and the test
  // split exists): BLEU greedy and beam, or a language model's per-token perplexity (test_perplexity).
  TrainResult finish();

  const Model& model() const;  // config, vocabularies and tokenizer of the run; its weights are weights()
  const ModelWeights& weights() const;
  std::string device() const;  // where the steps run: the GPU's name, or "" for the CPU
  int64_t steps() const;       // optimiser steps so far
  int epoch() const;           // the epoch in progress, or the last one when done()
  int batch() const;           // batches done in the current epoch
  int batches() const;         // batches in the current epoch (0 before its first step)
  const TrainResult& result() const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

TrainResult train_model(const TrainOptions& options, const TrainProgress& progress = nullptr,
                        const TrainLog& log = nullptr);

}  // namespace sf

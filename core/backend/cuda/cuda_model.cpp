// CudaModel (backend/cuda_model.h): the host side. It checks the input as forward() does, enqueues the pass on the
// GPU (cuBLAS for the products, backend/cuda/kernels.h for the rest) and copies back what the caller asked for.
// Compiled by the C++ compiler: Eigen stays out of the .cu files.
#include "backend/cuda_model.h"

#include "backend/cuda/device_model.h"
#include "backend/device.h"
#include "decode/decoder.h"
#include "decode/sampling.h"
#include "nn/embedding.h"
#include "transformer/trace_walk.h"

namespace sf {
namespace {

void copy_norm(const DLayerNorm& d, LayerNormTrace& t) {
  copy_to_host(d.out, t.out);
  copy_to_host(d.mean, d.out.rows, t.mean);
  copy_to_host(d.stddev, d.out.rows, t.std);
}

// (H*R, K) on the GPU -> H matrices (R, K).
void copy_heads(const DMat& d, int heads, std::vector<Mat>& out) {
  Mat all;
  copy_to_host(d, all);
  const int rows = d.rows / heads;
  out.resize(static_cast<size_t>(heads));
  for (int h = 0; h < heads; ++h) out[static_cast<size_t>(h)] = all.middleRows(static_cast<Eigen::Index>(h) * rows, rows);
}

// (R, C) -> H matrices (R, D): columns h*D .. h*D+D-1.
void split_columns(const Mat& m, int heads, std::vector<Mat>& out) {
  const Eigen::Index d = m.cols() / heads;
  out.resize(static_cast<size_t>(heads));
  for (int h = 0; h < heads; ++h) out[static_cast<size_t>(h)] = m.middleCols(h * d, d);
}

void copy_attention(const DAttention& d, int heads, AttentionTrace& t) {
  copy_to_host(d.queries, t.queries);
  copy_to_host(d.keys, t.keys);
  copy_to_host(d.values, t.values);
  split_columns(t.queries, heads, t.q);
  split_columns(t.keys, heads, t.k);
  split_columns(t.values, heads, t.v);
  copy_heads(d.scores, heads, t.scores);
  copy_heads(d.probs, heads, t.probs);
  t.masks = {d.mask};
  t.keep.clear();
  copy_to_host(d.heads_out, t.heads_out);
  split_columns(t.heads_out, heads, t.head_out);
  copy_to_host(d.attn_out, t.attn_out);
}

void copy_feed_forward(const DFeedForward& d, FeedForwardTrace& t) {
  copy_to_host(d.hidden_pre, t.hidden_pre);
  copy_to_host(d.hidden, t.hidden);
  t.keep.resize(0, 0);
  copy_to_host(d.out, t.out);
}

void copy_embedding(const DEmbedding& d, const std::vector<int>& ids, EmbeddingTrace& t) {
  t.ids = ids;
  copy_to_host(d.tok, t.tok_embed);
  copy_to_host(d.pos, t.pos);
  copy_to_host(d.sum, t.sum);
  t.keep.resize(0, 0);
}

// An optional final norm: empty when the config has none, as the CPU's final_norm_forward leaves it.
void copy_final_norm(const DLayerNorm& d, LayerNormTrace& t) {
  if (d.out.data) {
    copy_norm(d, t);
  } else {
    t.out.resize(0, 0);
    t.mean.resize(0);
    t.std.resize(0);
  }
}

// The GPU's pass record copied into the host's trace, block by block, as the one walk of a record goes
// (transformer/trace_walk.h): each call has the device's block and the trace's.
struct CopyToHost {
  int heads;
  const std::vector<int>& src_ids;
  const std::vector<int>& tgt_ids;
  TraceStage stage = TraceStage::SourceEmbedding;
  void begin(TraceStage at, int) { stage = at; }
  void embedding(const std::string&, const std::string&, const DEmbedding& d, EmbeddingTrace& t) {
    copy_embedding(d, stage == TraceStage::SourceEmbedding ? src_ids : tgt_ids, t);
  }
  void attention(const std::string&, const DAttention& d, AttentionTrace& t) {
    if (d.queries.data) copy_attention(d, heads, t);
    else t = {};  // a layer without cross-attention
  }
  void norm(const std::string&, const DLayerNorm& d, LayerNormTrace& t) { copy_norm(d, t); }
  void final_norm(const std::string&, const DLayerNorm& d, LayerNormTrace& t) { copy_final_norm(d, t); }
  void ffn(const std::string&, const DFeedForward& d, FeedForwardTrace& t) { copy_feed_forward(d, t); }
  void mat(const std::string&, const DMat& d, Mat& t) { copy_to_host(d, t); }
};

}  // namespace

CudaModel::CudaModel(const Config& config, const ModelWeights& weights, size_t memory_limit_bytes)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  config.validate();
  if (const std::string why = model_not_for_gpu(config); !why.empty()) fail(ErrorKind::Unsupported, "cuda", why);
  m.config = config;
  if (static_cast<int>(weights.encoder_layers.size()) != config.n_encoder_layers ||
      static_cast<int>(weights.decoder_layers.size()) != config.n_decoder_layers)
    fail(ErrorKind::Shape, "CudaModel", "the weights do not hold the config's layers");
  int count = 0;
  const cudaError_t found = cudaGetDeviceCount(&count);
  if (found != cudaSuccess || count == 0) {
    cudaGetLastError();
    const std::string why = found != cudaSuccess ? cudaGetErrorString(found) : "no CUDA device";
    fail(ErrorKind::Unsupported, ErrorCode::CudaNoDevice, "cuda", {{"reason", why}}, "no usable GPU: " + why);
  }
  cudaDeviceProp prop{};
  check_cuda(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  m.name = prop.name;
  // Every weight in one allocation, in for_each_weight's order, then the sinusoidal table.
  size_t floats = 0;
  for_each_weight(&config, weights, [&](const ConstWeightRef& r) { floats += static_cast<size_t>(r.size()); });
  const bool sinusoidal = config.positional_encoding == PositionalEncoding::Sinusoidal;
  const Mat* table = sinusoidal ? &cached_sinusoidal_encoding(config.max_positions, config.d_model, config.sinusoid_layout) : nullptr;
  if (table) floats += static_cast<size_t>(table->size());
  const size_t weight_bytes = floats * sizeof(float);
  size_t free_bytes = 0, total_bytes = 0;
  check_cuda(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  // The weights and room for a pass's workspace (an eighth of the weights, at least 64 MiB).
  const size_t needed = weight_bytes + std::max<size_t>(weight_bytes / 8, size_t{64} << 20);
  const size_t available = memory_limit_bytes > 0 ? std::min(free_bytes, memory_limit_bytes) : free_bytes;
  if (needed > available)
    fail(ErrorKind::Unsupported, ErrorCode::CudaOutOfMemory, "cuda",
         {{"needed", mib(needed)}, {"device", m.name}, {"available", mib(available)}},
         "the model needs " + mib(needed) + " of GPU memory, " + m.name + " has " + mib(available) + " free");
  check_cublas(cuda::cublas().create(&m.handle), "cublasCreate");
  check_cublas(cuda::cublas().set_math_mode(m.handle, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");  // FP32, no TF32
  check_cuda(cudaMalloc(reinterpret_cast<void**>(&m.weight_memory), weight_bytes), "cudaMalloc of the weights");
  m.w.encoder.resize(static_cast<size_t>(config.n_encoder_layers));
  m.w.decoder.resize(static_cast<size_t>(config.n_decoder_layers));
  size_t offset = 0;
  auto put = [&](const float* host, size_t n) {
    float* d = m.weight_memory + offset;
    check_cuda(cudaMemcpy(d, host, n * sizeof(float), cudaMemcpyHostToDevice), "copy of the weights to the GPU");
    offset += n;
    return d;
  };
  for_each_weight(&config, weights, [&](const ConstWeightRef& r) {
    if (r.size() != (r.cols ? r.rows * r.cols : r.rows))
      fail(ErrorKind::Shape, "CudaModel", "weight " + r.name + " does not have the config's shape");
    ConstWeightRef what = r;
    what.matrix = nullptr;
    what.vector = nullptr;
    what.linear = nullptr;
    m.layout.push_back(std::move(what));
    m.offsets.push_back(offset);
    place(m.w, r, put(r.data(), static_cast<size_t>(r.size())));
  });
  m.weight_floats = offset;
  if (table) m.sinusoid = put(table->data(), static_cast<size_t>(table->size()));
}

CudaModel::~CudaModel() = default;

std::string CudaModel::device_name() const { return impl_->name; }

void CudaModel::set_tf32(bool on) {
  check_cublas(cuda::cublas().set_math_mode(impl_->handle, on ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH),
               "cublasSetMathMode");
}

void CudaModel::forward(const std::vector<int>& src_ids, const std::vector<int>& tgt_ids,
                        const Interventions& interventions, Trace& trace) {
  Impl& m = *impl_;
  m.check_input(src_ids, tgt_ids, interventions);
  DevicePass p;
  m.run(src_ids, tgt_ids, 1, interventions, 0, p);
  // Into a trace of its own, moved into the caller's once whole (the ids and interventions may be the caller's
  // trace's own; a failed copy leaves it as it was): a stack the model lacks leaves its half empty, as the CPU's
  // forward() does, and no layer keeps the dropout masks of a pass before.
  Trace out;
  out.sequences = 1;
  out.interventions = interventions;
  out.encoder.resize(p.encoder.size());
  out.decoder.resize(p.decoder.size());
  CopyToHost copy{m.config.n_heads, src_ids, tgt_ids};
  walk_trace_blocks(RecordParts{m.config.has_encoder(), m.config.has_decoder(), true, p.encoder.size(), p.decoder.size()},
                    copy, p, out);
  trace = std::move(out);
}

void CudaModel::compute(const std::vector<int>& src_ids, const std::vector<int>& tgt_ids,
                        const Interventions& interventions) {
  Impl& m = *impl_;
  m.check_input(src_ids, tgt_ids, interventions);
  DevicePass p;
  m.run(src_ids, tgt_ids, 1, interventions, 0, p);
}

void CudaModel::compute_batch(const std::vector<std::vector<int>>& src, const std::vector<std::vector<int>>& tgt,
                              Mat* logits) {
  Impl& m = *impl_;
  if (src.empty() || src.size() != tgt.size())
    fail(ErrorKind::Input, "compute_batch", std::to_string(src.size()) + " sources for " + std::to_string(tgt.size()) +
                                                " targets");
  std::vector<int> src_rows, tgt_rows;
  for (size_t b = 0; b < src.size(); ++b) {
    if (src[b].size() != src[0].size() || tgt[b].size() != tgt[0].size())
      fail(ErrorKind::Input, "compute_batch", "sentence " + std::to_string(b) + " is not as long as the first (pad them)");
    m.check_input(src[b], tgt[b], {});
    src_rows.insert(src_rows.end(), src[b].begin(), src[b].end());
    tgt_rows.insert(tgt_rows.end(), tgt[b].begin(), tgt[b].end());
  }
  DevicePass p;
  m.run(src_rows, tgt_rows, static_cast<int>(src.size()), {}, 0, p);
  if (logits) copy_to_host(p.logits, *logits);
}

std::vector<int> CudaModel::greedy(const std::vector<int>& src_ids, const Interventions& interventions,
                                   int max_length) {
  Impl& m = *impl_;
  const Config& c = m.config;
  if (max_length < 0) fail(ErrorKind::Input, "greedy", "max_length must be >= 0, got " + std::to_string(max_length));
  if (!c.has_decoder()) fail(ErrorKind::Input, "greedy", "an encoder_only model does not generate text");
  // A decoder-only model continues its prompt (src_ids, as Decoder takes it; after <bos> where the model starts
  // with one: decoder_only_input) and reads no source.
  std::vector<int> input = c.has_encoder() ? std::vector<int>{c.bos_id} : decoder_only_input(c, src_ids), generated;
  const std::vector<int> no_source;
  const std::vector<int>& source = c.has_encoder() ? src_ids : no_source;
  // As the CPU's Decoder: a translation may take every position; a prompt of L tokens after <bos> leaves
  // max_positions - (L + 1) (Decoder::start_without_encoder).
  const int prefix = static_cast<int>(input.size());
  if (!c.has_encoder() && prefix >= c.max_positions)
    fail(ErrorKind::Input, "greedy", "a prompt of " + std::to_string(src_ids.size()) + " tokens leaves no position to "
                                     "generate in (the model has " + std::to_string(c.max_positions) + ")");
  const int longest = c.has_encoder() ? c.max_positions : c.max_positions - prefix;
  max_length = max_length == 0 ? longest : std::min(max_length, longest);
  const int S = static_cast<int>(source.size());
  DevicePass p;
  RowVec last;
  while (static_cast<int>(generated.size()) < max_length) {
    // A painted decoder mask fitted to each prefix, as the CPU's decoder does (interventions.h).
    const Interventions step = fit_decoder_masks(interventions, S, static_cast<int>(input.size()));
    m.check_input(source, input, step);
    // Each step recomputes the decoder on the whole prefix (no KV cache on the GPU yet); the encoder runs once.
    m.run(source, input, 1, step, static_cast<int>(input.size()) - 1, p, generated.empty());
    last.resize(p.logits.cols);
    check_cuda(cudaMemcpy(last.data(), p.logits.data, static_cast<size_t>(p.logits.cols) * sizeof(float),
                          cudaMemcpyDeviceToHost),
               "copy of the logits");
    const size_t i = generated.size();
    const int token = i < interventions.forced_prefix.size() ? interventions.forced_prefix[i] : argmax(last);
    generated.push_back(token);
    input.push_back(token);
    if (token == c.eos_id) break;
  }
  return generated;
}

}  // namespace sf

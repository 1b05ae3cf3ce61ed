#include "gui/panels/model_info_panel.h"

#include <imgui.h>

#include <algorithm>
#include <filesystem>

#include "backend/backend.h"
#include "gui/render/item_placements.h"
#include "gui/render/math_text.h"
#include "gui/widgets.h"
#include "model/languages.h"
#include "model/name_tables.h"
#include "util/parallel.h"
#include "util/printable.h"

namespace sf::gui {

namespace {

constexpr int kSampleTokens = 14;

std::string value_text(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_float()) {
    char buffer[32];
    std::snprintf(buffer, sizeof(buffer), "%g", v.get<double>());
    return buffer;
  }
  return v.dump();
}

bool is_table(const nlohmann::json& v) {
  if (!v.is_array() || v.empty()) return false;
  for (const auto& record : v)
    if (!record.is_object()) return false;
  return true;
}

ProvenanceTable make_table(const std::string& name, const nlohmann::json& records) {
  ProvenanceTable t;
  t.name = name;
  for (const auto& [key, value] : records.front().items()) t.columns.push_back(key);
  for (const auto& record : records) {
    std::vector<std::string> row;
    for (const std::string& c : t.columns) row.push_back(record.contains(c) ? value_text(record[c]) : "");
    t.rows.push_back(std::move(row));
  }
  return t;
}

// Nested objects become dotted keys ("scores.bleu"); lists of records become tables.
void flatten(const nlohmann::json& j, const std::string& prefix, ModelInfo& info) {
  for (const auto& [key, value] : j.items()) {
    const std::string name = prefix.empty() ? key : prefix + "." + key;
    if (value.is_object() && !value.empty()) flatten(value, name, info);
    else if (is_table(value)) info.provenance_tables.push_back(make_table(name, value));
    else info.provenance.emplace_back(name, value_text(value));
  }
}

std::vector<std::string> samples(const Vocabulary& v) {
  std::vector<std::string> out;
  for (int id = 0; id < v.size() && static_cast<int>(out.size()) < kSampleTokens; ++id)
    if (!v.is_special(id)) out.push_back(unescape_token(v.token(id)));
  return out;
}

// A two-column table of key / value rows, values wrapped to the column.
void key_value_table(const char* id, const std::vector<std::pair<std::string, std::string>>& rows) {
  if (!ImGui::BeginTable(id, 2, ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV)) return;
  ImGui::TableSetupColumn("key", ImGuiTableColumnFlags_WidthFixed);  // fits the longest key
  ImGui::TableSetupColumn("value", ImGuiTableColumnFlags_WidthStretch);
  for (const auto& [key, value] : rows) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(key.c_str());
    ImGui::TableNextColumn();
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextUnformatted(value.c_str());
    ImGui::PopTextWrapPos();
  }
  ImGui::EndTable();
}

void heading(const char* text) {
  ImGui::Spacing();
  ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.85f, 0.45f, 1.0f));
  ImGui::TextUnformatted(text);
  ImGui::PopStyleColor();
  ImGui::Separator();
}

std::string joined(const std::vector<std::string>& tokens) {
  std::string out;
  for (const std::string& t : tokens) out += (out.empty() ? "" : "  \u00b7  ") + t;  // a middle dot: "," is a token
  return out;
}

}  // namespace

std::string with_thousands(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

namespace {
const std::pair<const char*, const char*> kMeanings[] = {
    {"d_model", "d_model: numbers per token vector"},
    {"n_heads", "h: attention heads per layer (d_k = d_model / h)"},
    {"n_encoder_layers", "N: encoder layers stacked"},
    {"n_decoder_layers", "N: decoder layers stacked"},
    {"d_ff", "d_ff: feed-forward hidden width"},
    {"src_vocab_size", "source tokens the model knows"},
    {"tgt_vocab_size", "target tokens it can write"},
    {"max_positions", "longest input it reads"},
    {"positional_encoding", "how positions are added"},
    {"sinusoid_layout", "interleaved: sin, cos, sin ...; halves: all sines, then all cosines (Marian)"},
    {"embedding_scale", "embeddings times \u221ad_model (the paper) or 1"},
    {"norm_placement", "post: LayerNorm(x + Sublayer(x)), the paper; pre: x + Sublayer(LayerNorm(x))"},
    {"encoder_final_norm", "a LayerNorm after the encoder"},
    {"decoder_final_norm", "a LayerNorm after the decoder"},
    {"activation", "feed-forward non-linearity (silu: x * sigmoid(x), Marian's swish)"},
    {"attention", "split_heads: the paper; reshape_heads: the note's"},
    {"layer_norm_eps", "added to the variance in LayerNorm"},
    {"bias", "linear layers add a bias"},
    {"tie_output_embedding", "output layer reuses target embedding"},
    {"share_embeddings", "one embedding for both languages"},
    {"pad_id", "id of <pad> (padding)"},
    {"bos_id", "id of <bos>: the decoder's first input (Marian: <pad>)"},
    {"eos_id", "id of <eos> (end of sentence)"},
    {"unk_id", "id of <unk> (unknown word)"},
};

size_t config_key_rank(const std::string& key) {
  size_t i = 0;
  while (i < std::size(kMeanings) && key != kMeanings[i].first) ++i;
  return i;  // unknown keys last
}
}  // namespace

const char* config_key_meaning(const std::string& key) {
  const size_t i = config_key_rank(key);
  return i < std::size(kMeanings) ? kMeanings[i].second : "";
}

ModelInfo describe_model(const Model& model, const std::string& path) {
  ModelInfo info;
  info.path = path;
  info.parameters = model.parameter_count();
  // Named: items() only refers to the JSON, a temporary would be gone before the loop reads it.
  const nlohmann::json config = config_to_json(model.config);
  for (const auto& [key, value] : config.items()) info.config.emplace_back(key, value_text(value));
  // In the README's order (shape first, then variants, then special ids), not the JSON's alphabetical one.
  std::stable_sort(info.config.begin(), info.config.end(), [](const auto& a, const auto& b) {
    return config_key_rank(a.first) < config_key_rank(b.first);
  });
  const nlohmann::json tokenizer = tokenizer_settings_to_json(model.tokenizer);
  for (const auto& [key, value] : tokenizer.items()) info.tokenizer.emplace_back(key, value_text(value));
  flatten(model.provenance, "", info);
  info.src_samples = samples(model.src_vocab);
  info.tgt_samples = samples(model.tgt_vocab);
  return info;
}

namespace {

// This model beside the paper's two (Vaswani et al. 2017, table 3: base and big, English-German), in the paper's
// symbols, and how the file stores the weights the views show as the paper writes them.
void draw_paper_comparison(const Model& m, int64_t parameters) {
  heading("Beside the paper's models");
  const Config& c = m.config;
  struct Column {
    const char* name;
    std::string d_model, layers, d_ff, h, d_k, vocabulary, parameters;
  };
  const std::string vocab = c.share_embeddings || m.src_vocab.size() == m.tgt_vocab.size()
                                ? with_thousands(m.tgt_vocab.size())
                                : with_thousands(m.src_vocab.size()) + " / " + with_thousands(m.tgt_vocab.size());
  const std::string layers = c.n_encoder_layers == c.n_decoder_layers
                                 ? std::to_string(c.n_encoder_layers)
                                 : std::to_string(c.n_encoder_layers) + " + " + std::to_string(c.n_decoder_layers);
  char params[32];
  std::snprintf(params, sizeof(params), "%.1fM", static_cast<double>(parameters) / 1e6);
  const Column columns[3] = {
      {"this model", std::to_string(c.d_model), layers, std::to_string(c.d_ff), std::to_string(c.n_heads),
       std::to_string(c.head_dim()), vocab, params},
      {"paper: base", "512", "6", "2048", "8", "64", "about 37,000 (shared)", "65M"},
      {"paper: big", "1024", "6", "4096", "16", "64", "about 37,000 (shared)", "213M"},
  };
  const char* rows[7] = {"$d_{model}$", "N (layers)", "$d_{ff}$", "h (heads)", "$d_k = d_v$", "vocabulary",
                         "parameters"};
  if (ImGui::BeginTable("paper", 4, ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingFixedFit)) {
    ImGui::TableSetupColumn("");
    for (const Column& col : columns) ImGui::TableSetupColumn(col.name);
    ImGui::TableHeadersRow();
    for (int r = 0; r < 7; ++r) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      math_text(rows[r], -1.0f);
      for (int k = 0; k < 3; ++k) {
        const Column& col = columns[k];
        const std::string* v[7] = {&col.d_model, &col.layers, &col.d_ff, &col.h, &col.d_k, &col.vocabulary, &col.parameters};
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(v[r]->c_str());
        record_item("model_info.paper", ImGui::GetItemRectMin(), ImGui::GetItemRectMax(), r * 3 + k, *v[r]);
      }
    }
    ImGui::EndTable();
  }
  ImGui::PushTextWrapPos(0.0f);
  text_disabled_wrapped("(the paper's, Vaswani et al. 2017 table 3: WMT 2014 English-German, 4.5 million sentence pairs, "
                        "byte-pair pieces; this model's numbers are its own file's)");
  ImGui::PopTextWrapPos();
  heading("How the file stores the weights");
  math_text("The views write the paper's $x W$: $Q_i = X W_i^Q$ with $W_i^Q$ [$d_{model} \\times d_k$], "
            "$FFN(x) = max(0, x W_1 + b_1) W_2 + b_2$. The file keeps each linear layer as PyTorch does, "
            "[out \u00d7 in], and computes $x W^T$: its query weight of a layer is $(W^Q)^T$ [$h d_k \\times d_{model}$], "
            "head i's rows $(i - 1) d_k$ to $i d_k - 1$; the views show each transposed, as the paper writes it.",
            ImGui::GetContentRegionAvail().x, 0, "model_info.storage");
}

void draw_config(const ModelInfo& info) {
  heading("Configuration");
  if (!ImGui::BeginTable("config", 3, ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV)) return;
  ImGui::TableSetupColumn("key", ImGuiTableColumnFlags_WidthFixed);  // fit the longest key / value
  ImGui::TableSetupColumn("value", ImGuiTableColumnFlags_WidthFixed);
  ImGui::TableSetupColumn("meaning", ImGuiTableColumnFlags_WidthStretch);
  int row = 0;
  for (const auto& [key, value] : info.config) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(key.c_str());
    const ImVec2 key_min = ImGui::GetItemRectMin();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(value.c_str());
    record_item("model_info.config", key_min, ImGui::GetItemRectMax(), row++, key + " = " + value);
    ImGui::TableNextColumn();
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextDisabled("%s", config_key_meaning(key));
    ImGui::PopTextWrapPos();
  }
  ImGui::EndTable();
}

void draw_vocabularies(const Model& m, const ModelInfo& info) {
  heading("Vocabularies");
  const Config& c = m.config;
  const auto lang = [](const std::string& l) {
    return l.empty() ? std::string(" (the file does not name its language)") : " (" + language_name(l) + ", " + l + ")";
  };
  ImGui::Text("source%s: %s tokens", lang(m.tokenizer.source_language).c_str(), with_thousands(m.src_vocab.size()).c_str());
  ImGui::PushTextWrapPos(0.0f);
  ImGui::TextDisabled("first words: %s ...", joined(info.src_samples).c_str());
  ImGui::PopTextWrapPos();
  ImGui::Text("target%s: %s tokens", lang(m.tokenizer.target_language).c_str(), with_thousands(m.tgt_vocab.size()).c_str());
  ImGui::PushTextWrapPos(0.0f);
  ImGui::TextDisabled("first words: %s ...", joined(info.tgt_samples).c_str());
  ImGui::PopTextWrapPos();
  const Vocabulary& v = m.tgt_vocab;
  auto special = [&](int id) { return id >= 0 && id < v.size() ? v.token(id) : std::string("?"); };
  ImGui::TextWrapped("special: %d %s   %d %s   %d %s   %d %s", c.unk_id, special(c.unk_id).c_str(), c.pad_id,
                     special(c.pad_id).c_str(), c.bos_id, special(c.bos_id).c_str(), c.eos_id, special(c.eos_id).c_str());
}

void draw_records(const ProvenanceTable& t) {
  ImGui::Spacing();
  ImGui::Text("%s (%zu rows)", t.name.c_str(), t.rows.size());
  const int columns = static_cast<int>(std::min<size_t>(t.columns.size(), 63));  // ImGui's column limit is 64
  const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_Borders | ImGuiTableFlags_ScrollX |
                                ImGuiTableFlags_ScrollY | ImGuiTableFlags_SizingFixedFit;
  const float height = std::min(static_cast<float>(t.rows.size() + 1), 10.0f) * ImGui::GetFrameHeightWithSpacing();
  if (columns == 0 || !ImGui::BeginTable(t.name.c_str(), columns, flags, ImVec2(0, height))) return;
  ImGui::TableSetupScrollFreeze(1, 1);
  for (int col = 0; col < columns; ++col) ImGui::TableSetupColumn(t.columns[static_cast<size_t>(col)].c_str());
  ImGui::TableHeadersRow();
  for (const auto& row : t.rows) {
    ImGui::TableNextRow();
    for (int col = 0; col < columns; ++col) {
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(row[static_cast<size_t>(col)].c_str());
    }
  }
  ImGui::EndTable();
}

void draw_provenance_and_tokenizer(const ModelInfo& info, const std::vector<std::string>& warnings) {
  heading("Provenance (as stored in the file)");
  if (info.provenance.empty() && info.provenance_tables.empty()) ImGui::TextDisabled("none recorded");
  if (!info.provenance.empty()) key_value_table("provenance", info.provenance);
  for (const ProvenanceTable& t : info.provenance_tables) draw_records(t);
  heading("Tokenizer");
  key_value_table("tokenizer", info.tokenizer);
  if (!warnings.empty()) {
    heading("Warnings from loading");
    for (const std::string& w : warnings) ImGui::BulletText("%s", w.c_str());
  }
}

}  // namespace

void ModelInfoPanel::draw(const AppState& state, const std::vector<std::string>& warnings,
                          const std::string& weights_note) {
  if (!state.model) {
    ImGui::TextDisabled("no model loaded: open one with \"Open model...\" above");
    return;
  }
  const Model& m = *state.model;
  if (described_ != &m || info_.path != state.model_path) {
    info_ = describe_model(m, state.model_path);
    described_ = &m;
  }
  const std::filesystem::path p(state.model_path);
  ImGui::Text("Model info: %s", p.filename().string().c_str());
  ImGui::PushTextWrapPos(0.0f);
  ImGui::TextDisabled("in %s", p.parent_path().string().c_str());
  ImGui::PopTextWrapPos();
  explanation(
      "What the model file holds besides its weights: the configuration the weights were trained with, the two "
      "vocabularies (each token's id is the row of its embedding), how sentences are cut into tokens, and where "
      "the model came from.");
  if (!weights_note.empty()) {
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextColored(ImVec4(1.0f, 0.72f, 0.25f, 1.0f), "%s", weights_note.c_str());
    ImGui::PopTextWrapPos();
  }
  const Config& c = m.config;
  if (m.family == kFamilyMarian) {  // a pretrained model people use: its hub name first
    ImGui::TextWrapped("Hugging Face model %s (MarianMTModel, the opus-mt family), read from its own folder's "
                       "files. Its tokens are SentencePiece pieces, its feed-forward uses SiLU, its positions put all "
                       "sines before all cosines, and its decoder starts from <pad>.",
                       m.provenance.value("hub_name", std::string("?")).c_str());
    if (m.generation.present)
      ImGui::TextDisabled("decoding as its generation config says: beam %d, length penalty %.2f, never generates id %s",
                          m.generation.beam_width, m.generation.length_penalty,
                          m.generation.never_generate.empty() ? "-" : std::to_string(m.generation.never_generate[0]).c_str());
  }
  ImGui::TextWrapped("%s parameters   |   family %s   |   d_model %d, %d heads of width %d, %d+%d layers, d_ff %d",
                     with_thousands(info_.parameters).c_str(), m.family.c_str(), c.d_model, c.n_heads, c.head_dim(),
                     c.n_encoder_layers, c.n_decoder_layers, c.d_ff);
  // Which device computed what this app shows, and why the CPU where a GPU is there.
  const BackendInfo& backend = backend_info();
  if (!state.shown_gpu.empty())
    ImGui::TextWrapped("Computed on the %s: decoding with KV caches in GPU memory, and the traced pass these views "
                       "show, copied to the CPU once per change. Painted masks and the causal mask off compute on "
                       "the CPU.",
                       state.shown_device().c_str());
  else if (backend.cuda_available)
    ImGui::TextWrapped("Computed on the CPU, %d threads%s%s. GPU %s: %s", parallel_threads(),
                       state.device_why.empty() ? "" : ": ", printable(state.device_why).c_str(),
                       backend.cuda_device_name.c_str(),
                       state.device->request() == DeviceRequest::Cpu
                           ? "not used (--device cpu); the Training stage's runs and stepformer-cli use it when asked."
                           : "computes these views where it can, and the Training stage's runs.");
  else
    ImGui::TextWrapped("Computed on the CPU, %d threads. Backend: %s.", parallel_threads(),
                       printable(backend.description).c_str());

  // Two columns where there is room (about 50 characters each); one below the other on a narrow window or a
  // large text size, so that no table is squeezed into a column a few letters wide.
  const float em = ImGui::GetFontSize();
  const bool two_columns = ImGui::GetContentRegionAvail().x >= em * 50;
  ImGui::BeginChild("model_info_scroll", ImVec2(0, 0), false);
  if (two_columns && ImGui::BeginTable("model_info_columns", 2, ImGuiTableFlags_SizingStretchProp | ImGuiTableFlags_Resizable)) {
    ImGui::TableSetupColumn("left", ImGuiTableColumnFlags_WidthStretch, 1.35f);
    ImGui::TableSetupColumn("right", ImGuiTableColumnFlags_WidthStretch, 1.0f);
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    draw_paper_comparison(m, info_.parameters);
    draw_config(info_);
    ImGui::TableNextColumn();
    draw_vocabularies(m, info_);
    draw_provenance_and_tokenizer(info_, warnings);
    ImGui::EndTable();
  } else {
    draw_paper_comparison(m, info_.parameters);
    draw_vocabularies(m, info_);
    draw_config(info_);
    draw_provenance_and_tokenizer(info_, warnings);
  }
  ImGui::EndChild();
}

}  // namespace sf::gui

#include "gui/panels/model_info_panel.h"

#include <imgui.h>

#include <algorithm>
#include <filesystem>

#include "backend/backend.h"
#include "gui/render/item_placements.h"
#include "gui/render/math_text.h"
#include "gui/stages.h"  // shape_text
#include "gui/text/text.h"
#include "gui/words.h"
#include "gui/widgets.h"
#include "model/languages.h"
#include "model/name_tables.h"
#include "util/parallel.h"
#include "util/printable.h"

namespace sf::gui {

namespace {

// A model's layers as its shape counts them: "3 + 3" for an encoder and a decoder, "4" for one stack (GPT, BERT).
std::string layer_count_text(const Config& c) {
  if (c.has_encoder() && c.has_decoder())
    return std::to_string(c.n_encoder_layers) + " + " + std::to_string(c.n_decoder_layers);
  return std::to_string(c.has_decoder() ? c.n_decoder_layers : c.n_encoder_layers);
}

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
  ImGui::TableSetupColumn("##key", ImGuiTableColumnFlags_WidthFixed);  // fits the longest key
  ImGui::TableSetupColumn("##value", ImGuiTableColumnFlags_WidthStretch);
  for (const auto& [key, value] : rows) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(key.c_str());
    ImGui::TableNextColumn();
    ImGui::PushTextWrapPos(0.0f);
    text_wrapped_at_pos(value);
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
const std::pair<const char*, T> kMeanings[] = {
    // a config key, and what it means
    {"d_model", T::model_info_meaning_d_model},
    {"n_heads", T::model_info_meaning_n_heads},
    {"n_encoder_layers", T::model_info_meaning_n_encoder_layers},
    {"n_decoder_layers", T::model_info_meaning_n_decoder_layers},
    {"d_ff", T::model_info_meaning_d_ff},
    {"src_vocab_size", T::model_info_meaning_src_vocab_size},
    {"tgt_vocab_size", T::model_info_meaning_tgt_vocab_size},
    {"max_positions", T::model_info_meaning_max_positions},
    {"positional_encoding", T::model_info_meaning_positional_encoding},
    {"sinusoid_layout", T::model_info_meaning_sinusoid_layout},
    {"embedding_scale", T::model_info_meaning_embedding_scale},
    {"norm_placement", T::model_info_meaning_norm_placement},
    {"encoder_final_norm", T::model_info_meaning_encoder_final_norm},
    {"decoder_final_norm", T::model_info_meaning_decoder_final_norm},
    {"activation", T::model_info_meaning_activation},
    {"attention", T::model_info_meaning_attention},
    {"layer_norm_eps", T::model_info_meaning_layer_norm_eps},
    {"bias", T::model_info_meaning_bias},
    {"tie_output_embedding", T::model_info_meaning_tie_output_embedding},
    {"share_embeddings", T::model_info_meaning_share_embeddings},
    {"pad_id", T::model_info_meaning_pad_id},
    {"bos_id", T::model_info_meaning_bos_id},
    {"eos_id", T::model_info_meaning_eos_id},
    {"unk_id", T::model_info_meaning_unk_id},
};

size_t config_key_rank(const std::string& key) {
  size_t i = 0;
  while (i < std::size(kMeanings) && key != kMeanings[i].first) ++i;
  return i;  // unknown keys last
}
}  // namespace

const char* config_key_meaning(const std::string& key) {
  const size_t i = config_key_rank(key);
  return i < std::size(kMeanings) ? tr(kMeanings[i].second) : "";
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
  heading(tr(T::model_info_heading_paper));
  const Config& c = m.config;
  struct Column {
    const char* name;
    std::string d_model, layers, d_ff, h, d_k, vocabulary, parameters;
  };
  // One stack (GPT, BERT): its layers and its one vocabulary; two: "encoder + decoder" where they differ.
  const bool two_stacks = c.has_encoder() && c.has_decoder();
  const std::string vocab = !two_stacks ? with_thousands(c.has_decoder() ? m.tgt_vocab.size() : m.src_vocab.size())
                            : c.share_embeddings || m.src_vocab.size() == m.tgt_vocab.size()
                                ? with_thousands(m.tgt_vocab.size())
                                : with_thousands(m.src_vocab.size()) + " / " + with_thousands(m.tgt_vocab.size());
  const std::string layers = c.n_encoder_layers == c.n_decoder_layers ? std::to_string(c.n_encoder_layers)
                                                                       : layer_count_text(c);
  char params[32];
  std::snprintf(params, sizeof(params), "%.1fM", static_cast<double>(parameters) / 1e6);
  const Column columns[3] = {
      {tr(T::model_info_paper_this_model), std::to_string(c.d_model), layers, std::to_string(c.d_ff),
       std::to_string(c.n_heads), std::to_string(c.head_dim()), vocab, params},
      {tr(T::model_info_paper_base), "512", "6", "2048", "8", "64", tr(T::model_info_paper_vocabulary), "65M"},
      {tr(T::model_info_paper_big), "1024", "6", "4096", "16", "64", tr(T::model_info_paper_vocabulary), "213M"},
  };
  const char* rows[7] = {"$d_{model}$",
                         tr(T::model_info_paper_layers),
                         "$d_{ff}$",
                         tr(T::model_info_paper_heads),
                         "$d_k = d_v$",
                         tr(T::model_info_paper_vocabulary_row),
                         tr(T::model_info_paper_parameters)};
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
  text_disabled_wrapped("%s", tr(T::model_info_paper_note));
  ImGui::PopTextWrapPos();
  heading(tr(T::model_info_heading_storage));
  math_text(tr(T::model_info_storage_note), ImGui::GetContentRegionAvail().x, 0, "model_info.storage");
}

void draw_config(const ModelInfo& info) {
  heading(tr(T::model_info_heading_configuration));
  if (!ImGui::BeginTable("config", 3, ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV)) return;
  ImGui::TableSetupColumn("##key", ImGuiTableColumnFlags_WidthFixed);  // fit the longest key / value
  ImGui::TableSetupColumn("##value", ImGuiTableColumnFlags_WidthFixed);
  ImGui::TableSetupColumn("##meaning", ImGuiTableColumnFlags_WidthStretch);
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
    text_wrapped_at_pos(config_key_meaning(key), &ImGui::GetStyle().Colors[ImGuiCol_TextDisabled]);
    ImGui::PopTextWrapPos();
  }
  ImGui::EndTable();
}

void draw_vocabularies(const Model& m, const ModelInfo& info) {
  heading(tr(T::model_info_heading_vocabularies));
  const Config& c = m.config;
  const auto lang = [](const std::string& l) {
    return l.empty() ? std::string(tr(T::model_info_language_unnamed))
                     : tr(T::model_info_language, {{"language", language_word(l)}, {"code", l}});
  };
  if (c.has_encoder()) {  // (a decoder-only model has one vocabulary, the target's)
    ImGui::TextUnformatted(tr(T::model_info_source_tokens, {{"language", lang(m.tokenizer.source_language)},
                                                            {"size", with_thousands(m.src_vocab.size())}})
                               .c_str());
    ImGui::PushTextWrapPos(0.0f);
    text_wrapped_at_pos(tr(T::model_info_first_words, {{"words", joined(info.src_samples)}}), &ImGui::GetStyle().Colors[ImGuiCol_TextDisabled]);
    ImGui::PopTextWrapPos();
  }
  if (c.has_decoder()) {  // (an encoder-only model has one vocabulary, the source's)
    ImGui::TextUnformatted(tr(T::model_info_target_tokens, {{"language", lang(m.tokenizer.target_language)},
                                                            {"size", with_thousands(m.tgt_vocab.size())}})
                               .c_str());
    ImGui::PushTextWrapPos(0.0f);
    text_wrapped_at_pos(tr(T::model_info_first_words, {{"words", joined(info.tgt_samples)}}), &ImGui::GetStyle().Colors[ImGuiCol_TextDisabled]);
    ImGui::PopTextWrapPos();
  }
  if (m.tokenizer.kind == "words_bpe")  // the paper's way: one byte-pair vocabulary for both languages
    text_wrapped(tr(T::model_info_vocabulary_bpe,
                    {{"size", with_thousands(m.tgt_vocab.size())},
                     {"embeddings", tr(c.share_embeddings && c.tie_output_embedding ? T::model_info_embeddings_tied
                                       : c.share_embeddings                         ? T::model_info_embeddings_shared
                                                                                    : T::model_info_embeddings_separate)}})
                     .c_str());
  const Vocabulary& v = c.has_decoder() ? m.tgt_vocab : m.src_vocab;
  auto special = [&](int id) { return id >= 0 && id < v.size() ? v.token(id) : std::string("?"); };
  text_wrapped(tr(T::model_info_special, {{"unk_id", c.unk_id},
                                                      {"unk", special(c.unk_id)},
                                                      {"pad_id", c.pad_id},
                                                      {"pad", special(c.pad_id)},
                                                      {"bos_id", c.bos_id},
                                                      {"bos", special(c.bos_id)},
                                                      {"eos_id", c.eos_id},
                                                      {"eos", special(c.eos_id)}})
                               .c_str());
}

void draw_records(const ProvenanceTable& t) {
  ImGui::Spacing();
  ImGui::TextUnformatted(tr(T::model_info_rows, {{"name", t.name}, {"rows", t.rows.size()}}).c_str());
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
  heading(tr(T::model_info_heading_provenance));
  if (info.provenance.empty() && info.provenance_tables.empty())
    ImGui::TextDisabled("%s", tr(T::model_info_none_recorded));
  if (!info.provenance.empty()) key_value_table("provenance", info.provenance);
  for (const ProvenanceTable& t : info.provenance_tables) draw_records(t);
  heading(tr(T::model_info_heading_tokenizer));
  key_value_table("tokenizer", info.tokenizer);
  if (!warnings.empty()) {
    heading(tr(T::model_info_heading_warnings));
    for (const std::string& w : warnings) ImGui::BulletText("%s", w.c_str());
  }
}

}  // namespace

void ModelInfoPanel::draw(const AppState& state, const std::vector<std::string>& warnings,
                          const std::string& weights_note) {
  if (!state.model()) {
    ImGui::TextDisabled("%s", tr(T::model_info_no_model));
    return;
  }
  const Model& m = *state.model();
  if (described_ != &m || info_.path != state.model_path()) {
    info_ = describe_model(m, state.model_path());
    described_ = &m;
  }
  const std::filesystem::path p(state.model_path());
  ImGui::TextUnformatted(tr(T::model_info_title, {{"file", p.filename().string()}}).c_str());
  ImGui::PushTextWrapPos(0.0f);
  text_wrapped_at_pos(tr(T::model_info_in_folder, {{"folder", p.parent_path().string()}}), &ImGui::GetStyle().Colors[ImGuiCol_TextDisabled]);
  ImGui::PopTextWrapPos();
  explanation(tr(T::model_info_explanation));
  if (!weights_note.empty()) {
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextColored(ImVec4(1.0f, 0.72f, 0.25f, 1.0f), "%s", weights_note.c_str());
    ImGui::PopTextWrapPos();
  }
  const Config& c = m.config;
  if (m.family == kFamilyMarian) {  // a pretrained model people use: its hub name first
    text_wrapped(tr(T::model_info_marian, {{"provenance", m.provenance.value("hub_name", std::string("?"))}}).c_str());
    if (m.generation.present)
      ImGui::TextDisabled(
          "%s",
          tr(T::model_info_marian_generation,
             {{"beam", m.generation.beam_width},
              {"length_penalty", number_text("%.2f", m.generation.length_penalty)},
              {"never", m.generation.never_generate.empty() ? "-" : std::to_string(m.generation.never_generate[0])}})
              .c_str());
  }
  // The shape first: which stacks it has, in words a course uses ("decoder-only (GPT)").
  text_wrapped(tr(T::gpt_model_info_shape, {{"shape", shape_text(c.stacks)}}).c_str());
  record_item("model_info.shape", ImGui::GetItemRectMin(), ImGui::GetItemRectMax(), -1, to_string(c.stacks));
  if (c.stacks == ModelStacks::DecoderOnly)
    text_disabled_wrapped("%s", tr(c.norm_placement == NormPlacement::Pre ? T::gpt_model_info_pre_norm : T::gpt_model_info_post_norm));
  const std::string summary = tr(T::model_info_summary, {{"parameters", with_thousands(info_.parameters)},
                                                         {"family", m.family},
                                                         {"d_model", c.d_model},
                                                         {"heads", c.n_heads},
                                                         {"head_dim", c.head_dim()},
                                                         {"layers", layer_count_text(c)},
                                                         {"d_ff", c.d_ff}});
  text_wrapped(summary.c_str());
  record_item("model_info.summary", ImGui::GetItemRectMin(), ImGui::GetItemRectMax(), -1, summary);
  // Which device computed what this app shows, and why the CPU where a GPU is there.
  const BackendInfo& backend = backend_info();
  if (!state.shown_gpu().empty())
    text_wrapped(tr(T::model_info_computed_gpu, {{"device", state.shown_device()}}).c_str());
  else if (backend.cuda_available)
    text_wrapped(tr(state.device()->request() == DeviceRequest::Cpu ? T::model_info_computed_cpu_gpu_unused
                                                               : T::model_info_computed_cpu_gpu_idle,
                 {{"threads", parallel_threads()},
                  {"why", state.device_why().empty() ? std::string()
                                                   : tr(T::model_info_cpu_why, {{"why", printable(state.device_why())}})},
                  {"gpu", backend.cuda_device_name}})
                  .c_str());
  else
    text_wrapped(tr(parallel_threads() == 1 ? T::model_info_computed_cpu_one : T::model_info_computed_cpu,
                    {{"threads", parallel_threads()}, {"backend", printable(backend.description)}})
                     .c_str());

  // Two columns where there is room (about 50 characters each); one below the other on a narrow window or a
  // large text size, so that no table is squeezed into a column a few letters wide.
  const float em = ImGui::GetFontSize();
  const bool two_columns = ImGui::GetContentRegionAvail().x >= em * 50;
  ImGui::BeginChild("model_info_scroll", ImVec2(0, 0), false);
  if (two_columns && ImGui::BeginTable("model_info_columns", 2, ImGuiTableFlags_SizingStretchProp | ImGuiTableFlags_Resizable)) {
    ImGui::TableSetupColumn("##left", ImGuiTableColumnFlags_WidthStretch, 1.35f);
    ImGui::TableSetupColumn("##right", ImGuiTableColumnFlags_WidthStretch, 1.0f);
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

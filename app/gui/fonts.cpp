#include "gui/fonts.h"

#include <imgui.h>
#include <stb/stb_truetype.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string_view>

#include "gui/text/glyphs.h"
#include "io/user_files.h"
#include "util/error.h"
#include "util/printable.h"
#include "util/utf8.h"

namespace sf::gui {

namespace fs = std::filesystem;

namespace {

// A font file read whole, for asking which characters it has (ImGui reads it again to rasterise).
struct FontFile {
  std::string path;
  std::string data;
  stbtt_fontinfo info{};
  bool has(char32_t cp) const { return stbtt_FindGlyphIndex(&info, static_cast<int>(cp)) != 0; }
};

// A font larger than this is not a font (a damaged file, a device): it is not read.
constexpr uintmax_t kMaxFontBytes = 64ull << 20;
// The fonts searched for a character the main two lack, at most (a desktop has a few hundred).
constexpr size_t kMaxFallbackFiles = 4000;

uint32_t big_endian(const std::string& d, size_t at, int bytes) {
  uint32_t v = 0;
  for (int k = 0; k < bytes; ++k) v = (v << 8) | static_cast<unsigned char>(d[at + static_cast<size_t>(k)]);
  return v;
}

// Whether every table the font at `offset` lists lies inside the file. stb_truetype trusts the offsets it reads (a
// truncated or crafted file would have it read past the end); this is its first line of checks.
bool tables_inside(const std::string& d, size_t offset) {
  if (offset + 12 > d.size()) return false;
  const size_t tables = big_endian(d, offset + 4, 2);
  if (tables == 0 || offset + 12 + 16 * tables > d.size()) return false;
  for (size_t t = 0; t < tables; ++t) {
    const size_t record = offset + 12 + 16 * t;
    const uint64_t at = big_endian(d, record + 8, 4), length = big_endian(d, record + 12, 4);
    if (at + length > d.size()) return false;
  }
  return true;
}

// The first font of the file (a .ttc holds several; ImGui rasterises its first too), or nullptr for anything
// that is not a readable font: not a regular file (a FIFO would block; io/user_files.h reads without blocking),
// over kMaxFontBytes, truncated, a table outside the file.
std::unique_ptr<FontFile> open_font(const std::string& path) {
  auto font = std::make_unique<FontFile>();
  font->path = path;
  try {
    font->data = read_user_file(path, kMaxFontBytes, "a font", "fonts");
  } catch (const Error&) {
    return nullptr;
  }
  if (font->data.size() < 16) return nullptr;  // (a collection's header: 12 bytes and its first offset)
  const auto* bytes = reinterpret_cast<const unsigned char*>(font->data.data());
  const int offset = stbtt_GetFontOffsetForIndex(bytes, 0);
  if (offset < 0 || !tables_inside(font->data, static_cast<size_t>(offset)) || !stbtt_InitFont(&font->info, bytes, offset))
    return nullptr;
  return font;
}

std::vector<std::string> font_folders() {
  std::vector<std::string> out;
  if (const char* dirs = std::getenv("STEPFORMER_FONT_DIRS"); dirs && *dirs) {
    std::string_view rest = dirs;
    while (!rest.empty()) {
      const size_t colon = rest.find(':');
      if (colon != 0) out.emplace_back(rest.substr(0, colon));
      if (colon == std::string_view::npos) break;
      rest.remove_prefix(colon + 1);
    }
    return out;
  }
  out = {"/usr/share/fonts", "/usr/local/share/fonts"};
  const char* home = std::getenv("HOME");
  if (const char* data = std::getenv("XDG_DATA_HOME"); data && *data) out.push_back(std::string(data) + "/fonts");
  else if (home && *home) out.push_back(std::string(home) + "/.local/share/fonts");
  if (home && *home) out.push_back(std::string(home) + "/.fonts");
  return out;
}

// Every .ttf, .otf and .ttc under the font folders, by path (sorted: the same choice on every run).
std::vector<std::string> font_files() {
  std::vector<std::string> out;
  for (const std::string& folder : font_folders()) {
    std::error_code ec;
    fs::recursive_directory_iterator it(folder, fs::directory_options::skip_permission_denied, ec), end;
    for (; !ec && it != end && out.size() < kMaxFallbackFiles; it.increment(ec)) {
      const std::string ext = it->path().extension().string();
      if (ext == ".ttf" || ext == ".otf" || ext == ".ttc" || ext == ".TTF" || ext == ".OTF" || ext == ".TTC")
        out.push_back(it->path().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The first of `names` (file names, in order of preference) found among `files`.
std::unique_ptr<FontFile> first_named(const std::vector<std::string>& files, std::initializer_list<const char*> names) {
  for (const char* name : names)
    for (const std::string& file : files)
      if (fs::path(file).filename() == name)
        if (auto font = open_font(file)) return font;
  return nullptr;
}

// Always in the atlas: ASCII, Latin-1 and Latin Extended-A (the letters of most European words a model reads),
// and U+FFFD, the replacement mark ImGui draws for a character the atlas lacks. Everything else (Greek of the
// formulas, arrows, math symbols, Hangul, Han) is there because the language's table or the screen has it: each
// glyph costs room in every size (body and large), and at 86 px (UI scale 3, presenting on a 4K screen) the
// atlas of a Chinese screen reached 4096 x 8192 with whole Unicode blocks in it; 4096 x 4096 without.
// General punctuation (the quotes, dashes and ellipsis of every Marian vocabulary: “ ” ‘ ’ „ – — …) is always
// there too, as are the few symbols the code itself draws (arrows, minus, infinity, the square root).
constexpr ImWchar kBaseRanges[] = {0x0020, 0x017F, 0x2000, 0x206F, 0x2190, 0x2193, 0x2212, 0x2212,
                                   0x221A, 0x221A, 0x221E, 0x221E, 0xFFFD, 0xFFFD, 0};

// The fonts found, the characters each is asked for, and what no font has. One per process.
class FontSet {
 public:
  static FontSet& get() {
    static FontSet set;
    return set;
  }

  // The ranges every font of the atlas gets, as prepare() left them.
  const ImWchar* ranges() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (ranges_.empty()) prepare_locked();
    return ranges_.Data;
  }

  // Brings the fallbacks up to the characters noted now and makes the ranges from them.
  void prepare() {
    std::lock_guard<std::mutex> lock(mutex_);
    prepare_locked();
  }

 private:
  void prepare_locked() {
    const uint64_t generation = glyphs_generation();
    if (generation == ranges_generation_ && !ranges_.empty()) return;
    ranges_generation_ = generation;
    ImFontGlyphRangesBuilder builder;
    builder.AddRanges(kBaseRanges);
    std::vector<char32_t> unresolved;  // noted characters the fonts so far lack, not searched for yet
    for (const char32_t cp : noted_glyphs()) {
      if (cp > IM_UNICODE_CODEPOINT_MAX) {
        tell_missing(cp, "beyond U+FFFF, which this build of Dear ImGui cannot draw");
        continue;
      }
      builder.AddChar(static_cast<ImWchar>(cp));
      if (!drawn_by_loaded(cp) && searched_.insert(cp).second) unresolved.push_back(cp);
    }
    search_fallbacks(unresolved);
    for (const char32_t cp : searched_)
      if (!drawn_by_loaded(cp)) tell_missing(cp, "no installed font has it");
    ranges_.clear();
    builder.BuildRanges(&ranges_);
  }

 public:

  const FontFile* latin() const { return latin_.get(); }
  const FontFile* cjk() const { return cjk_.get(); }
  std::vector<const FontFile*> fallbacks() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<const FontFile*> out;
    for (const auto& f : fallbacks_) out.push_back(f.get());
    return out;
  }
  std::vector<char32_t> missing() {
    std::lock_guard<std::mutex> lock(mutex_);
    return {missing_.begin(), missing_.end()};
  }

 private:
  FontSet() {
    files_ = font_files();
    latin_ = first_named(files_, {"DejaVuSans.ttf"});
    // Both Hangul and Han in one font, smallest first: WenQuanYi Micro Hei (5 MB), Noto Sans CJK (fonts-noto-cjk,
    // 90 MB), WenQuanYi Zen Hei (fonts-wqy-zenhei, 16 MB).
    cjk_ = first_named(files_, {"wqy-microhei.ttc", "NotoSansCJK-Regular.ttc", "NotoSansCJKsc-Regular.otf",
                                "wqy-zenhei.ttc"});
  }

  bool drawn_by_loaded(char32_t cp) const {
    if ((latin_ && latin_->has(cp)) || (cjk_ && cjk_->has(cp))) return true;
    for (const auto& f : fallbacks_)
      if (f->has(cp)) return true;
    return false;
  }

  // One pass over the other fonts for all the characters none of the loaded ones has: a font with any of them joins
  // the atlas (and draws whatever else it has that the others lack). A font's character map may lie anywhere in
  // the file, so each is read whole, but once a session: what it covers of U+0000..U+FFFF is kept (8 KB a font),
  // and a later character is looked up there. (A desktop with hundreds of fonts pays the reading once, on the
  // first character no loaded font has.)
  void search_fallbacks(std::vector<char32_t> wanted) {
    for (const std::string& file : files_) {
      if (wanted.empty()) return;
      if ((latin_ && file == latin_->path) || (cjk_ && file == cjk_->path)) continue;
      if (std::any_of(fallbacks_.begin(), fallbacks_.end(), [&](const auto& f) { return f->path == file; })) continue;
      auto known = coverage_.find(file);
      std::unique_ptr<FontFile> font;
      if (known == coverage_.end()) {
        font = open_font(file);
        std::vector<bool> covers(IM_UNICODE_CODEPOINT_MAX + 1, false);
        if (font)
          for (char32_t cp = 0x20; cp <= IM_UNICODE_CODEPOINT_MAX; ++cp) covers[cp] = font->has(cp);
        known = coverage_.emplace(file, std::move(covers)).first;
      }
      const auto has = [&](char32_t cp) { return cp < known->second.size() && known->second[cp]; };
      if (std::none_of(wanted.begin(), wanted.end(), has)) continue;
      if (!font) font = open_font(file);
      if (!font) continue;
      wanted.erase(std::remove_if(wanted.begin(), wanted.end(), has), wanted.end());
      fallbacks_.push_back(std::move(font));
    }
  }

  void tell_missing(char32_t cp, const char* why) {
    if (!missing_.insert(cp).second) return;
    std::string utf8;  // the character itself, for a terminal that has a font for it
    if (cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF)) append_utf8(cp, utf8);
    std::fprintf(stderr, "stepformer: the character U+%04X '%s' is drawn as the replacement mark \xEF\xBF\xBD: %s\n",
                 static_cast<unsigned>(cp), printable(utf8).c_str(), why);
  }

  std::mutex mutex_;
  std::vector<std::string> files_;
  std::unique_ptr<FontFile> latin_, cjk_;
  std::vector<std::unique_ptr<FontFile>> fallbacks_;
  std::set<char32_t> searched_;  // characters the fonts loaded at the time lacked: looked for in every font once
  std::set<char32_t> missing_;   // told on stderr
  std::map<std::string, std::vector<bool>> coverage_;  // the other fonts' characters, by file, once read
  ImVector<ImWchar> ranges_;
  uint64_t ranges_generation_ = 0;
};

}  // namespace

void prepare_font_glyphs() { FontSet::get().prepare(); }

std::string load_ui_font(float pixel_size) {
  ImGuiIO& io = ImGui::GetIO();
  FontSet& set = FontSet::get();
  const ImWchar* ranges = set.ranges();  // the prepared ones: they live in the set until the next prepare
  if (const FontFile* latin = set.latin()) {
    ImFontConfig config;
    // Two horizontal samples per pixel place small glyphs at sub-pixel positions; from 32 px on (presentation
    // mode, large UI scales) one is as sharp and rasterises half the pixels. The atlas is rebuilt inside a frame
    // when the scale or presentation mode changes (at UI scale 4 in presentation mode: 126 and 170 px).
    config.OversampleH = pixel_size >= 32.0f ? 1 : 2;
    if (io.Fonts->AddFontFromFileTTF(latin->path.c_str(), pixel_size, &config, ranges)) {
      // The merged fonts: each draws the characters the ones before it lack. One sample per pixel: a Han
      // character or a Hangul syllable is dense enough that two would only double its room in the atlas.
      std::vector<const FontFile*> merged;
      if (set.cjk()) merged.push_back(set.cjk());
      for (const FontFile* f : set.fallbacks()) merged.push_back(f);
      for (const FontFile* f : merged) {
        ImFontConfig more;
        more.MergeMode = true;
        more.OversampleH = 1;
        io.Fonts->AddFontFromFileTTF(f->path.c_str(), pixel_size, &more, ranges);
      }
      return latin->path;
    }
  }
  static bool warned = false;
  if (!warned) {
    std::fprintf(stderr,
                 "stepformer: warning: DejaVu Sans not found (looked in /usr/share/fonts/truetype/dejavu/); "
                 "using ImGui's small built-in font. Install it with: apt-get install fonts-dejavu-core\n");
    warned = true;
  }
  ImFontConfig config;
  config.SizePixels = 13.0f;
  io.Fonts->AddFontDefault(&config);
  return "";
}

bool language_has_font(Language language) {
  if (language == Language::English) return true;
  const FontFile* cjk = FontSet::get().cjk();
  if (!cjk || !FontSet::get().latin()) return false;
  static std::map<Language, bool> known;
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = known.find(language); it != known.end()) return it->second;
  bool all = true;
  for (size_t i = 0; i < kTextCount && all; ++i)
    for (const char32_t cp : utf8_code_points(table_text(language, static_cast<T>(i))))
      if (cp >= 0x80 && !cjk->has(cp) && !FontSet::get().latin()->has(cp)) {
        all = false;
        break;
      }
  return known[language] = all;
}

FontAtlasReport font_atlas_report() {
  FontAtlasReport r;
  FontSet& set = FontSet::get();
  if (set.latin()) r.fonts.push_back(set.latin()->path);
  if (set.cjk()) r.fonts.push_back(set.cjk()->path);
  for (const FontFile* f : set.fallbacks()) r.fonts.push_back(f->path);
  const ImFontAtlas* atlas = ImGui::GetIO().Fonts;
  r.width = atlas->TexWidth;
  r.height = atlas->TexHeight;
  for (const ImFont* font : atlas->Fonts) r.glyphs += font->Glyphs.Size;
  r.missing = set.missing();
  return r;
}

int fallback_glyphs_drawn() {
  const ImDrawData* data = ImGui::GetDrawData();
  if (!data || !data->Valid) return 0;
  std::vector<ImVec2> corners;  // each font's fallback glyph's top-left corner in the atlas
  for (const ImFont* font : ImGui::GetIO().Fonts->Fonts)
    if (font->FallbackGlyph && font->FallbackGlyph->Visible) corners.push_back({font->FallbackGlyph->U0, font->FallbackGlyph->V0});
  int drawn = 0;
  for (int l = 0; l < data->CmdListsCount; ++l)
    for (const ImDrawVert& v : data->CmdLists[l]->VtxBuffer)
      for (const ImVec2& c : corners)
        if (v.uv.x == c.x && v.uv.y == c.y) ++drawn;
  return drawn;
}

}  // namespace sf::gui

#include "util/paths.h"

#include <algorithm>

#include <filesystem>

namespace sf {

std::string shipped_model_path(const std::string& name) {
  // The program's own assets first: the source tree when it runs from the build folder made from it, else
  // bin/../share/stepformer where it is installed (tool_folders()); the working directory last. An installed
  // program never reads the source tree it was built from, which may be gone or hold other models by now.
  namespace fs = std::filesystem;
  const fs::path relative = fs::path("assets") / "models" / (name + ".safetensors");
  std::error_code ec;
#if defined(__EMSCRIPTEN__)
  // A web page: its data (app/CMakeLists.txt, --preload-file) is the only place; the source tree is not in it.
  return (fs::path("/stepformer") / relative).string();
#else
  std::vector<fs::path> roots = tool_folders();
  if (roots.empty()) roots.push_back(fs::path(STEPFORMER_SOURCE_ROOT));  // no /proc: where it runs is unknown
  const fs::path expected = roots.front() / relative;  // named in the error when no candidate has the file
  roots.push_back(fs::current_path(ec));
  for (const fs::path& root : roots)
    if (!root.empty() && fs::exists(root / relative, ec)) return (root / relative).string();
  return expected.string();
#endif
}

std::string tool_script_path(const std::string& name) {
  // A script runs as the user: only one of ours, where this program was built (the source tree of the build
  // folder it runs from) or installed (bin/../share/stepformer), never the folder the user stands in, where
  // anyone's tools/ could be waiting.
  namespace fs = std::filesystem;
  const fs::path relative = fs::path("tools") / name;
  std::error_code ec;
  for (const fs::path& root : tool_folders())
    if (fs::is_regular_file(root / relative, ec)) return (root / relative).string();
  return "";
}

std::vector<std::filesystem::path> tool_folders() {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path exe = fs::weakly_canonical(fs::read_symlink("/proc/self/exe", ec), ec);
  std::vector<fs::path> roots;
  // Built: the program lies inside the build folder that was configured from STEPFORMER_SOURCE_ROOT.
  const fs::path build = fs::weakly_canonical(fs::path(STEPFORMER_BUILD_ROOT), ec);
  const fs::path inside = exe.lexically_relative(build);
  if (!exe.empty() && !inside.empty() && *inside.begin() != "..") roots.push_back(fs::path(STEPFORMER_SOURCE_ROOT));
  if (!exe.empty()) roots.push_back(exe.parent_path().parent_path() / "share" / "stepformer");  // installed
  return roots;
}

std::vector<std::string> multi30k_search_folders() {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path relative = fs::path("shared") / "data" / "multi30k" / "tok";
  std::vector<std::string> folders;
  for (const fs::path& root : {fs::path(STEPFORMER_SOURCE_ROOT).parent_path(), fs::current_path(ec).parent_path()}) {
    if (root.empty()) continue;
    const std::string folder = (root / relative).lexically_normal().string();
    if (std::find(folders.begin(), folders.end(), folder) == folders.end()) folders.push_back(folder);
  }
  return folders;
}

std::string multi30k_data_dir() {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const std::string& folder : multi30k_search_folders())
    if (fs::is_regular_file(fs::path(folder) / "train.lc.norm.tok.de", ec)) return folder;
  return "";
}

}  // namespace sf

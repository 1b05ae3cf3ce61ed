#include "nn/embedding.h"

#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "nn/positional_encoding.h"

namespace sf {

void embedding_forward(const std::vector<int>& ids, const Mat& table, float scale, Mat& out) {
  out.resize(static_cast<Eigen::Index>(ids.size()), table.cols());
  for (size_t i = 0; i < ids.size(); ++i) out.row(static_cast<Eigen::Index>(i)) = table.row(ids[i]) * scale;
}

const Mat& cached_sinusoidal_encoding(int positions, int d_model, SinusoidLayout layout) {
  static std::mutex mutex;
  static std::map<std::tuple<int, int, SinusoidLayout>, std::unique_ptr<Mat>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto& slot = cache[{positions, d_model, layout}];
  if (!slot) slot = std::make_unique<Mat>(sinusoidal_positional_encoding(positions, d_model, layout));
  return *slot;
}

}  // namespace sf

// Family "stepformer": our own naming, written by save_model and the trainer; every shape (config.stacks) and every
// variant the config can say. Names: model/weights.h for_each_weight (docs/model-files.md lists them).
#include "model/family.h"

namespace sf {

namespace {

std::optional<FamilyTensorName> tensor_name(const WeightPlace& place, const Config&) {
  if (!place.stored) return std::nullopt;  // shared or tied: not in the file
  return FamilyTensorName{place.name};
}

}  // namespace

const FamilyDescription& stepformer_family() {
  static const FamilyDescription family{
      "stepformer", "Stepformer's own files: save_model, stepformer-cli train", std::nullopt,
      "words", {}, tensor_name};
  return family;
}

}  // namespace sf

#include "model/family.h"

namespace sf {

const std::vector<const FamilyDescription*>& families() {
  static const std::vector<const FamilyDescription*> all = {&stepformer_family(), &pytorch_tutorial_family(),
                                                            &seq2seq_tutorial_family(), &from_scratch_family(),
                                                            &marian_family(), &gpt2_family(),
                                                            &bert_family()};
  return all;
}

const FamilyDescription* find_family(const std::string& name) {
  for (const FamilyDescription* f : families())
    if (name == f->name) return f;
  return nullptr;
}

const char* param_suffix(WeightParam p) { return p == WeightParam::Weight ? ".weight" : ".bias"; }

}  // namespace sf

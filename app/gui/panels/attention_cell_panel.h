// Panel: one attention cell opened into its computation, the paper's equation with this cell's numbers.
//
//   score_ij = (q_i . k_j) / sqrt(d_k) = (sum_d q_id k_jd) / sqrt(d_k)    q_i, k_j: (D), D = d_k
//   p_ij     = softmax_j(score_ij + M_ij)                                  M_ij: 0, or -inf where blocked
//   out_i    = sum_j p_ij v_j                                              v_j: (D), out_i: (D)
//
// Every number comes from the trace of the head (q, k, v, the mask, the probabilities); the sum and the output
// are formed here from them, as the equation says, so a student can check the step the trace skips.
#pragma once
#include <string>
#include <vector>

#include "gui/render/map_view.h"
#include "model/config.h"
#include "nn/attention.h"

namespace sf::gui {

// The numbers of one cell (head `head`, query row `row`, key column `col`) of an attention trace.
struct AttentionCell {
  int head = 0, row = 0, col = 0, head_dim = 0;
  int scale_by = 0;       // the scores are divided by sqrt(scale_by): D, or C for the from-scratch family
  bool uniform_when_blocked = false;  // from-scratch: blocked cells get -1e20, a wholly blocked row is uniform
  RowVec q, k, products;  // (D) q_i, k_j and their element-wise product
  float dot = 0;          // sum of the products: q_i . k_j
  float scaled = 0;       // dot / sqrt(D): the score before the mask
  bool blocked = false;   // the mask puts -inf here
  float traced_score = 0; // the trace's own score (QK^T / sqrt(D) as the forward computed it)
  RowVec row_probs;       // (Tk) the softmax over the row, from the trace
  float prob = 0;         // row_probs(col)
  Mat v;                  // (Tk, D) the values
  RowVec out;             // (D) sum_j p_ij v_j, formed here
  RowVec traced_out;      // (D) the trace's head output row
};

// Throws nothing: an out-of-range head, row or column gives std::nullopt-like empty (head_dim 0). `config` gives
// the scale (attention_scale) and how blocked cells are filled; nullptr: the paper's, sqrt(D) and -inf.
AttentionCell expand_attention_cell(const AttentionTrace& a, int head, int row, int col,
                                    const Config* config = nullptr);

class AttentionCellPanel {
 public:
  // Draws the computation of `cell` in a column `width` wide; `query` and `key` name its row and column.
  // Returns true when the user closes it.
  // `key_side`: whose tokens the keys are (hovering a key here marks it, as a key, in the other views).
  bool draw(const AttentionCell& cell, const std::string& query, const std::string& key,
            const std::vector<std::string>& key_labels, TokenSide key_side, float width);

 private:
  MapView q_, k_, products_, row_probs_, values_, out_;
};

}  // namespace sf::gui

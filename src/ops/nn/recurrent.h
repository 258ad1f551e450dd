// Shared pieces of the recurrent ops (RNN, GRU, LSTM): activation functions named by the
// `activations` attribute, shape inference of Y / Y_h / Y_c, and the checked set-up that
// reads X, W, R, B, sequence_lens and initial_h into f32 (layout 0: [seq, batch, ...]).
#pragma once
#include <string>
#include <vector>

#include <algorithm>

#include "nn_common.h"

namespace kiln::ops::nn {

struct Activation {
  std::string name;
  float alpha = 0, beta = 0;
  float operator()(float x) const;
};

// `per_dir` activations per direction, defaults `dflt` (one direction's worth).
std::vector<Activation> read_activations(const Node& n, int64_t dirs, const std::vector<std::string>& dflt);

int64_t num_directions(const Node& n);

// Y = [seq, dirs, batch, hidden], Y_h (and Y_c) = [dirs, batch, hidden].
// `gates`: rows of W per direction in units of hidden_size (1 RNN, 3 GRU, 4 LSTM).
void infer_recurrent(InferContext& c, int64_t gates);
Cost cost_recurrent(const CostContext& c, int64_t gates);
// Attributes RNN, GRU and LSTM all take, plus the op's own (`extra`).
std::vector<AttrSpec> recurrent_attrs(std::vector<AttrSpec> extra = {});

struct RecurrentSetup {
  int64_t seq = 0, batch = 0, input = 0, hidden = 0, dirs = 1, gates = 1;
  std::vector<int64_t> lens;       // valid steps per batch row
  float clip = 0;                  // 0 = no clipping
  Tensor X, W, R, B;               // f32; B is zeros [dirs, 2*gates*hidden] when absent
  Tensor init_h;                   // f32 [dirs, batch, hidden] (zeros when absent)
  DType dtype = DType::f32;        // model dtype of the outputs
  // XW[d] = X * W[d]^T + Wb[d] + Rb[d] for all steps: [seq*batch, gates*hidden].
  // (For GRU with linear_before_reset the caller removes Rb of the h gate itself.)
  std::vector<float> xw(int64_t d, int threads) const;
  bool reverse(int64_t d) const;   // direction d runs backwards in time
  // Time index of batch row b at step s of direction d; -1 once its sequence ended.
  int64_t time_of(int64_t d, int64_t s, int64_t b) const {
    if (s >= lens[b]) return -1;
    return reverse(d) ? lens[b] - 1 - s : s;
  }
  std::string direction;
};

RecurrentSetup setup_recurrent(const KernelContext& c, int64_t gates);

inline float clip_to(float v, float clip) { return clip > 0 ? std::min(clip, std::max(-clip, v)) : v; }

}  // namespace kiln::ops::nn

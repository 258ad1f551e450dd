// Structured (channel) pruning of convolutions and linear layers, without retraining.
//
// plan_pruning finds the channel groups of a float model (after prepare_float_model): the output
// channels of a Conv (group 1) / Gemm / MatMul with a constant weight, followed through the ops
// that keep channels apart (activations, pooling, depthwise convolutions, per-channel constants,
// Flatten, Concat) to the layers that read them. Channels joined by an element-wise Add / Mul /
// Sub / Div of two activations (a residual, a squeeze-excite scale) must be pruned identically:
// those producers form one group, pruned together only with PruneOptions::residuals (else the
// group is skipped, and the report says so). A group reaching a graph output or an op that mixes
// channels in another way (Reshape, Transpose, Softmax, ...) is skipped with that reason.
//
// In each pruned group the channels with the smallest weight norm (L1 or L2 of the producer's
// output-channel slice; the sum of the per-producer norms, each divided by its mean, in a joined
// group) are removed: round(ratio x C) of them (kept counts rounded up to `multiple`). apply_pruning
// removes them physically: producer weights and biases, per-channel parameters on the way, and
// the matching input channels (columns) of the reading layers' weights.
//
// reconstruct_pruned (reconstruct.cpp) then refits, without training, every layer whose inputs lost
// channels: least squares of its original output (original model, original inputs) on the pruned
// model's inputs, plus a bias, ridge-regularised, solved in double.
#pragma once
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "kiln/compress/calibrate.h"
#include "kiln/ir/graph.h"

namespace kiln::compress {

enum class ChannelNorm { L1, L2 };

struct PruneOptions {
  double ratio = 0.3;                 // share of each group's channels removed, in [0, 1)
  ChannelNorm norm = ChannelNorm::L1;
  bool residuals = false;             // prune groups joined by Add/Mul (residual streams) together
  int64_t multiple = 1;               // kept channel counts rounded up to a multiple of this
  std::vector<std::string> exclude;   // producer nodes whose channels stay
};

// Channels of a group along one axis of a tensor: `channels` channels of `unit` consecutive
// elements each (unit > 1 after a Flatten of [N, C, H, W]); group -1 = channels no group owns.
struct ChannelRun {
  int group = -1;
  int64_t channels = 0;
  int64_t unit = 1;
};

// Slice a constant input of a node along `axis`, keeping the elements of the kept channels of
// each run (runs laid end to end along the axis).
struct ChannelEdit {
  std::string node;
  int input = 1;
  int64_t axis = 0;
  std::vector<ChannelRun> runs;
  enum Kind { Producer, PerChannel, Reader } kind = Reader;
};

struct ChannelGroup {
  std::vector<std::string> producers;  // nodes writing these channels
  std::vector<std::string> readers;    // layers whose weights lose input columns
  std::vector<std::string> joins;      // element-wise nodes joining several producers
  int64_t channels = 0;
  std::vector<int64_t> kept;           // kept channel indices, ascending (pruned groups only)
  std::string skipped;                 // why the group keeps its channels ("" = pruned)
  bool pruned() const { return skipped.empty(); }
};

struct PrunePlan {
  std::vector<ChannelGroup> groups;    // in graph order of their first producer
  std::vector<ChannelEdit> edits;
};

PrunePlan plan_pruning(const Model& m, const PruneOptions& opt);
// Slices the constants of `m` as planned (new initializers; the old ones are dropped when
// unused), then re-infers shapes and verifies. Graph outputs keep their shapes.
void apply_pruning(Model& m, const PrunePlan& plan);
// The indices along an edit's axis that survive the plan (all of them for groups not pruned).
std::vector<int64_t> surviving_indices(const std::vector<ChannelRun>& runs, const PrunePlan& plan);
// Nodes whose input channels changed (the reconstruction's layers), in graph order.
std::vector<std::string> pruned_readers(const PrunePlan& plan);

// One refitted layer: relative squared error ||Y - Y'||^2 / ||Y||^2 of its output on the
// validation rows (every 4th calibration image, not fitted; the fitted rows when there is one
// image), with the sliced original weights (plain pruning) and with the fit.
struct LayerFit {
  std::string node;
  double error_plain = 0, error_fit = 0;
  double ridge = 0;            // the chosen lambda factor; 0 = the plain weights stayed
  int64_t rows = 0, validation_rows = 0, unknowns = 0;
  std::string note;            // why the plain weights stayed
};
struct ReconstructOptions {
  // lambda = ridge x 10^k x mean diagonal of X^T X (weights only, not the bias), k = 0 ..
  // ridge_steps - 1, stopping at the first minimum of the validation error; the chosen lambda is
  // refitted on all rows. A fit no better than plain pruning on the validation rows is dropped, and
// a layer with fewer fitted rows than unknowns is not refitted.
  double ridge = 1e-4;
  int ridge_steps = 7;
  int64_t max_rows = 16384;   // sampled output positions per layer (all when fewer)
  uint64_t seed = 1;
};
// Refits the layers whose inputs lost channels (pruned_readers(plan)) of `pruned` (`original`
// after apply_pruning(plan): same node names) on `calib`. A fit that does not lower the error
// on the validation rows leaves the plain weights.
std::vector<LayerFit> reconstruct_pruned(const Model& original, Model& pruned, const PrunePlan& plan,
                                         const BatchSource& calib, const ReconstructOptions& opt,
                                         std::ostream* log = nullptr);

}  // namespace kiln::compress

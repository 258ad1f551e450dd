// `kiln profile --vs ort`: kiln's kernels beside ONNX Runtime's nodes on the same model, inputs
// and threads, each side timed by its own profiler (kiln's Executable::profile_run, ORT's session
// trace through scripts/ort_bench.js --profile).
//
// The two graphs differ after optimization (kiln fuses a Conv with its residual Add, ORT renames
// the NCHWc convolutions it creates), so ORT's nodes are matched to kiln's kernels through the
// original ONNX graph: an ORT node belongs to the kiln kernel that covers the original node it
// names. ORT names a node it creates after the original node it came from ("fused X") or after the
// tensor it writes ("X_output_0_nchwc"), so a peer name, with a leading "fused " removed, is taken
// as (in this order) an original node's name; the longest original tensor name it starts with
// (followed by '_' or nothing), meaning that tensor's producer; the longest original node name it
// starts with (followed by '_'). ORT's nodes with no such name (ReorderInput/ReorderOutput, the
// layout conversions it inserts), or whose original node no kiln kernel covers (a Flatten kiln
// folds into a view), are listed apart as unmatched.
#pragma once
#include <string>
#include <vector>

#include "kiln/analysis/profile.h"
#include "kiln/ir/graph.h"
#include "kiln/plan/json.h"

namespace kiln::analysis {

// One node of the peer's profile: its name, op type and median kernel time.
struct PeerNode {
  std::string name, op;
  double ms = 0;
};

struct PeerKernel {
  std::string name, op, tactic;       // kiln's kernel
  double kiln_ms = 0, peer_ms = 0;    // kiln's median; the sum of its matched peer nodes' medians
  std::vector<std::string> peer_nodes;
};

struct PeerComparison {
  std::string peer = "ort";
  double kiln_plain_ms = 0, peer_run_ms = 0;  // median whole runs (each side's own clock)
  double kiln_kernel_ms = 0, peer_node_ms = 0;  // sums of the medians (peer: matched and not)
  std::vector<PeerKernel> kernels;            // kiln's kernels in run order
  std::vector<PeerNode> unmatched;            // peer nodes no kiln kernel accounts for
};

// The original node a peer node name stands for (rules above), or nullptr.
const Node* peer_source_node(const Graph& source, const std::string& peer_name);

// Pairs `peer` with the kernels of `p` (whose nodes[] name original nodes of `source`).
PeerComparison compare_with_peer(const Profile& p, const Graph& source, const std::vector<PeerNode>& peer,
                                 double peer_run_ms);

// The kernels with the most time over the peer's (kiln - peer), the totals and the unmatched
// peer time.
std::string peer_to_text(const PeerComparison& c, size_t top);
// {"peer", "plain_ms", "peer_run_ms", "ratio", "kernel_ms", "peer_node_ms", "kernels": [{"name",
//  "op", "tactic", "ms", "peer_ms", "ratio", "peer_nodes"}], "unmatched": [{"name", "op", "ms"}]}
json::Value peer_json(const PeerComparison& c);

}  // namespace kiln::analysis

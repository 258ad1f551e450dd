// The artifact: one file, `model.kiln`, holding everything the runtime needs (docs/artifact.md).
//
//   header (magic, format version, section table)  then sections, each 4096-aligned:
//     manifest.json  ArtifactManifest (kiln version, source model and hash, ISA, passes, dims)
//     graph.kir      the optimized graph in textual IR, weights elided
//     weights.json   index: for each stored tensor its key, dtype, dims, offset and size
//     weights.bin    the tensors' bytes, each 64-aligned; mmapped at load, copied into huge pages to run
//     kernels.so     the generated-kernel library (absent when the graph needs none)
//     plan.json      the memory plan for the compiled shape (for inspection)
//
// Writing goes to a temporary file in the same directory, is fsynced, then renamed over `path`:
// a killed writer never leaves half an artifact, and a failed write (full disk) leaves the old
// one. Reading checks magic, version, section bounds, a checksum per section, and the ISA; every
// failure is a one-line kiln::Error naming the file.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/ir/graph.h"
#include "kiln/ir/sha256.h"
#include "kiln/runtime/executable.h"

namespace kiln {

// 2: channel-blocked activations (nodes with x_blocked / y_blocked, lower/blocked_layout.cpp),
// which a version-1 runtime would silently read as NCHW.
// 3: If branches lowered like the main graph (packed weights, generated kernels inside then/else
// graphs), which a version-2 runtime ran on the reference kernels and failed on mid-run.
// 4: a depthwise convolution's packed weight carries a second, rearranged copy for the pair
// kernels (conv_pack_weight): this runtime would read past a version-3 artifact's [K][RS].
// 5: `in_place` nodes may name the one input they may write over (`in_place_input`: a direct
// convolution's residual); a version-4 planner would ignore the name and could give the output
// the bytes of the convolution's input X, which every output pixel reads.
// 6: padded planes between direct convolutions (`y_pad` on the producer, `x_padded` on the
// reader, lower/padded_layout.cpp): a version-5 runtime would size the tensor without its border
// and read the planes as a plain blocked input.
// 7: 16-channel blocks between direct convolutions (`x_block` / `y_block` 16,
// lower/blocked_layout.cpp): a version-6 runtime would read them as 8-channel blocks.
// 8: AVX-512 GEMM tiles of 6 x 64 (KernelTable::gemm; the direct convolution keeps 14 x 32):
// weights packed for the GEMM (MatMul and Gemm B, pixel-gemm and pointwise weights) are 64-column
// panels and 6-row A panels, which a version-7 runtime would read as 32 and 14.
// 9: AVX-512 direct convolutions of windows with output channels a multiple of 64 on rows of 24
// or more run on a 6 x 64 tile (KernelTable::conv_tile_p64), their weights in 64-column panels,
// which a version-8 runtime would read as 32-column ones.
// 10: direct convolutions of planar inputs with fewer channels than window columns (the RGB
// stems) pack their weights' K as (window row, channel, window column), which a version-9
// runtime would read as (tap, channel).
// 11: AVX-512 direct convolutions marked `winograd` run F(2x2, 3x3) Winograd tiles, their weights
// 16 transformed matrices in GEMM B panels, which a version-10 runtime would read as direct panels.
constexpr int64_t kArtifactFormatVersion = 11;
// First 8 bytes of every artifact (a non-ASCII first byte keeps it apart from text formats).
constexpr std::string_view kArtifactMagic{"\x89KILNAR\n", 8};

// This build's version ("0.1.0").
std::string_view kiln_version();

// Writes the artifact. Empty manifest.kiln_version / format_version are filled in with this
// build's; empty `kernel_library` leaves the section out. Throws kiln::Error naming the path
// (the old file at `path`, if any, is then left as it was).
void write_artifact(const std::string& path, const ArtifactManifest& manifest, const Model& model,
                    std::string_view kernel_library = {}, const std::string& plan_json = {});

struct ArtifactSection {
  std::string name;
  uint64_t offset = 0, size = 0, checksum = 0;
};

// Where a loaded artifact's weights live.
enum class WeightMemory {
  // Inside the mmapped file: nothing copied, pages shared with every process that maps it and
  // left to the page cache. For readers that only look at the graph or the weights.
  mapped,
  // Copied into memory of the process's own, 2 MiB aligned and advised for transparent huge
  // pages (make_large_buffer); the file's pages are released after the copy. For running: on
  // this Zen 5 host, bert_base at 2 threads ran 20-30% slower on the mapped weights whenever ONNX
  // Runtime had run in between (the interleaved `kiln bench --vs ort`), and not on the copy.
  copied,
};

// An artifact read into memory: the model's weights point into `file` (the mmapped artifact)
// or into `weights` (WeightMemory::copied).
struct LoadedArtifact {
  std::shared_ptr<Buffer> file;
  std::shared_ptr<Buffer> weights;  // weights.bin's copy, or null when mapped
  std::vector<ArtifactSection> sections;
  ArtifactManifest manifest;
  Model model;                     // parsed graph.kir with the weights of weights.bin
  std::string_view kernel_library; // bytes inside `file`; empty when absent
  std::string plan_json;
};

// Reads and checks an artifact; with check_isa, also that this CPU runs manifest.target_isa.
LoadedArtifact read_artifact(const std::string& path, bool check_isa = true,
                             WeightMemory weights = WeightMemory::mapped);

// The weight memory for artifacts loaded to run (Executable::load): copied, unless the
// environment sets KILN_MMAP_WEIGHTS=1 (many models in one process, where sharing the page cache
// matters more than the TLB).
WeightMemory weight_memory_to_run();

// Only the manifest (sections and checksums checked, graph and weights not read).
ArtifactManifest read_artifact_manifest(const std::string& path);

// True when the file starts with kArtifactMagic (false for a missing or short file).
bool is_artifact_file(const std::string& path);

// ---- helpers the compiler driver shares --------------------------------------------------------
// Best ISA this CPU runs: "avx512" (AVX-512 F/BW/VL/DQ), "avx2" (AVX2 + FMA) or "scalar".
std::string_view host_isa();
// Whether code built for `built_for` runs on a CPU whose best ISA is `cpu` (unknown names throw).
bool isa_runs_on(std::string_view built_for, std::string_view cpu);
// Whether this CPU runs code built for `isa`.
bool host_supports_isa(std::string_view isa);
// The one-line refusal "<path>: built for avx512, but this CPU supports only avx2; ..." (read_artifact
// calls it with host_isa()).
void check_artifact_isa(const std::string& path, std::string_view built_for, std::string_view cpu);

}  // namespace kiln

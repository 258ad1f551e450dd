// 2-D convolution on NCHW activations with weights packed ahead of time, and a fused epilogue
// (bias per output channel, residual with the output's layout, activation).
//
// Tactics (the lowering picks one per node; each reports why it does not apply):
//   gemm       any group size: im2col written straight into the GEMM's packed-B panels
//              (implicit GEMM: no full im2col matrix), weight packed as A.
//   pointwise  1x1, stride 1, no padding: the input plane is B as it is (no im2col at all).
//   depthwise  group == Cin == Cout: per-channel sliding window, vectorised along W, or over a
//              channel block's lanes between channel-blocked activations (8-channel blocks;
//              16 on AVX-512 for input rows of up to 16 pixels: src/kernels/depthwise_wide.h).
//   pixel-gemm group 1: output pixels as GEMM rows, channels as columns (weight packed as B),
//              result transposed into NCHW: for small images (7x7, 14x14), where the gemm
//              tactic's pixel columns would leave most of each vector empty.
//   direct     group 1, stride_w <= 2: pixel-gemm's orientation without im2col: the micro-kernel
//              reads output pixels straight from the (zero-padded copy of the) input planes
//              and transposes its register tile into NCHW with the epilogue (conv_direct.h);
//              with the depthwise one, the tactics that read and write channel-blocked activations.
//              Its 3x3 stride-1 windows between channel-blocked activations (14x14 and up, on
//              AVX-512) run as F(2x2, 3x3) Winograd tiles: 2.25x fewer multiply-adds
//              (Conv2dShape::winograd, src/kernels/conv_winograd.h).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "kiln/kernels/epilogue.h"

namespace kiln::kernels {

// Channels per block of the channel-blocked layout (Conv2dShape::x_blocked, y_blocked).
constexpr int64_t kConvBlock = 8;
// Channels per block of the wide blocked layout (Conv2dShape::x_block / y_block): a pixel's
// block one 64-byte line, one AVX-512 vector, as ORT's NCHWc lays activations out there.
constexpr int64_t kConvBlockWide = 16;

struct Conv2dShape {
  int64_t N = 1, C = 0, H = 0, W = 0;  // input
  int64_t K = 0;                        // output channels
  int64_t R = 1, S = 1;                 // kernel height, width
  int64_t stride_h = 1, stride_w = 1, dil_h = 1, dil_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  int64_t group = 1;
  // Channel-blocked activations, [N][C/kConvBlock][H][W][kConvBlock] (a pixel's 8 channels
  // consecutive), for the input (x_blocked) or the output and residual (y_blocked): between
  // two direct convolutions the output's transpose into NCHW and the next layer's transpose
  // back into blocks both disappear (lower/blocked_layout.cpp decides). Direct and depthwise
  // tactics only.
  bool x_blocked = false, y_blocked = false;
  // Channels per block of a blocked input / output (and residual): kConvBlock, or
  // kConvBlockWide between direct convolutions on AVX-512 and through small depthwise ones
  // (lower/blocked_layout.cpp decides; direct tactic with a wide input at stride_w 1, or the
  // depthwise one wide on both sides: src/kernels/depthwise_wide.h): the tiles' 16-lane vectors
  // then hold a pixel's whole block, so storing them and re-reading partial sums needs no shuffles.
  int64_t x_block = kConvBlock, y_block = kConvBlock;
  // Pixel-major activations, [N][H][W][C] (a pixel's channels consecutive), for the input
  // (x_nhwc) or the output and residual (y_nhwc): between INT8 convolutions on the "pixels" path,
  // whose tiles read pixels' channels in place and compute pixels x channels, the NCHW input's
  // transpose and the output's transposed epilogue both disappear (lower/int8_nhwc_layout.cpp
  // decides). INT8 convolutions with group 1 only (qconv_nhwc_supported).
  bool x_nhwc = false, y_nhwc = false;
  // Padded blocked activations between two direct convolutions (lower/padded_layout.cpp
  // decides): the input already lies in this convolution's zero-padded planes, [N][C/8][H +
  // pad_top + pad_bottom][W + pad_left + pad_right][8], which the kernel reads in place instead
  // of a padded copy (x_padded), or the output goes into the interior of planes with a border of
  // y_pad_* pixels, whose zeros the kernel writes on every call (the arena lends those bytes to
  // other tensors between runs). Direct tactic, channel-blocked only; a padded output takes no
  // residual (the epilogue reads Z at the output's offsets) and no channel means.
  bool x_padded = false;
  int64_t y_pad_top = 0, y_pad_left = 0, y_pad_bottom = 0, y_pad_right = 0;
  // The direct tactic's 6 x 64 tile (KernelTable::conv_tile_p64, AVX-512): its weights packed in
  // 64-column panels. Chosen when the weights are packed (conv_direct_takes_p64, at lowering when
  // the image size is known) and recorded on the node (attribute `p64`), so that the packing and
  // the kernel that reads it agree whatever size the image has at run time.
  bool p64 = false;
  // The direct tactic as F(2x2, 3x3) Winograd tiles (src/kernels/conv_winograd.h): 3x3 windows at
  // stride 1 between channel-blocked activations, weights packed as 16 transformed matrices. Decided at
  // lowering once the layouts are known (lower/winograd.cpp) and recorded on the node (attribute
  // `winograd`), like p64.
  bool winograd = false;
  // A band of a taller output: the output's (and the residual's) planes hold this many rows, and
  // the call writes its out_h() rows from the pointer it is given, so the planes' blocks lie
  // y_plane_rows x out_w pixels apart (kernels::depthwise_project runs its 1x1 a band of rows at
  // a time straight into the whole output; kernels::detail::conv_direct_bands a stem's bands,
  // into bordered planes too: the band keeps y_pad_left/right and the rows above and below are
  // its caller's). 0: out_h() + y_pad_top + y_pad_bottom. Direct tactic, one image, blocked
  // output.
  int64_t y_plane_rows = 0;
  // A band of a taller layer (kernels::expand_depthwise's expands, depthwise_project's
  // projections): the whole layer's output rows. A schedule chosen by the output's size, whose
  // sums run in another order (the 1x1 schedule's channel batches, direct_1x1_applies), is
  // chosen as for the whole layer, so that the banded call's outputs are the whole call's bit for
  // bit: the runtime bands or not by a measurement of the cores (expand_depthwise_bands_pay), and the
  // outputs must not follow it. 0: out_h().
  int64_t whole_out_h = 0;
  // Input channels [c, c + C) of a layer of more (kernels::depthwise_project's halves of a
  // projection, one a thread): the packed weight is the whole layer's, its panels this many
  // rows apart (rows q of each panel from the pointer given on), and the call writes the
  // slice's partial sums. 0: C * R * S, the shape's own. Direct tactic, general schedule only.
  int64_t w_panel_rows = 0;
  int64_t out_h() const { return (H + pad_top + pad_bottom - dil_h * (R - 1) - 1) / stride_h + 1; }
  int64_t out_w() const { return (W + pad_left + pad_right - dil_w * (S - 1) - 1) / stride_w + 1; }
  bool padded() const { return pad_top || pad_left || pad_bottom || pad_right; }
  bool y_padded() const { return y_pad_top || y_pad_left || y_pad_bottom || y_pad_right; }
  // Floats one image takes in memory, input and output (the planes' borders included).
  int64_t x_image_floats() const {
    return C * (x_padded ? (H + pad_top + pad_bottom) * (W + pad_left + pad_right) : H * W);
  }
  int64_t y_image_floats() const {
    return K * (y_plane_rows ? y_plane_rows : out_h() + y_pad_top + y_pad_bottom) * (out_w() + y_pad_left + y_pad_right);
  }
};

enum class ConvTactic : uint8_t { Gemm, Pointwise, Depthwise, PixelGemm, Direct };
// "gemm", "pointwise", "depthwise", "pixel-gemm", "direct"
const char* conv_tactic_name(ConvTactic t);

// Empty when the tactic can run this shape, else why not (for --explain).
std::string conv_tactic_unsupported(ConvTactic t, const Conv2dShape& s);

// The tactic expected to run `s` fastest on this CPU's micro-kernel, among those that apply:
// depthwise for depthwise shapes; else pointwise (1x1) or gemm, unless pixel-gemm wastes
// clearly fewer vector lanes on padding (small images). `s` needs its real spatial size.
ConvTactic conv_preferred_tactic(const Conv2dShape& s);

// Whether the direct tactic's register tiles take mr consecutive output pixels across row ends
// (an output oh x ow, not 1x1 stride 1, on a micro-kernel of mr rows): true when rows of ow
// would end in a short tile and no tile spans three rows. Then the tiles cover the image's
// oh * ow pixels as one row; else each output row on its own.
bool conv_direct_wraps(int mr, int64_t oh, int64_t ow);
// Whether the direct tactic should take this CPU's 6 x 64 tile for s (Conv2dShape::p64): windows of
// one group, output channels a multiple of 64, output rows of 24 pixels or more, on a table that
// has the tile. False when s's image size is a stand-in: the caller decides on known sizes only.
bool conv_direct_takes_p64(const Conv2dShape& s);
// False when KILN_DIRECT_P64=0 turned the 6 x 64 tile off at start-up (the compile cache keys on it).
bool conv_direct_p64_enabled();
// "" when the direct tactic can run s as Winograd tiles (Conv2dShape::winograd), else why not;
// "turned off (KILN_WINOGRAD=0)" when that switch was set at start-up (the compile cache keys on it).
std::string conv_winograd_unsupported(const Conv2dShape& s);
bool conv_winograd_enabled();
// Where the rows do not wrap: true when a row of row_len pixels runs wide tiles (mr / 2 pixels
// by 2 nr channels): rows of at most mr / 2, or whole tiles plus exactly half of one.
bool conv_direct_wide(int mr, int64_t row_len);

// Whether conv2d on tactic t, shape s, epilogue e and `threads` threads runs the direct tactic's
// general schedule, whose tiles fetch Epilogue::warm toward cache as they compute (the 1x1
// schedule, row bands, edge rows and Winograd tiles do not: warm is ignored there).
bool conv_fetches_ahead(ConvTactic t, const Conv2dShape& s, const Epilogue& e, int threads);

// Whether the depthwise tactic may write its output over its input X (same bytes, no residual)
// at any thread count: the channel-blocked kernel copies a block's input planes into its own
// scratch before it writes that block, and blocks are disjoint, as long as no split cuts the
// planes into bands of rows (a band reads the rows around it, which the next band's thread
// would be writing). Output the input's size, both channel-blocked. In place, a layer writes the
// lines its input's producer (a direct convolution, whose threads share out the same channel
// blocks on small maps) wrote on the same core, instead of lines the arena last gave to
// whatever tensor the other core wrote: mobilenet_v2's 14x14 depthwise layers took as long on 2
// threads as on 1, and half with their output lines written beforehand. NCHW depthwise layers
// (efficientnet_b0's, after GEMM tactics that share out pixels) ran 3-8% slower in place.
bool conv_depthwise_in_place(const Conv2dShape& s);

// Floats of the packed weight for this tactic (the ONNX weight is [K, C/group, R, S]).
size_t conv_packed_weight_floats(ConvTactic t, const Conv2dShape& s);
void conv_pack_weight(ConvTactic t, const Conv2dShape& s, const float* w, float* packed);

// Scratch floats one call needs (im2col panels per thread); the runtime gives it from its arena.
size_t conv_workspace_floats(ConvTactic t, const Conv2dShape& s, int threads);

// y [N, K, out_h, out_w] = epilogue(conv(x, w)); epi.bias_per_row is taken as per-channel.
void conv2d(ConvTactic t, const Conv2dShape& s, const float* x, const float* packed_w, float* y,
            const Epilogue& epi, float* workspace, int threads);

// An expanding 1x1 convolution and the depthwise one that reads only its output (mobilenet_v2's
// inverted residual blocks), run together band by band of the depthwise output's rows: each
// thread expands the input rows its band's windows reach into its own scratch, where the
// depthwise windows read them while they are in L2, instead of the whole expanded tensor going
// out to L3 or DRAM and back (lower/expand_depthwise.cpp picks the pairs). `expand`: 1x1,
// stride 1, unpadded, one group, direct tactic, output in 8-channel blocks; `depthwise`: its
// output's channels in and out of 8-channel blocks. Same floats as the two calls one after the
// other (the kernels and their order of sums are theirs). "" when the pair can run this way,
// else why not.
std::string expand_depthwise_unsupported(const Conv2dShape& expand, const Conv2dShape& depthwise);
// Whether running the pair band by band pays (the lowering's rule; conv_expand_depthwise.cpp has
// the measurements): a strided depthwise layer on maps of 28 rows or more.
bool expand_depthwise_pays(const Conv2dShape& expand, const Conv2dShape& depthwise);
// Workspace floats for up to `threads` threads: the whole expanded tensor and the two
// convolutions' own, for the calls that run them one after the other: on one thread (banded,
// one thread ran them 1.04-1.14x slower: conv_expand_depthwise.cpp) and while the cores share an
// L3 and the threads' L2s hold the expanded tensor (kernels::expand_depthwise_bands_pay). Without
// a workspace the call runs band by band.
size_t expand_depthwise_workspace_floats(const Conv2dShape& expand, const Conv2dShape& depthwise, int threads);
// y = depthwise_epi(depthwise(expand_epi(expand(x)))); packed weights as conv_pack_weight packs
// them for the direct and the depthwise tactic. No residual on either; depthwise_epi may average
// the output (Epilogue::channel_means: summed band by band as the kernel writes, in double).
void expand_depthwise(const Conv2dShape& expand, const Conv2dShape& depthwise, const float* x, const float* packed_w1,
                      const Epilogue& epi1, const float* packed_w2, const Epilogue& epi2, float* y, float* workspace,
                      int threads);

}  // namespace kiln::kernels

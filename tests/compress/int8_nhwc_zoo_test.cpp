// Zoo models through kiln quantize: the artifacts keep their INT8 activations pixel-major
// between convolutions where the CPU's table allows (lower/int8_nhwc_layout.cpp), and their
// compiled runs give exactly the outputs of the reference kernels on the same graphs in NCHW
// (the layout attributes removed): the kernels' accumulation is exact and their epilogue the
// reference's arithmetic, so the layout may not change a single bit.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "kiln/compress/driver.h"
#include "kiln/kernels/int8.h"
#include "kiln/runtime/artifact.h"
#include "kiln/runtime/executable.h"
#include "kiln/runtime/interpreter.h"

namespace kiln::compress {
namespace {

namespace fs = std::filesystem;

struct Marked {
  int qconvs = 0, pixel_major = 0, depthwise = 0, pools = 0;
};

// Quantizes build/zoo/MODEL (2 random calibration batches), counts the pixel-major marks and
// strips them from a copy of the graph, and checks the compiled run against the reference
// kernels on that copy bit for bit, at 1 and 2 threads. Returns the counts.
Marked expect_pixel_major_equals_reference(const std::string& model) {
  Marked m;
  const fs::path src = fs::path(KILN_BINARY_DIR) / "zoo" / model / "model.onnx";
  EXPECT_TRUE(fs::exists(src)) << src << " (the zoo.prepare fixture exports it)";
  const fs::path dir = fs::path(KILN_BINARY_DIR) / "compress_test" / "nhwc_zoo";
  fs::create_directories(dir);
  QuantizeJob job;
  job.model_path = src.string();
  job.out_path = (dir / (model + ".kiln")).string();
  job.calib_random = 2;
  job.inputs.dims["N"] = 1;
  job.cache_dir = (dir / "cache").string();
  quantize_file(job);

  LoadedArtifact art = read_artifact(job.out_path);
  for (const auto& n : art.model.graph->nodes()) {
    const bool x = n->attr_i("x_nhwc", 0) != 0, y = n->attr_i("y_nhwc", 0) != 0;
    if (n->op == "QConv") {
      ++m.qconvs;
      m.pixel_major += x || y;
      m.depthwise += (x || y) && n->attr_i("group", 1) != 1;
    } else if (n->op == "MaxPool" || n->op == "GlobalAveragePool") {
      m.pools += x || y;
    }
    n->attrs.erase("x_nhwc");
    n->attrs.erase("y_nhwc");
  }
  const Value* in = art.model.graph->inputs[0];
  std::vector<int64_t> dims = {1};
  for (size_t i = 1; i < in->shape.rank(); ++i) dims.push_back(in->shape[i].value);
  Tensor x(DType::f32, dims);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = std::sin(0.011f * static_cast<float>(i)) * 1.5f;
  const auto want = run_model(art.model, {{in->name, x}});
  auto exe = Executable::load(job.out_path);
  for (int threads : {1, 2}) {
    RunOptions opt;
    opt.threads = threads;
    const auto got = exe->run({{in->name, x}}, opt);
    EXPECT_EQ(got.size(), want.size());
    for (const auto& [name, w] : want) {
      const Tensor& g = got.at(name);
      EXPECT_EQ(g.numel(), w.numel()) << name;
      for (int64_t i = 0; i < w.numel() && i < g.numel(); ++i)
        if (g.data<float>()[i] != w.data<float>()[i]) {
          ADD_FAILURE() << model << " " << name << "[" << i << "] threads=" << threads << ": " << g.data<float>()[i]
                        << " vs the reference's " << w.data<float>()[i];
          break;
        }
    }
  }
  return m;
}

bool cpu_has_nhwc() { return kernels::int8::qkernels().pixels_epilogue_strip != nullptr; }

TEST(Int8NhwcZoo, ResNet18PixelMajorEqualsTheReferenceBitForBit) {
  const Marked m = expect_pixel_major_equals_reference("resnet18");
  EXPECT_EQ(m.qconvs, 20);
  // On AVX-512 VNNI every convolution but the stem (3 input channels) reads or writes
  // pixel-major: the max pool after the stem writes it for layer1 (whose residual stream starts
  // there), and the last convolution's output reaches the average pool pixel-major (through the
  // DequantizeLinear).
  const int expect = cpu_has_nhwc() ? 1 : 0;
  EXPECT_EQ(m.pixel_major, 19 * expect);
  EXPECT_EQ(m.pools, 2 * expect);
}

TEST(Int8NhwcZoo, MobileNetV2PixelMajorDepthwiseEqualsTheReferenceBitForBit) {
  const Marked m = expect_pixel_major_equals_reference("mobilenet_v2");
  EXPECT_EQ(m.qconvs, 52);
  if (!cpu_has_nhwc()) {
    EXPECT_EQ(m.pixel_major, 0);
    return;
  }
  // The inverted residual blocks from features.4 on (32 channels and more between blocks)
  // run pixel-major, their depthwise layers included (13 of 17); the first ones, with 16- and
  // 24-channel outputs, stay NCHW.
  EXPECT_EQ(m.depthwise, 13);
  EXPECT_GE(m.pixel_major, 13 * 3);
  EXPECT_EQ(m.pools, 1);
}

}  // namespace
}  // namespace kiln::compress

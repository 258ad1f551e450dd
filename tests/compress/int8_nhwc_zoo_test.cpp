// resnet18 from the zoo through kiln quantize: the artifact keeps its INT8 activations
// pixel-major between convolutions where the CPU's table allows (lower/int8_nhwc_layout.cpp),
// and its compiled run gives exactly the logits of the reference kernels on the same graph in
// NCHW (the layout attributes removed): the kernels' accumulation is exact and their epilogue
// the reference's arithmetic, so the layout may not change a single bit.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "kiln/compress/driver.h"
#include "kiln/kernels/int8.h"
#include "kiln/runtime/artifact.h"
#include "kiln/runtime/executable.h"
#include "kiln/runtime/interpreter.h"

namespace kiln::compress {
namespace {

namespace fs = std::filesystem;

TEST(Int8NhwcZoo, ResNet18PixelMajorEqualsTheReferenceBitForBit) {
  const fs::path model = fs::path(KILN_BINARY_DIR) / "zoo" / "resnet18" / "model.onnx";
  ASSERT_TRUE(fs::exists(model)) << model << " (the zoo.prepare fixture exports it)";
  const fs::path dir = fs::path(KILN_BINARY_DIR) / "compress_test" / "nhwc_zoo";
  fs::create_directories(dir);
  QuantizeJob job;
  job.model_path = model.string();
  job.out_path = (dir / "r18.kiln").string();
  job.calib_random = 2;
  job.inputs.dims["N"] = 1;
  job.cache_dir = (dir / "cache").string();
  quantize_file(job);

  LoadedArtifact art = read_artifact(job.out_path);
  int qconvs = 0, pixel_major = 0;
  int pools = 0;
  for (const auto& n : art.model.graph->nodes()) {
    if (n->op == "GlobalAveragePool") {  // reads the dequantized last convolution's output
      pools += n->attr_i("x_nhwc", 0) != 0;
      n->attrs.erase("x_nhwc");
    }
    if (n->op == "MaxPool") {  // the stem's pool, read by layer1
      pools += n->attr_i("y_nhwc", 0) != 0;
      n->attrs.erase("y_nhwc");
    }
    if (n->op != "QConv") continue;
    ++qconvs;
    const bool marked = n->attr_i("x_nhwc", 0) != 0 || n->attr_i("y_nhwc", 0) != 0;
    pixel_major += marked;
    n->attrs.erase("x_nhwc");
    n->attrs.erase("y_nhwc");
  }
  EXPECT_EQ(qconvs, 20);
  // On AVX-512 VNNI every convolution but the stem (3 input channels) reads or writes
  // pixel-major: the max pool after the stem writes it for layer1 (whose residual stream starts
  // there), and the last convolution's output reaches the average pool pixel-major (through the
  // DequantizeLinear).
  const int expect = kernels::int8::qkernels().pixels_epilogue_strip ? 1 : 0;
  EXPECT_EQ(pixel_major, 19 * expect);
  EXPECT_EQ(pools, 2 * expect);

  Tensor x(DType::f32, {1, 3, 224, 224});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = std::sin(0.011f * static_cast<float>(i)) * 1.5f;
  const auto want = run_model(art.model, {{"input", x}});
  auto exe = Executable::load(job.out_path);
  for (int threads : {1, 2}) {
    RunOptions opt;
    opt.threads = threads;
    const auto got = exe->run({{"input", x}}, opt);
    ASSERT_EQ(got.size(), want.size());
    for (const auto& [name, w] : want) {
      const Tensor& g = got.at(name);
      ASSERT_EQ(g.numel(), w.numel()) << name;
      for (int64_t i = 0; i < w.numel(); ++i)
        ASSERT_EQ(g.data<float>()[i], w.data<float>()[i]) << name << "[" << i << "] threads=" << threads;
    }
  }
}

}  // namespace
}  // namespace kiln::compress

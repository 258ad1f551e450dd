// The emitter's decisions and errors: which paths a layout gets, content-derived symbols, kernels
// fed strided (transposed) inputs falling back to the general path, can_generate() answers, and
// one-line errors naming the op. Also SHA-256 against the FIPS 180-4 examples.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <thread>

#include "codegen/codegen_test_util.h"
#include "kiln/ir/sha256.h"
#include "kiln/kernels/gemm_packed.h"
#include "kiln/ir/text.h"

namespace kiln::codegen::test {
namespace {

std::string emit_error(const Model& m) {
  try {
    emit_fused_kernel(fused_node(m));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// The node named `name` of a parsed (non-fused) graph.
const Node& node_named(const Model& m, const std::string& name) {
  for (const auto& n : m.graph->nodes())
    if (n->name == name) return *n;
  throw Error("no node " + name);
}

std::string why_not(const Node& n) {
  std::string why;
  EXPECT_FALSE(can_generate(n, &why)) << n.describe();
  return why;
}

TEST(Emit, PathsFollowTheLayout) {
  auto header = [](const std::vector<std::string>& types, const EmitOptions& o = {}) {
    Model m = fused_model(types, "    %r0 = Add(%x0, %x1)");
    std::string s = emit_fused_kernel(fused_node(m), o).source;
    return s.substr(0, s.find('\n'));
  };
  EXPECT_NE(header({"f32[N,8]", "f32[]"}).find("paths: flat, general"), std::string::npos);
  EXPECT_NE(header({"f32[N,8]", "f32[N,8]"}).find("paths: flat, general"), std::string::npos);
  EXPECT_NE(header({"f32[N,8,4,4]", "f32[8,1,1]"}).find("paths: rows from dim 2, general"), std::string::npos);
  EXPECT_NE(header({"f32[N,8,4,4]", "f32[N,8,1,1]"}).find("paths: rows from dim 2, general"), std::string::npos);
  EXPECT_NE(header({"f32[M,8]", "f32[8]"}).find("paths: rows from dim 1, general"), std::string::npos);
  // Size-1 dims do not count: [N,8,1,1] + [8,1,1] walks rows of 8 channels.
  EXPECT_NE(header({"f32[N,8,1,1]", "f32[8,1,1]"}).find("paths: rows from dim 1, general"), std::string::npos);
  EXPECT_NE(header({"f32[1,8]", "f32[8]"}).find("paths: flat, general"), std::string::npos);
  EXPECT_NE(header({"f32[N,8]", "f32[]"}, {.specialise = false}).find("paths: general"), std::string::npos);
}

TEST(Emit, SymbolsComeFromTheKernelText) {
  Model a = fused_model({"f32[N,8]"}, "    %r0 = Relu(%x0)");
  Model b = fused_model({"f32[N,8]"}, "    %r0 = Relu(%x0)");
  Model c = fused_model({"f32[N,9]"}, "    %r0 = Relu(%x0)");
  const GeneratedKernel ka = emit_fused_kernel(fused_node(a)), kb = emit_fused_kernel(fused_node(b));
  EXPECT_EQ(ka.symbol, kb.symbol);
  EXPECT_EQ(ka.source, kb.source);
  EXPECT_EQ(ka.symbol.rfind("kiln_fe_", 0), 0u);
  EXPECT_NE(ka.symbol, emit_fused_kernel(fused_node(c)).symbol);
  const GeneratedKernel named = emit_fused_kernel(fused_node(a), {.symbol = "my_relu"});
  EXPECT_EQ(named.symbol, "my_relu");
  EXPECT_NE(named.source.find("extern \"C\" void my_relu("), std::string::npos);
  EXPECT_EQ(named.source.find(ka.symbol), std::string::npos);
}

// A specialised kernel given an input whose strides are not the compiled layout (a transposed
// view, a broadcast the compiled shape did not have) must notice and take the general path.
TEST(Emit, UnexpectedStridesTakeTheGeneralPath) {
  Model m = fused_model({"f32[4,6]", "f32[6]"}, R"(
    %a = Add(%x0, %x1)
    %r0 = Exp(%a))");
  const Node& n = fused_node(m);
  const GeneratedKernel k = emit_fused_kernel(n);
  BuildOptions bo;
  bo.cache_dir = test_cache_dir();
  bo.target_isa = "scalar";
  LoadedLibrary lib(build_kernel_library({k}, bo).path);
  // x stored transposed: memory [6,4], logical [4,6] with strides (1, 4).
  Tensor stored(DType::f32, {6, 4}), logical(DType::f32, {4, 6});
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 6; ++c) {
      const float v = 0.1f * static_cast<float>(r * 6 + c) - 1.0f;
      stored.data<float>()[c * 4 + r] = v;
      logical.data<float>()[r * 6 + c] = v;
    }
  Tensor b = Tensor::from_vector<float>({6}, {0.5f, -0.25f, 1, 0, 2, -3});
  const std::vector<Tensor> ref = run_body(n, {logical, b});
  CallLayout transposed{{4, 6}, {{1, 4}, {0, 1}}};
  std::vector<Tensor> got = call_kernel(lib.kernel(k.symbol), {stored.raw(), b.raw()}, transposed, {DType::f32}, {5, 11});
  EXPECT_EQ(compare(got[0], ref[0], 1e-30, 3e-7), "");
  // b read as a column [4,1] broadcast along the rows instead of the compiled row vector.
  Tensor col = Tensor::from_vector<float>({4}, {1, 2, 3, 4});
  Tensor col_full(DType::f32, {4, 6});
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 6; ++c) col_full.data<float>()[r * 6 + c] = col.data<float>()[r];
  Model m2 = fused_model({"f32[4,6]", "f32[4,6]"}, R"(
    %a = Add(%x0, %x1)
    %r0 = Exp(%a))");
  const std::vector<Tensor> ref2 = run_body(fused_node(m2), {logical, col_full});
  CallLayout column{{4, 6}, {{6, 1}, {1, 0}}};
  got = call_kernel(lib.kernel(k.symbol), {logical.raw(), col.raw()}, column, {DType::f32}, {7});
  EXPECT_EQ(compare(got[0], ref2[0], 1e-30, 3e-7), "");
}

// The runtime calls one kernel from several threads on disjoint ranges at once.
TEST(Emit, ConcurrentCallsOnDisjointRangesMatchOneCall) {
  Model m = fused_model({"f32[N,12,5,7]", "f32[12,1,1]"}, R"(
    %a = Mul(%x0, %x1)
    %s = Sigmoid(%a)
    %r0 = Mul(%a, %s))");
  const GeneratedKernel k = emit_fused_kernel(fused_node(m));
  BuildOptions bo;
  bo.cache_dir = test_cache_dir();
  bo.target_isa = "scalar";
  LoadedLibrary lib(build_kernel_library({k}, bo).path);
  Tensor x(DType::f32, {3, 12, 5, 7}), s(DType::f32, {12, 1, 1});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>(i % 23) * 0.37f - 4;
  for (int64_t i = 0; i < s.numel(); ++i) s.data<float>()[i] = static_cast<float>(i) * 0.25f - 1;
  const std::vector<Tensor> one = call_kernel(lib.kernel(k.symbol), {x, s}, {DType::f32});
  Tensor y(DType::f32, {3, 12, 5, 7});
  const CallLayout l = broadcast_layout({x.dims(), s.dims()});
  const void* ins[2] = {x.raw(), s.raw()};
  void* outs[1] = {y.raw()};
  const int64_t* strides[2] = {l.strides[0].data(), l.strides[1].data()};
  const kiln_fused_args args{ins, outs, l.out_dims.data(), strides, 4};
  const int64_t cuts[] = {0, 333, 334, 901, x.numel()};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) threads.emplace_back([&, t] { lib.kernel(k.symbol)(&args, cuts[t], cuts[t + 1]); });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(compare(y, one[0], 0, 0), "");
}

// [N, C, H, W] -> [N][C/8][H][W][8] (lower/blocked_layout.cpp's channel blocks).
Tensor to_blocks(const Tensor& t) {
  const int64_t N = t.dim(0), C = t.dim(1), P = t.dim(2) * t.dim(3);
  Tensor b(DType::f32, t.dims());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t p = 0; p < P; ++p)
        b.data<float>()[((n * (C / 8) + c / 8) * P + p) * 8 + c % 8] = t.data<float>()[(n * C + c) * P + p];
  return b;
}

// A node whose operands are channel-blocked (y_blocked) runs one loop over blocks: the full-size
// input and the output in blocks, the per-channel scale [N, C, 1, 1] and bias [C, 1, 1] and a
// baked single value per lane. Against the body run in NCHW by the interpreter, then blocked
// (within 3e-7 relative: the generated sigmoid may round differently), for ranges that start and end inside blocks and block rows (as threads split them). An input
// broadcast over channels but not pixels cannot be read in blocks: a one-line error.
TEST(Emit, ChannelBlockedOperandsRunInBlocks) {
  Model m = fused_model({"f32[N,16,3,5]", "f32[N,16,1,1]", "f32[16,1,1]"}, R"(
    %k = init f32[] dense<0.5>
    %a = Mul(%x0, %x1)
    %s = Sigmoid(%a)
    %b = Add(%s, %x2)
    %r0 = Mul(%b, %k))");
  Node& n = const_cast<Node&>(fused_node(m));
  n.attrs["y_blocked"] = int64_t{1};
  const GeneratedKernel k = emit_fused_kernel(n);
  EXPECT_NE(k.source.find("paths: channel-blocked"), std::string::npos);
  BuildOptions bo;
  bo.cache_dir = test_cache_dir();
  bo.target_isa = std::string(kernels::gemm_isa());
  LoadedLibrary lib(build_kernel_library({k}, bo).path);
  Tensor x(DType::f32, {2, 16, 3, 5}), s(DType::f32, {2, 16, 1, 1}), bias(DType::f32, {16, 1, 1});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = std::sin(0.7f * static_cast<float>(i)) * 3;
  for (int64_t i = 0; i < s.numel(); ++i) s.data<float>()[i] = 0.1f * static_cast<float>(i) - 1;
  for (int64_t i = 0; i < bias.numel(); ++i) bias.data<float>()[i] = 0.25f * static_cast<float>(i);
  const Tensor want = to_blocks(run_body(n, {x, s, bias})[0]);
  const Tensor xb = to_blocks(x);
  const CallLayout l = broadcast_layout({x.dims(), s.dims(), bias.dims()});
  for (const std::vector<int64_t>& cuts : std::vector<std::vector<int64_t>>{{}, {3, 117, 120, 245, 301}, {121}}) {
    const std::vector<Tensor> got = call_kernel(lib.kernel(k.symbol), {xb.raw(), s.raw(), bias.raw()}, l, {DType::f32}, cuts);
    EXPECT_EQ(compare(got[0], want, 1e-30, 3e-7), "") << "cuts " << cuts.size();
  }
  Model bad = fused_model({"f32[N,16,3,5]", "f32[1,1,3,5]"}, "    %r0 = Mul(%x0, %x1)");
  Node& bn = const_cast<Node&>(fused_node(bad));
  bn.attrs["y_blocked"] = int64_t{1};
  EXPECT_NE(emit_error(bad).find("broadcasts over the pixels but not the channels"), std::string::npos) << emit_error(bad);
}

TEST(Emit, CanGenerateAnswersForOuterNodes) {
  const Model m = parse_model(R"(
    graph g(%f: f32[4], %i: i32[4], %j: i32[4], %u: ?) -> (%a, %b, %c, %d, %e, %g, %h, %k, %l, %z) {
      %seven = init i32[] dense<7>
      %zero = init i32[2] dense<3, 0>
      %big = init f32[5000] dense<1.0>
      %a = Div(%i, %j) @idiv
      %b = Div(%i, %seven) @idiv_const
      %c = Div(%i, %zero) @idiv_zero
      %d = Softmax(%f) @softmax
      %e = Exp(%i) @exp_int
      %g = Mod(%f, %f) @fmod0
      %h = Clip(%f, %f, _) @clip_var
      %k = Relu(%u) @untyped
      %l = Constant() {value=f32[5000] dense<1.0>} @big_constant
      %z = com.microsoft::FastGelu(%f) @other_domain
    })");
  EXPECT_TRUE(can_generate(node_named(m, "idiv_const")));
  EXPECT_NE(why_not(node_named(m, "idiv")).find("constant divisor"), std::string::npos);
  EXPECT_NE(why_not(node_named(m, "idiv_zero")).find("division by zero"), std::string::npos);
  EXPECT_NE(why_not(node_named(m, "softmax")).find("op Softmax is not an elementwise op"), std::string::npos);
  EXPECT_NE(why_not(node_named(m, "exp_int")).find("takes float inputs, got i32"), std::string::npos);
  EXPECT_NE(why_not(node_named(m, "fmod0")).find("fmod must be 1"), std::string::npos);
  EXPECT_NE(why_not(node_named(m, "clip_var")).find("must be a constant"), std::string::npos);
  EXPECT_NE(why_not(node_named(m, "untyped")).find("dtype of input 0 is unknown"), std::string::npos);
  EXPECT_NE(why_not(node_named(m, "big_constant")).find("larger than 4096"), std::string::npos);
  EXPECT_NE(why_not(node_named(m, "other_domain")).find("com.microsoft::FastGelu"), std::string::npos);
  std::string why = why_not(node_named(m, "softmax"));
  EXPECT_NE(why.find("softmax"), std::string::npos) << why;  // names the node too
}

TEST(Emit, ErrorsNameTheNodeAndTheReason) {
  EXPECT_NE(emit_error(fused_model({"f32[4]"}, "    %r0 = Softmax(%x0)")).find("op Softmax is not an elementwise op"),
            std::string::npos);
  EXPECT_NE(emit_error(fused_model({"i64[4]"}, "    %r0 = Tanh(%x0)")).find("takes float inputs, got i64"),
            std::string::npos);
  const std::string big = emit_error(fused_model({"f32[5000]"}, R"(
    %c = init f32[5000] dense<2.0>
    %r0 = Mul(%x0, %c))"));
  EXPECT_NE(big.find("constant %c has 5000 elements"), std::string::npos) << big;
  const std::string shape = emit_error(fused_model({"f32[4]", "f32[5]"}, "    %r0 = Add(%x0, %x1)"));
  EXPECT_NE(shape.find("does not broadcast"), std::string::npos) << shape;

  const Model outer_read = parse_model(R"(
    graph main(%a: f32[4], %o: f32[4]) -> (%y) {
      %y = kiln::FusedElementwise(%a) {body=graph body(%x: f32[4]) -> (%r) {
        %r = Add(%x, %o)
      }}
    })");
  EXPECT_NE(emit_error(outer_read).find("reads %o, which is not a body input"), std::string::npos);
  const Model no_body = parse_model("graph main(%a: f32[4]) -> (%y) { %y = kiln::FusedElementwise(%a) }");
  EXPECT_NE(emit_error(no_body).find("needs a graph attribute `body`"), std::string::npos);
  const Model wrong_dtype = parse_model(R"(
    graph main(%a: f32[4]) -> (%y) {
      %y = kiln::FusedElementwise(%a) {body=graph body(%x: f32[4]) -> (%r) {
        %r = Relu(%x)
      }} : i32[4]
    })");
  EXPECT_NE(emit_error(wrong_dtype).find("output 0 is declared i32 but the body computes f32"), std::string::npos);
  const Model not_fused = parse_model("graph main(%a: f32[4]) -> (%y) { %y = Relu(%a) }");
  try {
    emit_fused_kernel(*not_fused.graph->nodes()[0]);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("takes kiln.FusedElementwise nodes"), std::string::npos);
  }
}

TEST(Emit, GraphKernelsAreNamedOnTheirNodesAndShared) {
  Model m = parse_model(R"(
    graph main(%a: f32[N,8], %b: f32[N,8], %c: bool[]) -> (%y1, %y2, %y3, %z) {
      %y1 = kiln::FusedElementwise(%a) {body=graph b1(%x: f32[N,8]) -> (%r) {
        %r = Relu(%x)
      }}
      %y2 = kiln::FusedElementwise(%b) {body=graph b2(%x: f32[N,8]) -> (%r) {
        %r = Relu(%x)
      }}
      %y3 = kiln::FusedElementwise(%a, %b) {body=graph b3(%x: f32[N,8], %w: f32[N,8]) -> (%r) {
        %r = Add(%x, %w)
      }}
      %z = If(%c) {
        then_branch=graph t() -> (%t) {
          %t = kiln::FusedElementwise(%a) {body=graph b4(%x: f32[N,8]) -> (%r) {
            %r = Sigmoid(%x)
          }}
        },
        else_branch=graph e() -> (%a) {
        }
      }
    })");
  const std::vector<GeneratedKernel> ks = emit_graph_kernels(*m.graph);
  ASSERT_EQ(ks.size(), 3u);  // the two Relu bodies are one kernel
  const auto& nodes = m.graph->nodes();
  EXPECT_EQ(nodes[0]->attr_s("kernel", ""), ks[0].symbol);
  EXPECT_EQ(nodes[1]->attr_s("kernel", ""), ks[0].symbol);
  EXPECT_EQ(nodes[2]->attr_s("kernel", ""), ks[1].symbol);
  const Graph& then_branch = *nodes[3]->find_attr("then_branch")->g();
  EXPECT_EQ(then_branch.nodes()[0]->attr_s("kernel", ""), ks[2].symbol);
}

TEST(Sha256, FipsExamples) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // 56 bytes: the padding needs a second block.
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

}  // namespace
}  // namespace kiln::codegen::test

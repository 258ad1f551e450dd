// The fast LSTM kernel (fast_lstm.cpp) against the reference kernel through the interpreter:
// forward, reverse and bidirectional, with and without biases and initial states, any subset of
// the outputs, several steps and batch rows; a step runs it (profile), nothing is allocated per
// run, and forms it does not take (another activation) fall back to the reference kernel.
#include "alloc_counter.h"
#include "kiln/runtime/executable.h"
#include "runtime_test_util.h"

namespace kiln {
namespace {

using testing::ScratchDir;

struct LstmCase {
  std::string direction = "forward";
  int64_t seq = 3, batch = 2, input = 5, hidden = 4;
  bool bias = true, initial = true;
  std::vector<std::string> outputs = {"y", "yh", "yc"};  // "" leaves one out
  std::vector<std::string> activations;                   // empty: the defaults
};

Tensor pattern(std::vector<int64_t> dims, int salt, float scale) {
  Tensor t(DType::f32, dims);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data<float>()[i] = scale * (static_cast<float>((i * 37 + salt * 11) % 23) / 11.0f - 1.0f);
  return t;
}

Model lstm_model(const LstmCase& c) {
  Model m;
  m.opsets[""] = 14;
  Graph& g = *m.graph;
  const int64_t dirs = c.direction == "bidirectional" ? 2 : 1, G = 4 * c.hidden;
  std::vector<Value*> ins = {g.add_input("x", DType::f32, Shape{c.seq, c.batch, c.input}),
                             g.add_initializer("w", pattern({dirs, G, c.input}, 1, 0.5f)),
                             g.add_initializer("r", pattern({dirs, G, c.hidden}, 2, 0.5f)),
                             c.bias ? g.add_initializer("b", pattern({dirs, 2 * G}, 3, 0.3f)) : nullptr,
                             nullptr};
  if (c.initial) {
    ins.push_back(g.add_input("h0", DType::f32, Shape{dirs, c.batch, c.hidden}));
    ins.push_back(g.add_input("c0", DType::f32, Shape{dirs, c.batch, c.hidden}));
  }
  std::map<std::string, Attribute> attrs = {{"hidden_size", c.hidden}, {"direction", c.direction}};
  if (!c.activations.empty()) attrs["activations"] = c.activations;
  Node* n = g.add_node("LSTM", ins, c.outputs, attrs, "lstm");
  for (Value* o : n->outputs)
    if (o) g.outputs.push_back(o);
  ops::verify_model(m);
  ops::infer_shapes(m);
  return m;
}

std::map<std::string, Tensor> lstm_inputs(const LstmCase& c) {
  const int64_t dirs = c.direction == "bidirectional" ? 2 : 1;
  std::map<std::string, Tensor> in = {{"x", pattern({c.seq, c.batch, c.input}, 4, 1.0f)}};
  if (c.initial) {
    in["h0"] = pattern({dirs, c.batch, c.hidden}, 5, 0.8f);
    in["c0"] = pattern({dirs, c.batch, c.hidden}, 6, 1.5f);
  }
  return in;
}

// Runs the case compiled and interpreted; returns whether the compiled run took the fast kernel.
bool expect_matches_reference(const LstmCase& c) {
  ScratchDir dir("fast_lstm");
  Model m = lstm_model(c);
  write_artifact(dir.file("m.kiln"), testing::test_manifest(), m);
  auto exe = Executable::load(dir.file("m.kiln"));
  const auto in = lstm_inputs(c);
  const auto want = run_model(m, in);
  const auto got = exe->run(in);
  EXPECT_EQ(got.size(), want.size());
  for (const auto& [name, t] : want) {
    const Tensor& k = got.at(name);
    EXPECT_EQ(k.dims(), t.dims()) << name;
    for (int64_t i = 0; i < t.numel(); ++i)
      EXPECT_NEAR(k.data<float>()[i], t.data<float>()[i], 2e-6) << c.direction << " " << name << " at " << i;
  }
  std::vector<Tensor> ordered, outs;
  for (const Value* v : m.graph->inputs) ordered.push_back(in.at(v->name));
  bool fast = false;
  for (const StepTiming& st : exe->profile_run(ordered, outs))
    if (st.op == "LSTM") fast = st.fast;
  if (fast) {  // a steady run allocates nothing
    exe->run(ordered, outs);
    const long before = testing::allocation_count();
    for (int i = 0; i < 10; ++i) exe->run(ordered, outs);
    EXPECT_EQ(testing::allocation_count() - before, 0) << c.direction;
  }
  return fast;
}

TEST(FastLstm, ForwardWithBiasesAndInitialStates) { EXPECT_TRUE(expect_matches_reference({})); }

TEST(FastLstm, ReverseWithoutBiasOrStatesAndWithoutY) {
  LstmCase c;
  c.direction = "reverse";
  c.bias = false;
  c.initial = false;
  c.outputs = {"", "yh", "yc"};
  EXPECT_TRUE(expect_matches_reference(c));
}

TEST(FastLstm, BidirectionalOverSeveralSteps) {
  LstmCase c;
  c.direction = "bidirectional";
  c.seq = 4, c.batch = 3, c.input = 3, c.hidden = 8;
  EXPECT_TRUE(expect_matches_reference(c));
}

TEST(FastLstm, SileroSizedStep) {  // one step, 128 inputs and 128 hidden units, as Silero VAD's decoder
  LstmCase c;
  c.seq = 1, c.batch = 1, c.input = 128, c.hidden = 128;
  EXPECT_TRUE(expect_matches_reference(c));
}

TEST(FastLstm, OtherActivationsTakeTheReferenceKernel) {
  LstmCase c;
  c.activations = {"Sigmoid", "Relu", "Tanh"};
  EXPECT_FALSE(expect_matches_reference(c));
}

}  // namespace
}  // namespace kiln

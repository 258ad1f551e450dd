// Calibration batches (a directory of .npy files or seeded random data) and the observed run.
#include "kiln/compress/calibrate.h"

#include <algorithm>
#include <filesystem>
#include <random>

#include "kiln/ir/npy.h"
#include "kiln/kernels/parallel.h"
#include "kiln/runtime/interpreter.h"

namespace kiln::compress {
namespace fs = std::filesystem;

BatchSource BatchSource::from_dir(const Model& m, const std::string& dir) {
  KILN_CHECK(fs::is_directory(dir), "", dir, ": not a directory");
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ".npy" && e.path().filename() != "labels.npy")
      files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  KILN_CHECK(!files.empty(), "", dir, ": no .npy files");
  BatchSource s;
  const auto& ins = m.graph->inputs;
  if (ins.size() == 1) {
    for (const auto& f : files) s.batches_.push_back({{ins[0]->name, f}});
  } else if (std::all_of(ins.begin(), ins.end(), [&](const Value* in) {
               return in->is_constant() || fs::exists(fs::path(dir) / (in->name + ".npy"));
             })) {
    // One batch as <input>.npy per input (a zoo model's inputs/ folder).
    std::map<std::string, std::string> batch;
    for (const Value* in : ins)
      if (fs::exists(fs::path(dir) / (in->name + ".npy"))) batch[in->name] = (fs::path(dir) / (in->name + ".npy")).string();
    s.batches_.push_back(batch);
  } else {
    // <input>.<k>.npy
    std::map<std::string, std::map<std::string, std::string>> by_k;
    for (const auto& f : files) {
      std::string stem = fs::path(f).stem().string();
      size_t dot = stem.rfind('.');
      KILN_CHECK(dot != std::string::npos, "", f, ": with several model inputs name files <input>.<k>.npy");
      by_k[stem.substr(dot + 1)][stem.substr(0, dot)] = f;
    }
    for (auto& [k, batch] : by_k) {
      for (const Value* in : ins)
        KILN_CHECK(batch.count(in->name) || in->is_constant(), "", dir, ": batch ", k, " has no ", in->name,
                   ".", k, ".npy");
      s.batches_.push_back(batch);
    }
  }
  s.what_ = std::to_string(s.batches_.size()) + " batches from " + dir;
  return s;
}

BatchSource BatchSource::random(const Model& m, int count, uint64_t seed, const DimBindings& dims, int64_t int_high) {
  KILN_CHECK(count > 0, "--calib-random needs a positive count");
  BatchSource s;
  s.batches_.resize(static_cast<size_t>(count));
  std::vector<std::pair<std::string, std::pair<DType, std::vector<int64_t>>>> specs;
  for (const Value* in : m.graph->inputs) {
    if (in->is_constant()) continue;
    std::vector<int64_t> d;
    KILN_CHECK(in->shape.rank_known, "input ", in->name, " has an unknown rank: give calibration data with --calib");
    for (const Dim& dim : in->shape.dims) {
      if (dim.is_static()) d.push_back(dim.value);
      else if (auto it = dims.find(dim.symbol); it != dims.end()) d.push_back(it->second);
      else d.push_back(1);
    }
    specs.push_back({in->name, {in->dtype, d}});
  }
  s.make_ = [specs, seed, int_high](size_t i) {
    std::mt19937_64 rng(seed + 7919 * i);
    Inputs out;
    for (const auto& [name, spec] : specs) {
      Tensor t(spec.first, spec.second);
      if (spec.first == DType::f32) {
        std::normal_distribution<float> nd(0.f, 1.f);
        for (int64_t e = 0; e < t.numel(); ++e) t.data<float>()[e] = nd(rng);
      } else if (spec.first == DType::i64 || spec.first == DType::i32) {
        std::uniform_int_distribution<int64_t> ud(0, int_high - 1);
        for (int64_t e = 0; e < t.numel(); ++e) {
          if (spec.first == DType::i64) t.data<int64_t>()[e] = ud(rng);
          else t.data<int32_t>()[e] = static_cast<int32_t>(ud(rng));
        }
      } else {
        throw Error("--calib-random: input " + name + " is " + std::string(dtype_name(spec.first)) +
                    "; random data is made for f32, i32 and i64 inputs only");
      }
      out[name] = std::move(t);
    }
    return out;
  };
  s.what_ = std::to_string(count) + " random batches (seed " + std::to_string(seed) + ")";
  return s;
}

Inputs BatchSource::batch(size_t i) const {
  KILN_CHECK(i < size(), "calibration batch ", i, " of ", size());
  if (make_) return make_(i);
  Inputs out;
  for (const auto& [name, file] : batches_[i]) out[name] = read_npy(file);
  return out;
}

std::map<std::string, Tensor> run_with_taps(Model& m, const Inputs& inputs, const std::vector<std::string>& tensors) {
  Graph& g = *m.graph;
  const std::vector<Value*> saved = g.outputs;
  for (const auto& name : tensors) {
    Value* v = g.find_local(name);
    KILN_CHECK(v != nullptr, "no tensor named ", name, " in the model");
    if (std::find(g.outputs.begin(), g.outputs.end(), v) == g.outputs.end()) g.outputs.push_back(v);
  }
  std::map<std::string, Tensor> all;
  try {
    all = run_model(m, inputs);
  } catch (...) {
    g.outputs = saved;
    throw;
  }
  g.outputs = saved;
  std::map<std::string, Tensor> out;
  for (const auto& name : tensors) out[name] = all.at(name);
  return out;
}

std::map<std::string, Observer> calibrate(Model& m, const std::vector<std::string>& tensors, const BatchSource& data,
                                          const std::map<std::string, int>& channel_axis,
                                          const std::function<void(size_t, size_t)>& progress) {
  std::map<std::string, Observer> obs;
  for (const auto& t : tensors) obs[t];
  for (const auto& [t, axis] : channel_axis) obs[t].track_channels(axis);
  for (size_t i = 0; i < data.size(); ++i) {
    std::map<std::string, Tensor> taps = run_with_taps(m, data.batch(i), tensors);
    std::vector<std::pair<const Tensor*, Observer*>> work;
    for (auto& [name, t] : taps) {
      KILN_CHECK(t.dtype() == DType::f32, "calibration: tensor ", name, " is ", dtype_name(t.dtype()), ", not f32");
      work.emplace_back(&t, &obs[name]);
    }
    // Each observer sees only its own tensor: they fill their histograms side by side.
    kernels::parallel_for(static_cast<int64_t>(work.size()), kernels::default_threads(), [&](int64_t b, int64_t e) {
      for (int64_t w = b; w < e; ++w) work[static_cast<size_t>(w)].second->observe(*work[static_cast<size_t>(w)].first);
    });
    if (progress) progress(i + 1, data.size());
  }
  return obs;
}

}  // namespace kiln::compress

// The committed digits CNN (models/digits_cnn.onnx) on its held-out split: kiln's predicted
// classes must agree with ONNX Runtime's on >= 99% of the images and reach the accuracy
// PyTorch measured at training time (models/digits_cnn.json, written by train_digits.py).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>

#include "kiln/ir/npy.h"
#include "zoo/zoo_parity.h"

namespace kiln::zoo {
namespace {
namespace fs = std::filesystem;

// An integer field of the flat JSON train_digits.py writes ("test_correct": 359).
int64_t json_int(const fs::path& file, const std::string& key) {
  std::ifstream in(file);
  KILN_CHECK(in.good(), "zoo: cannot read ", file.string());
  std::stringstream ss;
  ss << in.rdbuf();
  std::smatch m;
  std::string text = ss.str();
  KILN_CHECK(std::regex_search(text, m, std::regex("\"" + key + "\"\\s*:\\s*(\\d+)")), "zoo: no integer '", key,
             "' in ", file.string());
  return std::stoll(m[1].str());
}

std::vector<int64_t> argmax_rows(const Tensor& logits) {
  KILN_CHECK(logits.rank() == 2, "zoo: logits of rank ", logits.rank(), ", want [n, classes]");
  const int64_t n = logits.dim(0), c = logits.dim(1);
  std::vector<int64_t> best(n, 0);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 1; j < c; ++j) {
      if (logits.as_double(i * c + j) > logits.as_double(i * c + best[i])) best[i] = j;
    }
  }
  return best;
}

TEST(ZooDigits, KilnAgreesWithOrtAndReachesTrainingAccuracy) {
  const fs::path models = fs::path(KILN_SOURCE_DIR) / "models";
  const fs::path dir = model_dir("digits_cnn");
  ParityRun run;
  try {
    run = run_parity(dir);
  } catch (const std::exception& e) {
    FAIL() << e.what();
  }
  ASSERT_EQ(run.kiln_outputs.count("logits"), 1u);
  const Tensor labels = read_npy((models / "digits_test_labels.npy").string());
  const Tensor ort_logits = read_npy((dir / "ort" / "logits.npy").string());
  const std::vector<int64_t> kiln_pred = argmax_rows(run.kiln_outputs.at("logits"));
  const std::vector<int64_t> ort_pred = argmax_rows(ort_logits);
  const int64_t n = labels.numel();
  ASSERT_EQ(static_cast<int64_t>(kiln_pred.size()), n);
  ASSERT_EQ(static_cast<int64_t>(ort_pred.size()), n);
  ASSERT_EQ(n, json_int(models / "digits_cnn.json", "n_test"));

  int64_t agree = 0, correct = 0, ort_correct = 0;
  for (int64_t i = 0; i < n; ++i) {
    agree += kiln_pred[i] == ort_pred[i];
    correct += kiln_pred[i] == labels.as_int64(i);
    ort_correct += ort_pred[i] == labels.as_int64(i);
  }
  const int64_t trained_correct = json_int(models / "digits_cnn.json", "test_correct");
  std::printf("[zoo] digits_cnn: kiln %lld/%lld correct, ORT %lld, at training %lld; kiln agrees with ORT on %lld\n",
              static_cast<long long>(correct), static_cast<long long>(n), static_cast<long long>(ort_correct),
              static_cast<long long>(trained_correct), static_cast<long long>(agree));
  EXPECT_GE(agree * 100, n * 99) << "kiln and ORT disagree on " << n - agree << " of " << n << " images";
  // The smallest top-1/top-2 logit margin on this split is 0.5, far above fp32 noise, so kiln
  // must get exactly as many right as PyTorch did: no slack.
  EXPECT_GE(correct, trained_correct) << "kiln: " << correct << "/" << n << " correct, training recorded "
                                      << trained_correct;
}

}  // namespace
}  // namespace kiln::zoo

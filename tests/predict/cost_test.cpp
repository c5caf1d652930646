// Money and tokens (cluster.cost.gpu_hour, workload.tokens): the cost of a step, of a million
// tokens and of the job, checked by hand; the job's steps of a parallel layout's batch; bad values
// are errors naming the key.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "stepcast/error.hpp"
#include "stepcast/predict/predict.hpp"
#include "stepcast/scenario/scenario.hpp"

namespace stepcast::predict {
namespace {
namespace cost_test {  // this file's own names: test files are compiled several to a unit

// A decoder of 4 blocks with sequences of 64 tokens, 16 sequences a step, on 8 GPUs.
std::string decoder(const std::string& extra = "") {
  return "name: tiny\n"
         "workload:\n"
         "  transformer: {layers: 4, hidden: 256, ffn_hidden: 1024, heads: 4, vocab: 1000}\n"
         "  seq_len: 64\n"
         "  precision: bf16\n"
         "  compute_efficiency: 0.4\n"
         "  global_batch: 16\n"
         "cluster:\n"
         "  workers: 8\n"
         "  workers_per_node: 4\n"
         "  nics_per_node: 4\n"
         "  nic_bandwidth: 100Gbps\n"
         "  intra_node: {bandwidth: 300GB/s, latency: 2us}\n"
         "  gpu_memory: 80GB\n"
         "  gpu: {peak_flops: 312TFLOPS, memory_bandwidth: 2TB/s}\n"
         "training:\n"
         "  scheme: allreduce\n"
         "  parallel: {tensor: 2, pipeline: 2}\n"
         "steps: {warmup: 1, measure: 1}\n" +
         extra;
}

std::string error_key(const std::string& text, const std::vector<std::string>& overrides) {
  try {
    (void)scenario::parse_scenario(text, "tiny.yaml", overrides);
  } catch (const Error& e) {
    return e.where().key;
  }
  return "(no error)";
}

TEST(Cost, StepMillionTokensAndJobByHand) {
  Result r;
  r.workers = 1024;
  r.step_time = 3.6;
  // A step of 1024 sequences of 4096 tokens: 4,194,304 tokens in 3.6 s.
  r.tokens.tokens_per_s = 1024.0 * 4096 / 3.6;
  r.job.time = 86400;  // a day
  Options options;
  options.cost = {2.5, "USD"};
  account_cost(r, options);
  // 1024 GPUs x 2.5 per GPU-hour x 3.6 s / 3600 s an hour = 2.56 per step.
  EXPECT_NEAR(r.cost.per_step, 2.56, 1e-12);
  // 2.56 per step / 4.194304 million tokens per step = 0.6103515625 per million tokens.
  EXPECT_NEAR(r.cost.per_million_tokens, 0.6103515625, 1e-12);
  // 1024 GPUs x 2.5 per GPU-hour x 24 h = 61,440 for the day.
  EXPECT_NEAR(r.cost.job, 61440, 1e-8);
  EXPECT_EQ(r.cost.currency, "USD");
  EXPECT_EQ(r.cost.gpu_hour, 2.5);

  Options free;
  account_cost(r, free);
  EXPECT_EQ(r.cost, Cost{});
}

TEST(Cost, TokensMakeTheJobInStepsOfTheLayoutsBatch) {
  // 10 steps of 16 sequences of 64 tokens (10,240 tokens) and one token more: 11 steps.
  const scenario::Scenario s = scenario::parse_scenario(
      decoder(), "tiny.yaml", {"workload.tokens=10241", "cluster.cost.gpu_hour=2.5 USD"});
  EXPECT_EQ(s.options.job.tokens, 10241);
  EXPECT_EQ(s.options.cost.gpu_hour, 2.5);
  EXPECT_EQ(s.options.cost.currency, "USD");
  for (Predictor predictor : {Predictor::Coarse, Predictor::Analytic}) {
    Options options = s.options;
    options.predictor = predictor;
    const Result r = predict(scenario::build_workload(s), s.cluster, s.scheme, options);
    SCOPED_TRACE(to_string(predictor));
    EXPECT_EQ(r.job.tokens, 10241);
    EXPECT_DOUBLE_EQ(r.job.samples, 10241.0 / 64);
    EXPECT_EQ(r.job.steps, 11);
    EXPECT_DOUBLE_EQ(r.job.time, 11 * r.step_time);
    // 8 GPUs x 2.5 per GPU-hour: 20 per hour, 1/180 per second.
    EXPECT_DOUBLE_EQ(r.cost.per_step, 8 * 2.5 * r.step_time / 3600);
    EXPECT_DOUBLE_EQ(r.cost.job, 8 * 2.5 * r.job.time / 3600);
    // A step trains 16 x 64 = 1024 tokens.
    EXPECT_NEAR(r.cost.per_million_tokens, r.cost.per_step / 1024 * 1e6, 1e-9 * r.cost.per_million_tokens);
  }
}

TEST(Cost, BadValuesAreErrorsNamingTheKey) {
  EXPECT_EQ(error_key(decoder(), {"cluster.cost.gpu_hour=-1"}), "cluster.cost.gpu_hour");
  EXPECT_EQ(error_key(decoder(), {"cluster.cost.gpu_hour=2.5 US$"}), "cluster.cost.gpu_hour");
  EXPECT_EQ(error_key(decoder(), {"cluster.cost.gpu_hour=USD"}), "cluster.cost.gpu_hour");
  EXPECT_EQ(error_key(decoder(), {"workload.tokens=-5"}), "workload.tokens");
  EXPECT_EQ(error_key(decoder(), {"workload.tokens=1e9", "job.samples=100"}), "workload.tokens");
  // A CNN has no tokens: the job is given in samples.
  const std::string cnn = std::string(STEPCAST_SOURCE_DIR) + "/examples/resnet50-ps.yaml";
  try {
    (void)scenario::load_scenario(cnn, {"workload.tokens=1e9"});
    ADD_FAILURE() << "tokens accepted for a CNN";
  } catch (const Error& e) {
    EXPECT_EQ(e.where().key, "workload.tokens");
    EXPECT_NE(std::string(e.what()).find("not a language model"), std::string::npos) << e.what();
  }
  EXPECT_EQ(error_key(decoder(), {"cluster.cost.gpu_hour=0.5 eur"}), "(no error)");
}

}  // namespace cost_test
}  // namespace
}  // namespace stepcast::predict

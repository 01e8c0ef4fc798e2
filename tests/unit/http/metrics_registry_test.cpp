// observe::Registry renders valid Prometheus text with the right values.
#include "observe/metrics.hpp"

#include <gtest/gtest.h>

#include <random>
#include <thread>

namespace wo::observe {
namespace {

TEST(MetricsRegistry, CountersGaugesAndComputedGaugesRender) {
  Registry r;
  r.counter("jobs_total", "Jobs", {{"outcome", "ok"}}).inc();
  r.counter("jobs_total", "Jobs", {{"outcome", "ok"}}).inc(2);
  r.counter("jobs_total", "Jobs", {{"outcome", "bad"}}).inc();
  r.gauge("temp", "Temperature").set(-3.25);
  r.gauge_fn("answer", "Computed", {}, [] { return 42.0; });
  std::string text = r.render();
  EXPECT_NE(text.find("# HELP jobs_total Jobs\n# TYPE jobs_total counter\n"), std::string::npos) << text;
  EXPECT_NE(text.find("jobs_total{outcome=\"ok\"} 3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("jobs_total{outcome=\"bad\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("temp -3.25\n"), std::string::npos) << text;
  EXPECT_NE(text.find("# TYPE answer gauge\nanswer 42\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("# TYPE jobs_total", text.find("# TYPE jobs_total") + 1), std::string::npos)
      << "one TYPE line per family";
}

TEST(MetricsRegistry, HistogramBucketsAreCumulativeWithSumAndCount) {
  Registry r;
  std::vector<double> bounds = {1, 10, 100};
  Histogram &h = r.histogram("lat_ms", "Latency", bounds, {{"model", "m"}});
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<double> dist(0, 200);
  std::vector<double> values(500);
  for (auto &v : values) {
    v = dist(rng);
    h.observe(v);
  }
  std::vector<uint64_t> cum;
  double sum = 0;
  uint64_t count = 0;
  h.snapshot(cum, sum, count);
  ASSERT_EQ(cum.size(), 4u);
  for (size_t b = 0; b < bounds.size(); ++b) {
    uint64_t expected = 0;
    double expected_sum = 0;
    for (double v : values)
      expected += v <= bounds[b];
    for (double v : values)
      expected_sum += v;
    EXPECT_EQ(cum[b], expected) << "le=" << bounds[b];
    EXPECT_NEAR(sum, expected_sum, 1e-6 * expected_sum);
  }
  EXPECT_EQ(cum[3], 500u);
  EXPECT_EQ(count, 500u);
  std::string text = r.render();
  EXPECT_NE(text.find("lat_ms_bucket{model=\"m\",le=\"+Inf\"} 500\n"), std::string::npos) << text;
  EXPECT_NE(text.find("lat_ms_count{model=\"m\"} 500\n"), std::string::npos) << text;
  EXPECT_NE(text.find("lat_ms_bucket{model=\"m\",le=\"10\"} " + std::to_string(cum[1]) + "\n"),
            std::string::npos);
}

TEST(MetricsRegistry, LabelValuesAreEscaped) {
  Registry r;
  r.counter("c", "h", {{"model", "a\"b\\c\nd"}}).inc();
  EXPECT_NE(r.render().find(R"(c{model="a\"b\\c\nd"} 1)"), std::string::npos) << r.render();
}

TEST(MetricsRegistry, RejectsBadNamesTypeClashesAndNegativeIncrements) {
  Registry r;
  EXPECT_THROW(r.counter("1bad", "h"), std::invalid_argument);
  EXPECT_THROW(r.counter("ok", "h", {{"bad-label", "v"}}), std::invalid_argument);
  EXPECT_THROW(r.counter("ok", "h", {{"le", "v"}}), std::invalid_argument);
  r.counter("x", "h");
  EXPECT_THROW(r.gauge("x", "h"), std::invalid_argument);
  EXPECT_THROW(r.counter("x", "h").inc(-1), std::invalid_argument);
  EXPECT_THROW(Histogram({2, 1}), std::invalid_argument);
}

TEST(MetricsRegistry, ConcurrentIncrementsAreNotLost) {
  Registry r;
  Counter &c = r.counter("n", "h");
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i)
        c.inc();
    });
  for (auto &t : threads)
    t.join();
  EXPECT_EQ(c.value(), 40000.0);
}

TEST(MetricsRegistry, SampleValuesUseShortestRoundTripForm) {
  EXPECT_EQ(format_sample_value(0.1), "0.1");
  EXPECT_EQ(format_sample_value(123456789), "123456789");
  EXPECT_EQ(format_sample_value(10), "10");
  EXPECT_EQ(format_sample_value(-0.0), "-0");
  EXPECT_EQ(format_sample_value(1.0 / 0.0), "+Inf");
  double v = 0.1 + 0.2;
  EXPECT_EQ(std::stod(format_sample_value(v)), v);
}

} // namespace
} // namespace wo::observe

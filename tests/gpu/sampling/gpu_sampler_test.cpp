// GPU sampler vs the CPU reference filter: greedy equals argmax; draws follow the exact filtered
// distribution (chi-square goodness of fit over 20,000 draws).
#include "sampling/filter_ref.hpp"
#include "sampling/gpu_sampler.hpp"

#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <string>

using namespace wo::sampling;

namespace {

bool have_device() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

struct Fixture {
  cudaStream_t stream{};
  float *d_logits = nullptr;
  std::unique_ptr<GpuSampler> sampler;
  explicit Fixture(int64_t n) {
    EXPECT_EQ(cudaStreamCreate(&stream), cudaSuccess);
    EXPECT_EQ(cudaMalloc(&d_logits, n * sizeof(float)), cudaSuccess);
    sampler = std::make_unique<GpuSampler>(
        n, stream,
        [](size_t b) {
          void *p = nullptr;
          return cudaMalloc(&p, b) == cudaSuccess ? p : nullptr;
        },
        [](void *p) { cudaFree(p); });
  }
  ~Fixture() {
    sampler.reset();
    cudaFree(d_logits);
    cudaStreamDestroy(stream);
  }
  void upload(const std::vector<float> &l) {
    ASSERT_EQ(cudaMemcpy(d_logits, l.data(), l.size() * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
  }
};

std::vector<float> random_logits(size_t n, uint32_t seed, float sd) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, sd);
  std::vector<float> l(n);
  for (auto &x : l)
    x = d(rng);
  return l;
}

// Upper-tail critical value of chi-square with df degrees of freedom at p = 1e-4
// (Wilson-Hilferty approximation; z = 3.719 is the standard normal 1e-4 quantile).
double chi2_critical_1e4(int df) {
  const double z = 3.719;
  const double a = 2.0 / (9.0 * df);
  return df * std::pow(1.0 - a + z * std::sqrt(a), 3.0);
}

// A request's sampling fields: temperature, top-k, top-p, min-p, repetition penalty.
SamplingParams mk(float t, int k, float p, float mp, float pen = 1.0f) {
  SamplingParams s;
  s.temperature = t;
  s.top_k = k;
  s.top_p = p;
  s.min_p = mp;
  s.repetition_penalty = pen;
  return s;
}

// Draw `draws` ids with fresh uniforms, compare with the CPU distribution. Bins whose expected
// count is < 5 are pooled; a draw outside the kept set fails at once.
void check_distribution(int64_t n, const std::vector<float> &logits, const SamplingParams &sp, int draws,
                        uint64_t seed) {
  Fixture f(n);
  f.upload(logits);
  auto p = filtered_distribution(logits, {}, sp);
  std::mt19937_64 rng(seed);
  std::map<int32_t, int> counts;
  for (int i = 0; i < draws; ++i) {
    f.sampler->reset(); // no repetition history between draws
    f.sampler->sample(f.d_logits, sp, uniform_from_bits(rng()));
    int32_t id = f.sampler->fetch_id();
    ASSERT_GE(id, 0);
    ASSERT_LT(id, n);
    ASSERT_GT(p[static_cast<size_t>(id)], 0.0) << "drew id " << id << " outside the filtered set";
    counts[id]++;
  }
  double chi2 = 0, pooled_e = 0, pooled_o = 0;
  int bins = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (p[static_cast<size_t>(i)] <= 0) continue;
    double e = p[static_cast<size_t>(i)] * draws;
    double o = counts.count(static_cast<int32_t>(i)) ? counts[static_cast<int32_t>(i)] : 0;
    if (e < 5) {
      pooled_e += e;
      pooled_o += o;
      continue;
    }
    chi2 += (o - e) * (o - e) / e;
    ++bins;
  }
  if (pooled_e > 0) {
    chi2 += (pooled_o - pooled_e) * (pooled_o - pooled_e) / std::max(pooled_e, 1e-9);
    ++bins;
  }
  if (bins < 2) return; // a single bin: the out-of-set check above is the whole test
  double crit = chi2_critical_1e4(bins - 1);
  EXPECT_LT(chi2, crit) << "chi2=" << chi2 << " df=" << bins - 1 << " (p=1e-4 critical " << crit << ")";
  std::printf("  chi2=%.1f df=%d critical(1e-4)=%.1f\n", chi2, bins - 1, crit);
}

// The greedy choice of f's sampler over logits l, with the history cleared, taken both ways:
// sample() then fetch_id(), and sample_request() (the choosing kernel publishes the id itself).
int32_t greedy_id(Fixture &f, const std::vector<float> &l) {
  SamplingParams sp;
  sp.temperature = 0.0f;
  f.upload(l);
  f.sampler->reset();
  f.sampler->sample(f.d_logits, sp, 0.5);
  const int32_t fetched = f.sampler->fetch_id();
  f.sampler->reset();
  const int32_t published = f.sampler->wait_id(f.sampler->sample_request(f.d_logits, sp, 0.5));
  EXPECT_EQ(published, fetched) << "sample_request against sample + fetch_id";
  return published;
}

} // namespace

TEST(GpuSampler, GreedyEqualsArgmaxOnRandomLogits) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  const int64_t n = 151936;
  Fixture f(n);
  for (uint32_t trial = 0; trial < 20; ++trial) {
    auto l = random_logits(n, 100 + trial, 3.0f);
    const auto want = static_cast<int32_t>(std::max_element(l.begin(), l.end()) - l.begin());
    EXPECT_EQ(greedy_id(f, l), want) << "trial " << trial;
  }
}

// Ties at the largest logit go to the lowest id, and NaN never wins, wherever the ties and NaNs
// fall among the blocks and warps that reduce them.
TEST(GpuSampler, GreedyTakesTheLowestIdOfTiesAndSkipsNaN) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  const int64_t n = 151936;
  Fixture f(n);
  for (uint32_t trial = 0; trial < 10; ++trial) {
    auto l = random_logits(n, 300 + trial, 3.0f);
    for (auto &x : l)
      x = std::min(std::round(x), 3.0f); // whole numbers up to 3: thousands of ids tie at 3
    std::mt19937 rng(trial);
    for (int k = 0; k < 200; ++k)
      l[rng() % n] = std::nanf("");
    l[0] = std::nanf("");
    float best = -INFINITY;
    int32_t want = 0;
    for (int64_t i = 0; i < n; ++i)
      if (!std::isnan(l[i]) && l[i] > best) best = l[i], want = static_cast<int32_t>(i);
    EXPECT_EQ(greedy_id(f, l), want) << "trial " << trial;
  }
  Fixture g(4096);
  EXPECT_EQ(greedy_id(g, std::vector<float>(4096, std::nanf(""))), 0) << "all NaN gives id 0";
}

TEST(GpuSampler, RepetitionPenaltyChangesGreedyChoice) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  std::vector<float> l = {1.0f, 4.0f, 3.0f, -2.0f};
  Fixture f(4);
  f.upload(l);
  SamplingParams sp;
  sp.temperature = 0.0f;
  sp.repetition_penalty = 2.0f;
  f.sampler->sample(f.d_logits, sp, 0.0);
  EXPECT_EQ(f.sampler->fetch_id(), 1);
  f.sampler->sample(f.d_logits, sp, 0.0); // 1 is now in the history: 4/2 = 2 < 3
  EXPECT_EQ(f.sampler->fetch_id(), 2);
  f.sampler->reset();
  f.sampler->sample(f.d_logits, sp, 0.0);
  EXPECT_EQ(f.sampler->fetch_id(), 1);
}

// Run-ahead decode keeps two id copies in flight: each ticket gives the id chosen when it was
// requested, whichever is waited for first, and later choices (which overwrite the device's id)
// do not reach an earlier ticket. Random logits: the penalty makes each greedy choice differ.
TEST(GpuSampler, TicketsKeepTheirIdsWhileTheNextIsChosen) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  const int64_t n = 1000;
  Fixture f(n);
  f.upload(random_logits(n, 11, 3.0f));
  SamplingParams sp;
  sp.temperature = 0.0f;
  sp.repetition_penalty = 1e6f; // a chosen id is never chosen again
  std::vector<int32_t> want;    // the same choices, one synchronous fetch each
  for (int i = 0; i < 6; ++i) {
    f.sampler->sample(f.d_logits, sp, 0.0);
    want.push_back(f.sampler->fetch_id());
  }
  f.sampler->reset();
  std::vector<int32_t> got;
  f.sampler->sample(f.d_logits, sp, 0.0);
  int ticket = f.sampler->request_id();
  for (int i = 1; i <= 6; ++i) {
    int next = -1;
    if (i < 6) { // the next choice queued before the previous one is read
      f.sampler->sample(f.d_logits, sp, 0.0);
      next = f.sampler->request_id();
    }
    got.push_back(f.sampler->wait_id(ticket));
    ticket = next;
  }
  EXPECT_EQ(got, want);
  EXPECT_EQ(std::set<int32_t>(want.begin(), want.end()).size(), want.size()) << "choices should differ";
  EXPECT_THROW(f.sampler->wait_id(GpuSampler::kIdSlots), std::exception);
}

// sample_request queued the way the worker queues decode (each choice requested before the previous
// ticket is waited for) gives the ids of sample() + fetch_id() one at a time: greedy (its last block
// takes a ticket that it resets for the next launch; the penalty makes every choice differ, so a
// stale partial or ticket shows) and the sampling paths (their publication kernel), at vocabulary
// sizes of one argmax block, a few and the full 264.
TEST(GpuSampler, SampleRequestGivesTheIdsOfSampleThenFetch) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  for (const int64_t n : {int64_t{200}, int64_t{1000}, int64_t{151936}}) {
    Fixture f(n);
    f.upload(random_logits(static_cast<size_t>(n), 40 + static_cast<uint32_t>(n % 97), 3.0f));
    for (const SamplingParams &sp :
         {mk(0.0f, 0, 1.0f, 0.0f, 1e6f), mk(0.8f, 40, 0.95f, 0.0f, 1.3f), mk(1.0f, 0, 1.0f, 0.05f, 1.3f)}) {
      constexpr int kSteps = 12;
      std::vector<double> us;
      std::mt19937 rng(5);
      for (int i = 0; i < kSteps; ++i)
        us.push_back(std::uniform_real_distribution<double>(0.0, 1.0)(rng));
      std::vector<int32_t> want, got;
      f.sampler->reset();
      for (int i = 0; i < kSteps; ++i) {
        f.sampler->sample(f.d_logits, sp, us[static_cast<size_t>(i)]);
        want.push_back(f.sampler->fetch_id());
      }
      f.sampler->reset();
      int ticket = f.sampler->sample_request(f.d_logits, sp, us[0]);
      for (int i = 1; i <= kSteps; ++i) {
        const int next =
            i < kSteps ? f.sampler->sample_request(f.d_logits, sp, us[static_cast<size_t>(i)]) : -1;
        got.push_back(f.sampler->wait_id(ticket));
        ticket = next;
      }
      EXPECT_EQ(got, want) << "n " << n << " temperature " << sp.temperature << " top_k " << sp.top_k;
      if (sp.greedy() && n >= kSteps) {
        EXPECT_EQ(std::set<int32_t>(want.begin(), want.end()).size(), want.size()) << "choices should differ";
      }
    }
  }
}

TEST(GpuSampler, SameUniformSameId) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  const int64_t n = 32000;
  auto l = random_logits(n, 7, 2.0f);
  Fixture f(n);
  f.upload(l);
  // top-p 0.95 and temperature alone (two of the paths that skip the sort)
  for (const SamplingParams &sp : {mk(0.8f, 0, 0.95f, 0.0f), mk(0.8f, 0, 1.0f, 0.0f)})
    for (double u : {0.0, 0.123, 0.5, 0.999999}) {
      f.sampler->sample(f.d_logits, sp, u);
      int32_t a = f.sampler->fetch_id();
      f.sampler->reset();
      f.sampler->sample(f.d_logits, sp, u);
      EXPECT_EQ(a, f.sampler->fetch_id()) << "top_p " << sp.top_p << " u " << u;
      f.sampler->reset();
    }
}

struct DistCase {
  const char *name;
  int64_t n;
  SamplingParams sp;
};

TEST(GpuSampler, DrawsMatchFilteredDistribution) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  const DistCase cases[] = {
      {"temperature 1.0", 64, mk(1.0f, 0, 1.0f, 0.0f)},
      {"temperature 0.7", 64, mk(0.7f, 0, 1.0f, 0.0f)},
      {"top-k 10", 64, mk(1.0f, 10, 1.0f, 0.0f)},
      {"top-p 0.8", 64, mk(1.0f, 0, 0.8f, 0.0f)},
      {"min-p 0.1", 64, mk(1.0f, 0, 1.0f, 0.1f)},
      {"all filters, T 1.5", 64, mk(1.5f, 20, 0.9f, 0.02f)},
      {"large vocab top-k 40 T 0.7", 151936, mk(0.7f, 40, 1.0f, 0.0f)},
      // no top-k and no top-p: drawn in id order without the sort (GpuSampler::set_fast_paths)
      {"large vocab temperature 0.5", 151936, mk(0.5f, 0, 1.0f, 0.0f)},
      {"large vocab min-p 0.05 T 0.8", 201088, mk(0.8f, 0, 1.0f, 0.05f)},
      // top-p without top-k: the nucleus selected without the sort, then drawn in id order
      {"large vocab top-p 0.9 T 0.7", 151936, mk(0.7f, 0, 0.9f, 0.0f)},
      {"large vocab top-p 0.5 min-p 0.02", 201088, mk(1.0f, 0, 0.5f, 0.02f)},
  };
  uint32_t seed = 11;
  for (const auto &c : cases) {
    SCOPED_TRACE(c.name);
    std::printf("case %s\n", c.name);
    check_distribution(c.n, random_logits(static_cast<size_t>(c.n), seed, 1.5f), c.sp, 20000, seed * 7919u);
    ++seed;
  }
  // Ties at the nucleus's edge (logits in steps of 0.5): the sorted order takes tied tokens by id.
  for (float top_p : {0.3f, 0.6f, 0.85f}) {
    SCOPED_TRACE(top_p);
    auto l = random_logits(3000, seed++, 1.5f);
    for (auto &x : l)
      x = std::round(x * 2.0f) / 2.0f;
    std::printf("case ties, top-p %.2f\n", top_p);
    check_distribution(3000, l, mk(1.0f, 0, top_p, 0.0f), 20000, seed * 7919u);
  }
}

// Top-k requests skip the vocabulary sort when the tiles' candidates fit one block
// (GpuSampler::set_fast_paths; top-k up to 1024: radix selects pick each tile's first k, then the
// candidates' first k): the draws must be the full sort's, id for id, over sequences whose
// repetition history evolves, with ties (logits in steps of 0.5, and -0.0 beside +0.0, which the
// sort orders as equal: by id; every logit equal), tiny and large vocabularies, and top-k 1.
TEST(GpuSampler, TopKWithoutTheFullSortDrawsTheSameIds) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  struct Case {
    const char *name;
    int64_t n;
    bool ties;
    SamplingParams sp;
  };
  const Case cases[] = {
      {"qwen vocab, chat filters", 151936, false, mk(0.8f, 40, 0.95f, 0.05f, 1.1f)},
      {"gpt-oss vocab, top-k 40", 201088, false, mk(1.0f, 40, 1.0f, 0.0f, 1.0f)},
      {"phi-3 vocab, top-k 200, top-p 0.9", 32064, false, mk(0.7f, 200, 0.9f, 0.0f, 1.3f)},
      {"ties in steps of 0.5 and signed zeros", 50000, true, mk(1.0f, 50, 1.0f, 0.0f, 1.2f)},
      {"top-k 1", 151936, false, mk(0.9f, 1, 1.0f, 0.0f, 1.0f)},
      {"vocabulary of 64, top-k 10", 64, false, mk(1.5f, 10, 0.9f, 0.02f, 1.0f)},
      {"too many candidates: the full sort either way", 3000, false, mk(1.0f, 2000, 1.0f, 0.0f, 1.0f)},
      {"top-k 1500: past the select's 1024, the full sort either way", 4000, false,
       mk(1.0f, 1500, 0.95f, 0.0f, 1.1f)},
      {"every logit equal: the ties by id", 10000, false, mk(1.0f, 30, 1.0f, 0.0f, 1.0f)},
  };
  uint32_t seed = 101;
  for (const auto &c : cases) {
    SCOPED_TRACE(c.name);
    auto l = random_logits(static_cast<size_t>(c.n), seed++, 2.0f);
    if (c.ties)
      for (size_t i = 0; i < l.size(); ++i)
        l[i] = i % 7 == 0 ? (i % 2 ? -0.0f : 0.0f) : std::round(l[i] * 2.0f) / 2.0f;
    if (std::string(c.name).rfind("every logit equal", 0) == 0) std::fill(l.begin(), l.end(), 0.5f);
    Fixture fast(c.n), full(c.n);
    fast.upload(l);
    full.upload(l);
    fast.sampler->set_fast_paths(true);
    full.sampler->set_fast_paths(false);
    std::mt19937_64 rng(seed * 31u);
    int differ = 0;
    std::set<int32_t> seen_ids;
    for (int step = 0; step < 200; ++step) {
      const double u = uniform_from_bits(rng());
      fast.sampler->sample(fast.d_logits, c.sp, u);
      full.sampler->sample(full.d_logits, c.sp, u);
      const int32_t a = fast.sampler->fetch_id(), b = full.sampler->fetch_id();
      differ += a != b;
      seen_ids.insert(a);
      ASSERT_EQ(a, b) << "step " << step << " u=" << u;
    }
    EXPECT_EQ(differ, 0);
    std::printf("  %s: 200 draws equal, %zu distinct ids\n", c.name, seen_ids.size());
  }
}

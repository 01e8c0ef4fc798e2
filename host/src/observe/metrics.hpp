// A small Prometheus registry: counters, gauges (set or computed on scrape) and histograms, each
// with fixed label sets, rendered in the text exposition format (version 0.0.4).
// Thread-safe: updates are lock-free per series (atomics); registration and rendering take a mutex.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace wo::observe {

using Labels = std::vector<std::pair<std::string, std::string>>;

class Counter {
public:
  void inc(double v = 1.0);
  double value() const { return value_.load(); }

private:
  std::atomic<double> value_{0.0};
};

class Gauge {
public:
  void set(double v) { value_.store(v); }
  double value() const { return value_.load(); }

private:
  std::atomic<double> value_{0.0};
};

class Histogram {
public:
  // upper_bounds: strictly increasing finite bucket bounds; +Inf is implicit.
  explicit Histogram(std::vector<double> upper_bounds);
  void observe(double v);
  const std::vector<double> &upper_bounds() const { return bounds_; }
  // Cumulative counts per bucket (+Inf last), sum and count, read consistently.
  void snapshot(std::vector<uint64_t> &cumulative, double &sum, uint64_t &count) const;

private:
  std::vector<double> bounds_;
  mutable std::mutex mu_; // observe is rare (once per job): a mutex keeps sum/count consistent
  std::vector<uint64_t> counts_;
  double sum_ = 0.0;
  uint64_t count_ = 0;
};

class Registry {
public:
  // Returns the series for (name, labels), creating it on first use. A name keeps the type and
  // help of its first registration; registering it again with another type throws
  // std::invalid_argument naming the metric. Names and label names must match
  // [a-zA-Z_:][a-zA-Z0-9_:]* (label names without ':'); std::invalid_argument otherwise.
  Counter &counter(const std::string &name, const std::string &help, const Labels &labels = {});
  Gauge &gauge(const std::string &name, const std::string &help, const Labels &labels = {});
  Histogram &histogram(const std::string &name, const std::string &help,
                       const std::vector<double> &upper_bounds, const Labels &labels = {});
  // A gauge whose value is computed at scrape time (uptime, VRAM from cached facts).
  void gauge_fn(const std::string &name, const std::string &help, const Labels &labels,
                std::function<double()> fn);

  // Text exposition: one HELP and TYPE line per family, then its samples.
  std::string render() const;

private:
  enum class Type { counter, gauge, histogram };
  struct Series {
    Labels labels;
    std::unique_ptr<Counter> counter;
    std::unique_ptr<Gauge> gauge;
    std::unique_ptr<Histogram> histogram;
    std::function<double()> fn;
  };
  struct Family {
    Type type;
    std::string help;
    std::vector<std::unique_ptr<Series>> series;
  };
  Series &series(const std::string &name, const std::string &help, Type type, const Labels &labels);

  mutable std::mutex mu_;
  std::map<std::string, Family> families_;
};

// Prometheus label value escaping: backslash, double quote and newline.
std::string escape_label_value(const std::string &v);
// A sample value as Prometheus writes it (+Inf, -Inf, NaN, shortest round-trip decimal).
std::string format_sample_value(double v);

} // namespace wo::observe

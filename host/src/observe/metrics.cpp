#include "observe/metrics.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <stdexcept>

namespace wo::observe {
namespace {

bool valid_name(const std::string &n, bool allow_colon) {
  if (n.empty()) return false;
  for (size_t i = 0; i < n.size(); ++i) {
    char c = n[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (allow_colon && c == ':') ||
              (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

const char *type_name(int t) {
  static const char *names[] = {"counter", "gauge", "histogram"};
  return names[t];
}

void write_labels(std::ostringstream &out, const Labels &labels, const char *extra_key = nullptr,
                  const std::string &extra_value = {}) {
  if (labels.empty() && !extra_key) return;
  out << '{';
  bool first = true;
  for (const auto &l : labels) {
    if (!first) out << ',';
    first = false;
    out << l.first << "=\"" << escape_label_value(l.second) << '"';
  }
  if (extra_key) {
    if (!first) out << ',';
    out << extra_key << "=\"" << escape_label_value(extra_value) << '"';
  }
  out << '}';
}

} // namespace

void Counter::inc(double v) {
  if (!(v >= 0)) throw std::invalid_argument("counter increment must be >= 0, got " + format_sample_value(v));
  double cur = value_.load();
  while (!value_.compare_exchange_weak(cur, cur + v)) {
  }
}

Histogram::Histogram(std::vector<double> upper_bounds) : bounds_(std::move(upper_bounds)) {
  for (size_t i = 0; i < bounds_.size(); ++i) {
    if (!std::isfinite(bounds_[i]) || (i > 0 && bounds_[i] <= bounds_[i - 1]))
      throw std::invalid_argument("histogram bucket bounds must be finite and strictly increasing; bound " +
                                  std::to_string(i) + " is " + format_sample_value(bounds_[i]));
  }
  counts_.assign(bounds_.size() + 1, 0);
}

void Histogram::observe(double v) {
  std::lock_guard<std::mutex> lk(mu_);
  size_t i = 0;
  while (i < bounds_.size() && v > bounds_[i])
    ++i;
  ++counts_[i];
  sum_ += v;
  ++count_;
}

void Histogram::snapshot(std::vector<uint64_t> &cumulative, double &sum, uint64_t &count) const {
  std::lock_guard<std::mutex> lk(mu_);
  cumulative.resize(counts_.size());
  uint64_t running = 0;
  for (size_t i = 0; i < counts_.size(); ++i)
    cumulative[i] = running += counts_[i];
  sum = sum_;
  count = count_;
}

Registry::Series &Registry::series(const std::string &name, const std::string &help, Type type,
                                   const Labels &labels) {
  if (!valid_name(name, true)) throw std::invalid_argument("invalid metric name '" + name + "'");
  for (const auto &l : labels)
    if (!valid_name(l.first, false) || l.first == "le")
      throw std::invalid_argument("metric '" + name + "': invalid label name '" + l.first + "'");
  std::lock_guard<std::mutex> lk(mu_);
  auto it = families_.find(name);
  if (it == families_.end()) it = families_.emplace(name, Family{type, help, {}}).first;
  Family &f = it->second;
  if (f.type != type)
    throw std::invalid_argument("metric '" + name + "' registered as " + type_name(static_cast<int>(f.type)) +
                                ", requested as " + type_name(static_cast<int>(type)));
  for (auto &s : f.series)
    if (s->labels == labels) return *s;
  f.series.push_back(std::make_unique<Series>());
  f.series.back()->labels = labels;
  return *f.series.back();
}

Counter &Registry::counter(const std::string &name, const std::string &help, const Labels &labels) {
  Series &s = series(name, help, Type::counter, labels);
  std::lock_guard<std::mutex> lk(mu_);
  if (!s.counter) s.counter = std::make_unique<Counter>();
  return *s.counter;
}

Gauge &Registry::gauge(const std::string &name, const std::string &help, const Labels &labels) {
  Series &s = series(name, help, Type::gauge, labels);
  std::lock_guard<std::mutex> lk(mu_);
  if (!s.gauge && !s.fn) s.gauge = std::make_unique<Gauge>();
  if (!s.gauge) throw std::invalid_argument("metric '" + name + "' is a computed gauge; it cannot be set");
  return *s.gauge;
}

void Registry::gauge_fn(const std::string &name, const std::string &help, const Labels &labels,
                        std::function<double()> fn) {
  Series &s = series(name, help, Type::gauge, labels);
  std::lock_guard<std::mutex> lk(mu_);
  s.gauge.reset();
  s.fn = std::move(fn);
}

Histogram &Registry::histogram(const std::string &name, const std::string &help,
                               const std::vector<double> &upper_bounds, const Labels &labels) {
  Series &s = series(name, help, Type::histogram, labels);
  std::lock_guard<std::mutex> lk(mu_);
  if (!s.histogram) s.histogram = std::make_unique<Histogram>(upper_bounds);
  return *s.histogram;
}

std::string Registry::render() const {
  std::ostringstream out;
  std::lock_guard<std::mutex> lk(mu_);
  for (const auto &[name, f] : families_) {
    std::string help;
    for (char c : f.help) {
      if (c == '\\')
        help += "\\\\";
      else if (c == '\n')
        help += "\\n";
      else
        help += c;
    }
    out << "# HELP " << name << ' ' << help << '\n';
    out << "# TYPE " << name << ' ' << type_name(static_cast<int>(f.type)) << '\n';
    for (const auto &s : f.series) {
      if (f.type == Type::histogram) {
        std::vector<uint64_t> cum;
        double sum = 0;
        uint64_t count = 0;
        s->histogram->snapshot(cum, sum, count);
        const auto &bounds = s->histogram->upper_bounds();
        for (size_t i = 0; i < cum.size(); ++i) {
          out << name << "_bucket";
          write_labels(out, s->labels, "le", i < bounds.size() ? format_sample_value(bounds[i]) : "+Inf");
          out << ' ' << cum[i] << '\n';
        }
        out << name << "_sum";
        write_labels(out, s->labels);
        out << ' ' << format_sample_value(sum) << '\n';
        out << name << "_count";
        write_labels(out, s->labels);
        out << ' ' << count << '\n';
      } else {
        double v = s->counter ? s->counter->value() : s->gauge ? s->gauge->value() : s->fn ? s->fn() : 0.0;
        out << name;
        write_labels(out, s->labels);
        out << ' ' << format_sample_value(v) << '\n';
      }
    }
  }
  return out.str();
}

std::string escape_label_value(const std::string &v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string format_sample_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  // Whole numbers (counts, bytes, bucket bounds) print as integers, never as 1e+01.
  if (std::fabs(v) < 1e15 && v == std::floor(v)) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
    return buf;
  }
  std::snprintf(buf, sizeof buf, "%.17g", v);
  // Prefer the shortest form that round-trips (e.g. "0.1" rather than "0.10000000000000001").
  for (int prec = 1; prec <= 17; ++prec) {
    char shorter[64];
    std::snprintf(shorter, sizeof shorter, "%.*g", prec, v);
    if (std::strtod(shorter, nullptr) == v) return shorter;
  }
  return buf;
}

} // namespace wo::observe

// Writes a small seed corpus for gguf_fuzz: each input model re-encoded small (arrays cut to a few
// elements, every tensor shrunk to two rows of one block), plus the same with no tensors, so the
// fuzzer starts from real key sets and every tensor type at a size it can mutate quickly.
//   gguf_fuzz_seeds OUT_DIR MODEL.gguf...
#include "gguf/gguf_file.hpp"

#include <worker/ggml_types.hpp>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace {

template <class T> void pod(std::vector<uint8_t> &o, T v) {
  uint8_t b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  o.insert(o.end(), b, b + sizeof(T));
}
void str(std::vector<uint8_t> &o, std::string_view s) {
  pod(o, static_cast<uint64_t>(s.size()));
  o.insert(o.end(), s.begin(), s.end());
}
uint64_t elem_size(uint32_t t) {
  switch (t) {
  case 0:
  case 1:
  case 7: return 1;
  case 2:
  case 3: return 2;
  case 4:
  case 5:
  case 6: return 4;
  case 10:
  case 11:
  case 12: return 8;
  default: return 0;
  }
}

std::vector<uint8_t> shrink(const wo::gguf::File &f, bool with_tensors) {
  const uint64_t keep = 4; // array elements kept
  std::vector<uint8_t> o = {'G', 'G', 'U', 'F'};
  pod(o, uint32_t{3});
  pod(o, static_cast<uint64_t>(with_tensors ? f.tensors().size() : 0));
  pod(o, static_cast<uint64_t>(f.metadata().size()));
  for (const auto &kv : f.metadata()) {
    str(o, kv.key);
    pod(o, static_cast<uint32_t>(kv.value.type));
    const auto &v = kv.value;
    if (v.type == WO_VALUE_STRING)
      str(o, v.str());
    else if (v.type != WO_VALUE_ARRAY)
      o.insert(o.end(), v.data, v.data + v.len);
    else {
      const uint64_t n = v.len < keep ? v.len : keep;
      pod(o, static_cast<uint32_t>(v.array_type));
      if (v.array_type == WO_VALUE_STRING) {
        pod(o, n);
        for (uint64_t i = 0; i < n; ++i)
          str(o, v.strings[i]);
      } else if (uint64_t es = elem_size(v.array_type)) {
        pod(o, n);
        o.insert(o.end(), v.data, v.data + n * es);
      } else {
        pod(o, uint64_t{0}); // nested arrays: keep the key, drop the elements
      }
    }
  }
  uint64_t next = 0;
  std::vector<std::pair<uint64_t, uint64_t>> places;
  if (with_tensors) {
    for (const auto &t : f.tensors()) {
      const auto *ti = wo::ggml::type_info(t.type);
      str(o, t.name);
      pod(o, t.n_dims);
      for (uint32_t k = 0; k < t.n_dims; ++k)
        pod(o, static_cast<uint64_t>(k == 0 ? ti->block_elems : k == 1 ? 2 : 1));
      pod(o, t.type);
      pod(o, next);
      const uint64_t nbytes = uint64_t{ti->block_bytes} * (t.n_dims > 1 ? 2 : 1);
      places.emplace_back(next, nbytes);
      next = (next + nbytes + f.alignment() - 1) / f.alignment() * f.alignment();
    }
  }
  const uint64_t a = f.alignment();
  const uint64_t data = (o.size() + a - 1) / a * a;
  o.resize(data + next, 0);
  for (size_t i = 0; i < places.size(); ++i) // deterministic non-zero bytes
    for (uint64_t k = 0; k < places[i].second; ++k)
      o[data + places[i].first + k] = static_cast<uint8_t>(i * 31 + k * 7 + 1);
  if (!places.empty()) o.resize(data + places.back().first + places.back().second);
  return o;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: gguf_fuzz_seeds OUT_DIR MODEL.gguf...\n");
    return 1;
  }
  int written = 0;
  for (int i = 2; i < argc; ++i) {
    try {
      auto f = wo::gguf::File::open(argv[i]);
      std::string base = argv[i];
      base = base.substr(base.find_last_of('/') + 1);
      for (bool t : {true, false}) {
        auto bytes = shrink(*f, t);
        wo::gguf::File::parse(bytes.data(), bytes.size()); // seeds must be valid
        std::ofstream out(std::string(argv[1]) + "/" + base + (t ? ".small" : ".meta"), std::ios::binary);
        out.write(reinterpret_cast<const char *>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
        ++written;
      }
    } catch (const std::exception &e) {
      std::fprintf(stderr, "gguf_fuzz_seeds: %s\n", e.what());
      return 1;
    }
  }
  std::printf("gguf_fuzz_seeds: wrote %d seeds to %s\n", written, argv[1]);
  return 0;
}

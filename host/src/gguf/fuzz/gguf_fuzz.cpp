// libFuzzer target for the GGUF reader: any byte string must either validate or be rejected with
// wo::Error, never crash, hang or read out of bounds. Accepted inputs are then walked the way
// the host walks a model (metadata services, tensor lookup, inspect summary) to check that
// everything validation let through is safe to use.
#include "gguf/gguf_file.hpp"
#include "gguf/host_meta.hpp"
#include "gguf/model_summary.hpp"

#include <cstdint>
#include <cstring>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // An exact-size heap copy, so ASan flags any read past the end.
  std::vector<uint8_t> bytes(data, data + size);
  std::unique_ptr<wo::gguf::File> f;
  try {
    f = wo::gguf::File::parse(bytes.empty() ? nullptr : bytes.data(), bytes.size(), {}, "fuzz");
  } catch (const wo::Error &) {
    return 0;
  }
  wo::gguf::MetaHost host(*f, [](wo_log_level, const char *) {});
  const wo_host *h = host.host();
  volatile uint64_t sink = 0;
  for (const wo::gguf::KeyValue &kv : f->metadata()) {
    std::string key(kv.key);
    wo_value v = wo::empty_value();
    if (h->meta_get(h->ctx, key.c_str(), &v) != WO_OK) __builtin_trap();
    sink = sink + v.u64 + v.str.len + v.array_len;
    if (v.type == WO_VALUE_STRING && v.str.len) sink = sink + static_cast<uint8_t>(v.str.data[v.str.len - 1]);
    if (v.type == WO_VALUE_ARRAY && v.array_type == WO_VALUE_STRING) {
      for (uint64_t i = 0; i < v.array_len && i < 64; ++i) {
        wo_str s{};
        if (h->meta_array_str(h->ctx, key.c_str(), i, &s) != WO_OK) __builtin_trap();
        if (s.len) sink = sink + static_cast<uint8_t>(s.data[s.len - 1]);
      }
    } else if (v.type == WO_VALUE_ARRAY && v.array_len && v.array_data) {
      sink = sink + static_cast<const uint8_t *>(v.array_data)[0];
    }
    try {
      (void)f->get_int(kv.key);
    } catch (const wo::Error &) {
    }
  }
  for (const wo::gguf::TensorInfo &t : f->tensors()) {
    const wo_tensor *w = h->tensor(h->ctx, t.name.c_str());
    if (!w || w->nbytes != t.nbytes) __builtin_trap();
    const uint8_t *p = static_cast<const uint8_t *>(w->host_data);
    if (t.nbytes) sink = sink + p[0] + p[t.nbytes - 1];
  }
  wo::gguf::ModelSummary s = wo::gguf::summarize(*f);
  // summary_json is left out: RapidJSON 1.1's writer does null-pointer arithmetic on its first
  // push (its own UB, outside this code), which a fatal UBSan build would report on every input.
  sink = sink + wo::gguf::summary_text(*f, s, std::nullopt, true).size();
  (void)sink;
  return 0;
}

#include "arch_table.hpp"

#include <cstdio>

namespace wo::llama {
namespace {

ArchTable make_llama() {
  ArchTable t{};
  t.name = "llama";
  t.rope = Rope::Norm; // llama.cpp's converter permutes q/k so GGUF llama files use adjacent pairs
  t.qkv = QkvLayout::Separate;
  t.ffn = FfnLayout::Separate;
  t.qkv_bias = Need::Optional;
  t.output_bias = Need::Optional;
  t.use_sliding_window = false;
  return t;
}

ArchTable make_qwen2() {
  ArchTable t{};
  t.name = "qwen2";
  t.rope = Rope::Neox;
  t.qkv = QkvLayout::Separate;
  t.ffn = FfnLayout::Separate;
  t.qkv_bias = Need::Required;
  t.output_bias = Need::Absent;
  t.use_sliding_window = false; // Qwen2.5 GGUFs carry no window that llama.cpp applies
  return t;
}

ArchTable make_phi3() {
  ArchTable t{};
  t.name = "phi3";
  t.rope = Rope::Neox;
  t.qkv = QkvLayout::Fused;
  t.ffn = FfnLayout::FusedGateUp;
  t.qkv_bias = Need::Absent;
  t.output_bias = Need::Absent;
  t.use_sliding_window = false; // metadata has sliding_window=2047, but llama.cpp attends fully
  return t;
}

const ArchTable kTables[] = {make_llama(), make_qwen2(), make_phi3()};

} // namespace

const ArchTable *find_arch(const std::string &arch) {
  for (const ArchTable &t : kTables)
    if (arch == t.name) return &t;
  return nullptr;
}

std::string layer_name(const char *pattern, int layer) {
  char buf[256];
  std::snprintf(buf, sizeof buf, pattern, layer);
  return buf;
}

} // namespace wo::llama

#include "engine/weight_store.hpp"

#include "gguf/host_meta.hpp"

#include <worker/env_switch.hpp>
#include <worker/ggml_types.hpp>
#include <worker/sdk.hpp>

namespace wo::engine {

uint64_t pinned_tensor_max_bytes() {
  static const uint64_t v = static_cast<uint64_t>(wo::env_int("WORKER_L2_PIN_MAX_KB", 1, 1 << 20, 64)) * 1024;
  return v;
}

WeightStore::WeightStore(const wo::gguf::File &file) {
  const auto &infos = file.tensors();
  by_name_.reserve(infos.size());
  order_.reserve(infos.size());
  offsets_.reserve(infos.size());
  for (const auto &t : infos) {
    auto [it, inserted] = by_name_.emplace(t.name, wo::gguf::to_wo_tensor(file, t));
    if (!inserted) throw Error(WO_ERR_FORMAT, file.source() + ": tensor '" + t.name + "' appears twice");
    it->second.name = it->first.c_str(); // point at the map's own copy of the name
    order_.push_back(&it->second);
    file_bytes_ += t.nbytes;
  }
  // Offsets: the small F32 tensors first (one range for the L2 window), then the rest, each group in
  // file order. The upload still walks the file in order.
  offsets_.assign(order_.size(), 0);
  const auto pinned = [](const wo_tensor *t) {
    return t->ggml_type == wo::ggml::F32 && t->nbytes > 0 && t->nbytes <= pinned_tensor_max_bytes();
  };
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t i = 0; i < order_.size(); ++i) {
      if (pinned(order_[i]) != (pass == 0)) continue;
      offsets_[i] = arena_bytes_;
      arena_bytes_ += align_up(order_[i]->nbytes, kTensorAlignment);
      if (pass == 0) ++pinned_tensors_;
    }
    if (pass == 0) pinned_bytes_ = arena_bytes_;
  }
}

WeightStore::~WeightStore() = default; // the arena belongs to the accountant; release() frees it

void WeightStore::upload(wo::device::VramAccountant &vram, wo::device::ChunkedUploader &up,
                         const std::function<void(uint64_t)> &on_bytes) {
  if (arena_) throw Error(WO_ERR_INTERNAL, "weights are already uploaded");
  wo_status st = vram.alloc(arena_bytes_, WO_VRAM_WEIGHTS, &arena_, "weights arena");
  if (st != WO_OK)
    throw Error(st, "allocating " + std::to_string(arena_bytes_) + " bytes of weights for " +
                        std::to_string(order_.size()) + " tensors: " + vram.last_error());
  auto *base = static_cast<uint8_t *>(arena_);
  uint64_t before = 0;
  for (size_t i = 0; i < order_.size(); ++i) {
    auto *t = const_cast<wo_tensor *>(order_[i]);
    t->data = base + offsets_[i];
    up.upload(t->host_data, t->data, t->nbytes, "tensor '" + std::string(t->name) + "'", [&](uint64_t done) {
      if (on_bytes) on_bytes(before + done);
    });
    before += t->nbytes;
  }
  up.finish();
}

void WeightStore::release(wo::device::VramAccountant &vram) {
  for (const wo_tensor *t : order_)
    const_cast<wo_tensor *>(t)->data = nullptr;
  if (arena_) vram.free(arena_);
  arena_ = nullptr;
}

const wo_tensor *WeightStore::find(const char *name) const {
  if (!name) return nullptr;
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &it->second;
}

std::vector<wo::device::ResidentBlock> WeightStore::resident_blocks() const {
  std::vector<wo::device::ResidentBlock> out;
  if (!arena_) return out;
  out.reserve(order_.size());
  for (const wo_tensor *t : order_)
    if (t->nbytes) out.push_back({t->name, t->data, t->nbytes});
  return out;
}

} // namespace wo::engine

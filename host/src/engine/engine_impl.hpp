// Engine internals shared by its source files (engine.cpp: lifecycle and public API;
// host_services.cpp: the wo_host callbacks; vram_plan.cpp: sizing before allocation).
#pragma once

#include "device/device_context.hpp"
#include "device/residency.hpp"
#include "device/vram_accounting.hpp"
#include "engine/decode_graph.hpp"
#include "engine/engine.hpp"
#include "engine/weight_store.hpp"
#include "gguf/gguf_file.hpp"
#include "plugins/registry.hpp"

#include <worker/sdk.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace wo::engine {

struct QuantRoute {
  const wo_quant_v1 *vt = nullptr;
  std::string plugin;     // name, for messages
  uint32_t abi_minor = 0; // the SDK minor the plugin was built against (newer ops only from 1.5)
};

class Engine::Impl {
public:
  ~Impl();

  void load(const EngineOptions &opts);
  void unload();
  void require_loaded(const char *what) const;

  // ---- load steps ----
  void select_plugins();
  void check_codecs();
  void compute_plan();
  void upload_weights();
  void pin_small_weights();
  void create_instance();
  void start_residency_monitor();

  // ---- wo_host ----
  void fill_host();
  const QuantRoute &route(const wo_tensor *w, const char *op) const; // throws
  wo_status linear_id_fallback(const QuantRoute &q, const wo_tensor *w, const void *x, wo_dtype x_type,
                               int64_t x_slots, void *y, wo_dtype y_type, int64_t n_tokens,
                               const int32_t *ids, int64_t n_slots);
  std::string arch_error() const;

  // ---- state ----
  EngineOptions opts;
  bool ever_loaded = false; // one model per engine lifetime
  bool is_loaded = false;

  wo::device::VramAccountant vram;
  std::unique_ptr<wo::device::DeviceContext> dev;
  std::unique_ptr<wo::gguf::File> file;
  std::unique_ptr<WeightStore> weights;
  std::unique_ptr<wo::plugins::Registry> registry;

  const wo_arch_v1 *arch = nullptr;
  wo_arch_instance *arch_inst = nullptr;
  const wo_tokenizer_v1 *tok = nullptr;
  wo_tokenizer_instance *tok_inst = nullptr;
  std::map<uint32_t, QuantRoute> quant_by_type;
  std::vector<PluginUse> plugins_used;
  std::string tokenizer_json_storage; // keeps cfg.tokenizer_json alive

  wo_host host{};
  wo_arch_plan arch_plan{};
  VramPlan plan;
  int64_t n_ctx = 0; // planned session capacity
  ModelInfo info;

  void *scratch = nullptr;
  size_t scratch_bytes = 0;
  float *logits = nullptr;
  int64_t logits_rows = 0;

  bool session_open = false;
  int64_t session_ctx = 0;

  // Decode graphs (decode_graph.hpp): per session; graphs_ok turns false for the rest of the
  // session when a capture fails (the step then runs through forward).
  std::unique_ptr<DecodeGraphs> graphs;
  int32_t *d_step_pos = nullptr; // the position decode_step reads
  bool graphs_ok = false;
  bool decode_graph(const int32_t *id_dev, int64_t pos); // false: run forward instead

  std::vector<wo::device::ResidentBlock> resident;
  std::unique_ptr<wo::device::ResidencyMonitor> monitor;
  mutable std::mutex residency_mu;
  ResidencyReport last_residency; // guarded by residency_mu

  mutable std::mutex trace_mu;
  std::map<std::string, std::vector<std::vector<uint8_t>>> traces;

  std::string last_codec_error; // the last failure text a quant codec reported through the host
};

} // namespace wo::engine

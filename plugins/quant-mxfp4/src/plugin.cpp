// quant-mxfp4: the plugin descriptor and its one exported entry point.
#include "mxfp4_codec.hpp"

#include "quant_common/codec_plugin.hpp"

#include <worker/sdk.hpp>

namespace {

const wo_plugin *quant_mxfp4_entry(uint32_t host_major, uint32_t host_minor) {
  static const wo_quant_v1 vtable = wo::quant::CodecPlugin<wo::quant::Mxfp4Codec>::vtable();
  static const wo_plugin desc = wo::make_descriptor(WO_PLUGIN_QUANT, "quant-mxfp4", "0.1.0", &vtable);
  return wo::negotiate(&desc, host_major, host_minor);
}

} // namespace

WORKER_PLUGIN(quant_mxfp4_entry)

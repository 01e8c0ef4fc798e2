// What the shared codec tests (plugins/quant-common/tests) expect of quant-mxfp4.
#include "plugin_under_test.hpp"

#include <worker/ggml_types.hpp>

namespace wo::quant::testing {
const PluginUnderTest kPlugin = {"quant-mxfp4.so", "quant-mxfp4", {wo::ggml::MXFP4}};
} // namespace wo::quant::testing

// What the shared codec tests (plugins/quant-common/tests) expect of quant-ggml.
#include "plugin_under_test.hpp"

#include <worker/ggml_types.hpp>

namespace wo::quant::testing {
const PluginUnderTest kPlugin = {"quant-ggml.so",
                                 "quant-ggml",
                                 {wo::ggml::F32, wo::ggml::F16, wo::ggml::BF16, wo::ggml::Q4_0,
                                  wo::ggml::Q4_1, wo::ggml::Q5_0, wo::ggml::Q5_1, wo::ggml::Q8_0,
                                  wo::ggml::Q4_K, wo::ggml::Q5_K, wo::ggml::Q6_K}};
} // namespace wo::quant::testing

// The SDK conformance kit (sdk/testing) run against the codec .so: the same checks a third-party
// codec would run before the host ever sees it.
#include "plugin_under_test.hpp"

#include <worker/ggml_types.hpp>
#include <worker/testing/conformance.hpp>
#include <worker/testing/plugin_loader.hpp>

#include <gtest/gtest.h>

#include <map>

namespace wo::quant::testing {
namespace {

// Relative L2 error per row the codecs promise (format resolution plus margin).
const std::map<uint32_t, double> kBounds = {
    {wo::ggml::F32, 0.0},   {wo::ggml::F16, 4e-4},   {wo::ggml::BF16, 3e-3},  {wo::ggml::Q4_0, 0.12},
    {wo::ggml::Q4_1, 0.11}, {wo::ggml::Q5_0, 0.06},  {wo::ggml::Q5_1, 0.055}, {wo::ggml::Q8_0, 0.008},
    {wo::ggml::Q4_K, 0.11}, {wo::ggml::Q5_K, 0.055}, {wo::ggml::Q6_K, 0.03},  {wo::ggml::MXFP4, 0.16},
};

TEST(SdkKit, CodecConforms) {
  auto plugin = wo::testing::LoadedPlugin::load(wo::testing::plugin_dir() + "/" + kPlugin.file);
  wo::testing::expect_descriptor_invariants(plugin.descriptor(), WO_PLUGIN_QUANT);
  wo::testing::expect_version_negotiation(plugin.entry());
  const auto *q = static_cast<const wo_quant_v1 *>(plugin.descriptor()->vtable);
  wo::testing::expect_quant_cpu_conformance(q, kBounds);
  wo::testing::expect_quant_rejects_bad_arguments(q);
}

} // namespace
} // namespace wo::quant::testing

// The typed metadata view and the wo_host metadata/tensor services built on it.
#include "gguf/gguf_file.hpp"
#include "gguf/host_meta.hpp"
#include "gguf_builder.hpp"

#include <worker/ggml_types.hpp>
#include <worker/sdk.hpp>

#include <gtest/gtest.h>

#include <random>

namespace wo::gguf {
namespace {

using test::GgufBuilder;

struct Model {
  GgufBuilder b;
  std::vector<uint8_t> bytes;
  std::unique_ptr<File> f;
  int32_t i32 = 0;
  float f32 = 0;
  uint64_t u64 = 0;
  std::vector<float> scores;
  std::vector<std::string> tokens;
};

std::unique_ptr<Model> make_model() {
  auto m = std::make_unique<Model>();
  std::mt19937 rng(std::random_device{}());
  m->i32 = -static_cast<int32_t>(rng() % 100000) - 1;
  m->f32 = std::uniform_real_distribution<float>(-10, 10)(rng);
  m->u64 = (uint64_t{1} << 63) + rng(); // does not fit int64
  for (int i = 0; i < 17; ++i) {
    m->scores.push_back(std::uniform_real_distribution<float>(-5, 5)(rng));
    m->tokens.push_back("tok" + std::to_string(rng() % 1000) + (i % 3 ? "\xc3\xa9" : ""));
  }
  m->b.kv_str("general.architecture", "qwen2");
  m->b.kv_u32("qwen2.context_length", 32768);
  m->b.kv_i32("general.negative", m->i32);
  m->b.kv_f32("qwen2.rope.freq_base", m->f32);
  m->b.kv_u64("general.big", m->u64);
  m->b.kv_bool("tokenizer.ggml.add_bos_token", true);
  m->b.kv_array("tokenizer.ggml.scores", WO_VALUE_F32, m->scores);
  m->b.kv_str_array("tokenizer.ggml.tokens", m->tokens);
  m->b.tensor("token_embd.weight", {64, 4}, ggml::F16, 64 * 4 * 2);
  m->bytes = m->b.build();
  m->f = File::parse(m->bytes.data(), m->bytes.size(), {}, "meta.gguf");
  return m;
}

wo_status status_of(const std::function<void()> &fn) {
  try {
    fn();
  } catch (const Error &e) {
    return e.status();
  }
  return WO_OK;
}

TEST(GgufMetadata, TypedGetters) {
  auto m = make_model();
  const File &f = *m->f;
  EXPECT_EQ(f.architecture(), "qwen2");
  EXPECT_EQ(f.arch_key("context_length"), "qwen2.context_length");
  EXPECT_EQ(f.get_int(f.arch_key("context_length")), 32768);
  EXPECT_EQ(f.get_uint("qwen2.context_length"), 32768u);
  EXPECT_EQ(f.get_int("general.negative"), m->i32);
  EXPECT_FLOAT_EQ(static_cast<float>(f.get_float("qwen2.rope.freq_base")), m->f32);
  EXPECT_DOUBLE_EQ(f.get_float("qwen2.context_length"), 32768.0); // integers convert to float
  EXPECT_EQ(f.get_uint("general.big"), m->u64);
  EXPECT_TRUE(f.get_bool("tokenizer.ggml.add_bos_token"));
  const Value &toks = f.get_array("tokenizer.ggml.tokens", WO_VALUE_STRING);
  ASSERT_EQ(toks.strings.size(), m->tokens.size());
  for (size_t i = 0; i < m->tokens.size(); ++i)
    EXPECT_EQ(toks.strings[i], m->tokens[i]);
  EXPECT_FALSE(f.find_int("qwen2.absent").has_value());
  EXPECT_EQ(*f.find_string("general.architecture"), "qwen2");
}

TEST(GgufMetadata, GetterErrorsNameKeyExpectedAndFound) {
  auto m = make_model();
  const File &f = *m->f;
  EXPECT_EQ(status_of([&] { f.get_int("qwen2.absent"); }), WO_ERR_NOT_FOUND);
  EXPECT_EQ(status_of([&] { f.get_string("qwen2.context_length"); }), WO_ERR_TYPE_MISMATCH);
  EXPECT_EQ(status_of([&] { f.get_int("general.big"); }), WO_ERR_TYPE_MISMATCH);       // > INT64_MAX
  EXPECT_EQ(status_of([&] { f.get_uint("general.negative"); }), WO_ERR_TYPE_MISMATCH); // negative
  EXPECT_EQ(status_of([&] { f.get_bool("qwen2.context_length"); }), WO_ERR_TYPE_MISMATCH);
  EXPECT_EQ(status_of([&] { f.get_array("tokenizer.ggml.scores", WO_VALUE_STRING); }), WO_ERR_TYPE_MISMATCH);
  EXPECT_EQ(status_of([&] { f.find_int("general.architecture"); }), WO_ERR_TYPE_MISMATCH);
  try {
    f.get_int("general.architecture");
    FAIL();
  } catch (const Error &e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("meta.gguf"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'general.architecture'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("expected integer, found string"), std::string::npos) << msg;
    EXPECT_NE(msg.find("offset 0x"), std::string::npos) << msg;
  }
}

TEST(GgufHostMeta, MetaGetFollowsTheAbi) {
  auto m = make_model();
  MetaHost mh(*m->f);
  const wo_host *h = mh.host();
  ASSERT_EQ(h->struct_size, sizeof(wo_host));
  wo_value v = empty_value();
  ASSERT_EQ(h->meta_get(h->ctx, "general.negative", &v), WO_OK);
  EXPECT_EQ(v.type, WO_VALUE_I32);
  EXPECT_EQ(v.i64, m->i32);
  EXPECT_EQ(v.is_negative, 1);
  v = empty_value();
  ASSERT_EQ(h->meta_get(h->ctx, "general.big", &v), WO_OK);
  EXPECT_EQ(v.u64, m->u64);
  EXPECT_EQ(v.is_negative, 0);
  v = empty_value();
  ASSERT_EQ(h->meta_get(h->ctx, "qwen2.rope.freq_base", &v), WO_OK);
  EXPECT_FLOAT_EQ(static_cast<float>(v.f64), m->f32);
  v = empty_value();
  ASSERT_EQ(h->meta_get(h->ctx, "general.architecture", &v), WO_OK);
  EXPECT_EQ(std::string(v.str.data, v.str.len), "qwen2");
  v = empty_value();
  ASSERT_EQ(h->meta_get(h->ctx, "tokenizer.ggml.scores", &v), WO_OK);
  EXPECT_EQ(v.type, WO_VALUE_ARRAY);
  EXPECT_EQ(v.array_type, WO_VALUE_F32);
  ASSERT_EQ(v.array_len, m->scores.size());
  for (size_t i = 0; i < m->scores.size(); ++i) {
    float x;
    std::memcpy(&x, static_cast<const uint8_t *>(v.array_data) + 4 * i, 4);
    EXPECT_EQ(x, m->scores[i]);
  }
  EXPECT_EQ(h->meta_get(h->ctx, "nope", &v), WO_ERR_NOT_FOUND);
  EXPECT_EQ(h->meta_get(h->ctx, nullptr, &v), WO_ERR_INVALID_ARGUMENT);

  // The SDK's HostView reads the same values through the C ABI.
  HostView view(h);
  EXPECT_EQ(view.get_str_array("tokenizer.ggml.tokens"), m->tokens);
  EXPECT_EQ(view.get_num_array<float>("tokenizer.ggml.scores"), m->scores);
  EXPECT_EQ(view.arch_key("context_length"), "qwen2.context_length");
  EXPECT_EQ(view.get_int("qwen2.context_length"), 32768);
  EXPECT_TRUE(view.get_bool("tokenizer.ggml.add_bos_token"));
}

TEST(GgufHostMeta, OlderCallerStructIsNotOverrun) {
  auto m = make_model();
  // A caller that knows only the fields up to `str` must not have later bytes written.
  struct Padded {
    wo_value v;
    uint8_t guard[16];
  } p;
  std::memset(&p, 0xab, sizeof p);
  p.v.struct_size = static_cast<uint32_t>(offsetof(wo_value, array_type));
  ASSERT_EQ(meta_get(*m->f, "general.architecture", &p.v), WO_OK);
  EXPECT_EQ(std::string(p.v.str.data, p.v.str.len), "qwen2");
  const auto *tail = reinterpret_cast<const uint8_t *>(&p.v) + offsetof(wo_value, array_type);
  for (size_t i = 0; i < sizeof(wo_value) - offsetof(wo_value, array_type); ++i)
    EXPECT_EQ(tail[i], 0xab);
}

TEST(GgufHostMeta, MetaArrayStr) {
  auto m = make_model();
  wo_str s{};
  for (uint64_t i = 0; i < m->tokens.size(); ++i) {
    ASSERT_EQ(meta_array_str(*m->f, "tokenizer.ggml.tokens", i, &s), WO_OK);
    EXPECT_EQ(std::string(s.data, s.len), m->tokens[i]);
  }
  EXPECT_EQ(meta_array_str(*m->f, "tokenizer.ggml.tokens", m->tokens.size(), &s), WO_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(meta_array_str(*m->f, "tokenizer.ggml.scores", 0, &s), WO_ERR_TYPE_MISMATCH);
  EXPECT_EQ(meta_array_str(*m->f, "absent", 0, &s), WO_ERR_NOT_FOUND);
}

TEST(GgufHostMeta, TensorsPointIntoTheMappingAndDeviceServicesSayNoDevice) {
  auto m = make_model();
  std::vector<std::pair<int, std::string>> logged;
  MetaHost mh(*m->f, [&](wo_log_level l, const char *msg) { logged.emplace_back(l, msg); });
  const wo_host *h = mh.host();
  const wo_tensor *t = h->tensor(h->ctx, "token_embd.weight");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t, h->tensor(h->ctx, "token_embd.weight")); // stable pointer
  EXPECT_STREQ(t->name, "token_embd.weight");
  EXPECT_EQ(t->ggml_type, ggml::F16);
  EXPECT_EQ(t->n_dims, 2u);
  EXPECT_EQ(t->ne[0], 64);
  EXPECT_EQ(t->ne[1], 4);
  EXPECT_EQ(t->nbytes, 512u);
  EXPECT_EQ(t->nb1, 128u);
  EXPECT_EQ(t->data, nullptr);
  EXPECT_EQ(0, std::memcmp(t->host_data, m->b.tensors()[0].data.data(), 512));
  EXPECT_EQ(h->tensor(h->ctx, "absent"), nullptr);
  void *p = reinterpret_cast<void *>(1);
  EXPECT_EQ(h->vram_alloc(h->ctx, 16, WO_VRAM_SCRATCH, &p), WO_ERR_NO_DEVICE);
  EXPECT_EQ(p, nullptr);
  EXPECT_EQ(h->scratch(h->ctx, 16, &p), WO_ERR_NO_DEVICE);
  EXPECT_EQ(h->linear(h->ctx, t, nullptr, WO_DTYPE_F32, nullptr, WO_DTYPE_F32, 1), WO_ERR_NO_DEVICE);
  EXPECT_EQ(h->gather_rows(h->ctx, t, nullptr, 1, nullptr, WO_DTYPE_F32), WO_ERR_NO_DEVICE);
  EXPECT_EQ(h->cuda_stream, nullptr);
  EXPECT_EQ(h->cublas_handle, nullptr);
  h->log(h->ctx, WO_LOG_WARN, "hello");
  ASSERT_EQ(logged.size(), 1u);
  EXPECT_EQ(logged[0].first, WO_LOG_WARN);
  EXPECT_EQ(logged[0].second, "hello");
}

} // namespace
} // namespace wo::gguf

// The built tokenizer-bpe.so through the C ABI only: descriptor, probe scores, create, encode
// (with the BUFFER_TOO_SMALL protocol), token_bytes, special ids, EOG, errors.
#include "test_support.hpp"

#include <worker/sdk.hpp>

#include <gtest/gtest.h>

#include <dlfcn.h>

namespace wo::tok::testing {
namespace {

std::string plugin_path() {
  const char *d = std::getenv("WORKER_PLUGIN_DIR");
  return std::string(d && *d ? d : WORKER_PLUGIN_DIR_DEFAULT) + "/tokenizer-bpe.so";
}

class PluginAbi : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    handle_ = dlopen(plugin_path().c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << dlerror();
    // Boost.DLL's alias is a variable holding the function's address.
    void *sym = dlsym(handle_, WORKER_PLUGIN_ENTRY_NAME);
    ASSERT_NE(sym, nullptr) << dlerror();
    auto entry = reinterpret_cast<wo_plugin_entry_fn>(*static_cast<void **>(sym));
    plugin_ = entry(WORKER_SDK_ABI_MAJOR, WORKER_SDK_ABI_MINOR);
    ASSERT_NE(plugin_, nullptr);
    EXPECT_EQ(entry(WORKER_SDK_ABI_MAJOR + 1, 0), nullptr); // another major is refused
    vt_ = static_cast<const wo_tokenizer_v1 *>(plugin_->vtable);
  }
  static void *handle_;
  static const wo_plugin *plugin_;
  static const wo_tokenizer_v1 *vt_;

  wo_tokenizer_instance *create(const wo_host *host, const char *json) {
    wo_tokenizer_config cfg{sizeof(wo_tokenizer_config), json};
    wo_tokenizer_instance *inst = nullptr;
    wo_status s = vt_->create(host, &cfg, &inst);
    EXPECT_EQ(s, WO_OK) << vt_->last_error(nullptr);
    return inst;
  }
  std::vector<int32_t> encode(wo_tokenizer_instance *inst, const std::string &text, uint32_t flags) {
    std::vector<int32_t> ids(2);
    size_t n = 0;
    wo_status s = vt_->encode(inst, text.data(), text.size(), flags, ids.data(), ids.size(), &n);
    if (s == WO_ERR_BUFFER_TOO_SMALL) {
      ids.resize(n);
      s = vt_->encode(inst, text.data(), text.size(), flags, ids.data(), ids.size(), &n);
    }
    EXPECT_EQ(s, WO_OK) << vt_->last_error(inst);
    ids.resize(n);
    return ids;
  }
};
void *PluginAbi::handle_ = nullptr;
const wo_plugin *PluginAbi::plugin_ = nullptr;
const wo_tokenizer_v1 *PluginAbi::vt_ = nullptr;

TEST_F(PluginAbi, Descriptor) {
  EXPECT_EQ(plugin_->kind, WO_PLUGIN_TOKENIZER);
  EXPECT_STREQ(plugin_->name, "tokenizer-bpe");
  EXPECT_EQ(plugin_->abi_major, WORKER_SDK_ABI_MAJOR);
  EXPECT_EQ(vt_->struct_size, sizeof(wo_tokenizer_v1));
}

TEST_F(PluginAbi, ReferenceIdsThroughTheAbi) {
  struct Case {
    std::string gguf, ref, kind;
  } cases[] = {{tokenizer_fixtures_dir() + "/qwen2-tiny-vocab.gguf", "qwen2", "gguf-bpe"},
               {fixtures_dir() + "/models/phi3-tiny-Q4_K_M.gguf", "phi3", "gguf-spm"},
               {fixtures_dir() + "/models/gpt2-tiny-Q8_0.gguf", "gpt2", "gguf-bpe"}};
  for (const auto &c : cases) {
    auto g = load_gguf(c.gguf);
    EXPECT_EQ(vt_->probe(g->host->host(), nullptr), 100) << c.gguf;
    wo_tokenizer_instance *inst = create(g->host->host(), nullptr);
    ASSERT_NE(inst, nullptr);
    EXPECT_EQ(vt_->kind(inst), c.kind);
    EXPECT_EQ(vt_->vocab_size(inst), g->tok->vocab().size());
    for (const auto &e : load_reference(fixtures_dir() + "/reference/tokenize/" + c.ref + ".json"))
      for (int k = 0; k < 4; ++k) {
        uint32_t flags = ((k & 2) ? WO_TOK_ADD_SPECIAL : 0u) | ((k & 1) ? WO_TOK_PARSE_SPECIAL : 0u);
        EXPECT_EQ(encode(inst, e.text, flags), e.ids[k]) << c.ref << " " << e.name << " flags " << flags;
      }
    vt_->destroy(inst);
  }
}

TEST_F(PluginAbi, HfJsonOutscoresGgufWhenGiven) {
  auto g = load_gguf(tokenizer_fixtures_dir() + "/qwen2-tiny-vocab.gguf");
  const std::string json = tokenizer_fixtures_dir() + "/qwen/tokenizer.json";
  wo_tokenizer_config cfg{sizeof(wo_tokenizer_config), json.c_str()};
  EXPECT_GT(vt_->probe(g->host->host(), &cfg), vt_->probe(g->host->host(), nullptr));
  // A tokenizer.json that cannot be read: create() fails naming the path (not "no plugin fits").
  wo_tokenizer_config missing{sizeof(wo_tokenizer_config), "/nonexistent/tokenizer.json"};
  EXPECT_GT(vt_->probe(g->host->host(), &missing), 0);
  wo_tokenizer_instance *none = nullptr;
  EXPECT_EQ(vt_->create(g->host->host(), &missing, &none), WO_ERR_IO);
  EXPECT_EQ(none, nullptr);
  EXPECT_NE(std::string(vt_->last_error(nullptr)).find("/nonexistent/tokenizer.json"), std::string::npos);
  wo_tokenizer_instance *inst = create(g->host->host(), json.c_str());
  ASSERT_NE(inst, nullptr);
  EXPECT_STREQ(vt_->kind(inst), "hf-json");
  EXPECT_EQ(encode(inst, "<|im_start|>user\nHi!<|im_end|>", WO_TOK_PARSE_SPECIAL),
            (std::vector<int32_t>{151644, 872, 198, 13048, 0, 151645}));
  vt_->destroy(inst);
}

TEST_F(PluginAbi, BytesSpecialsEogAndErrors) {
  auto g = load_gguf(tokenizer_fixtures_dir() + "/gpt-oss-tiny-vocab.gguf");
  wo_tokenizer_instance *inst = create(g->host->host(), nullptr);
  ASSERT_NE(inst, nullptr);

  // Token bytes: byte-level decoded; concatenation gives the text back.
  const std::string text = "caf\xC3\xA9 \xF0\x9F\x9A\x80 done";
  std::string back;
  for (int32_t id : encode(inst, text, 0)) {
    wo_str s{};
    ASSERT_EQ(vt_->token_bytes(inst, id, &s), WO_OK);
    back.append(s.data, s.len);
  }
  EXPECT_EQ(back, text);
  wo_str s{};
  EXPECT_EQ(vt_->token_bytes(inst, 999999, &s), WO_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(vt_->last_error(inst)).find("999999"), std::string::npos);

  wo_special_ids ids{};
  ids.struct_size = sizeof ids;
  ASSERT_EQ(vt_->special_ids(inst, &ids), WO_OK);
  EXPECT_EQ(ids.bos, 199998);
  EXPECT_EQ(ids.eos, 200002);
  EXPECT_EQ(ids.pad, 199999);
  EXPECT_EQ(ids.add_bos, 0);
  EXPECT_TRUE(vt_->is_eog(inst, 200002));
  EXPECT_TRUE(vt_->is_eog(inst, 200012));
  EXPECT_FALSE(vt_->is_eog(inst, 200007));
  EXPECT_FALSE(vt_->is_eog(inst, 13));

  // Invalid UTF-8 is an error naming the offset; the instance stays usable.
  size_t n = 0;
  int32_t buf[8];
  EXPECT_EQ(vt_->encode(inst, "ab\xFF", 3, 0, buf, 8, &n), WO_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(vt_->last_error(inst)).find("offset 2"), std::string::npos) << vt_->last_error(inst);
  EXPECT_EQ(encode(inst, "hi", 0).size(), 1u);
  // Too small a buffer reports the size needed.
  EXPECT_EQ(vt_->encode(inst, "a b c d e", 9, 0, buf, 1, &n), WO_ERR_BUFFER_TOO_SMALL);
  EXPECT_EQ(n, 5u);
  vt_->destroy(inst);
}

} // namespace
} // namespace wo::tok::testing

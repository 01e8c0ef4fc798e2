// One hand-made malformed file per validation rule of the GGUF reader; each must fail with
// WO_ERR_FORMAT and a message naming the item, the expected and found values, and the offset.
#include "gguf/gguf_file.hpp"
#include "gguf_builder.hpp"

#include <worker/ggml_types.hpp>

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace wo::gguf {
namespace {

using test::GgufBuilder;

// A small valid model: two tensors (F32 norm, Q8_0 matrix) and a few keys.
GgufBuilder valid_builder() {
  GgufBuilder b;
  b.kv_str("general.architecture", "llama");
  b.kv_u32("llama.context_length", 128);
  b.kv_str_array("tokenizer.ggml.tokens", {"<s>", "</s>", "a"});
  b.tensor("norm.weight", {64}, ggml::F32, 64 * 4);
  b.tensor("blk.0.attn_q.weight", {64, 8}, ggml::Q8_0, 8 * (64 / 32) * 34);
  return b;
}

std::string error_of(const std::vector<uint8_t> &bytes, const OpenOptions &opts = {}) {
  try {
    File::parse(bytes.data(), bytes.size(), opts, "test.gguf");
  } catch (const Error &e) {
    EXPECT_EQ(e.status(), WO_ERR_FORMAT) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "expected the reader to reject this file";
  return {};
}

void expect_has(const std::string &msg, const std::vector<std::string> &parts) {
  for (const auto &p : parts)
    EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
}

TEST(GgufValidation, ValidFileParsesWithFactsInPlace) {
  GgufBuilder b = valid_builder();
  auto bytes = b.build();
  auto f = File::parse(bytes.data(), bytes.size());
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->alignment(), 32u);
  EXPECT_EQ(f->data_offset(), b.data_offset);
  ASSERT_EQ(f->tensors().size(), 2u);
  const TensorInfo *q = f->find_tensor("blk.0.attn_q.weight");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->offset, b.data_offset + b.tensor_rel[1]);
  EXPECT_EQ(q->nbytes, 8u * 2 * 34);
  EXPECT_EQ(q->nb1, 2u * 34);
  EXPECT_EQ(q->ne[0], 64);
  EXPECT_EQ(q->ne[1], 8);
  EXPECT_EQ(q->ne[2], 1);
  EXPECT_EQ(0, std::memcmp(f->tensor_data(*q), b.tensors()[1].data.data(), q->nbytes));
  EXPECT_EQ(f->find_tensor("absent"), nullptr);
}

TEST(GgufValidation, Version2IsAccepted) {
  GgufBuilder b = valid_builder();
  b.version = 2;
  auto bytes = b.build();
  EXPECT_EQ(File::parse(bytes.data(), bytes.size())->version(), 2u);
}

TEST(GgufValidation, EmptyFile) {
  std::vector<uint8_t> none;
  expect_has(error_of(none), {"empty", "GGUF"});
}

TEST(GgufValidation, BadMagic) {
  GgufBuilder b = valid_builder();
  b.magic = "GGUX";
  expect_has(error_of(b.build()), {"magic at offset 0x0", "expected 'GGUF'", "found 47 47 55 58"});
}

TEST(GgufValidation, Version1Rejected) {
  GgufBuilder b = valid_builder();
  b.version = 1;
  expect_has(error_of(b.build()), {"version at offset 0x4", "expected 2 or 3", "found 1"});
}

TEST(GgufValidation, UnknownVersionRejected) {
  GgufBuilder b = valid_builder();
  b.version = 7;
  expect_has(error_of(b.build()), {"version at offset 0x4", "expected 2 or 3", "found 7"});
}

TEST(GgufValidation, BigEndianVersionExplained) {
  GgufBuilder b = valid_builder();
  b.version = 0x03000000;
  expect_has(error_of(b.build()), {"version at offset 0x4", "big-endian"});
}

TEST(GgufValidation, TensorCountAboveLimit) {
  GgufBuilder b = valid_builder();
  OpenOptions o;
  o.max_tensors = 1;
  expect_has(error_of(b.build(), o), {"tensor count at offset 0x8", "at most 1", "found 2"});
  b.tensor_count_override = 10001;
  expect_has(error_of(b.build()), {"tensor count at offset 0x8", "at most 10000", "found 10001"});
}

TEST(GgufValidation, TensorCountLargerThanTheFileCanHold) {
  GgufBuilder b = valid_builder();
  b.tensor_count_override = 9000;
  expect_has(error_of(b.build()), {"tensor count", "9000", "cannot fit"});
}

TEST(GgufValidation, MetadataCountLargerThanTheFileCanHold) {
  GgufBuilder b = valid_builder();
  b.kv_count_override = 1ull << 40;
  expect_has(error_of(b.build()),
             {"metadata count at offset 0x10", "expected at most", "found 1099511627776"});
}

TEST(GgufValidation, StringLengthPastEnd) {
  GgufBuilder b;
  std::vector<uint8_t> payload;
  GgufBuilder::pod(payload, uint64_t{1000}); // claims 1000 bytes, has 3
  payload.insert(payload.end(), {'a', 'b', 'c'});
  b.kv_raw("general.name", 8, payload);
  auto bytes = b.build();
  const uint64_t value_at = b.kv_start + 8 + 12 + 4;
  expect_has(error_of(bytes),
             {"metadata key 'general.name'", "offset " + hex(value_at), "length 1000", "past the end"});
}

TEST(GgufValidation, KeyLengthPastEnd) {
  GgufBuilder b;
  b.kv_count_override = 1;
  auto bytes = b.build();
  std::vector<uint8_t> key;
  GgufBuilder::pod(key, uint64_t{1} << 62);
  bytes.resize(b.kv_start);
  bytes.insert(bytes.end(), key.begin(), key.end());
  bytes.resize(bytes.size() + 16, 'x');
  expect_has(error_of(bytes), {"metadata key #0", "offset 0x18", "past the end"});
}

TEST(GgufValidation, NumericArrayLengthPastEnd) {
  GgufBuilder b;
  std::vector<uint8_t> p;
  GgufBuilder::pod(p, uint32_t{WO_VALUE_F32});
  GgufBuilder::pod(p, uint64_t{1} << 62); // * 4 bytes overflows 64 bits
  GgufBuilder::pod(p, 1.0f);
  b.kv_raw("tokenizer.ggml.scores", 9, p);
  expect_has(error_of(b.build()), {"metadata key 'tokenizer.ggml.scores'", "array of", "f32",
                                   "more than 2^64", "before the end of the file"});
}

TEST(GgufValidation, StringArrayCountPastEnd) {
  GgufBuilder b;
  std::vector<uint8_t> p;
  GgufBuilder::pod(p, uint32_t{WO_VALUE_STRING});
  GgufBuilder::pod(p, uint64_t{1000000});
  GgufBuilder::str(p, "only one");
  b.kv_raw("tokenizer.ggml.tokens", 9, p);
  expect_has(error_of(b.build()), {"'tokenizer.ggml.tokens'", "1000000 strings", "cannot fit"});
}

TEST(GgufValidation, StringArrayElementPastEnd) {
  GgufBuilder b;
  std::vector<uint8_t> p;
  GgufBuilder::pod(p, uint32_t{WO_VALUE_STRING});
  GgufBuilder::pod(p, uint64_t{2});
  GgufBuilder::str(p, "ok");
  GgufBuilder::pod(p, uint64_t{500}); // second element claims 500 bytes
  GgufBuilder::pod(p, uint64_t{0});
  b.kv_raw("tokenizer.ggml.tokens", 9, p);
  expect_has(error_of(b.build()), {"'tokenizer.ggml.tokens'[1]", "length 500", "past the end"});
}

TEST(GgufValidation, UnknownValueType) {
  GgufBuilder b;
  b.kv_raw("general.weird", 13, {0, 0, 0, 0});
  auto bytes = b.build();
  expect_has(error_of(bytes), {"metadata key 'general.weird'", "expected a value type 0..12", "found 13",
                               "offset " + hex(b.kv_start + 8 + 13)});
}

TEST(GgufValidation, UnknownArrayElementType) {
  GgufBuilder b;
  std::vector<uint8_t> p;
  GgufBuilder::pod(p, uint32_t{99});
  GgufBuilder::pod(p, uint64_t{1});
  b.kv_raw("general.weird", 9, p);
  expect_has(error_of(b.build()), {"'general.weird'", "array element type 0..12", "found 99"});
}

TEST(GgufValidation, NestedArraysParseAndTooDeepNestingFails) {
  GgufBuilder ok;
  std::vector<uint8_t> p;
  GgufBuilder::pod(p, uint32_t{WO_VALUE_ARRAY});
  GgufBuilder::pod(p, uint64_t{1});
  GgufBuilder::pod(p, uint32_t{WO_VALUE_I32});
  GgufBuilder::pod(p, uint64_t{2});
  GgufBuilder::pod(p, int32_t{5});
  GgufBuilder::pod(p, int32_t{-6});
  ok.kv_raw("general.nested", 9, p);
  ok.kv_u32("general.after", 42);
  auto bytes = ok.build();
  auto f = File::parse(bytes.data(), bytes.size());
  EXPECT_EQ(f->get_array("general.nested").array_type, WO_VALUE_ARRAY);
  EXPECT_EQ(f->get_int("general.after"), 42); // the nested array was skipped exactly

  GgufBuilder deep;
  std::vector<uint8_t> q;
  for (int i = 0; i < 6; ++i) {
    GgufBuilder::pod(q, uint32_t{WO_VALUE_ARRAY});
    GgufBuilder::pod(q, uint64_t{1});
  }
  q.resize(q.size() + 64, 0);
  deep.kv_raw("general.deep", 9, q);
  expect_has(error_of(deep.build()), {"'general.deep'", "nested at most 4 deep"});
}

TEST(GgufValidation, KeyNotUtf8) {
  GgufBuilder b;
  b.kv_u32(std::string("general.\xff\xfe"), 1);
  auto bytes = b.build();
  expect_has(error_of(bytes),
             {"metadata key #0", "expected valid UTF-8", "index 8", "offset " + hex(b.kv_start)});
}

TEST(GgufValidation, OverlongAndSurrogateUtf8Rejected) {
  for (std::string bad : {std::string("k\xc0\xaf"), std::string("k\xed\xa0\x80"),
                          std::string("k\xf4\x90\x80\x80"), std::string("k\xe2\x82")}) {
    GgufBuilder b;
    b.kv_u32(bad, 1);
    expect_has(error_of(b.build()), {"expected valid UTF-8", "index 1"});
  }
  GgufBuilder good; // multi-byte UTF-8 is fine
  good.kv_u32("general.caf\xc3\xa9.\xf0\x9f\x98\x80", 1);
  auto bytes = good.build();
  EXPECT_NO_THROW(File::parse(bytes.data(), bytes.size()));
}

TEST(GgufValidation, NulInNamesRejected) {
  {
    GgufBuilder b;
    b.kv_u32(std::string("general.a\0b", 11), 1);
    expect_has(error_of(b.build()), {"metadata key #0", "no NUL bytes", "index 9"});
  }
  {
    GgufBuilder b;
    b.tensor(std::string("w\0", 2), {32}, ggml::F32, 128);
    expect_has(error_of(b.build()), {"tensor #0 name", "no NUL bytes", "index 1"});
  }
}

TEST(GgufValidation, EmptyKey) {
  GgufBuilder b;
  b.kv_u32("", 1);
  expect_has(error_of(b.build()), {"metadata key #0", "non-empty"});
}

TEST(GgufValidation, DuplicateKey) {
  GgufBuilder b;
  b.kv_u32("general.x", 1);
  b.kv_u32("general.x", 2);
  auto bytes = b.build();
  expect_has(error_of(bytes), {"metadata key 'general.x'", "unique", "first at offset " + hex(b.kv_start)});
}

TEST(GgufValidation, TensorNameNotUtf8) {
  GgufBuilder b;
  b.tensor(std::string("blk.\x80.w"), {32}, ggml::F32, 128);
  auto bytes = b.build();
  expect_has(error_of(bytes), {"tensor #0 name", "UTF-8", "offset " + hex(b.tensor_info_at[0])});
}

TEST(GgufValidation, DuplicateTensorName) {
  GgufBuilder b;
  b.tensor("w", {32}, ggml::F32, 128);
  b.tensor("w", {32}, ggml::F32, 128);
  auto bytes = b.build();
  expect_has(error_of(bytes), {"tensor 'w'", "unique tensor names", "offset " + hex(b.tensor_info_at[1]),
                               "first at offset " + hex(b.tensor_info_at[0])});
}

TEST(GgufValidation, DimsOutOfRange) {
  for (size_t nd : {size_t{0}, size_t{5}}) {
    GgufBuilder b;
    b.tensor("w", std::vector<uint64_t>(nd, 1), ggml::F32, 4);
    auto bytes = b.build();
    expect_has(error_of(bytes), {"tensor 'w' n_dims", "expected 1..4", "found " + std::to_string(nd),
                                 "offset " + hex(b.tensor_info_at[0] + 8 + 1)});
  }
}

TEST(GgufValidation, ZeroDimension) {
  GgufBuilder b;
  b.tensor("w", {32, 0}, ggml::F32, 0);
  expect_has(error_of(b.build()), {"tensor 'w' ne[1]", "expected 1..", "found 0"});
}

TEST(GgufValidation, ElementCountOverflow) {
  GgufBuilder b;
  b.tensor("w", {1ull << 32, 1ull << 32}, ggml::F32, 4);
  expect_has(error_of(b.build()), {"tensor 'w' ne[1]", "overflows int64"});
}

TEST(GgufValidation, ByteSizeOverflow) {
  GgufBuilder b; // 2^62 elements fit int64, but 2^62 * 4 bytes do not fit 64 bits
  b.tensor("w", {1ull << 31, 1ull << 31}, ggml::F32, 4);
  expect_has(error_of(b.build()), {"tensor 'w'", "overflows 64 bits"});
}

TEST(GgufValidation, UnknownTypeId) {
  GgufBuilder b;
  b.tensor("w", {32}, 77, 128);
  expect_has(error_of(b.build()), {"tensor 'w' type", "known ggml type id", "found 77"});
}

TEST(GgufValidation, RemovedTypeIdNamed) {
  GgufBuilder b;
  b.tensor("w", {32}, 4, 128);
  expect_has(error_of(b.build()), {"tensor 'w' type", "found 4", "Q4_2", "removed"});
}

TEST(GgufValidation, RowNotWholeBlocks) {
  GgufBuilder b;
  b.tensor("w", {48, 2}, ggml::Q4_K, 1000);
  auto bytes = b.build();
  expect_has(error_of(bytes), {"tensor 'w' ne[0]", "multiple of 256", "Q4_K", "found 48",
                               "offset " + hex(b.tensor_info_at[0] + 8 + 1 + 4)});
}

TEST(GgufValidation, MisalignedDataOffset) {
  GgufBuilder b;
  b.tensor("w", {32}, ggml::F32, 128, 16);
  expect_has(error_of(b.build()), {"tensor 'w' data offset", "multiple of the alignment 32", "found 0x10"});
}

TEST(GgufValidation, DataPastFileEnd) {
  GgufBuilder b;
  b.tensor("a", {32}, ggml::F32, 128);
  b.tensor("w", {1024}, ggml::F32, 4096);
  auto full = b.build();
  b.truncate_to = full.size() - 1;
  auto bytes = b.build();
  const uint64_t start = b.data_offset + b.tensor_rel[1];
  expect_has(error_of(bytes), {"tensor 'w': data [" + hex(start) + ", " + hex(start + 4096) + ")",
                               "ends past file size " + hex(bytes.size())});
}

TEST(GgufValidation, HugeOffsetDoesNotWrap) {
  GgufBuilder b;
  b.tensor("w", {32}, ggml::F32, 128, 0xffffffffffffffe0ull);
  expect_has(error_of(b.build()), {"tensor 'w': data", "ends past file size"});
}

TEST(GgufValidation, OverlappingTensors) {
  GgufBuilder b;
  b.tensor("a", {64}, ggml::F32, 256, 0);
  b.tensor("b", {64}, ggml::F32, 256, 128);
  expect_has(error_of(b.build()), {"tensor 'b'", "overlaps tensor 'a'", "disjoint"});
}

TEST(GgufValidation, DataSectionPastEnd) {
  GgufBuilder b;
  b.tensor("w", {8}, ggml::F32, 32);
  auto full = b.build();
  b.truncate_to = b.tensor_info_at[0] + 8 + 1 + 4 + 8 + 4 + 8; // infos complete, padding cut
  auto bytes = b.build();
  ASSERT_LT(bytes.size(), b.data_offset);
  expect_has(error_of(bytes), {"data section", "expected to start at offset " + hex(b.data_offset)});
}

TEST(GgufValidation, AlignmentKey) {
  {
    GgufBuilder b;
    b.kv_u32("general.alignment", 48);
    expect_has(error_of(b.build()), {"'general.alignment'", "power of two", "found 48"});
  }
  {
    GgufBuilder b;
    b.kv_u64("general.alignment", 64);
    expect_has(error_of(b.build()), {"'general.alignment'", "expected type u32", "found u64"});
  }
  {
    GgufBuilder b;
    b.alignment = 64;
    b.kv_u32("general.alignment", 64);
    b.tensor("a", {8}, ggml::F32, 32);
    b.tensor("b", {8}, ggml::F32, 32);
    auto bytes = b.build();
    auto f = File::parse(bytes.data(), bytes.size());
    EXPECT_EQ(f->alignment(), 64u);
    EXPECT_EQ(f->data_offset() % 64, 0u);
    EXPECT_EQ(f->find_tensor("b")->offset, f->data_offset() + 64);
  }
  {
    GgufBuilder b; // data placed at 32 while the file asks 64
    b.kv_u32("general.alignment", 64);
    b.tensor("a", {8}, ggml::F32, 32);
    b.tensor("b", {8}, ggml::F32, 32);
    expect_has(error_of(b.build()), {"tensor 'b' data offset", "alignment 64", "found 0x20"});
  }
}

TEST(GgufValidation, EveryTruncationOfASmallFileFailsCleanly) {
  GgufBuilder b = valid_builder();
  auto full = b.build();
  for (size_t n = 0; n < full.size(); ++n) {
    std::vector<uint8_t> cut(full.begin(), full.begin() + static_cast<long>(n));
    try {
      File::parse(cut.data(), cut.size());
      ADD_FAILURE() << "truncated at " << n << " of " << full.size() << " was accepted";
    } catch (const Error &e) {
      EXPECT_EQ(e.status(), WO_ERR_FORMAT) << "at " << n << ": " << e.what();
    }
  }
}

} // namespace
} // namespace wo::gguf

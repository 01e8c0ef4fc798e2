// The ggml tensor type table: every type id of the GGUF spec up to MXFP4 (39), with its name,
// block size (elements per block) and bytes per block.
//
// Why it lives in the SDK: the host (GGUF validation, VRAM plan, inspect) and every quant plugin
// need the same facts, and a valid-but-unsupported type must be reported by its name, not a number.
// Ids that the format once used and then removed (4, 5, 31-33, 36-38) are not valid here:
// type_info() returns nullptr for them, as for ids past the end of the table.
#pragma once

#include <cstdint>

namespace wo::ggml {

struct TypeInfo {
  uint32_t id;
  const char *name;
  uint32_t block_elems; // elements per block (1 for plain scalar types)
  uint32_t block_bytes; // bytes per block
  bool valid;           // false for removed / unassigned ids
};

constexpr uint32_t F32 = 0;
constexpr uint32_t F16 = 1;
constexpr uint32_t Q4_0 = 2;
constexpr uint32_t Q4_1 = 3;
constexpr uint32_t Q5_0 = 6;
constexpr uint32_t Q5_1 = 7;
constexpr uint32_t Q8_0 = 8;
constexpr uint32_t Q8_1 = 9;
constexpr uint32_t Q2_K = 10;
constexpr uint32_t Q3_K = 11;
constexpr uint32_t Q4_K = 12;
constexpr uint32_t Q5_K = 13;
constexpr uint32_t Q6_K = 14;
constexpr uint32_t Q8_K = 15;
constexpr uint32_t IQ2_XXS = 16;
constexpr uint32_t IQ2_XS = 17;
constexpr uint32_t IQ3_XXS = 18;
constexpr uint32_t IQ1_S = 19;
constexpr uint32_t IQ4_NL = 20;
constexpr uint32_t IQ3_S = 21;
constexpr uint32_t IQ2_S = 22;
constexpr uint32_t IQ4_XS = 23;
constexpr uint32_t I8 = 24;
constexpr uint32_t I16 = 25;
constexpr uint32_t I32 = 26;
constexpr uint32_t I64 = 27;
constexpr uint32_t F64 = 28;
constexpr uint32_t IQ1_M = 29;
constexpr uint32_t BF16 = 30;
constexpr uint32_t TQ1_0 = 34;
constexpr uint32_t TQ2_0 = 35;
constexpr uint32_t MXFP4 = 39;

constexpr uint32_t kTypeCount = 40; // ids 0..39

namespace detail {
// Indexed by id. Block sizes are the format's: QK=32 for the legacy and IQ4_NL/MXFP4 types,
// QK_K=256 for the K-quants, IQ*, and TQ* types.
inline constexpr TypeInfo kTypes[kTypeCount] = {
    {0, "F32", 1, 4, true},          {1, "F16", 1, 2, true},          {2, "Q4_0", 32, 18, true},
    {3, "Q4_1", 32, 20, true},       {4, "Q4_2", 0, 0, false},        {5, "Q4_3", 0, 0, false},
    {6, "Q5_0", 32, 22, true},       {7, "Q5_1", 32, 24, true},       {8, "Q8_0", 32, 34, true},
    {9, "Q8_1", 32, 36, true},       {10, "Q2_K", 256, 84, true},     {11, "Q3_K", 256, 110, true},
    {12, "Q4_K", 256, 144, true},    {13, "Q5_K", 256, 176, true},    {14, "Q6_K", 256, 210, true},
    {15, "Q8_K", 256, 292, true},    {16, "IQ2_XXS", 256, 66, true},  {17, "IQ2_XS", 256, 74, true},
    {18, "IQ3_XXS", 256, 98, true},  {19, "IQ1_S", 256, 50, true},    {20, "IQ4_NL", 32, 18, true},
    {21, "IQ3_S", 256, 110, true},   {22, "IQ2_S", 256, 82, true},    {23, "IQ4_XS", 256, 136, true},
    {24, "I8", 1, 1, true},          {25, "I16", 1, 2, true},         {26, "I32", 1, 4, true},
    {27, "I64", 1, 8, true},         {28, "F64", 1, 8, true},         {29, "IQ1_M", 256, 56, true},
    {30, "BF16", 1, 2, true},        {31, "Q4_0_4_4", 0, 0, false},   {32, "Q4_0_4_8", 0, 0, false},
    {33, "Q4_0_8_8", 0, 0, false},   {34, "TQ1_0", 256, 54, true},    {35, "TQ2_0", 256, 66, true},
    {36, "IQ4_NL_4_4", 0, 0, false}, {37, "IQ4_NL_4_8", 0, 0, false}, {38, "IQ4_NL_8_8", 0, 0, false},
    {39, "MXFP4", 32, 17, true},
};
} // namespace detail

// The entry for a valid type id; nullptr for removed or unknown ids.
inline const TypeInfo *type_info(uint32_t id) {
  if (id >= kTypeCount || !detail::kTypes[id].valid) return nullptr;
  return &detail::kTypes[id];
}

// Name of a valid type id ("Q4_K"); nullptr for removed or unknown ids.
inline const char *type_name(uint32_t id) {
  const TypeInfo *t = type_info(id);
  return t ? t->name : nullptr;
}

// Bytes of a row of n elements; 0 when the id is invalid, n < 0, or n is not a whole number of
// blocks (callers validate with is_row_valid first when they need to tell these apart).
inline uint64_t row_bytes(uint32_t id, int64_t n) {
  const TypeInfo *t = type_info(id);
  if (!t || n < 0 || static_cast<uint64_t>(n) % t->block_elems != 0) return 0;
  return static_cast<uint64_t>(n) / t->block_elems * t->block_bytes;
}

// True when a row of n elements is a whole number of blocks of this (valid) type.
inline bool is_row_valid(uint32_t id, int64_t n) {
  const TypeInfo *t = type_info(id);
  return t && n >= 0 && static_cast<uint64_t>(n) % t->block_elems == 0;
}

} // namespace wo::ggml

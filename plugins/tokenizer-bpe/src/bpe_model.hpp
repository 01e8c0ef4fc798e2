// Byte-level BPE merges over token ids.
//
// A pre-token's bytes start as the ids of their single-byte tokens; adjacent pairs are merged by
// rank (lowest first, leftmost on ties) until no ranked pair is left. Ranks live in a hash map
// keyed by the (left id, right id) pair, symbols in a linked list and candidate pairs in a min-heap,
// so a piece costs O(n log n). Results of short pieces are cached (natural text repeats its words).
#pragma once

#include "vocab.hpp"

#include <array>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace wo::tok {

class BpeModel {
public:
  // merges: (left text, right text) in rank order, texts in byte-level form. Merges whose parts or
  // result are not tokens can never apply and are skipped. Throws wo::Error(WO_ERR_FORMAT) when a
  // byte has no single-byte token.
  BpeModel(const Vocab &vocab, const std::vector<std::pair<std::string, std::string>> &merges,
           bool ignore_merges, const std::string &origin);

  // Append the ids of one pre-token (raw bytes).
  void encode_piece(std::string_view piece, std::vector<int32_t> &out) const;

  size_t n_merges() const { return ranks_.size(); }

private:
  struct Merge {
    int32_t rank;
    int32_t result;
  };
  static uint64_t key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  void merge(std::string_view piece, std::vector<int32_t> &out) const;

  const Vocab &vocab_;
  std::array<int32_t, 256> byte_id_{};
  std::unordered_map<uint64_t, Merge> ranks_;
  bool ignore_merges_;

  static constexpr size_t kCacheMaxPiece = 64;
  static constexpr size_t kCacheMaxEntries = 1 << 18;
  mutable std::mutex cache_mu_;
  mutable std::unordered_map<std::string, std::vector<int32_t>> cache_;
};

} // namespace wo::tok

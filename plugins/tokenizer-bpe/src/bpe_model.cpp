#include "bpe_model.hpp"

#include "byte_level.hpp"

#include <worker/sdk.hpp>

#include <algorithm>
#include <cstdio>

namespace wo::tok {

BpeModel::BpeModel(const Vocab &vocab, const std::vector<std::pair<std::string, std::string>> &merges,
                   bool ignore_merges, const std::string &origin)
    : vocab_(vocab), ignore_merges_(ignore_merges) {
  for (int b = 0; b < 256; ++b) {
    byte_id_[b] = vocab.find(byte_to_unicode(static_cast<unsigned char>(b)));
    if (byte_id_[b] < 0) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "0x%02X", b);
      throw Error(WO_ERR_FORMAT, origin + ": byte-level BPE vocabulary has no token for byte " + buf +
                                     " (text '" + byte_to_unicode(static_cast<unsigned char>(b)) + "')");
    }
  }
  ranks_.reserve(merges.size() * 2);
  std::string joined;
  for (size_t r = 0; r < merges.size(); ++r) {
    const auto &[l, rt] = merges[r];
    int32_t a = vocab.find(l), b = vocab.find(rt);
    joined.assign(l).append(rt);
    int32_t m = vocab.find(joined);
    if (a < 0 || b < 0 || m < 0) continue;
    ranks_.emplace(key(a, b), Merge{static_cast<int32_t>(r), m}); // the first (lowest) rank wins
  }
}

void BpeModel::encode_piece(std::string_view piece, std::vector<int32_t> &out) const {
  if (piece.empty()) return;
  if (piece.size() == 1) {
    out.push_back(byte_id_[static_cast<unsigned char>(piece[0])]);
    return;
  }
  const bool cacheable = piece.size() <= kCacheMaxPiece;
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mu_);
    auto it = cache_.find(std::string(piece));
    if (it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  const size_t start = out.size();
  int32_t whole = -1;
  if (ignore_merges_) {
    whole = vocab_.find(bytes_to_unicode(piece));
    if (whole >= 0 && vocab_.type[whole] == kTypeControl) whole = -1;
  }
  if (whole >= 0)
    out.push_back(whole); // a piece that is a token is that token
  else
    merge(piece, out);
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mu_);
    if (cache_.size() >= kCacheMaxEntries) cache_.clear();
    cache_.emplace(std::string(piece), std::vector<int32_t>(out.begin() + start, out.end()));
  }
}

void BpeModel::merge(std::string_view piece, std::vector<int32_t> &out) const {
  struct Sym {
    int32_t id;
    int32_t prev, next;
  };
  struct Cand {
    int32_t rank;
    int32_t left;
    int32_t lid, rid; // ids when queued: the pair is stale once either side has changed
  };
  struct Worse {
    bool operator()(const Cand &a, const Cand &b) const {
      return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
    }
  };
  thread_local std::vector<Sym> syms;
  thread_local std::vector<Cand> heap; // reused: its capacity survives between pieces
  const int32_t n = static_cast<int32_t>(piece.size());
  syms.resize(n);
  for (int32_t i = 0; i < n; ++i)
    syms[i] = {byte_id_[static_cast<unsigned char>(piece[i])], i - 1, i + 1 < n ? i + 1 : -1};

  heap.clear();
  auto consider = [&](int32_t left) {
    if (left < 0) return;
    int32_t right = syms[left].next;
    if (right < 0) return;
    auto it = ranks_.find(key(syms[left].id, syms[right].id));
    if (it == ranks_.end()) return;
    heap.push_back({it->second.rank, left, syms[left].id, syms[right].id});
    std::push_heap(heap.begin(), heap.end(), Worse{});
  };
  for (int32_t i = 0; i + 1 < n; ++i)
    consider(i);

  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), Worse{});
    Cand c = heap.back();
    heap.pop_back();
    Sym &l = syms[c.left];
    if (l.id != c.lid || l.next < 0) continue;
    Sym &r = syms[l.next];
    if (r.id != c.rid) continue;
    // Merge right into left.
    l.id = ranks_.find(key(c.lid, c.rid))->second.result;
    int32_t gone = l.next;
    l.next = r.next;
    if (r.next >= 0) syms[r.next].prev = c.left;
    syms[gone].id = -1;
    consider(l.prev);
    consider(c.left);
  }
  for (int32_t i = 0; i >= 0; i = syms[i].next)
    out.push_back(syms[i].id);
}

} // namespace wo::tok

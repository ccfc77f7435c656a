#include "engine/block_manager.h"

#include "base/check.h"
#include "base/hash.h"

namespace stet {

BlockManager::BlockManager(int n_blocks, int block_size)
    : block_size_(block_size),
      ref_(n_blocks, 0),
      lru_pos_(n_blocks),
      in_lru_(n_blocks, false),
      hash_of_(n_blocks),
      tokens_of_(n_blocks) {
  // Hand out low block ids first (free_ is a stack).
  for (int b = n_blocks - 1; b >= 0; --b) free_.push_back(b);
}

uint64_t BlockManager::ChainHash(uint64_t parent, const int32_t* tokens, int n) {
  uint64_t h = Fnv1a64(&parent, sizeof parent);
  return Fnv1a64(tokens, static_cast<size_t>(n) * sizeof(int32_t), h);
}

std::vector<int32_t> BlockManager::AcquirePrefix(const std::vector<int32_t>& tokens, int max_blocks,
                                                 std::vector<uint64_t>* hashes, uint64_t root) {
  std::vector<int32_t> out;
  uint64_t parent = root;
  lookup_tokens_ += static_cast<int64_t>(max_blocks) * block_size_;
  for (int b = 0; b < max_blocks; ++b) {
    const int32_t* t = tokens.data() + static_cast<size_t>(b) * block_size_;
    const uint64_t h = ChainHash(parent, t, block_size_);
    auto it = by_hash_.find(h);
    if (it == by_hash_.end()) break;
    const int32_t block = it->second;
    if (!std::equal(t, t + block_size_, tokens_of_[block].begin())) break;  // collision
    if (in_lru_[block]) {
      lru_.erase(lru_pos_[block]);
      in_lru_[block] = false;
    }
    ++ref_[block];
    out.push_back(block);
    if (hashes) hashes->push_back(h);
    parent = h;
  }
  hit_tokens_ += static_cast<int64_t>(out.size()) * block_size_;
  return out;
}

std::optional<int32_t> BlockManager::Allocate() {
  int32_t b;
  if (!free_.empty()) {
    b = free_.back();
    free_.pop_back();
  } else if (!lru_.empty()) {
    b = lru_.front();
    lru_.pop_front();
    in_lru_[b] = false;
    Unregister(b);
  } else {
    return std::nullopt;
  }
  STET_CHECK(ref_[b] == 0);
  ref_[b] = 1;
  return b;
}

void BlockManager::Release(int32_t block) {
  STET_CHECK(block >= 0 && block < n_blocks() && ref_[block] > 0);
  if (--ref_[block] > 0) return;
  if (hash_of_[block]) {
    lru_.push_back(block);
    lru_pos_[block] = std::prev(lru_.end());
    in_lru_[block] = true;
  } else {
    free_.push_back(block);
  }
}

void BlockManager::Register(int32_t block, uint64_t hash, const int32_t* tokens) {
  if (hash_of_[block] || by_hash_.count(hash)) return;
  by_hash_[hash] = block;
  hash_of_[block] = hash;
  tokens_of_[block].assign(tokens, tokens + block_size_);
}

void BlockManager::Unregister(int32_t block) {
  if (!hash_of_[block]) return;
  by_hash_.erase(*hash_of_[block]);
  hash_of_[block].reset();
  tokens_of_[block].clear();
}

}  // namespace stet

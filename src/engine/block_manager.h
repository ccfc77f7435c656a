// Owns the KV block pool: allocation, reference counts, and the prefix cache.
// A full block is named by a hash chained over its tokens and its parent's
// hash, so equal prefixes map to equal block chains; cached blocks nobody
// references stay until evicted in LRU order. A hit is verified token by token
// (a hash collision cannot alias content). Because every kernel is
// batch-invariant, a cached block holds exactly the bits a recompute would
// produce, so hits never change outputs.
#pragma once

#include <cstdint>
#include <list>
#include <optional>
#include <unordered_map>
#include <vector>

namespace stet {

class BlockManager {
 public:
  BlockManager(int n_blocks, int block_size);

  int n_blocks() const { return static_cast<int>(ref_.size()); }
  // Blocks that Allocate can still hand out (free + evictable cached).
  int available() const { return static_cast<int>(free_.size() + lru_.size()); }
  int used() const { return n_blocks() - available(); }

  static uint64_t ChainHash(uint64_t parent, const int32_t* tokens, int n);

  // The longest chain of cached full blocks matching tokens[0 .. max_blocks*block_size),
  // each referenced once more. hashes receives the chain hashes of those blocks.
  // `root` is the first block's parent hash: chains under different roots (the
  // requests' cache_salt) never share a block.
  std::vector<int32_t> AcquirePrefix(const std::vector<int32_t>& tokens, int max_blocks,
                                     std::vector<uint64_t>* hashes, uint64_t root = 0);
  // A block for new content, evicting the least recently used cached block if
  // no free block is left; nullopt when every block is referenced.
  std::optional<int32_t> Allocate();
  void Release(int32_t block);
  // Publishes a full block's content under its chain hash (no-op if the hash is
  // already cached by another block).
  void Register(int32_t block, uint64_t hash, const int32_t* tokens);

  // Prefix-cache counters, in tokens.
  int64_t lookup_tokens() const { return lookup_tokens_; }
  int64_t hit_tokens() const { return hit_tokens_; }

 private:
  void Unregister(int32_t block);

  int block_size_;
  std::vector<int> ref_;
  std::vector<int32_t> free_;
  std::list<int32_t> lru_;  // cached, unreferenced; front = least recently used
  std::vector<std::list<int32_t>::iterator> lru_pos_;
  std::vector<bool> in_lru_;
  std::unordered_map<uint64_t, int32_t> by_hash_;
  std::vector<std::optional<uint64_t>> hash_of_;
  std::vector<std::vector<int32_t>> tokens_of_;
  int64_t lookup_tokens_ = 0, hit_tokens_ = 0;
};

}  // namespace stet

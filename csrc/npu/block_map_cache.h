// The torch_npu adapter's block-map cache: the block map of a dense mask, built once by the
// FlashAttentionNpuFaBlockMap pre-pass and reused while the same mask tensor comes back unchanged (the layers of a
// model pass one mask), as python/npu_flash_attn/masks.py caches the twin's maps.
//
// Key: the mask's storage (its StorageImpl address, kept from reuse by a weak reference the entry holds), its data
// pointer and version counter (an in-place change bumps it), and `fields`: device, stream, sizes, strides, storage
// offset, dtype, the blocks and every problem field that changes the map (the caller fills them). An entry whose
// storage died is dropped at the next lookup. At most `capacity` entries, least recently used evicted first.
// Pure C++ (no torch header): `Weak` is anything with `bool expired() const`, `Value` the cached map.
// Not yet run on hardware; tests/test_npu_adapter_sources.py exercises it with g++.
#pragma once
#include <cstddef>
#include <cstdint>
#include <list>
#include <mutex>
#include <utility>
#include <vector>

namespace npu_fa_adapter {

struct BlockMapKey {
    const void* storage = nullptr;
    const void* data = nullptr;
    int64_t version = 0;
    std::vector<int64_t> fields;

    bool operator==(const BlockMapKey& o) const {
        return storage == o.storage && data == o.data && version == o.version && fields == o.fields;
    }
};

template <typename Value, typename Weak>
class BlockMapCache {
public:
    explicit BlockMapCache(size_t capacity) : capacity_(capacity) {}

    // The cached value for `key` (moved to the front), or false.
    bool Get(const BlockMapKey& key, Value& out) {
        std::lock_guard<std::mutex> lock(mu_);
        DropExpired();
        for (auto it = entries_.begin(); it != entries_.end(); ++it) {
            if (it->key == key) {
                entries_.splice(entries_.begin(), entries_, it);
                out = entries_.front().value;
                ++hits_;
                return true;
            }
        }
        ++misses_;
        return false;
    }

    void Put(BlockMapKey key, Weak alive, Value value) {
        std::lock_guard<std::mutex> lock(mu_);
        for (auto it = entries_.begin(); it != entries_.end(); ++it) {
            if (it->key == key) {
                entries_.erase(it);
                break;
            }
        }
        entries_.push_front(Entry{std::move(key), std::move(alive), std::move(value)});
        while (entries_.size() > capacity_) entries_.pop_back();
    }

    size_t Size() {
        std::lock_guard<std::mutex> lock(mu_);
        DropExpired();
        return entries_.size();
    }
    uint64_t Hits() {
        std::lock_guard<std::mutex> lock(mu_);
        return hits_;
    }
    uint64_t Misses() {
        std::lock_guard<std::mutex> lock(mu_);
        return misses_;
    }

private:
    struct Entry {
        BlockMapKey key;
        Weak alive;
        Value value;
    };
    void DropExpired() {
        for (auto it = entries_.begin(); it != entries_.end();) {
            it = it->alive.expired() ? entries_.erase(it) : std::next(it);
        }
    }

    std::mutex mu_;
    std::list<Entry> entries_;
    size_t capacity_;
    uint64_t hits_ = 0, misses_ = 0;
};

}  // namespace npu_fa_adapter

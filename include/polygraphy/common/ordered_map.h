// An insertion-ordered string-keyed map, the counterpart of Python's OrderedDict.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "polygraphy/common/exception.h"

namespace polygraphy {

/// Keeps keys in insertion order (inputs in model order, outputs in graph order) with O(1) lookup.
/// Iteration yields std::pair<std::string, V>. Setting an existing key keeps its position.
template <typename V>
class OrderedMap {
public:
    /// (key, value) items, in insertion order.
    using value_type = std::pair<std::string, V>;
    /// Iterator over the items, in order.
    using iterator = typename std::vector<value_type>::iterator;
    /// Read-only iterator over the items, in order.
    using const_iterator = typename std::vector<value_type>::const_iterator;

    OrderedMap() = default;
    /// Items in order; a repeated key keeps its first position and its last value.
    OrderedMap(std::initializer_list<value_type> items) {
        for (const auto& item : items) set(item.first, item.second);
    }

    /// Inserts or replaces the value under `key`; returns a reference to the stored value.
    V& set(const std::string& key, V value) {
        auto found = index_.find(key);
        if (found != index_.end()) {
            items_[found->second].second = std::move(value);
            return items_[found->second].second;
        }
        index_.emplace(key, items_.size());
        items_.emplace_back(key, std::move(value));
        return items_.back().second;
    }

    /// Whether `key` is present.
    bool contains(std::string_view key) const { return index_.find(std::string(key)) != index_.end(); }

    /// Pointer to the value, or nullptr when absent.
    const V* find(std::string_view key) const {
        auto found = index_.find(std::string(key));
        return found == index_.end() ? nullptr : &items_[found->second].second;
    }
    /// Pointer to the value, or nullptr when absent.
    V* find(std::string_view key) {
        auto found = index_.find(std::string(key));
        return found == index_.end() ? nullptr : &items_[found->second].second;
    }

    /// Value under `key`; throws InternalError when absent (callers check with contains() first).
    const V& at(std::string_view key) const {
        const V* value = find(key);
        if (!value) throw InternalError("OrderedMap has no key '" + std::string(key) + "'");
        return *value;
    }
    /// Value under `key`; throws InternalError when absent.
    V& at(std::string_view key) {
        V* value = find(key);
        if (!value) throw InternalError("OrderedMap has no key '" + std::string(key) + "'");
        return *value;
    }

    /// Removes `key` if present (O(n): shifts later items). Returns whether it was present.
    bool erase(std::string_view key) {
        auto found = index_.find(std::string(key));
        if (found == index_.end()) return false;
        const std::size_t position = found->second;
        items_.erase(items_.begin() + static_cast<std::ptrdiff_t>(position));
        index_.erase(found);
        for (auto& entry : index_)
            if (entry.second > position) --entry.second;
        return true;
    }

    /// Keys in order.
    std::vector<std::string> keys() const {
        std::vector<std::string> result;
        result.reserve(items_.size());
        for (const auto& item : items_) result.push_back(item.first);
        return result;
    }

    /// Number of items.
    std::size_t size() const { return items_.size(); }
    /// Whether there are no items.
    bool empty() const { return items_.empty(); }
    /// Removes every item.
    void clear() {
        items_.clear();
        index_.clear();
    }
    /// First item.
    iterator begin() { return items_.begin(); }
    /// Past the last item.
    iterator end() { return items_.end(); }
    /// First item (read-only).
    const_iterator begin() const { return items_.begin(); }
    /// Past the last item (read-only).
    const_iterator end() const { return items_.end(); }
    /// Item at `position` in insertion order (read-only; unchecked).
    const value_type& operator[](std::size_t position) const { return items_[position]; }
    /// Item at `position` in insertion order (unchecked).
    value_type& operator[](std::size_t position) { return items_[position]; }

private:
    std::vector<value_type> items_;
    std::unordered_map<std::string, std::size_t> index_;
};

}  // namespace polygraphy

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
    using value_type = std::pair<std::string, V>;
    using iterator = typename std::vector<value_type>::iterator;
    using const_iterator = typename std::vector<value_type>::const_iterator;

    OrderedMap() = default;
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

    bool contains(std::string_view key) const { return index_.find(std::string(key)) != index_.end(); }

    /// Pointer to the value, or nullptr when absent.
    const V* find(std::string_view key) const {
        auto found = index_.find(std::string(key));
        return found == index_.end() ? nullptr : &items_[found->second].second;
    }
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

    std::vector<std::string> keys() const {
        std::vector<std::string> result;
        result.reserve(items_.size());
        for (const auto& item : items_) result.push_back(item.first);
        return result;
    }

    std::size_t size() const { return items_.size(); }
    bool empty() const { return items_.empty(); }
    void clear() {
        items_.clear();
        index_.clear();
    }
    iterator begin() { return items_.begin(); }
    iterator end() { return items_.end(); }
    const_iterator begin() const { return items_.begin(); }
    const_iterator end() const { return items_.end(); }
    const value_type& operator[](std::size_t position) const { return items_[position]; }
    value_type& operator[](std::size_t position) { return items_[position]; }

private:
    std::vector<value_type> items_;
    std::unordered_map<std::string, std::size_t> index_;
};

}  // namespace polygraphy

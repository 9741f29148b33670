#include "polygraphy/common/run_arena.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "common/aligned_memory.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/tensor.h"

namespace polygraphy {
namespace {

constexpr std::size_t kAlignment = 64;
constexpr uint64_t kStillAlive = std::numeric_limits<uint64_t>::max();

struct Block {
    explicit Block(std::size_t bytes)
        : size(bytes), owner(allocate_aligned(bytes)), memory(static_cast<char*>(owner.get())) {
        if (!memory) throw PolygraphyException("Could not allocate " + std::to_string(bytes) + " bytes for tensors");
    }
    Block(const Block&) = delete;
    Block& operator=(const Block&) = delete;
    std::size_t size;
    std::shared_ptr<void> owner;  // allocate_aligned: a large block gets huge pages
    char* memory;
};

}  // namespace

struct RunArena::State : std::enable_shared_from_this<RunArena::State> {
    struct Planned {
        std::size_t size;
        std::size_t offset;
        bool escapes;  // alive at the end of the planned run: from malloc
    };
    struct Recorded {
        std::size_t size;
        uint64_t allocated;
        uint64_t freed;  // kStillAlive until freed during the run
    };

    mutable std::mutex mutex;
    std::size_t max_block_bytes = 0;
    bool running = false;
    bool stopped = false;
    uint64_t generation = 0;  // runs started

    std::vector<Planned> plan;
    std::size_t block_bytes = 0;  // the plan's block size
    std::shared_ptr<Block> block;
    std::map<std::size_t, std::size_t> live;  // offset -> end of block buffers not yet freed

    std::vector<Recorded> record;  // this run's large buffers
    uint64_t clock = 0;            // orders this run's allocations and frees
    bool matches = true;           // every allocation so far had its planned size
    bool fell_back = false;        // a planned place was still in use
    std::size_t from_block = 0;
    Stats stats;

    bool place_is_free(std::size_t offset, std::size_t size) const {
        auto after = live.lower_bound(offset);
        if (after != live.end() && after->first < offset + size) return false;
        if (after == live.begin()) return true;
        return std::prev(after)->second <= offset;
    }

    std::shared_ptr<void> allocate(std::size_t nbytes, bool zero_fill) {
        void* memory = nullptr;
        std::shared_ptr<Block> from;
        std::size_t index = 0;
        uint64_t run = 0;
        {
            std::lock_guard<std::mutex> lock(mutex);
            if (stopped) return nullptr;
            if (record.size() == kMaxBuffers) {
                stop();
                return nullptr;
            }
            index = record.size();
            run = generation;
            record.push_back({nbytes, clock++, kStillAlive});
            if (matches && (index >= plan.size() || plan[index].size != nbytes)) matches = false;
            if (matches && block && !plan[index].escapes) {
                const Planned& place = plan[index];
                if (place_is_free(place.offset, place.size)) {
                    memory = block->memory + place.offset;
                    live.emplace(place.offset, place.offset + place.size);
                    from = block;
                    ++from_block;
                } else {
                    fell_back = true;
                }
            }
        }
        if (!memory) {
            memory = std::aligned_alloc(kAlignment, nbytes);
            if (!memory)
                throw PolygraphyException("Could not allocate " + std::to_string(nbytes) + " bytes for a tensor");
        }
        if (zero_fill) std::memset(memory, 0, nbytes);
        auto self = shared_from_this();
        return std::shared_ptr<void>(
            memory, [self, from, run, index](void* pointer) { self->release(pointer, from.get(), run, index); });
    }

    void release(void* pointer, const Block* from, uint64_t run, std::size_t index) {
        std::lock_guard<std::mutex> lock(mutex);
        if (!from)
            std::free(pointer);
        else if (from == block.get())
            live.erase(static_cast<std::size_t>(static_cast<char*>(pointer) - block->memory));
        // Frees after the run ended leave the buffer "alive at the end": it escaped the run.
        if (running && run == generation && index < record.size()) record[index].freed = clock++;
    }

    void stop() {
        stopped = true;
        plan.clear();
        block.reset();
        block_bytes = 0;
        live.clear();
    }

    void begin() {
        ++generation;
        running = true;
        record.clear();
        clock = 0;
        matches = true;
        fell_back = false;
        from_block = 0;
        if (!block && block_bytes) {
            try {
                block = std::make_shared<Block>(block_bytes);
            } catch (const std::exception&) {
                stop();  // the runs go on with malloc
            }
        }
    }

    void end() {
        running = false;
        bool same = matches && !fell_back && record.size() == plan.size();
        for (std::size_t i = 0; same && i < record.size(); ++i)
            same = (record[i].freed == kStillAlive) == plan[i].escapes;
        stats.buffers = record.size();
        stats.from_block = from_block;
        stats.replanned = !same && !stopped;
        if (stats.replanned) replan();
        stats.block_bytes = block_bytes;
        stats.stopped = stopped;
    }

    // Places the recorded buffers as a best-fit allocator would have placed them in one block, so that
    // a buffer reuses memory just freed, which is still in cache.
    void replan() {
        struct Event {
            uint64_t time;
            std::size_t index;
            bool allocates;
        };
        std::vector<Event> events;
        plan.assign(record.size(), Planned{0, 0, false});
        for (std::size_t i = 0; i < record.size(); ++i) {
            plan[i].size = record[i].size;
            plan[i].escapes = record[i].freed == kStillAlive;
            if (plan[i].escapes) continue;
            events.push_back({record[i].allocated, i, true});
            events.push_back({record[i].freed, i, false});
        }
        std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) { return a.time < b.time; });
        std::map<std::size_t, std::size_t> gaps;  // offset -> size
        std::size_t top = 0;
        for (const Event& event : events) {
            Planned& place = plan[event.index];
            if (event.allocates) {
                auto best = gaps.end();
                for (auto gap = gaps.begin(); gap != gaps.end(); ++gap)
                    if (gap->second >= place.size && (best == gaps.end() || gap->second < best->second)) best = gap;
                if (best != gaps.end()) {
                    place.offset = best->first;
                    const std::size_t rest = best->second - place.size;
                    gaps.erase(best);
                    if (rest) gaps.emplace(place.offset + place.size, rest);
                } else if (!gaps.empty() && std::prev(gaps.end())->first + std::prev(gaps.end())->second == top) {
                    place.offset = std::prev(gaps.end())->first;  // grow the block from its last gap
                    gaps.erase(std::prev(gaps.end()));
                    top = place.offset + place.size;
                } else {
                    place.offset = top;
                    top += place.size;
                }
            } else {
                auto inserted = gaps.emplace(place.offset, place.size).first;
                if (auto next = std::next(inserted);
                    next != gaps.end() && inserted->first + inserted->second == next->first) {
                    inserted->second += next->second;
                    gaps.erase(next);
                }
                if (inserted != gaps.begin()) {
                    auto previous = std::prev(inserted);
                    if (previous->first + previous->second == inserted->first) {
                        previous->second += inserted->second;
                        gaps.erase(inserted);
                    }
                }
            }
        }
        if (top > max_block_bytes) {
            stop();
            return;
        }
        block_bytes = top;
        // Buffers still in the old block (kept by the caller) keep it alive; place_is_free() keeps
        // a kept buffer's place from being handed out while the block is in use.
        if (block && block->size < top) {
            block.reset();
            live.clear();
        }
    }
};

namespace {
thread_local RunArena::State* current_arena = nullptr;
}

RunArena::RunArena(std::size_t max_block_bytes) : state_(std::make_shared<State>()) {
    state_->max_block_bytes = max_block_bytes ? max_block_bytes : static_cast<std::size_t>(tensor_memory_limit() / 4);
}

RunArena::~RunArena() = default;

RunArena::Stats RunArena::last_run() const {
    std::lock_guard<std::mutex> lock(state_->mutex);
    return state_->stats;
}

RunArena::Scope::Scope(RunArena& arena) : arena_(arena) {
    if (current_arena) return;
    State& state = *arena.state_;
    std::lock_guard<std::mutex> lock(state.mutex);
    if (state.running || state.stopped) return;
    state.begin();
    current_arena = &state;
    installed_ = true;
}

RunArena::Scope::~Scope() {
    if (!installed_) return;
    current_arena = nullptr;
    State& state = *arena_.state_;
    std::lock_guard<std::mutex> lock(state.mutex);
    state.end();
}

namespace detail {
std::shared_ptr<void> allocate_in_run_arena(std::size_t nbytes, bool zero_fill) {
    if (!current_arena || nbytes < RunArena::kMinBytes) return nullptr;
    return current_arena->allocate(nbytes, zero_fill);
}
}  // namespace detail

}  // namespace polygraphy

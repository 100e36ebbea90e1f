// A sum of parts handed in by several threads, made in one fixed order, so that its bytes do not
// depend on the thread count (the streaming backward pass's parameter gradients).
#pragma once

#include "core/matrix.hpp"

#include <cstddef>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

namespace attntrace {

// Sums parts 0, 1, 2, … in that order, whichever thread hands them in and in whatever order
// they arrive (a part waits until those before it are added): the totals are the same bytes
// for any thread count. Each part is a list of matrices, one per total.
class OrderedSum {
public:
    explicit OrderedSum(std::vector<Matrix> zeros) : totals_(std::move(zeros)) {}
    void add(std::size_t index, std::vector<Matrix> parts) {
        const std::lock_guard lock(mutex_);
        pending_.emplace(index, std::move(parts));
        while (!pending_.empty() && pending_.begin()->first == next_) {
            const std::vector<Matrix>& first = pending_.begin()->second;
            for (std::size_t i = 0; i < totals_.size() && i < first.size(); ++i)
                if (first[i].size() > 0) totals_[i] += first[i];
            pending_.erase(pending_.begin());
            ++next_;
        }
    }
    Matrix& total(std::size_t i) { return totals_[i]; }

private:
    std::mutex mutex_;
    std::map<std::size_t, std::vector<Matrix>> pending_;
    std::size_t next_ = 0;
    std::vector<Matrix> totals_;
};

}  // namespace attntrace

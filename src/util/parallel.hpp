// Exceptions and OpenMP: an exception that leaves a parallel region ends the program through
// std::terminate (exit 134), so an allocation that fails inside one (Eigen's products and
// per-thread scratch allocate) would never become the usual "out of memory" error. Every
// region whose body can throw runs it through RegionErrors, which keeps the first exception
// and throws it again once the region has ended.
#pragma once

#include <exception>
#include <utility>

namespace attntrace {

// Below about this much work a loop runs on the calling thread alone. Waking the other
// threads and waiting for the last of them costs tens of microseconds when they are idle,
// and up to a time slice of the scheduler (milliseconds) when another process holds a core;
// a loop of a million simple operations takes about a millisecond on one thread.
// docs/performance.md ("Small inputs") gives the measurements behind the number.
inline constexpr double parallel_work_threshold = 1e6;

// Whether a loop of about `operations` arithmetic operations (an exp or a tanh counted as
// ten) is worth the team of threads: the `if` clause of every parallel region. The work is
// split the same way either way, so the numbers do not change.
inline bool worth_threads(double operations) { return operations >= parallel_work_threshold; }

class RegionErrors {
public:
    // Runs `body`; an exception is kept (the first one wins) instead of leaving the region.
    template <typename Body>
    void run(Body&& body) noexcept {
        try {
            std::forward<Body>(body)();
        } catch (...) {
            keep(std::current_exception());
        }
    }

    // Called after the region: throws the kept exception, if any.
    void rethrow() const {
        if (first_) std::rethrow_exception(first_);
    }

private:
    void keep(std::exception_ptr error) noexcept {
#pragma omp critical(attntrace_region_errors)
        if (!first_) first_ = std::move(error);
    }

    std::exception_ptr first_;
};

}  // namespace attntrace

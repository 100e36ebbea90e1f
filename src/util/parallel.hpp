// Exceptions and OpenMP: an exception that leaves a parallel region ends the program through
// std::terminate (exit 134), so an allocation that fails inside one (Eigen's products and
// per-thread scratch allocate) would never become the usual "out of memory" error. Every
// region whose body can throw runs it through RegionErrors, which keeps the first exception
// and throws it again once the region has ended.
#pragma once

#include <exception>
#include <utility>

namespace attntrace {

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

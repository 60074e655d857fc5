// Timers: sleep_for on IORING_OP_TIMEOUT, and deadlines on any op via a linked timeout.
#pragma once

#include <chrono>

#include "ipcrt/ops.hpp"

namespace ipcrt {

namespace detail {
template <class Prep>
class sleep_op : public op<Prep> {
public:
    using op<Prep>::op;
    sleep_op(op<Prep>&& o) noexcept : op<Prep>(std::move(o)) {}
    // The kernel reports an expired timer as -ETIME; for a sleep that is success.
    int await_resume() noexcept {
        const int r = op<Prep>::await_resume();
        return r == -ETIME ? 0 : r;
    }
};
}  // namespace detail

/// Suspends the task for d; yields 0, or -ECANCELED if the task was cancelled.
template <class Rep, class Period>
auto sleep_for(std::chrono::duration<Rep, Period> d) {
    auto o = async_timeout(d);
    return detail::sleep_op<typename decltype(o)::prep_type>(std::move(o));
}

/// Sleeps until the steady clock reaches t.
template <class Duration>
auto sleep_until(std::chrono::time_point<std::chrono::steady_clock, Duration> t) {
    return sleep_for(t - std::chrono::steady_clock::now());
}

/// Gives op a deadline: it yields -ECANCELED if not complete after d. Same as op.timeout(d).
template <class Op, class Rep, class Period>
decltype(auto) with_timeout(Op&& o, std::chrono::duration<Rep, Period> d) {
    return std::move(o).timeout(d);
}

}  // namespace ipcrt

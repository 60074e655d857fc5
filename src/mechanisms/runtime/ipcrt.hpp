#pragma once
// The ipcrt side of the runtime suite: how a bench's root task is driven (drive_param()).
#include <ipcrt/ipcrt.hpp>

#include "mechanisms/runtime/common.hpp"

namespace ipclab::rt {

namespace detail {
template <class T>
ipcrt::task<T> spawned_root(ipcrt::task<T> body) {
  co_return co_await ipcrt::spawn(std::move(body));
}
}  // namespace detail

/// Runs `body` on rt to completion as `drive` says: block_on runs it as the root task
/// (rt.block_on(body)); spawned spawns it from the root task and co_awaits its join handle, so the
/// bench runs as a spawned task under a root that joins it.
template <class T>
T run_driven(ipcrt::runtime& rt, bool spawned, ipcrt::task<T> body) {
  return spawned ? rt.block_on(detail::spawned_root(std::move(body))) : rt.block_on(std::move(body));
}

}  // namespace ipclab::rt

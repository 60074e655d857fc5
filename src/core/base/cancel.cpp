#include "core/base/cancel.hpp"

namespace ipclab {

namespace {

std::atomic<const std::atomic<int>*> g_flag{nullptr};

}  // namespace

bool abort_requested() {
  const std::atomic<int>* f = g_flag.load(std::memory_order_relaxed);
  return f && f->load(std::memory_order_relaxed) != 0;
}

void set_abort_flag(const std::atomic<int>* flag) { g_flag.store(flag); }

}  // namespace ipclab

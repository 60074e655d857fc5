#include "ipcrt/runtime.hpp"

#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <stdexcept>
#include <system_error>

#include "ipcrt/buf_ring.hpp"

namespace ipcrt {

namespace detail {

void promise_base::on_destroy() noexcept {
  if (runtime* rt = runtime::current()) rt->unschedule(&node);
}

void request_cancel(promise_base& root) noexcept {
  root.cancelled = true;
  if (root.current_op && root.current_op->in_flight)
    if (runtime* rt = runtime::current()) rt->cancel_op(root.current_op);
}

namespace {
// Frame free lists are per thread; this object frees them when the thread exits.
struct frame_pool_cleanup {
  ~frame_pool_cleanup() {
    for (auto& head : tls_frames.head)
      while (void* p = head) {
        head = *static_cast<void**>(p);
        ::operator delete(p);
      }
  }
};

// Carries a task frame to another runtime; the target adopts it as a detached root.
struct spawn_node final : remote_node {
  std::coroutine_handle<promise<void>> h;
  explicit spawn_node(std::coroutine_handle<promise<void>> c) : h(c) {}
  void run(runtime& rt) override {
    h.promise().detached = true;
    rt.adopt(h.promise());
    rt.schedule(&h.promise().node);
    delete this;
  }
  void discard() noexcept override {
    h.destroy();
    delete this;
  }
};

// Tags in the low bits of user_data (op_state and remote_node are at least 8-aligned).
constexpr uint64_t kTagOp = 0;
constexpr uint64_t kTagRemote = 1;   // a remote_node delivered to us by MSG_RING
constexpr uint64_t kTagMsgSent = 2;  // our MSG_RING to another runtime completed
constexpr uint64_t kTagMask = 7;
}  // namespace

void frame_pool_register_cleanup() noexcept { static thread_local frame_pool_cleanup cleanup; }

void* frame_alloc_slow(std::size_t cls) {
  frame_pool_register_cleanup();
  return ::operator new(cls* kFrameGranule);
}

}  // namespace detail

using detail::op_state;
using detail::remote_node;

runtime::runtime(const options& opt)
    : opt_(opt), features_(&features::get()), ring_(opt), budget_(opt.budget()) {
  if (detail::tls_runtime) throw std::logic_error("ipcrt: this thread already has a runtime");
  use_msg_ring_ = features_->msg_ring;
  efd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (efd_ < 0) throw std::system_error(errno, std::system_category(), "eventfd");
  efd_op_ = acquire_op();
  efd_op_->internal = true;
  arm_eventfd();
  if (unsigned n = opt.registered_files()) {
    if (int r = io_uring_register_files_sparse(ring_.native(), n); r < 0) {
      close(efd_);
      throw std::system_error(-r, std::system_category(), "io_uring_register_files_sparse");
    }
  }
  if (opt.fixed_buffer_count() && opt.fixed_buffer_size()) {
    const std::size_t sz = (opt.fixed_buffer_size() + 4095) / 4096 * 4096;
    // Huge: whole 2 MiB pages, so that no buffer shares one with other memory.
    const std::size_t align = opt.huge_buffers() ? std::size_t(2) << 20 : 4096;
    const std::size_t total = (sz * opt.fixed_buffer_count() + align - 1) / align * align;
    void* mem = std::aligned_alloc(align, total);
    if (!mem) {
      close(efd_);
      throw std::bad_alloc();
    }
    if (opt.huge_buffers()) madvise(mem, total, MADV_HUGEPAGE);  // THP "never": 4 KiB pages, as without
    fixed_mem_ = {static_cast<std::byte*>(mem), &std::free};
    std::vector<iovec> iov(opt.fixed_buffer_count());
    for (unsigned i = 0; i < iov.size(); ++i)
      iov[i] = {static_cast<std::byte*>(mem) + i * sz, opt.fixed_buffer_size()};
    if (int r = io_uring_register_buffers(ring_.native(), iov.data(), static_cast<unsigned>(iov.size()));
        r < 0) {
      close(efd_);
      throw std::system_error(-r, std::system_category(), "io_uring_register_buffers");
    }
  }
  detail::tls_runtime = this;
}

runtime::~runtime() {
  closing_ = true;
  // Unfinished spawned tasks: destroying a frame runs its awaiters' destructors, which cancel their
  // operations and, where the kernel may touch frame memory, wait for the CQE.
  // Only detached tasks are ours to destroy; one that is joined is destroyed by its join_handle,
  // which may sit in another frame (so destroying that frame detaches it and the next pass gets it).
  for (;;) {
    std::vector<detail::promise_base*> detached;
    for (detail::promise_base* p = alive_; p; p = p->alive_next)
      if (p->detached) detached.push_back(p);
    if (detached.empty()) break;
    for (detail::promise_base* p : detached) p->node.handle.destroy();
  }
  // Handles held outside any task outlive us (documented misuse): cut them loose.
  while (detail::promise_base* p = alive_) {
    alive_ = p->alive_next;
    p->alive_head = nullptr;
    p->alive_prev = p->alive_next = nullptr;
  }
  if (inflight_ || efd_op_->in_flight) {
    io_uring_sqe* s = ring_.get_sqe();
    io_uring_prep_cancel64(s, 0, IORING_ASYNC_CANCEL_ANY);
    io_uring_sqe_set_data64(s, 0);
  }
  while (inflight_ || efd_op_->in_flight) {
    ring_.submit_and_wait(1);
    reap();
  }
  drain_remote();
  close(efd_);
  detail::tls_runtime = nullptr;
}

void runtime::run() {
  stopping_ = false;
  run_until([this] { return stopping_; });
}

void runtime::stop() {
  post([this] { stopping_ = true; });
}

void runtime::spawn_detached(task<void> t) { send_remote(new detail::spawn_node(t.release())); }

int runtime::register_files(std::span<const int> fds) {
  io_uring_unregister_files(ring_.native());
  return io_uring_register_files(ring_.native(), fds.data(), static_cast<unsigned>(fds.size()));
}

int runtime::update_files(unsigned off, std::span<const int> fds) {
  return io_uring_register_files_update(ring_.native(), off, fds.data(), static_cast<unsigned>(fds.size()));
}

int runtime::register_buffers(std::span<const iovec> bufs) {
  io_uring_unregister_buffers(ring_.native());
  return io_uring_register_buffers(ring_.native(), bufs.data(), static_cast<unsigned>(bufs.size()));
}

std::span<std::byte> runtime::fixed_buffer(unsigned i) noexcept {
  if (!fixed_mem_ || i >= opt_.fixed_buffer_count()) return {};
  const std::size_t sz = (opt_.fixed_buffer_size() + 4095) / 4096 * 4096;
  return {fixed_mem_.get() + i * sz, opt_.fixed_buffer_size()};
}

namespace {
struct timer_later {
  template <class E>
  bool operator()(const E& a, const E& b) const noexcept {
    return a.deadline > b.deadline;
  }
};
}  // namespace

uint64_t runtime::now_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

void runtime::add_timer(op_state* s, uint64_t deadline_ns) {
  s->timer = true;
  s->in_flight = true;
  ++active_timers_;
  timers_.push_back({deadline_ns, s, s->gen});
  std::push_heap(timers_.begin(), timers_.end(), timer_later{});
}

void runtime::fire_timers(uint64_t now) noexcept {
  while (!timers_.empty() && timers_.front().deadline <= now) {
    std::pop_heap(timers_.begin(), timers_.end(), timer_later{});
    const timer_entry e = timers_.back();
    timers_.pop_back();
    // A cancelled or abandoned timer already left; its state may be serving someone else now.
    if (e.st->gen != e.gen || !e.st->in_flight) continue;
    e.st->in_flight = false;
    e.st->res = 0;
    --active_timers_;
    schedule(e.st->waiter);
  }
}

void runtime::poll_idle() {
  uint64_t now = now_ns();
  uint64_t until = now + uint64_t(opt_.idle_poll_us()) * 1000u;
  if (!timers_.empty()) until = std::min(until, timers_.front().deadline);
  // GETEVENTS runs deferred task work (DEFER_TASKRUN), which is where MSG_RING deliveries land.
  while (now < until) {
    ring_.submit_and_get_events();
    if (ring_.cq_ready()) return;
    now = now_ns();
  }
}

void runtime::turn(bool idle) {
  inline_yields_ = budget_;
  if (!timers_.empty()) {
    fire_timers(now_ns());
    idle = idle && !head_;
  }
  if (idle && opt_.idle_poll_us() && ring_.cq_ready() == 0) poll_idle();
  if (idle) {
    if (ring_.cq_ready() == 0) {
      if (timers_.empty()) {
        ring_.submit_and_wait(1);
      } else {
        const uint64_t now = now_ns();
        const uint64_t wait = timers_.front().deadline > now ? timers_.front().deadline - now : 0;
        __kernel_timespec ts{static_cast<long long>(wait / 1000000000u),
                             static_cast<long long>(wait % 1000000000u)};
        io_uring_cqe* cqe = nullptr;
        if (wait)
          io_uring_submit_and_wait_timeout(ring_.native(), &cqe, 1, &ts, nullptr);
        else if (ring_.pending())
          ring_.submit();
      }
    } else if (ring_.pending()) {
      ring_.submit();
    }
  } else if (ring_.pending() || (inflight_ && ring_.needs_enter())) {
    ring_.submit_and_get_events();
  }
  reap();
  if (!timers_.empty() && !head_) fire_timers(now_ns());
}

void runtime::reap() {
  io_uring_cqe* cqes[64];
  for (;;) {
    const unsigned n = ring_.peek_batch(cqes, 64);
    if (n == 0) return;
    for (unsigned i = 0; i < n; ++i) dispatch(cqes[i]);
    ring_.cq_advance(n);
    if (n < 64) return;
  }
}

void runtime::dispatch(const io_uring_cqe* c) {
  const uint64_t ud = c->user_data;
  if (ud == 0) return;  // linked timeouts and cancel requests: their effect shows on the target op
  switch (ud & detail::kTagMask) {
    case detail::kTagOp: {
      auto* s = reinterpret_cast<op_state*>(ud);
      if (s == efd_op_) {
        s->in_flight = false;
        if (!closing_) {
          drain_remote();
          arm_eventfd();
        }
        return;
      }
      complete(s, c->res, c->flags);
      return;
    }
    case detail::kTagRemote: {
      auto* n = reinterpret_cast<remote_node*>(ud & ~detail::kTagMask);
      n->handoff.load(std::memory_order_acquire);
      if (closing_)
        n->discard();
      else
        n->run(*this);
      return;
    }
    case detail::kTagMsgSent: {
      --inflight_;
      if (c->res < 0) {
        // The target ring refused (e.g. CQ overflow); the locked inbox always works.
        auto* n = reinterpret_cast<remote_node*>(ud & ~detail::kTagMask);
        n->target->push_locked(n);
      }
      return;
    }
    default:
      return;
  }
}

void runtime::complete(op_state* s, int32_t res, uint32_t flags) {
  if (s->multishot) {
    const bool more = flags & IORING_CQE_F_MORE;
    if (!more) {
      s->in_flight = false;
      --inflight_;
      s->res = res <= 0 ? res : -ENODATA;
    }
    if (s->orphaned) {
      orphan_result(s, res, flags);
      if (!more) release_op(s);
      return;
    }
    s->backlog.emplace_back(res, flags);
    sched_node_wake(s);
    return;
  }
  s->in_flight = false;
  --inflight_;
  if (s->orphaned) {
    orphan_result(s, res, flags);
    release_op(s);
    return;
  }
  s->res = res;
  s->flags = flags;
  schedule(s->waiter);
}

bool runtime::sched_node_wake(op_state* s) noexcept {
  if (!s->waiter) return false;
  schedule(std::exchange(s->waiter, nullptr));
  return true;
}

void runtime::orphan_result(op_state* s, int32_t res, uint32_t flags) noexcept {
  if (res >= 0 && s->result_is_fd) ::close(res);
  if ((flags & IORING_CQE_F_BUFFER) && s->provided)
    s->provided->recycle(static_cast<uint16_t>(flags >> IORING_CQE_BUFFER_SHIFT));
}

void runtime::abandon(op_state* s, bool drain) {
  if (s->timer) {
    // Userspace timers touch no kernel state: dropping the heap entry (by generation) is enough.
    if (s->in_flight) --active_timers_;
    s->in_flight = false;
    release_op(s);
    return;
  }
  for (std::size_t i = s->backlog_head; i < s->backlog.size(); ++i)
    orphan_result(s, s->backlog[i].first, s->backlog[i].second);
  s->backlog.clear();
  s->backlog_head = 0;
  if (!s->in_flight) {
    release_op(s);
    return;
  }
  s->orphaned = true;
  s->waiter = nullptr;
  cancel_op(s);
  // The pool never frees op_state memory while the runtime lives, so polling s after release is safe.
  while (drain && s->in_flight && s->orphaned) {
    ring_.submit_and_wait(1);
    reap();
  }
}

void runtime::cancel_op(op_state* s) {
  if (s->timer) {
    if (s->in_flight) {
      s->in_flight = false;
      s->res = -ECANCELED;
      --active_timers_;
      schedule(s->waiter);
    }
    return;
  }
  io_uring_sqe* sqe = ring_.get_sqe();
  io_uring_prep_cancel64(sqe, reinterpret_cast<uint64_t>(s), 0);
  io_uring_sqe_set_data64(sqe, 0);
}

void runtime::unschedule(detail::sched_node* n) noexcept {
  detail::sched_node* prev = nullptr;
  for (detail::sched_node* it = head_; it; prev = it, it = it->next) {
    if (it != n) continue;
    (prev ? prev->next : head_) = n->next;
    if (tail_ == n) tail_ = prev;
    return;
  }
}

void runtime::adopt(detail::promise_base& p) noexcept {
  p.alive_head = &alive_;
  p.alive_prev = nullptr;
  p.alive_next = alive_;
  if (alive_) alive_->alive_prev = &p;
  alive_ = &p;
}

op_state* runtime::grow_pool() {
  constexpr std::size_t kChunk = 256;
  auto chunk = std::make_unique<op_state[]>(kChunk);
  for (std::size_t i = 0; i < kChunk; ++i) {
    chunk[i].next_free = free_ops_;
    free_ops_ = &chunk[i];
  }
  op_chunks_.push_back(std::move(chunk));
  return free_ops_;
}

void runtime::arm_eventfd() {
  io_uring_sqe* s = ring_.get_sqe();
  io_uring_prep_read(s, efd_, &efd_value_, sizeof efd_value_, 0);
  io_uring_sqe_set_data(s, efd_op_);
  efd_op_->in_flight = true;
}

void runtime::send_remote(remote_node* n) {
  n->target = this;
  n->handoff.store(1, std::memory_order_release);
  runtime* src = current();
  if (src && src != this && use_msg_ring_ && src->use_msg_ring_ && !closing_) {
    io_uring_sqe* s = src->ring_.get_sqe();
    io_uring_prep_msg_ring(s, ring_.fd(), 0, reinterpret_cast<uint64_t>(n) | detail::kTagRemote, 0);
    io_uring_sqe_set_data64(s, reinterpret_cast<uint64_t>(n) | detail::kTagMsgSent);
    ++src->inflight_;
    src->remote_unsent_ = true;
    return;
  }
  push_locked(n);
}

void runtime::push_locked(remote_node* n) {
  // Everything happens under the lock: once n is visible the target may run it (say, a stop
  // request) and destroy itself, so this runtime must not be touched after unlocking.
  std::lock_guard g(inbox_mu_);
  n->next = nullptr;
  (inbox_tail_ ? inbox_tail_->next : inbox_head_) = n;
  inbox_tail_ = n;
  if (!efd_signalled_.exchange(true, std::memory_order_acq_rel)) {
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t w = ::write(efd_, &one, sizeof one);
  }
}

void runtime::drain_remote() {
  efd_signalled_.store(false, std::memory_order_release);
  remote_node* n;
  {
    std::lock_guard g(inbox_mu_);
    n = inbox_head_;
    inbox_head_ = inbox_tail_ = nullptr;
  }
  while (n) {
    remote_node* next = n->next;
    n->handoff.load(std::memory_order_acquire);
    if (closing_)
      n->discard();
    else
      n->run(*this);
    n = next;
  }
}

}  // namespace ipcrt

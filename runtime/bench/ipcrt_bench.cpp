// ipcrt_bench: per-operation cost of the runtime's primitives -- switch (yield), spawn+join, channel
// message, timer arm+fire -- each timed over N operations on one thread. Not a test; numbers go in
// runtime/README.md. Usage: ipcrt_bench [N=1000000]
//
// Build: cmake -S runtime -B /tmp/ipcrt-build -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build
// /tmp/ipcrt-build --target ipcrt_bench
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "ipcrt/ipcrt.hpp"

using namespace ipcrt;
using clk = std::chrono::steady_clock;

namespace {

double ns_since(clk::time_point t0, std::size_t ops) {
  return std::chrono::duration<double, std::nano>(clk::now() - t0).count() / static_cast<double>(ops);
}

task<void> yielder(std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) co_await yield();
}

task<double> bench_switch(std::size_t n) {
  const auto t0 = clk::now();
  auto a = spawn(yielder(n / 2));
  auto b = spawn(yielder(n / 2));
  co_await a;
  co_await b;
  co_return ns_since(t0, n);
}

task<int> leaf(int i) { co_return i; }

task<double> bench_spawn_join(std::size_t n) {
  constexpr std::size_t kBatch = 1024;
  std::vector<join_handle<int>> hs;
  hs.reserve(kBatch);
  long sum = 0;
  const std::size_t batches = (n + kBatch - 1) / kBatch;
  const auto t0 = clk::now();
  for (std::size_t b = 0; b < batches; ++b) {
    for (std::size_t i = 0; i < kBatch; ++i) hs.push_back(spawn(leaf(static_cast<int>(i))));
    for (auto& h : hs) sum += co_await h;
    hs.clear();
  }
  const double r = ns_since(t0, batches * kBatch);
  if (sum != static_cast<long>(batches * (kBatch * (kBatch - 1) / 2)))
    std::fprintf(stderr, "spawn checksum mismatch\n");
  co_return r;
}

task<void> chan_send(channel<std::size_t>& ch, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) co_await ch.send(i);
  ch.close();
}

task<std::size_t> chan_recv(channel<std::size_t>& ch) {
  std::size_t expect = 0, bad = 0;
  while (auto v = co_await ch.recv()) bad += *v != expect++;
  co_return bad;
}

task<double> bench_channel(std::size_t n, std::size_t pairs, std::size_t cap) {
  std::vector<std::unique_ptr<channel<std::size_t>>> chans;
  std::vector<join_handle<void>> senders;
  std::vector<join_handle<std::size_t>> receivers;
  const auto t0 = clk::now();
  for (std::size_t p = 0; p < pairs; ++p) {
    chans.push_back(std::make_unique<channel<std::size_t>>(cap));
    receivers.push_back(spawn(chan_recv(*chans.back())));
    senders.push_back(spawn(chan_send(*chans.back(), n / pairs)));
  }
  std::size_t bad = 0;
  for (auto& s : senders) co_await s;
  for (auto& r : receivers) bad += co_await r;
  const double r = ns_since(t0, n);
  if (bad) std::fprintf(stderr, "channel order mismatch\n");
  co_return r;
}

task<double> bench_timer_serial(std::size_t n) {
  const auto t0 = clk::now();
  for (std::size_t i = 0; i < n; ++i) co_await sleep_for(std::chrono::nanoseconds(0));
  co_return ns_since(t0, n);
}

task<void> timer_worker(std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) co_await sleep_for(std::chrono::nanoseconds(0));
}

task<double> bench_timer_concurrent(std::size_t n, std::size_t tasks) {
  const auto t0 = clk::now();
  std::vector<join_handle<void>> hs;
  for (std::size_t t = 0; t < tasks; ++t) hs.push_back(spawn(timer_worker(n / tasks)));
  for (auto& h : hs) co_await h;
  co_return ns_since(t0, n);
}

task<double> bench_nop(std::size_t n) {
  const auto t0 = clk::now();
  for (std::size_t i = 0; i < n; ++i) co_await async_nop();
  co_return ns_since(t0, n);
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1000000;
  runtime rt(options().entries(1024));
  std::printf("ipcrt_bench N=%zu  ring flags=0x%x\n", n, rt.io().setup_flags());
  std::printf("%-36s %10s\n", "benchmark", "ns/op");
  auto row = [](const char* name, double ns) { std::printf("%-36s %10.2f\n", name, ns); };
  rt.block_on(bench_switch(n / 10));  // warm the frame pool and caches
  row("switch (yield, 2 tasks)", rt.block_on(bench_switch(n * 8)));
  row("spawn+join (batches of 1024)", rt.block_on(bench_spawn_join(n)));
  row("channel cap=1024, 1 pair", rt.block_on(bench_channel(n, 1, 1024)));
  row("channel cap=1024, 32 pairs", rt.block_on(bench_channel(n, 32, 1024)));
  row("channel cap=0 (rendezvous), 1 pair", rt.block_on(bench_channel(n, 1, 0)));
  row("timer arm+fire sleep_for(0), serial", rt.block_on(bench_timer_serial(n)));
  row("timer arm+fire, 1024 concurrent", rt.block_on(bench_timer_concurrent(n, 1024)));
  row("nop round trip, serial", rt.block_on(bench_nop(n)));
  return 0;
}

// anchors/memcpy: one thread's memory bandwidth — memcpy, or a read-only pass, over buffers of
// the bulk transports' sizes, cache-warm (the same buffers every time) or cold (a pool four times
// the largest cache). The physical limit under every bulk transport (core/machine/membw.hpp).
#include <algorithm>
#include <atomic>

#include "core/machine/membw.hpp"
#include "core/model/mechanism.hpp"
#include "core/model/std_params.hpp"

namespace ipclab {
namespace {

class MemcpyLoop final : public Loop {
 public:
  explicit MemcpyLoop(const Params& p)
      : buf_(size_t(p.i64("size")), p.str("cache") == "cold" ? membw::Cache::Cold : membw::Cache::Warm),
        read_(p.str("op") == "read") {}
  void op() override {
    if (read_)
      sink_.store(buf_.read(), std::memory_order_relaxed);  // the sum must be computed
    else
      buf_.copy();
  }
  uint64_t bytes_per_op() const override { return buf_.size(); }
  // About 1 MiB per clock read pair: a 4 KiB copy takes ~0.1 us, a 64 MiB one milliseconds.
  uint64_t batch() const override { return std::clamp<uint64_t>((1u << 20) / buf_.size(), 1, 1000); }

 private:
  membw::Buffers buf_;
  bool read_;
  std::atomic<uint64_t> sink_{0};
};

IPCLAB_REGISTER(Mechanism{
    .suite = "anchors",
    .name = "memcpy",
    .help = "one thread's memory bandwidth: memcpy or a read-only pass, cache-warm or cold",
    .params = {{.name = "op",
                .type = ParamType::String,
                .def = "copy",
                .choices = {"copy", "read"},
                .help = "copy: memcpy from one buffer to another; read: a read-only pass (a word sum)",
                .quick = {"copy"},
                .full = {"copy", "read"}},
               {.name = "size",
                .type = ParamType::Size,
                .def = "1M",
                .help = "bytes per operation",
                .quick = {"64K", "1M", "16M", "64M"},
                .full = {"4K", "64K", "1M", "16M", "64M"},
                .min = 4096,
                .max = int64_t(1) << 30},
               {.name = "cache",
                .type = ParamType::String,
                .def = "warm",
                .choices = {"warm", "cold"},
                .help = "warm: the same buffers every time; cold: a pool 4x the largest cache, in turn",
                .quick = {"warm", "cold"}},
               std_params::placement({"same", "unpinned"}, {"same"})},
    .loop = [](const Params& p) { return std::make_unique<MemcpyLoop>(p); },
});

}  // namespace
}  // namespace ipclab

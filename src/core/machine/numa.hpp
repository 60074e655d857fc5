#pragma once
// Where the memory two sides share lives on a machine of several NUMA nodes: the `memory`
// parameter (std_params::memory) of the mechanisms whose two sides share a mapping — messaging's
// shared-memory rings, pingpong's region, bulk's shared slots. The one place that checks what it
// asks against the machine, binds a segment before its first touch (mbind(2)), faults it in, and
// asks the kernel where its pages are (move_pages(2)) for the record.
//
//   first_touch   no policy: a page lands on the node of the CPU that touches it first (as always)
//   writer        bound (MPOL_BIND) to the node of the writer's CPU: the producer, the round trip's
//                 client, pingpong's host — side 0 of the placement
//   reader        bound to the node of the reader's CPU: the consumer, the server, pingpong's guest
//   interleave    interleaved (MPOL_INTERLEAVE) page by page over every node this process may put
//                 memory on — on two nodes, the writer's and the reader's of a cross_numa pair
//   node:N        bound to node N
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace ipclab {

struct Record;
namespace topo {
struct Topology;
}

namespace numa {

/// The NUMA nodes a segment may be put on: every node the machine lists, those that hold memory,
/// and those this process may allocate on (its cpuset's mems).
struct Nodes {
  std::vector<int> listed, memory, allowed;
  /// Those both holding memory and allowed: where memory= may put pages.
  std::vector<int> usable() const;
};
/// This machine's: topo::here() and the process's allowed mems (get_mempolicy), read once.
const Nodes& nodes_here();

/// Why memory=`value` (its canonical text, ParamSpec choices) cannot run with placement `layout`
/// on `nodes`, or "" when it can: writer, reader or interleave on a machine of one usable node
/// (nothing to choose), node:N for a node that is not there, holds no memory or is not this
/// process's, writer or reader with the sides unpinned (no CPU, so no node). The planner refuses
/// such a point before anything runs.
std::string memory_problem(const std::string& value, const std::string& layout, const Nodes& nodes);

/// What memory= asks, once the sides are placed.
struct Policy {
  enum Mode { FirstTouch, Bind, Interleave };
  std::string asked = "first_touch";  // the parameter's value
  Mode mode = FirstTouch;
  std::vector<int> nodes;                  // bound to, or interleaved over (FirstTouch: none)
  int writer_cpu = -1, reader_cpu = -1;    // -1: unpinned
  int writer_node = -1, reader_node = -1;  // the nodes of those CPUs (-1: unpinned)
};
/// memory=`asked` for a writer pinned to `writer_cpu` and a reader to `reader_cpu` (-1: unpinned),
/// each CPU's node from `t`. UsageError where memory_problem refuses (the planner has); Skip when
/// the side it names sits on a node that holds no memory (a node of CPUs only).
Policy resolve(const std::string& asked, int writer_cpu, int reader_cpu, const topo::Topology& t,
               const Nodes& nodes);

/// The pages of a mapping as the kernel holds them.
struct Pages {
  uint64_t total = 0;    // pages of the mapping
  uint64_t queried = 0;  // asked of the kernel: every page, or runs of them evenly spread
  uint64_t absent = 0;   // of those, pages not in memory: never faulted in by any side
  std::map<int, uint64_t> on_node;
  std::string error;  // why the kernel could not tell ("" when it did)
  Pages& operator+=(const Pages& o);
};
/// Where the pages of [addr, addr + len) (a shared mapping of this process) are: those in memory
/// (mincore) mapped here by a read if another process faulted them in, then move_pages(2) with no
/// target nodes, whose status is each page's node. A page no side touched stays absent: none is
/// allocated. Up to `sample` pages are asked, in runs of consecutive ones (an interleaved
/// mapping's alternation shows in each).
Pages locate(const void* addr, size_t len, size_t sample = 1024);

/// The record's memory fields (extra) for segments placed under `p` whose pages are `segments`
/// (locate's, one per mapping): memory, memory_policy, memory_policy_nodes, memory_sides,
/// memory_nodes (or memory_nodes_error), memory_pages, memory_as_asked, memory_holder, and the
/// tables' note (extra.notes). Returns the warning to give ("" when none): the pages are not where
/// asked, or where they are is unknown.
std::string describe(const Policy& p, const std::vector<Pages>& segments, nlohmann::json& extra);

/// The memory of one run that two sides share, placed as memory= asks: each segment bound before
/// its first touch and faulted in (first_touch: left to the sides, as before), and located for the
/// record once the run is over.
class SharedMemory {
 public:
  explicit SharedMemory(Policy p = {}) : policy_(std::move(p)) {}
  const Policy& policy() const { return policy_; }
  /// A fresh anonymous MAP_SHARED mapping that nothing has touched yet: bound, then faulted in.
  void place(void* addr, size_t len);
  /// A fresh mapping of shmem file `fd` (POSIX shm, memfd) already `len` bytes long, whose pages
  /// are not allocated yet: bound, then allocated (ipc::allocate_shared: an error rather than a
  /// SIGBUS when there is no room; `what` names the file), then faulted in.
  void place_file(int fd, void* addr, size_t len, const std::string& what);
  /// Locates every segment placed and adds the record's memory fields (numa::describe); a warning
  /// on stderr naming the record when the pages are not where asked.
  void describe(Record& rec) const;

 private:
  void bind(void* addr, size_t len) const;
  Policy policy_;
  std::vector<std::pair<const void*, size_t>> segments_;
};

}  // namespace numa
}  // namespace ipclab

#include "core/machine/numa.hpp"

#include <numa.h>
#include <numaif.h>
#include <sys/mman.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <memory>
#include <system_error>

#include "core/base/error.hpp"
#include "core/base/params.hpp"
#include "core/machine/topology.hpp"
#include "core/ownership/journal.hpp"
#include "core/stats/record.hpp"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14
#endif

// libnuma (Debian libnuma-dev) for the nodes this process may use and the node masks; its
// numaif.h wrappers for the system calls themselves. Its higher-level calls (numa_tonode_memory,
// numa_interleave_memory) report a failure only by printing it: mbind's own return is kept here,
// so that a policy the kernel refused fails the run with its reason.

namespace ipclab::numa {

namespace {

std::string list_text(const std::vector<int>& v) {
  std::string s;
  for (int x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s.empty() ? "none" : s;
}

bool has(const std::vector<int>& v, int x) { return std::find(v.begin(), v.end(), x) != v.end(); }

// The node number of `value` when it is node:N, else -1.
int node_of(const std::string& value) {
  if (value.rfind("node:", 0) != 0) return -1;
  const auto n = parse_integer(value.substr(5));
  return n && *n >= 0 && *n <= INT_MAX ? int(*n) : -1;
}

size_t page_size() {
  static const size_t p = size_t(sysconf(_SC_PAGESIZE));
  return p;
}

// The node of `cpu` as sysfs states it (topo::Cpu::node); -1 for an unpinned side.
int node_of_cpu(const topo::Topology& t, int cpu) {
  if (cpu < 0) return -1;
  for (auto& c : t.cpus)
    if (c.id == cpu) return c.node;
  throw std::logic_error(fmt::format("CPU {} is not among this process's CPUs", cpu));
}

const char* side_word(const std::string& holder) {
  if (holder == "writer") return "the writer's";
  if (holder == "reader") return "the reader's";
  if (holder == "both") return "both sides'";
  if (holder == "neither") return "neither side's";
  return "partly a side's";
}

// "node 1", or "nodes 0,1 (8/8 pages)".
std::string where_text(const std::map<int, uint64_t>& on_node) {
  if (on_node.size() == 1) return fmt::format("node {}", on_node.begin()->first);
  std::string nodes, counts;
  for (auto& [n, c] : on_node) {
    nodes += (nodes.empty() ? "" : ",") + std::to_string(n);
    counts += (counts.empty() ? "" : "/") + std::to_string(c);
  }
  return fmt::format("nodes {} ({} pages)", nodes, counts);
}

}  // namespace

std::vector<int> Nodes::usable() const {
  std::vector<int> out;
  for (int n : memory)
    if (has(allowed, n)) out.push_back(n);
  return out;
}

const Nodes& nodes_here() {
  static const Nodes n = [] {
    const topo::Topology& t = topo::here();
    Nodes out{t.node_ids, t.memory_nodes, t.memory_nodes};
    // A kernel without NUMA has no policies: its one node is every process's.
    if (numa_available() < 0) return out;
    std::unique_ptr<bitmask, void (*)(bitmask*)> mems(numa_get_mems_allowed(), numa_bitmask_free);
    if (!mems) return out;
    out.allowed.clear();
    for (unsigned i = 0; i < mems->size; ++i)
      if (numa_bitmask_isbitset(mems.get(), i)) out.allowed.push_back(int(i));
    return out;
  }();
  return n;
}

std::string memory_problem(const std::string& value, const std::string& layout, const Nodes& nodes) {
  const std::vector<int> usable = nodes.usable();
  if (value == "first_touch") return "";
  if (value == "writer" || value == "reader" || value == "interleave") {
    if (usable.size() < 2)
      return fmt::format(
          "memory={} chooses among NUMA nodes, and this machine has one this process can put memory "
          "on (node {}): nothing to choose; use memory=first_touch or memory=node:{}",
          value, list_text(usable), usable.empty() ? 0 : usable.front());
    if (value != "interleave" && layout == "unpinned")
      return fmt::format(
          "memory={} binds to the NUMA node of the {}'s CPU, and placement=unpinned pins no side to "
          "a CPU; give -p placement=cross, same or a class such as cross_numa (over --cpus), or "
          "memory=node:N",
          value, value);
    return "";
  }
  const int n = node_of(value);
  if (n < 0)
    return fmt::format("memory={}: use first_touch, writer, reader, interleave or node:N", brief(value));
  if (!has(nodes.listed, n))
    return fmt::format(
        "memory={}: this machine has no NUMA node {} (its nodes: {}); use node:N with one of {}", value, n,
        list_text(nodes.listed), list_text(usable));
  if (!has(nodes.memory, n))
    return fmt::format(
        "memory={}: NUMA node {} holds no memory (nodes with memory: {}); use node:N with one of "
        "those",
        value, n, list_text(nodes.memory));
  if (!has(nodes.allowed, n))
    return fmt::format(
        "memory={}: this process may not put memory on NUMA node {} (its cpuset allows {}); use node:N "
        "with one of those, or run ipclab in a cpuset that allows node {}",
        value, n, list_text(nodes.allowed), n);
  return "";
}

Policy resolve(const std::string& asked, int writer_cpu, int reader_cpu, const topo::Topology& t,
               const Nodes& nodes) {
  const std::string layout = writer_cpu < 0 || reader_cpu < 0 ? "unpinned" : "pinned";
  if (std::string why = memory_problem(asked, layout, nodes); !why.empty()) throw UsageError(why);
  Policy p;
  p.asked = asked;
  p.writer_cpu = writer_cpu;
  p.reader_cpu = reader_cpu;
  p.writer_node = node_of_cpu(t, writer_cpu);
  p.reader_node = node_of_cpu(t, reader_cpu);
  if (asked == "first_touch") return p;
  if (asked == "interleave") {
    p.mode = Policy::Interleave;
    p.nodes = nodes.usable();
    return p;
  }
  p.mode = Policy::Bind;
  const bool writer = asked == "writer";
  const int node = writer ? p.writer_node : asked == "reader" ? p.reader_node : node_of(asked);
  if (!has(nodes.usable(), node))
    throw Skip(fmt::format(
        "memory={}: the {}'s CPU {} is on NUMA node {}, which holds no memory this process may use "
        "(nodes: {}); use memory=node:N with one of those, or a placement whose {} is on one",
        asked, writer ? "writer" : "reader", writer ? writer_cpu : reader_cpu, node,
        list_text(nodes.usable()), writer ? "writer" : "reader"));
  p.nodes = {node};
  return p;
}

Pages& Pages::operator+=(const Pages& o) {
  total += o.total;
  queried += o.queried;
  absent += o.absent;
  for (auto& [n, c] : o.on_node) on_node[n] += c;
  if (error.empty()) error = o.error;
  return *this;
}

Pages locate(const void* addr, size_t len, size_t sample) {
  Pages out;
  const size_t ps = page_size();
  const auto* base = static_cast<const volatile char*>(addr);
  out.total = (len + ps - 1) / ps;
  // Which pages to ask: all of them, or runs of kRun consecutive pages evenly spread.
  constexpr size_t kRun = 64;
  std::vector<size_t> which;
  if (out.total <= sample || sample < kRun) {
    for (size_t i = 0; i < out.total; ++i) which.push_back(i);
  } else {
    const size_t runs = sample / kRun;
    for (size_t r = 0; r < runs; ++r) {
      const size_t first = (out.total - kRun) * r / (runs > 1 ? runs - 1 : 1);
      for (size_t i = first; i < first + kRun; ++i)
        if (which.empty() || i > which.back()) which.push_back(i);
    }
  }
  out.queried = which.size();
  // In memory or not: a page another process faulted in is in the shared object but not yet
  // mapped here, and a read maps it without allocating anything; a page nobody touched stays so.
  std::vector<unsigned char> resident(out.total);
  if (mincore(const_cast<void*>(addr), len, resident.data()) != 0) {
    out.error = fmt::format("mincore: {}", strerror(errno));
    return out;
  }
  std::vector<void*> pages;
  for (size_t i : which)
    if (resident[i] & 1) {
      (void)base[i * ps];
      pages.push_back(const_cast<char*>(base) + i * ps);
    } else {
      ++out.absent;
    }
  std::vector<int> status(pages.size(), -1);
  if (!pages.empty() && move_pages(0, pages.size(), pages.data(), nullptr, status.data(), 0) != 0) {
    out.error = fmt::format("move_pages: {}", strerror(errno));
    return out;
  }
  for (int s : status) {
    if (s >= 0)
      out.on_node[s]++;
    else
      ++out.absent;  // -ENOENT: gone from memory meanwhile (reclaimed)
  }
  return out;
}

std::string describe(const Policy& p, const std::vector<Pages>& segments, nlohmann::json& extra) {
  Pages where;
  for (const Pages& s : segments) where += s;
  extra["memory"] = p.asked;
  extra["memory_policy"] = p.mode == Policy::Bind         ? "bind"
                           : p.mode == Policy::Interleave ? "interleave"
                                                          : "none";
  if (p.mode != Policy::FirstTouch) extra["memory_policy_nodes"] = p.nodes;
  nlohmann::json sides = nlohmann::json::object();
  if (p.writer_cpu >= 0) sides["writer"] = {{"cpu", p.writer_cpu}, {"node", p.writer_node}};
  if (p.reader_cpu >= 0) sides["reader"] = {{"cpu", p.reader_cpu}, {"node", p.reader_node}};
  extra["memory_sides"] = sides;
  extra["memory_pages"] = {{"total", where.total}, {"queried", where.queried}, {"absent", where.absent}};
  std::string note, warning;
  if (!where.error.empty()) {
    extra["memory_nodes_error"] = where.error;
    if (p.mode != Policy::FirstTouch) {
      warning =
          fmt::format("memory={}: where the kernel put the pages is unknown ({})", p.asked, where.error);
      note = "memory placement unknown";
    }
  } else {
    nlohmann::json nodes = nlohmann::json::object();
    uint64_t present = 0, off = 0;
    for (auto& [n, c] : where.on_node) {
      nodes[std::to_string(n)] = c;
      present += c;
      if (!has(p.nodes, n)) off += c;
    }
    extra["memory_nodes"] = nodes;
    // Whose node holds them, when the two sides are on two nodes (a cross_numa pair).
    std::string holder;
    if (p.writer_node >= 0 && p.reader_node >= 0 && p.writer_node != p.reader_node && present > 0) {
      const auto count = [&](int n) { return where.on_node.count(n) ? where.on_node.at(n) : 0; };
      const uint64_t w = count(p.writer_node), r = count(p.reader_node), other = present - w - r;
      holder = other == 0 ? (w && r ? "both" : w ? "writer" : "reader") : (w || r ? "mixed" : "neither");
      extra["memory_holder"] = holder;
    }
    if (p.mode != Policy::FirstTouch) {
      // Bound or interleaved, every page is in memory (faulted in after binding) on a node asked
      // for; interleaved, each node asked for holds some of every mapping of as many pages (each
      // mapping's pages alternate from a node of their own: two of three pages over four nodes
      // need not cover them).
      bool ok = off == 0 && where.absent == 0 && present > 0;
      if (ok && p.mode == Policy::Interleave)
        for (const Pages& s : segments) {
          uint64_t in_memory = 0;
          for (auto& [n, c] : s.on_node) in_memory += c;
          if (in_memory >= p.nodes.size())
            for (int n : p.nodes) ok = ok && s.on_node.count(n);
        }
      extra["memory_as_asked"] = ok;
      if (!ok)
        warning = fmt::format(
            "memory={} asked for node{} {}, and the kernel holds the pages on {} ({} of {} pages asked "
            "elsewhere, "
            "{} not in memory)",
            p.asked, p.nodes.size() > 1 ? "s" : "", list_text(p.nodes),
            present ? where_text(where.on_node) : "none", off, where.queried, where.absent);
    }
    // The tables' note: where the pages are, when that tells something — a policy was asked, or the
    // machine spreads them over nodes.
    const bool tells = p.mode != Policy::FirstTouch || !holder.empty() || where.on_node.size() > 1 ||
                       (where.on_node.size() == 1 && where.on_node.begin()->first != 0);
    if (!warning.empty())
      note = fmt::format("memory NOT as asked ({} = node {}): on {}", p.asked, list_text(p.nodes),
                         present ? where_text(where.on_node) : "no node");
    else if (tells && present)
      note = "memory on " + where_text(where.on_node) +
             (holder.empty() ? "" : fmt::format(", {}", side_word(holder)));
  }
  if (!note.empty()) {
    if (!extra.contains("notes") || !extra["notes"].is_array()) extra["notes"] = nlohmann::json::array();
    extra["notes"].push_back(note);
  }
  return warning;
}

void SharedMemory::bind(void* addr, size_t len) const {
  if (policy_.mode == Policy::FirstTouch) return;
  std::unique_ptr<bitmask, void (*)(bitmask*)> mask(numa_allocate_nodemask(), numa_bitmask_free);
  for (int n : policy_.nodes) numa_bitmask_setbit(mask.get(), unsigned(n));
  // STRICT and MOVE: a page that exists already (none should) is moved to the policy's nodes, or
  // the call fails rather than leave it elsewhere. maxnode counts one past the mask's bits, as
  // libnuma passes it.
  const int mode = policy_.mode == Policy::Bind ? MPOL_BIND : MPOL_INTERLEAVE;
  if (mbind(addr, len, mode, mask->maskp, mask->size + 1, MPOL_MF_STRICT | MPOL_MF_MOVE) != 0) {
    const int e = errno;
    // A container's seccomp filter (Docker's default) lets mbind through with CAP_SYS_NICE only.
    throw std::runtime_error(
        fmt::format("mbind memory={} (nodes {}): {}{}", policy_.asked, list_text(policy_.nodes), strerror(e),
                    e == EPERM ? "; in a container, give it CAP_SYS_NICE or use memory=first_touch" : ""));
  }
}

namespace {

// Faults [addr, addr + len) in for writing, under the policy bound to it.
void fault_in(void* addr, size_t len) {
  if (madvise(addr, len, MADV_POPULATE_WRITE) == 0) return;
  if (errno != EINVAL)
    throw std::system_error(errno, std::generic_category(), "madvise populate shared memory");
  // Before Linux 5.14: a write to each page, of the byte already there.
  auto* p = static_cast<volatile char*>(addr);
  for (size_t i = 0; i < len; i += page_size()) p[i] = p[i];
}

}  // namespace

void SharedMemory::place(void* addr, size_t len) {
  bind(addr, len);
  if (policy_.mode != Policy::FirstTouch) fault_in(addr, len);
  segments_.emplace_back(addr, len);
}

void SharedMemory::place_file(int fd, void* addr, size_t len, const std::string& what) {
  bind(addr, len);
  ipc::allocate_shared(fd, len, what);  // the shmem object's pages, allocated under its policy
  if (policy_.mode != Policy::FirstTouch) fault_in(addr, len);
  segments_.emplace_back(addr, len);
}

void SharedMemory::describe(Record& rec) const {
  std::vector<Pages> where;
  for (auto& [addr, len] : segments_) where.push_back(locate(addr, len));
  const std::string warning = numa::describe(policy_, where, rec.extra);
  if (!warning.empty()) fmt::print(stderr, "warning: {}: {}\n", rec.name, warning);
}

}  // namespace ipclab::numa

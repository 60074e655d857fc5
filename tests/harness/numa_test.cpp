// Where shared memory lives (-p memory=, core/machine/numa.hpp): what is refused against the
// machine's nodes, how a policy resolves from the sides' CPUs, what the record says of the pages,
// and — on this machine, through the kernel — the node of the pages of real mappings, including
// pages another process faulted in, and the record of each suite's shared-memory mechanisms.
#include "core/machine/numa.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <numaif.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <string>

#include "core/base/affinity.hpp"
#include "core/base/error.hpp"
#include "core/machine/topology.hpp"
#include "core/plan/runner.hpp"
#include "core/stats/record.hpp"

using namespace ipclab;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A machine of two nodes, CPUs 0-3 on node 0 and 4-7 on node 1 (the lead's QEMU guest).
topo::Topology two_nodes() {
  topo::Topology t;
  for (int c = 0; c < 8; ++c) {
    topo::Cpu cpu;
    cpu.id = c;
    cpu.node = c / 4;
    t.cpus.push_back(cpu);
  }
  t.nodes = 2;
  t.node_ids = t.memory_nodes = {0, 1};
  return t;
}

const numa::Nodes kOneNode{{0}, {0}, {0}};
const numa::Nodes kTwoNodes{{0, 1}, {0, 1}, {0, 1}};

// A shared anonymous mapping of `pages` pages that nothing has touched, unmapped with the object.
struct Mapping {
  explicit Mapping(size_t pages) : len(pages * size_t(sysconf(_SC_PAGESIZE))) {
    mem = static_cast<char*>(mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
    if (mem == MAP_FAILED) throw std::runtime_error("mmap");
  }
  ~Mapping() { munmap(mem, len); }
  void touch(size_t first, size_t count) const {
    const size_t ps = size_t(sysconf(_SC_PAGESIZE));
    for (size_t i = first; i < first + count; ++i) mem[i * ps] = 1;
  }
  char* mem;
  size_t len;
};

// The node the kernel gives a page this thread faults in now: that of the CPU it is pinned to.
struct PinnedHere {
  PinnedHere() : cpu(allowed_cpus().front()), pin(cpu) {}
  int node() const {
    for (auto& c : topo::here().cpus)
      if (c.id == cpu) return c.node;
    return -1;
  }
  int cpu;
  ScopedPin pin;
};

// The policy the kernel holds for the page at `addr` (its mapping's, or its shmem object's): mode
// and the nodes' mask (the first 64).
std::pair<int, unsigned long> policy_at(void* addr) {
  int mode = -1;
  unsigned long mask[16] = {};
  if (get_mempolicy(&mode, mask, sizeof mask * 8, addr, MPOL_F_ADDR) != 0) return {-1, 0};
  return {mode, mask[0]};
}

}  // namespace

TEST(Numa, ChoosingANodeOnAMachineOfOneIsRefusedNamingTheFix) {
  for (const char* v : {"writer", "reader", "interleave"}) {
    const std::string why = numa::memory_problem(v, "cross", kOneNode);
    EXPECT_TRUE(contains(why, std::string("memory=") + v)) << why;
    EXPECT_TRUE(contains(why, "nothing to choose")) << why;
    EXPECT_TRUE(contains(why, "use memory=first_touch or memory=node:0")) << why;
  }
  EXPECT_EQ(numa::memory_problem("first_touch", "unpinned", kOneNode), "");
  EXPECT_EQ(numa::memory_problem("node:0", "unpinned", kOneNode), "");
  // Two nodes on the machine, one of them this process's (its cpuset): one to choose from.
  EXPECT_TRUE(
      contains(numa::memory_problem("reader", "cross", numa::Nodes{{0, 1}, {0, 1}, {1}}), "(node 1)"));
}

TEST(Numa, ANodeThatIsNotThereHoldsNoMemoryOrIsNotOursIsRefused) {
  const numa::Nodes n{{0, 1, 2}, {0, 1}, {0}};  // node 2: CPUs only; node 1: outside the cpuset
  EXPECT_TRUE(contains(numa::memory_problem("node:7", "same", n), "this machine has no NUMA node 7")) << "7";
  EXPECT_TRUE(contains(numa::memory_problem("node:7", "same", n), "use node:N with one of 0"));
  EXPECT_TRUE(contains(numa::memory_problem("node:2", "same", n), "NUMA node 2 holds no memory"));
  EXPECT_TRUE(contains(numa::memory_problem("node:1", "same", n), "may not put memory on NUMA node 1"));
  EXPECT_EQ(numa::memory_problem("node:0", "same", n), "");
  EXPECT_TRUE(contains(numa::memory_problem("bogus", "same", n), "use first_touch, writer, reader"));
}

TEST(Numa, WriterAndReaderNeedTheirSidePinned) {
  for (const char* v : {"writer", "reader"}) {
    const std::string why = numa::memory_problem(v, "unpinned", kTwoNodes);
    EXPECT_TRUE(contains(why, "placement=unpinned pins no side")) << why;
    EXPECT_TRUE(contains(why, "give -p placement=")) << why;
    for (const char* layout : {"same", "cross", "cross_numa", "llc"})
      EXPECT_EQ(numa::memory_problem(v, layout, kTwoNodes), "") << v << " " << layout;
  }
  // Interleaving needs no side's node; nor does a node given.
  EXPECT_EQ(numa::memory_problem("interleave", "unpinned", kTwoNodes), "");
  EXPECT_EQ(numa::memory_problem("node:1", "unpinned", kTwoNodes), "");
}

TEST(Numa, APolicyResolvesFromTheSidesCpus) {
  const auto t = two_nodes();
  auto p = numa::resolve("writer", 1, 5, t, kTwoNodes);
  EXPECT_EQ(p.mode, numa::Policy::Bind);
  EXPECT_EQ(p.nodes, std::vector<int>{0});
  EXPECT_EQ(p.writer_node, 0);
  EXPECT_EQ(p.reader_node, 1);
  p = numa::resolve("reader", 1, 5, t, kTwoNodes);
  EXPECT_EQ(p.nodes, std::vector<int>{1});
  p = numa::resolve("reader", 6, 2, t, kTwoNodes);  // the reader on node 0 this time
  EXPECT_EQ(p.nodes, std::vector<int>{0});
  p = numa::resolve("interleave", -1, -1, t, kTwoNodes);
  EXPECT_EQ(p.mode, numa::Policy::Interleave);
  EXPECT_EQ(p.nodes, (std::vector<int>{0, 1}));
  p = numa::resolve("node:1", 0, 0, t, kTwoNodes);
  EXPECT_EQ(p.mode, numa::Policy::Bind);
  EXPECT_EQ(p.nodes, std::vector<int>{1});
  p = numa::resolve("first_touch", 0, 4, t, kTwoNodes);
  EXPECT_EQ(p.mode, numa::Policy::FirstTouch);
  EXPECT_TRUE(p.nodes.empty());
  EXPECT_THROW(numa::resolve("writer", -1, -1, t, kTwoNodes), UsageError);
  EXPECT_THROW(numa::resolve("writer", 0, 4, t, kOneNode), UsageError);
  // The reader's CPU on a node of CPUs only: skipped, with the reason.
  auto three = t;
  topo::Cpu c8;
  c8.id = 8;
  c8.node = 2;
  three.cpus.push_back(c8);
  try {
    numa::resolve("reader", 0, 8, three, numa::Nodes{{0, 1, 2}, {0, 1}, {0, 1, 2}});
    ADD_FAILURE() << "no Skip";
  } catch (const Skip& e) {
    EXPECT_TRUE(contains(e.what(), "CPU 8 is on NUMA node 2, which holds no memory")) << e.what();
  }
}

TEST(Numa, TheRecordSaysWhereThePagesAreAndWhoseNodeThatIs) {
  const auto t = two_nodes();
  const auto reader = numa::resolve("reader", 0, 4, t, kTwoNodes);
  auto pages = [](std::map<int, uint64_t> on) {
    numa::Pages p;
    for (auto& [n, c] : on) p.total = p.queried += c;
    p.on_node = on;
    return p;
  };
  nlohmann::json x;
  EXPECT_EQ(numa::describe(reader, {pages({{1, 16}})}, x), "");
  EXPECT_EQ(x["memory"], "reader");
  EXPECT_EQ(x["memory_policy"], "bind");
  EXPECT_EQ(x["memory_policy_nodes"], nlohmann::json({1}));
  EXPECT_EQ(x["memory_nodes"], nlohmann::json({{"1", 16}}));
  EXPECT_EQ(x["memory_as_asked"], true);
  EXPECT_EQ(x["memory_holder"], "reader");
  EXPECT_EQ(x["memory_sides"]["writer"], nlohmann::json({{"cpu", 0}, {"node", 0}}));
  EXPECT_EQ(x["memory_sides"]["reader"], nlohmann::json({{"cpu", 4}, {"node", 1}}));
  EXPECT_EQ(x["memory_pages"], nlohmann::json({{"total", 16}, {"queried", 16}, {"absent", 0}}));
  EXPECT_EQ(x["notes"], nlohmann::json({"memory on node 1, the reader's"}));
  // The kernel did not honour it: the record says so, and so does the warning.
  x = nlohmann::json::object();
  const std::string warning = numa::describe(reader, {pages({{0, 12}, {1, 4}})}, x);
  EXPECT_TRUE(contains(warning, "memory=reader asked for node 1")) << warning;
  EXPECT_TRUE(contains(warning, "nodes 0,1 (12/4 pages)")) << warning;
  EXPECT_EQ(x["memory_as_asked"], false);
  EXPECT_EQ(x["memory_holder"], "both");
  EXPECT_TRUE(contains(x["notes"][0].get<std::string>(), "memory NOT as asked")) << x["notes"];
  // Whose node, under first touch.
  const auto first = numa::resolve("first_touch", 0, 4, t, kTwoNodes);
  for (auto [on, holder] :
       std::vector<std::pair<std::map<int, uint64_t>, std::string>>{{{{0, 16}}, "writer"},
                                                                    {{{0, 8}, {1, 8}}, "both"},
                                                                    {{{2, 16}}, "neither"},
                                                                    {{{0, 8}, {2, 8}}, "mixed"}}) {
    x = nlohmann::json::object();
    EXPECT_EQ(numa::describe(first, {pages(on)}, x), "");
    EXPECT_EQ(x["memory_holder"], holder);
    EXPECT_FALSE(x.contains("memory_as_asked"));
    EXPECT_EQ(x["memory_policy"], "none");
  }
  // Interleaved over two nodes, all on one: not as asked.
  x = nlohmann::json::object();
  const auto inter = numa::resolve("interleave", 0, 4, t, kTwoNodes);
  EXPECT_NE(numa::describe(inter, {pages({{0, 16}})}, x), "");
  EXPECT_EQ(x["memory_as_asked"], false);
  x = nlohmann::json::object();
  EXPECT_EQ(numa::describe(inter, {pages({{0, 8}, {1, 8}})}, x), "");
  EXPECT_EQ(x["memory_as_asked"], true);
  // Over four nodes, two mappings of three pages each start where the kernel draws: together they
  // need not cover the four, each covers three — as asked; one of five pages on three nodes is not.
  const numa::Nodes four{{0, 1, 2, 3}, {0, 1, 2, 3}, {0, 1, 2, 3}};
  const auto over_four = numa::resolve("interleave", 0, 4, t, four);
  x = nlohmann::json::object();
  EXPECT_EQ(numa::describe(over_four, {pages({{0, 1}, {1, 1}, {2, 1}}), pages({{1, 1}, {2, 1}, {0, 1}})}, x),
            "");
  EXPECT_EQ(x["memory_as_asked"], true);
  EXPECT_EQ(x["memory_nodes"], nlohmann::json({{"0", 2}, {"1", 2}, {"2", 2}}));
  x = nlohmann::json::object();
  EXPECT_NE(numa::describe(over_four, {pages({{0, 2}, {1, 2}, {2, 1}})}, x), "");
  EXPECT_EQ(x["memory_as_asked"], false);
  // Bound, but a page missing from memory: not as asked either.
  x = nlohmann::json::object();
  auto missing = pages({{1, 15}});
  missing.absent = 1;
  missing.total = missing.queried = 16;
  EXPECT_NE(numa::describe(reader, {missing}, x), "");
  EXPECT_EQ(x["memory_as_asked"], false);
}

TEST(Numa, FirstTouchOnOneNodeHasNothingToNoteAndAnUnknownPlaceIsSaid) {
  numa::Policy p;
  p.writer_cpu = p.reader_cpu = 0;
  p.writer_node = p.reader_node = 0;
  nlohmann::json x;
  numa::Pages where;
  where.total = where.queried = 4;
  where.on_node = {{0, 4}};
  EXPECT_EQ(numa::describe(p, {where}, x), "");
  EXPECT_EQ(x["memory"], "first_touch");
  EXPECT_EQ(x["memory_nodes"], nlohmann::json({{"0", 4}}));
  EXPECT_FALSE(x.contains("memory_holder"));  // both sides on one node
  EXPECT_FALSE(x.contains("notes"));
  // The kernel could not be asked: said in the record, and warned of when a policy was asked.
  where.error = "move_pages: Operation not permitted";
  x = nlohmann::json::object();
  EXPECT_EQ(numa::describe(p, {where}, x), "");
  EXPECT_EQ(x["memory_nodes_error"], where.error);
  EXPECT_FALSE(x.contains("memory_nodes"));
  p = numa::resolve("node:0", 0, 0, two_nodes(), kTwoNodes);
  x = nlohmann::json::object();
  EXPECT_TRUE(contains(numa::describe(p, {where}, x), "unknown"));
}

// On this machine, through the kernel: a page faulted in by a thread pinned to a CPU is on that
// CPU's node (node 0 on a machine of one); a page no one touched is absent, and stays so.
TEST(Numa, ThePagesOfARealMappingAreOnTheNodeThatTouchedThem) {
  PinnedHere here;
  Mapping m(16);
  numa::Pages p = numa::locate(m.mem, m.len);
  EXPECT_EQ(p.error, "");
  EXPECT_EQ(p.total, 16u);
  EXPECT_EQ(p.queried, 16u);
  EXPECT_EQ(p.absent, 16u);
  EXPECT_TRUE(p.on_node.empty());
  m.touch(0, 6);
  p = numa::locate(m.mem, m.len);
  EXPECT_EQ(p.absent, 10u);
  EXPECT_EQ(p.on_node, (std::map<int, uint64_t>{{here.node(), 6}}));
  if (topo::here().memory_nodes.size() == 1) {
    EXPECT_EQ(here.node(), 0);
  }
  // Locating allocated nothing.
  p = numa::locate(m.mem, m.len);
  EXPECT_EQ(p.absent, 10u);
}

// A forked side's faults put pages in the shared object without mapping them here: they are found
// (and the untouched ones are not allocated by looking).
TEST(Numa, PagesAnotherProcessFaultedInAreFound) {
  PinnedHere here;
  Mapping m(16);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    m.touch(8, 8);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  const numa::Pages p = numa::locate(m.mem, m.len);
  EXPECT_EQ(p.error, "");
  EXPECT_EQ(p.absent, 8u);
  EXPECT_EQ(p.on_node, (std::map<int, uint64_t>{{here.node(), 8}}));
}

TEST(Numa, ALargeMappingIsSampledInRunsOfPages) {
  Mapping m(4096);
  m.touch(0, 4096);
  const numa::Pages p = numa::locate(m.mem, m.len, 1024);
  EXPECT_EQ(p.total, 4096u);
  EXPECT_EQ(p.queried, 1024u);
  uint64_t found = 0;
  for (auto& [n, c] : p.on_node) found += c;
  EXPECT_EQ(found, 1024u);
  EXPECT_EQ(p.absent, 0u);
}

// node:N binds before anything touches the mapping and faults it in: every page is there, on N, and
// the record says so; first_touch leaves the pages to whoever touches them.
TEST(Numa, SharedMemoryPlacesASegmentAndTheRecordSaysWhere) {
  PinnedHere here;
  const int node = numa::nodes_here().usable().front();
  const std::string asked = "node:" + std::to_string(node);
  ASSERT_EQ(numa::memory_problem(asked, "same", numa::nodes_here()), "");
  {
    numa::SharedMemory shared(numa::resolve(asked, here.cpu, here.cpu, topo::here(), numa::nodes_here()));
    Mapping m(16);
    shared.place(m.mem, m.len);
    EXPECT_EQ(policy_at(m.mem), (std::pair<int, unsigned long>{MPOL_BIND, 1ul << node}));
    Record rec;
    rec.name = "test";
    shared.describe(rec);
    EXPECT_EQ(rec.extra["memory"], asked);
    EXPECT_EQ(rec.extra["memory_policy"], "bind");
    EXPECT_EQ(rec.extra["memory_nodes"], nlohmann::json({{std::to_string(node), 16}}));
    EXPECT_EQ(rec.extra["memory_pages"]["absent"], 0);
    EXPECT_EQ(rec.extra["memory_as_asked"], true);
    EXPECT_TRUE(contains(status_text(rec), "memory on node " + std::to_string(node))) << status_text(rec);
  }
  {
    numa::SharedMemory shared(
        numa::resolve("first_touch", here.cpu, here.cpu, topo::here(), numa::nodes_here()));
    Mapping m(16);
    shared.place(m.mem, m.len);
    EXPECT_EQ(policy_at(m.mem).first, MPOL_DEFAULT);
    m.touch(0, 4);
    Record rec;
    shared.describe(rec);
    EXPECT_EQ(rec.extra["memory_policy"], "none");
    EXPECT_EQ(rec.extra["memory_nodes"], nlohmann::json({{std::to_string(here.node()), 4}}));
    EXPECT_EQ(rec.extra["memory_pages"]["absent"], 12);
  }
  {
    // A shmem file: bound, then allocated, then faulted in.
    numa::SharedMemory shared(numa::resolve(asked, here.cpu, here.cpu, topo::here(), numa::nodes_here()));
    const size_t len = 8 * size_t(sysconf(_SC_PAGESIZE));
    const int fd = memfd_create("ipclab-numa-test", MFD_CLOEXEC);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(ftruncate(fd, off_t(len)), 0);
    void* mem = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ASSERT_NE(mem, MAP_FAILED);
    shared.place_file(fd, mem, len, "memfd ipclab-numa-test");
    EXPECT_EQ(policy_at(mem), (std::pair<int, unsigned long>{MPOL_BIND, 1ul << node}));
    Record rec;
    shared.describe(rec);
    EXPECT_EQ(rec.extra["memory_nodes"], nlohmann::json({{std::to_string(node), 8}}));
    EXPECT_EQ(rec.extra["memory_as_asked"], true);
    munmap(mem, len);
    close(fd);
  }
}

// The planner refuses what this machine cannot place, before anything runs; a node that is here
// runs, and each suite's shared-memory mechanism records where its pages are.
TEST(Numa, ThePlannerRefusesWhatTheMachineCannotPlace) {
  const auto mechs = select_mechanisms({"messaging/shm_spsc"});
  const bool one = numa::nodes_here().usable().size() < 2;
  for (const char* v : {"writer", "reader", "interleave"}) {
    Overrides o;
    parse_override(std::string("memory=") + v, o);
    if (one)
      EXPECT_THROW(plan(mechs, Preset::Default, o), UsageError) << v;
    else
      EXPECT_NO_THROW(plan(mechs, Preset::Default, o)) << v;
  }
  Overrides o;
  parse_override("memory=node:1023", o);
  try {
    plan(mechs, Preset::Default, o);
    ADD_FAILURE();
  } catch (const UsageError& e) {
    EXPECT_TRUE(contains(e.what(), "no NUMA node 1023")) << e.what();
  }
  // A mechanism that shares no memory has no such parameter.
  EXPECT_THROW(plan(select_mechanisms({"messaging/pipe"}), Preset::Default, o), UsageError);
}

TEST(Numa, EachSuitesSharedMemoryRecordSaysWhereItsPagesAre) {
  const int node = numa::nodes_here().usable().front();
  RunOptions opts;
  opts.duration_s = 0.05;
  opts.warmup_s = 0.01;
  opts.repetitions = 1;
  opts.cpus = {allowed_cpus().front()};
  const bool one = numa::nodes_here().usable().size() == 1;
  struct Case {
    const char* mech;
    std::vector<const char*> params;
  };
  for (const Case& c : std::vector<Case>{{"messaging/shm_spsc", {"pattern=roundtrip"}},
                                         {"messaging/shm_mpmc", {"pattern=throughput"}},
                                         {"pingpong/thread", {"placement=same", "round_trips=200"}},
                                         {"pingpong/process", {"placement=same", "round_trips=200"}},
                                         {"bulk/shm_spsc", {"size=64K"}},
                                         {"bulk/shm_bulk", {"size=64K", "mode=processes"}},
                                         {"bulk/memfd", {"handoff=ring", "size=64K"}}})
    for (const std::string& memory : {std::string("first_touch"), "node:" + std::to_string(node)}) {
      Overrides o;
      for (const char* p : c.params) parse_override(p, o);
      parse_override("memory=" + memory, o);
      const auto planned = plan(select_mechanisms({c.mech}), Preset::Default, o, opts.cpus);
      ASSERT_EQ(planned.size(), 1u) << c.mech;
      const Record r = run_one(planned[0], opts, 0);
      ASSERT_EQ(r.status, Status::Ok) << r.name << ": " << r.error;
      EXPECT_EQ(r.extra["memory"], memory) << r.name;
      ASSERT_TRUE(r.extra.contains("memory_nodes")) << r.name << " " << r.extra.dump();
      // Every page in memory is on the node asked for; under first touch, where the coordinator or
      // a side touched it first: node 0 on a machine of one.
      if (memory != "first_touch" || one) {
        EXPECT_EQ(r.extra["memory_nodes"].size(), 1u) << r.name << " " << r.extra["memory_nodes"];
        EXPECT_TRUE(r.extra["memory_nodes"].contains(std::to_string(node)))
            << r.name << " " << r.extra["memory_nodes"];
      }
      EXPECT_GT(r.extra["memory_pages"]["total"].get<uint64_t>(), 0u) << r.name;
      if (memory != "first_touch") {
        EXPECT_EQ(r.extra["memory_as_asked"], true) << r.name;
        EXPECT_EQ(r.extra["memory_pages"]["absent"], 0) << r.name;
      }
    }
  // handoff=seal shares no lasting memory: no memory parameter, no memory fields.
  Overrides seal;
  parse_override("handoff=seal", seal);
  const auto planned = plan(select_mechanisms({"bulk/memfd"}), Preset::Default, seal, opts.cpus);
  ASSERT_EQ(planned.size(), 1u);
  EXPECT_FALSE(planned[0].params.has("memory"));
  const Record r = run_one(planned[0], opts, 0);
  EXPECT_EQ(r.status, Status::Ok) << r.error;
  EXPECT_FALSE(r.extra.contains("memory"));
  parse_override("memory=first_touch", seal);
  EXPECT_THROW(plan(select_mechanisms({"bulk/memfd"}), Preset::Default, seal, opts.cpus), UsageError);
}

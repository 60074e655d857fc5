#include "core/machine/topology.hpp"

#include <dirent.h>
#include <immintrin.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <fstream>
#include <set>
#include <thread>

#include "core/base/affinity.hpp"
#include "core/base/clock.hpp"
#include "core/stats/statistics.hpp"

namespace ipclab::topo {

namespace {

std::string first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

int int_of(const std::string& path, int fallback = -1) {
  const std::string s = first_line(path);
  try {
    return s.empty() ? fallback : std::stoi(s);
  } catch (const std::exception&) {
    return fallback;
  }
}

// The kernel's CPU list format ("0-3,8,10-11"), as sysfs writes it. (User input goes through
// placement's parse_cpu_list, which also checks the CPUs are allowed.)
std::vector<int> kernel_list(const std::string& text) {
  std::vector<int> out;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const std::string part = text.substr(pos, comma - pos);
    pos = comma + 1;
    try {
      const size_t dash = part.find('-');
      const int lo = std::stoi(part.substr(0, dash));
      const int hi = dash == std::string::npos ? lo : std::stoi(part.substr(dash + 1));
      for (int c = lo; c <= hi && c - lo < 65536; ++c) out.push_back(c);
    } catch (const std::exception&) {
    }
  }
  return out;
}

std::vector<int> numbered(const std::string& dir, const std::string& prefix) {
  std::vector<int> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string n = e->d_name;
      if (n.rfind(prefix, 0) != 0 || n.size() == prefix.size()) continue;
      if (n.find_first_not_of("0123456789", prefix.size()) != std::string::npos) continue;
      out.push_back(std::stoi(n.substr(prefix.size())));
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

Topology read(const std::string& sys, const std::vector<int>& want) {
  Topology t;
  const std::string cpu_dir = sys + "/devices/system/cpu";
  std::vector<int> ids = want.empty() ? numbered(cpu_dir, "cpu") : want;
  // NUMA nodes: which node lists each CPU (none listed: node 0).
  std::vector<std::pair<int, std::vector<int>>> nodes;
  for (int n : numbered(sys + "/devices/system/node", "node")) {
    nodes.emplace_back(
        n, kernel_list(first_line(sys + "/devices/system/node/node" + std::to_string(n) + "/cpulist")));
    t.node_ids.push_back(n);
  }
  // The nodes that hold memory: has_memory is the kernel's N_MEMORY set (a node of CPUs only is
  // not in it).
  if (std::ifstream(sys + "/devices/system/node/has_memory"))
    t.memory_nodes = kernel_list(first_line(sys + "/devices/system/node/has_memory"));
  else
    t.memory_nodes = t.node_ids;
  if (t.node_ids.empty()) t.node_ids = t.memory_nodes = {0};
  std::set<int> packages, node_set, llcs;
  std::set<std::pair<int, int>> cores;
  for (int id : ids) {
    Cpu c;
    c.id = id;
    const std::string base = cpu_dir + "/cpu" + std::to_string(id);
    c.package = int_of(base + "/topology/physical_package_id", 0);
    c.core = int_of(base + "/topology/core_id", id);
    c.siblings = kernel_list(first_line(base + "/topology/thread_siblings_list"));
    if (c.siblings.empty()) c.siblings = {id};
    c.node = 0;
    for (auto& [n, list] : nodes)
      if (std::find(list.begin(), list.end(), id) != list.end()) c.node = n;
    // The last-level cache: the cache index of the highest level; its domain is named by the
    // lowest CPU that shares it. None listed: the package's.
    int best_level = -1;
    for (int k : numbered(base + "/cache", "index")) {
      const std::string idx = base + "/cache/index" + std::to_string(k);
      const std::string type = first_line(idx + "/type");
      const int level = int_of(idx + "/level");
      if (type == "Instruction" || level <= best_level) continue;
      const auto shared = kernel_list(first_line(idx + "/shared_cpu_list"));
      if (shared.empty()) continue;
      best_level = level;
      c.llc = *std::min_element(shared.begin(), shared.end());
    }
    if (c.llc < 0) c.llc = -1 - c.package;  // distinct from every CPU number
    packages.insert(c.package);
    node_set.insert(c.node);
    llcs.insert(c.llc);
    cores.insert({c.package, c.core});
    if (c.siblings.size() > 1) t.smt = true;
    t.cpus.push_back(std::move(c));
  }
  t.packages = int(packages.size());
  t.nodes = int(node_set.size());
  t.llcs = int(llcs.size());
  t.cores = int(cores.size());
  return t;
}

const Topology& here() {
  static const Topology t = read("/sys", allowed_cpus());
  return t;
}

std::string relation(const Cpu& a, const Cpu& b) {
  if (a.package == b.package && a.core == b.core) return "smt";
  if (a.llc == b.llc) return "llc";
  if (a.node == b.node) return "cross_llc";
  return "cross_numa";
}

std::vector<int> classes(const std::vector<double>& values, double gap) {
  std::vector<size_t> order(values.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return values[x] < values[y]; });
  std::vector<int> cls(values.size(), 0);
  int c = 0;
  for (size_t k = 0; k < order.size(); ++k) {
    if (k > 0 && values[order[k - 1]] > 0 && values[order[k]] > gap * values[order[k - 1]]) ++c;
    cls[order[k]] = c;
  }
  return cls;
}

void judge(const Topology& t, Matrix& m) {
  std::vector<double> v;
  for (auto& p : m.pairs) v.push_back(p.ns);
  m.cls = classes(v);
  auto cpu = [&](int id) -> const Cpu& {
    return *std::find_if(t.cpus.begin(), t.cpus.end(), [id](const Cpu& c) { return c.id == id; });
  };
  std::vector<std::pair<std::string, std::vector<double>>> by_rel;
  auto rel_of = [&](const Pair& p) { return relation(cpu(p.a), cpu(p.b)); };
  for (auto& p : m.pairs) {
    const std::string r = rel_of(p);
    auto it = std::find_if(by_rel.begin(), by_rel.end(), [&](auto& e) { return e.first == r; });
    if (it == by_rel.end()) it = by_rel.insert(by_rel.end(), {r, {}});
    it->second.push_back(p.ns);
  }
  m.hidden_siblings.clear();
  for (auto& p : m.pairs) {
    const std::string r = rel_of(p);
    if (r == "smt" || p.ns <= 0) continue;
    const auto& same =
        std::find_if(by_rel.begin(), by_rel.end(), [&](auto& e) { return e.first == r; })->second;
    // At most half the median of the pairs sysfs relates as it relates this one.
    if (same.size() >= 3 && p.ns * 2 <= median_of(same)) m.hidden_siblings.push_back(p);
  }
}

std::string fleeting_text(const Matrix& m, const Pair& first_look) {
  double again = 0;
  for (const Pair& p : m.pairs)
    if (p.a == first_look.a && p.b == first_look.b) again = p.ns;
  return fmt::format(
      "CPUs {} and {} behaved as SMT siblings on one look ({:.0f} ns) and not on the next ({:.0f} ns)",
      first_look.a, first_look.b, first_look.ns, again);
}

double c2c_ns(int a, int b, int rounds) {
  struct alignas(64) Line {
    std::atomic<uint64_t> v{0};
  };
  auto line = std::make_unique<Line>();
  std::atomic<int> pinned{0};
  std::atomic<bool> bad{false};
  std::vector<double> rtt;
  rtt.reserve(size_t(rounds));
  auto pin = [&](int cpu) {
    if (!set_affinity(cpu)) bad = true;
    pinned.fetch_add(1);
    while (pinned.load() < 2) _mm_pause();
  };
  constexpr uint64_t kStop = UINT64_MAX;
  // The server answers 2k+1 with 2k+2 until it reads kStop; the client times each round trip. A
  // bound on every wait: a CPU taken away for good must not hang `ipclab topo`.
  const uint64_t deadline = now_ns() + 5'000'000'000ull;
  // 10 µs: some fifty times the slowest transfer of a line between two sockets.
  constexpr uint64_t kInFlight = 10'000;
  std::thread server([&] {
    pin(b);
    for (uint64_t k = 0;; ++k) {
      uint64_t v;
      while ((v = line->v.load(std::memory_order_acquire)) != 2 * k + 1) {
        if (v == kStop) return;
        _mm_pause();
      }
      line->v.store(2 * k + 2, std::memory_order_release);
    }
  });
  // The client on a thread of its own too: the caller's own affinity stays as it was.
  std::thread client([&] {
    pin(a);
    for (int k = 0; k < rounds + rounds / 10 && !bad; ++k) {
      const uint64_t t0 = now_ns();
      line->v.store(2 * uint64_t(k) + 1, std::memory_order_release);
      while (line->v.load(std::memory_order_acquire) != 2 * uint64_t(k) + 2) {
        const uint64_t now = now_ns();
        if (now > deadline) {
          bad = true;
          break;
        }
        // A line not back within kInFlight is not in flight: the server's CPU is not running it
        // (a vCPU the host took away, or emulated vCPUs taking turns). PAUSE lets the hypervisor
        // run it (pause-loop exiting; under QEMU's TCG, the next vCPU's turn); a line still in
        // flight is polled without one, so the figure carries no PAUSE latency.
        if (now - t0 > kInFlight) _mm_pause();
      }
      if (k >= rounds / 10) rtt.push_back(double(now_ns() - t0));  // the first tenth warms up
    }
    line->v.store(kStop, std::memory_order_release);
  });
  client.join();
  server.join();
  return bad ? 0 : median_of(std::move(rtt));
}

nlohmann::json to_json(const Topology& t) {
  nlohmann::json cpus = nlohmann::json::array();
  for (auto& c : t.cpus)
    cpus.push_back({{"cpu", c.id},
                    {"package", c.package},
                    {"node", c.node},
                    {"core", c.core},
                    {"llc", c.llc},
                    {"siblings", c.siblings}});
  return {{"packages", t.packages}, {"nodes", t.nodes}, {"llcs", t.llcs},
          {"cores", t.cores},       {"smt", t.smt},     {"cpus", cpus}};
}

nlohmann::json to_json(const Topology& t, const Matrix& m) {
  nlohmann::json j = to_json(t);
  nlohmann::json pairs = nlohmann::json::array();
  auto cpu = [&](int id) -> const Cpu& {
    return *std::find_if(t.cpus.begin(), t.cpus.end(), [id](const Cpu& c) { return c.id == id; });
  };
  for (size_t i = 0; i < m.pairs.size(); ++i)
    pairs.push_back({{"a", m.pairs[i].a},
                     {"b", m.pairs[i].b},
                     {"c2c_ns", std::round(m.pairs[i].ns * 10) / 10},
                     {"class", m.cls[i]},
                     {"relation", relation(cpu(m.pairs[i].a), cpu(m.pairs[i].b))}});
  nlohmann::json hidden = nlohmann::json::array();
  for (auto& p : m.hidden_siblings)
    hidden.push_back({{"a", p.a}, {"b", p.b}, {"c2c_ns", std::round(p.ns * 10) / 10}});
  nlohmann::json fleeting = nlohmann::json::array();
  for (auto& p : m.fleeting_siblings)
    fleeting.push_back({{"a", p.a}, {"b", p.b}, {"first_c2c_ns", std::round(p.ns * 10) / 10}});
  j["c2c"] = {{"pairs", pairs},
              {"sampled", m.sampled},
              {"classes", m.cls.empty() ? 0 : *std::max_element(m.cls.begin(), m.cls.end()) + 1},
              {"behaves_as_smt_siblings", hidden},
              {"fleeting_smt_siblings", fleeting}};
  return j;
}

}  // namespace ipclab::topo

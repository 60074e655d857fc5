#pragma once
// Parameter declarations: declared once per mechanism, they drive `list`, `--help`, the `-p` grid,
// result names and the JSON `params` object.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace ipclab {

/// Rate: a positive count per second, decimal with an optional k (1e3) or M (1e6) suffix (`10k`,
/// `2.5M`), or one of the spec's `choices` words (e.g. `auto`), which are allowed besides numbers.
/// Double: a finite decimal, or likewise one of the spec's `choices` words (e.g. `unloaded`).
enum class ParamType { Int, Size, Double, String, Bool, Rate };

struct ParamSpec {
  std::string name;
  ParamType type = ParamType::Int;
  std::string def;  // default value (one)
  /// Allowed values; empty = any value of the type. A choice `word:N` stands for a family of them
  /// (String only): the word, ':' and a whole number from 0 to `max` (`node:N` lets `node:1` in).
  std::vector<std::string> choices;
  /// Old names of values, accepted on input and read as the value they map to (which is what
  /// result names and JSON say): {"pingpong", "roundtrip"} lets `-p pattern=pingpong` still run.
  std::map<std::string, std::string> aliases;
  std::string help;
  std::vector<std::string> quick;            // values of the quick preset (empty = default)
  std::vector<std::string> full;             // values of the full preset (empty = quick, then default)
  int64_t min = INT64_MIN, max = INT64_MAX;  // bounds for Int and Size
  /// String holding an absolute filesystem path: any printable text but ':' (in result names '/', '%'
  /// and spaces are written %2F, %25 and %20).
  bool path = false;
  /// A parameter that means something only when an earlier one has one of some values (the open-
  /// loop rate only with pattern=rate): {"pattern", {"rate"}}. Points where it does not apply leave
  /// it out (of the name and the JSON); asking for it where it never applies is a UsageError.
  std::pair<std::string, std::vector<std::string>> only_with;
  /// A count of workers that scales with the machine (pairs, producers, reactors): each one takes
  /// this many CPUs. On a run over more than 2 CPUs the preset grids become scaled_grid(CPUs /
  /// per_cpu) (the full preset keeps its own values besides, within that bound and `max`); on 2 CPUs
  /// or fewer they stay as declared. 0: a fixed grid.
  int per_cpu = 0;
};

/// `text` as a base-10 integer, whole (no blanks, '+', prefixes or junk), with a size suffix
/// (K/KiB/KB, M/MiB/MB, G/GiB/GB: powers of 1024) when `size_suffix`; nothing when it is not one
/// or does not fit an int64_t (suffix included).
std::optional<int64_t> parse_integer(std::string_view text, bool size_suffix = false);
/// `bytes` as the shortest text parse_integer(text, true) reads back: 1024 → "1K", 1073741824 →
/// "1G", 1000 → "1000" (the size suffixes are powers of 1024).
std::string size_text(int64_t bytes);
/// `text` as a rate per second (decimal, optional k = 1e3 or M = 1e6 suffix), whole and > 0;
/// nothing otherwise or when it is not a whole number of messages per second.
std::optional<int64_t> parse_rate(std::string_view text);
/// `per_s` as the shortest text parse_rate reads back: 10000 → "10k", 2500000 → "2500k",
/// 1000000 → "1M", 2500 → "2500".
std::string rate_text(int64_t per_s);
/// `text` as a finite decimal number, whole (no blanks, '+', hex, nan or inf); nothing otherwise.
std::optional<double> parse_real(std::string_view text);

/// Canonical text of `value` for `spec` (sizes as plain byte counts, aliases as the value they
/// stand for), or UsageError.
std::string canonical_value(const ParamSpec& spec, const std::string& value);
const char* type_name(ParamType t);

/// One point of a grid: every parameter of a mechanism with one value, in declaration order.
class Params {
 public:
  Params() = default;
  explicit Params(std::vector<std::pair<std::string, std::string>> kv) : kv_(std::move(kv)) {}

  bool has(const std::string& name) const;
  const std::string& str(const std::string& name) const;
  int64_t i64(const std::string& name) const;
  double f64(const std::string& name) const;
  bool flag(const std::string& name) const;
  /// The value, or `def` when this mechanism has no such parameter.
  std::string str_or(const std::string& name, const std::string& def) const {
    return has(name) ? str(name) : def;
  }
  int64_t i64_or(const std::string& name, int64_t def) const { return has(name) ? i64(name) : def; }
  void set(const std::string& name, const std::string& value);

  /// `name:value/name:value` in declaration order.
  std::string path() const;
  /// JSON object; numbers as numbers when the text is numeric.
  nlohmann::json to_json() const;
  const std::vector<std::pair<std::string, std::string>>& items() const { return kv_; }

 private:
  std::vector<std::pair<std::string, std::string>> kv_;
};

enum class Preset { Default, Quick, Full };

/// Values asked for on the command line with `-p name=v1,v2`.
using Overrides = std::map<std::string, std::vector<std::string>>;

/// Parses `name=v1,v2` into overrides (UsageError on bad shape).
void parse_override(const std::string& arg, Overrides& into);

/// Most points one grid may have (the full presets have a few hundred).
constexpr size_t kMaxGridPoints = 10000;

/// The powers of two up to `n`, and `n` itself: 1, 2, 4, 8, 16 for 16; 1, 2, 4, 6 for 6.
std::vector<int64_t> scaled_grid(int64_t n);

/// The values `preset` gives `spec` when -p does not name it: the full list (the quick one when it
/// has none), the quick list, or the default; for a ParamSpec::per_cpu parameter on a run over
/// more than 2 `cpus`, the scaled grid (`cpus` 0: unknown, the lists as declared). As written (not
/// yet canonical).
std::vector<std::string> preset_values(const ParamSpec& spec, Preset preset, size_t cpus = 0);

/// The cartesian product of every parameter's values, in declaration order: overrides first,
/// then preset_values(). UsageError over kMaxGridPoints points.
/// `cpus`: how many CPUs the run has, which sizes the grids of ParamSpec::per_cpu (0: as declared).
std::vector<Params> expand_grid(const std::vector<ParamSpec>& specs, Preset preset,
                                const Overrides& overrides, size_t cpus = 0);

}  // namespace ipclab

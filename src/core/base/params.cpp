#include "core/base/params.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <set>

#include "core/base/error.hpp"

namespace ipclab {

const char* type_name(ParamType t) {
  switch (t) {
    case ParamType::Int:
      return "int";
    case ParamType::Size:
      return "size";
    case ParamType::Double:
      return "double";
    case ParamType::String:
      return "string";
    case ParamType::Bool:
      return "bool";
    case ParamType::Rate:
      return "rate";
  }
  return "?";
}

std::optional<int64_t> parse_integer(std::string_view text, bool size_suffix) {
  // std::from_chars: the whole text, base 10, no blanks, no '+', no hex or octal prefixes, and
  // out-of-range reported instead of wrapped.
  int64_t v = 0;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  auto [end, ec] = std::from_chars(first, last, v, 10);
  if (ec != std::errc() || end == first) return std::nullopt;
  std::string suffix(end, last);
  if (suffix.empty()) return v;
  if (!size_suffix) return std::nullopt;
  for (char& c : suffix) c = char(std::tolower(static_cast<unsigned char>(c)));
  int64_t mult = 0;
  if (suffix == "k" || suffix == "kib" || suffix == "kb")
    mult = int64_t(1) << 10;
  else if (suffix == "m" || suffix == "mib" || suffix == "mb")
    mult = int64_t(1) << 20;
  else if (suffix == "g" || suffix == "gib" || suffix == "gb")
    mult = int64_t(1) << 30;
  else
    return std::nullopt;
  int64_t out = 0;
  if (__builtin_mul_overflow(v, mult, &out)) return std::nullopt;
  return out;
}

std::string size_text(int64_t bytes) {
  for (auto [shift, suffix] : {std::pair{30, "G"}, std::pair{20, "M"}, std::pair{10, "K"}})
    if (bytes != 0 && bytes % (int64_t(1) << shift) == 0) return std::to_string(bytes >> shift) + suffix;
  return std::to_string(bytes);
}

std::optional<int64_t> parse_rate(std::string_view text) {
  double mult = 1;
  if (!text.empty() && (text.back() == 'k' || text.back() == 'M')) {
    mult = text.back() == 'k' ? 1e3 : 1e6;
    text.remove_suffix(1);
  }
  auto v = parse_real(text);
  if (!v) return std::nullopt;
  // Rounded to whole messages per second, and only when the text meant one (2.5k, not 2.5).
  const double r = *v * mult;
  if (!(r >= 1 && r <= 1e12) || std::abs(r - std::round(r)) > 1e-6 * r) return std::nullopt;
  return int64_t(std::llround(r));
}

std::string rate_text(int64_t per_s) {
  if (per_s != 0 && per_s % 1'000'000 == 0) return std::to_string(per_s / 1'000'000) + "M";
  if (per_s != 0 && per_s % 1000 == 0) return std::to_string(per_s / 1000) + "k";
  return std::to_string(per_s);
}

std::optional<double> parse_real(std::string_view text) {
  // std::from_chars: the whole text in plain decimal or scientific form; nan, inf and values
  // that overflow a double are not numbers here.
  double v = 0;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  auto [end, ec] = std::from_chars(first, last, v, std::chars_format::general);
  if (ec != std::errc() || end != last || end == first || !std::isfinite(v)) return std::nullopt;
  return v;
}

namespace {

// `value` as a numbered choice of `spec` (a choice `word:N`, ParamSpec::choices): "word:N" with N
// in its canonical form; nothing when no such choice's word starts it; UsageError (from `bad`)
// when one does and N is no number from 0 to spec.max.
template <class Bad>
std::optional<std::string> numbered_choice(const ParamSpec& spec, const std::string& value, Bad&& bad) {
  for (const std::string& c : spec.choices) {
    if (c.size() < 3 || c.compare(c.size() - 2, 2, ":N") != 0) continue;
    const std::string word = c.substr(0, c.size() - 1);  // "node:"
    if (value.rfind(word, 0) != 0) continue;
    const auto n = parse_integer(std::string_view(value).substr(word.size()));
    if (!n || *n < 0 || *n > spec.max)
      throw bad(fmt::format("{}N with N a whole number from 0 (e.g. {}0)", word, word));
    return word + std::to_string(*n);
  }
  return std::nullopt;
}

}  // namespace

std::string canonical_value(const ParamSpec& spec, const std::string& value) {
  auto bad = [&](const std::string& want) {
    return UsageError(fmt::format("parameter '{}': '{}' is not {}; see `ipclab list SUITE` for its values",
                                  spec.name, brief(value), want));
  };
  std::string out = value;
  switch (spec.type) {
    case ParamType::Int:
    case ParamType::Size: {
      // One message for text that is no number, that overflows, and that is out of bounds.
      auto v = parse_integer(value, spec.type == ParamType::Size);
      if (!v || *v < spec.min || *v > spec.max)
        throw bad(fmt::format("{} from {} to {}{}", spec.type == ParamType::Size ? "a size" : "an integer",
                              spec.min, spec.max,
                              spec.type == ParamType::Size ? " bytes (e.g. 64, 4K, 1M)" : ""));
      out = std::to_string(*v);
      break;
    }
    case ParamType::Double: {
      // A word of `choices` (e.g. slo_p99_us's `unloaded`) besides numbers, as with Rate.
      if (std::find(spec.choices.begin(), spec.choices.end(), value) != spec.choices.end()) return out;
      auto d = parse_real(value);
      if (!d || *d < double(spec.min) || *d > double(spec.max))
        throw bad(fmt::format("a finite number from {} to {}{}", spec.min, spec.max,
                              spec.choices.empty() ? "" : " or " + spec.choices.front()));
      return out;
    }
    case ParamType::Rate: {
      if (std::find(spec.choices.begin(), spec.choices.end(), value) != spec.choices.end()) break;
      auto r = parse_rate(value);
      if (!r || *r < std::max<int64_t>(1, spec.min) || *r > spec.max) {
        std::string words;
        for (auto& c : spec.choices) words += " or " + c;
        throw bad(fmt::format("a rate per second from {} to {} (e.g. 500, 10k, 2.5M){}",
                              std::max<int64_t>(1, spec.min), rate_text(spec.max), words));
      }
      return rate_text(*r);
    }
    case ParamType::Bool:
      if (value == "1" || value == "true" || value == "yes" || value == "on")
        out = "1";
      else if (value == "0" || value == "false" || value == "no" || value == "off")
        out = "0";
      else
        throw bad("a boolean (0 or 1)");
      break;
    case ParamType::String:
      // Values go into result names, CSV and JSON: printable UTF-8 only.
      if (printable(value) != value) throw bad("printable text (no control characters, valid UTF-8)");
      if (spec.path) {
        // Any folder a user (or a bundle unpacked there) may have: spaces, ',', '=' and '%' are
        // escaped in result names (path()). ':' alone is refused: fio and the dynamic loader take
        // it for a separator of several paths.
        if (value.empty() || value[0] != '/' || value.find(':') != std::string::npos)
          throw bad("an absolute path without ':'");
        break;
      }
      if (auto n = numbered_choice(spec, value, bad)) return *n;
      if (value.empty() || value.find_first_of("/:,= ") != std::string::npos)
        throw bad("a word without '/', ':', ',', '=' or spaces");
      break;
  }
  if (auto alias = spec.aliases.find(out); alias != spec.aliases.end()) out = alias->second;
  if (!spec.choices.empty() &&
      std::find(spec.choices.begin(), spec.choices.end(), out) == spec.choices.end()) {
    std::string all;
    for (auto& c : spec.choices) all += (all.empty() ? "" : "|") + c;
    throw UsageError(fmt::format("parameter '{}': '{}' is not allowed; use one of {}", spec.name,
                                 brief(value), brief(all, 200)));
  }
  return out;
}

bool Params::has(const std::string& name) const {
  return std::any_of(kv_.begin(), kv_.end(), [&](auto& p) { return p.first == name; });
}

const std::string& Params::str(const std::string& name) const {
  for (auto& [k, v] : kv_)
    if (k == name) return v;
  throw std::logic_error("mechanism reads undeclared parameter '" + name + "'");
}

int64_t Params::i64(const std::string& name) const { return std::stoll(str(name)); }
double Params::f64(const std::string& name) const { return std::stod(str(name)); }
bool Params::flag(const std::string& name) const { return str(name) == "1"; }

void Params::set(const std::string& name, const std::string& value) {
  for (auto& [k, v] : kv_)
    if (k == name) {
      v = value;
      return;
    }
  kv_.emplace_back(name, value);
}

std::string Params::path() const {
  std::string s;
  // '/' separates the parts of a name and a space ends it where names are listed: path values carry
  // them percent-escaped, and '%' too, so that an escape reads one way ("cpus:0,1" stays as it is).
  for (auto& [k, v] : kv_) {
    s += (s.empty() ? "" : "/") + k + ":";
    for (char c : v)
      s += c == '/' || c == '%' || c == ' ' ? fmt::format("%{:02X}", int(c)) : std::string(1, c);
  }
  return s;
}

nlohmann::json Params::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  for (auto& [k, v] : kv_) {
    char* end = nullptr;
    long long i = std::strtoll(v.c_str(), &end, 10);
    if (!v.empty() && *end == '\0') {
      j[k] = i;
      continue;
    }
    double d = std::strtod(v.c_str(), &end);
    if (!v.empty() && *end == '\0') {
      j[k] = d;
      continue;
    }
    j[k] = v;
  }
  return j;
}

void parse_override(const std::string& arg, Overrides& into) {
  auto eq = arg.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == arg.size())
    throw UsageError(fmt::format("-p '{}': write -p name=value[,value...]", brief(arg)));
  std::string name = arg.substr(0, eq);
  std::vector<std::string> values;
  size_t pos = eq + 1;
  while (pos <= arg.size()) {
    auto comma = arg.find(',', pos);
    if (comma == std::string::npos) comma = arg.size();
    std::string v = arg.substr(pos, comma - pos);
    if (v.empty()) throw UsageError(fmt::format("-p '{}': empty value; write -p name=v1,v2", brief(arg)));
    values.push_back(v);
    pos = comma + 1;
  }
  auto& slot = into[name];
  slot.insert(slot.end(), values.begin(), values.end());
}

std::vector<int64_t> scaled_grid(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t v = 1; v > 0 && v <= n; v *= 2) out.push_back(v);
  if (n >= 1 && out.back() != n) out.push_back(n);
  return out;
}

namespace {

// A preset's values of a per_cpu parameter on a run over `cpus` CPUs (ParamSpec::per_cpu).
std::vector<std::string> scaled_values(const ParamSpec& s, Preset preset, size_t cpus) {
  const int64_t top = std::clamp<int64_t>(int64_t(cpus) / s.per_cpu, 1, std::min<int64_t>(s.max, 1 << 20));
  std::set<int64_t> v;
  for (int64_t x : scaled_grid(top)) v.insert(x);
  if (preset == Preset::Full)
    for (auto& f : s.full)
      if (auto x = parse_integer(f); x && *x <= top) v.insert(*x);
  std::vector<std::string> out;
  for (int64_t x : v) out.push_back(std::to_string(x));
  return out;
}

}  // namespace

std::vector<std::string> preset_values(const ParamSpec& s, Preset preset, size_t cpus) {
  if (preset != Preset::Default && s.per_cpu > 0 && cpus > 2) return scaled_values(s, preset, cpus);
  if (preset == Preset::Full && !s.full.empty()) return s.full;
  if (preset != Preset::Default && !s.quick.empty()) return s.quick;
  return {s.def};
}

std::vector<Params> expand_grid(const std::vector<ParamSpec>& specs, Preset preset,
                                const Overrides& overrides, size_t cpus) {
  std::vector<std::vector<std::string>> axes;
  for (auto& s : specs) {
    std::vector<std::string> raw;
    if (auto it = overrides.find(s.name); it != overrides.end())
      raw = it->second;
    else
      raw = preset_values(s, preset, cpus);
    std::vector<std::string> vals;  // in the order given, each once
    std::set<std::string> seen;
    for (auto& r : raw) {
      auto c = canonical_value(s, r);
      if (seen.insert(c).second) vals.push_back(c);
    }
    axes.push_back(std::move(vals));
  }
  // The product is counted before it is built: a few long -p lists must not exhaust memory.
  size_t points = 1;
  for (auto& a : axes)
    if (__builtin_mul_overflow(points, a.size(), &points)) points = SIZE_MAX;
  if (points > kMaxGridPoints)
    throw UsageError(
        fmt::format("-p values make {} combinations; at most {} in one run: split it into "
                    "several, with fewer values per -p",
                    points == SIZE_MAX ? "too many" : std::to_string(points), kMaxGridPoints));
  std::vector<Params> out;
  std::set<std::vector<std::pair<std::string, std::string>>> kept;  // points left the same by dropping
  std::vector<size_t> idx(specs.size(), 0);
  while (true) {
    std::vector<std::pair<std::string, std::string>> kv;
    for (size_t i = 0; i < specs.size(); ++i) {
      // A conditional parameter is left out where its condition does not hold (ParamSpec::only_with).
      if (const auto& [on, values] = specs[i].only_with; !on.empty()) {
        auto cond = std::find_if(kv.begin(), kv.end(), [&](auto& e) { return e.first == on; });
        if (cond == kv.end() || std::find(values.begin(), values.end(), cond->second) == values.end())
          continue;
      }
      kv.emplace_back(specs[i].name, axes[i][idx[i]]);
    }
    if (kept.insert(kv).second) out.emplace_back(std::move(kv));
    // Odometer over the axes: the last parameter varies fastest, like nested loops.
    size_t k = specs.size();
    while (k > 0) {
      --k;
      if (++idx[k] < axes[k].size()) break;
      idx[k] = 0;
      if (k == 0) return out;
    }
    if (specs.empty()) return out;
  }
}

}  // namespace ipclab

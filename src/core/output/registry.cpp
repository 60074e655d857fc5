// The registry as JSON: what `ipclab list --json` prints and a run's context carries, so that the
// report builds its pages, their order and their tables from it and knows no suite of its own.
#include "core/model/mechanism.hpp"
#include "core/output/output.hpp"

namespace ipclab::output {

namespace {

nlohmann::json param_json(const ParamSpec& p) {
  nlohmann::json j = {{"name", p.name}, {"type", type_name(p.type)}, {"default", p.def},
                      {"help", p.help}, {"choices", p.choices},      {"quick", p.quick},
                      {"full", p.full}};
  if (p.type == ParamType::Int || p.type == ParamType::Size) {
    if (p.min != INT64_MIN) j["min"] = p.min;
    if (p.max != INT64_MAX) j["max"] = p.max;
  }
  if (!p.aliases.empty()) j["aliases"] = p.aliases;
  if (!p.only_with.first.empty()) j["only_with"] = {{p.only_with.first, p.only_with.second}};
  if (p.per_cpu > 0) j["per_cpu"] = p.per_cpu;
  if (p.path) j["path"] = true;
  return j;
}

nlohmann::json column_json(const Column& c) {
  nlohmann::json j = {{"key", c.key}, {"value", c.value}, {"format", c.format}, {"help", c.help}};
  if (c.format == "kind") j["texts"] = latency_kind_texts();  // the cell's text for each kind
  if (!c.needs.empty()) j["needs"] = c.needs;
  return j;
}

}  // namespace

nlohmann::json registry_json(const std::set<std::string>& only) {
  const Registry& reg = Registry::get();
  nlohmann::json cols = nlohmann::json::array();
  for (auto& c : columns()) cols.push_back(column_json(c));
  nlohmann::json suites = nlohmann::json::array(), mechanisms = nlohmann::json::array();
  for (auto& name : reg.suite_names()) {
    if (!only.empty() && !only.count(name)) continue;
    const Suite* s = reg.suite(name);
    nlohmann::json names = nlohmann::json::array();
    for (auto& m : reg.mechanisms())
      if (m.suite == name) names.push_back(m.name);
    suites.push_back({{"name", name},
                      {"help", s ? s->help : ""},
                      {"mechanisms", names},
                      {"columns", cols},
                      {"plots", s ? s->plots : std::vector<std::string>{}},
                      {"scaling", s ? s->scaling : std::vector<std::string>{}}});
  }
  for (auto& m : reg.mechanisms()) {
    if (!only.empty() && !only.count(m.suite)) continue;
    nlohmann::json params = nlohmann::json::array();
    for (auto& p : m.params) params.push_back(param_json(p));
    mechanisms.push_back({{"suite", m.suite},
                          {"name", m.name},
                          {"kind", m.transport ? "transport"
                                   : m.loop    ? "loop"
                                               : "workload"},
                          {"help", m.help},
                          {"params", params}});
  }
  return {{"columns", cols}, {"suites", suites}, {"mechanisms", mechanisms}};
}

}  // namespace ipclab::output

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

nlohmann::json table_json(const Suite::Table& t) {
  nlohmann::json figures = nlohmann::json::array();
  for (auto& [header, figure] : t.figures) figures.push_back({{"key", header}, {"figure", figure}});
  return {{"id", t.id},       {"title", t.title},   {"where", t.where}, {"figures", figures},
          {"label", t.label}, {"across", t.across}, {"hide", t.hide}};
}

// What the report reads of a suite beyond its name, help and mechanisms: its plots, scaling,
// page tables, answers and roles (mechanism.hpp Suite), empty where it declares none.
void add_report_fields(nlohmann::json& j, const Suite* s) {
  j["plots"] = s ? s->plots : std::vector<std::string>{};
  j["scaling"] = s ? s->scaling : std::vector<std::string>{};
  j["tables"] = nlohmann::json::array();
  if (s)
    for (auto& t : s->tables) j["tables"].push_back(table_json(t));
  j["answers"] = s ? s->answers : std::vector<std::string>{};
  j["beside"] = s ? s->beside : "";
  j["headline"] = s && s->headline;
  j["floors"] = s && s->floors;
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
    nlohmann::json j = {{"name", name}, {"help", s ? s->help : ""}, {"mechanisms", names}, {"columns", cols}};
    add_report_fields(j, s);
    suites.push_back(j);
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

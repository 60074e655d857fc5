// The result file of SPEC §2 (docs/json-schema.md), and its reporter.
#include "core/output/reporter.hpp"

#include <fmt/format.h>

namespace ipclab::output {

std::string json_document(const nlohmann::json& context, const std::vector<Record>& records) {
  nlohmann::json doc;
  doc["schema_version"] = kSchemaVersion;
  doc["context"] = context;
  doc["benchmarks"] = nlohmann::json::array();
  std::set<Flag> flags;
  for (auto& r : records) {
    doc["benchmarks"].push_back(to_json(r));
    for (Flag f : record_flags(r)) flags.insert(f);
  }
  // What each flag the records show means and what to do about it, for the report.
  doc["context"]["flags"] = flags_json(flags);
  // Text from outside (a peer's error, the command line) may hold a stray byte: replaced, never
  // allowed to lose the file after the run.
  return doc.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

void JsonReporter::end(const std::vector<Record>& records) { commit(json_document(context_, records)); }

}  // namespace ipclab::output

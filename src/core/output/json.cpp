// The result file of SPEC §2 (docs/json-schema.md).
#include "core/output/output.hpp"

#include <fmt/format.h>

namespace ipclab::output {

std::string json_document(const nlohmann::json& context, const std::vector<Record>& records) {
  nlohmann::json doc;
  doc["schema_version"] = kSchemaVersion;
  doc["context"] = context;
  doc["benchmarks"] = nlohmann::json::array();
  for (auto& r : records) doc["benchmarks"].push_back(to_json(r));
  return doc.dump(1) + "\n";
}

}  // namespace ipclab::output

// `ipclab store import FILE... [--store PATH] [--kind import|ab] [--compare]`: earlier results.json
// files, reduced files and journals (- : one on standard input) into the results store
// (core/store/store.hpp), each a run of its kind.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <sstream>

#include "cli/commands.hpp"
#include "core/base/error.hpp"
#include "core/base/fs.hpp"
#include "core/output/reporter.hpp"
#include "core/store/store.hpp"

namespace ipclab::cli {
namespace {

// A file to import: the run's context and its records.
struct Input {
  std::string path;
  nlohmann::json context;
  std::vector<nlohmann::json> records;
};

// Reads and checks one file (- : standard input): a file that is no result file is a usage error
// of its own line.
Input read_input(const std::string& path) {
  Input in{path, nullptr, {}};
  std::string body;
  try {
    if (path == "-") {
      std::ostringstream in_stdin;
      in_stdin << std::cin.rdbuf();
      body = in_stdin.str();
    } else {
      body = read_regular_file(path);
    }
  } catch (const std::exception& e) {
    throw UsageError(fmt::format("store import {}: {}; give a results.json, a reduced file or a journal",
                                 brief(path), e.what()));
  }
  try {
    if (body.rfind("{\"ipclab_journal\"", 0) == 0) {  // a journal: a header line, then a record a line
      std::istringstream lines(body);
      std::string line;
      for (bool first = true; std::getline(lines, line); first = false) {
        if (line.empty()) continue;
        auto j = nlohmann::json::parse(line);
        if (first)
          in.context = j.at("context");
        else
          in.records.push_back(std::move(j));
      }
    } else {
      auto j = nlohmann::json::parse(body);
      in.context = j.at("context");
      for (auto& r : j.at("benchmarks")) in.records.push_back(r);
    }
  } catch (const std::exception&) {
    throw UsageError(
        fmt::format("store import {}: not a result file of ipclab (results.json, a reduced file "
                    "or a journal)",
                    brief(path)));
  }
  if (!in.context.is_object() || in.records.empty())
    throw UsageError(fmt::format("store import {}: holds no records; nothing to import", brief(path)));
  return in;
}

// --compare: what moved in the file since the last comparable run in the store, as a run says it
// at its end.
void print_compared(store::Store& s, const Input& in) {
  std::vector<Record> records;
  for (auto& r : in.records) records.push_back(record_from_json(r));
  if (const auto note = s.compare(records, in.context); !note.empty())
    fmt::print(stderr, "{}", stderr_line("warning: ", note));
  if (const auto since = output::since_text(records, output::TableNames{}); !since.lines.empty()) {
    fmt::print("{}: {}\n", in.path, since.heading);
    for (auto& line : since.lines) fmt::print("  {}\n", line);
  } else {
    fmt::print("{}: no earlier comparable run in {}\n", in.path, s.where());
  }
}

// Adds one file as a run of `kind`, unless the store holds it already. False when it was not stored.
bool import_one(store::Store& s, const Input& in, const std::string& kind, bool compare) {
  char abs[PATH_MAX];
  const std::string source = in.path == "-"                   ? "(standard input)"
                             : realpath(in.path.c_str(), abs) ? abs
                                                              : in.path;
  bool held = false;
  try {
    held = s.holds(in.context);
  } catch (const std::exception& e) {
    fmt::print(stderr, "ipclab: {}: {}\n", in.path, e.what());
    return false;
  }
  if (held) {
    fmt::print("{}: already in {} (the same run: date, host, command line, commit); not added again\n",
               in.path, s.where());
    return true;
  }
  if (compare) print_compared(s, in);
  if (const auto why = s.append(kind, in.context, in.records, source); !why.empty()) {
    fmt::print(stderr, "ipclab: {}: {}\n", in.path, why);
    return false;
  }
  fmt::print("{}: {} records stored in {}\n", in.path, in.records.size(), s.where());
  return true;
}

struct ImportArgs {
  std::vector<std::string> files;
  std::optional<std::string> store, kind;
  bool compare = false;
};

// With `compare`, each file's records are first compared with the last comparable run in the store,
// as a run's are at its end. Exit code: 0, or 1 when one was not stored.
int cmd_store_import(const ImportArgs& a) {
  const std::string kind = a.kind.value_or("import");
  if (kind != "import" && kind != "ab")
    throw UsageError(fmt::format("store import --kind '{}': use import or ab", brief(kind)));
  if (std::count(a.files.begin(), a.files.end(), "-") > 1)
    throw UsageError("store import: standard input (-) can be read once; give it once");
  // Every file read and checked before the store is touched: nothing is stored when one is wrong.
  std::vector<Input> inputs;
  for (auto& path : a.files) inputs.push_back(read_input(path));
  const std::string spec = a.store.value_or("results/ipclab.sqlite");
  std::string note;
  auto s = store::Store::open(spec, false, store::kDefaultWaitS, &note);
  if (!s) {
    fmt::print(stderr, "ipclab: {}\n", note);
    return 1;
  }
  int rc = 0;
  for (auto& in : inputs)
    if (!import_one(*s, in, kind, a.compare)) rc = 1;
  return rc;
}

Runner declare_store(CLI::App& sub) {
  auto a = std::make_shared<ImportArgs>();
  auto* import = sub.add_subcommand(
      "import",
      "Add earlier result files (results.json, reduced files, journals) to the store, each as a run");
  import->add_option("FILE", a->files, "result files to add (- : one read from standard input)")
      ->required()
      ->type_name("FILE");
  text_option(
      *import, "--kind", a->kind,
      "what the files' runs were: import (default), or ab (ipclab ab's slices of one side: kept, never "
      "compared with a run)")
      ->type_name("KIND");
  text_option(*import, "--store", a->store, "the store (default: results/ipclab.sqlite)")->type_name("PATH");
  flag_once(*import, "--compare", a->compare,
            "say, as a run does at its end, what moved in each file since the last comparable run already in "
            "the store (before the file is added)");
  sub.require_subcommand(1);
  return [a](const std::string&) { return cmd_store_import(*a); };
}

}  // namespace

IPCLAB_COMMAND(Command{"store", "The results store: store import FILE... [--store PATH]", declare_store});

}  // namespace ipclab::cli

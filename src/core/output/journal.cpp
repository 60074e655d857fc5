// The run's results journal: every finished record on disk as it completes (reporter.hpp).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "core/base/error.hpp"
#include "core/output/reporter.hpp"
#include "core/ownership/crash.hpp"
#include "core/ownership/journal.hpp"

#include <fmt/format.h>

namespace ipclab::output {

JournalReporter::JournalReporter(const std::string& beside) {
  const std::filesystem::path p(beside);
  folder_ = p.parent_path().empty() ? "." : p.parent_path().string();
  stem_ = p.stem().string();
  if (stem_.empty() || stem_[0] == '.') stem_ = "results" + stem_;
}

JournalReporter::~JournalReporter() {
  if (fd_ >= 0) {
    crash::set_journal(-1, "", "");
    ::close(fd_);
  }
  if (!committed_ && !tmp_.empty()) ipc::remove(ipc::Kind::File, tmp_);
}

// Created with the result files' temporaries, before the run: a folder that takes no file is
// found before any benchmark runs.
void JournalReporter::open() {
  try {
    fd_ = ipc::create_file(folder_, stem_ + ".journal", 0644, tmp_);
  } catch (const std::system_error& e) {
    throw UsageError(
        fmt::format("the results journal in {}: {}; choose a writable folder", folder_, e.code().message()));
  }
  path_ = fmt::format("{}{}.journal.{}.jsonl", folder_ == "." ? "" : folder_ + "/", stem_, ipc::run_id());
  crash::set_journal(fd_, tmp_, path_);
}

void JournalReporter::begin(const nlohmann::json& context, const std::vector<PlannedBenchmark>&) {
  // Its keys in this order, the journal's mark first (a json object would sort them).
  append(fmt::format("{{\"ipclab_journal\":1,\"schema_version\":{},\"context\":{}}}\n", kSchemaVersion,
                     context.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)));
}

void JournalReporter::record(const Record& r) {
  append(to_json_line(r));
  if (committed_) return;
  // Its first record makes it a result of the run: renamed to its own name, no longer a
  // temporary a signal or the next run's sweep would remove.
  if (!ipc::commit_file(tmp_, path_, false))
    throw RunError(fmt::format("{} exists; remove it, or let this run write its journal there", path_));
  committed_ = true;
  crash::journal_committed();
}

// One write(2) per line, so that a crash leaves whole lines (at worst a torn last one, which
// readers skip). A failed write is cut back to the last whole line.
void JournalReporter::append(const std::string& line) {
  for (size_t done = 0; done < line.size();) {
    const ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int e = n < 0 ? errno : EIO;
      if (::ftruncate(fd_, size_) == 0) ::lseek(fd_, size_, SEEK_SET);
      throw RunError(fmt::format("the results journal {}: not written: {}", path_, write_failure(e)));
    }
    done += size_t(n);
  }
  size_ += off_t(line.size());
}

void JournalReporter::end(const std::vector<Record>&) {
  // Every result file is written (the reporters before this one): the journal has served.
  crash::set_journal(-1, "", "");
  if (committed_)
    ::unlink(path_.c_str());
  else
    ipc::remove(ipc::Kind::File, tmp_);
  tmp_.clear();
  ::close(fd_);
  fd_ = -1;
  ended_ = true;
}

}  // namespace ipclab::output

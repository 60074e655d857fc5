#pragma once
// The flags: what casts doubt on an ok figure. Each has its id (as a record's or its series'
// `flags` holds it), the word the tables' status shows, what it means and what to do about it,
// here and nowhere else. Every place that raises a flag takes its id from this table, so that no
// flag goes without its remedy; the console, results.md, results.json (`context.flags`) and the
// report print these texts.
#include <set>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace ipclab {

enum class Flag {
  NonSteady,           // series.cpp: the slice rates trend
  Bimodal,             // series.cpp: the slice rates fall into two clusters
  BimodalRepetitions,  // statistics.cpp: the repetitions' times per op fall into two clusters
  Steal,               // record.cpp flag_steal: the hypervisor took more than kStealFlagShare
  ShortWindow,         // record.cpp flag_short_window: a window under the machine's floor
  CiTargetMissed,      // status only: --repetitions auto stopped short of --ci-target
  CountersUnavailable  // status only: kernel counters asked for and refused (kernel.unavailable)
};

struct FlagInfo {
  Flag flag;
  /// As a record's `flags` (or its series') holds it. ci_target_missed and counters_unavailable
  /// are shown from what the record says elsewhere (repetitions_auto.met, kernel.unavailable), never
  /// held in `flags`.
  const char* id;
  const char* word;  // as status_text shows it
  const char* meaning;
  const char* remedy;
};

/// Every flag, in the order of Flag.
const std::vector<FlagInfo>& flag_table();
const FlagInfo& flag_info(Flag f);
/// The flag of an id; null for an id no flag has (a file from another ipclab).
const FlagInfo* find_flag(std::string_view id);
inline const char* flag_id(Flag f) { return flag_info(f).id; }
/// {id: {word, meaning, remedy}} of `flags`: results.json's `context.flags`.
nlohmann::json flags_json(const std::set<Flag>& flags);

}  // namespace ipclab

#include "core/stats/flags.hpp"

#include <stdexcept>

namespace ipclab {

const std::vector<FlagInfo>& flag_table() {
  static const std::vector<FlagInfo> table = {
      {Flag::NonSteady, "non_steady", "non-steady", "the window's time slices drifted (a trend or a step)",
       "lengthen the window (--duration 1) or stop other work, and re-run"},
      {Flag::Bimodal, "bimodal", "bimodal", "the window's time slices fell into two levels",
       "pin the sides (-p placement=cross, --cpus) and re-run"},
      {Flag::BimodalRepetitions, "bimodal_repetitions", "bimodal repetitions",
       "the repetitions fell into two clusters (a placement or frequency change between them)",
       "pin the sides (-p placement=cross, --cpus) and re-run with --repetitions 7"},
      {Flag::Steal, "steal", "steal",
       "the hypervisor ran other work on this run's vCPUs for more than 5% of its measured window "
       "(steal time): its time per op holds waits that are not the benchmark's",
       "rerun on a host with dedicated (pinned) vCPUs, or compare only paired runs (`ipclab ab`, "
       "`--interleave`), whose sides lose alike"},
      {Flag::ShortWindow, "short_window", "short window",
       "the measured window was shorter than this machine's timer and scheduler allow (the window "
       "floor, `ipclab env`): one preemption or clock step moves its figure, so it is not ranked",
       "rerun with a longer --duration (twice the window floor or more; count-based benchmarks repeat "
       "their n until the window holds it)"},
      {Flag::CiTargetMissed, "ci_target_missed", "CI target missed",
       "the repetitions' interval stayed wider than --ci-target",
       "raise --max-repetitions or lengthen the window (--duration)"},
      {Flag::CountersUnavailable, "counters_unavailable", "counters unavailable",
       "the kernel refused a counter", "`ipclab env` says why and how to allow it"},
  };
  return table;
}

const FlagInfo& flag_info(Flag f) {
  for (auto& i : flag_table())
    if (i.flag == f) return i;
  throw std::logic_error("a flag without an entry in flag_table()");
}

const FlagInfo* find_flag(std::string_view id) {
  for (auto& i : flag_table())
    if (id == i.id) return &i;
  return nullptr;
}

nlohmann::json flags_json(const std::set<Flag>& flags) {
  nlohmann::json j = nlohmann::json::object();
  for (Flag f : flags) {
    const FlagInfo& i = flag_info(f);
    j[i.id] = {{"word", i.word}, {"meaning", i.meaning}, {"remedy", i.remedy}};
  }
  return j;
}

}  // namespace ipclab

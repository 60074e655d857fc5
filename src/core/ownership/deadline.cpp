#include "core/ownership/deadline.hpp"

#include <signal.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "core/ownership/cleanup.hpp"

namespace ipclab {

namespace {

char g_deadline_line[1024];
size_t g_deadline_len = 0;
char g_deadline_what[512];  // waiting_for(): "; it waited for <what>"
std::atomic<size_t> g_deadline_what_len{0};
std::atomic<bool> g_deadline_armed{false};
double g_deadline_s = 0;
struct sigaction g_previous_alarm {};

extern "C" void on_deadline(int) {
  (void)!::write(2, g_deadline_line, g_deadline_len);
  if (const size_t n = g_deadline_what_len.load()) (void)!::write(2, g_deadline_what, n);
  (void)!::write(2, "\n", 1);
  ipc::remove_all_now();
  _exit(1);  // the stalled body still runs: no destructors, no atexit
}

void arm_timer(double seconds) {
  itimerval t{};
  t.it_value.tv_sec = time_t(seconds);
  t.it_value.tv_usec = suseconds_t((seconds - double(time_t(seconds))) * 1e6);
  if (t.it_value.tv_sec == 0 && t.it_value.tv_usec == 0) t.it_value.tv_usec = 1;
  setitimer(ITIMER_REAL, &t, nullptr);
}

}  // namespace

Deadline::Deadline(double seconds, const std::string& line) {
  g_deadline_len = std::min(line.size(), sizeof g_deadline_line - 1);
  std::memcpy(g_deadline_line, line.data(), g_deadline_len);
  g_deadline_what_len.store(0);
  g_deadline_s = seconds;
  struct sigaction sa {};
  sa.sa_handler = on_deadline;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGALRM, &sa, &g_previous_alarm);
  arm_timer(seconds);
  g_deadline_armed.store(true);
}

Deadline::~Deadline() {
  g_deadline_armed.store(false);
  itimerval off{};
  setitimer(ITIMER_REAL, &off, nullptr);
  sigaction(SIGALRM, &g_previous_alarm, nullptr);
  g_deadline_what_len.store(0);
}

void Deadline::waiting_for(const std::string& what, double bound_s) {
  g_deadline_what_len.store(0);  // the handler writes no half-copied text
  if (!what.empty()) {
    const std::string text = "; it waited for " + what;
    const size_t n = std::min(text.size(), sizeof g_deadline_what);
    std::memcpy(g_deadline_what, text.data(), n);
    g_deadline_what_len.store(n);
  }
  if (bound_s <= 0 || !g_deadline_armed.load()) return;
  itimerval left{};
  getitimer(ITIMER_REAL, &left);
  const double remaining = double(left.it_value.tv_sec) + double(left.it_value.tv_usec) * 1e-6;
  if (remaining < bound_s + 5) arm_timer(bound_s + 5);
}

void Deadline::progress() {
  if (g_deadline_armed.load()) arm_timer(g_deadline_s);
}

}  // namespace ipclab

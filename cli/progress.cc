#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <string>

#include "cli/cli.h"

namespace backstep::cli {
namespace {

std::atomic<bool> g_interrupted{false};
bool g_bar_drawn = false;

void OnSigint(int) { g_interrupted.store(true); }

std::string Human(std::uint64_t n) {
  char buf[32];
  if (n >= 1'000'000'000)
    std::snprintf(buf, sizeof buf, "%.2fG", n / 1e9);
  else if (n >= 1'000'000)
    std::snprintf(buf, sizeof buf, "%.2fM", n / 1e6);
  else if (n >= 10'000)
    std::snprintf(buf, sizeof buf, "%.1fk", n / 1e3);
  else
    std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(n));
  return buf;
}

}  // namespace

bool Interrupted() { return g_interrupted.load(); }

void InstallInterruptHandler() {
  struct sigaction sa = {};
  sa.sa_handler = OnSigint;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
}

core::ProgressFn TerminalProgress() {
  if (!isatty(STDERR_FILENO)) {
    return [](std::string_view, std::uint64_t, std::uint64_t) { return !Interrupted(); };
  }
  using Clock = std::chrono::steady_clock;
  auto start = Clock::now();
  auto last = Clock::time_point();
  return [start, last](std::string_view phase, std::uint64_t done, std::uint64_t total) mutable {
    auto now = Clock::now();
    if (now - last < std::chrono::milliseconds(100) && done != total) return !Interrupted();
    last = now;
    double secs = std::chrono::duration<double>(now - start).count();
    double rate = secs > 0 ? done / secs : 0;
    std::string line = "\r" + std::string(phase) + " ";
    if (total != 0) {
      int width = 30;
      int filled = static_cast<int>(width * (double(done) / double(total)));
      if (filled > width) filled = width;
      char pct[16];
      std::snprintf(pct, sizeof pct, "%3d%% [", static_cast<int>(100.0 * done / total));
      line += pct + std::string(filled, '=') + std::string(width - filled, ' ') + "] " +
              Human(done) + "/" + Human(total);
    } else {
      line += Human(done);
    }
    line += "  " + Human(static_cast<std::uint64_t>(rate)) + "/s\033[K";
    std::fputs(line.c_str(), stderr);
    std::fflush(stderr);
    g_bar_drawn = true;
    return !Interrupted();
  };
}

void FinishProgress() {
  if (g_bar_drawn) {
    std::fputs("\r\033[K", stderr);
    std::fflush(stderr);
    g_bar_drawn = false;
  }
}

}  // namespace backstep::cli

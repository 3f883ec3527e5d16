#include "tools/ycsb/progress.h"

#include <unistd.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"

namespace farm::ycsb {
namespace {

constexpr int kBarWidth = 30;
constexpr absl::Duration kBarRedraw = absl::Milliseconds(100);

std::string Rate(double per_second) {
  if (per_second >= 1e6) return absl::StrFormat("%.2fM/s", per_second / 1e6);
  if (per_second >= 1e3) return absl::StrFormat("%.1fk/s", per_second / 1e3);
  return absl::StrFormat("%.0f/s", per_second);
}

ProgressMode Resolve(ProgressMode mode, std::FILE* out) {
  if (mode != ProgressMode::kAuto) return mode;
  return ::isatty(::fileno(out)) ? ProgressMode::kBar : ProgressMode::kLines;
}

}  // namespace

ProgressBar::ProgressBar(std::string label, int64_t total, ProgressMode mode, std::FILE* out,
                         absl::Duration line_interval)
    : label_(std::move(label)),
      total_(std::max<int64_t>(total, 1)),
      mode_(Resolve(mode, out)),
      out_(out),
      interval_(mode_ == ProgressMode::kBar ? kBarRedraw : line_interval),
      start_(absl::Now()),
      last_draw_(start_) {}

void ProgressBar::Update(int64_t done) {
  if (mode_ == ProgressMode::kOff || finished_) return;
  const absl::Time now = absl::Now();
  if (now - last_draw_ < interval_) return;
  last_draw_ = now;
  Draw(done, now, /*final=*/false);
}

void ProgressBar::Finish(int64_t done) {
  if (mode_ == ProgressMode::kOff || finished_) return;
  finished_ = true;
  Draw(done, absl::Now(), /*final=*/true);
}

void ProgressBar::Draw(int64_t done, absl::Time now, bool final) {
  const double fraction = std::clamp(static_cast<double>(done) / total_, 0.0, 1.0);
  const double seconds = absl::ToDoubleSeconds(now - start_);
  const std::string rate = Rate(seconds > 0 ? done / seconds : 0);
  if (mode_ == ProgressMode::kBar) {
    const int filled = static_cast<int>(fraction * kBarWidth);
    // "\033[K" clears what a longer previous line left behind.
    absl::FPrintF(out_, "\r%s [%s%s] %3.0f%%  %d/%d  %s\033[K%s", label_, std::string(filled, '#'),
                  std::string(kBarWidth - filled, ' '), 100 * fraction, done, total_, rate,
                  final ? absl::StrFormat("  %.1f s\n", seconds) : std::string());
  } else {
    absl::FPrintF(out_, "%s: %d/%d (%.0f%%) in %.1f s, %s%s\n", label_, done, total_,
                  100 * fraction, seconds, rate, final ? ", done" : "");
  }
  std::fflush(out_);
}

}  // namespace farm::ycsb

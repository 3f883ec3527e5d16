// ProgressLine: one status line on stderr for a long phase. On a terminal it is redrawn
// in place ("\r") at most every 200 ms; otherwise a line is printed every 2 s so logs
// stay readable. Finish() ends the line. One thread (main's, polling counters) uses it.
#ifndef FARM_TOOLS_LINKBENCH_PROGRESS_LINE_H_
#define FARM_TOOLS_LINKBENCH_PROGRESS_LINE_H_

#include <unistd.h>

#include <cstdio>
#include <string>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace farm::linkbench {

class ProgressLine {
 public:
  explicit ProgressLine(bool enabled) : enabled_(enabled), tty_(isatty(fileno(stderr)) != 0) {}

  // Shows `text` if a redraw is due (or `force`).
  void Show(const std::string& text, bool force = false) {
    if (!enabled_) return;
    const absl::Time now = absl::Now();
    if (!force && now - last_ < (tty_ ? absl::Milliseconds(200) : absl::Seconds(2))) return;
    last_ = now;
    if (tty_) {
      std::fprintf(stderr, "\r\033[K%s", text.c_str());
    } else {
      std::fprintf(stderr, "%s\n", text.c_str());
    }
    std::fflush(stderr);
    shown_ = true;
  }
  void Finish(const std::string& text) {
    Show(text, true);
    if (enabled_ && tty_ && shown_) std::fprintf(stderr, "\n");
  }

 private:
  const bool enabled_;
  const bool tty_;
  bool shown_ = false;
  absl::Time last_ = absl::InfinitePast();
};

}  // namespace farm::linkbench

#endif  // FARM_TOOLS_LINKBENCH_PROGRESS_LINE_H_

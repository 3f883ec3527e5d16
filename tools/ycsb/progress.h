// ProgressBar: progress of a long phase (a load of records) on a stream, stderr by
// default. On a terminal it redraws one line ("[#####     ] 45%  45000/100000  61.2k/s")
// at most every 100 ms; on anything else (a log file, a pipe) it prints one line every
// `line_interval`, so logs stay readable. Finish() ends with a final line either way.
//
// One thread (the one that watches the phase, e.g. main's polling a shared counter)
// calls Update and Finish; not thread-safe. The stream must outlive it.
#ifndef FARM_TOOLS_YCSB_PROGRESS_H_
#define FARM_TOOLS_YCSB_PROGRESS_H_

#include <cstdint>
#include <cstdio>
#include <string>

#include "absl/time/time.h"

namespace farm::ycsb {

enum class ProgressMode {
  kAuto,  // kBar when the stream is a terminal, else kLines
  kBar,
  kLines,
  kOff,
};

class ProgressBar {
 public:
  ProgressBar(std::string label, int64_t total, ProgressMode mode = ProgressMode::kAuto,
              std::FILE* out = stderr, absl::Duration line_interval = absl::Seconds(2));

  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // `done` of total units are finished. Cheap when nothing is due to be drawn.
  void Update(int64_t done);
  // Draws the final state and, for a bar, ends its line. Idempotent.
  void Finish(int64_t done);

  ProgressMode mode() const { return mode_; }

 private:
  void Draw(int64_t done, absl::Time now, bool final);

  const std::string label_;
  const int64_t total_;
  const ProgressMode mode_;  // never kAuto
  std::FILE* const out_;
  const absl::Duration interval_;
  const absl::Time start_;
  absl::Time last_draw_;
  bool finished_ = false;
};

}  // namespace farm::ycsb

#endif  // FARM_TOOLS_YCSB_PROGRESS_H_

#include "tools/common/gnuplot.h"

#include <sys/wait.h>

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "tools/common/sigpipe_blocked.h"

namespace farm::tools {

absl::Status RunGnuplot(const std::string& script, const std::string& output, const std::string& gnuplot) {
  FILE* pipe = popen(absl::StrCat(gnuplot, " 2>&1").c_str(), "w");
  if (pipe == nullptr) return absl::NotFoundError("cannot run gnuplot (Debian package gnuplot-nox)");
  int status = -1;
  bool written = false;
  {
    // After popen: the child must not inherit the blocked signal. pclose inside: it
    // flushes whatever a failed fflush left.
    SigpipeBlocked blocked;
    written = std::fwrite(script.data(), 1, script.size(), pipe) == script.size() && std::fflush(pipe) == 0;
    status = pclose(pipe);
  }
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (code == 127) return absl::NotFoundError("gnuplot is not installed (Debian package gnuplot-nox)");
    return absl::InternalError(absl::StrCat("gnuplot failed (exit status ", code, ") writing ", output));
  }
  if (!written) return absl::InternalError(absl::StrCat("gnuplot exited before it read its script for ", output));
  return absl::OkStatus();
}

}  // namespace farm::tools

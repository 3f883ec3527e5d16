#include "farm/base/secret_file.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace farm {

absl::StatusOr<std::string> ReadSecretFile(const std::string& path, absl::string_view flag) {
  if (path.empty()) return absl::InvalidArgumentError(absl::StrCat(flag, " is required"));
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", flag, " ", path));
  std::stringstream ss;
  ss << in.rdbuf();
  std::string secret = ss.str();
  while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r')) secret.pop_back();
  return secret;
}

}  // namespace farm

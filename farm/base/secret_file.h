// The cluster secret and passwords are kept in files (never on a command line, where
// `ps` shows them). ReadSecretFile gives a file's contents without its trailing line
// ends. `flag` names the setting in errors ("--secret_file is required", "cannot read
// --secret_file /etc/farm/secret").
#ifndef FARM_BASE_SECRET_FILE_H_
#define FARM_BASE_SECRET_FILE_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace farm {

absl::StatusOr<std::string> ReadSecretFile(const std::string& path, absl::string_view flag = "--secret_file");

}  // namespace farm

#endif  // FARM_BASE_SECRET_FILE_H_

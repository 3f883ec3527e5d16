#include "tools/ycsb/backends.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace farm::ycsb {

absl::Status BackendRegistry::Register(std::string name, std::string description,
                                       BackendRunner runner) {
  if (Find(name) != nullptr) {
    return absl::AlreadyExistsError(absl::StrCat("backend \"", name, "\" is registered twice"));
  }
  entries_.push_back({std::move(name), std::move(description), std::move(runner)});
  return absl::OkStatus();
}

const BackendRunner* BackendRegistry::Find(absl::string_view name) const {
  for (const Entry& e : entries_) {
    if (e.name == name) return &e.runner;
  }
  return nullptr;
}

std::string BackendRegistry::Describe() const {
  std::string out;
  for (const Entry& e : entries_) absl::StrAppend(&out, "  ", e.name, ": ", e.description, "\n");
  return out;
}

}  // namespace farm::ycsb

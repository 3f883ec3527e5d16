// Backends by name: OpenBackend("memory" | "mariadb" | "farm" | "graph-resp", options) opens a fresh store.
// Adding a backend is one row in the table in backend_registry.cc.
//
// BackendOptions is a bag of settings, name=value, that each backend reads what it
// needs from (documented per backend in BackendNames()' help text); unknown names are
// ignored so one option set serves every backend of a run.
#ifndef FARM_TOOLS_LINKBENCH_BACKEND_REGISTRY_H_
#define FARM_TOOLS_LINKBENCH_BACKEND_REGISTRY_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tools/linkbench/backend.h"

namespace farm::linkbench {

struct BackendOptions {
  std::map<std::string, std::string> settings;

  std::string Get(const std::string& name, const std::string& fallback = "") const {
    auto it = settings.find(name);
    return it == settings.end() || it->second.empty() ? fallback : it->second;
  }
};

struct BackendInfo {
  const char* name;
  const char* help;  // what it is and the settings it reads
  absl::StatusOr<std::unique_ptr<Backend>> (*open)(const BackendOptions& options);
};

// Every registered backend.
const std::vector<BackendInfo>& Backends();

// NotFound (listing the known names) for an unknown name; else the backend's own errors.
absl::StatusOr<std::unique_ptr<Backend>> OpenBackend(const std::string& name, const BackendOptions& options);

}  // namespace farm::linkbench

#endif  // FARM_TOOLS_LINKBENCH_BACKEND_REGISTRY_H_

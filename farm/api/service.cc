#include "farm/api/service.h"

#include "absl/strings/str_cat.h"
#include "farm/base/log.h"

namespace farm {

absl::Status ServiceSet::Add(std::unique_ptr<Service> service) {
  for (const std::unique_ptr<Service>& known : services_) {
    if (known->name() == service->name()) {
      return absl::AlreadyExistsError(absl::StrCat("the service ", service->name(), " is hosted twice"));
    }
  }
  if (services_.empty()) {
    absl::Status added = host_.AddConfigurationListener(
        [listening = listening_](uint64_t epoch, const std::vector<NodeId>& members) {
          MutexLock lock(&listening->mu);
          for (Service* s : listening->services) s->OnConfiguration(epoch, members);
        });
    if (!added.ok()) return added;
  }
  MutexLock lock(&listening_->mu);
  listening_->services.push_back(service.get());
  services_.push_back(std::move(service));
  return absl::OkStatus();
}

ServiceSet::~ServiceSet() {
  StopAll();
  MutexLock lock(&listening_->mu);
  listening_->services.clear();
}

absl::Status ServiceSet::StartAll() {
  if (stopped_) return absl::FailedPreconditionError("the services were stopped");
  for (; started_ < services_.size(); ++started_) {
    Service& s = *services_[started_];
    if (absl::Status started = s.Start(); !started.ok()) {
      s.Stop();  // what it started before failing
      return absl::Status(started.code(), absl::StrCat(s.name(), ": ", started.message()));
    }
    host_.AddCounters(s.name(), [&s] { return s.Counters(); });
    FARM_LOG(kInfo, "node %u: service %s started", host_.self(), s.name());
  }
  return absl::OkStatus();
}

void ServiceSet::StopAll() {
  if (stopped_) return;
  stopped_ = true;
  for (size_t i = services_.size(); i-- > 0;) {
    if (i < started_) host_.RemoveCounters(services_[i]->name());
    services_[i]->Stop();  // also those installed but never (or not fully) started
  }
  started_ = 0;
}

std::vector<Service*> ServiceSet::services() const {
  std::vector<Service*> out;
  for (const std::unique_ptr<Service>& s : services_) out.push_back(s.get());
  return out;
}

}  // namespace farm

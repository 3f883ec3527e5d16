#include "farm/api/host.h"

#include <utility>

namespace farm {

absl::Status msgRegisterHandler(Host& host, MsgId id, AppHandler handler, absl::string_view service) {
  return host.RegisterHandler(id, std::move(handler), service);
}

void RunOnThread(Host& host, size_t t, absl::AnyInvocable<void(Context&)> fn) {
  Context& ctx = host.context(t);
  RunOnContext(ctx, [&ctx, &fn] { fn(ctx); });
}

}  // namespace farm

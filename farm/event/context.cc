#include "farm/event/context.h"

#include <utility>

#include "farm/base/mutex.h"

namespace farm {

void RunOnContext(Context& ctx, absl::AnyInvocable<void()> fn) {
  Notification done;
  ctx.Post([&] {
    fn();
    done.Notify();
  });
  done.WaitForNotification();
}

}  // namespace farm

#include "kv/resp/string_value.h"

#include <utility>

#include "kv/resp/async_steps.h"
#include "kv/resp/store_replies.h"
#include "kv/resp/typed_value.h"

namespace farm::kv::resp {

absl::StatusOr<std::optional<absl::string_view>> StringOf(const Value& v) {
  if (!v.has_value()) return std::nullopt;
  absl::StatusOr<TypedView> typed = DecodeStored(*v);
  if (!typed.ok()) return typed.status();
  if (typed->type != ValueType::kString) return WrongTypeError();
  return typed->body;
}

absl::string_view StoredString(absl::string_view s, std::shared_ptr<std::string>* holder) {
  if (!NeedsEscape(s)) return s;
  *holder = std::make_shared<std::string>(EscapeString(s));
  return **holder;
}

std::optional<std::string> CheckStringSize(absl::string_view s, const StoreLimits& limits) {
  if (!NeedsEscape(s)) return CheckValueSize(s, limits);
  absl::Status status = CheckStoredSize(StoredStringSize(s), limits);
  if (status.ok()) return std::nullopt;
  return StoreErrorReply(status);
}

void PutPairs(std::shared_ptr<const Call> call, std::shared_ptr<KeyOps> ops, std::string reply,
              Done<absl::StatusOr<std::string>> done) {
  struct State {
    absl::Status status;
    std::string reply;
    Done<absl::StatusOr<std::string>> done;
  };
  auto state = std::make_shared<State>();
  state->reply = std::move(reply);
  state->done = std::move(done);
  RunSequentially(
      (call->args().size() - 1) / 2,
      [call, ops, state](size_t i, absl::AnyInvocable<void()> next) {
        if (!state->status.ok()) return next();
        const auto args = call->args();
        std::shared_ptr<std::string> escaped;
        const absl::string_view stored = StoredString(args[2 + 2 * i], &escaped);
        ops->Put(args[1 + 2 * i], stored,
                 [call, ops, state, escaped, next = std::move(next)](absl::Status s) mutable {
                   if (!s.ok()) state->status = s;
                   next();
                 });
      },
      [state] {
        if (!state->status.ok()) return state->done(state->status);
        state->done(std::move(state->reply));
      });
}

}  // namespace farm::kv::resp

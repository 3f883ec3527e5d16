#include "kv/resp/key_commands.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "kv/resp/resp_names.h"
#include "kv/resp/store_replies.h"

namespace farm::kv::resp {
namespace {

using CallPtr = std::shared_ptr<const Call>;

enum class Mode { kRename, kRenameNx, kCopy };

// One attempt of the command's transaction on `ops`: the source's Get, the destination's
// Get (RENAMENX, COPY without REPLACE), the destination's Put, RENAME's Remove; then
// done(reply or error), once.
class Transfer : public std::enable_shared_from_this<Transfer> {
 public:
  Transfer(CallPtr call, Mode mode, bool replace, StoreLimits limits, std::shared_ptr<KeyOps> ops,
           Done<CommandResult> done)
      : call_(std::move(call)),
        mode_(mode),
        replace_(replace),
        limits_(limits),
        ops_(std::move(ops)),
        done_(std::move(done)) {}

  void Start() {
    if (OverKeyLimit(src(), limits_)) return done_(Missing());
    ops_->Get(src(), [self = shared_from_this()](absl::StatusOr<Value> v) {
      self->OnSource(std::move(v));
    });
  }

 private:
  const std::string& src() const { return call_->args()[1]; }
  const std::string& dst() const { return call_->args()[2]; }
  CommandResult Missing() const {
    return mode_ == Mode::kCopy ? CommandResult(IntegerReply(0))
                                : CommandResult(RedisError("ERR no such key"));
  }
  std::string Success() const {
    return mode_ == Mode::kRename ? SimpleStringReply("OK") : IntegerReply(1);
  }

  void OnSource(absl::StatusOr<Value> v) {
    if (!v.ok()) return done_(v.status());
    if (!v->has_value()) return done_(Missing());
    if (src() == dst())
      return done_(mode_ == Mode::kRename ? SimpleStringReply("OK") : IntegerReply(0));
    if (std::optional<std::string> too_large = CheckKeySize(dst(), limits_))
      return done_(std::move(*too_large));
    stored_ = std::move(**v);
    if (mode_ == Mode::kRename || replace_) return Write();
    ops_->Get(dst(), [self = shared_from_this()](absl::StatusOr<Value> existing) {
      if (!existing.ok()) return self->done_(existing.status());
      if (existing->has_value()) return self->done_(IntegerReply(0));
      self->Write();
    });
  }

  void Write() {
    ops_->Put(dst(), stored_, [self = shared_from_this()](absl::Status s) {
      if (!s.ok()) return self->done_(s);
      if (self->mode_ == Mode::kCopy) return self->done_(self->Success());
      self->ops_->Remove(self->src(), [self](absl::StatusOr<bool> removed) {
        if (!removed.ok()) return self->done_(removed.status());
        self->done_(self->Success());
      });
    });
  }

  const CallPtr call_;
  const Mode mode_;
  const bool replace_;
  const StoreLimits limits_;
  const std::shared_ptr<KeyOps> ops_;
  Done<CommandResult> done_;
  std::string stored_;  // the source's bytes; the Put reads them until its callback
};

}  // namespace

bool IsKeyCommand(CommandId id) {
  return id == CommandId::kRename || id == CommandId::kRenameNx || id == CommandId::kCopy;
}

void RunKeyCommand(const DataEnv& env, std::shared_ptr<const Call> call,
                   std::shared_ptr<KeyOps> ops, ReplyDone done) {
  const Mode mode = call->spec->id == CommandId::kRename     ? Mode::kRename
                    : call->spec->id == CommandId::kRenameNx ? Mode::kRenameNx
                                                             : Mode::kCopy;
  bool replace = false;
  const auto args = call->args();
  if (mode == Mode::kCopy) {
    for (size_t i = 3; i < args.size(); ++i) {
      if (absl::EqualsIgnoreCase(args[i], "replace")) {
        replace = true;
      } else if (absl::EqualsIgnoreCase(args[i], "db") && i + 1 < args.size()) {
        int64_t db = 0;
        if (!ParseStrictInt64(args[i + 1], &db) || db < INT32_MIN || db > INT32_MAX) {
          return done(NotAnIntegerReply());
        }
        if (db != 0) return done(ErrorReply("ERR DB index is out of range"));
        ++i;
      } else {
        return done(ErrorReply("ERR syntax error"));
      }
    }
    if (args[1] == args[2])
      return done(ErrorReply("ERR source and destination objects are the same"));
  }
  const StoreLimits limits = env.limits;
  CommandBody body = [call, mode, replace, limits](std::shared_ptr<KeyOps> o,
                                                   Done<CommandResult> d) {
    std::make_shared<Transfer>(call, mode, replace, limits, std::move(o), std::move(d))->Start();
  };
  RunAtomically(env, ops, /*needs_txn=*/true, std::move(body), std::move(done));
}

}  // namespace farm::kv::resp

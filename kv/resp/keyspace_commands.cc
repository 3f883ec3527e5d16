#include "kv/resp/keyspace_commands.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "kv/resp/resp_names.h"
#include "kv/resp/scan_args.h"
#include "kv/resp/store_replies.h"
#include "kv/resp/typed_value.h"

namespace farm::kv::resp {
namespace {

// About how many keys a page of KEYS and of a flush holds.
constexpr uint32_t kBulkPageCount = 256;

std::string ScanReply(uint64_t cursor, const std::vector<std::string>& keys) {
  std::string reply;
  RespWriter w(&reply);
  w.ArrayHeader(2);
  w.Bulk(absl::StrCat(cursor));
  w.ArrayHeader(keys.size());
  for (const std::string& key : keys) w.Bulk(key);
  return reply;
}

// The keys of `keys` whose value is of `type`, read with one MultiGet (a key gone
// meanwhile is left out); then done(reply of ScanReply).
void FilterByType(Store* store, std::optional<ValueType> type, uint64_t cursor,
                  std::vector<std::string> keys, ReplyDone done) {
  if (!type.has_value() || keys.empty()) return done(ScanReply(cursor, {}));
  auto owned = std::make_shared<std::vector<std::string>>(std::move(keys));
  store->MultiGet(*owned,
                  [owned, type, cursor, done = std::move(done)](
                      absl::StatusOr<std::vector<std::optional<std::string>>> values) mutable {
                    if (!values.ok()) return done(StoreErrorReply(values.status()));
                    std::vector<std::string> kept;
                    for (size_t i = 0; i < owned->size(); ++i) {
                      if (!(*values)[i].has_value()) continue;
                      absl::StatusOr<TypedView> typed = DecodeStored(*(*values)[i]);
                      if (typed.ok() && typed->type == *type) {
                        kept.push_back(std::move((*owned)[i]));
                      }
                    }
                    done(ScanReply(cursor, kept));
                  });
}

// Pages from `cursor` to the end of the scan: page(keys) for each, then finish(OK), or
// finish(the first error). `page` may start store work of its own and call `next` when
// it is done (next(error) stops the walk).
struct PageWalk : std::enable_shared_from_this<PageWalk> {
  using PageFn = absl::AnyInvocable<void(std::vector<std::string> keys,
                                         absl::AnyInvocable<void(absl::Status)> next)>;
  Store* store;
  PageFn page;
  absl::AnyInvocable<void(absl::Status)> finish;

  void From(uint64_t cursor) {
    store->ScanKeys(cursor, kBulkPageCount,
                    [self = shared_from_this()](absl::StatusOr<KeyPage> got) mutable {
                      if (!got.ok()) return self->finish(got.status());
                      const uint64_t next_cursor = got->cursor;
                      PageWalk* walk = self.get();
                      walk->page(std::move(got->keys),
                                 [self = std::move(self), next_cursor](absl::Status s) mutable {
                                   if (!s.ok() || next_cursor == 0) return self->finish(s);
                                   self->From(next_cursor);
                                 });
                    });
  }
};

void Walk(Store* store, PageWalk::PageFn page, absl::AnyInvocable<void(absl::Status)> finish) {
  auto walk = std::make_shared<PageWalk>();
  walk->store = store;
  walk->page = std::move(page);
  walk->finish = std::move(finish);
  walk->From(0);
}

}  // namespace

bool IsKeyspaceCommand(CommandId id) {
  return id == CommandId::kScan || id == CommandId::kKeys || id == CommandId::kFlushAll ||
         id == CommandId::kFlushDb;
}

void RunScan(Store* store, absl::Span<const std::string> args, ReplyDone done) {
  const std::optional<uint64_t> cursor = ParseScanCursor(args[1]);
  if (!cursor.has_value()) return done(ErrorReply("ERR invalid cursor"));
  ScanOptions options;
  if (std::optional<std::string> error = ParseScanOptions(args, 2, /*allow_type=*/true, options)) {
    return done(ErrorReply(*error));
  }
  store->ScanKeys(*cursor, options.count,
                  [store, options = std::move(options),
                   done = std::move(done)](absl::StatusOr<KeyPage> page) mutable {
                    if (!page.ok()) return done(StoreErrorReply(page.status()));
                    std::vector<std::string> keys;
                    for (std::string& key : page->keys) {
                      if (options.Matches(key)) keys.push_back(std::move(key));
                    }
                    if (options.typed) {
                      return FilterByType(store, options.type, page->cursor, std::move(keys),
                                          std::move(done));
                    }
                    done(ScanReply(page->cursor, keys));
                  });
}

void RunKeys(Store* store, absl::Span<const std::string> args, ReplyDone done) {
  auto filter = std::make_shared<ScanOptions>();
  filter->pattern = args[1];
  auto found = std::make_shared<std::vector<std::string>>();
  Walk(
      store,
      [filter, found](std::vector<std::string> keys, absl::AnyInvocable<void(absl::Status)> next) {
        for (std::string& key : keys) {
          if (filter->Matches(key)) found->push_back(std::move(key));
        }
        next(absl::OkStatus());
      },
      [found, done = std::move(done)](absl::Status s) mutable {
        if (!s.ok()) return done(StoreErrorReply(s));
        std::string reply;
        RespWriter w(&reply);
        w.ArrayHeader(found->size());
        for (const std::string& key : *found) w.Bulk(key);
        done(std::move(reply));
      });
}

void RunFlush(Store* store, absl::Span<const std::string> args, ReplyDone done) {
  if (args.size() > 2 || (args.size() == 2 && !absl::EqualsIgnoreCase(args[1], "sync") &&
                          !absl::EqualsIgnoreCase(args[1], "async"))) {
    return done(ErrorReply("ERR syntax error"));
  }
  Walk(
      store,
      [store](std::vector<std::string> keys, absl::AnyInvocable<void(absl::Status)> next) {
        if (keys.empty()) return next(absl::OkStatus());
        struct Removes {
          std::vector<std::string> keys;  // the removes read them until their callbacks
          size_t pending = 0;
          absl::Status first_error;
          absl::AnyInvocable<void(absl::Status)> next;
        };
        auto removes = std::make_shared<Removes>();
        removes->keys = std::move(keys);
        removes->pending = removes->keys.size();
        removes->next = std::move(next);
        for (const std::string& key : removes->keys) {
          store->Remove(key, [removes](absl::StatusOr<bool> r) {
            if (!r.ok() && removes->first_error.ok()) removes->first_error = r.status();
            if (--removes->pending == 0) removes->next(removes->first_error);
          });
        }
      },
      [done = std::move(done)](absl::Status s) mutable {
        if (!s.ok()) return done(StoreErrorReply(s));
        done(SimpleStringReply("OK"));
      });
}

}  // namespace farm::kv::resp

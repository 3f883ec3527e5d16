#include "kv/resp/keyspace_commands.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "kv/resp/glob_match.h"
#include "kv/resp/resp_names.h"
#include "kv/resp/store_replies.h"
#include "kv/resp/typed_value.h"

namespace farm::kv::resp {
namespace {

constexpr uint32_t kDefaultScanCount = 10;
// About how many keys a page of KEYS and of a flush holds.
constexpr uint32_t kBulkPageCount = 256;

// Redis 7.0's cursor (parseScanCursorOrReply): what strtoul reads, with no leading
// space, nothing after it and no overflow — so "-1", "+5", "007" and "" are cursors too.
// The argument ends at a NUL byte, as the C string Redis parses does.
std::optional<uint64_t> ParseCursor(absl::string_view arg) {
  const std::string s(arg.substr(0, arg.find('\0')));
  if (!s.empty() && std::isspace(static_cast<unsigned char>(s[0]))) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const unsigned long value = std::strtoul(s.c_str(), &end, 10);  // NOLINT(runtime/int): Redis's type
  if (*end != '\0' || errno == ERANGE) return std::nullopt;
  return value;
}

// Which keys a listing keeps.
struct KeyFilter {
  bool all = true;  // MATCH absent or "*"
  std::string pattern;
  bool typed = false;             // TYPE given
  std::optional<ValueType> type;  // nullopt with typed: a type name no key has
  bool Matches(absl::string_view key) const { return all || GlobMatch(pattern, key); }
};

void SetPattern(absl::string_view pattern, KeyFilter& filter) {
  filter.all = pattern == "*";
  filter.pattern = std::string(pattern);
}

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
                      if (typed.ok() && typed->type == *type)
                        kept.push_back(std::move((*owned)[i]));
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
  const std::optional<uint64_t> cursor = ParseCursor(args[1]);
  if (!cursor.has_value()) return done(ErrorReply("ERR invalid cursor"));
  KeyFilter filter;
  uint32_t count = kDefaultScanCount;
  for (size_t i = 2; i < args.size(); i += 2) {
    const bool has_value = i + 1 < args.size();
    if (has_value && absl::EqualsIgnoreCase(args[i], "count")) {
      int64_t n = 0;
      if (!ParseStrictInt64(args[i + 1], &n)) return done(NotAnIntegerReply());
      if (n < 1) return done(ErrorReply("ERR syntax error"));
      count = static_cast<uint32_t>(std::min<int64_t>(n, UINT32_MAX));
    } else if (has_value && absl::EqualsIgnoreCase(args[i], "match")) {
      SetPattern(args[i + 1], filter);
    } else if (has_value && absl::EqualsIgnoreCase(args[i], "type")) {
      filter.typed = true;
      const std::string name = absl::AsciiStrToLower(args[i + 1]);
      filter.type = name == "string" ? std::optional(ValueType::kString)
                    : name == "hash" ? std::optional(ValueType::kHash)
                                     : std::nullopt;
    } else {
      return done(ErrorReply("ERR syntax error"));
    }
  }
  store->ScanKeys(*cursor, count,
                  [store, filter = std::move(filter),
                   done = std::move(done)](absl::StatusOr<KeyPage> page) mutable {
                    if (!page.ok()) return done(StoreErrorReply(page.status()));
                    std::vector<std::string> keys;
                    for (std::string& key : page->keys) {
                      if (filter.Matches(key)) keys.push_back(std::move(key));
                    }
                    if (filter.typed)
                      return FilterByType(store, filter.type, page->cursor, std::move(keys),
                                          std::move(done));
                    done(ScanReply(page->cursor, keys));
                  });
}

void RunKeys(Store* store, absl::Span<const std::string> args, ReplyDone done) {
  auto filter = std::make_shared<KeyFilter>();
  SetPattern(args[1], *filter);
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

#include "kv/shard_catalog.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "farm/api/log.h"
#include "farm/api/wire.h"

namespace farm::kv {
namespace {

constexpr size_t kShardBytes = 8 + 4 * 4;  // first, incarnation, stride, objects, owner

// Allocates `count` objects of `bytes` in transactions of kObjectsPerAllocTx and groups
// them into shards: runs of objects at one stride in one region, of one incarnation.
Task<absl::StatusOr<std::vector<Shard>>> AllocateShards(Context& ctx, uint32_t bytes, uint64_t count) {
  std::vector<Shard> shards;
  Shard run{};
  FatPtr last;
  auto close_run = [&] {
    if (run.buckets >= 2) shards.push_back(run);
    run = Shard{};
  };
  uint64_t allocated = 0;
  while (allocated < count) {
    TxHandle tx = txCreate(ctx);
    std::vector<FatPtr> got;
    const uint64_t n = std::min<uint64_t>(ShardCatalog::kObjectsPerAllocTx, count - allocated);
    for (uint64_t i = 0; i < n; ++i) {
      absl::StatusOr<ObjBuf*> object = co_await TxAlloc(*tx, bytes);
      if (!object.ok()) co_return object.status();
      got.push_back((*object)->ptr());
    }
    if (absl::Status s = co_await TxCommit(*tx); !s.ok()) co_return s;
    allocated += n;
    for (const FatPtr& p : got) {
      const bool extends = run.buckets >= 1 && p.addr.region() == run.first.region() &&
                           p.incarnation == run.incarnation && p.addr.offset() > last.addr.offset() &&
                           (run.buckets == 1 || p.addr.offset() - last.addr.offset() == run.stride);
      if (extends) {
        if (run.buckets == 1) run.stride = p.addr.offset() - last.addr.offset();
        ++run.buckets;
      } else {
        close_run();
        run = Shard{p.addr, p.incarnation, 0, 1, ctx.self()};
      }
      last = p;
    }
  }
  close_run();
  if (shards.empty()) co_return absl::ResourceExhaustedError("no two adjacent objects could be allocated");
  co_return shards;
}

}  // namespace

ShardFormat MakeShardFormat(uint32_t format, std::initializer_list<uint32_t> params) {
  ShardFormat f;
  f.format = format;
  WireWriter w(&f.params);
  for (uint32_t p : params) w.Put<uint32_t>(p);
  return f;
}

std::string ShardCatalog::EncodeDirectory(const ShardFormat& format, const std::vector<Shard>& shards) {
  std::string out;
  out.reserve(8 + format.params.size() + shards.size() * kShardBytes);
  WireWriter w(&out);
  w.Put<uint32_t>(format.format);
  out.append(format.params);
  w.Put<uint32_t>(static_cast<uint32_t>(shards.size()));
  for (const Shard& s : shards) {
    w.Put<uint64_t>(s.first.raw());
    w.Put<uint32_t>(s.incarnation);
    w.Put<uint32_t>(s.stride);
    w.Put<uint32_t>(s.buckets);
    w.Put<uint32_t>(s.owner);
  }
  return out;
}

absl::StatusOr<std::vector<Shard>> ShardCatalog::DecodeDirectory(const ShardFormat& expected,
                                                                 absl::string_view bytes) {
  if (bytes.size() < 4) {
    return absl::InvalidArgumentError(absl::StrFormat("kv directory of %d bytes is too short", bytes.size()));
  }
  const char* p = bytes.data();
  const uint32_t format = LoadLe<uint32_t>(p);
  if (format != expected.format) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "a kv directory of layout format %d, not %d: the table has another layout", format, expected.format));
  }
  const size_t header = 4 + expected.params.size() + 4;
  if (bytes.size() < header) {
    return absl::InvalidArgumentError(absl::StrFormat("kv directory of %d bytes is too short", bytes.size()));
  }
  if (bytes.substr(4, expected.params.size()) != expected.params) {
    return absl::FailedPreconditionError("a kv directory of the same layout with other parameters");
  }
  const uint64_t count = LoadLe<uint32_t>(p + header - 4);
  if (bytes.size() != header + count * kShardBytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "kv directory of %d bytes does not hold its %d shards", bytes.size(), count));
  }
  std::vector<Shard> shards;
  shards.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    const char* s = p + header + i * kShardBytes;
    shards.push_back(Shard{Addr::FromRaw(LoadLe<uint64_t>(s)), LoadLe<uint32_t>(s + 8), LoadLe<uint32_t>(s + 12),
                           LoadLe<uint32_t>(s + 16), static_cast<NodeId>(LoadLe<uint32_t>(s + 20))});
  }
  return shards;
}

absl::StatusOr<std::unique_ptr<ShardCatalog>> ShardCatalog::Install(Host& host, ShardCatalogOptions options) {
  if (options.objects_per_node < 2) return absl::InvalidArgumentError("a node needs at least 2 objects of a table");
  if (options.object_bytes == 0) return absl::InvalidArgumentError("a table's objects need a size");
  std::unique_ptr<ShardCatalog> catalog(new ShardCatalog(&host, options));
  ShardCatalog* self = catalog.get();
  const TableIdentity& id = options.identity;
  if (absl::Status s = msgRegisterHandler(
          host, id.directory_msg, [self](Context& ctx, const Message& m) { self->OnDirectoryRequest(ctx, m); },
          id.name);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = msgRegisterHandler(
          host, id.open_msg, [self](Context& ctx, const Message& m) { self->OnOpenRequest(ctx, m); }, id.name);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = msgRegisterHandler(
          host, id.map_msg, [self](Context& ctx, const Message& m) { self->OnMapRequest(ctx, m); }, id.name);
      !s.ok()) {
    return s;
  }
  return catalog;
}

ShardCatalog::ShardCatalog(Host* host, ShardCatalogOptions options)
    : host_(host), options_(std::move(options)), opening_(host->thread_count()) {}

void ShardCatalog::CreateShards(Context& ctx, Done<absl::Status> done) {
  {
    MutexLock lock(&mu_);
    if (creating_) {
      ctx.Defer([done = std::move(done)]() mutable {
        done(absl::FailedPreconditionError("this machine's shards were created already"));
      });
      return;
    }
    creating_ = true;
  }
  auto finish = [this, done = std::move(done)](absl::StatusOr<std::vector<Shard>> shards) mutable {
    {
      MutexLock lock(&mu_);
      if (!shards.ok()) {
        creating_ = false;  // may be tried again
      } else {
        shards_ = std::move(*shards);
      }
    }
    if (!shards.ok()) return done(shards.status());
    done(absl::OkStatus());
  };
  // A node restarted on its data has its shards already: their directory is durable.
  if (std::optional<std::string> kept = host_->Metadata(options_.identity.directory_metadata)) {
    FARM_LOG(kInfo, "node %u: %s: this node's shards kept from an earlier run", host_->self(), options_.identity.name);
    absl::StatusOr<std::vector<Shard>> dir = DecodeDirectory(options_.format, *kept);
    if (absl::IsFailedPrecondition(dir.status())) {
      return finish(absl::FailedPreconditionError(
          "this machine's kv shards (kept from an earlier run) have another layout than the one asked for"));
    }
    if (!dir.ok()) return finish(dir.status());
    return ctx.Defer([finish = std::move(finish), shards = std::move(*dir)]() mutable { finish(shards); });
  }
  Spawn(AllocateShards(ctx, options_.object_bytes, options_.objects_per_node),
        [this, &ctx, finish = std::move(finish)](absl::StatusOr<std::vector<Shard>> shards) mutable {
          if (!shards.ok()) return finish(shards.status());
          FARM_LOG(kInfo, "node %u: %s: %d shards allocated", host_->self(), options_.identity.name, shards->size());
          std::string directory = EncodeDirectory(options_.format, *shards);
          host_->PutMetadata(ctx, options_.identity.directory_metadata, std::move(directory),
                             [finish = std::move(finish), shards = std::move(*shards)](absl::Status s) mutable {
                               if (!s.ok()) return finish(s);
                               finish(std::move(shards));
                             });
        });
}

std::vector<Shard> ShardCatalog::local_shards() const {
  MutexLock lock(&mu_);
  return shards_.value_or(std::vector<Shard>{});
}

void ShardCatalog::OnDirectoryRequest(Context& ctx, const Message& message) {
  std::optional<std::string> directory;
  {
    MutexLock lock(&mu_);
    if (shards_) directory = EncodeDirectory(options_.format, *shards_);
  }
  if (!directory) {
    (void)msgReplyError(ctx, message, absl::UnavailableError("this machine has not created its kv shards yet"));
    return;
  }
  (void)msgReply(ctx, message, *directory);
}

void ShardCatalog::Open(Context& ctx, Done<absl::StatusOr<std::shared_ptr<const ShardList>>> done) {
  std::shared_ptr<const ShardList> table;
  {
    MutexLock lock(&mu_);
    table = table_;
  }
  if (table != nullptr) {
    ctx.Defer([table, done = std::move(done)]() mutable { done(table); });
    return;
  }
  auto& waiting = opening_[ctx.thread_index()];
  waiting.push_back(std::move(done));
  if (waiting.size() > 1) return;  // a fetch from this thread is under way
  Spawn(FetchFromCatalog(ctx), [this, &waiting](absl::StatusOr<std::shared_ptr<const ShardList>> r) {
    if (r.ok()) r = Adopt(*r);
    std::vector<Done<absl::StatusOr<std::shared_ptr<const ShardList>>>> all = std::move(waiting);
    waiting.clear();
    for (auto& d : all) d(r);
  });
}

absl::StatusOr<std::shared_ptr<const ShardList>> ShardCatalog::Build(std::vector<Shard> shards) const {
  if (shards.empty()) return absl::InvalidArgumentError("a table needs at least one shard");
  for (const Shard& s : shards) {
    if (s.buckets < 2 || s.first.is_null() || s.stride < options_.object_bytes) {
      return absl::InvalidArgumentError(
          absl::StrFormat("shard at %s: %d objects of stride %d (needs >= 2 of >= %d bytes)", s.first.ToString(),
                          s.buckets, s.stride, options_.object_bytes));
    }
  }
  // The same set of shards gives the same table whatever order they were published in.
  std::sort(shards.begin(), shards.end(), [](const Shard& a, const Shard& b) { return a.first.raw() < b.first.raw(); });
  return std::make_shared<const ShardList>(std::move(shards));
}

std::shared_ptr<const ShardList> ShardCatalog::Adopt(std::shared_ptr<const ShardList> table) {
  MutexLock lock(&mu_);
  if (table_ == nullptr) {
    table_ = std::move(table);
    // What every node of one table must log alike (a restarted cluster: the same too).
    uint64_t digest = 0;
    for (const Shard& s : *table_) digest = digest * 1000003 + s.first.raw();
    FARM_LOG(kInfo, "node %u: %s: table opened: %d shards, digest %016x", host_->self(), options_.identity.name,
             table_->size(), digest);
  }
  return table_;  // every thread uses the same table
}

void ShardCatalog::OnOpenRequest(Context& ctx, const Message& message) {
  std::shared_ptr<const ShardList> table;
  {
    MutexLock lock(&mu_);
    table = table_;
  }
  // The table is built from every member's directory: not before this node has joined
  // a configuration with the cluster's members (a restarted node hears peers' requests
  // before it has, and would build the table of the members it knew so far).
  if (table == nullptr && !host_->ready()) {
    (void)msgReplyError(ctx, message, absl::UnavailableError("the kv catalog coordinator has not joined the cluster yet"));
    return;
  }
  Message to = message;
  to.payload = {};  // not valid after this handler returns; only where the reply goes
  auto reply = [this, &ctx, to](absl::StatusOr<std::shared_ptr<const ShardList>> r) {
    if (!r.ok()) return (void)msgReplyError(ctx, to, r.status());
    (void)msgReply(ctx, to, EncodeDirectory(options_.format, **r));
  };
  if (table != nullptr) return reply(table);
  Spawn(Fetch(ctx), [this, reply = std::move(reply)](absl::StatusOr<std::shared_ptr<const ShardList>> r) mutable {
    if (r.ok()) r = Adopt(*r);
    reply(std::move(r));
  });
}

void ShardCatalog::OnMapRequest(Context& ctx, const Message& message) {
  std::shared_ptr<const ShardList> table;
  {
    MutexLock lock(&mu_);
    table = table_;
  }
  if (table == nullptr) {
    (void)msgReplyError(ctx, message, absl::NotFoundError("this machine has not opened the table"));
    return;
  }
  (void)msgReply(ctx, message, EncodeDirectory(options_.format, *table));
}

Task<absl::StatusOr<std::shared_ptr<const ShardList>>> ShardCatalog::FetchFromCatalog(Context& ctx) {
  const absl::Time give_up = absl::Now() + kOpenTimeout;
  while (true) {
    absl::StatusOr<std::string> reply = co_await MsgSend(ctx, options_.identity.catalog, options_.identity.open_msg, "");
    if (reply.ok()) {
      absl::StatusOr<std::vector<Shard>> dir = DecodeDirectory(options_.format, *reply);
      if (absl::IsFailedPrecondition(dir.status())) {
        co_return absl::FailedPreconditionError("the cluster's kv table has another layout than this machine's");
      }
      if (!dir.ok()) co_return dir.status();
      co_return Build(std::move(*dir));
    }
    const absl::StatusCode code = reply.status().code();
    if ((code != absl::StatusCode::kUnavailable && code != absl::StatusCode::kDeadlineExceeded) ||
        absl::Now() >= give_up) {
      co_return absl::Status(code, absl::StrCat("cannot open the kv table: ", reply.status().message()));
    }
    co_await SleepFor(ctx, absl::Milliseconds(20));
  }
}

Task<absl::StatusOr<std::shared_ptr<const ShardList>>> ShardCatalog::Fetch(Context& ctx) {
  const absl::Time give_up = absl::Now() + kOpenTimeout;
  while (true) {
    std::vector<Shard> shards;
    absl::Status missing;
    // A member that opened the table already has the cluster's table (this machine
    // became the coordinator by joining later): take it.
    for (NodeId m : clusterMembers(ctx)) {
      if (m == ctx.self()) continue;
      absl::StatusOr<std::string> reply = co_await MsgSendTo(ctx, m, options_.identity.map_msg, "");
      if (absl::IsNotFound(reply.status())) continue;
      if (!reply.ok()) {
        missing = absl::UnavailableError(absl::StrFormat("machine %d: %s", m, reply.status().message()));
        break;
      }
      absl::StatusOr<std::vector<Shard>> dir = DecodeDirectory(options_.format, *reply);
      if (absl::IsFailedPrecondition(dir.status())) {
        co_return absl::FailedPreconditionError(absl::StrFormat("machine %d runs the kv store with another layout", m));
      }
      if (!dir.ok()) co_return dir.status();
      co_return Build(std::move(*dir));
    }
    for (NodeId m : clusterMembers(ctx)) {
      if (!missing.ok()) break;
      absl::StatusOr<std::string> reply = co_await MsgSendTo(ctx, m, options_.identity.directory_msg, "");
      if (!reply.ok()) {
        missing = absl::UnavailableError(absl::StrFormat("machine %d: %s", m, reply.status().message()));
        break;
      }
      absl::StatusOr<std::vector<Shard>> dir = DecodeDirectory(options_.format, *reply);
      if (absl::IsFailedPrecondition(dir.status())) {
        co_return absl::FailedPreconditionError(absl::StrFormat("machine %d runs the kv store with another layout", m));
      }
      if (!dir.ok()) co_return dir.status();
      shards.insert(shards.end(), dir->begin(), dir->end());
    }
    if (missing.ok()) co_return Build(std::move(shards));
    if (absl::Now() >= give_up) {
      co_return absl::UnavailableError(absl::StrCat("cannot open the kv table: ", missing.message()));
    }
    co_await SleepFor(ctx, absl::Milliseconds(20));
  }
}

}  // namespace farm::kv

#include "kv/table_host.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "farm/api/coro.h"
#include "farm/api/log.h"
#include "kv/messages.h"

namespace farm::kv {
namespace {

// Allocates `count` buckets in transactions of kBucketsPerAllocTx and groups them into
// shards: runs of buckets at one stride in one region, of one incarnation.
Task<absl::StatusOr<std::vector<Shard>>> AllocateShards(Context& ctx, TableLayout layout,
                                                        uint64_t count) {
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
    const uint64_t n = std::min<uint64_t>(TableHost::kBucketsPerAllocTx, count - allocated);
    for (uint64_t i = 0; i < n; ++i) {
      absl::StatusOr<ObjBuf*> bucket = co_await TxAlloc(*tx, layout.bucket_bytes());
      if (!bucket.ok()) co_return bucket.status();
      got.push_back((*bucket)->ptr());
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
  if (shards.empty()) co_return absl::ResourceExhaustedError("no two adjacent buckets could be allocated");
  co_return shards;
}

bool SameLayout(const TableLayout& a, const TableLayout& b) {
  return a.neighbourhood == b.neighbourhood && a.inline_key_bytes == b.inline_key_bytes &&
         a.inline_value_bytes == b.inline_value_bytes;
}

}  // namespace

absl::StatusOr<std::unique_ptr<TableHost>> TableHost::Install(Host& host, TableOptions options) {
  if (absl::Status s = options.layout.Validate(); !s.ok()) return s;
  if (options.buckets_per_node < 2) return absl::InvalidArgumentError("a node needs at least 2 buckets");
  std::unique_ptr<TableHost> table(new TableHost(&host, options));
  TableHost* self = table.get();
  if (absl::Status s = msgRegisterHandler(
          host, options.identity.directory_msg,
          [self](Context& ctx, const Message& m) { self->OnDirectoryRequest(ctx, m); }, options.identity.name);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = msgRegisterHandler(
          host, options.identity.open_msg, [self](Context& ctx, const Message& m) { self->OnOpenRequest(ctx, m); }, options.identity.name);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = msgRegisterHandler(
          host, options.identity.map_msg, [self](Context& ctx, const Message& m) { self->OnMapRequest(ctx, m); },
          options.identity.name);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = msgRegisterHandler(host, options.identity.update_msg,
                                          [self](Context& ctx, const Message& m) { self->OnUpdate(ctx, m); }, options.identity.name);
      !s.ok()) {
    return s;
  }
  return table;
}

TableHost::TableHost(Host* host, TableOptions options)
    : host_(host), options_(options), executors_(host->thread_count()), opening_(host->thread_count()) {}

void TableHost::CreateShards(Context& ctx, Done<absl::Status> done) {
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
    absl::StatusOr<std::pair<TableLayout, std::vector<Shard>>> dir = DecodeDirectory(*kept);
    if (!dir.ok()) return finish(dir.status());
    if (!SameLayout(dir->first, options_.layout)) {
      return finish(absl::FailedPreconditionError(
          "this machine's kv shards (kept from an earlier run) have another layout than the one asked for"));
    }
    return ctx.Defer([finish = std::move(finish), shards = std::move(dir->second)]() mutable { finish(shards); });
  }
  Spawn(AllocateShards(ctx, options_.layout, options_.buckets_per_node),
        [this, &ctx, finish = std::move(finish)](absl::StatusOr<std::vector<Shard>> shards) mutable {
          if (!shards.ok()) return finish(shards.status());
          FARM_LOG(kInfo, "node %u: %s: %d shards allocated", host_->self(), options_.identity.name, shards->size());
          std::string directory = EncodeDirectory(options_.layout, *shards);
          host_->PutMetadata(ctx, options_.identity.directory_metadata, std::move(directory),
                             [finish = std::move(finish), shards = std::move(*shards)](absl::Status s) mutable {
                               if (!s.ok()) return finish(s);
                               finish(std::move(shards));
                             });
        });
}

std::vector<Shard> TableHost::local_shards() const {
  MutexLock lock(&mu_);
  return shards_.value_or(std::vector<Shard>{});
}

void TableHost::OnDirectoryRequest(Context& ctx, const Message& message) {
  std::optional<std::string> directory;
  {
    MutexLock lock(&mu_);
    if (shards_) directory = EncodeDirectory(options_.layout, *shards_);
  }
  if (!directory) {
    (void)msgReplyError(ctx, message, absl::UnavailableError("this machine has not created its kv shards yet"));
    return;
  }
  (void)msgReply(ctx, message, *directory);
}

void TableHost::Open(Context& ctx, Done<absl::StatusOr<std::shared_ptr<const ShardMap>>> done) {
  std::shared_ptr<const ShardMap> map;
  {
    MutexLock lock(&mu_);
    map = map_;
  }
  if (map != nullptr) {
    ctx.Defer([map, done = std::move(done)]() mutable { done(map); });
    return;
  }
  auto& waiting = opening_[ctx.thread_index()];
  waiting.push_back(std::move(done));
  if (waiting.size() > 1) return;  // a fetch from this thread is under way
  Spawn(FetchFromCatalog(ctx), [this, &waiting](absl::StatusOr<std::shared_ptr<const ShardMap>> r) {
    if (r.ok()) r = Adopt(*r);
    std::vector<Done<absl::StatusOr<std::shared_ptr<const ShardMap>>>> all = std::move(waiting);
    waiting.clear();
    for (auto& d : all) d(r);
  });
}

std::shared_ptr<const ShardMap> TableHost::Adopt(std::shared_ptr<const ShardMap> map) {
  MutexLock lock(&mu_);
  if (map_ == nullptr) {
    map_ = std::move(map);
    // What every node of one table must log alike (a restarted cluster: the same too).
    uint64_t digest = 0;
    for (const Shard& s : map_->shards()) digest = digest * 1000003 + s.first.raw();
    FARM_LOG(kInfo, "node %u: %s: table opened: %d shards, digest %016x", host_->self(), options_.identity.name, map_->shards().size(),
             digest);
  }
  return map_;  // every thread uses the same map
}

void TableHost::OnOpenRequest(Context& ctx, const Message& message) {
  std::shared_ptr<const ShardMap> map;
  {
    MutexLock lock(&mu_);
    map = map_;
  }
  // The map is built from every member's directory: not before this node has joined a
  // configuration with the cluster's members (a restarted node hears peers' requests
  // before it has, and would build the map of the members it knew so far).
  if (map == nullptr && !host_->ready()) {
    (void)msgReplyError(ctx, message, absl::UnavailableError("the kv catalog coordinator has not joined the cluster yet"));
    return;
  }
  Message to = message;
  to.payload = {};  // not valid after this handler returns; only where the reply goes
  auto reply = [this, &ctx, to](absl::StatusOr<std::shared_ptr<const ShardMap>> r) {
    if (!r.ok()) return (void)msgReplyError(ctx, to, r.status());
    (void)msgReply(ctx, to, EncodeDirectory(options_.layout, (*r)->shards()));
  };
  if (map != nullptr) return reply(map);
  Spawn(Fetch(ctx), [this, reply = std::move(reply)](absl::StatusOr<std::shared_ptr<const ShardMap>> r) mutable {
    if (r.ok()) r = Adopt(*r);
    reply(std::move(r));
  });
}

void TableHost::OnMapRequest(Context& ctx, const Message& message) {
  std::shared_ptr<const ShardMap> map;
  {
    MutexLock lock(&mu_);
    map = map_;
  }
  if (map == nullptr) {
    (void)msgReplyError(ctx, message, absl::NotFoundError("this machine has not opened the table"));
    return;
  }
  (void)msgReply(ctx, message, EncodeDirectory(options_.layout, map->shards()));
}

Task<absl::StatusOr<std::shared_ptr<const ShardMap>>> TableHost::FetchFromCatalog(Context& ctx) {
  const absl::Time give_up = absl::Now() + kOpenTimeout;
  while (true) {
    absl::StatusOr<std::string> reply = co_await MsgSend(ctx, options_.identity.catalog, options_.identity.open_msg, "");
    if (reply.ok()) {
      absl::StatusOr<std::pair<TableLayout, std::vector<Shard>>> dir = DecodeDirectory(*reply);
      if (!dir.ok()) co_return dir.status();
      const TableLayout& l = dir->first;
      if (!SameLayout(l, options_.layout)) {
        co_return absl::FailedPreconditionError("the cluster's kv table has another layout than this machine's");
      }
      absl::StatusOr<ShardMap> map = ShardMap::Create(l, std::move(dir->second));
      if (!map.ok()) co_return map.status();
      co_return std::make_shared<const ShardMap>(std::move(*map));
    }
    const absl::StatusCode code = reply.status().code();
    if ((code != absl::StatusCode::kUnavailable && code != absl::StatusCode::kDeadlineExceeded) ||
        absl::Now() >= give_up) {
      co_return absl::Status(code, absl::StrCat("cannot open the kv table: ", reply.status().message()));
    }
    co_await SleepFor(ctx, absl::Milliseconds(20));
  }
}

Task<absl::StatusOr<std::shared_ptr<const ShardMap>>> TableHost::Fetch(Context& ctx) {
  const absl::Time give_up = absl::Now() + kOpenTimeout;
  while (true) {
    std::vector<Shard> shards;
    absl::Status missing;
    // A member that opened the table already has the cluster's map (this machine became
    // the coordinator by joining later): take it.
    for (NodeId m : clusterMembers(ctx)) {
      if (m == ctx.self()) continue;
      absl::StatusOr<std::string> reply = co_await MsgSendTo(ctx, m, options_.identity.map_msg, "");
      if (absl::IsNotFound(reply.status())) continue;
      if (!reply.ok()) {
        missing = absl::UnavailableError(absl::StrFormat("machine %d: %s", m, reply.status().message()));
        break;
      }
      absl::StatusOr<std::pair<TableLayout, std::vector<Shard>>> dir = DecodeDirectory(*reply);
      if (!dir.ok()) co_return dir.status();
      if (!SameLayout(dir->first, options_.layout)) {
        co_return absl::FailedPreconditionError(
            absl::StrFormat("machine %d runs the kv store with another layout", m));
      }
      absl::StatusOr<ShardMap> map = ShardMap::Create(dir->first, std::move(dir->second));
      if (!map.ok()) co_return map.status();
      co_return std::make_shared<const ShardMap>(std::move(*map));
    }
    for (NodeId m : clusterMembers(ctx)) {
      if (!missing.ok()) break;
      absl::StatusOr<std::string> reply = co_await MsgSendTo(ctx, m, options_.identity.directory_msg, "");
      if (!reply.ok()) {
        missing = absl::UnavailableError(absl::StrFormat("machine %d: %s", m, reply.status().message()));
        break;
      }
      absl::StatusOr<std::pair<TableLayout, std::vector<Shard>>> dir = DecodeDirectory(*reply);
      if (!dir.ok()) co_return dir.status();
      const TableLayout& l = dir->first;
      if (!SameLayout(l, options_.layout)) {
        co_return absl::FailedPreconditionError(
            absl::StrFormat("machine %d runs the kv store with another layout", m));
      }
      shards.insert(shards.end(), dir->second.begin(), dir->second.end());
    }
    if (missing.ok()) {
      absl::StatusOr<ShardMap> map = ShardMap::Create(options_.layout, std::move(shards));
      if (!map.ok()) co_return map.status();
      co_return std::make_shared<const ShardMap>(std::move(*map));
    }
    if (absl::Now() >= give_up) {
      co_return absl::UnavailableError(absl::StrCat("cannot open the kv table: ", missing.message()));
    }
    co_await SleepFor(ctx, absl::Milliseconds(20));
  }
}

UpdateExecutor& TableHost::ExecutorOf(Context& ctx, std::shared_ptr<const ShardMap> map) {
  std::unique_ptr<UpdateExecutor>& e = executors_[ctx.thread_index()];
  if (e == nullptr) e = std::make_unique<UpdateExecutor>(ctx, std::move(map));
  return *e;
}

void TableHost::OnUpdate(Context& ctx, const Message& message) {
  absl::StatusOr<UpdateRequest> request = DecodeUpdateRequest(message.payload);
  if (!request.ok()) {
    (void)msgReplyError(ctx, message, request.status());
    return;
  }
  if (executors_[ctx.thread_index()] != nullptr) {
    return executors_[ctx.thread_index()]->Submit(*request, message);
  }
  // The first update on this thread: open the table (it is open on the sender, so every
  // member has published), then run it. The request is copied: the payload is not
  // valid after this handler returns.
  struct Copy {
    std::string key, value;
    UpdateRequest request;
    Message reply_to;
  };
  auto copy = std::make_shared<Copy>();
  copy->key = std::string(request->key);
  copy->value = std::string(request->value);
  copy->request = *request;
  copy->request.key = copy->key;
  copy->request.value = copy->value;
  copy->reply_to = message;
  copy->reply_to.payload = {};
  Open(ctx, [this, &ctx, copy](absl::StatusOr<std::shared_ptr<const ShardMap>> map) {
    if (!map.ok()) {
      (void)msgReplyError(ctx, copy->reply_to, map.status());
      return;
    }
    ExecutorOf(ctx, *map).Submit(copy->request, copy->reply_to);
  });
}

UpdateExecutorStats TableHost::update_stats() const {
  UpdateExecutorStats sum;
  for (const auto& e : executors_) {
    if (e == nullptr) continue;
    sum.updates += e->stats().updates;
    sum.transactions += e->stats().transactions;
    sum.retries += e->stats().retries;
  }
  return sum;
}

}  // namespace farm::kv

// TxService's failover recovery (tx_service.h): votes and decisions for the
// transactions a configuration change left without their coordinator or a participant.
#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "farm/base/log.h"
#include "tx/tx_service.h"

namespace farm::tx {
namespace {

constexpr absl::Duration kVoteAgain = absl::Milliseconds(100);

}  // namespace

struct FailoverResolution {
  size_t thread = 0;
  uint64_t epoch = 0;  // the epoch fenced when it started: every voter must have too
  std::vector<RecoveringTx> transactions;
  std::vector<bool> committed;  // by index: some survivor committed it
  int round = 0;
};

void TxService::Fenced(uint64_t epoch) {
  uint64_t now = fenced_epoch_.load(std::memory_order_acquire);
  while (now < epoch && !fenced_epoch_.compare_exchange_weak(now, epoch, std::memory_order_acq_rel)) {
  }
}

void TxService::ResolveRecovering(size_t thread) {
  ThreadContext* ctx = contexts_[thread].get();
  if (ctx == nullptr) return;
  auto resolution = std::make_shared<FailoverResolution>();
  resolution->thread = thread;
  resolution->epoch = ctx->fence_epoch();
  resolution->transactions = ctx->Recovering();
  if (resolution->transactions.empty()) return;
  resolution->committed.assign(resolution->transactions.size(), false);
  for (size_t i = 0; i < resolution->transactions.size(); ++i) {
    resolution->committed[i] = recent_commits_.Contains(resolution->transactions[i].transaction);
  }
  FARM_LOG(kInfo, "node %u thread %d: %d transactions to recover after a failure (epoch %d)", self_, thread,
           resolution->transactions.size(), resolution->epoch);
  AskVotes(std::move(resolution));
}

void TxService::AskVotes(std::shared_ptr<FailoverResolution> resolution) {
  ThreadContext* ctx = contexts_[resolution->thread].get();
  if (ctx == nullptr) return;
  std::shared_ptr<const membership::Placement> placement = ctx->placement();
  // Per surviving participant: the undecided transactions to ask it about.
  absl::flat_hash_map<NodeId, std::vector<size_t>> ask;
  for (size_t i = 0; i < resolution->transactions.size(); ++i) {
    if (resolution->committed[i]) continue;
    for (NodeId n : resolution->transactions[i].participants) {
      if (n == self_ || placement == nullptr || !placement->IsMember(n)) continue;
      ask[n].push_back(i);
    }
  }
  if (ask.empty()) return SettleFailover(std::move(resolution));
  struct Round {
    size_t outstanding = 0;
    bool failed = false;
  };
  auto round = std::make_shared<Round>();
  for (const auto& [node, indexes] : ask) round->outstanding += (indexes.size() + kMaxOutcomeQuery - 1) / kMaxOutcomeQuery;
  auto finished = [this, resolution, round] {
    if (!round->failed) return SettleFailover(resolution);
    ThreadContext* ctx = contexts_[resolution->thread].get();
    if (ctx == nullptr) return;
    ++resolution->round;
    ctx->loop().RunAfter(kVoteAgain, [this, resolution] { AskVotes(resolution); });
  };
  for (const auto& [node, indexes] : ask) {
    for (size_t first = 0; first < indexes.size(); first += kMaxOutcomeQuery) {
      std::vector<size_t> chunk(indexes.begin() + first,
                                indexes.begin() + std::min(indexes.size(), first + kMaxOutcomeQuery));
      std::vector<TxKey> keys;
      keys.reserve(chunk.size());
      for (size_t i : chunk) {
        keys.push_back(TxKey{resolution->transactions[i].transaction, resolution->transactions[i].epoch});
      }
      auto answered = [resolution, round, finished, node, chunk](const absl::Status& s, absl::string_view reply) {
        absl::StatusOr<std::vector<TxOutcome>> votes =
            s.ok() ? DecodeOutcomes(reply, chunk.size()) : absl::StatusOr<std::vector<TxOutcome>>(s);
        if (!votes.ok()) {
          if (resolution->round % 20 == 0) {
            FARM_LOG(kWarning, "failover recovery: node %d did not vote (asking again): %s", node,
                     votes.status().ToString());
          }
          round->failed = true;
        } else {
          for (size_t k = 0; k < chunk.size(); ++k) {
            if ((*votes)[k] == TxOutcome::kCommitted) resolution->committed[chunk[k]] = true;
          }
        }
        if (--round->outstanding == 0) finished();
      };
      absl::Status sent = ctx->msg().Call(node, kTxVoteMsgId, EncodeVoteQuery(resolution->epoch, keys), answered,
                                          ctx->options().rpc_timeout);
      if (!sent.ok()) answered(sent, "");
    }
  }
}

void TxService::SettleFailover(std::shared_ptr<FailoverResolution> resolution) {
  ThreadContext* ctx = contexts_[resolution->thread].get();
  if (ctx == nullptr) return;
  size_t committed = 0;
  for (size_t i = 0; i < resolution->transactions.size(); ++i) {
    const uint64_t id = resolution->transactions[i].transaction;
    committed += resolution->committed[i];
    ctx->SettleRecovered(id, resolution->committed[i], [this, id](const absl::Status& s) {
      if (!s.ok()) FARM_LOG(kError, "node %u: transaction %x recovered but not settled: %s", self_, id, s.ToString());
    });
  }
  FARM_LOG(kInfo, "node %u thread %d: recovered transactions settled: %d committed, %d aborted", self_,
           resolution->thread, committed, resolution->transactions.size() - committed);
}

}  // namespace farm::tx

// RespSession: the command state machine of one client connection, independent of
// sockets. Bytes go in (Feed), replies come out (output, ConsumeOutput); commands run on
// the Store of the connection's worker thread.
//
// Threads: a session lives on one worker thread, the Store's; every call is made there
// and every callback runs there. The Store must outlive the session and every store
// operation the session started.
//
// Invariants:
//   1. Replies leave in request order. Every started command owns a slot in a ring, in
//      request order; a reply joins the output only after every earlier slot's did.
//   2. Commands start in request order, and only when they cannot be seen out of order
//      (a connection sees its own writes, as with Redis): a write waits for earlier
//      commands in flight that read or write one of its keys; a read waits for earlier
//      writes of its keys; an exclusive command (DBSIZE INFO SCAN KEYS FLUSHALL FLUSHDB
//      WATCH UNWATCH EXEC DISCARD) waits for every earlier command and holds back every later one.
//      Commands on other keys overlap (pipelining). One exception: a write that goes
//      through the thread's WriteCombiner (SET HSET HMSET HDEL HINCRBY) does not wait
//      for earlier such writes of its key — the combiner applies a key's writes in the
//      order submitted, and combines them into one store step.
//   6. Commands started together are executed together: the lookups of the commands
//      started in one Pump (one Feed, or one completion that let more start) are
//      gathered and issued as one Store::MultiGet when it ends (read_batch.h).
//   3. Bounded memory: at most max_in_flight slots exist. While they are full, or the
//      output holds max_output_bytes, or the next command waits (2), nothing more is
//      parsed and wants_input() is false — the input buffered is then one read plus
//      one partial request. A MULTI queue holds at most max_queued_bytes.
//   4. After a protocol error or QUIT nothing more is parsed; once its reply is in the
//      output, close_requested() turns true: write the output, then close. After
//      EndOfInput, close_requested() turns true once every complete request received
//      has been answered (a partial request is dropped).
//   5. on_progress runs only from store callbacks, never inside Feed, EndOfInput or
//      ConsumeOutput, and is the last thing the session does in that callback, so it
//      may call back into the session (or destroy its owner's reference).
//
// Transactions (Redis semantics on StoreTxn): WATCH begins a StoreTxn (at the first
// WATCH) and reads the keys in it; WATCH always answers +OK, as Redis's does — a key
// that cannot be read (a conflict, a node away) dooms the transaction and EXEC answers
// nil. MULTI queues commands (+QUEUED; unknown-command and
// arity errors are replied at once and make EXEC fail with EXECABORT). EXEC runs the
// queue inside the watched transaction, or a fresh one, and commits: Aborted with WATCH
// -> null array; without WATCH the whole transaction is retried (up to
// max_txn_attempts). If the session is destroyed mid-EXEC, nothing is committed.
//
// Another service's commands (options.extension, resp/command_extension.h) run as
// exclusive commands, after the store's own table is consulted; after MULTI they are
// refused (an error reply, and EXEC then answers EXECABORT): a MULTI/EXEC transaction
// is the store's.
#ifndef FARM_KV_RESP_RESP_SESSION_H_
#define FARM_KV_RESP_RESP_SESSION_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/strings/string_view.h"
#include "kv/resp/data_commands.h"
#include "kv/resp/info_command.h"
#include "kv/resp/key_ops.h"
#include "kv/resp/local_commands.h"
#include "kv/resp/resp_commands.h"
#include "kv/resp/resp_names.h"
#include "kv/resp/session_ops.h"
#include "kv/resp/write_combiner.h"
#include "kv/store.h"
#include "resp/command_extension.h"
#include "resp/protocol_session.h"

namespace farm::kv::resp {

struct RespSessionOptions {
  std::string password;  // empty: no AUTH needed
  RespParserLimits parser_limits;
  size_t max_in_flight = 128;          // reply slots (commands started, not yet output)
  size_t max_output_bytes = 64 << 20;  // stop starting commands while this much waits
  size_t max_queued_bytes = 64 << 20;  // arguments queued after MULTI
  int max_txn_attempts = 100;          // for MSET, multi-key DEL, EXEC without WATCH
  uint64_t client_id = 0;              // CLIENT ID
  RespCounters* counters = nullptr;    // optional; must outlive the session
  uint16_t port = 0;                   // for INFO and CONFIG GET
  uint64_t max_clients = 0;            // for INFO and CONFIG GET
  // The worker thread's, shared by its sessions (write_combiner.h); null: the session
  // makes its own (its writes are then combined only with each other).
  std::shared_ptr<WriteCombiner> write_combiner;
  // Another service's commands answered on this connection (the graph's on the kv
  // port); null: none. Run on worker thread `thread`, the session's.
  std::shared_ptr<::farm::resp::CommandExtension> extension;
  size_t thread = 0;
};

class RespSession final : public ::farm::resp::ProtocolSession,
                          public std::enable_shared_from_this<RespSession> {
 public:
  static std::shared_ptr<RespSession> Create(Store* store, RespSessionOptions options);
  ~RespSession() override;
  RespSession(const RespSession&) = delete;
  RespSession& operator=(const RespSession&) = delete;

  // Called after store callbacks appended output, made the session want input again or
  // requested the close (invariant 5).
  void set_on_progress(absl::AnyInvocable<void()> on_progress) override {
    on_progress_ = std::move(on_progress);
  }

  // Bytes received from the client. Ignored once closing.
  void Feed(absl::string_view bytes) override;
  // The client will send nothing more (invariant 4).
  void EndOfInput() override;

  // Replies not yet consumed.
  absl::string_view output() const override { return absl::string_view(output_).substr(output_pos_); }
  // The first n bytes of output() were sent; may start waiting commands.
  void ConsumeOutput(size_t n) override;

  // Whether the owner should read more input now (invariant 3).
  bool wants_input() const override { return !closing_ && !input_ended_ && stall_ == Stall::kNeedInput; }
  // Write out output(), then close the connection (invariant 4).
  bool close_requested() const override { return close_requested_; }

  // For tests and statistics.
  size_t in_flight() const { return in_flight_; }
  size_t slots_in_use() const { return static_cast<size_t>(tail_ - head_); }
  size_t buffered_input_bytes() const { return parser_.buffered_bytes(); }
  const ConnectionState& state() const { return state_; }
  const ReadBatch::Stats& read_batch_stats() const { return store_ops_->batch().stats(); }
  const WriteCombiner& write_combiner() const { return *combiner_; }

 private:
  enum class Stall { kNeedInput, kOutputFull, kBlocked, kClosed };

  struct Slot {
    bool done = false;
    bool close_after = false;  // QUIT, protocol error
    bool exclusive = false;
    Access access = Access::kLocal;
    std::shared_ptr<Call> call;  // while running: its keys are in use (invariant 2)
    std::string reply;
  };

  RespSession(Store* store, RespSessionOptions options);

  // --- Starting commands (resp_session.cc) ---
  void Pump();
  bool TryStart();
  bool Conflicts(const CommandSpec& spec, absl::Span<const std::string> args) const;
  void Start(const CommandSpec& spec);
  void Reject(std::string message);
  void StartAsync(const CommandSpec& spec, Access access, bool exclusive,
                  absl::AnyInvocable<void(std::shared_ptr<Call>, ReplyDone)> run);
  void RunLocal(const CommandSpec& spec, absl::Span<const std::string> args, ReplyDone done);
  // SCAN KEYS FLUSHALL FLUSHDB (keyspace_commands.h) on the session's store.
  void RunKeyspaceCommand(const Call& call, ReplyDone done);
  std::shared_ptr<Call> TakeCall(const CommandSpec* spec);
  void RecycleCall(std::shared_ptr<Call> call);
  void ProtocolError();
  void MaybeFinishInput();

  // --- Reply slots (resp_session.cc) ---
  uint64_t NewSlot();
  Slot& SlotAt(uint64_t seq) { return ring_[seq & (ring_.size() - 1)]; }
  void ReplyNow(std::string reply, bool close_after = false);
  ReplyDone SlotDone(uint64_t seq);
  void Complete(uint64_t seq, std::string reply);
  void FlushDone();

  // --- MULTI / EXEC / WATCH (resp_session_txn.cc) ---
  void Queue(const CommandSpec& spec);
  void ResetMulti();
  void Unwatch();
  void StartExec(const CommandSpec& spec);
  void StartWatch(const CommandSpec& spec);
  void RunQueued(const std::shared_ptr<Call>& call, const std::shared_ptr<KeyOps>& ops,
                 ReplyDone done);

  Store* const store_;
  const RespSessionOptions options_;
  const std::shared_ptr<WriteCombiner> combiner_;
  const DataEnv data_env_;
  const LocalEnv local_env_;
  const InfoEnv info_env_;
  const std::shared_ptr<SessionOps> store_ops_;  // lookups batched (invariant 6)
  absl::AnyInvocable<void()> on_progress_;

  RespParser parser_;
  bool parked_ = false;  // parser_.args() holds a request not started yet
  const CommandSpec* parked_spec_ = nullptr;
  Stall stall_ = Stall::kNeedInput;
  bool pumping_ = false;
  int api_depth_ = 0;  // inside Feed / EndOfInput / ConsumeOutput: no on_progress

  // Slots [head_, tail_) in request order; ring_.size() is a power of two.
  std::vector<Slot> ring_;
  uint64_t head_ = 0;
  uint64_t tail_ = 0;
  size_t in_flight_ = 0;  // slots not done
  bool exclusive_running_ = false;
  std::vector<std::shared_ptr<Call>> spare_calls_;

  std::string output_;
  size_t output_pos_ = 0;
  bool closing_ = false;  // parse nothing more
  bool close_requested_ = false;
  bool input_ended_ = false;

  ConnectionState state_;
  bool in_multi_ = false;
  bool multi_failed_ = false;  // EXEC will reply EXECABORT
  std::vector<std::shared_ptr<Call>> queued_;
  size_t queued_bytes_ = 0;
  std::shared_ptr<StoreTxn> watch_txn_;  // begun by the first WATCH; null: none
  // Set when a WATCHed key could not be read in watch_txn_ (a conflict, a node away):
  // WATCH still answered +OK, as Redis's always does, and EXEC answers nil.
  std::shared_ptr<bool> watch_doomed_;
};

}  // namespace farm::kv::resp

#endif  // FARM_KV_RESP_RESP_SESSION_H_

// GraphSession: one client connection of the graph service, independent of sockets
// (a resp::ProtocolSession): RESP2 requests in (Feed), replies out (output,
// ConsumeOutput); graph commands run on the GraphStore of the connection's worker
// thread (commands and replies: graph_ops.h, graph_local_commands.h; README.md).
//
// Threads: a session lives on one worker thread, the store's; every call is made there
// and every callback runs there. The store must outlive the session and every store
// operation the session started (their continuations hold the session weakly: if it is
// gone they do nothing).
//
// Invariants:
//   1. One command at a time: a graph command's store operation is started only when
//      the previous one has replied, so replies leave in request order and a connection
//      sees its own writes. Pipelined requests are parsed one after the other from what
//      was read; the next starts as soon as the previous one's reply is in the output.
//   2. Bounded memory: while a store operation runs, or max_output_bytes of replies
//      wait for the client, nothing more is parsed and wants_input() is false, so the
//      unparsed input is at most one read plus one partial request (whose arguments the
//      parser limits bound: parser_limits).
//   3. Closing: after a protocol error (Redis's reply, e.g. "-ERR Protocol error: ...")
//      or QUIT (+OK) nothing more is parsed, and close_requested() turns true with that
//      reply in the output. After EndOfInput, close_requested() turns true once every
//      complete request received has been answered (a partial request is dropped).
//   4. on_progress runs only from store continuations, never inside Feed, EndOfInput
//      or ConsumeOutput, and is the last thing the session does there, so it may call
//      back into the session.
//   5. Errors other than protocol errors (unknown command, arity, arguments, store
//      errors) are replies; the connection goes on.
#ifndef FARM_GRAPH_RESP_GRAPH_SESSION_H_
#define FARM_GRAPH_RESP_GRAPH_SESSION_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/functional/any_invocable.h"
#include "absl/strings/string_view.h"
#include "graph/store.h"
#include "resp/protocol_session.h"
#include "resp/resp_counters.h"
#include "resp/resp_parser.h"

namespace farm::graph {

// Node data is at most 1 MiB: a bulk string up to this size gets the graph's clear
// "data is too large" error; a longer one is a protocol error (and closes).
inline constexpr int64_t kDefaultGraphMaxBulkBytes = 16 << 20;

struct GraphSessionOptions {
  ::farm::resp::RespParserLimits parser_limits = {.max_bulk_bytes = kDefaultGraphMaxBulkBytes};
  size_t max_output_bytes = 64 << 20;  // stop parsing while this much waits for the client
  ::farm::resp::RespCounters* counters = nullptr;  // optional; must outlive the session
  // LINK.LOAD's token (GraphStore::LoadLinks): one per connection, so a client's
  // successive LINK.LOADs into one list continue one load.
  uint64_t load_token = 1;
};

class GraphSession final : public ::farm::resp::ProtocolSession,
                           public std::enable_shared_from_this<GraphSession> {
 public:
  static std::shared_ptr<GraphSession> Create(GraphStore* store, GraphSessionOptions options);
  ~GraphSession() override = default;
  GraphSession(const GraphSession&) = delete;
  GraphSession& operator=(const GraphSession&) = delete;

  void set_on_progress(absl::AnyInvocable<void()> on_progress) override {
    on_progress_ = std::move(on_progress);
  }
  void Feed(absl::string_view bytes) override;
  void EndOfInput() override;
  absl::string_view output() const override {
    return absl::string_view(output_).substr(output_pos_);
  }
  void ConsumeOutput(size_t n) override;
  bool wants_input() const override {
    return !closing_ && !input_ended_ && !running_ && !OutputFull();
  }
  bool close_requested() const override { return close_requested_; }

  // For tests: a store operation is in flight; bytes received but not parsed.
  bool running() const { return running_; }
  size_t buffered_input_bytes() const { return parser_.buffered_bytes(); }

 private:
  GraphSession(GraphStore* store, GraphSessionOptions options);

  // Parses and runs requests until one waits for the store, the output is full, the
  // input is used up or the session closes (invariants 1-3).
  void Pump();
  // Handles the request in parser_.args().
  void Dispatch();
  void OnStoreReply(std::string reply);
  void Append(absl::string_view reply);
  // Counts an error reply (options_.counters).
  void CountReply(absl::string_view reply);
  void CloseAfter(absl::string_view reply);
  void MaybeFinishInput();
  bool OutputFull() const { return output_.size() - output_pos_ >= options_.max_output_bytes; }

  GraphStore* const store_;
  const GraphSessionOptions options_;
  absl::AnyInvocable<void()> on_progress_;
  ::farm::resp::RespParser parser_;
  std::string output_;
  size_t output_pos_ = 0;  // output_[0, output_pos_) was consumed
  bool running_ = false;   // a store operation is in flight (invariant 1)
  bool pumping_ = false;   // inside Pump
  int api_depth_ = 0;      // inside Feed / EndOfInput / ConsumeOutput (invariant 4)
  bool closing_ = false;   // parse nothing more
  bool close_requested_ = false;
  bool input_ended_ = false;
};

}  // namespace farm::graph

#endif  // FARM_GRAPH_RESP_GRAPH_SESSION_H_

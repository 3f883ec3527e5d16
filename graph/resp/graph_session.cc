#include "graph/resp/graph_session.h"

#include <algorithm>
#include <utility>

#include "graph/resp/graph_commands.h"
#include "graph/resp/graph_local_commands.h"
#include "graph/resp/graph_ops.h"
#include "graph/resp/graph_request.h"
#include "resp/resp_writer.h"

namespace farm::graph {
namespace {

using ::farm::resp::ErrorReply;
using ::farm::resp::RespCounters;
using ::farm::resp::RespParser;

// Output that grew for a big reply gives its memory back once drained.
constexpr size_t kMaxIdleCapacity = 1 << 20;
constexpr size_t kCompactOutputAfter = 64 * 1024;

}  // namespace

std::shared_ptr<GraphSession> GraphSession::Create(GraphStore* store, GraphSessionOptions options) {
  return std::shared_ptr<GraphSession>(new GraphSession(store, std::move(options)));
}

GraphSession::GraphSession(GraphStore* store, GraphSessionOptions options)
    : store_(store), options_(std::move(options)), parser_(options_.parser_limits) {}

void GraphSession::Feed(absl::string_view bytes) {
  if (closing_ || input_ended_) return;
  ++api_depth_;
  parser_.Feed(bytes);
  Pump();
  --api_depth_;
}

void GraphSession::EndOfInput() {
  if (input_ended_) return;
  ++api_depth_;
  input_ended_ = true;
  Pump();
  --api_depth_;
}

void GraphSession::ConsumeOutput(size_t n) {
  ++api_depth_;
  output_pos_ += std::min(n, output_.size() - output_pos_);
  if (output_pos_ == output_.size()) {
    output_.clear();
    output_pos_ = 0;
    if (output_.capacity() > kMaxIdleCapacity) std::string().swap(output_);
  } else if (output_pos_ >= kCompactOutputAfter && output_pos_ * 2 >= output_.size()) {
    output_.erase(0, output_pos_);
    output_pos_ = 0;
  }
  Pump();  // the output may have been full
  --api_depth_;
}

void GraphSession::Pump() {
  if (pumping_) return;  // a store reply came inside Dispatch: the loop below goes on
  pumping_ = true;
  while (!closing_ && !running_ && !OutputFull()) {
    const RespParser::Result r = parser_.Parse();
    if (r == RespParser::Result::kNeedMore) break;
    if (r == RespParser::Result::kError) {
      if (options_.counters != nullptr) RespCounters::Add(options_.counters->protocol_errors);
      CloseAfter(ErrorReply(parser_.error()));
      break;
    }
    if (options_.counters != nullptr) RespCounters::Add(options_.counters->commands);
    Dispatch();
  }
  pumping_ = false;
  MaybeFinishInput();
}

void GraphSession::Dispatch() {
  const absl::Span<std::string> args = parser_.args();
  const GraphCommandSpec* spec = FindGraphCommand(args[0]);
  if (spec == nullptr) return Append(ErrorReply(UnknownCommandMessage(args)));
  if (!ArityOk(*spec, args.size())) return Append(ErrorReply(ArityMessage(spec->name)));
  if (spec->id == GraphCommandId::kQuit) return CloseAfter(::farm::resp::SimpleStringReply("OK"));
  if (!spec->uses_store) return Append(RunLocalCommand(*spec, args));

  GraphRequest request;
  if (std::optional<std::string> error = ParseGraphRequest(*spec, args, &request)) {
    return Append(ErrorReply(*error));
  }
  request.load_token = options_.load_token;
  running_ = true;
  RunGraphRequest(*store_, std::move(request), [weak = weak_from_this()](std::string reply) {
    if (std::shared_ptr<GraphSession> self = weak.lock()) self->OnStoreReply(std::move(reply));
  });
}

void GraphSession::OnStoreReply(std::string reply) {
  running_ = false;
  if (output_.empty()) {
    // Nothing waits to be sent: the reply becomes the output (a long LINK.RANGE's
    // reply is not copied).
    CountReply(reply);
    output_ = std::move(reply);
  } else {
    Append(reply);
  }
  if (pumping_) return;  // answered inside Dispatch: Pump goes on
  Pump();
  // Invariant 4: the last thing done here.
  if (api_depth_ == 0 && on_progress_) on_progress_();
}

void GraphSession::CountReply(absl::string_view reply) {
  if (options_.counters != nullptr && !reply.empty() && reply[0] == '-') {
    RespCounters::Add(options_.counters->error_replies);
  }
}

void GraphSession::Append(absl::string_view reply) {
  CountReply(reply);
  output_.append(reply.data(), reply.size());
}

void GraphSession::CloseAfter(absl::string_view reply) {
  Append(reply);
  closing_ = true;
  close_requested_ = true;  // nothing runs (invariant 1): this reply is the last
}

void GraphSession::MaybeFinishInput() {
  if (input_ended_ && !closing_ && !running_ && !OutputFull()) {
    // Every complete request was parsed (the loop stopped on kNeedMore) and answered.
    closing_ = true;
    close_requested_ = true;
  }
}

}  // namespace farm::graph

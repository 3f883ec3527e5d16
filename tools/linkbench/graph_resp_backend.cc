#include "tools/linkbench/graph_resp_backend.h"

#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "graph/memory_graph.h"
#include "tools/linkbench/hiredis_arena.h"

namespace farm::linkbench {
namespace {

struct Endpoint {
  std::string host;
  int port = 0;
  std::string ToString() const { return absl::StrCat(host, ":", port); }
};

// A reply of hiredis's own objects (the PING probe).
struct ReplyDeleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using OwnedReply = std::unique_ptr<redisReply, ReplyDeleter>;
// A reply in a connection's arena: valid until the connection reads the next one.
using Reply = const redisReply*;

absl::string_view Text(const redisReply& r) { return absl::string_view(r.str, r.len); }

// An error reply as a Status (graph/resp/README.md, "Error replies").
absl::Status ErrorStatus(const redisReply& r) {
  const absl::string_view text = Text(r);
  const std::string message = absl::StrCat("graph-resp: ", text);
  if (absl::StartsWith(text, "TRYAGAIN")) return absl::UnavailableError(message);
  if (absl::StartsWith(text, "OOM")) return absl::ResourceExhaustedError(message);
  if (absl::StartsWith(text, "ERR ")) {
    // The service's own failures and commands it does not know are not the caller's
    // data; everything else it says with ERR is about an argument (the store's
    // InvalidArgument texts included).
    if (absl::StartsWith(text, "ERR the graph store failed") || absl::StartsWith(text, "ERR unknown command") ||
        absl::StartsWith(text, "ERR wrong number of arguments")) {
      return absl::InternalError(message);
    }
    return absl::InvalidArgumentError(message);
  }
  return absl::InternalError(message);
}

absl::Status Unexpected(absl::string_view what, const redisReply& r) {
  if (r.type == REDIS_REPLY_ERROR) return ErrorStatus(r);
  return absl::InternalError(absl::StrCat("graph-resp: ", what, ": unexpected reply of type ", r.type));
}

absl::StatusOr<int64_t> Integer(absl::string_view what, const redisReply& r) {
  if (r.type != REDIS_REPLY_INTEGER) return Unexpected(what, r);
  return static_cast<int64_t>(r.integer);
}

absl::StatusOr<graph::Node> NodeFrom(const redisReply& r) {
  if (r.type != REDIS_REPLY_ARRAY || r.elements != 5) return Unexpected("NODE.GET", r);
  const redisReply* const* e = r.element;
  for (int i = 0; i < 4; ++i) {
    if (e[i]->type != REDIS_REPLY_INTEGER) return Unexpected("NODE.GET field", *e[i]);
  }
  if (e[4]->type != REDIS_REPLY_STRING) return Unexpected("NODE.GET data", *e[4]);
  graph::Node n;
  n.id = e[0]->integer;
  n.type = static_cast<int32_t>(e[1]->integer);
  n.version = e[2]->integer;
  n.time = static_cast<int32_t>(e[3]->integer);
  n.data = std::string(Text(*e[4]));
  return n;
}

absl::StatusOr<std::vector<graph::Link>> LinksFrom(absl::string_view what, const redisReply& r) {
  if (r.type != REDIS_REPLY_ARRAY) return Unexpected(what, r);
  std::vector<graph::Link> links;
  links.reserve(r.elements);
  for (size_t k = 0; k < r.elements; ++k) {
    const redisReply& l = *r.element[k];
    if (l.type != REDIS_REPLY_ARRAY || l.elements != 7) return Unexpected(what, l);
    for (int i = 0; i < 6; ++i) {
      if (l.element[i]->type != REDIS_REPLY_INTEGER) return Unexpected(what, *l.element[i]);
    }
    if (l.element[6]->type != REDIS_REPLY_STRING) return Unexpected(what, *l.element[6]);
    graph::Link link;
    link.id1 = l.element[0]->integer;
    link.type = l.element[1]->integer;
    link.id2 = l.element[2]->integer;
    link.visibility = l.element[3]->integer == 1 ? graph::Visibility::kVisible : graph::Visibility::kHidden;
    link.version = static_cast<int32_t>(l.element[4]->integer);
    link.time = l.element[5]->integer;
    link.data = std::string(Text(*l.element[6]));
    links.push_back(std::move(link));
  }
  return links;
}

// One command's words; the data word is a view of the caller's bytes.
class Args {
 public:
  Args& Add(absl::string_view word) {
    words_.emplace_back(word);
    return *this;
  }
  Args& Add(int64_t v) { return Add(absl::StrCat(v)); }
  int argc() const { return static_cast<int>(words_.size()); }
  // Valid until the next Add.
  const char** argv() {
    ptrs_.clear();
    lens_.clear();
    for (const std::string& w : words_) {
      ptrs_.push_back(w.data());
      lens_.push_back(w.size());
    }
    return ptrs_.data();
  }
  const size_t* argvlen() const { return lens_.data(); }

 private:
  std::vector<std::string> words_;
  std::vector<const char*> ptrs_;
  std::vector<size_t> lens_;
};

Args NodeAdd(const graph::Node& n) {
  Args a;
  a.Add("NODE.ADD").Add(n.type).Add(n.version).Add(n.time).Add(n.data);
  return a;
}

// Links per LINK.LOAD command of a load; nodes per NODE.LOAD.
constexpr size_t kLinksPerLoad = 256;
constexpr size_t kNodesPerLoad = 128;

Args LinkAdd(const graph::Link& l) {
  Args a;
  a.Add("LINK.ADD").Add(l.id1).Add(l.type).Add(l.id2).Add(static_cast<int64_t>(l.visibility)).Add(l.version)
      .Add(l.time).Add(l.data);
  return a;
}

absl::StatusOr<redisContext*> Dial(const Endpoint& e, absl::Duration timeout) {
  const timeval tv = absl::ToTimeval(timeout);
  redisContext* c = redisConnectWithTimeout(e.host.c_str(), e.port, tv);
  if (c == nullptr) return absl::ResourceExhaustedError("graph-resp: redisConnect: out of memory");
  if (c->err != 0) {
    const std::string message = c->errstr;
    redisFree(c);
    return absl::UnavailableError(absl::StrCat("graph-resp at ", e.ToString(), ": ", message));
  }
  const int one = 1;
  if (redisSetTimeout(c, tv) != REDIS_OK || ::setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0) {
    redisFree(c);
    return absl::InternalError("graph-resp: cannot set the socket's timeout or TCP_NODELAY");
  }
  return c;
}

class GraphRespConnection final : public Connection {
 public:
  GraphRespConnection(Endpoint endpoint, absl::Duration timeout, redisContext* c)
      : endpoint_(std::move(endpoint)), timeout_(timeout), c_(c) {
    arena_.Attach(c_->reader);
  }
  ~GraphRespConnection() override {
    if (c_ != nullptr) redisFree(c_);
  }

  absl::StatusOr<int64_t> AddNode(graph::Node node) override {
    if (absl::Status st = graph::CheckNode(node); !st.ok()) return st;
    absl::StatusOr<Reply> r = Call(NodeAdd(node));
    if (!r.ok()) return r.status();
    return Integer("NODE.ADD", **r);
  }

  // NODE.LOAD, kNodesPerLoad nodes a command (each gets consecutive ids), pipelined.
  absl::StatusOr<std::vector<int64_t>> AddNodes(std::vector<graph::Node> nodes) override {
    for (const graph::Node& n : nodes) {
      if (absl::Status st = graph::CheckNode(n); !st.ok()) return st;
    }
    std::vector<int64_t> ids;
    ids.reserve(nodes.size());
    const size_t commands = (nodes.size() + kNodesPerLoad - 1) / kNodesPerLoad;
    size_t taken = 0;
    absl::Status st = Pipeline(
        commands,
        [&](size_t c) {
          Args a;
          a.Add("NODE.LOAD");
          for (size_t i = c * kNodesPerLoad; i < std::min(nodes.size(), (c + 1) * kNodesPerLoad); ++i) {
            a.Add(nodes[i].type).Add(nodes[i].version).Add(nodes[i].time).Add(nodes[i].data);
          }
          return a;
        },
        [&](const redisReply& r) -> absl::Status {
          absl::StatusOr<int64_t> first = Integer("NODE.LOAD", r);
          if (!first.ok()) return first.status();
          const size_t n = std::min(kNodesPerLoad, nodes.size() - taken);
          for (size_t i = 0; i < n; ++i) ids.push_back(*first + static_cast<int64_t>(i));
          taken += n;
          return absl::OkStatus();
        });
    if (!st.ok()) return st;
    return ids;
  }

  absl::StatusOr<std::optional<graph::Node>> GetNode(int64_t id, int32_t type) override {
    absl::StatusOr<Reply> r = Call(Args().Add("NODE.GET").Add(id).Add(type));
    if (!r.ok()) return r.status();
    if ((*r)->type == REDIS_REPLY_NIL) return std::optional<graph::Node>();
    absl::StatusOr<graph::Node> n = NodeFrom(**r);
    if (!n.ok()) return n.status();
    return std::optional<graph::Node>(*std::move(n));
  }

  absl::StatusOr<bool> UpdateNode(graph::Node node) override {
    if (absl::Status st = graph::CheckNode(node); !st.ok()) return st;
    return Flag("NODE.UPDATE",
                Args().Add("NODE.UPDATE").Add(node.id).Add(node.type).Add(node.version).Add(node.time).Add(node.data));
  }

  absl::StatusOr<bool> DeleteNode(int64_t id, int32_t type) override {
    return Flag("NODE.DELETE", Args().Add("NODE.DELETE").Add(id).Add(type));
  }

  absl::Status ResetNodeIds(int64_t start_id) override {
    absl::StatusOr<Reply> r = Call(Args().Add("NODE.RESET").Add(start_id));
    if (!r.ok()) return r.status();
    if ((*r)->type != REDIS_REPLY_STATUS) return Unexpected("NODE.RESET", **r);
    return absl::OkStatus();
  }

  absl::StatusOr<bool> AddLink(graph::Link link) override {
    if (absl::Status st = graph::CheckLink(link); !st.ok()) return st;
    return Flag("LINK.ADD", LinkAdd(link));
  }

  absl::StatusOr<uint64_t> AddLinks(int64_t id1, int64_t type, std::vector<graph::Link> links) override {
    for (const graph::Link& l : links) {
      if (l.id1 != id1 || l.type != type) return absl::InvalidArgumentError("AddLinks: a link of another (id1, type)");
      if (absl::Status st = graph::CheckLink(l); !st.ok()) return st;
    }
    // LINK.LOAD, newest first, kLinksPerLoad links a command: the connection's
    // successive loads into a fresh list append at its tail (graph/resp/README.md).
    std::sort(links.begin(), links.end(), [](const graph::Link& a, const graph::Link& b) {
      return a.time != b.time ? a.time > b.time : a.id2 > b.id2;
    });
    const size_t commands = (links.size() + kLinksPerLoad - 1) / kLinksPerLoad;
    absl::Status st = Pipeline(
        commands,
        [&](size_t i) {
          Args a;
          a.Add("LINK.LOAD").Add(id1).Add(type);
          for (size_t j = i * kLinksPerLoad; j < std::min(links.size(), (i + 1) * kLinksPerLoad); ++j) {
            const graph::Link& l = links[j];
            a.Add(l.id2).Add(static_cast<int64_t>(l.visibility)).Add(l.version).Add(l.time).Add(l.data);
          }
          return a;
        },
        [](const redisReply& r) { return Integer("LINK.LOAD", r).status(); });
    if (!st.ok()) return st;
    if (commands > 1) {
      // The end of the list's load: a long list (the hub) gets its indexes now, not from
      // the request phase's first update of it.
      absl::StatusOr<Reply> end = Call(Args().Add("LINK.LOAD").Add(id1).Add(type));
      if (!end.ok()) return end.status();
      if (absl::StatusOr<int64_t> n = Integer("LINK.LOAD", **end); !n.ok()) return n.status();
    }
    return links.size();
  }

  absl::StatusOr<bool> DeleteLink(int64_t id1, int64_t type, int64_t id2, bool expunge) override {
    Args a;
    a.Add("LINK.DELETE").Add(id1).Add(type).Add(id2);
    if (expunge) a.Add("EXPUNGE");
    return Flag("LINK.DELETE", std::move(a));
  }

  absl::StatusOr<std::vector<graph::Link>> GetLinks(int64_t id1, int64_t type,
                                                    absl::Span<const int64_t> id2s) override {
    if (id2s.empty()) return std::vector<graph::Link>();
    Args a;
    a.Add("LINK.GET").Add(id1).Add(type);
    for (int64_t id2 : id2s) a.Add(id2);
    absl::StatusOr<Reply> r = Call(std::move(a));
    if (!r.ok()) return r.status();
    return LinksFrom("LINK.GET", **r);
  }

  absl::StatusOr<std::vector<graph::Link>> GetLinkList(const graph::LinkRange& range) override {
    if (range.limit > graph::kDefaultRangeLimit) {
      return absl::InvalidArgumentError(
          absl::StrCat("limit ", range.limit, " is over ", graph::kDefaultRangeLimit));
    }
    absl::StatusOr<Reply> r = Call(Args()
                                       .Add("LINK.RANGE")
                                       .Add(range.id1)
                                       .Add(range.type)
                                       .Add(range.min_time)
                                       .Add(range.max_time)
                                       .Add(static_cast<int64_t>(range.offset))
                                       .Add(static_cast<int64_t>(range.limit)));
    if (!r.ok()) return r.status();
    return LinksFrom("LINK.RANGE", **r);
  }

  absl::StatusOr<uint64_t> CountLinks(int64_t id1, int64_t type) override {
    absl::StatusOr<Reply> r = Call(Args().Add("LINK.COUNT").Add(id1).Add(type));
    if (!r.ok()) return r.status();
    absl::StatusOr<int64_t> n = Integer("LINK.COUNT", **r);
    if (!n.ok()) return n.status();
    return static_cast<uint64_t>(*n);
  }

 private:
  // A connection that failed is replaced before the next command (hiredis contexts are
  // unusable after an error).
  absl::Status EnsureConnected() {
    if (c_ != nullptr && c_->err == 0) return absl::OkStatus();
    if (c_ != nullptr) redisFree(c_);
    c_ = nullptr;
    absl::StatusOr<redisContext*> c = Dial(endpoint_, timeout_);
    if (!c.ok()) return c.status();
    c_ = *c;
    arena_.Attach(c_->reader);
    return absl::OkStatus();
  }

  absl::Status Broken() const {
    return absl::UnavailableError(absl::StrCat("graph-resp at ", endpoint_.ToString(), ": ", c_->errstr));
  }

  // One command; an error reply is returned as its Status.
  absl::StatusOr<Reply> Call(Args args) {
    if (absl::Status st = EnsureConnected(); !st.ok()) return st;
    const char** argv = args.argv();
    Reply r = static_cast<const redisReply*>(redisCommandArgv(c_, args.argc(), argv, args.argvlen()));
    if (r == nullptr) return Broken();
    if (r->type == REDIS_REPLY_ERROR) return ErrorStatus(*r);
    return r;
  }

  absl::StatusOr<bool> Flag(absl::string_view what, Args args) {
    absl::StatusOr<Reply> r = Call(std::move(args));
    if (!r.ok()) return r.status();
    absl::StatusOr<int64_t> n = Integer(what, **r);
    if (!n.ok()) return n.status();
    return *n != 0;
  }

  // Sends commands make(0 .. n-1) in windows of kPipelineWindow, handing each reply to
  // `take`; every reply of a window is read (the connection stays in step) and the
  // first error ends the batch after its window.
  template <typename Make, typename Take>
  absl::Status Pipeline(size_t n, Make make, Take take) {
    if (absl::Status st = EnsureConnected(); !st.ok()) return st;
    absl::Status first_error;
    for (size_t begin = 0; begin < n && first_error.ok(); begin += kPipelineWindow) {
      const size_t end = std::min(n, begin + kPipelineWindow);
      for (size_t i = begin; i < end; ++i) {
        Args a = make(i);
        const char** argv = a.argv();
        if (redisAppendCommandArgv(c_, a.argc(), argv, a.argvlen()) != REDIS_OK) return Broken();
      }
      for (size_t i = begin; i < end; ++i) {
        void* raw = nullptr;
        if (redisGetReply(c_, &raw) != REDIS_OK || raw == nullptr) return Broken();
        Reply r = static_cast<const redisReply*>(raw);
        absl::Status st = r->type == REDIS_REPLY_ERROR ? ErrorStatus(*r) : take(*r);
        if (!st.ok() && first_error.ok()) first_error = st;
      }
    }
    return first_error;
  }

  const Endpoint endpoint_;
  const absl::Duration timeout_;
  HiredisArena arena_;  // c_'s replies
  redisContext* c_;  // owned; nullptr after a failed reconnect
};

class GraphRespBackend final : public Backend {
 public:
  GraphRespBackend(std::vector<Endpoint> endpoints, absl::Duration timeout)
      : endpoints_(std::move(endpoints)), timeout_(timeout) {}

  std::string Describe() const override {
    std::vector<std::string> names;
    for (const Endpoint& e : endpoints_) names.push_back(e.ToString());
    return absl::StrCat("graph-resp (the graph service over RESP, hiredis, one connection per thread over ",
                        endpoints_.size(), " endpoints: ", absl::StrJoin(names, ","), ")");
  }

  absl::StatusOr<std::unique_ptr<Connection>> Connect() override {
    const Endpoint& e = endpoints_[next_.fetch_add(1, std::memory_order_relaxed) % endpoints_.size()];
    absl::StatusOr<redisContext*> c = Dial(e, timeout_);
    if (!c.ok()) return c.status();
    return std::make_unique<GraphRespConnection>(e, timeout_, *c);
  }

 private:
  const std::vector<Endpoint> endpoints_;
  const absl::Duration timeout_;
  std::atomic<size_t> next_{0};
};

}  // namespace

absl::StatusOr<std::unique_ptr<Backend>> OpenGraphRespBackend(const BackendOptions& options) {
  const std::string list = options.Get("graph_resp");
  if (list.empty()) {
    return absl::InvalidArgumentError("graph-resp: needs graph_resp, the nodes' host:port list (--graph_resp)");
  }
  std::vector<Endpoint> endpoints;
  for (absl::string_view word : absl::StrSplit(list, ',', absl::SkipWhitespace())) {
    const size_t colon = word.rfind(':');
    Endpoint e;
    if (colon == absl::string_view::npos || colon == 0 || !absl::SimpleAtoi(word.substr(colon + 1), &e.port) ||
        e.port < 1 || e.port > 65535) {
      return absl::InvalidArgumentError(absl::StrCat("graph-resp: \"", word, "\" is not host:port"));
    }
    e.host = std::string(word.substr(0, colon));
    endpoints.push_back(std::move(e));
  }
  int64_t timeout_ms = 0;
  if (!absl::SimpleAtoi(options.Get("graph_resp_timeout_ms", "30000"), &timeout_ms) || timeout_ms < 1) {
    return absl::InvalidArgumentError("graph-resp: graph_resp_timeout_ms must be a positive integer");
  }
  const absl::Duration timeout = absl::Milliseconds(timeout_ms);
  // Every endpoint answers PING before the run starts.
  for (const Endpoint& e : endpoints) {
    absl::StatusOr<redisContext*> c = Dial(e, timeout);
    if (!c.ok()) return c.status();
    OwnedReply r(static_cast<redisReply*>(redisCommand(*c, "PING")));
    const bool ok = r != nullptr && r->type == REDIS_REPLY_STATUS;
    const std::string error = r == nullptr ? (*c)->errstr : ok ? "" : std::string(Text(*r));
    redisFree(*c);
    if (!ok) return absl::UnavailableError(absl::StrCat("graph-resp at ", e.ToString(), ": PING: ", error));
  }
  return std::make_unique<GraphRespBackend>(std::move(endpoints), timeout);
}

}  // namespace farm::linkbench

// Fuzz test of the parser and the session together: random bytes, valid request
// streams, and valid streams with random mutations, fed in random chunks to sessions
// with random limits over a FakeStore with random delays. Streams mix string and hash
// commands on the same few keys (so WRONGTYPE paths run), values beginning with 0xFF,
// and keys whose stored value is now and then replaced by a corrupt or random typed
// encoding behind the session's back.
//
// Runs for FARM_FUZZ_SECONDS (default 3) or FARM_FUZZ_ITERATIONS (default 20000),
// whichever ends first. The seed is printed; FARM_FUZZ_SEED=<n> replays the inputs
// (store delays are timing-dependent, so a replay is close, not exact);
// FARM_FUZZ_DUMP=<file> saves a failing input.
//
// Checked on every input:
//   - nothing crashes (run it under ASan too);
//   - the output is well-formed RESP, and after the input is used up and the store is
//     idle, the session either wants input or has asked to be closed (never stuck);
//   - without AUTH: exactly one reply per request the parser yields (an independent
//     RespParser fed the same chunks is the oracle), up to and including a QUIT or the
//     protocol error, whose reply is last; after that the session is closed;
//   - on unmutated streams, ECHO markers come back in request order;
//   - memory stays bounded: unparsed input, reply slots and output have limits.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "resp/resp_parser.h"
#include "kv/resp/resp_session.h"
#include "kv/resp/typed_value.h"
#include "tests/kv/resp/resp_reply_reader.h"
#include "tests/kv/resp/session_env.h"

namespace farm::kv::resp {
namespace {

using ::farm::kv::testing::DecodeReplies;
using ::farm::kv::testing::FakeStoreOptions;
using ::farm::kv::testing::Multibulk;
using ::farm::kv::testing::SessionEnv;
using Rng = std::mt19937_64;

constexpr size_t kMaxOutputSeen = 8u << 20;
constexpr char kPassword[] = "pw";

int64_t EnvInt(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  int64_t n = 0;
  return v != nullptr && absl::SimpleAtoi(v, &n) ? n : fallback;
}

size_t Uniform(Rng& rng, size_t lo, size_t hi) {  // [lo, hi]
  return std::uniform_int_distribution<size_t>(lo, hi)(rng);
}
bool OneIn(Rng& rng, size_t n) { return Uniform(rng, 1, n) == 1; }

std::string RandomKey(Rng& rng) {
  static const char* const kKeys[] = {"a", "b", "c", "n", "key:1", "", "k\r\nx"};
  return kKeys[Uniform(rng, 0, 6)];
}

std::string RandomField(Rng& rng) {
  static const char* const kFields[] = {"f", "g", "n", "", "\xFF", "field:1"};
  return kFields[Uniform(rng, 0, 5)];
}

std::string RandomValue(Rng& rng) {
  switch (Uniform(rng, 0, 5)) {
    case 4:  // a string that must be stored escaped
      return absl::StrCat("\xFF", std::string(Uniform(rng, 0, 4), 'H'));
    case 0:
      return absl::StrCat(static_cast<int64_t>(Uniform(rng, 0, 2000)) - 1000);
    case 1:
      return "9223372036854775807";
    case 2: {
      std::string big(Uniform(rng, 0, 3000), 'x');
      for (char& c : big) c = static_cast<char>(Uniform(rng, 0, 255));
      return big;
    }
    default:
      return std::string(Uniform(rng, 0, 8), static_cast<char>('a' + Uniform(rng, 0, 25)));
  }
}

// An index or offset: small, negative, at the value limit, past Redis's string limit,
// or not an integer.
std::string RandomIndex(Rng& rng) {
  static const char* const kIndexes[] = {"0",       "3",         "-1",       "-4000",  "1048575",
                                         "1048576", "536870912", "9223372036854775807", "x"};
  return kIndexes[Uniform(rng, 0, 8)];
}

std::string RandomFloat(Rng& rng) {
  static const char* const kFloats[] = {"1.5", "-2", "1e308", "1e5000", "inf", "-inf", "nan", "0x1p-3", "", " 1", "1e"};
  return kFloats[Uniform(rng, 0, 10)];
}

// One request as words.
std::vector<std::string> RandomCommand(Rng& rng) {
  const std::string k = RandomKey(rng);
  switch (Uniform(rng, 0, 57)) {
    case 0:
      return {"GET", k};
    case 1:
      return {"SET", k, RandomValue(rng)};
    case 2: {
      static const char* const kOpts[] = {"NX", "XX", "GET", "EX", "bogus"};
      return {"SET", k, RandomValue(rng), kOpts[Uniform(rng, 0, 4)]};
    }
    case 3:
      return {"DEL", k, RandomKey(rng)};
    case 4:
      return {"EXISTS", k, k, RandomKey(rng)};
    case 5:
      return {"MGET", k, RandomKey(rng), RandomKey(rng)};
    case 6:
      return {"MSET", k, RandomValue(rng), RandomKey(rng), RandomValue(rng)};
    case 7:
      return {"INCR", k};
    case 8:
      return {"DECRBY", k, RandomValue(rng)};
    case 9:
      return {"INCRBY", k, RandomValue(rng)};
    case 10:
      return {"DBSIZE"};
    case 11:
      return {"INFO", OneIn(rng, 2) ? "keyspace" : "server"};
    case 12:
      return {"PING"};
    case 13:
      return {"MULTI"};
    case 14:
      return {"EXEC"};
    case 15:
      return {"DISCARD"};
    case 16:
      return {"WATCH", k};
    case 17:
      return {"UNWATCH"};
    case 18:
      return {"AUTH", OneIn(rng, 2) ? kPassword : "wrong"};
    case 19:
      return {"SELECT", OneIn(rng, 2) ? "0" : "3"};
    case 20:
      return {"CLIENT", "SETNAME", "fuzz"};
    case 21:
      return {"CONFIG", "GET", "save"};
    case 22:
      return {"COMMAND"};
    case 23:
      return {"NOSUCH", k};
    case 24:
      return {"GET"};
    case 25:
      return {OneIn(rng, 20) ? "QUIT" : "ECHO", "q"};
    case 26:
      return {"DECR", k};
    case 27:
    case 28: {
      std::vector<std::string> w = {OneIn(rng, 3) ? "HMSET" : "HSET", k};
      for (size_t i = Uniform(rng, 1, 3); i > 0; --i) {
        w.push_back(RandomField(rng));
        w.push_back(RandomValue(rng));
      }
      if (OneIn(rng, 10)) w.pop_back();  // an odd count: an arity error
      return w;
    }
    case 29:
      return {"HGET", k, RandomField(rng)};
    case 30:
      return {"HMGET", k, RandomField(rng), RandomField(rng)};
    case 31:
      return {"HGETALL", k};
    case 32:
      return {"HDEL", k, RandomField(rng), RandomField(rng)};
    case 33:
      return {"HLEN", k};
    case 34:
      return {"HEXISTS", k, RandomField(rng)};
    case 35:
      return {"HINCRBY", k, RandomField(rng), OneIn(rng, 2) ? "1" : RandomValue(rng)};
    case 36:
      return {"TYPE", k};
    case 37:
      return {OneIn(rng, 2) ? "HSET" : "HINCRBY", k};  // too few words
    case 38:
      return {"SETNX", k, RandomValue(rng)};
    case 39:
      return {"GETSET", k, RandomValue(rng)};
    case 40:
      return {"GETDEL", k};
    case 41:
      return {"APPEND", k, RandomValue(rng)};
    case 42:
      return {"STRLEN", k};
    case 43: {
      std::vector<std::string> w = {"MSETNX", k, RandomValue(rng), RandomKey(rng), RandomValue(rng)};
      if (OneIn(rng, 10)) w.pop_back();  // an odd count: an arity error
      return w;
    }
    case 44:
      return {"HSETNX", k, RandomField(rng), RandomValue(rng)};
    case 45:
      return {OneIn(rng, 2) ? "HKEYS" : "HVALS", k};
    case 46:
      return {"HSTRLEN", k, RandomField(rng)};
    case 47:
      return {OneIn(rng, 2) ? "APPEND" : "MSETNX", k};  // too few words
    case 48:
      return {OneIn(rng, 2) ? "GETRANGE" : "SUBSTR", k, RandomIndex(rng), RandomIndex(rng)};
    case 49:
      return {"SETRANGE", k, RandomIndex(rng), RandomValue(rng)};
    case 50:
      return {"INCRBYFLOAT", k, RandomFloat(rng)};
    case 51:
      return {"HINCRBYFLOAT", k, RandomField(rng), RandomFloat(rng)};
    case 53:
      return {OneIn(rng, 2) ? "TTL" : OneIn(rng, 2) ? "PERSIST" : "GETEX", k};
    case 54: {  // a page of a scan: random cursors, patterns and options
      static const char* const kCursors[] = {"0", "5", "-1", "", " 1", "1e3", "99999999999999999999"};
      static const char* const kOptions[] = {"MATCH", "COUNT", "TYPE", "bogus"};
      std::vector<std::string> w = {"SCAN", kCursors[Uniform(rng, 0, 6)]};
      for (size_t i = Uniform(rng, 0, 3); i > 0; --i) {
        w.push_back(kOptions[Uniform(rng, 0, 3)]);
        if (!OneIn(rng, 5)) w.push_back(OneIn(rng, 2) ? RandomValue(rng) : k);
      }
      return w;
    }
    case 55:
      if (OneIn(rng, 2)) return {"HSCAN", k, OneIn(rng, 2) ? "0" : RandomValue(rng), "MATCH", RandomField(rng)};
      return {"KEYS", OneIn(rng, 2) ? k : RandomValue(rng)};
    case 56:
      return {OneIn(rng, 2) ? "FLUSHALL" : "FLUSHDB", OneIn(rng, 3) ? "ASYNC" : RandomValue(rng)};
    case 57:
      if (OneIn(rng, 2)) return {OneIn(rng, 2) ? "RENAME" : "RENAMENX", k, RandomKey(rng)};
      return {"COPY", k, RandomKey(rng), OneIn(rng, 2) ? "REPLACE" : "DB", RandomValue(rng)};
    case 52: {  // too few words
      static const char* const kNames[] = {"GETRANGE", "SETRANGE", "INCRBYFLOAT", "HINCRBYFLOAT"};
      return {kNames[Uniform(rng, 0, 3)], k};
    }
    default:
      return {"INFO"};
  }
}

// A stored value for a key, written behind the sessions' back: a hash encoding, cut
// short or with bytes changed, or 0xFF and random bytes.
std::string RandomStoredValue(Rng& rng) {
  std::string s;
  if (OneIn(rng, 2)) {
    s = EncodeHash({{"f", "1"}, {"g", std::string(Uniform(rng, 0, 200), 'v')}});
    if (OneIn(rng, 2)) s.resize(Uniform(rng, 0, s.size()));
    for (size_t i = Uniform(rng, 0, 3); i > 0 && !s.empty(); --i) {
      s[Uniform(rng, 0, s.size() - 1)] = static_cast<char>(Uniform(rng, 0, 255));
    }
  } else {
    s = OneIn(rng, 2) ? "\xFFH\x01" : "\xFF";
    for (size_t i = Uniform(rng, 0, 24); i > 0; --i) {
      s.push_back(static_cast<char>(Uniform(rng, 0, 255)));
    }
  }
  return s;
}

bool InlineSafe(const std::vector<std::string>& words) {
  using std::string_literals::operator""s;
  for (const std::string& w : words) {
    if (w.empty() || w.find_first_of(" \t\r\n\v\f\"'\0"s) != std::string::npos) return false;
  }
  return true;
}

// `words` as one inline line with every word quoted as Redis unquotes it ("..." with
// \xHH for any byte but printable ASCII, '...' for some words), or nothing when the
// line would be long.
std::optional<std::string> QuotedInline(Rng& rng, const std::vector<std::string>& words) {
  std::string line;
  for (const std::string& w : words) {
    if (!line.empty()) line += OneIn(rng, 2) ? " " : " \t ";
    const bool single = w.find_first_of("'\\") == std::string::npos && OneIn(rng, 3) &&
                        std::all_of(w.begin(), w.end(), [](char c) { return c >= ' ' && c <= '~'; });
    if (single) {
      absl::StrAppend(&line, "'", w, "'");
      continue;
    }
    line += '"';
    for (char c : w) {
      if (c >= ' ' && c <= '~' && c != '"' && c != '\\') {
        line += c;
      } else {
        absl::StrAppendFormat(&line, "\\x%02x", static_cast<unsigned char>(c));
      }
    }
    line += '"';
  }
  if (line.size() > 16 * 1024) return std::nullopt;
  return line;
}

// A valid stream with ECHO markers #0, #1, ... between random commands.
std::string ValidStream(Rng& rng) {
  std::string out;
  const size_t n = Uniform(rng, 1, 40);
  int marker = 0;
  for (size_t i = 0; i < n; ++i) {
    std::vector<std::string> words =
        OneIn(rng, 4) ? std::vector<std::string>{"ECHO", absl::StrCat("#", marker++)}
                      : RandomCommand(rng);
    std::optional<std::string> quoted;
    if (InlineSafe(words) && OneIn(rng, 8)) {
      out += absl::StrJoin(words, " ") + (OneIn(rng, 2) ? "\r\n" : "\n");
    } else if (OneIn(rng, 8) && (quoted = QuotedInline(rng, words)).has_value()) {
      out += *quoted + (OneIn(rng, 2) ? "\r\n" : "\n");
    } else {
      out += Multibulk(words);
    }
  }
  return out;
}

void Mutate(Rng& rng, std::string& s) {
  const size_t mutations = Uniform(rng, 1, 4);
  for (size_t m = 0; m < mutations && !s.empty(); ++m) {
    const size_t at = Uniform(rng, 0, s.size() - 1);
    switch (Uniform(rng, 0, 5)) {
      case 0:
        s[at] = static_cast<char>(s[at] ^ (1 << Uniform(rng, 0, 7)));
        break;
      case 1:
        s.insert(at, 1, "*$\r\n-0:9"[Uniform(rng, 0, 7)]);
        break;
      case 2:
        s.erase(at, Uniform(rng, 1, 16));
        break;
      case 3:
        s.insert(at, s.substr(Uniform(rng, 0, s.size() - 1), Uniform(rng, 1, 32)));
        break;
      case 4: {  // a new length where a number was
        static const char* const kNumbers[] = {"-1", "0", "99999999999", "1048577",
                                               "-",  "2", "536870913",   ""};
        const size_t digit = s.find_first_of("0123456789", at);
        if (digit == std::string::npos) break;
        const size_t end = s.find_first_not_of("0123456789", digit);
        s.replace(digit, (end == std::string::npos ? s.size() : end) - digit,
                  kNumbers[Uniform(rng, 0, 7)]);
        break;
      }
      default:
        s.resize(at);
        break;
    }
  }
}

std::string RandomBytes(Rng& rng) {
  static constexpr char kAlphabet[] = "*$\r\n0123456789-+: abcPINGSETGETQUIT\x00\xff";
  std::string s(Uniform(rng, 0, 2000), ' ');
  for (char& c : s) {
    c = OneIn(rng, 4) ? static_cast<char>(Uniform(rng, 0, 255))
                      : kAlphabet[Uniform(rng, 0, sizeof(kAlphabet) - 2)];
  }
  return s;
}

// What a session must answer, from an oracle parser fed the same chunks.
struct Oracle {
  explicit Oracle(const RespParserLimits& limits) : parser(limits) {}
  void Feed(absl::string_view chunk) {
    if (done) return;
    parser.Feed(chunk);
    for (;;) {
      const RespParser::Result r = parser.Parse();
      if (r == RespParser::Result::kNeedMore) return;
      ++replies;
      if (r == RespParser::Result::kError || absl::EqualsIgnoreCase(parser.args()[0], "quit")) {
        done = true;
        return;
      }
    }
  }
  RespParser parser;
  size_t replies = 0;
  bool done = false;  // a protocol error or QUIT: the session closes after its reply
};

struct Budget {
  absl::Time deadline;
  int64_t iterations;
};

class Fuzzer {
 public:
  explicit Fuzzer(uint64_t seed) : rng_(seed), env_(StoreOptions(seed)) {}

  // Runs one input; returns false after a failed expectation.
  bool RunOne(uint64_t iteration) {
    const int kind = static_cast<int>(Uniform(rng_, 0, 2));
    std::string input = kind == 0 ? RandomBytes(rng_) : ValidStream(rng_);
    if (kind == 2) Mutate(rng_, input);
    last_input_ = input;
    if (OneIn(rng_, 8)) env_.cluster().Poke(RandomKey(rng_), RandomStoredValue(rng_));
    RespSessionOptions options;
    static const int64_t kBulkLimits[] = {16, 1024, 65536};
    options.parser_limits.max_bulk_bytes = kBulkLimits[Uniform(rng_, 0, 2)];
    options.parser_limits.max_request_bytes = 256 * 1024;
    options.max_in_flight = Uniform(rng_, 1, 16);
    options.max_output_bytes = Uniform(rng_, 64, 64 * 1024);
    options.max_queued_bytes = 16 * 1024;
    options.max_txn_attempts = 5;
    const bool with_auth = OneIn(rng_, 5);
    if (with_auth) options.password = kPassword;
    const RespParserLimits limits =
        with_auth ? UnauthenticatedLimits(options.parser_limits) : options.parser_limits;
    SCOPED_TRACE(absl::StrCat("iteration ", iteration, " kind ", kind, " input ",
                              absl::CHexEscape(input.substr(0, 300))));

    auto session = env_.NewSession(options);
    Oracle oracle(limits);
    std::string output;
    size_t pos = 0;
    const size_t max_chunk = Uniform(rng_, 1, 4096);
    while (pos < input.size() && !session->close_requested()) {
      if (session->wants_input()) {
        const size_t n = std::min(input.size() - pos, Uniform(rng_, 1, max_chunk));
        session->Feed(absl::string_view(input).substr(pos, n));
        oracle.Feed(absl::string_view(input).substr(pos, n));
        pos += n;
      } else if (env_.store().pending() == 0 && session->output().empty() &&
                 !session->close_requested()) {
        ADD_FAILURE() << "stuck: wants no input, waits for nothing";
        return false;
      }
      // The loop, and a client that reads some of its replies now and then.
      for (size_t i = Uniform(rng_, 0, 3); i > 0; --i) env_.loop().RunOnce();
      if (!CheckBounds(*session, options, max_chunk)) return false;
      if (OneIn(rng_, 2) || !session->wants_input())
        Read(*session, Uniform(rng_, 1, 1 << 16), output);
    }
    if (!session->close_requested() && OneIn(rng_, 2)) session->EndOfInput();
    // Drain: the store finishes, the client reads everything (each read may let the
    // session answer more).
    for (int rounds = 0;; ++rounds) {
      if (!env_.Drain()) {
        ADD_FAILURE() << "store operations did not finish";
        return false;
      }
      const bool had_output = !session->output().empty();
      Read(*session, SIZE_MAX, output);
      if (!session->output().empty() || had_output) continue;
      if (session->wants_input() || session->close_requested()) break;
      if (env_.store().pending() == 0 || rounds > 1000000) {
        ADD_FAILURE() << "stuck after the input: wants no input, not closing; in flight "
                      << session->in_flight() << ", slots " << session->slots_in_use()
                      << ", buffered " << session->buffered_input_bytes();
        return false;
      }
    }
    return CheckReplies(output, *session, oracle, with_auth, kind == 1);
  }

 private:
  static FakeStoreOptions StoreOptions(uint64_t seed) {
    FakeStoreOptions options;
    auto rng = std::make_shared<Rng>(seed ^ 0x5eed);
    options.delay = [rng](absl::string_view, absl::string_view) {
      return OneIn(*rng, 10) ? absl::Microseconds(Uniform(*rng, 1, 300)) : absl::ZeroDuration();
    };
    return options;
  }

  static void Read(RespSession& session, size_t max, std::string& output) {
    const size_t n = std::min(max, session.output().size());
    output.append(session.output().data(), n);
    session.ConsumeOutput(n);
  }

  bool CheckBounds(const RespSession& session, const RespSessionOptions& options, size_t chunk) {
    const RespParserLimits& l = options.parser_limits;
    EXPECT_LE(session.in_flight(), options.max_in_flight);
    EXPECT_LE(session.slots_in_use(), options.max_in_flight + 1);  // + a protocol error
    EXPECT_LE(session.buffered_input_bytes(),
              l.max_request_bytes + l.max_inline_bytes + chunk + 64);
    EXPECT_LE(session.output().size(), kMaxOutputSeen);
    return !::testing::Test::HasFailure();
  }

  bool CheckReplies(const std::string& output, const RespSession& session, const Oracle& oracle,
                    bool with_auth, bool unmutated) {
    const testing::DecodedReplies decoded = DecodeReplies(output);
    EXPECT_FALSE(decoded.malformed);
    EXPECT_EQ(decoded.consumed, output.size()) << "a reply was cut short";
    if (!with_auth) {
      EXPECT_EQ(decoded.replies.size(), oracle.replies);
      if (oracle.done) {
        EXPECT_TRUE(session.close_requested());
        if (!decoded.replies.empty()) {
          const std::string& last = decoded.replies.back();
          EXPECT_TRUE(last == "+OK" || absl::StartsWith(last, "-ERR Protocol error: ")) << last;
        }
      }
    }
    if (unmutated) {
      // Markers queued in a MULTI come back inside EXEC's array, or not at all after
      // DISCARD: the ones seen alone must still be in request order.
      int last = -1;
      for (const std::string& reply : decoded.replies) {
        int marker = 0;  // "#<n>" (INFO's "# Keyspace..." is not one)
        if (!absl::StartsWith(reply, "#") || !absl::SimpleAtoi(reply.substr(1), &marker)) continue;
        EXPECT_GT(marker, last) << "replies out of order";
        last = marker;
      }
    }
    return !::testing::Test::HasFailure();
  }

  Rng rng_;
  SessionEnv env_;

 public:
  std::string last_input_;  // written to $FARM_FUZZ_DUMP when an input fails
};

TEST(RespFuzzTest, ParserAndSessionSurviveAnyInput) {
  const uint64_t seed = static_cast<uint64_t>(EnvInt("FARM_FUZZ_SEED", std::random_device{}()));
  const Budget budget{absl::Now() + absl::Seconds(EnvInt("FARM_FUZZ_SECONDS", 3)),
                      EnvInt("FARM_FUZZ_ITERATIONS", 20000)};
  std::printf("resp fuzz: seed %llu (replay: FARM_FUZZ_SEED=%llu)\n",
              static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed));
  ::testing::Test::RecordProperty("seed", absl::StrCat(seed));
  Fuzzer fuzzer(seed);
  int64_t i = 0;
  for (; i < budget.iterations && absl::Now() < budget.deadline; ++i) {
    if (fuzzer.RunOne(static_cast<uint64_t>(i))) continue;
    if (const char* dump = std::getenv("FARM_FUZZ_DUMP")) {
      if (FILE* f = std::fopen(dump, "wb")) {
        std::fwrite(fuzzer.last_input_.data(), 1, fuzzer.last_input_.size(), f);
        std::fclose(f);
      }
    }
    break;
  }
  std::printf("resp fuzz: %lld inputs\n", static_cast<long long>(i));
  EXPECT_GT(i, 0);
}

}  // namespace
}  // namespace farm::kv::resp

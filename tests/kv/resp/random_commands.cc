#include "tests/kv/resp/random_commands.h"

#include <initializer_list>
#include <iterator>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace farm::kv::testing {
namespace {

size_t Uniform(Rng& rng, size_t lo, size_t hi) {
  return std::uniform_int_distribution<size_t>(lo, hi)(rng);
}

std::string Pick(Rng& rng, std::initializer_list<const char*> options) {
  return *(options.begin() + Uniform(rng, 0, options.size() - 1));
}

std::string Key(Rng& rng, const RandomCommandOptions& o) {
  return o.key_prefix + Pick(rng, {"h", "h2", "s", "n", "x"});
}
std::string Field(Rng& rng) { return Pick(rng, {"a", "b", "c", "n", "", "\xFF"}); }
std::string Value(Rng& rng) {
  switch (Uniform(rng, 0, 6)) {
    case 0:
      return absl::StrCat(static_cast<int64_t>(Uniform(rng, 0, 200)) - 100);
    case 1:
      return Pick(rng, {"9223372036854775807", "-9223372036854775808", "-0", "01", " 1", ""});
    case 2:
      return Pick(rng, {"\xFF", "\xFF\xFF",
                        "\xFFH\x01\x01\x01"
                        "a\x01"
                        "b",
                        "\xFFZ"});
    case 3:
      return std::string(Uniform(rng, 0, 80), static_cast<char>('a' + Uniform(rng, 0, 25)));
    default:
      return Pick(rng, {"v", "w", "1", "x y", "3"});
  }
}
std::string Increment(Rng& rng) {
  return Pick(rng, {"1", "-1", "5", "x", "9223372036854775807", "-9223372036854775808", "0", "01",
                    "9223372036854775808"});
}

std::string FloatIncrement(Rng& rng) {
  return Pick(rng, {"1.5", "-0.25", "1e3", "x", "inf", "0x10", "-0", "1e-20", "3", " 1", "1e400"});
}
std::string RangeIndex(Rng& rng) { return Pick(rng, {"0", "1", "-1", "5", "-100", "100", "x", "-3"}); }
std::string RangeOffset(Rng& rng) { return Pick(rng, {"0", "1", "3", "10", "-1", "x"}); }

Words FocusedCommand(Rng& rng, const RandomCommandOptions& o) {
  const std::string k = o.key_prefix + Pick(rng, {"s", "h"});
  switch (Uniform(rng, 0, 9)) {
    case 0:
    case 1:
    case 2:
    case 3:
      return {"SET", k, Value(rng)};
    case 4:
      return {"SET", k, Value(rng), Pick(rng, {"NX", "XX", "GET"})};
    case 5:
    case 6:
      return {"HSET", k, Field(rng), Value(rng)};
    case 7:
      return {"HINCRBY", k, Field(rng), Increment(rng)};
    case 8:
      return {"GET", k};
    default:
      return {"HGET", k, Field(rng)};
  }
}

}  // namespace

Words RandomCommand(Rng& rng, const RandomCommandOptions& o) {
  if (o.focused_percent > 0 && static_cast<int>(Uniform(rng, 0, 99)) < o.focused_percent) {
    return FocusedCommand(rng, o);
  }
  const std::string k = Key(rng, o);
  switch (Uniform(rng, 0, 50)) {
    case 0:
    case 1: {
      Words w = {"HSET", k};
      for (size_t i = Uniform(rng, 1, 3); i > 0; --i) {
        w.push_back(Field(rng));
        w.push_back(Value(rng));
      }
      if (Uniform(rng, 0, 15) == 0) w.pop_back();  // an odd count
      return w;
    }
    case 2: {
      Words w = {"HMSET", k, Field(rng), Value(rng)};
      if (Uniform(rng, 0, 3) == 0) w.push_back(Field(rng));
      return w;
    }
    case 3:
    case 4:
      return {"HGET", k, Field(rng)};
    case 5:
      return {"HMGET", k, Field(rng), Field(rng)};
    case 6:
    case 7:
      return {"HGETALL", k};
    case 8:
      return {"HDEL", k, Field(rng), Field(rng)};
    case 9:
      return {"HDEL", k, Field(rng)};
    case 10:
      return {"HLEN", k};
    case 11:
      return {"HEXISTS", k, Field(rng)};
    case 12:
    case 13:
      return {"HINCRBY", k, Field(rng), Increment(rng)};
    case 14:
      return {"GET", k};
    case 15:
      return {"SET", k, Value(rng)};
    case 16:
      return {"SET", k, Value(rng), Pick(rng, {"NX", "XX", "GET"})};
    case 17:
      return {"DEL", k};
    case 18:
      return {"EXISTS", k, Key(rng, o)};
    case 19:
      return {"MGET", k, Key(rng, o)};
    case 20:
      return {"MSET", k, Value(rng), Key(rng, o), Value(rng)};
    case 21:
      return {"INCR", k};
    case 22:
      return {Pick(rng, {"INCRBY", "DECRBY"}), k, Increment(rng)};
    case 23:
      return {"TYPE", k};
    case 24:
      return {"MULTI"};
    case 25:
      return {"EXEC"};
    case 26:
      return {"DISCARD"};
    case 27:
      if (!o.store_wide) return {"PING"};
      return {"WATCH", k};
    case 28:
      return {"UNWATCH"};
    case 29:
      if (!o.store_wide) return {"ECHO", Value(rng)};
      return {"DBSIZE"};
    case 30: {  // too few words
      static const char* const kNames[] = {"HSET",   "HMSET",  "HGET",   "HMGET",  "HGETALL", "HDEL",
                                           "HLEN",   "HEXISTS", "HINCRBY", "TYPE",  "SETNX",   "GETSET",
                                           "GETDEL", "APPEND", "STRLEN", "MSETNX", "HSETNX",  "HKEYS",
                                           "HVALS",  "HSTRLEN", "GETRANGE", "SUBSTR", "SETRANGE",
                                           "INCRBYFLOAT", "HINCRBYFLOAT"};
      return {kNames[Uniform(rng, 0, std::size(kNames) - 1)]};
    }
    case 31:
      return {"HINCRBY", k, Field(rng), Increment(rng), "extra"};
    case 32:
      return {"SETNX", k, Value(rng)};
    case 33:
      return {"GETSET", k, Value(rng)};
    case 34:
      return {"GETDEL", k};
    case 35:
      return {"APPEND", k, Value(rng)};
    case 36:
      return {"STRLEN", k};
    case 37: {
      Words w = {"MSETNX", k, Value(rng), Key(rng, o), Value(rng)};
      if (Uniform(rng, 0, 7) == 0) w.pop_back();  // an odd count
      return w;
    }
    case 38:
      return {"HSETNX", k, Field(rng), Value(rng)};
    case 39:
      return {"HKEYS", k};
    case 40:
      return {"HVALS", k};
    case 41:
      return {"HSTRLEN", k, Field(rng)};
    case 42:
      return {Pick(rng, {"GETRANGE", "SUBSTR"}), k, RangeIndex(rng), RangeIndex(rng)};
    case 43:
    case 44:
      return {"SETRANGE", k, RangeOffset(rng), Value(rng)};
    case 45:
      return {"INCRBYFLOAT", k, FloatIncrement(rng)};
    case 46:
      return {"HINCRBYFLOAT", k, Field(rng), FloatIncrement(rng)};
    case 47:
      switch (Uniform(rng, 0, 4)) {
        case 0:
          return {Pick(rng, {"TTL", "PTTL", "EXPIRETIME", "PEXPIRETIME"}), k};
        case 1:
          return {"PERSIST", k};
        case 2:
          return {"GETEX", k, Pick(rng, {"PERSIST", "persist", "bad"})};
        case 3:
          return {"GETEX", k};
        default:
          return {"SET", k, Value(rng), "KEEPTTL"};
      }
    case 49:
      return {Pick(rng, {"RENAME", "RENAMENX"}), k, Key(rng, o)};
    case 50: {
      Words w = {"COPY", k, Key(rng, o)};
      if (Uniform(rng, 0, 1) == 0) w.push_back(Pick(rng, {"REPLACE", "replace", "bogus"}));
      if (Uniform(rng, 0, 3) == 0) {
        w.push_back("DB");
        w.push_back(Pick(rng, {"0", "99", "x"}));
      }
      return w;
    }
    default:
      return {"DEL", k, Key(rng, o)};
  }
}

std::vector<Words> RandomSequence(Rng& rng, size_t n, const RandomCommandOptions& options) {
  std::vector<Words> out;
  bool in_multi = false;
  for (size_t i = 0; i < n; ++i) {
    Words words = RandomCommand(rng, options);
    if (in_multi && words[0] == "DBSIZE") words = {"PING"};
    if (words[0] == "MULTI") in_multi = true;
    if (words[0] == "EXEC" || words[0] == "DISCARD") in_multi = false;
    out.push_back(std::move(words));
  }
  out.push_back({"DISCARD"});  // "-ERR DISCARD without MULTI" when none is open
  out.push_back({"UNWATCH"});
  return out;
}

std::string Printable(const Words& words) { return absl::CHexEscape(absl::StrJoin(words, " ")); }

}  // namespace farm::kv::testing

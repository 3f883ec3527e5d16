// The typed-value codec (kv/resp/typed_value.h) and HashValue (kv/resp/hash_value.h):
// round trips, the exact bytes of the format, and truncated, corrupt and random
// encodings, decoded from buffers of their exact size so that ASan catches any read
// past the end.
#include "kv/resp/typed_value.h"

#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kv/resp/hash_value.h"
#include "kv/resp/store_replies.h"

namespace farm::kv::resp {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

// A copy of `bytes` in a heap block of exactly its size.
class ExactBuffer {
 public:
  explicit ExactBuffer(absl::string_view bytes) : data_(bytes.begin(), bytes.end()) {}
  absl::string_view view() const { return absl::string_view(data_.data(), data_.size()); }

 private:
  std::vector<char> data_;  // std::allocator: a block of exactly this size
};

// Decodes a stored hash fully; the pairs as strings, or the error.
absl::StatusOr<std::vector<std::pair<std::string, std::string>>> DecodeAll(
    absl::string_view stored) {
  ExactBuffer buffer(stored);
  absl::StatusOr<TypedView> typed = DecodeStored(buffer.view());
  if (!typed.ok()) return typed.status();
  if (typed->type != ValueType::kHash) return absl::InvalidArgumentError("not a hash");
  std::vector<HashPair> pairs;
  if (absl::Status s = DecodeHash(typed->body, &pairs); !s.ok()) return s;
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [f, v] : pairs) out.emplace_back(std::string(f), std::string(v));
  return out;
}

TEST(TypedValueTest, PlainStringsAreTheirOwnStoredForm) {
  for (absl::string_view s : {absl::string_view(""), absl::string_view("abc"),
                              absl::string_view("a\xFF"), absl::string_view("H\x01")}) {
    EXPECT_FALSE(NeedsEscape(s));
    EXPECT_EQ(StoredStringSize(s), s.size());
    absl::StatusOr<TypedView> typed = DecodeStored(s);
    ASSERT_TRUE(typed.ok()) << typed.status();
    EXPECT_EQ(typed->type, ValueType::kString);
    EXPECT_EQ(typed->body.data(), s.data());  // a view, no copy
    EXPECT_EQ(typed->body.size(), s.size());
  }
}

TEST(TypedValueTest, StringsBeginningWith0xFFAreEscaped) {
  for (const std::string& s : {std::string("\xFF"), std::string("\xFF\xFF"), std::string("\xFFH"),
                               std::string("\xFFH\x01\x01\x01"
                                           "a\x01"
                                           "b")}) {
    ASSERT_TRUE(NeedsEscape(s));
    const std::string stored = EscapeString(s);
    EXPECT_EQ(stored, "\xFF" + s);
    EXPECT_EQ(StoredStringSize(s), stored.size());
    ExactBuffer buffer(stored);
    absl::StatusOr<TypedView> typed = DecodeStored(buffer.view());
    ASSERT_TRUE(typed.ok()) << typed.status();
    EXPECT_EQ(typed->type, ValueType::kString);
    EXPECT_EQ(typed->body, s);
  }
}

TEST(TypedValueTest, HashFormatBytes) {
  // The format is stored data: these bytes must never change meaning (version 1).
  EXPECT_EQ(EncodeHash({{"a", "1"}, {"", "xy"}}), std::string("\xFF"
                                                              "H"
                                                              "\x01"
                                                              "\x02"
                                                              "\x01"
                                                              "a"
                                                              "\x01"
                                                              "1"
                                                              "\x00"
                                                              "\x02"
                                                              "xy",
                                                              12));
  const std::string big(300, 'v');  // a two-byte varint: 300 = 0xAC 0x02
  EXPECT_EQ(EncodeHash({{"f", big}}), absl::StrCat("\xFFH\x01\x01\x01"
                                                   "f",
                                                   "\xAC\x02", big));
}

TEST(TypedValueTest, HashRoundTrip) {
  const std::string big(20000, 'z');
  const std::string binary("\0\r\n\xFF", 4);
  const std::vector<HashPair> pairs = {{"a", "1"}, {"", ""}, {binary, binary}, {"big", big}};
  const std::string stored = EncodeHash(pairs);
  EXPECT_EQ(EncodedHashSize(pairs), stored.size());
  absl::StatusOr<TypedView> typed = DecodeStored(stored);
  ASSERT_TRUE(typed.ok());
  EXPECT_EQ(typed->type, ValueType::kHash);
  EXPECT_EQ(*HashLength(typed->body), 4u);
  EXPECT_EQ(*FindField(typed->body, binary), binary);
  EXPECT_EQ(*FindField(typed->body, "big"), big);
  EXPECT_EQ(*FindField(typed->body, ""), "");
  EXPECT_EQ(*FindField(typed->body, "nope"), std::nullopt);
  auto all = DecodeAll(stored);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_THAT(*all,
              ElementsAre(Pair("a", "1"), Pair("", ""), Pair(binary, binary), Pair("big", big)));
  int visited = 0;
  EXPECT_TRUE(ForEachField(typed->body, [&](absl::string_view, absl::string_view) {
                return ++visited < 2;  // stops early
              }).ok());
  EXPECT_EQ(visited, 2);
}

TEST(TypedValueTest, EveryTruncationIsDataLoss) {
  const std::string stored = EncodeHash({{"field", "value"}, {"f2", std::string(200, 'x')}});
  for (size_t n = 0; n < stored.size(); ++n) {
    ExactBuffer buffer(absl::string_view(stored).substr(0, n));
    absl::StatusOr<TypedView> typed = DecodeStored(buffer.view());
    if (n == 0) {  // the empty string
      ASSERT_TRUE(typed.ok());
      EXPECT_EQ(typed->type, ValueType::kString);
      continue;
    }
    if (n == 1) {
      EXPECT_TRUE(absl::IsDataLoss(typed.status()));
      continue;
    }
    ASSERT_TRUE(typed.ok()) << n;
    std::vector<HashPair> pairs;
    EXPECT_TRUE(absl::IsDataLoss(DecodeHash(typed->body, &pairs))) << "prefix of " << n;
    EXPECT_TRUE(absl::IsDataLoss(FindField(typed->body, "nope").status())) << n;
  }
}

TEST(TypedValueTest, CorruptEncodingsAreDataLoss) {
  const std::string cases[] = {
      std::string("\xFF", 1),
      std::string("\xFFQ", 2),  // unknown tag
      std::string("\xFFH\x02\x01\x01"
                  "a\x01"
                  "b",
                  8),                   // unknown version
      std::string("\xFFH\x01\x00", 4),  // no fields
      std::string("\xFFH\x01\x02\x01"
                  "a\x01"
                  "b",
                  8),  // fewer pairs than counted
      std::string("\xFFH\x01\x01\x01"
                  "a\x01"
                  "bc",
                  9),  // a byte after the last pair
      std::string("\xFFH\x01\x01\x05"
                  "a\x01"
                  "b",
                  8),  // a field past the end
      std::string("\xFFH\x01\x01\x01"
                  "a\x80",
                  7),                                                        // a varint cut short
      std::string("\xFFH\x01\x80\x80\x80\x80\x80\x80\x80\x80\x80\x02", 13),  // over 64 bits
      std::string("\xFFH\x01\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01\x01"
                  "a\x01"
                  "b",
                  17),
  };
  for (const std::string& c : cases) {
    EXPECT_TRUE(absl::IsDataLoss(DecodeAll(c).status())) << ::testing::PrintToString(c);
  }
  EXPECT_THAT(DecodeAll(cases[2]).status().message(),
              ::testing::HasSubstr("a stored hash is corrupt (unknown version 2)"));
  // HashLength checks only the header, within what the body could hold.
  EXPECT_TRUE(absl::IsDataLoss(HashLength(std::string("\x01\x05\x01"
                                                      "a\x01"
                                                      "b",
                                                      6))
                                   .status()));
  EXPECT_EQ(*HashLength(std::string("\x01\x01\x01"
                                    "a\x01"
                                    "bc",
                                    7)),
            1u);
}

TEST(TypedValueTest, RandomBytesNeverReadPastTheEnd) {
  std::mt19937_64 rng(12345);
  const std::string valid = EncodeHash({{"a", "1"}, {"bb", "22"}, {"ccc", std::string(130, 'c')}});
  int decoded = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string s;
    if (i % 2 == 0) {  // a valid encoding with a few bytes changed
      s = valid;
      for (int m = 0; m < 1 + static_cast<int>(rng() % 3); ++m) {
        s[rng() % s.size()] = static_cast<char>(rng());
      }
    } else {
      s = std::string("\xFFH\x01", 3);
      s.resize(3 + rng() % 40);
      for (size_t j = 3; j < s.size(); ++j)
        s[j] = static_cast<char>(rng() % 4 == 0 ? 0x80 | rng() : rng() % 8);
    }
    absl::StatusOr<std::vector<std::pair<std::string, std::string>>> r = DecodeAll(s);
    if (r.ok()) ++decoded;
    if (!r.ok() && !absl::IsInvalidArgument(r.status())) {
      EXPECT_TRUE(absl::IsDataLoss(r.status())) << r.status();
    }
    ExactBuffer buffer(s);
    absl::StatusOr<TypedView> typed = DecodeStored(buffer.view());
    if (typed.ok() && typed->type == ValueType::kHash) {
      (void)FindField(typed->body, "bb");
      (void)HashLength(typed->body);
    }
  }
  EXPECT_GT(decoded, 0);  // some mutations still decode (a changed value byte)
}

TEST(HashValueTest, LoadEditEncode) {
  HashValue h;
  const Value missing, plain = "plain", escaped = EscapeString("\xFFx"), corrupt = "\xFFH";
  ASSERT_TRUE(h.Load(missing).ok());
  EXPECT_TRUE(h.empty());
  EXPECT_TRUE(IsRedisError(h.Load(plain)));
  EXPECT_EQ(StoreErrorReply(h.Load(escaped)),
            "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n");
  EXPECT_TRUE(absl::IsDataLoss(h.Load(corrupt)));

  const Value stored = EncodeHash({{"a", "1"}, {"b", "2"}});
  ASSERT_TRUE(h.Load(stored).ok());
  EXPECT_EQ(h.size(), 2u);
  EXPECT_FALSE(h.Set("a", "10"));
  EXPECT_TRUE(h.Set("c", "3"));
  EXPECT_TRUE(h.Remove("b"));
  EXPECT_FALSE(h.Remove("b"));
  EXPECT_EQ(h.Get("a"), "10");
  EXPECT_EQ(h.Get("b"), std::nullopt);
  EXPECT_EQ(h.Encode(), EncodeHash({{"a", "10"}, {"c", "3"}}));
  EXPECT_EQ(h.EncodedSize(), h.Encode().size());
}

TEST(HashValueTest, LargeHashesUseAnIndexThatFollowsEdits) {
  HashValue h;
  const Value missing;
  ASSERT_TRUE(h.Load(missing).ok());
  std::vector<std::string> names;
  for (int i = 0; i < 100; ++i) names.push_back(absl::StrCat("f", i));
  for (const std::string& n : names) EXPECT_TRUE(h.Set(n, n));
  EXPECT_EQ(h.Get("f57"), "f57");  // builds the index
  EXPECT_TRUE(h.Set("new", "x"));  // extends it
  EXPECT_EQ(h.Get("new"), "x");
  EXPECT_FALSE(h.Set("f3", "changed"));
  EXPECT_TRUE(h.Remove("f0"));  // invalidates it
  EXPECT_EQ(h.Get("f99"), "f99");
  EXPECT_EQ(h.Get("f0"), std::nullopt);
  EXPECT_EQ(h.Get("f3"), "changed");
  EXPECT_EQ(h.size(), 100u);
  std::vector<HashPair> pairs;
  const std::string stored = h.Encode();
  absl::StatusOr<TypedView> typed = DecodeStored(stored);
  ASSERT_TRUE(typed.ok());
  ASSERT_TRUE(DecodeHash(typed->body, &pairs).ok());
  ASSERT_EQ(pairs.size(), 100u);
  EXPECT_EQ(pairs.front().first, "f1");
  EXPECT_EQ(pairs.back().first, "new");
}

}  // namespace
}  // namespace farm::kv::resp

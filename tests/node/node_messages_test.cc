// The node layer's wire formats (farm/node/node_messages.h): round trips, and every
// malformed payload refused.
#include "farm/node/node_messages.h"

#include <string>

#include "gtest/gtest.h"

namespace farm::node {
namespace {

TEST(NodeMessagesTest, HolderQueryRoundTrips) {
  const std::string bytes = EncodeHolderQuery(HolderQuery{1234567, 42});
  EXPECT_EQ(bytes.size(), 1u + 4u + 8u);
  absl::StatusOr<HolderQuery> query = DecodeHolderQuery(bytes);
  ASSERT_TRUE(query.ok()) << query.status();
  EXPECT_EQ(query->region, 1234567u);
  EXPECT_EQ(query->epoch, 42u);
}

TEST(NodeMessagesTest, HolderReplyRoundTripsEveryAnswer) {
  for (HolderAnswer a : {HolderAnswer::kHolds, HolderAnswer::kHandItOver, HolderAnswer::kOtherHandsOver,
                         HolderAnswer::kNotPrimary, HolderAnswer::kRetry, HolderAnswer::kPromotesItsCopy}) {
    absl::StatusOr<HolderReply> reply = DecodeHolderReply(EncodeHolderReply(HolderReply{a, 7}));
    ASSERT_TRUE(reply.ok()) << reply.status();
    EXPECT_EQ(reply->answer, a);
    EXPECT_EQ(reply->epoch, 7u);
    EXPECT_STRNE(HolderAnswerName(a), "unknown");
  }
}

TEST(NodeMessagesTest, MalformedPayloadsAreRefused) {
  const std::string query = EncodeHolderQuery(HolderQuery{5, 9});
  for (size_t n = 0; n < query.size(); ++n) {
    EXPECT_EQ(DecodeHolderQuery(query.substr(0, n)).status().code(), absl::StatusCode::kInvalidArgument) << n;
  }
  EXPECT_FALSE(DecodeHolderQuery(query + "x").ok());
  std::string other_tag = query;
  other_tag[0] = static_cast<char>(kNodeWireFormat + 1);
  EXPECT_FALSE(DecodeHolderQuery(other_tag).ok());

  const std::string reply = EncodeHolderReply(HolderReply{HolderAnswer::kHolds, 3});
  for (size_t n = 0; n < reply.size(); ++n) EXPECT_FALSE(DecodeHolderReply(reply.substr(0, n)).ok()) << n;
  EXPECT_FALSE(DecodeHolderReply(reply + "x").ok());
  for (int answer : {0, 7, 255}) {
    std::string bad = reply;
    bad[1] = static_cast<char>(answer);
    EXPECT_EQ(DecodeHolderReply(bad).status().code(), absl::StatusCode::kInvalidArgument) << answer;
  }
}

}  // namespace
}  // namespace farm::node

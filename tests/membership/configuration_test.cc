#include "membership/configuration.h"

#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "membership/configuration.pb.h"
#include "membership/lease_clock.h"
#include "membership/membership.h"
#include "membership/static_membership.h"

namespace farm::membership {
namespace {

Member MakeMember(NodeId id) {
  Member m;
  m.id = id;
  m.host = "h";
  m.fabric_addresses["tcp"] = "tcp:127.0.0.1:" + std::to_string(7000 + id);
  m.threads = 2;
  m.incarnation = 100 + id;
  return m;
}

Configuration MakeConfig() {
  Configuration c;
  c.cluster = "test";
  c.epoch = 7;
  c.manager = 2;
  c.replication = 3;
  c.members = {MakeMember(1), MakeMember(2), MakeMember(5)};
  return c;
}

TEST(ConfigurationTest, RoundTrips) {
  Configuration c = MakeConfig();
  c.members[1].compute_only = true;  // travels with the configuration
  absl::StatusOr<std::string> bytes = EncodeConfiguration(c);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  absl::StatusOr<Configuration> back = DecodeConfiguration(*bytes);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, c);
  EXPECT_NE(back->Find(5), nullptr);
  EXPECT_EQ(back->Find(3), nullptr);
}

TEST(ConfigurationTest, CorruptBytesAreDataLoss) {
  absl::StatusOr<std::string> bytes = EncodeConfiguration(MakeConfig());
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(DecodeConfiguration("\xff\xff\xff garbage").status().code(), absl::StatusCode::kDataLoss);
  // Every truncation is refused (protobuf alone would accept some as shorter messages).
  for (size_t n = 0; n < bytes->size(); ++n) {
    EXPECT_FALSE(DecodeConfiguration(absl::string_view(*bytes).substr(0, n)).ok()) << n;
  }
}

TEST(ConfigurationTest, UnknownFormatOrKindIsRefusedBeforeAnythingElse) {
  absl::StatusOr<std::string> bytes = EncodeConfiguration(MakeConfig());
  ASSERT_TRUE(bytes.ok());
  Envelope e;
  ASSERT_TRUE(e.ParseFromString(*bytes));
  e.set_format(kConfigurationFormat + 1);
  absl::Status s = DecodeConfiguration(e.SerializeAsString()).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("format"), std::string::npos) << s;
  // A registration is not a configuration.
  absl::StatusOr<std::string> reg = EncodeRegistration("test", MakeMember(1));
  ASSERT_TRUE(reg.ok());
  EXPECT_EQ(DecodeConfiguration(*reg).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(ConfigurationTest, DamagedBodiesFailTheChecksum) {
  absl::StatusOr<std::string> bytes = EncodeConfiguration(MakeConfig());
  ASSERT_TRUE(bytes.ok());
  Envelope e;
  ASSERT_TRUE(e.ParseFromString(*bytes));
  std::string body = e.body();
  body[body.size() / 2] ^= 0x20;
  e.set_body(body);
  absl::Status s = DecodeConfiguration(e.SerializeAsString()).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_EQ(Crc32c("123456789"), 0xE3069283u);  // the standard CRC-32C check value
}

TEST(ConfigurationTest, InvariantsAreChecked) {
  Configuration c = MakeConfig();
  c.members.push_back(MakeMember(2));  // duplicate, unsorted
  EXPECT_EQ(Validate(c).code(), absl::StatusCode::kInvalidArgument);
  c = MakeConfig();
  c.manager = 9;
  EXPECT_FALSE(Validate(c).ok());
  c = MakeConfig();
  c.epoch = 0;
  EXPECT_FALSE(Validate(c).ok());
  c = MakeConfig();
  c.replication = 0;
  EXPECT_FALSE(Validate(c).ok());
  c = MakeConfig();
  c.members[0].fabric_addresses.clear();
  EXPECT_FALSE(EncodeConfiguration(c).ok());
}

TEST(ConfigurationTest, RegistrationIsForOneCluster) {
  absl::StatusOr<std::string> bytes = EncodeRegistration("a", MakeMember(4));
  ASSERT_TRUE(bytes.ok());
  EXPECT_TRUE(DecodeRegistration(*bytes, "a").ok());
  EXPECT_EQ(DecodeRegistration(*bytes, "b").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(StaticMembershipTest, ParsesMemberListsAndNamesBadEntries) {
  absl::StatusOr<std::vector<Member>> members =
      ParseMemberList("2=tcp:127.0.0.1:7002,1=shm:/tmp/a.sock;tcp:127.0.0.1:7001");
  ASSERT_TRUE(members.ok()) << members.status();
  ASSERT_EQ(members->size(), 2u);
  EXPECT_EQ((*members)[0].id, 1u);
  EXPECT_EQ((*members)[0].address("shm"), "shm:/tmp/a.sock");
  EXPECT_EQ((*members)[0].address("tcp"), "tcp:127.0.0.1:7001");
  EXPECT_FALSE((*members)[0].compute_only);
  absl::StatusOr<std::vector<Member>> with_compute = ParseMemberList("1=shm:/a,2=shm:/b;compute");
  ASSERT_TRUE(with_compute.ok()) << with_compute.status();
  EXPECT_FALSE((*with_compute)[0].compute_only);
  EXPECT_TRUE((*with_compute)[1].compute_only);
  EXPECT_EQ((*with_compute)[1].address("shm"), "shm:/b");
  for (const char* bad : {"", "x=tcp:1:2", "1=", "1=nocolon", "1=tcp:a:1,1=tcp:b:2", "0=tcp:h:1",
                          "1=compute"}) {
    EXPECT_FALSE(ParseMemberList(bad).ok()) << bad;
  }
}

TEST(StaticMembershipTest, ServesEpochOneOnly) {
  Configuration c = MakeConfig();
  c.epoch = 1;
  absl::StatusOr<std::unique_ptr<StaticMembership>> m = StaticMembership::Create(c, 5);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_FALSE((*m)->gate().serving());
  ASSERT_TRUE((*m)->Start(nullptr).ok());
  EXPECT_TRUE((*m)->gate().serving());
  EXPECT_TRUE((*m)->gate().Check(1).ok());
  EXPECT_EQ((*m)->gate().Check(2).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(StaticMembership::Create(c, 4).ok());  // not a member
}

TEST(ServingGateTest, TheLeaseRunsToItsDeadlineAndOnlyMovesLater) {
  ServingGate gate(1);
  gate.SetSession(77);
  Configuration c = MakeConfig();
  c.members = {MakeMember(1)};
  c.members[0].session = 77;
  c.manager = 1;
  gate.Apply(c);
  EXPECT_TRUE(gate.Check(7).ok()) << "a gate never given a lease holds it (static membership)";
  gate.ExpireLease();
  EXPECT_EQ(gate.Check(7).code(), absl::StatusCode::kUnavailable);
  const int64_t now = LeaseClockNowNs();
  gate.ExtendLease(now + absl::ToInt64Nanoseconds(absl::Milliseconds(300)));
  EXPECT_TRUE(gate.Check(7).ok()) << "before the deadline";
  // An answer to an older heartbeat, delivered late: the deadline stays where it is.
  gate.ExtendLease(now + absl::ToInt64Nanoseconds(absl::Milliseconds(100)));
  EXPECT_EQ(gate.lease_deadline_ns(), now + absl::ToInt64Nanoseconds(absl::Milliseconds(300)));
  absl::SleepFor(absl::Milliseconds(150));
  EXPECT_TRUE(gate.serving());
  absl::SleepFor(absl::Milliseconds(200));
  EXPECT_FALSE(gate.serving()) << "past the deadline, whatever was reported or not";
  EXPECT_EQ(gate.Check(7).code(), absl::StatusCode::kUnavailable);
  gate.ExtendLease(LeaseClockNowNs() + absl::ToInt64Nanoseconds(absl::Seconds(10)));
  EXPECT_TRUE(gate.Check(7).ok()) << "a new answer renews it";
}

TEST(ServingGateTest, MembershipIsBySessionAndAFenceLastsUntilRejoined) {
  ServingGate gate(1);
  gate.SetSession(2);  // a restarted process: its predecessor registered with session 1
  Configuration c = MakeConfig();
  c.members = {MakeMember(1)};
  c.members[0].session = 1;
  c.manager = 1;
  gate.Apply(c);
  EXPECT_FALSE(gate.member()) << "the predecessor's entry does not make this process a member";
  EXPECT_EQ(gate.Check(7).code(), absl::StatusCode::kFailedPrecondition);
  c.members[0].session = 2;
  c.epoch = 8;
  gate.Apply(c);
  EXPECT_TRUE(gate.Check(8).ok());
  EXPECT_EQ(gate.Check(7).code(), absl::StatusCode::kFailedPrecondition) << "an epoch left behind";
  gate.Fence();  // session expired
  EXPECT_EQ(gate.Check(8).code(), absl::StatusCode::kUnavailable);
  gate.SetSession(3);
  gate.Apply(c);  // still the old session's entry: stays fenced
  EXPECT_FALSE(gate.serving());
  c.members[0].session = 3;
  c.epoch = 9;
  gate.Apply(c);
  EXPECT_TRUE(gate.Check(9).ok()) << "rejoined";
  c.members = {MakeMember(2)};
  c.manager = 2;
  c.epoch = 10;
  gate.Apply(c);
  EXPECT_EQ(gate.Check(10).code(), absl::StatusCode::kFailedPrecondition) << "removed";
}

}  // namespace
}  // namespace farm::membership

#include "farm/fabric/handshake.h"

#include <sodium.h>

#include <bit>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "farm/fabric/socket_util.h"

namespace farm {
namespace {

static_assert(std::endian::native == std::endian::little, "wire formats assume little-endian");

constexpr char kMagic[8] = {'F', 'A', 'R', 'M', '-', 'F', 'A', 'B'};

struct ClientHelloFrame {
  char magic[8];
  uint16_t version;
  uint16_t reserved;
  uint32_t reserved2;
  uint8_t nonce[32];
};
static_assert(sizeof(ClientHelloFrame) == 48);

struct ChallengeFrame {
  char magic[8];
  uint16_t version;
  uint16_t reserved;
  uint32_t reserved2;
  uint8_t nonce[32];
  uint8_t mac[32];
};
static_assert(sizeof(ChallengeFrame) == 80);

struct ClientAuthFrame {
  uint8_t mac[32];
  uint32_t hello_length;
  uint32_t reserved;
};
static_assert(sizeof(ClientAuthFrame) == 40);

struct AcceptFrame {
  uint32_t code;  // absl::StatusCode; 0 = accepted
  uint32_t length;
};
static_assert(sizeof(AcceptFrame) == 8);

constexpr absl::string_view kServerLabel = "farm-fabric-server-v1";
constexpr absl::string_view kClientLabel = "farm-fabric-client-v1";

template <typename T>
T ReadFrame(const ByteBuffer& in) {
  T frame;
  std::memcpy(&frame, in.data(), sizeof(T));
  return frame;
}

}  // namespace

absl::StatusOr<ClusterKey> ClusterKey::FromSecret(absl::string_view secret) {
  if (secret.size() < kMinSecretBytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "cluster secret must be at least %d bytes (got %d)", kMinSecretBytes, secret.size()));
  }
  if (sodium_init() < 0) return absl::InternalError("libsodium failed to initialise");
  ClusterKey key;
  crypto_hash_sha256(key.key_.data(), reinterpret_cast<const uint8_t*>(secret.data()),
                     secret.size());
  return key;
}

ClusterKey::Mac ClusterKey::Compute(absl::string_view label, const Nonce& client,
                                    const Nonce& server) const {
  crypto_auth_hmacsha256_state state;
  crypto_auth_hmacsha256_init(&state, key_.data(), key_.size());
  crypto_auth_hmacsha256_update(&state, reinterpret_cast<const uint8_t*>(label.data()),
                                label.size());
  crypto_auth_hmacsha256_update(&state, client.data(), client.size());
  crypto_auth_hmacsha256_update(&state, server.data(), server.size());
  Mac mac;
  crypto_auth_hmacsha256_final(&state, mac.data());
  return mac;
}

bool ClusterKey::Verify(const Mac& mac, absl::string_view label, const Nonce& client,
                        const Nonce& server) const {
  const Mac expected = Compute(label, client, server);
  return crypto_verify_32(mac.data(), expected.data()) == 0;
}

absl::StatusOr<std::string> ClientHandshake(int fd, const ClusterKey& key, absl::string_view hello,
                                            absl::Time deadline) {
  if (hello.size() > kMaxHelloBytes) {
    return absl::InvalidArgumentError(
        absl::StrFormat("hello of %d bytes exceeds %d", hello.size(), kMaxHelloBytes));
  }
  ClientHelloFrame ch{};
  std::memcpy(ch.magic, kMagic, sizeof(kMagic));
  ch.version = kFabricProtocolVersion;
  ClusterKey::Nonce client_nonce;
  randombytes_buf(client_nonce.data(), client_nonce.size());
  std::memcpy(ch.nonce, client_nonce.data(), 32);
  if (absl::Status s = SendAll(fd, &ch, sizeof(ch), deadline); !s.ok()) return s;

  ChallengeFrame challenge;
  if (absl::Status s = RecvAll(fd, &challenge, sizeof(challenge), deadline); !s.ok()) {
    if (absl::IsUnavailable(s)) {
      return absl::UnavailableError(
          absl::StrCat("peer closed the connection during the fabric handshake (", s.message(),
                       "); is it a farm node of this fabric backend?"));
    }
    return s;
  }
  if (std::memcmp(challenge.magic, kMagic, sizeof(kMagic)) != 0) {
    return absl::FailedPreconditionError("peer is not a farm fabric endpoint (bad magic)");
  }
  if (challenge.version != kFabricProtocolVersion) {
    return absl::FailedPreconditionError(
        absl::StrFormat("peer speaks fabric protocol v%d, this node v%d", challenge.version,
                        kFabricProtocolVersion));
  }
  ClusterKey::Nonce server_nonce;
  std::memcpy(server_nonce.data(), challenge.nonce, 32);
  ClusterKey::Mac server_mac;
  std::memcpy(server_mac.data(), challenge.mac, 32);
  if (!key.Verify(server_mac, kServerLabel, client_nonce, server_nonce)) {
    return absl::UnauthenticatedError(
        "peer failed to prove the cluster secret: it belongs to another cluster");
  }

  ClientAuthFrame auth{};
  const ClusterKey::Mac client_mac = key.Compute(kClientLabel, client_nonce, server_nonce);
  std::memcpy(auth.mac, client_mac.data(), 32);
  auth.hello_length = static_cast<uint32_t>(hello.size());
  std::string out(reinterpret_cast<const char*>(&auth), sizeof(auth));
  out.append(hello.data(), hello.size());
  if (absl::Status s = SendAll(fd, out.data(), out.size(), deadline); !s.ok()) return s;

  AcceptFrame accept;
  if (absl::Status s = RecvAll(fd, &accept, sizeof(accept), deadline); !s.ok()) {
    if (absl::IsUnavailable(s)) {
      return absl::UnauthenticatedError(
          "peer closed the connection after our proof: it does not share our cluster secret");
    }
    return s;
  }
  if (accept.length > kMaxHelloBytes) {
    return absl::DataLossError(absl::StrFormat("accept frame claims %d bytes", accept.length));
  }
  std::string reply(accept.length, '\0');
  if (absl::Status s = RecvAll(fd, reply.data(), reply.size(), deadline); !s.ok()) return s;
  if (accept.code != 0) {
    const auto code = accept.code <= static_cast<uint32_t>(absl::StatusCode::kUnauthenticated)
                          ? static_cast<absl::StatusCode>(accept.code)
                          : absl::StatusCode::kUnknown;
    return absl::Status(code, absl::StrCat("peer refused the connection: ", reply));
  }
  return reply;
}

ServerHandshake::Step ServerHandshake::Fail(absl::Status error) {
  state_ = State::kDone;
  error_ = std::move(error);
  return Step::kFailed;
}

ServerHandshake::Step ServerHandshake::Advance(ByteBuffer& in, ByteBuffer& out) {
  switch (state_) {
    case State::kClientHello: {
      if (in.size() < sizeof(ClientHelloFrame)) return Step::kNeedMore;
      const auto ch = ReadFrame<ClientHelloFrame>(in);
      in.Consume(sizeof(ch));
      if (std::memcmp(ch.magic, kMagic, sizeof(kMagic)) != 0) {
        return Fail(absl::UnauthenticatedError("client sent a bad magic"));
      }
      std::memcpy(client_nonce_.data(), ch.nonce, 32);
      randombytes_buf(server_nonce_.data(), server_nonce_.size());
      ChallengeFrame challenge{};
      std::memcpy(challenge.magic, kMagic, sizeof(kMagic));
      challenge.version = kFabricProtocolVersion;
      std::memcpy(challenge.nonce, server_nonce_.data(), 32);
      const ClusterKey::Mac mac = key_->Compute(kServerLabel, client_nonce_, server_nonce_);
      std::memcpy(challenge.mac, mac.data(), 32);
      out.Append(&challenge, sizeof(challenge));
      if (ch.version != kFabricProtocolVersion) {
        // The challenge tells the client our version; it reports the mismatch.
        return Fail(absl::FailedPreconditionError(absl::StrFormat(
            "client speaks fabric protocol v%d, this node v%d", ch.version,
            kFabricProtocolVersion)));
      }
      state_ = State::kClientAuth;
      [[fallthrough]];
    }
    case State::kClientAuth: {
      if (in.size() < sizeof(ClientAuthFrame)) return Step::kNeedMore;
      const auto auth = ReadFrame<ClientAuthFrame>(in);
      ClusterKey::Mac mac;
      std::memcpy(mac.data(), auth.mac, 32);
      // The MAC is checked before the hello length is even looked at.
      if (!key_->Verify(mac, kClientLabel, client_nonce_, server_nonce_)) {
        return Fail(absl::UnauthenticatedError("client failed to prove the cluster secret"));
      }
      if (auth.hello_length > kMaxHelloBytes) {
        return Fail(absl::InvalidArgumentError(
            absl::StrFormat("client hello of %d bytes exceeds %d", auth.hello_length,
                            kMaxHelloBytes)));
      }
      if (in.size() < sizeof(auth) + auth.hello_length) return Step::kNeedMore;
      hello_.assign(in.data() + sizeof(auth), auth.hello_length);
      in.Consume(sizeof(auth) + auth.hello_length);
      state_ = State::kDone;
      return Step::kAuthenticated;
    }
    case State::kDone:
      return error_.ok() ? Step::kAuthenticated : Step::kFailed;
  }
  return Step::kFailed;
}

void ServerHandshake::EncodeAccept(const absl::Status& decision, absl::string_view reply,
                                   ByteBuffer& out) {
  const absl::string_view payload = decision.ok() ? reply : decision.message();
  AcceptFrame frame{static_cast<uint32_t>(decision.code()), static_cast<uint32_t>(payload.size())};
  out.Append(&frame, sizeof(frame));
  out.Append(payload.data(), payload.size());
}

}  // namespace farm

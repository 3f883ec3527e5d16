// The authenticated connection handshake shared by the shm and tcp backends.
//
// Both sides prove knowledge of the cluster secret without revealing it, with fresh
// nonces so a recorded handshake cannot be replayed, and the server reads nothing of
// the client's hello until the client has proved itself:
//
//   client -> server  ClientHello  magic, version, client nonce (32 B)
//   server -> client  Challenge    magic, version, server nonce, MAC("server", cn, sn)
//   client -> server  ClientAuth   MAC("client", cn, sn), hello length, hello
//   server -> client  AcceptFrame  status code, reply length, reply or error message
//
// MAC is HMAC-SHA-256 (libsodium) keyed with SHA-256 of the secret. A server that gets
// a bad magic, a bad MAC or an oversize hello closes the connection at once. Versions:
// each side sends its own; a mismatch is a clear error on the client.
//
// Integers are little-endian. After the handshake the socket carries the backend's own
// frames; they are not authenticated per message (like RDMA, the fabric trusts the
// network once a connection is established).
#ifndef FARM_FABRIC_HANDSHAKE_H_
#define FARM_FABRIC_HANDSHAKE_H_

#include <array>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "farm/fabric/byte_buffer.h"

namespace farm {

inline constexpr uint16_t kFabricProtocolVersion = 1;
inline constexpr size_t kMaxHelloBytes = 1 << 20;
inline constexpr size_t kMinSecretBytes = 16;

class ClusterKey {
 public:
  // InvalidArgument when the secret is shorter than kMinSecretBytes.
  static absl::StatusOr<ClusterKey> FromSecret(absl::string_view secret);

  using Mac = std::array<uint8_t, 32>;
  using Nonce = std::array<uint8_t, 32>;
  Mac Compute(absl::string_view label, const Nonce& client, const Nonce& server) const;
  bool Verify(const Mac& mac, absl::string_view label, const Nonce& client,
              const Nonce& server) const;

 private:
  std::array<uint8_t, 32> key_{};
};

// Runs the client side on a connected socket. Returns the server's reply, or:
// Unauthenticated (the server did not prove the secret, or refused ours), the error the
// server's accept handler returned, FailedPrecondition for a protocol version mismatch,
// Unavailable / DeadlineExceeded for transport failures.
absl::StatusOr<std::string> ClientHandshake(int fd, const ClusterKey& key, absl::string_view hello,
                                            absl::Time deadline);

// The server side as an incremental state machine, for event-driven servers.
class ServerHandshake {
 public:
  enum class Step {
    kNeedMore,       // consume more input
    kAuthenticated,  // hello() is ready: decide, then send EncodeAccept
    kFailed,         // close the connection; error() says why (for the log)
  };

  explicit ServerHandshake(const ClusterKey* key) : key_(key) {}

  // Consumes bytes from `in`, appends bytes to send to `out`.
  Step Advance(ByteBuffer& in, ByteBuffer& out);

  absl::string_view hello() const { return hello_; }
  const absl::Status& error() const { return error_; }

  // The final frame: `decision` OK with `reply`, or the refusal.
  static void EncodeAccept(const absl::Status& decision, absl::string_view reply, ByteBuffer& out);

 private:
  enum class State { kClientHello, kClientAuth, kDone };
  Step Fail(absl::Status error);

  const ClusterKey* key_;
  State state_ = State::kClientHello;
  ClusterKey::Nonce client_nonce_{};
  ClusterKey::Nonce server_nonce_{};
  std::string hello_;
  absl::Status error_;
};

}  // namespace farm

#endif  // FARM_FABRIC_HANDSHAKE_H_

// TcpFabric: the fabric backend over TCP, for nodes on different hosts (or network
// namespaces). A responder thread per node (tcp_responder.h) plays the NIC for peers'
// one-sided ops; initiators send requests and read responses on their own threads.
#ifndef FARM_FABRIC_TCP_TCP_FABRIC_H_
#define FARM_FABRIC_TCP_TCP_FABRIC_H_

#include <memory>
#include <string>

#include "farm/fabric/socket_fabric.h"

namespace farm {

class TcpFabric final : public SocketFabric {
 public:
  // listen_address defaults to 127.0.0.1:0 (loopback, any port).
  static absl::StatusOr<std::unique_ptr<TcpFabric>> Create(const FabricOptions& options);
  ~TcpFabric() override { StopServer(); }

  absl::string_view backend() const override { return "tcp"; }
  std::string locator() const override { return "tcp:" + address_; }
  absl::StatusOr<Connection> Connect(absl::string_view locator, absl::string_view hello,
                                     CompletionQueue* cq, uint64_t context) override;

 private:
  TcpFabric(const FabricOptions& options, ClusterKey key) : SocketFabric(options, key) {}
  absl::StatusOr<UniqueFd> OpenSocket(absl::string_view address, absl::Time deadline) override;

  std::string address_;  // host:port peers connect to
};

}  // namespace farm

#endif  // FARM_FABRIC_TCP_TCP_FABRIC_H_

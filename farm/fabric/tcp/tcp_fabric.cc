#include "farm/fabric/tcp/tcp_fabric.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "farm/fabric/socket_util.h"
#include "farm/fabric/tcp/tcp_endpoint.h"
#include "farm/fabric/tcp/tcp_responder.h"

namespace farm {

absl::StatusOr<std::unique_ptr<TcpFabric>> TcpFabric::Create(const FabricOptions& options) {
  absl::StatusOr<ClusterKey> key = ClusterKey::FromSecret(options.cluster_secret);
  if (!key.ok()) return key.status();
  std::unique_ptr<TcpFabric> fabric(new TcpFabric(options, *key));
  if (absl::Status s = fabric->InitTables(); !s.ok()) return s;
  absl::StatusOr<PeerListener> listener = ListenTcpForPeers(options.listen_address, "tcp fabric");
  if (!listener.ok()) return listener.status();
  fabric->address_ = std::move(listener->address);
  fabric->set_server(std::make_unique<TcpResponder>(std::move(listener->fd), *key,
                                                    &fabric->regions(), &fabric->doorbells(),
                                                    options.max_op_bytes));
  return fabric;
}

absl::StatusOr<UniqueFd> TcpFabric::OpenSocket(absl::string_view address, absl::Time deadline) {
  return ConnectTcp(address, deadline);
}

absl::StatusOr<Connection> TcpFabric::Connect(absl::string_view locator, absl::string_view hello,
                                              CompletionQueue* cq, uint64_t context) {
  absl::StatusOr<Authenticated> conn = ConnectAndAuthenticate(locator, hello, cq);
  if (!conn.ok()) return conn.status();
  TcpEndpointConfig config{&regions(), options().max_op_bytes, options().max_outstanding};
  absl::StatusOr<std::unique_ptr<TcpEndpoint>> ep =
      TcpEndpoint::Create(config, std::move(conn->socket), conn->cq, context);
  if (!ep.ok()) return ep.status();
  return Connection{std::move(*ep), std::move(conn->reply)};
}

}  // namespace farm

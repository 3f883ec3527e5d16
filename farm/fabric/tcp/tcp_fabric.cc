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
  const std::string listen =
      options.listen_address.empty() ? "127.0.0.1:0" : options.listen_address;
  absl::StatusOr<UniqueFd> listen_fd = ListenTcp(listen);
  if (!listen_fd.ok()) return listen_fd.status();
  absl::StatusOr<std::string> bound = LocalTcpAddress(listen_fd->get());
  if (!bound.ok()) return bound.status();
  if (absl::StartsWith(*bound, "0.0.0.0:") || absl::StartsWith(*bound, "[::]:")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tcp fabric bound to the wildcard address ", *bound,
        ": give a specific host address peers can reach as listen_address"));
  }
  fabric->address_ = *bound;
  fabric->set_server(std::make_unique<TcpResponder>(std::move(*listen_fd), *key,
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

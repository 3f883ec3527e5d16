// AdminServer: the node's admin port. One thread accepts connections and answers
// framed AdminRequests (admin_protocol.h) with what `handler` returns, one connection
// at a time; every read and write is bounded, so a stuck or malformed client costs
// at most the I/O timeout and gets an error response or a closed connection. Bind to
// loopback unless the network is trusted: the port is read-only but unauthenticated.
#ifndef FARM_NODE_ADMIN_SERVER_H_
#define FARM_NODE_ADMIN_SERVER_H_

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "farm/base/unique_fd.h"
#include "farm/node/admin.pb.h"

namespace farm::node {

class AdminServer {
 public:
  using Handler = std::function<AdminResponse(const AdminRequest&)>;

  // Listens on `address` (host:port; port 0 picks one) and starts serving.
  static absl::StatusOr<std::unique_ptr<AdminServer>> Start(const std::string& address,
                                                            Handler handler);
  ~AdminServer();  // stops accepting and joins the thread

  const std::string& address() const { return address_; }

 private:
  AdminServer(UniqueFd listener, UniqueFd stop, std::string address, Handler handler);
  void Run();
  void Serve(int fd);

  UniqueFd listener_;
  UniqueFd stop_;  // eventfd: written to stop
  const std::string address_;
  const Handler handler_;
  std::thread thread_;
};

}  // namespace farm::node

#endif  // FARM_NODE_ADMIN_SERVER_H_

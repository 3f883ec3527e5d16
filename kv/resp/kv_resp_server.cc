#include "kv/resp/kv_resp_server.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "kv/resp/resp_session.h"
#include "kv/resp/write_combiner.h"

namespace farm::kv::resp {

absl::StatusOr<std::unique_ptr<::farm::resp::RespServer>> StartKvRespServer(
    std::vector<Context*> threads, std::function<Store*(size_t thread)> store_of, KvRespOptions options) {
  if (!store_of) return absl::InvalidArgumentError("the kv RESP server needs store_of");
  std::vector<Store*> stores;
  // One per thread, shared by the thread's sessions: a key's writes from all of them
  // are combined (write_combiner.h).
  std::vector<std::shared_ptr<WriteCombiner>> combiners;
  for (size_t i = 0; i < threads.size(); ++i) {
    stores.push_back(store_of(i));
    if (stores.back() == nullptr) return absl::InvalidArgumentError(absl::StrCat("no store for thread ", i));
    combiners.push_back(WriteCombiner::Create(stores.back(), options.max_txn_attempts, threads[i]));
  }
  RespSessionOptions session;
  session.password = options.password;
  session.parser_limits.max_bulk_bytes = options.max_bulk_bytes;
  session.max_in_flight = options.max_in_flight;
  session.max_output_bytes = options.max_output_bytes;
  session.max_txn_attempts = options.max_txn_attempts;
  session.extension = options.extension;
  ::farm::resp::SessionFactory factory = [stores = std::move(stores), combiners = std::move(combiners),
                                          session](const ::farm::resp::SessionInfo& info) {
    RespSessionOptions o = session;
    o.write_combiner = combiners.at(info.thread);
    o.client_id = info.client_id;
    o.thread = info.thread;
    o.counters = info.counters;
    o.port = info.port;
    o.max_clients = info.max_clients;
    return RespSession::Create(stores.at(info.thread), std::move(o));
  };
  return ::farm::resp::RespServer::Start(std::move(threads), std::move(factory),
                                         {.listen = options.listen, .max_clients = options.max_clients});
}

}  // namespace farm::kv::resp

#include "tests/failover/transfer.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "farm/api/farm.h"
#include "tests/support/node_cluster.h"

namespace farm::testing {

std::string EncodeAccount(const BankAccount& a) {
  return std::string(reinterpret_cast<const char*>(&a), sizeof(a));
}

BankAccount DecodeAccount(const std::string& bytes) {
  BankAccount a;
  std::memcpy(&a, bytes.data(), std::min(bytes.size(), sizeof(a)));
  return a;
}

absl::Status Transfer(node::Node& node, FatPtr from, FatPtr to, int64_t amount, int64_t seq, size_t t) {
  return RunInContext<absl::Status>(
      node,
      [=](Context& ctx, auto finish) {
        TxHandle tx = txCreate(ctx);
        auto objs = std::make_shared<std::vector<ObjBuf*>>(2, nullptr);
        auto left = std::make_shared<int>(2);
        auto failed = std::make_shared<absl::Status>();
        for (int i = 0; i < 2; ++i) {
          txRead(*tx, i == 0 ? from : to, [=](absl::StatusOr<ObjBuf*> o) mutable {
            if (o.ok()) {
              (*objs)[i] = *o;
            } else {
              failed->Update(o.status());
            }
            if (--*left > 0) return;
            if (!failed->ok()) {
              txAbort(*tx);
              return finish(*failed);
            }
            for (int j = 0; j < 2; ++j) {
              ObjBuf* o = (*objs)[j];
              BankAccount a = DecodeAccount(std::string(o->data().data(), o->data().size()));
              a.balance += j == 0 ? -amount : amount;
              a.last = seq;
              const std::string bytes = EncodeAccount(a);
              std::copy(bytes.begin(), bytes.end(), o->data().begin());
              failed->Update(txWrite(*tx, o));
            }
            if (!failed->ok()) {
              txAbort(*tx);
              return finish(*failed);
            }
            txCommit(*tx, [tx, finish](absl::Status s) mutable { finish(s); });
          });
        }
      },
      t);
}

}  // namespace farm::testing

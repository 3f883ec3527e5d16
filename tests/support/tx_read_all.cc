#include "tests/support/tx_read_all.h"

#include <memory>
#include <utility>

#include "farm/api/farm.h"
#include "tests/support/node_cluster.h"

namespace farm::testing {

absl::StatusOr<std::vector<std::string>> ReadAllInOneTx(node::Node& node, std::vector<FatPtr> objects,
                                                        size_t t) {
  using Result = absl::StatusOr<std::vector<std::string>>;
  return RunInContext<Result>(
      node,
      [objects = std::move(objects)](Context& ctx, auto finish) {
        TxHandle tx = txCreate(ctx);
        auto out = std::make_shared<std::vector<std::string>>(objects.size());
        auto left = std::make_shared<size_t>(objects.size());
        auto failed = std::make_shared<absl::Status>();
        if (objects.empty()) return finish(*out);
        for (size_t i = 0; i < objects.size(); ++i) {
          txRead(*tx, objects[i], [=](absl::StatusOr<ObjBuf*> o) mutable {
            if (o.ok()) {
              (*out)[i].assign((*o)->data().data(), (*o)->data().size());
            } else {
              failed->Update(o.status());
            }
            if (--*left > 0) return;
            if (!failed->ok()) {
              txAbort(*tx);
              return finish(*failed);
            }
            txCommit(*tx, [tx, out, finish](absl::Status s) mutable {
              if (!s.ok()) return finish(s);
              finish(*out);
            });
          });
        }
      },
      t);
}

}  // namespace farm::testing

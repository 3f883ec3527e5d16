#include "tests/support/tx_read_all.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/time/clock.h"
#include "absl/time/time.h"
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

absl::Status WriteAllInOneTx(node::Node& node, std::vector<FatPtr> objects, const std::string& value,
                             size_t t) {
  return RunInContext<absl::Status>(
      node,
      [objects = std::move(objects), value](Context& ctx, auto finish) {
        TxHandle tx = txCreate(ctx);
        auto left = std::make_shared<size_t>(objects.size());
        auto failed = std::make_shared<absl::Status>();
        for (const FatPtr& p : objects) {
          txRead(*tx, p, [=](absl::StatusOr<ObjBuf*> o) mutable {
            if (o.ok()) {
              std::fill((*o)->data().begin(), (*o)->data().end(), ' ');
              std::copy(value.begin(), value.begin() + std::min(value.size(), (*o)->data().size()),
                        (*o)->data().begin());
              failed->Update(txWrite(*tx, *o));
            } else {
              failed->Update(o.status());
            }
            if (--*left > 0) return;
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

namespace {

absl::StatusOr<FatPtr> CreateObjectOnce(node::Node& node, const std::string& content, Addr hint, size_t t) {
  return RunInContext<absl::StatusOr<FatPtr>>(
      node,
      [content, hint](Context& ctx, auto finish) {
        TxHandle tx = txCreate(ctx);
        txAlloc(*tx, content.size(), hint, [tx, content, finish](absl::StatusOr<ObjBuf*> o) mutable {
          if (!o.ok()) return finish(o.status());
          std::copy(content.begin(), content.end(), (*o)->data().begin());
          const FatPtr p = (*o)->ptr();
          txCommit(*tx, [tx, p, finish](absl::Status s) mutable {
            if (!s.ok()) return finish(s);
            finish(p);
          });
        });
      },
      t);
}

}  // namespace

absl::StatusOr<FatPtr> CreateObjectInOneTx(node::Node& node, const std::string& content, Addr hint, size_t t) {
  absl::StatusOr<FatPtr> created = absl::AbortedError("not tried");
  for (int attempt = 0; attempt < 100 && absl::IsAborted(created.status()); ++attempt) {
    if (attempt > 0) absl::SleepFor(absl::Milliseconds(20));
    created = CreateObjectOnce(node, content, hint, t);
  }
  return created;
}

absl::StatusOr<FatPtr> ReplaceInOneTx(node::Node& node, FatPtr old, const std::string& content,
                                      Addr hint, FatPtr also, size_t t) {
  return RunInContext<absl::StatusOr<FatPtr>>(
      node,
      [old, content, hint, also](Context& ctx, auto finish) {
        TxHandle tx = txCreate(ctx);
        auto fail = [tx, finish](absl::Status s) mutable {
          txAbort(*tx);
          finish(s);
        };
        txRead(*tx, old, [=](absl::StatusOr<ObjBuf*> o) mutable {
          if (!o.ok()) return fail(o.status());
          if (absl::Status s = txFree(*tx, old); !s.ok()) return fail(s);
          txRead(*tx, also, [=](absl::StatusOr<ObjBuf*> a) mutable {
            if (!a.ok()) return fail(a.status());
            std::copy(content.begin(), content.begin() + std::min(content.size(), (*a)->data().size()),
                      (*a)->data().begin());
            if (absl::Status s = txWrite(*tx, *a); !s.ok()) return fail(s);
            txAlloc(*tx, content.size(), hint, [=](absl::StatusOr<ObjBuf*> n) mutable {
              if (!n.ok()) return fail(n.status());
              std::copy(content.begin(), content.end(), (*n)->data().begin());
              const FatPtr p = (*n)->ptr();
              txCommit(*tx, [tx, p, finish](absl::Status s) mutable {
                if (!s.ok()) return finish(s);
                finish(p);
              });
            });
          });
        });
      },
      t);
}

absl::Status FreeInOneTx(node::Node& node, FatPtr object, size_t t) {
  return RunInContext<absl::Status>(
      node,
      [object](Context& ctx, auto finish) {
        TxHandle tx = txCreate(ctx);
        // Read first: a free validates what it frees like a write.
        txRead(*tx, object, [tx, object, finish](absl::StatusOr<ObjBuf*> o) mutable {
          if (!o.ok()) return finish(o.status());
          if (absl::Status s = txFree(*tx, object); !s.ok()) {
            txAbort(*tx);
            return finish(s);
          }
          txCommit(*tx, [tx, finish](absl::Status s) mutable { finish(s); });
        });
      },
      t);
}

}  // namespace farm::testing

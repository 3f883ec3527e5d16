// RunSyncWorkload: YCSB's client model for the baselines: `threads` client threads,
// each with its own blocking connection (SyncKvClient), one operation at a time.
//
//   1. Connects config.threads clients (on the calling thread).
//   2. Load phase: inserts records insert_start .. insert_start + record_count - 1, the
//      range split evenly across the threads, with progress on stderr; any failed
//      insert fails the run, and the server must then report record_count more items.
//   3. Transaction phase: every thread runs OpGenerator::Next() operations until
//      config.warmup + config.duration have passed (only operations started after the
//      warm-up are measured), or, when workload.operation_count > 0, until the threads
//      together ran that many (no warm-up, as YCSB).
//   4. Fills the RunReport, with figures from the server's stats:
//        server_items         pairs stored at the end
//        server_memory_mb     memory the server reports after the load
//        space_utilisation    key+value bytes loaded / server memory growth during the
//                             load (1.0 would be no overhead at all)
//
// Every read's value is checked to belong to its key (a failure is counted as an
// error). Blocks the calling thread for the whole run.
#ifndef FARM_TOOLS_YCSB_SYNC_RUNNER_H_
#define FARM_TOOLS_YCSB_SYNC_RUNNER_H_

#include <functional>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tools/ycsb/backends.h"
#include "tools/ycsb/report.h"
#include "tools/ycsb/sync_kv_client.h"

namespace farm::ycsb {

// Opens one new connection; called config.threads times from the calling thread.
using ClientFactory = std::function<absl::StatusOr<std::unique_ptr<SyncKvClient>>()>;

// InvalidArgument for a bad workload or thread count; the factory's error when a
// connection fails; the first failed insert's error (with its record number) for the
// load, and Internal when the server's item count does not match after it. Errors of
// the transaction phase are counted in the report, not returned.
absl::StatusOr<RunReport> RunSyncWorkload(const RunConfig& config, absl::string_view backend,
                                          const ClientFactory& connect);

}  // namespace farm::ycsb

#endif  // FARM_TOOLS_YCSB_SYNC_RUNNER_H_

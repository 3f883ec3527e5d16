#include "tests/failover/region_copies.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"

namespace farm::failover_test {

std::optional<std::vector<std::string>> RegionsReReplicating(const node::NodeStats& s) {
  const google::protobuf::Descriptor* d = node::RegionStats::descriptor();
  const google::protobuf::FieldDescriptor* due = d->FindFieldByName("copies_due");
  const google::protobuf::FieldDescriptor* frozen = d->FindFieldByName("frozen");
  if (due == nullptr || !due->is_repeated() ||
      due->cpp_type() != google::protobuf::FieldDescriptor::CPPTYPE_UINT32) {
    return std::nullopt;
  }
  if (frozen != nullptr &&
      (frozen->is_repeated() ||
       frozen->cpp_type() != google::protobuf::FieldDescriptor::CPPTYPE_BOOL)) {
    frozen = nullptr;
  }
  std::vector<std::string> busy;
  for (const node::RegionStats& r : s.regions()) {
    const google::protobuf::Reflection* reflection = r.GetReflection();
    std::vector<uint32_t> due_to;
    for (int i = 0; i < reflection->FieldSize(r, due); ++i)
      due_to.push_back(reflection->GetRepeatedUInt32(r, due, i));
    const bool is_frozen = frozen != nullptr && reflection->GetBool(r, frozen);
    if (!due_to.empty() || is_frozen) {
      busy.push_back(absl::StrCat("region ", r.id(), is_frozen ? " frozen" : "",
                                  ", copies due to [", absl::StrJoin(due_to, ","), "]"));
    }
  }
  return busy;
}

}  // namespace farm::failover_test

#include "farm/base/address.h"

#include "absl/strings/str_format.h"

namespace farm {

std::string Addr::ToString() const { return absl::StrFormat("r%u+0x%x", region(), offset()); }

std::string FatPtr::ToString() const {
  return absl::StrFormat("%s[%u]#%u", addr.ToString(), size, incarnation);
}

std::string RawPtr::ToString() const {
  return absl::StrFormat("raw:%s[%u]#%u", addr.ToString(), size, incarnation);
}

}  // namespace farm

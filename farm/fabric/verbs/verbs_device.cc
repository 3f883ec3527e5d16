#include "farm/fabric/verbs/verbs_device.h"

#include <arpa/inet.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace farm {
namespace {

// The device list, freed on scope exit. Null list (no RDMA in the kernel) reads as empty.
class DeviceList {
 public:
  DeviceList() : list_(ibv_get_device_list(&count_)) {
    if (list_ == nullptr) count_ = 0;
  }
  ~DeviceList() {
    if (list_ != nullptr) ibv_free_device_list(list_);
  }
  DeviceList(const DeviceList&) = delete;
  DeviceList& operator=(const DeviceList&) = delete;
  int size() const { return count_; }
  ibv_device* operator[](int i) const { return list_[i]; }

 private:
  int count_ = 0;
  ibv_device** list_;
};

// First active port of an open device, or 0.
uint8_t FirstActivePort(ibv_context* context) {
  ibv_device_attr attr{};
  if (ibv_query_device(context, &attr) != 0) return 0;
  for (uint8_t port = 1; port <= attr.phys_port_cnt; ++port) {
    ibv_port_attr port_attr{};
    if (ibv_query_port(context, port, &port_attr) == 0 && port_attr.state == IBV_PORT_ACTIVE) {
      return port;
    }
  }
  return 0;
}

bool IsIpv4Mapped(const ibv_gid& gid) {
  static constexpr uint8_t kPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::memcmp(gid.raw, kPrefix, sizeof(kPrefix)) == 0;
}

// RoCE: a RoCEv2 GID with an IPv4-mapped address, else any RoCEv2 GID, else index 0.
int ChooseGidIndex(ibv_context* context, uint8_t port, int table_size) {
  int any_v2 = -1;
  for (int i = 0; i < table_size; ++i) {
    ibv_gid_entry entry{};
    if (ibv_query_gid_ex(context, port, i, &entry, 0) != 0) continue;
    if (entry.gid_type != IBV_GID_TYPE_ROCE_V2) continue;
    if (IsIpv4Mapped(entry.gid)) return i;
    if (any_v2 < 0) any_v2 = i;
  }
  return any_v2 >= 0 ? any_v2 : 0;
}

}  // namespace

std::vector<std::string> ActiveRdmaDevices() {
  std::vector<std::string> names;
  DeviceList list;
  for (int i = 0; i < list.size(); ++i) {
    ibv_context* context = ibv_open_device(list[i]);
    if (context == nullptr) continue;
    if (FirstActivePort(context) != 0) names.emplace_back(ibv_get_device_name(list[i]));
    ibv_close_device(context);
  }
  return names;
}

absl::StatusOr<std::unique_ptr<VerbsDevice>> VerbsDevice::Open(absl::string_view name,
                                                               int gid_index) {
  DeviceList list;
  if (list.size() == 0) {
    return absl::NotFoundError(
        "no RDMA device: the kernel has no RDMA support or no device is present");
  }
  std::unique_ptr<VerbsDevice> device(new VerbsDevice());
  std::vector<std::string> seen;
  for (int i = 0; i < list.size() && device->context_ == nullptr; ++i) {
    const std::string this_name = ibv_get_device_name(list[i]);
    seen.push_back(this_name);
    if (!name.empty() && this_name != name) continue;
    ibv_context* context = ibv_open_device(list[i]);
    if (context == nullptr) {
      if (!name.empty()) return absl::ErrnoToStatus(errno, absl::StrCat("open ", this_name));
      continue;
    }
    const uint8_t port = FirstActivePort(context);
    if (port == 0) {
      ibv_close_device(context);
      if (!name.empty()) {
        return absl::UnavailableError(absl::StrCat("RDMA device ", this_name, " has no active port"));
      }
      continue;
    }
    device->context_ = context;
    device->name_ = this_name;
    device->port_ = port;
  }
  if (device->context_ == nullptr) {
    return absl::NotFoundError(absl::StrCat(
        name.empty() ? "no RDMA device with an active port" : absl::StrCat("no RDMA device ", name),
        " (devices: ", seen.empty() ? "none" : absl::StrJoin(seen, ", "), ")"));
  }
  if (ibv_query_device(device->context_, &device->attr_) != 0) {
    return absl::ErrnoToStatus(errno, "ibv_query_device");
  }
  ibv_port_attr port_attr{};
  if (ibv_query_port(device->context_, device->port_, &port_attr) != 0) {
    return absl::ErrnoToStatus(errno, "ibv_query_port");
  }
  VerbsPortAddress& address = device->address_;
  address.lid = port_attr.lid;
  address.mtu = port_attr.active_mtu;
  if (port_attr.link_layer == IBV_LINK_LAYER_ETHERNET) {
    address.use_gid = true;
    const int index = gid_index >= 0
                          ? gid_index
                          : ChooseGidIndex(device->context_, device->port_, port_attr.gid_tbl_len);
    address.gid_index = static_cast<uint8_t>(index);
    if (ibv_query_gid(device->context_, device->port_, index, &address.gid) != 0) {
      return absl::ErrnoToStatus(errno, absl::StrCat("ibv_query_gid index ", index));
    }
  }
  device->pd_ = ibv_alloc_pd(device->context_);
  if (device->pd_ == nullptr) return absl::ErrnoToStatus(errno, "ibv_alloc_pd");
  return device;
}

VerbsDevice::~VerbsDevice() {
  if (pd_ != nullptr) ibv_dealloc_pd(pd_);
  if (context_ != nullptr) ibv_close_device(context_);
}

bool VerbsDevice::is_software() const {
  constexpr uint32_t kRxeVendorId = 0xFFFFFF;  // drivers/infiniband/sw/rxe
  constexpr uint32_t kSiwVendorId = 0x626d74;  // drivers/infiniband/sw/siw ("bmt")
  return attr_.vendor_id == kRxeVendorId || attr_.vendor_id == kSiwVendorId;
}

std::string VerbsDevice::Describe() const {
  std::string where;
  if (address_.use_gid) {
    char text[INET6_ADDRSTRLEN] = "?";
    inet_ntop(AF_INET6, address_.gid.raw, text, sizeof(text));
    where = absl::StrCat("RoCE gid[", address_.gid_index, "] ", text);
  } else {
    where = absl::StrCat("InfiniBand lid ", address_.lid);
  }
  return absl::StrCat(name_, is_software() ? " (software RDMA)" : "", " port ", port_, ", ",
                      where, ", mtu ", 128 << static_cast<int>(address_.mtu));
}

}  // namespace farm

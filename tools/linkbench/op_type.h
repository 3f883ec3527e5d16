// The request phase's operation types, in the order of LinkBench's cumulative mix
// (LinkBenchRequest: addlink, deletelink, updatelink, countlink, getlink, getlinklist,
// addnode, updatenode, deletenode, getnode), with LinkBench's report names.
#ifndef FARM_TOOLS_LINKBENCH_OP_TYPE_H_
#define FARM_TOOLS_LINKBENCH_OP_TYPE_H_

#include <array>
#include <cstddef>

namespace farm::linkbench {

enum class OpType : int {
  kAddLink = 0,
  kDeleteLink,
  kUpdateLink,
  kCountLink,
  kMultigetLink,
  kGetLinksList,
  kAddNode,
  kUpdateNode,
  kDeleteNode,
  kGetNode,
};
inline constexpr size_t kOpTypeCount = 10;

inline constexpr std::array<const char*, kOpTypeCount> kOpNames = {
    "ADD_LINK",       "DELETE_LINK", "UPDATE_LINK", "COUNT_LINK",  "MULTIGET_LINK",
    "GET_LINKS_LIST", "ADD_NODE",    "UPDATE_NODE", "DELETE_NODE", "GET_NODE"};
// The property key of each op's share in FBWorkload.properties.
inline constexpr std::array<const char*, kOpTypeCount> kOpPropertyKeys = {
    "addlink", "deletelink", "updatelink", "countlink",  "getlink",
    "getlinklist", "addnode", "updatenode", "deletenode", "getnode"};

inline const char* OpName(OpType op) { return kOpNames[static_cast<size_t>(op)]; }

}  // namespace farm::linkbench

#endif  // FARM_TOOLS_LINKBENCH_OP_TYPE_H_

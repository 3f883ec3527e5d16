// The generic RESP library's names (resp/) as the kv service's sessions and commands use
// them, unqualified, in kv::resp.
#ifndef FARM_KV_RESP_RESP_NAMES_H_
#define FARM_KV_RESP_RESP_NAMES_H_

#include "resp/resp_counters.h"
#include "resp/resp_parser.h"
#include "resp/resp_writer.h"
#include "resp/strict_int.h"

namespace farm::kv::resp {

using ::farm::resp::ErrorReply;
using ::farm::resp::IntegerReply;
using ::farm::resp::NullBulkReply;
using ::farm::resp::ParseStrictInt64;
using ::farm::resp::RespCounters;
using ::farm::resp::RespParser;
using ::farm::resp::RespParserLimits;
using ::farm::resp::RespStats;
using ::farm::resp::RespWriter;
using ::farm::resp::SimpleStringReply;
using ::farm::resp::UnauthenticatedLimits;

}  // namespace farm::kv::resp

#endif  // FARM_KV_RESP_RESP_NAMES_H_

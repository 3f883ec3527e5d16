// Random command sequences for the differential tests of the kv RESP service: strings,
// hashes and integers on a handful of keys (so that commands on one key follow each
// other, types clash — WRONGTYPE both ways — and writes of a key repeat), RENAME and
// COPY between them, argument errors, MULTI/EXEC/DISCARD, WATCH and DBSIZE.
#ifndef FARM_TESTS_KV_RESP_RANDOM_COMMANDS_H_
#define FARM_TESTS_KV_RESP_RANDOM_COMMANDS_H_

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace farm::kv::testing {

using Rng = std::mt19937_64;
using Words = std::vector<std::string>;

struct RandomCommandOptions {
  std::string key_prefix;  // every key begins with it
  // Commands whose replies depend on more than this sequence's keys (DBSIZE counts the
  // whole store; WATCH may doom EXEC for another key's change on a real store, whose
  // transactions conflict per bucket): leave them out to compare runs on other keys.
  bool store_wide = true;
  // This share of the commands are writes and reads of two keys only ("s" and "h":
  // plain SETs, SET NX/XX/GET, HSET, HINCRBY, GET, HGET), so that a pipeline holds runs
  // of writes of one key (combined) and of lookups (batched).
  int focused_percent = 0;
};

// One command (its words).
Words RandomCommand(Rng& rng, const RandomCommandOptions& options);

// `n` commands from RandomCommand, adjusted so that every reply can be compared with
// Redis: DBSIZE never inside MULTI (ours counts the store, not the transaction's own
// writes before it), and the sequence ends outside MULTI and WATCH.
std::vector<Words> RandomSequence(Rng& rng, size_t n, const RandomCommandOptions& options);

// Words as one printable line, for failure messages.
std::string Printable(const Words& words);

}  // namespace farm::kv::testing

#endif  // FARM_TESTS_KV_RESP_RANDOM_COMMANDS_H_

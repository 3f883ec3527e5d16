#include "tools/linkbench/mariadb_backend.h"

#include <mysql.h>

#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "graph/memory_graph.h"
#include "tools/linkbench/mariadb_server.h"
#include "tools/linkbench/mysql_session.h"

namespace farm::linkbench {
namespace {

constexpr size_t kBulkInsertBatch = 1024;  // LinkStoreMysql.DEFAULT_BULKINSERT_SIZE

// LinkBench's DDL (README.md of facebookarchive/linkbench).
constexpr const char* kSchema[] = {
    "DROP TABLE IF EXISTS linktable, counttable, nodetable",
    "CREATE TABLE `linktable` ("
    " `id1` bigint(20) unsigned NOT NULL DEFAULT '0',"
    " `id2` bigint(20) unsigned NOT NULL DEFAULT '0',"
    " `link_type` bigint(20) unsigned NOT NULL DEFAULT '0',"
    " `visibility` tinyint(3) NOT NULL DEFAULT '0',"
    " `data` varchar(255) NOT NULL DEFAULT '',"
    " `time` bigint(20) unsigned NOT NULL DEFAULT '0',"
    " `version` int(11) unsigned NOT NULL DEFAULT '0',"
    " PRIMARY KEY (link_type, `id1`,`id2`),"
    " KEY `id1_type` (`id1`,`link_type`,`visibility`,`time`,`id2`,`version`,`data`)"
    ") ENGINE=InnoDB DEFAULT CHARSET=latin1 PARTITION BY key(id1) PARTITIONS 16",
    "CREATE TABLE `counttable` ("
    " `id` bigint(20) unsigned NOT NULL DEFAULT '0',"
    " `link_type` bigint(20) unsigned NOT NULL DEFAULT '0',"
    " `count` int(10) unsigned NOT NULL DEFAULT '0',"
    " `time` bigint(20) unsigned NOT NULL DEFAULT '0',"
    " `version` bigint(20) unsigned NOT NULL DEFAULT '0',"
    " PRIMARY KEY (`id`,`link_type`)"
    ") ENGINE=InnoDB DEFAULT CHARSET=latin1",
    "CREATE TABLE `nodetable` ("
    " `id` bigint(20) unsigned NOT NULL AUTO_INCREMENT,"
    " `type` int(10) unsigned NOT NULL,"
    " `version` bigint(20) unsigned NOT NULL,"
    " `time` int(10) unsigned NOT NULL,"
    " `data` mediumtext NOT NULL,"
    " PRIMARY KEY(`id`)"
    ") ENGINE=InnoDB DEFAULT CHARSET=latin1",
};

int64_t ToInt(const std::optional<std::string>& s) {
  int64_t v = 0;
  if (s) (void)absl::SimpleAtoi(*s, &v);
  return v;
}

graph::Link LinkFromRow(const MysqlSession::Row& r) {
  graph::Link l;
  l.id1 = ToInt(r[0]);
  l.id2 = ToInt(r[1]);
  l.type = ToInt(r[2]);
  l.visibility = ToInt(r[3]) == 1 ? graph::Visibility::kVisible : graph::Visibility::kHidden;
  l.data = r[4].value_or("");
  l.time = ToInt(r[5]);
  l.version = static_cast<int32_t>(ToInt(r[6]));
  return l;
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch()).count();
}

class MariadbConnection final : public Connection {
 public:
  explicit MariadbConnection(std::unique_ptr<MysqlSession> s) : s_(std::move(s)) {}

  absl::StatusOr<int64_t> AddNode(graph::Node node) override {
    std::vector<graph::Node> one;
    one.push_back(std::move(node));
    absl::StatusOr<std::vector<int64_t>> ids = AddNodes(std::move(one));
    if (!ids.ok()) return ids.status();
    return ids->front();
  }

  absl::StatusOr<std::vector<int64_t>> AddNodes(std::vector<graph::Node> nodes) override {
    for (const graph::Node& n : nodes) {
      if (absl::Status st = graph::CheckNode(n); !st.ok()) return st;
    }
    std::vector<int64_t> ids;
    ids.reserve(nodes.size());
    for (size_t begin = 0; begin < nodes.size(); begin += kBulkInsertBatch) {
      const size_t end = std::min(nodes.size(), begin + kBulkInsertBatch);
      std::string sql = "INSERT INTO nodetable (type, version, time, data) VALUES ";
      for (size_t i = begin; i < end; ++i) {
        const graph::Node& n = nodes[i];
        absl::StrAppend(&sql, i == begin ? "" : ",", "(", n.type, ",", n.version, ",", n.time, ",",
                        s_->Quote(n.data), ")");
      }
      sql += "; commit";
      absl::StatusOr<MysqlSession::ExecResult> r = Retry([&] { return s_->Exec(sql); });
      if (!r.ok()) return r.status();
      // InnoDB gives a multi-row INSERT consecutive ids from the first.
      for (size_t i = begin; i < end; ++i) ids.push_back(static_cast<int64_t>(r->insert_id + (i - begin)));
    }
    return ids;
  }

  absl::StatusOr<std::optional<graph::Node>> GetNode(int64_t id, int32_t type) override {
    auto rows = Retry([&] {
      return s_->Query(absl::StrCat("SELECT id, type, version, time, data FROM nodetable WHERE id=", id,
                                    "; commit"));
    });
    if (!rows.ok()) return rows.status();
    if (rows->empty()) return std::optional<graph::Node>();
    const MysqlSession::Row& r = rows->front();
    graph::Node n;
    n.id = ToInt(r[0]);
    n.type = static_cast<int32_t>(ToInt(r[1]));
    n.version = ToInt(r[2]);
    n.time = static_cast<int32_t>(ToInt(r[3]));
    n.data = r[4].value_or("");
    if (n.type != type) return std::optional<graph::Node>();
    return std::optional<graph::Node>(std::move(n));
  }

  absl::StatusOr<bool> UpdateNode(graph::Node node) override {
    if (absl::Status st = graph::CheckNode(node); !st.ok()) return st;
    const std::string sql = absl::StrCat("UPDATE nodetable SET version=", node.version, ", time=", node.time,
                                         ", data=", s_->Quote(node.data), " WHERE id=", node.id,
                                         " AND type=", node.type, "; commit");
    auto r = Retry([&] { return s_->Exec(sql); });
    if (!r.ok()) return r.status();
    // Affected rows miss an update to identical values; the matched count does not.
    return r->affected_rows > 0 || r->matched_rows > 0;
  }

  absl::StatusOr<bool> DeleteNode(int64_t id, int32_t type) override {
    auto r = Retry([&] {
      return s_->Exec(absl::StrCat("DELETE FROM nodetable WHERE id=", id, " and type =", type, "; commit"));
    });
    if (!r.ok()) return r.status();
    return r->affected_rows > 0;
  }

  absl::Status ResetNodeIds(int64_t start_id) override {
    auto r = s_->Exec(absl::StrCat("TRUNCATE TABLE nodetable; ALTER TABLE nodetable AUTO_INCREMENT = ", start_id));
    return r.status();
  }

  absl::StatusOr<bool> AddLink(graph::Link l) override {
    if (absl::Status st = graph::CheckLink(l); !st.ok()) return st;
    const int vis = static_cast<int>(l.visibility);
    const std::string insert = absl::StrCat(
        "INSERT INTO linktable(id1, id2, link_type, visibility, data, time, version) VALUES (", l.id1, ", ",
        l.id2, ", ", l.type, ", ", vis, ", ", s_->Quote(l.data), ", ", l.time, ", ", l.version,
        ") ON DUPLICATE KEY UPDATE visibility = VALUES(visibility)");
    return Retry([&]() -> absl::StatusOr<bool> {
      auto r = s_->Exec(insert);
      if (!r.ok()) return r.status();
      const bool visible = l.visibility == graph::Visibility::kVisible;
      int update_count = 0;
      bool update_data = false, found = true;
      switch (r->affected_rows) {
        case 1:  // inserted
          update_count = visible ? 1 : 0;
          found = false;
          break;
        case 0:  // found, visibility unchanged
          update_data = true;
          break;
        case 2:  // found, visibility changed
          update_count = visible ? 1 : -1;
          update_data = true;
          break;
        default:
          return absl::InternalError(absl::StrCat("addLink: unexpected affected rows ", r->affected_rows));
      }
      std::string rest;
      if (update_count != 0) {
        absl::StrAppend(&rest, "INSERT INTO counttable(id, link_type, count, time, version) VALUES (", l.id1,
                        ", ", l.type, ", ", update_count < 0 ? 0 : 1, ", ", l.time, ", ", l.version,
                        ") ON DUPLICATE KEY UPDATE count = count + ", update_count, "; ");
      }
      if (update_data) {
        absl::StrAppend(&rest, "UPDATE linktable SET visibility = ", vis, ", data = ", s_->Quote(l.data),
                        ", time = ", l.time, ", version = ", l.version, " WHERE id1 = ", l.id1,
                        " AND id2 = ", l.id2, " AND link_type = ", l.type, "; ");
      }
      rest += "commit";  // (a new hidden link: LinkBench leaves the commit to the next op)
      if (auto c = s_->Exec(rest); !c.ok()) return c.status();
      return !found;
    });
  }

  absl::StatusOr<uint64_t> AddLinks(int64_t id1, int64_t type, std::vector<graph::Link> links) override {
    std::vector<graph::LinkList> one;
    one.push_back(graph::LinkList{id1, type, std::move(links)});
    return AddLinkLists(std::move(one));
  }

  // LinkStoreMysql's addBulkLinks then addBulkCounts: the links in multi-row INSERTs of
  // up to kBulkInsertBatch rows (over lists), then each list's count in multi-row
  // REPLACEs, each statement committed.
  absl::StatusOr<uint64_t> AddLinkLists(std::vector<graph::LinkList> lists) override {
    size_t total = 0;
    for (const graph::LinkList& list : lists) {
      for (const graph::Link& l : list.links) {
        if (l.id1 != list.id1 || l.type != list.type) {
          return absl::InvalidArgumentError("AddLinks: a link of another (id1, type)");
        }
        if (absl::Status st = graph::CheckLink(l); !st.ok()) return st;
      }
      total += list.links.size();
    }
    if (total == 0) return 0;
    std::string sql;
    size_t rows = 0;
    auto flush = [&](const char* tail) -> absl::Status {
      if (rows == 0) return absl::OkStatus();
      sql += tail;
      absl::Status st = Retry([&] { return s_->Exec(sql); }).status();
      sql.clear();
      rows = 0;
      return st;
    };
    constexpr const char* kLinksTail = " ON DUPLICATE KEY UPDATE visibility = VALUES(visibility); commit";
    for (const graph::LinkList& list : lists) {
      for (const graph::Link& l : list.links) {
        absl::StrAppend(&sql, rows == 0 ? "INSERT INTO linktable(id1, id2, link_type, visibility, data, time, version) VALUES " : ",",
                        "(", l.id1, ", ", l.id2, ", ", l.type, ", ", static_cast<int>(l.visibility), ", ",
                        s_->Quote(l.data), ", ", l.time, ", ", l.version, ")");
        if (++rows == kBulkInsertBatch) {
          if (absl::Status st = flush(kLinksTail); !st.ok()) return st;
        }
      }
    }
    if (absl::Status st = flush(kLinksTail); !st.ok()) return st;
    for (const graph::LinkList& list : lists) {
      if (list.links.empty()) continue;
      uint64_t visible = 0;
      int64_t max_time = 0;
      for (const graph::Link& l : list.links) {
        visible += l.visibility == graph::Visibility::kVisible;
        max_time = std::max(max_time, l.time);
      }
      absl::StrAppend(&sql, rows == 0 ? "REPLACE INTO counttable(id, link_type, count, time, version) VALUES " : ",",
                      "(", list.id1, ", ", list.type, ", ", visible, ", ", max_time, ", ", list.links.back().version, ")");
      if (++rows == kBulkInsertBatch) {
        if (absl::Status st = flush("; commit"); !st.ok()) return st;
      }
    }
    if (absl::Status st = flush("; commit"); !st.ok()) return st;
    return total;
  }

  absl::StatusOr<bool> DeleteLink(int64_t id1, int64_t type, int64_t id2, bool expunge) override {
    const std::string where = absl::StrCat(" WHERE id1 = ", id1, " AND id2 = ", id2, " AND link_type = ", type);
    return Retry([&]() -> absl::StatusOr<bool> {
      auto rows = s_->Query(absl::StrCat("SELECT visibility FROM linktable", where, " FOR UPDATE"));
      if (!rows.ok()) return rows.status();
      std::string sql;
      if (!rows->empty()) {
        const bool visible = ToInt(rows->front()[0]) == 1;
        if (visible || expunge) {
          sql = expunge ? absl::StrCat("DELETE FROM linktable", where, "; ")
                        : absl::StrCat("UPDATE linktable SET visibility = 0", where, "; ");
        }
        if (visible) {
          const int64_t now = NowMs();
          absl::StrAppend(&sql, "INSERT INTO counttable (id, link_type, count, time, version) VALUES (", id1,
                          ", ", type, ", 0, ", now, ", 0) ON DUPLICATE KEY UPDATE count = IF (count = 0, 0, count - 1)",
                          ", time = ", now, ", version = version + 1; ");
        }
      }
      sql += "commit";
      if (auto r = s_->Exec(sql); !r.ok()) return r.status();
      return !rows->empty();
    });
  }

  absl::StatusOr<std::vector<graph::Link>> GetLinks(int64_t id1, int64_t type,
                                                    absl::Span<const int64_t> id2s) override {
    if (id2s.empty()) return std::vector<graph::Link>();
    std::string sql = absl::StrCat(
        "select id1, id2, link_type, visibility, data, time, version from linktable where id1 = ", id1,
        " and link_type = ", type, " and id2 in (");
    for (size_t i = 0; i < id2s.size(); ++i) absl::StrAppend(&sql, i ? "," : "", id2s[i]);
    sql += "); commit";
    return Links(sql);
  }

  absl::StatusOr<std::vector<graph::Link>> GetLinkList(const graph::LinkRange& r) override {
    if (absl::Status st = graph::CheckRange(r); !st.ok()) return st;
    // ", id2 desc": the contract's tie order (graph/types.h); the index covers it.
    return Links(absl::StrCat(
        "select id1, id2, link_type, visibility, data, time, version from linktable where id1 = ", r.id1,
        " and link_type = ", r.type, " and time >= ", r.min_time, " and time <= ", r.max_time,
        " and visibility = 1 order by time desc, id2 desc limit ", r.offset, ",", r.limit, "; commit"));
  }

  absl::StatusOr<uint64_t> CountLinks(int64_t id1, int64_t type) override {
    auto rows = Retry([&] {
      return s_->Query(absl::StrCat("select count from counttable where id = ", id1, " and link_type = ", type,
                                    "; commit"));
    });
    if (!rows.ok()) return rows.status();
    return rows->empty() ? 0 : static_cast<uint64_t>(ToInt(rows->front()[0]));
  }

 private:
  // Runs f, rolling back and retrying while it fails with a deadlock or lock timeout.
  template <typename F>
  auto Retry(F f) -> decltype(f()) {
    while (true) {
      auto result = f();
      if (result.ok() || !absl::IsAborted(result.status())) return result;
      (void)s_->Exec("rollback");
    }
  }

  absl::StatusOr<std::vector<graph::Link>> Links(const std::string& sql) {
    auto rows = Retry([&] { return s_->Query(sql); });
    if (!rows.ok()) return rows.status();
    std::vector<graph::Link> links;
    links.reserve(rows->size());
    for (const MysqlSession::Row& r : *rows) links.push_back(LinkFromRow(r));
    return links;
  }

  std::unique_ptr<MysqlSession> s_;
};

class MariadbBackend final : public Backend {
 public:
  MariadbBackend(std::unique_ptr<MariadbServer> server, MysqlAddress address, std::string description)
      : server_(std::move(server)), address_(std::move(address)), description_(std::move(description)) {}

  std::string Describe() const override { return description_; }
  absl::StatusOr<std::unique_ptr<Connection>> Connect() override {
    absl::StatusOr<std::unique_ptr<MysqlSession>> s = MysqlSession::Connect(address_);
    if (!s.ok()) return s.status();
    return std::make_unique<MariadbConnection>(*std::move(s));
  }

 private:
  std::unique_ptr<MariadbServer> server_;  // null with an existing server
  const MysqlAddress address_;
  const std::string description_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Backend>> OpenMariadbBackend(const BackendOptions& options) {
  mysql_library_init(0, nullptr, nullptr);  // idempotent; before any thread connects
  MysqlAddress address;
  address.database = options.Get("mysql_db", "linkdb");
  std::unique_ptr<MariadbServer> server;
  std::string where;
  if (options.Get("mysql_host").empty() && options.Get("mysql_socket").empty()) {
    MariadbServerOptions so;
    so.mariadbd = options.Get("mariadbd", so.mariadbd);
    so.install_db = options.Get("mariadb_install_db", so.install_db);
    so.buffer_pool = options.Get("mysql_buffer_pool", so.buffer_pool);
    const std::string flush = options.Get("mysql_flush_log_at_trx_commit", "1");
    if (!absl::SimpleAtoi(flush, &so.flush_log_at_trx_commit)) {
      return absl::InvalidArgumentError(
          absl::StrCat("mysql_flush_log_at_trx_commit \"", flush, "\" is not 0, 1 or 2"));
    }
    absl::StatusOr<std::unique_ptr<MariadbServer>> started = MariadbServer::Start(so);
    if (!started.ok()) return started.status();
    server = *std::move(started);
    address.socket = server->socket_path();
    where = absl::StrCat("own server in ", server->dir(), ", InnoDB, ",
                         so.flush_log_at_trx_commit == 1 ? "log flushed at commit"
                         : so.flush_log_at_trx_commit == 2 ? "log written at commit, flushed each second"
                                                           : "log written and flushed each second",
                         ", buffer pool ", so.buffer_pool);
  } else {
    address.host = options.Get("mysql_host");
    address.socket = options.Get("mysql_socket");
    unsigned port = 3306;
    if (!absl::SimpleAtoi(options.Get("mysql_port", "3306"), &port)) {
      return absl::InvalidArgumentError(absl::StrCat("mysql_port \"", options.Get("mysql_port"), "\" is not a port"));
    }
    address.port = port;
    address.user = options.Get("mysql_user", "root");
    address.password = options.Get("mysql_password");
    where = address.socket.empty() ? absl::StrCat("server at ", address.host, ":", address.port)
                                   : absl::StrCat("server at ", address.socket);
  }
  // The schema, on a connection without a default database.
  MysqlAddress admin_address = address;
  admin_address.database.clear();
  absl::StatusOr<std::unique_ptr<MysqlSession>> admin = MysqlSession::Connect(admin_address);
  if (!admin.ok()) return admin.status();
  if (auto r = (*admin)->Exec(absl::StrCat("CREATE DATABASE IF NOT EXISTS `", address.database, "`; USE `",
                                           address.database, "`"));
      !r.ok()) {
    return r.status();
  }
  for (const char* ddl : kSchema) {
    if (auto r = (*admin)->Exec(ddl); !r.ok()) return r.status();
  }
  const std::string description =
      absl::StrCat("mariadb ", (*admin)->ServerVersion(), " (", where, ", database ", address.database, ")");
  return std::make_unique<MariadbBackend>(std::move(server), std::move(address), description);
}

}  // namespace farm::linkbench

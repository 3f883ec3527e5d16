#include "tools/linkbench/mysql_session.h"

#include <mysql.h>

#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace farm::linkbench {

absl::StatusOr<std::unique_ptr<MysqlSession>> MysqlSession::Connect(const MysqlAddress& a) {
  MYSQL* conn = mysql_init(nullptr);
  if (conn == nullptr) return absl::ResourceExhaustedError("mysql_init failed");
  mysql_options(conn, MYSQL_SET_CHARSET_NAME, "latin1");
  const char* host = a.host.empty() ? nullptr : a.host.c_str();
  const char* socket = a.socket.empty() ? nullptr : a.socket.c_str();
  if (mysql_real_connect(conn, host, a.user.c_str(), a.password.empty() ? nullptr : a.password.c_str(),
                         a.database.empty() ? nullptr : a.database.c_str(), a.port, socket,
                         CLIENT_MULTI_STATEMENTS) == nullptr) {
    absl::Status st = absl::UnavailableError(absl::StrCat(
        "cannot connect to MariaDB at ", socket ? a.socket : absl::StrCat(a.host, ":", a.port), " as ",
        a.user, ": ", mysql_error(conn)));
    mysql_close(conn);
    return st;
  }
  std::unique_ptr<MysqlSession> session(new MysqlSession(conn));
  if (mysql_autocommit(conn, 0) != 0) return session->Error("SET autocommit=0");
  return session;
}

MysqlSession::~MysqlSession() { mysql_close(conn_); }

absl::Status MysqlSession::Error(absl::string_view what) {
  const unsigned err = mysql_errno(conn_);
  std::string msg = absl::StrCat("MariaDB error ", err, " (", mysql_error(conn_), ") in: ",
                                 what.substr(0, 200));
  if (err == 1213 || err == 1205) return absl::AbortedError(msg);
  if (err == 2006 || err == 2013 || err == 2002) return absl::UnavailableError(msg);
  if (err == 1406 || err == 1264 || err == 1690) return absl::InvalidArgumentError(msg);
  return absl::InternalError(msg);
}

absl::Status MysqlSession::Drain() {
  while (true) {
    const int more = mysql_next_result(conn_);
    if (more == -1) return absl::OkStatus();
    if (more > 0) return Error("a later statement");
    if (MYSQL_RES* res = mysql_store_result(conn_)) mysql_free_result(res);
  }
}

absl::StatusOr<MysqlSession::ExecResult> MysqlSession::Exec(absl::string_view sql) {
  if (mysql_real_query(conn_, sql.data(), sql.size()) != 0) {
    absl::Status st = Error(sql);
    (void)Drain();
    return st;
  }
  ExecResult result;
  result.affected_rows = mysql_affected_rows(conn_);
  result.insert_id = mysql_insert_id(conn_);
  if (const char* info = mysql_info(conn_)) {
    if (const char* m = std::strstr(info, "matched: ")) result.matched_rows = std::strtoull(m + 9, nullptr, 10);
  }
  if (MYSQL_RES* res = mysql_store_result(conn_)) mysql_free_result(res);
  if (absl::Status st = Drain(); !st.ok()) return st;
  return result;
}

absl::StatusOr<std::vector<MysqlSession::Row>> MysqlSession::Query(absl::string_view sql) {
  if (mysql_real_query(conn_, sql.data(), sql.size()) != 0) {
    absl::Status st = Error(sql);
    (void)Drain();
    return st;
  }
  std::vector<Row> rows;
  MYSQL_RES* res = mysql_store_result(conn_);
  if (res == nullptr && mysql_field_count(conn_) != 0) return Error(sql);
  if (res != nullptr) {
    const unsigned fields = mysql_num_fields(res);
    while (MYSQL_ROW r = mysql_fetch_row(res)) {
      const unsigned long* lengths = mysql_fetch_lengths(res);
      Row row(fields);
      for (unsigned i = 0; i < fields; ++i) {
        if (r[i] != nullptr) row[i] = std::string(r[i], lengths[i]);
      }
      rows.push_back(std::move(row));
    }
    mysql_free_result(res);
  }
  if (absl::Status st = Drain(); !st.ok()) return st;
  return rows;
}

std::string MysqlSession::Quote(absl::string_view bytes) {
  std::string out(bytes.size() * 2 + 3, '\0');
  out[0] = '\'';
  const unsigned long n = mysql_real_escape_string(conn_, out.data() + 1, bytes.data(), bytes.size());
  out[n + 1] = '\'';
  out.resize(n + 2);
  return out;
}

std::string MysqlSession::ServerVersion() const { return mysql_get_server_info(conn_); }

}  // namespace farm::linkbench

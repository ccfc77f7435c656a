// What the SQLite stores (record_store.cc: `stet serve --record`;
// exchange_store.cc: `stet proxy`) share: error statuses, one-shot statements,
// a prepared statement that finalizes itself and walks its rows, and the check
// of a query's time bounds.
#pragma once

#include <sqlite3.h>

#include <functional>
#include <string>

#include "base/status.h"

namespace stet::forensics::sqlite {

// An IoError with SQLite's message for db (or "out of memory" without one).
inline Status SqlError(sqlite3* db, const std::string& what) {
  return IoError(what + ": " + (db ? sqlite3_errmsg(db) : "out of memory"));
}

// Runs sql (any number of statements, no results).
inline Status Exec(sqlite3* db, const char* sql, const std::string& what) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string m = err ? err : sqlite3_errmsg(db);
    sqlite3_free(err);
    return IoError(what + ": " + m);
  }
  return Status::Ok();
}

class Stmt;

// Whether SQLite's julianday() reads `t` (ISO 8601, "...Z" or "+hh:mm").
bool IsTime(sqlite3* db, const std::string& t);

class Stmt {
 public:
  Stmt(sqlite3* db, const std::string& sql) {
    ok_ = sqlite3_prepare_v2(db, sql.c_str(), -1, &s_, nullptr) == SQLITE_OK;
  }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  bool ok() const { return ok_; }
  sqlite3_stmt* get() { return s_; }
  void Text(int i, const std::string& v) {
    sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  void TextOrNull(int i, const std::string& v) {
    if (v.empty()) {
      sqlite3_bind_null(s_, i);
    } else {
      Text(i, v);
    }
  }
  // Column i of the current row as text ("" for NULL).
  std::string Column(int i) {
    const char* t = reinterpret_cast<const char*>(sqlite3_column_text(s_, i));
    return std::string(t ? t : "", static_cast<size_t>(sqlite3_column_bytes(s_, i)));
  }
  // Steps through every row, calling `row` (which reads Column) on each; stops
  // at its first error. `what` names the reading in SQLite's errors.
  Status ForEachRow(sqlite3* db, const std::string& what, const std::function<Status()>& row) {
    for (;;) {
      const int rc = sqlite3_step(s_);
      if (rc == SQLITE_DONE) return Status::Ok();
      if (rc != SQLITE_ROW) return SqlError(db, what);
      STET_RETURN_IF_ERROR(row());
    }
  }

 private:
  sqlite3_stmt* s_ = nullptr;
  bool ok_ = false;
};

inline bool IsTime(sqlite3* db, const std::string& t) {
  Stmt chk(db, "SELECT julianday(?1) IS NOT NULL");
  if (!chk.ok()) return false;
  chk.Text(1, t);
  return sqlite3_step(chk.get()) == SQLITE_ROW && sqlite3_column_int(chk.get(), 0) != 0;
}

}  // namespace stet::forensics::sqlite

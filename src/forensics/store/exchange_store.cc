// The SQLite exchange store, and what both backends share: validation, the
// store-kind probe `stet replay` uses, URL masking. Group commit: one
// transaction (one WAL fsync) per batch of concurrent Inserts; a snapshot is
// written with INSERT OR IGNORE, so each distinct hash is stored once.
#include "forensics/store/exchange_store.h"

#include <sqlite3.h>

#include <string>
#include <string_view>
#include <utility>

#include "forensics/store/group_commit.h"
#include "forensics/store/sqlite_util.h"
#include "wire/json_read.h"

namespace stet::forensics {

using wire::Str;

namespace {

using sqlite::Exec;
using sqlite::SqlError;
using sqlite::Stmt;

std::string Dump(const ExchangeJson& j) {
  return j.dump(-1, ' ', false, ExchangeJson::error_handler_t::replace);
}

class SqliteExchangeStore final : public ExchangeStore {
 public:
  ~SqliteExchangeStore() override {
    if (db_) sqlite3_close_v2(db_);
  }

  Status OpenFile(const std::string& path, Mode mode) {
    path_ = path;
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX;
    if (mode == Mode::kCreate) flags |= SQLITE_OPEN_CREATE;
    if (sqlite3_open_v2(path.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
      return IoError("cannot open exchange store '" + path +
                     "': " + (db_ ? sqlite3_errmsg(db_) : "out of memory"));
    }
    sqlite3_busy_timeout(db_, 10000);
    {
      Stmt st(db_, "PRAGMA journal_mode=WAL");
      if (!st.ok() || sqlite3_step(st.get()) != SQLITE_ROW || st.Column(0) != "wal") {
        return IoError("'" + path +
                       "' is not a stet exchange store (SQLite: " + sqlite3_errmsg(db_) + ")");
      }
    }
    STET_RETURN_IF_ERROR(Exec(db_, "PRAGMA synchronous=FULL", "'" + path + "'"));
    if (mode == Mode::kCreate) {
      const std::string schema = ExchangeSchemaSql("INTEGER PRIMARY KEY AUTOINCREMENT", "TEXT");
      STET_RETURN_IF_ERROR(Exec(db_, schema.c_str(), "creating the exchange store '" + path + "'"));
      Stmt st(db_, "INSERT OR IGNORE INTO stet_meta(key, value) VALUES('schema', ?1)");
      st.Text(1, kExchangeStoreSchema);
      if (!st.ok() || sqlite3_step(st.get()) != SQLITE_DONE) return SqlError(db_, "'" + path + "'");
    }
    Stmt st(db_, "SELECT value FROM stet_meta WHERE key = 'schema'");
    if (!st.ok() || sqlite3_step(st.get()) != SQLITE_ROW) {
      return InvalidArgument("'" + path +
                             "' is not a stet exchange store (no stet_meta schema entry)");
    }
    const std::string schema = st.Column(0);
    if (schema != kExchangeStoreSchema) {
      return InvalidArgument("'" + path + "' has store schema '" + schema + "', not '" +
                             kExchangeStoreSchema + "'" +
                             (schema == "stet.records/1"
                                  ? " (it holds `stet serve --record` records, not proxy exchanges)"
                                  : ""));
    }
    return Status::Ok();
  }

  Status ForEach(const ExchangeQuery& q,
                 const std::function<Status(const ExchangeJson&)>& fn) override {
    return Exclusive([&]() -> Status {
      for (const std::string* t : {&q.since, &q.until}) {
        if (!t->empty() && !sqlite::IsTime(db_, *t)) {
          return InvalidArgument("'" + *t +
                                 "' is not a time (use ISO 8601, e.g. 2024-07-26T12:00:00Z)");
        }
      }
      std::string sql = "SELECT record FROM exchanges WHERE 1";
      if (!q.id.empty()) sql += " AND id = ?1";
      if (!q.since.empty()) sql += " AND julianday(received_at) >= julianday(?2)";
      if (!q.until.empty()) sql += " AND julianday(received_at) < julianday(?3)";
      if (!q.kind.empty()) sql += " AND kind = ?4";
      sql += " ORDER BY seq";
      Stmt st(db_, sql);
      if (!st.ok()) return SqlError(db_, "querying exchanges");
      if (!q.id.empty()) st.Text(1, q.id);
      if (!q.since.empty()) st.Text(2, q.since);
      if (!q.until.empty()) st.Text(3, q.until);
      if (!q.kind.empty()) st.Text(4, q.kind);
      return st.ForEachRow(db_, "reading exchanges", [&]() -> Status {
        ExchangeJson r = ExchangeJson::parse(st.Column(0), nullptr, false);
        if (r.is_discarded()) return DataLoss("a stored exchange in '" + path_ + "' is not JSON");
        return fn(r);
      });
    });
  }

  Result<std::optional<std::string>> Snapshot(const std::string& sha256) override {
    std::optional<std::string> out;
    STET_RETURN_IF_ERROR(Exclusive([&]() -> Status {
      Stmt st(db_, "SELECT body FROM snapshots WHERE sha256 = ?1");
      if (!st.ok()) return SqlError(db_, "reading snapshots");
      st.Text(1, sha256);
      if (sqlite3_step(st.get()) == SQLITE_ROW) out = st.Column(0);
      return Status::Ok();
    }));
    return out;
  }

  Result<int64_t> DeleteBefore(const std::string& iso_time) override {
    int64_t n = 0;
    STET_RETURN_IF_ERROR(Exclusive([&]() -> Status {
      STET_RETURN_IF_ERROR(Exec(db_, "BEGIN IMMEDIATE", "starting a transaction"));
      Stmt del(db_, "DELETE FROM exchanges WHERE julianday(received_at) < julianday(?1)");
      del.Text(1, iso_time);
      if (!del.ok() || sqlite3_step(del.get()) != SQLITE_DONE) {
        (void)Exec(db_, "ROLLBACK", "rolling back");
        return SqlError(db_, "deleting old exchanges");
      }
      n = sqlite3_changes(db_);
      Status st = Exec(db_,
                       "DELETE FROM snapshots WHERE sha256 NOT IN "
                       "(SELECT snapshot FROM exchanges WHERE snapshot IS NOT NULL)",
                       "deleting unused snapshots");
      if (st.ok()) st = Exec(db_, "COMMIT", "committing the deletion");
      if (!st.ok()) (void)Exec(db_, "ROLLBACK", "rolling back");
      return st;
    }));
    return n;
  }

  Result<int64_t> Count() override {
    int64_t n = 0;
    STET_RETURN_IF_ERROR(Exclusive([&]() -> Status {
      Stmt st(db_, "SELECT COUNT(*) FROM exchanges");
      if (!st.ok() || sqlite3_step(st.get()) != SQLITE_ROW)
        return SqlError(db_, "counting exchanges");
      n = sqlite3_column_int64(st.get(), 0);
      return Status::Ok();
    }));
    return n;
  }

  std::string Describe() const override { return "sqlite:" + path_; }

 private:
  Status InsertOne(const ExchangeRow& row) {
    const ExchangeJson& r = row.record;
    if (!row.snapshot_sha256.empty()) {
      Stmt s(db_, "INSERT OR IGNORE INTO snapshots(sha256, first_seen, body) VALUES(?1, ?2, ?3)");
      s.Text(1, row.snapshot_sha256);
      s.Text(2, Str(r, "received_at"));
      s.Text(3, row.snapshot_json);
      if (!s.ok() || sqlite3_step(s.get()) != SQLITE_DONE)
        return SqlError(db_, "storing a snapshot");
    }
    Stmt st(db_,
            "INSERT INTO exchanges(id, kind, endpoint, received_at, status, model_answered, "
            "system_fingerprint, snapshot, record) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)");
    if (!st.ok()) return SqlError(db_, "preparing the insert");
    st.Text(1, Str(r, "id"));
    st.Text(2, Str(r, "kind"));
    st.Text(3, Str(r, "endpoint"));
    st.Text(4, Str(r, "received_at"));
    sqlite3_bind_int(st.get(), 5, r.value("status", 0));
    st.TextOrNull(6, Str(r, "model_answered"));
    st.TextOrNull(7, Str(r, "system_fingerprint"));
    st.TextOrNull(8, row.snapshot_sha256);
    st.Text(9, Dump(r));
    if (sqlite3_step(st.get()) != SQLITE_DONE)
      return SqlError(db_, "storing exchange '" + Str(r, "id") + "'");
    return Status::Ok();
  }

  Status CommitBatch(const std::vector<const ExchangeRow*>& batch) override {
    STET_RETURN_IF_ERROR(Exec(db_, "BEGIN IMMEDIATE", "starting a transaction"));
    for (const ExchangeRow* row : batch) {
      Status st = InsertOne(*row);
      if (!st.ok()) {
        (void)Exec(db_, "ROLLBACK", "rolling back");
        return st;
      }
    }
    Status st = Exec(db_, "COMMIT", "committing exchanges");
    if (!st.ok()) (void)Exec(db_, "ROLLBACK", "rolling back");
    return st;
  }

  sqlite3* db_ = nullptr;
  std::string path_;
};

}  // namespace

std::string ExchangeSchemaSql(const std::string& seq_type, const std::string& time_type) {
  std::string sql =
      "CREATE TABLE IF NOT EXISTS stet_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
      "CREATE TABLE IF NOT EXISTS exchanges("
      "  seq {SEQ},"
      "  id TEXT NOT NULL UNIQUE,"
      "  kind TEXT NOT NULL,"
      "  endpoint TEXT NOT NULL,"
      "  received_at {TIME} NOT NULL,"
      "  status INTEGER NOT NULL,"
      "  model_answered TEXT,"
      "  system_fingerprint TEXT,"
      "  snapshot TEXT,"
      "  record TEXT NOT NULL);"
      "CREATE INDEX IF NOT EXISTS exchanges_received ON exchanges(received_at);"
      "CREATE TABLE IF NOT EXISTS snapshots("
      "  sha256 TEXT PRIMARY KEY,"
      "  first_seen {TIME} NOT NULL,"
      "  body TEXT NOT NULL);";
  for (const auto& [slot, type] : {std::pair{"{SEQ}", &seq_type}, {"{TIME}", &time_type}}) {
    for (size_t at = sql.find(slot); at != std::string::npos; at = sql.find(slot, at)) {
      sql.replace(at, std::string_view(slot).size(), *type);
    }
  }
  return sql;
}

Status ValidateExchange(const ExchangeJson& e) {
  if (!e.is_object()) return InvalidArgument("an exchange must be a JSON object");
  if (Str(e, "schema") != kExchangeSchema) {
    return InvalidArgument("not a stet exchange: \"schema\" is '" + Str(e, "schema") +
                           "', expected '" + kExchangeSchema + "'");
  }
  for (const char* k : {"id", "kind", "endpoint", "received_at"}) {
    if (Str(e, k).empty())
      return InvalidArgument(std::string("exchange lacks a non-empty string \"") + k + "\"");
  }
  auto st = e.find("status");
  if (st == e.end() || !st->is_number_integer()) {
    return InvalidArgument("exchange '" + Str(e, "id") + "' lacks an integer \"status\"");
  }
  return Status::Ok();
}

ExchangeStore::ExchangeStore()
    : commit_(std::make_unique<GroupCommit<ExchangeRow>>(
          [this](const std::vector<const ExchangeRow*>& batch, std::vector<Status>*) {
            return CommitBatch(batch);
          })) {}

ExchangeStore::~ExchangeStore() = default;

Status ExchangeStore::Insert(const ExchangeRow& row) {
  STET_RETURN_IF_ERROR(ValidateExchange(row.record));
  return commit_->Submit(row);
}

Status ExchangeStore::Exclusive(const std::function<Status()>& fn) {
  return commit_->Exclusive(fn);
}

bool IsPostgresUrl(const std::string& where) {
  return where.rfind("postgresql://", 0) == 0 || where.rfind("postgres://", 0) == 0;
}

std::string MaskUrlPassword(const std::string& url) {
  const size_t scheme = url.find("://");
  if (scheme == std::string::npos) return url;
  const size_t at = url.find('@', scheme + 3);
  const size_t slash = url.find('/', scheme + 3);
  if (at == std::string::npos || (slash != std::string::npos && slash < at)) return url;
  const size_t colon = url.find(':', scheme + 3);
  if (colon == std::string::npos || colon > at) return url;
  return url.substr(0, colon + 1) + "***" + url.substr(at);
}

Result<std::unique_ptr<ExchangeStore>> ExchangeStore::Open(const std::string& where, Mode mode) {
  if (IsPostgresUrl(where)) return OpenPostgresExchangeStore(where, mode);
  auto s = std::make_unique<SqliteExchangeStore>();
  STET_RETURN_IF_ERROR(s->OpenFile(where, mode));
  return std::unique_ptr<ExchangeStore>(std::move(s));
}

StoreKind DetectStoreKind(const std::string& where) {
  if (IsPostgresUrl(where)) return StoreKind::kExchanges;
  sqlite3* db = nullptr;
  StoreKind kind = StoreKind::kUnknown;
  if (sqlite3_open_v2(where.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    Stmt st(db, "SELECT value FROM stet_meta WHERE key = 'schema'");
    if (st.ok() && sqlite3_step(st.get()) == SQLITE_ROW) {
      const std::string schema = st.Column(0);
      if (schema == "stet.records/1") kind = StoreKind::kRecords;
      if (schema == kExchangeStoreSchema) kind = StoreKind::kExchanges;
    }
  }
  if (db) sqlite3_close_v2(db);
  return kind;
}

}  // namespace stet::forensics

// SQLite record store. Group commit: the first waiting Insert becomes the
// writer, commits everything queued in one transaction (one WAL fsync), and
// wakes the others; whoever queued meanwhile goes in the next one. Times are
// compared through SQLite's julianday(), which reads "...Z" and "+hh:mm" zones.
#include "forensics/store/record_store.h"

#include <sqlite3.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/text_lines.h"
#include "forensics/store/sqlite_util.h"
#include "wire/json_read.h"

namespace stet::forensics {

using wire::Str;

namespace {

constexpr const char* kStoreSchema = "stet.records/1";
constexpr const char* kRecordSchemaPrefix = "stet.record/";

const char* kSchemaSql =
    "CREATE TABLE IF NOT EXISTS stet_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS records("
    "  seq INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  id TEXT NOT NULL UNIQUE,"
    "  endpoint TEXT NOT NULL,"
    "  received_at TEXT NOT NULL,"
    "  completed_at TEXT NOT NULL,"
    "  system_fingerprint TEXT NOT NULL,"
    "  model_sha256 TEXT NOT NULL,"
    "  record TEXT NOT NULL);";

using sqlite::Exec;
using sqlite::SqlError;
using sqlite::Stmt;

}  // namespace

struct RecordStore::Row {
  std::string id, endpoint, received_at, completed_at, fingerprint, model_sha256, text;
};

namespace {

using Row = RecordStore::Row;

Result<Row> ToRow(const RecordJson& r) {
  STET_RETURN_IF_ERROR(ValidateRecord(r));
  Row row;
  row.id = Str(r, "id");
  row.endpoint = Str(r, "endpoint");
  row.received_at = Str(r, "received_at");
  row.completed_at = Str(r, "completed_at");
  if (row.completed_at.empty()) row.completed_at = row.received_at;
  row.fingerprint = Str(r, "system_fingerprint");
  row.model_sha256 = Str(r, "model_sha256");
  row.text = r.dump(-1, ' ', false, RecordJson::error_handler_t::replace);
  return row;
}

// Inserts one row; *duplicate says the id was already stored (not an error when
// `ignore_duplicates`).
Status InsertRow(sqlite3* db, const Row& row, bool ignore_duplicates, bool* duplicate) {
  Stmt st(db, ignore_duplicates ? "INSERT OR IGNORE INTO records(id, endpoint, received_at, "
                                  "completed_at, system_fingerprint, "
                                  "model_sha256, record) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)"
                                : "INSERT INTO records(id, endpoint, received_at, completed_at, "
                                  "system_fingerprint, model_sha256, "
                                  "record) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)");
  if (!st.ok()) return SqlError(db, "preparing the insert");
  st.Text(1, row.id);
  st.Text(2, row.endpoint);
  st.Text(3, row.received_at);
  st.Text(4, row.completed_at);
  st.Text(5, row.fingerprint);
  st.Text(6, row.model_sha256);
  st.Text(7, row.text);
  const int rc = sqlite3_step(st.get());
  if (rc != SQLITE_DONE) return SqlError(db, "storing record '" + row.id + "'");
  if (duplicate) *duplicate = sqlite3_changes(db) == 0;
  return Status::Ok();
}

// The file is a stet record store of the schema this stet reads, with its records table.
Status CheckStoreSchema(sqlite3* db, const std::string& path) {
  Stmt st(db, "SELECT value FROM stet_meta WHERE key = 'schema'");
  if (!st.ok() || sqlite3_step(st.get()) != SQLITE_ROW) {
    return InvalidArgument("'" + path + "' is not a stet record store (SQLite: " +
                           sqlite3_errmsg(db) + "; no stet_meta schema entry)");
  }
  const unsigned char* v = sqlite3_column_text(st.get(), 0);
  const std::string schema = v ? reinterpret_cast<const char*>(v) : "";
  if (schema != kStoreSchema) {
    return InvalidArgument("'" + path + "' has record store schema '" + schema +
                           "'; this stet reads '" + kStoreSchema + "'");
  }
  Stmt rec(db, "SELECT seq, id, endpoint, received_at, record FROM records LIMIT 0");
  if (!rec.ok()) {
    return InvalidArgument(
        "'" + path + "' is not a usable stet record store (SQLite: " + sqlite3_errmsg(db) + ")");
  }
  return Status::Ok();
}

// A database with tables but no stet_meta belongs to something else: nothing
// is added to it (a file that is no database at all fails here too).
Status CheckNotForeign(sqlite3* db, const std::string& path) {
  Stmt st(db, "SELECT COUNT(*), SUM(name = 'stet_meta') FROM sqlite_master WHERE type = 'table'");
  if (!st.ok() || sqlite3_step(st.get()) != SQLITE_ROW) {
    return InvalidArgument("'" + path +
                           "' is not a stet record store (SQLite: " + sqlite3_errmsg(db) + ")");
  }
  if (sqlite3_column_int64(st.get(), 0) > 0 && sqlite3_column_int64(st.get(), 1) == 0) {
    return InvalidArgument("'" + path +
                           "' is a SQLite database of something else (tables, but no stet_meta); "
                           "no record store is added to it");
  }
  if (sqlite3_column_int64(st.get(), 1) == 0) return Status::Ok();
  Stmt schema(db, "SELECT value FROM stet_meta WHERE key = 'schema'");
  if (schema.ok() && sqlite3_step(schema.get()) == SQLITE_ROW) {
    const unsigned char* v = sqlite3_column_text(schema.get(), 0);
    const std::string found = v ? reinterpret_cast<const char*>(v) : "";
    if (found != kStoreSchema) {  // e.g. a `stet proxy` exchange store
      return InvalidArgument("'" + path + "' is a stet store of schema '" + found +
                             "', not a record store; no record store is added to it");
    }
  }
  return Status::Ok();
}

}  // namespace

Status ValidateRecord(const RecordJson& r) {
  if (!r.is_object()) return InvalidArgument("a record must be a JSON object");
  const std::string schema = Str(r, "schema");
  if (schema.rfind(kRecordSchemaPrefix, 0) != 0) {
    return InvalidArgument("not a stet record: \"schema\" is '" + schema + "', expected '" +
                           kRecordSchemaPrefix + "1'");
  }
  for (const char* k : {"id", "endpoint", "received_at", "system_fingerprint", "model_sha256"}) {
    if (Str(r, k).empty())
      return InvalidArgument(std::string("record lacks a non-empty string \"") + k + "\"");
  }
  const std::string ep = Str(r, "endpoint");
  if (ep != "/v1/completions" && ep != "/v1/chat/completions" && ep != "/v1/responses") {
    return InvalidArgument("record '" + Str(r, "id") + "': unknown endpoint '" + ep + "'");
  }
  auto seed = r.find("seed");
  if (seed == r.end() || !seed->is_number_integer()) {
    return InvalidArgument("record '" + Str(r, "id") + "' lacks an integer \"seed\"");
  }
  auto req = r.find("request");
  if (req == r.end() || !req->is_object()) {
    return InvalidArgument("record '" + Str(r, "id") + "' lacks the \"request\" object");
  }
  auto ch = r.find("choices");
  if (ch == r.end() || !ch->is_array()) {
    return InvalidArgument("record '" + Str(r, "id") + "' lacks the \"choices\" array");
  }
  for (const auto& c : *ch) {
    if (!c.is_object() || !c.contains("text") || !c["text"].is_string() ||
        !c.contains("token_ids") || !c["token_ids"].is_array()) {
      return InvalidArgument("record '" + Str(r, "id") +
                             "': every choice needs \"text\" and \"token_ids\"");
    }
  }
  return Status::Ok();
}

RecordStore::RecordStore()
    : commit_([this](const std::vector<const Row*>& batch, std::vector<Status>* row_status) {
        return CommitBatch(batch, row_status);
      }) {}

Result<std::unique_ptr<RecordStore>> RecordStore::Open(const std::string& path, Mode mode) {
  std::unique_ptr<RecordStore> s(new RecordStore());
  s->path_ = path;
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX;
  if (mode == Mode::kCreate) flags |= SQLITE_OPEN_CREATE;
  if (sqlite3_open_v2(path.c_str(), &s->db_, flags, nullptr) != SQLITE_OK) {
    return IoError("cannot open record store '" + path +
                   "': " + (s->db_ ? sqlite3_errmsg(s->db_) : "out of memory"));
  }
  sqlite3_busy_timeout(s->db_, 10000);
  sqlite3* db = s->db_;
  // An existing file is checked before anything is written to it: a foreign
  // database (or a file that is none) is reported, not switched to WAL.
  STET_RETURN_IF_ERROR(mode == Mode::kOpenExisting ? CheckStoreSchema(db, path)
                                                   : CheckNotForeign(db, path));
  // journal_mode answers with the mode now in force; a file that is not a database fails here.
  {
    Stmt st(db, "PRAGMA journal_mode=WAL");
    if (!st.ok() || sqlite3_step(st.get()) != SQLITE_ROW) {
      return IoError("'" + path + "' is not a stet record store (SQLite: " + sqlite3_errmsg(db) +
                     ")");
    }
    const unsigned char* m = sqlite3_column_text(st.get(), 0);
    if (!m || std::string(reinterpret_cast<const char*>(m)) != "wal") {
      return IoError("'" + path + "': cannot switch the journal to WAL mode");
    }
  }
  STET_RETURN_IF_ERROR(Exec(db, "PRAGMA synchronous=FULL", "'" + path + "'"));
  if (mode == Mode::kCreate) {
    STET_RETURN_IF_ERROR(Exec(db, kSchemaSql, "creating the record store '" + path + "'"));
    Stmt st(db, "INSERT OR IGNORE INTO stet_meta(key, value) VALUES('schema', ?1)");
    if (!st.ok()) return SqlError(db, "'" + path + "'");
    st.Text(1, kStoreSchema);
    if (sqlite3_step(st.get()) != SQLITE_DONE) return SqlError(db, "'" + path + "'");
  }
  STET_RETURN_IF_ERROR(CheckStoreSchema(db, path));
  return s;
}

RecordStore::~RecordStore() {
  if (db_) sqlite3_close_v2(db_);
}

// A row refused alone (a duplicate id) fails its own Insert; the others commit.
Status RecordStore::CommitBatch(const std::vector<const Row*>& batch,
                                std::vector<Status>* row_status) {
  Status st = Exec(db_, "BEGIN IMMEDIATE", "starting a transaction");
  if (!st.ok()) return st;
  for (size_t i = 0; i < batch.size(); ++i)
    (*row_status)[i] = InsertRow(db_, *batch[i], /*ignore_duplicates=*/false, nullptr);
  st = Exec(db_, "COMMIT", "committing records");
  if (!st.ok()) {
    (void)Exec(db_, "ROLLBACK", "rolling back");
    return st;
  }
  return Status::Ok();
}

Status RecordStore::Insert(const RecordJson& record) {
  auto row = ToRow(record);
  if (!row.ok()) return row.status();
  return commit_.Submit(*row);
}

Result<RecordStore::ImportStats> RecordStore::InsertAll(const std::vector<RecordJson>& records) {
  std::vector<Row> rows;
  rows.reserve(records.size());
  for (const RecordJson& r : records) {
    STET_ASSIGN_OR_RETURN(Row row, ToRow(r));
    rows.push_back(std::move(row));
  }
  ImportStats stats;
  STET_RETURN_IF_ERROR(commit_.Exclusive([&]() -> Status {
    STET_RETURN_IF_ERROR(Exec(db_, "BEGIN IMMEDIATE", "starting a transaction"));
    for (const Row& row : rows) {
      bool dup = false;
      Status st = InsertRow(db_, row, /*ignore_duplicates=*/true, &dup);
      if (!st.ok()) {
        (void)Exec(db_, "ROLLBACK", "rolling back");
        return st;
      }
      ++(dup ? stats.duplicates : stats.inserted);
    }
    Status st = Exec(db_, "COMMIT", "committing records");
    if (!st.ok()) (void)Exec(db_, "ROLLBACK", "rolling back");
    return st;
  }));
  return stats;
}

Status RecordStore::ForEach(const RecordQuery& q,
                            const std::function<Status(const std::string&)>& fn) {
  return commit_.Exclusive([&]() -> Status {
    if (!q.since.empty() && !sqlite::IsTime(db_, q.since)) {
      return InvalidArgument("--since '" + q.since +
                             "' is not a time SQLite can read (use ISO 8601, e.g. "
                             "2024-07-26T12:00:00Z)");
    }
    std::string sql = "SELECT record FROM records WHERE 1";
    if (!q.id.empty()) sql += " AND id = ?1";
    if (!q.since.empty()) sql += " AND julianday(received_at) >= julianday(?2)";
    sql += " ORDER BY seq";
    Stmt st(db_, sql.c_str());
    if (!st.ok()) return SqlError(db_, "querying records");
    if (!q.id.empty()) st.Text(1, q.id);
    if (!q.since.empty()) st.Text(2, q.since);
    return st.ForEachRow(db_, "reading records", [&] { return fn(st.Column(0)); });
  });
}

Result<int64_t> RecordStore::Count() {
  int64_t n = 0;
  STET_RETURN_IF_ERROR(commit_.Exclusive([&]() -> Status {
    Stmt st(db_, "SELECT COUNT(*) FROM records");
    if (!st.ok() || sqlite3_step(st.get()) != SQLITE_ROW) return SqlError(db_, "counting records");
    n = sqlite3_column_int64(st.get(), 0);
    return Status::Ok();
  }));
  return n;
}

Result<std::vector<RecordJson>> ReadRecordsJsonl(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return IoError("cannot read '" + path + "'");
  std::stringstream text;
  text << f.rdbuf();
  std::vector<RecordJson> out;
  STET_RETURN_IF_ERROR(ForEachLine(text.str(), [&](const std::string& line, int n) -> Status {
    RecordJson r = RecordJson::parse(line, nullptr, false);
    if (r.is_discarded())
      return InvalidArgument(path + ":" + std::to_string(n) + ": not a JSON value");
    Status st = ValidateRecord(r);
    if (!st.ok()) return InvalidArgument(path + ":" + std::to_string(n) + ": " + st.message());
    out.push_back(std::move(r));
    return Status::Ok();
  }));
  return out;
}

}  // namespace stet::forensics

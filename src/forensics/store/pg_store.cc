// The PostgreSQL exchange store (`--record postgresql://...`): the SQLite
// store's schema with TIMESTAMPTZ times and BIGSERIAL order, for several proxy
// instances writing one store. One connection per process, group-committed
// like the SQLite store; the session sets synchronous_commit = on, so COMMIT
// returns only once the WAL is flushed whatever the server's default. Schema
// creation runs under a transaction-scoped advisory lock, so instances that
// start together do not race on CREATE TABLE.
#include <libpq-fe.h>

#include <memory>

#include "forensics/store/exchange_store.h"
#include "wire/json_read.h"

namespace stet::forensics {

using wire::Str;

namespace {

constexpr int64_t kSchemaLock = 0x5354455445584348;  // "STETEXCH"

struct ResultDeleter {
  void operator()(PGresult* r) const { PQclear(r); }
};
using PgResult = std::unique_ptr<PGresult, ResultDeleter>;

class PgExchangeStore final : public ExchangeStore {
 public:
  ~PgExchangeStore() override {
    if (conn_) PQfinish(conn_);
  }

  Status Connect(const std::string& url, Mode mode) {
    url_ = url;
    shown_ = MaskUrlPassword(url);
    conn_ = PQconnectdb(url.c_str());
    if (!conn_ || PQstatus(conn_) != CONNECTION_OK) {
      return IoError("cannot connect to the PostgreSQL store " + shown_ + ": " + Error());
    }
    STET_RETURN_IF_ERROR(Exec("SET synchronous_commit = on", "setting synchronous_commit"));
    STET_RETURN_IF_ERROR(Exec("SET client_min_messages = warning", "quieting notices"));
    if (mode == Mode::kCreate) {
      STET_RETURN_IF_ERROR(Exec("BEGIN", "starting a transaction"));
      Status st = Exec("SELECT pg_advisory_xact_lock(" + std::to_string(kSchemaLock) + ")",
                       "locking the schema");
      if (st.ok()) {
        st = Exec(ExchangeSchemaSql("BIGSERIAL PRIMARY KEY", "TIMESTAMPTZ"),
                  "creating the exchange store");
      }
      if (st.ok()) {
        st = Run(
            "INSERT INTO stet_meta(key, value) VALUES('schema', $1) ON CONFLICT (key) DO NOTHING",
            {kExchangeStoreSchema}, "writing the schema version");
      }
      if (st.ok()) st = Exec("COMMIT", "committing the schema");
      if (!st.ok()) {
        (void)Exec("ROLLBACK", "rolling back");
        return st;
      }
    }
    auto r = Params("SELECT value FROM stet_meta WHERE key = 'schema'", {}, PGRES_TUPLES_OK,
                    "reading the schema");
    if (!r.ok() || PQntuples(r->get()) != 1) {
      return InvalidArgument(shown_ + " is not a stet exchange store (no stet_meta schema entry)");
    }
    const std::string schema = PQgetvalue(r->get(), 0, 0);
    if (schema != kExchangeStoreSchema) {
      return InvalidArgument(shown_ + " has store schema '" + schema + "', not '" +
                             kExchangeStoreSchema + "'");
    }
    return Status::Ok();
  }

  Status ForEach(const ExchangeQuery& q,
                 const std::function<Status(const ExchangeJson&)>& fn) override {
    return Exclusive([&]() -> Status {
      STET_RETURN_IF_ERROR(Alive());
      std::string sql = "SELECT record FROM exchanges WHERE TRUE";
      std::vector<std::string> params;
      const auto add = [&](const std::string& cond, const std::string& v) {
        params.push_back(v);
        sql += " AND " + cond + "$" + std::to_string(params.size()) +
               (cond.find("received_at") != std::string::npos ? "::timestamptz" : "");
      };
      if (!q.id.empty()) add("id = ", q.id);
      if (!q.since.empty()) add("received_at >= ", q.since);
      if (!q.until.empty()) add("received_at < ", q.until);
      if (!q.kind.empty()) add("kind = ", q.kind);
      sql += " ORDER BY seq";
      STET_ASSIGN_OR_RETURN(PgResult r, Params(sql, params, PGRES_TUPLES_OK, "reading exchanges"));
      for (int i = 0; i < PQntuples(r.get()); ++i) {
        ExchangeJson rec = ExchangeJson::parse(PQgetvalue(r.get(), i, 0), nullptr, false);
        if (rec.is_discarded()) return DataLoss("a stored exchange in " + shown_ + " is not JSON");
        STET_RETURN_IF_ERROR(fn(rec));
      }
      return Status::Ok();
    });
  }

  Result<std::optional<std::string>> Snapshot(const std::string& sha256) override {
    std::optional<std::string> out;
    STET_RETURN_IF_ERROR(Exclusive([&]() -> Status {
      STET_RETURN_IF_ERROR(Alive());
      STET_ASSIGN_OR_RETURN(PgResult r, Params("SELECT body FROM snapshots WHERE sha256 = $1",
                                               {sha256}, PGRES_TUPLES_OK, "reading snapshots"));
      if (PQntuples(r.get()) == 1) out = PQgetvalue(r.get(), 0, 0);
      return Status::Ok();
    }));
    return out;
  }

  Result<int64_t> DeleteBefore(const std::string& iso_time) override {
    int64_t n = 0;
    STET_RETURN_IF_ERROR(Exclusive([&]() -> Status {
      STET_RETURN_IF_ERROR(Alive());
      STET_RETURN_IF_ERROR(Exec("BEGIN", "starting a transaction"));
      auto r = Params("DELETE FROM exchanges WHERE received_at < $1::timestamptz", {iso_time},
                      PGRES_COMMAND_OK, "deleting old exchanges");
      Status st = r.ok() ? Status::Ok() : r.status();
      if (st.ok()) {
        n = std::stoll(PQcmdTuples(r->get()));
        st = Exec(
            "DELETE FROM snapshots WHERE sha256 NOT IN "
            "(SELECT snapshot FROM exchanges WHERE snapshot IS NOT NULL)",
            "deleting unused snapshots");
      }
      if (st.ok()) st = Exec("COMMIT", "committing the deletion");
      if (!st.ok()) (void)Exec("ROLLBACK", "rolling back");
      return st;
    }));
    return n;
  }

  Result<int64_t> Count() override {
    int64_t n = 0;
    STET_RETURN_IF_ERROR(Exclusive([&]() -> Status {
      STET_RETURN_IF_ERROR(Alive());
      STET_ASSIGN_OR_RETURN(
          PgResult r, Params("SELECT COUNT(*) FROM exchanges", {}, PGRES_TUPLES_OK, "counting"));
      n = std::stoll(PQgetvalue(r.get(), 0, 0));
      return Status::Ok();
    }));
    return n;
  }

  std::string Describe() const override { return shown_; }

 private:
  std::string Error() const {
    std::string e = conn_ ? PQerrorMessage(conn_) : "out of memory";
    while (!e.empty() && (e.back() == '\n' || e.back() == ' ')) e.pop_back();
    return e;
  }

  // A connection the server dropped is re-established once per call.
  Status Alive() {
    if (PQstatus(conn_) == CONNECTION_OK) return Status::Ok();
    PQreset(conn_);
    if (PQstatus(conn_) != CONNECTION_OK)
      return IoError("lost the PostgreSQL store " + shown_ + ": " + Error());
    STET_RETURN_IF_ERROR(Exec("SET synchronous_commit = on", "setting synchronous_commit"));
    return Exec("SET client_min_messages = warning", "quieting notices");
  }

  Status Exec(const std::string& sql, const std::string& what) {
    PgResult r(PQexec(conn_, sql.c_str()));
    const auto s = PQresultStatus(r.get());
    if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK)
      return IoError(what + " in " + shown_ + ": " + Error());
    return Status::Ok();
  }

  Result<PgResult> Params(const std::string& sql, const std::vector<std::string>& params,
                          ExecStatusType want, const std::string& what) {
    std::vector<const char*> values;
    for (const auto& p : params) values.push_back(p.c_str());
    PgResult r(PQexecParams(conn_, sql.c_str(), static_cast<int>(values.size()), nullptr,
                            values.data(), nullptr, nullptr, 0));
    if (PQresultStatus(r.get()) != want) {
      const char* state = PQresultErrorField(r.get(), PG_DIAG_SQLSTATE);
      // 22007 / 22008: a time the server cannot read (--since, --until).
      if (state && (std::string(state) == "22007" || std::string(state) == "22008")) {
        return InvalidArgument(
            "not a time PostgreSQL can read (use ISO 8601, e.g. 2024-07-26T12:00:00Z): " + Error());
      }
      return IoError(what + " in " + shown_ + ": " + Error());
    }
    return r;
  }

  Status Run(const std::string& sql, const std::vector<std::string>& params,
             const std::string& what) {
    auto r = Params(sql, params, PGRES_COMMAND_OK, what);
    return r.ok() ? Status::Ok() : r.status();
  }

  Status InsertOne(const ExchangeRow& row) {
    const ExchangeJson& r = row.record;
    if (!row.snapshot_sha256.empty()) {
      STET_RETURN_IF_ERROR(Run(
          "INSERT INTO snapshots(sha256, first_seen, body) VALUES($1, $2::timestamptz, $3) "
          "ON CONFLICT (sha256) DO NOTHING",
          {row.snapshot_sha256, Str(r, "received_at"), row.snapshot_json}, "storing a snapshot"));
    }
    return Run(
        "INSERT INTO exchanges(id, kind, endpoint, received_at, status, model_answered, "
        "system_fingerprint, snapshot, record) VALUES($1, $2, $3, $4::timestamptz, $5::integer, "
        "NULLIF($6, ''), NULLIF($7, ''), NULLIF($8, ''), $9)",
        {Str(r, "id"), Str(r, "kind"), Str(r, "endpoint"), Str(r, "received_at"),
         std::to_string(r.value("status", 0)), Str(r, "model_answered"),
         Str(r, "system_fingerprint"), row.snapshot_sha256,
         r.dump(-1, ' ', false, ExchangeJson::error_handler_t::replace)},
        "storing exchange '" + Str(r, "id") + "'");
  }

  Status CommitBatch(const std::vector<const ExchangeRow*>& batch) override {
    STET_RETURN_IF_ERROR(Alive());
    STET_RETURN_IF_ERROR(Exec("BEGIN", "starting a transaction"));
    for (const ExchangeRow* row : batch) {
      Status st = InsertOne(*row);
      if (!st.ok()) {
        (void)Exec("ROLLBACK", "rolling back");
        return st;
      }
    }
    Status st = Exec("COMMIT", "committing exchanges");
    if (!st.ok()) (void)Exec("ROLLBACK", "rolling back");
    return st;
  }

  PGconn* conn_ = nullptr;
  std::string url_, shown_;
};

}  // namespace

Result<std::unique_ptr<ExchangeStore>> OpenPostgresExchangeStore(const std::string& url,
                                                                 ExchangeStore::Mode mode) {
  auto s = std::make_unique<PgExchangeStore>();
  STET_RETURN_IF_ERROR(s->Connect(url, mode));
  return std::unique_ptr<ExchangeStore>(std::move(s));
}

}  // namespace stet::forensics

// The store behind `stet proxy --record`: one row per exchange (a request the
// proxy forwarded and what came back, as a `stet.exchange/1` JSON record) and
// one row per distinct snapshot (the parts of a request that shape an answer,
// content-addressed by SHA-256). Two backends with one schema: a SQLite file
// (WAL, synchronous=FULL) and PostgreSQL (`postgresql://...`). Invariant:
// Insert returns only once the exchange and its snapshot are committed
// durably, so an answer the proxy acknowledged survives kill -9; concurrent
// Inserts are group-committed (group_commit.h): the backends write batches,
// this interface queues and validates.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace stet::forensics {

template <typename Item>
class GroupCommit;

using ExchangeJson = nlohmann::ordered_json;

constexpr const char* kExchangeSchema = "stet.exchange/1";
constexpr const char* kExchangeStoreSchema = "stet.exchanges/1";

// The tables both backends create (stet_meta, exchanges, snapshots), in one
// dialect: the type of the `seq` key and of the time columns.
std::string ExchangeSchemaSql(const std::string& seq_type, const std::string& time_type);

// Checks the fields every exchange record has (schema, id, kind, endpoint,
// received_at, status) with the right types.
Status ValidateExchange(const ExchangeJson& e);

// One exchange to store, and the snapshot it names (empty hash: none).
struct ExchangeRow {
  ExchangeJson record;
  std::string snapshot_sha256;
  std::string snapshot_json;  // canonical JSON whose SHA-256 is snapshot_sha256
};

struct ExchangeQuery {
  std::string id;     // non-empty: only this exchange
  std::string since;  // non-empty: received at or after this ISO 8601 time
  std::string until;  // non-empty: received before this ISO 8601 time
  std::string kind;   // non-empty: "traffic" or "canary"
};

class ExchangeStore {
 public:
  enum class Mode { kCreate, kOpenExisting };
  // A SQLite file path, or a postgresql:// (postgres://) connection URL.
  static Result<std::unique_ptr<ExchangeStore>> Open(const std::string& where, Mode mode);
  virtual ~ExchangeStore();

  // Validates and stores one exchange durably (see the file comment). Thread-safe.
  Status Insert(const ExchangeRow& row);
  // Calls `fn` with each selected record in stored order; stops at its first error.
  virtual Status ForEach(const ExchangeQuery& q,
                         const std::function<Status(const ExchangeJson& record)>& fn) = 0;
  // The canonical JSON of a snapshot, or nullopt when the hash is unknown.
  virtual Result<std::optional<std::string>> Snapshot(const std::string& sha256) = 0;
  // Retention: deletes exchanges received before `iso_time`, then snapshots no
  // exchange names any more. Returns the number of exchanges deleted.
  virtual Result<int64_t> DeleteBefore(const std::string& iso_time) = 0;
  virtual Result<int64_t> Count() = 0;
  // "sqlite:PATH" or the PostgreSQL URL with any password masked.
  virtual std::string Describe() const = 0;

 protected:
  ExchangeStore();
  // Stores a batch of validated exchanges in one transaction: all, or none
  // (the group commit's writer, one thread at a time).
  virtual Status CommitBatch(const std::vector<const ExchangeRow*>& batch) = 0;
  // Runs `fn` while no batch is being committed (reads and maintenance).
  Status Exclusive(const std::function<Status()>& fn);

 private:
  std::unique_ptr<GroupCommit<ExchangeRow>> commit_;
};

bool IsPostgresUrl(const std::string& where);
// "postgresql://u:secret@h/db" -> "postgresql://u:***@h/db".
std::string MaskUrlPassword(const std::string& url);

// What a store argument names: a `stet serve --record` store (stet.records/1),
// an exchange store (stet.exchanges/1, or any PostgreSQL URL), or neither.
enum class StoreKind { kRecords, kExchanges, kUnknown };
StoreKind DetectStoreKind(const std::string& where);

// PostgreSQL backend (pg_store.cc); unavailable builds return an error.
Result<std::unique_ptr<ExchangeStore>> OpenPostgresExchangeStore(const std::string& url,
                                                                 ExchangeStore::Mode mode);

}  // namespace stet::forensics

// The durable store behind `stet serve --record`, `stet replay` and `stet
// record export/import`: one SQLite file in WAL mode with synchronous=FULL,
// one row per request (its record as JSON text plus the columns replay
// selects on). Invariant: Insert returns only after the transaction holding
// the record has committed and its WAL frames are fsync'ed, so a record whose
// Insert returned survives kill -9 (and power loss). Concurrent Inserts are
// group-committed: while one thread commits, the others queue and go in the
// next transaction together.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "forensics/store/group_commit.h"

struct sqlite3;

namespace stet::forensics {

using RecordJson = nlohmann::ordered_json;

// Checks that `r` has what replay needs (schema, id, endpoint, received_at,
// system_fingerprint, model_sha256, seed, request, choices) with the right types.
Status ValidateRecord(const RecordJson& r);

struct RecordQuery {
  std::string id;     // non-empty: only this record
  std::string since;  // non-empty: records received at or after this ISO 8601 time
};

class RecordStore {
 public:
  enum class Mode { kCreate, kOpenExisting };
  // kCreate makes the file (and schema) when missing; kOpenExisting fails
  // when `path` is not already a record store.
  static Result<std::unique_ptr<RecordStore>> Open(const std::string& path, Mode mode);
  ~RecordStore();
  RecordStore(const RecordStore&) = delete;
  RecordStore& operator=(const RecordStore&) = delete;

  // Validates and stores one record durably (see the file comment). Thread-safe.
  Status Insert(const RecordJson& record);

  struct ImportStats {
    int64_t inserted = 0;
    int64_t duplicates = 0;  // ids already present (kept as they were)
  };
  // All in one transaction: every record is stored, or none.
  Result<ImportStats> InsertAll(const std::vector<RecordJson>& records);

  // Calls `fn` with each selected record's JSON text, in the order they were
  // stored; stops at the first error `fn` returns. Writers wait meanwhile, so
  // `fn` must not call back into this store.
  Status ForEach(const RecordQuery& q,
                 const std::function<Status(const std::string& json_text)>& fn);
  Result<int64_t> Count();

  const std::string& path() const { return path_; }

  // A record's columns, extracted before it queues (record_store.cc).
  struct Row;

 private:
  RecordStore();
  Status CommitBatch(const std::vector<const Row*>& batch, std::vector<Status>* row_status);

  sqlite3* db_ = nullptr;
  std::string path_;
  // Insert's writer, InsertAll, ForEach and Count never interleave their
  // statements or transactions on the connection.
  GroupCommit<Row> commit_;
};

// Records from a JSONL file (one record per line; blank lines skipped), each
// validated; errors name the file and line.
Result<std::vector<RecordJson>> ReadRecordsJsonl(const std::string& path);

}  // namespace stet::forensics

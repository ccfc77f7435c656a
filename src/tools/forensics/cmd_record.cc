// `stet record export FILE.db [-o out.jsonl]` writes one record per line in
// the order they were stored (stdout by default); `stet record import
// in.jsonl FILE.db` validates every line first, then stores them all in one
// transaction (ids already present are kept and counted). Exit codes: 0 ok,
// 1 failed (message on stderr), 2 bad command line.
#include "tools/forensics/cmd_record.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "forensics/store/record_store.h"
#include "tools/common.h"

namespace stet::tools {

namespace {

class StoreRecorder : public server::RequestRecorder {
 public:
  explicit StoreRecorder(std::unique_ptr<forensics::RecordStore> store)
      : store_(std::move(store)) {}
  Status Record(const nlohmann::ordered_json& record) override { return store_->Insert(record); }

 private:
  std::unique_ptr<forensics::RecordStore> store_;
};

struct RecordArgs {
  std::string db, jsonl, out, id, since;
};

int Export(const RecordArgs& a) {
  auto store = forensics::RecordStore::Open(a.db, forensics::RecordStore::Mode::kOpenExisting);
  if (!store.ok()) return ReportError(store.status());
  std::FILE* f = stdout;
  const std::string tmp = a.out.empty() ? "" : a.out + ".part";
  if (!a.out.empty()) {
    f = std::fopen(tmp.c_str(), "wb");
    if (!f) return ReportError(IoError("cannot write '" + tmp + "'"));
  }
  int64_t n = 0;
  forensics::RecordQuery q;
  q.id = a.id;
  q.since = a.since;
  Status st = (*store)->ForEach(q, [&](const std::string& text) -> Status {
    if (std::fwrite(text.data(), 1, text.size(), f) != text.size() || std::fputc('\n', f) == EOF) {
      return IoError("write failed");
    }
    ++n;
    return Status::Ok();
  });
  if (!a.out.empty()) {
    if (std::fclose(f) != 0 && st.ok()) st = IoError("cannot finish writing '" + tmp + "'");
    if (st.ok() && std::rename(tmp.c_str(), a.out.c_str()) != 0)
      st = IoError("cannot rename to '" + a.out + "'");
    if (!st.ok()) std::remove(tmp.c_str());
  } else {
    std::fflush(stdout);
  }
  if (!st.ok()) return ReportError(st);
  std::fprintf(stderr, "stet record: exported %lld record(s) from %s\n", static_cast<long long>(n),
               a.db.c_str());
  return kExitOk;
}

int Import(const RecordArgs& a) {
  auto records = forensics::ReadRecordsJsonl(a.jsonl);
  if (!records.ok()) return ReportError(records.status());
  auto store = forensics::RecordStore::Open(a.db, forensics::RecordStore::Mode::kCreate);
  if (!store.ok()) return ReportError(store.status());
  auto stats = (*store)->InsertAll(*records);
  if (!stats.ok()) return ReportError(stats.status());
  std::fprintf(stderr, "stet record: imported %lld record(s) into %s",
               static_cast<long long>(stats->inserted), a.db.c_str());
  if (stats->duplicates > 0) {
    std::fprintf(stderr, " (%lld already present, kept as they were)",
                 static_cast<long long>(stats->duplicates));
  }
  std::fprintf(stderr, "\n");
  return kExitOk;
}

}  // namespace

Result<std::shared_ptr<server::RequestRecorder>> OpenRequestRecorder(const std::string& path) {
  STET_ASSIGN_OR_RETURN(auto store,
                        forensics::RecordStore::Open(path, forensics::RecordStore::Mode::kCreate));
  return std::shared_ptr<server::RequestRecorder>(
      std::make_shared<StoreRecorder>(std::move(store)));
}

CLI::App* AddRecordCommand(CLI::App& app, int* exit_code) {
  auto a = std::make_shared<RecordArgs>();
  CLI::App* cmd = app.add_subcommand("record",
                                     "Move records of `stet serve --record FILE.db` in and out as "
                                     "JSONL (cassettes for test suites)");
  cmd->require_subcommand(1);
  CLI::App* ex = AddCommand(*cmd, exit_code, "export",
                            "Write the records of FILE.db as JSONL, one per line, in stored order",
                            [a] { return Export(*a); });
  ex->add_option("db", a->db, "Record store (SQLite) written by stet serve --record")->required();
  ex->add_option("-o,--out", a->out, "Output file (default: stdout)");
  auto* id = ex->add_option("--id", a->id, "Only the record with this id");
  ex->add_option("--since", a->since, "Only records received at or after this ISO 8601 time")
      ->excludes(id);
  CLI::App* im = AddCommand(*cmd, exit_code, "import",
                            "Store the records of a JSONL file in FILE.db (created when missing)",
                            [a] { return Import(*a); });
  im->add_option("jsonl", a->jsonl, "JSONL file of records (as written by export)")->required();
  im->add_option("db", a->db, "Record store (SQLite)")->required();
  return cmd;
}

}  // namespace stet::tools

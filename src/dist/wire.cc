// Frames and payloads of the tensor-parallel group (wire.h): little-endian
// fields written and read in one order; a payload that does not decode is an
// error (ranks built from different sources, or a bug), never a crash.
#include "dist/wire.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace stet::dist {

namespace {

constexpr uint32_t kMagic = 0x31505453;  // "STP1": bump with any change of the layout
constexpr int64_t kFrameBytes = 1024;
constexpr int64_t kFrameHead = 16;  // magic, kind, payload bytes
constexpr int64_t kReportBytes = 1024;

class Writer {
 public:
  template <typename T>
  void Put(T v) {
    out_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void PutString(const std::string& s) {
    Put<uint32_t>(static_cast<uint32_t>(s.size()));
    out_ += s;
  }
  std::string& bytes() { return out_; }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(const std::string& in) : in_(in) {}
  template <typename T>
  bool Get(T* v) {
    if (in_.size() - pos_ < sizeof(T)) return false;
    std::memcpy(v, in_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool GetString(std::string* s) {
    uint32_t n = 0;
    if (!Get(&n) || in_.size() - pos_ < n) return false;
    s->assign(in_, pos_, n);
    pos_ += n;
    return true;
  }
  bool done() const { return pos_ == in_.size(); }

 private:
  const std::string& in_;
  size_t pos_ = 0;
};

Status Malformed(const char* what) {
  return DataLoss(std::string("tensor parallelism: a malformed ") + what +
                  " message from rank 0 (are all ranks the same stet build?)");
}

// A fixed-size field of a report: the string cut to fit, NUL-padded.
void PutFixed(std::string* out, const std::string& s, size_t n) {
  std::string f = s.substr(0, n - 1);
  f.resize(n, '\0');
  *out += f;
}
std::string GetFixed(const char* p, size_t n) { return std::string(p, strnlen(p, n)); }

}  // namespace

std::string HostName() {
  char name[256] = {0};
  if (::gethostname(name, sizeof name - 1) != 0) return "?";
  return name;
}

int64_t PeakRssBytes() {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return 0;
  char line[256];
  long long kib = 0;
  while (std::fgets(line, sizeof line, f)) {
    if (std::sscanf(line, "VmHWM: %lld kB", &kib) == 1) break;
  }
  std::fclose(f);
  return kib * 1024;
}

Result<std::vector<RankStats>> GatherStats(TpComm& comm) {
  const RankStats mine{comm.bytes_sent(), PeakRssBytes()};
  const int n = comm.size();
  std::vector<int64_t> counts(n, sizeof(RankStats));
  std::vector<RankStats> all(n);
  STET_RETURN_IF_ERROR(comm.AllGather(&mine, counts.data(), all.data()));
  return all;
}

const char* FrameKindName(FrameKind k) {
  switch (k) {
    case FrameKind::kStart:
      return "start";
    case FrameKind::kStep:
      return "step";
    case FrameKind::kPing:
      return "ping";
    case FrameKind::kEnd:
      return "end";
    case FrameKind::kQuit:
      return "quit";
    case FrameKind::kStats:
      return "stats";
  }
  return "?";
}

StepDesc DescribeStep(const std::vector<BatchToken>& batch, const PagedKvCache& kv) {
  StepDesc s;
  s.n_blocks = kv.n_blocks();
  s.block_size = kv.block_size();
  s.n_slots = kv.n_slots();
  s.kv_type = kv.type();
  s.batch = batch;
  // Each slot's blocks up to the one holding its last position in the batch:
  // all that attention reads this step.
  for (const BatchToken& t : batch) {
    auto it = std::find_if(s.tables.begin(), s.tables.end(),
                           [&](const auto& p) { return p.first == t.seq; });
    const size_t need = static_cast<size_t>(t.pos / kv.block_size() + 1);
    const std::vector<int32_t>& table = kv.BlockTable(t.seq);
    if (it == s.tables.end()) {
      s.tables.push_back({t.seq, {}});
      it = s.tables.end() - 1;
    }
    if (it->second.size() < need) it->second.assign(table.begin(), table.begin() + need);
  }
  return s;
}

std::string EncodeConfig(const GroupConfig& c) {
  Writer w;
  w.PutString(c.model_path);
  w.Put<int32_t>(c.max_ctx);
  w.Put<int32_t>(static_cast<int32_t>(c.numerics));
  w.Put<int32_t>(static_cast<int32_t>(c.isa));
  w.Put<int32_t>(c.n_threads);
  return std::move(w.bytes());
}

Result<GroupConfig> DecodeConfig(const std::string& bytes) {
  Reader r(bytes);
  GroupConfig c;
  int32_t numerics = 0, isa = 0;
  if (!r.GetString(&c.model_path) || !r.Get(&c.max_ctx) || !r.Get(&numerics) || !r.Get(&isa) ||
      !r.Get(&c.n_threads) || !r.done() || c.max_ctx < 1 || c.n_threads < 1 || numerics < 0 ||
      numerics > static_cast<int32_t>(NumericsMode::kPrecise) || isa < 0 ||
      isa > static_cast<int32_t>(Isa::kAuto)) {
    return Malformed("start");
  }
  c.numerics = static_cast<NumericsMode>(numerics);
  c.isa = static_cast<Isa>(isa);
  return c;
}

std::string EncodeStep(const StepDesc& s) {
  Writer w;
  w.Put<int32_t>(s.n_blocks);
  w.Put<int32_t>(s.block_size);
  w.Put<int32_t>(s.n_slots);
  w.Put<int32_t>(static_cast<int32_t>(s.kv_type));
  w.Put<int32_t>(static_cast<int32_t>(s.batch.size()));
  for (const BatchToken& t : s.batch) {
    w.Put<int32_t>(t.token);
    w.Put<int32_t>(t.pos);
    w.Put<int32_t>(t.seq);
    w.Put<int32_t>(t.logits ? 1 : 0);
  }
  w.Put<int32_t>(static_cast<int32_t>(s.tables.size()));
  for (const auto& [slot, blocks] : s.tables) {
    w.Put<int32_t>(slot);
    w.Put<int32_t>(static_cast<int32_t>(blocks.size()));
    for (int32_t b : blocks) w.Put<int32_t>(b);
  }
  return std::move(w.bytes());
}

Result<StepDesc> DecodeStep(const std::string& bytes) {
  Reader r(bytes);
  StepDesc s;
  int32_t type = 0, n = 0;
  if (!r.Get(&s.n_blocks) || !r.Get(&s.block_size) || !r.Get(&s.n_slots) || !r.Get(&type) ||
      !r.Get(&n) || n < 0 || s.n_blocks < 1 || s.block_size < 1 || s.n_slots < 1 ||
      (type != static_cast<int32_t>(DType::kF16) && type != static_cast<int32_t>(DType::kF32))) {
    return Malformed("step");
  }
  s.kv_type = static_cast<DType>(type);
  s.batch.resize(n);
  for (BatchToken& t : s.batch) {
    int32_t logits = 0;
    if (!r.Get(&t.token) || !r.Get(&t.pos) || !r.Get(&t.seq) || !r.Get(&logits)) {
      return Malformed("step");
    }
    t.logits = logits != 0;
  }
  int32_t n_tables = 0;
  if (!r.Get(&n_tables) || n_tables < 0) return Malformed("step");
  for (int32_t i = 0; i < n_tables; ++i) {
    int32_t slot = 0, len = 0;
    if (!r.Get(&slot) || !r.Get(&len) || slot < 0 || slot >= s.n_slots || len < 0) {
      return Malformed("step");
    }
    std::vector<int32_t> blocks(len);
    for (int32_t& b : blocks) {
      if (!r.Get(&b) || b < 0 || b >= s.n_blocks) return Malformed("step");
    }
    s.tables.push_back({slot, std::move(blocks)});
  }
  if (!r.done()) return Malformed("step");
  return s;
}

Status SendFrame(TpComm& comm, FrameKind kind, const std::string& payload) {
  std::string frame(kFrameBytes, '\0');
  const uint32_t head[2] = {kMagic, static_cast<uint32_t>(kind)};
  const uint64_t n = payload.size();
  std::memcpy(frame.data(), head, 8);
  std::memcpy(frame.data() + 8, &n, 8);
  const bool inline_payload = static_cast<int64_t>(n) <= kFrameBytes - kFrameHead;
  if (inline_payload) std::memcpy(frame.data() + kFrameHead, payload.data(), n);
  STET_RETURN_IF_ERROR(comm.Broadcast(frame.data(), kFrameBytes));
  if (inline_payload) return Status::Ok();
  std::string copy = payload;  // Broadcast takes a writable buffer on every rank
  return comm.Broadcast(copy.data(), static_cast<int64_t>(n));
}

Result<Frame> ReceiveFrame(TpComm& comm, double timeout_s) {
  std::string frame(kFrameBytes, '\0');
  STET_RETURN_IF_ERROR(comm.Broadcast(frame.data(), kFrameBytes, timeout_s));
  uint32_t head[2];
  uint64_t n = 0;
  std::memcpy(head, frame.data(), 8);
  std::memcpy(&n, frame.data() + 8, 8);
  if (head[0] != kMagic || head[1] < 1 || head[1] > 6 || n > (uint64_t{1} << 32)) {
    return Malformed("frame");
  }
  Frame f{static_cast<FrameKind>(head[1]), {}};
  if (static_cast<int64_t>(n) <= kFrameBytes - kFrameHead) {
    f.payload.assign(frame.data() + kFrameHead, n);
    return f;
  }
  f.payload.resize(n);
  STET_RETURN_IF_ERROR(comm.Broadcast(f.payload.data(), static_cast<int64_t>(n)));
  return f;
}

Result<std::vector<LoadReport>> GatherReports(TpComm& comm, const LoadReport& mine,
                                              double timeout_s) {
  std::string rec;
  rec += mine.ok ? '1' : '0';
  PutFixed(&rec, mine.sha256, 65);
  PutFixed(&rec, mine.host, 128);
  PutFixed(&rec, mine.message, kReportBytes - 1 - 65 - 128);
  const int n = comm.size();
  std::vector<int64_t> counts(n, kReportBytes);
  std::string all(kReportBytes * n, '\0');
  STET_RETURN_IF_ERROR(comm.AllGather(rec.data(), counts.data(), all.data(), timeout_s));
  std::vector<LoadReport> out(n);
  for (int r = 0; r < n; ++r) {
    const char* p = all.data() + r * kReportBytes;
    out[r].ok = p[0] == '1';
    out[r].sha256 = GetFixed(p + 1, 65);
    out[r].host = GetFixed(p + 1 + 65, 128);
    out[r].message = GetFixed(p + 1 + 65 + 128, kReportBytes - 1 - 65 - 128);
  }
  return out;
}

}  // namespace stet::dist

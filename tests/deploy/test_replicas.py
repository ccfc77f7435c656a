#!/usr/bin/env python3
"""Scale-out contract: 3 `stet serve` replicas behind nginx (deploy/run-replicas.sh,
deploy/nginx/stet.conf) answer the same request with the same bytes — text, token
logprobs, system_fingerprint — whichever replica nginx picks, also while the
replicas carry different background loads (0, 3 and 8 concurrent companion
request loops). Uses stories260K; Python stdlib only. Missing material (nginx,
the model, the binary) skips (exit 77) outside CI and fails in CI (CI=true).
"""
import http.client
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SCRIPT = os.path.join(ROOT, "deploy", "run-replicas.sh")
SKIP = 77
REPEATS = 5            # per probe request, per target, per phase
COMPANIONS = [0, 3, 8]  # concurrent background request loops on replica 1, 2, 3

failures = []


def require(ok, what):
    if ok:
        return
    if os.environ.get("CI") == "true":
        print(f"FAIL: required test material missing: {what}", file=sys.stderr)
        sys.exit(1)
    print(f"SKIP: test material not present: {what}", file=sys.stderr)
    sys.exit(SKIP)


def check(ok, msg):
    if not ok:
        failures.append(msg)
        print(f"FAIL: {msg}", file=sys.stderr)
    return ok


def find_material():
    stet = os.environ.get("STET_BINARY")
    if not stet:
        for cand in ("build-deploy/bin/stet", "build/bin/stet"):
            if os.path.exists(os.path.join(ROOT, cand)):
                stet = os.path.join(ROOT, cand)
                break
    require(stet and os.access(stet, os.X_OK), "the stet binary (set STET_BINARY)")
    shared = os.environ.get("STET_SHARED_DIR", os.path.join(ROOT, "..", "shared"))
    model = os.path.join(shared, "models", "stories260K", "stories260K.gguf")
    require(os.path.exists(model), model)
    require(shutil.which("nginx") or os.access("/usr/sbin/nginx", os.X_OK),
            "nginx (apt-get install nginx-light; scripts/setup installs it)")
    return stet, model


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def request(port, method, path, body=None, timeout=60):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        data = json.dumps(body).encode() if body is not None else None
        conn.request(method, path, body=data, headers={"Content-Type": "application/json"})
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def post_completion(port, body):
    """Returns the canonical bytes of what must not vary, or raises."""
    status, data = request(port, "POST", "/v1/completions", body)
    if status != 200:
        raise RuntimeError(f"HTTP {status} from :{port}: {data[:300]!r}")
    if body.get("stream"):
        return canonical_stream(data)
    obj = json.loads(data)
    usage = dict(obj["usage"])
    usage.pop("prompt_tokens_details", None)  # cached_tokens depends on the prefix cache's history
    keep = {"choices": obj["choices"], "system_fingerprint": obj["system_fingerprint"],
            "model": obj["model"], "usage": usage}
    if "seed" in body:  # without one, every request gets a fresh generated seed
        keep["seed"] = obj.get("seed")
    # repr-exact floats (json.dumps uses repr): -0.0 and every last bit count.
    return json.dumps(keep, sort_keys=True).encode()


def canonical_stream(data):
    """An SSE body: text and logprobs concatenated per choice, fingerprints, [DONE]."""
    events = [line[5:].strip() for line in data.split(b"\n") if line.startswith(b"data:")]
    if not events or events[-1] != b"[DONE]":
        raise RuntimeError(f"stream did not end with [DONE]: {data[-200:]!r}")
    texts, logprobs, fps, finish = {}, {}, set(), {}
    for e in events[:-1]:
        obj = json.loads(e)
        fps.add(obj.get("system_fingerprint"))
        for c in obj.get("choices") or []:
            i = c["index"]
            texts[i] = texts.get(i, "") + (c.get("text") or "")
            if c.get("logprobs"):
                lp = logprobs.setdefault(i, {"tokens": [], "token_logprobs": [], "top_logprobs": []})
                for k in lp:
                    lp[k].extend(c["logprobs"].get(k) or [])
            if c.get("finish_reason"):
                finish[i] = c["finish_reason"]
    return json.dumps({"texts": texts, "logprobs": logprobs, "fps": sorted(fps, key=str),
                       "finish": finish}, sort_keys=True).encode()


def diff(a, b):
    """Where two canonical answers first differ, with context."""
    i = next((k for k in range(min(len(a), len(b))) if a[k] != b[k]), min(len(a), len(b)))
    lo = max(0, i - 80)
    return f"at byte {i}: ...{a[lo:i + 80]!r} vs ...{b[lo:i + 80]!r}"


PROBES = {
    "greedy": {"prompt": "Once upon a time, there was a little girl", "max_tokens": 48,
               "temperature": 0, "logprobs": 3},
    "seeded": {"prompt": "The cat and the dog", "max_tokens": 48, "temperature": 0.9,
               "top_p": 0.95, "seed": 1234, "logprobs": 3},
    "seeded_n2_stop": {"prompt": "Lily went to the park", "max_tokens": 40, "temperature": 1.1,
                       "seed": 77, "n": 2, "logprobs": 2, "stop": ["\n\n"]},
    "stream_greedy": {"prompt": "Once upon a time, there was a little girl", "max_tokens": 48,
                      "temperature": 0, "logprobs": 3, "stream": True},
}
COMPANION_PROMPTS = ["Tom had a big red ball", "One day", "The sun was shining and the birds",
                     "Sue wanted to play", "There was a tree", "A boy named Tim saw a"]


class Cluster:
    """deploy/run-replicas.sh in its own session, its stdout parsed for the URLs."""

    def __init__(self, stet, model):
        self.prefix = tempfile.mkdtemp(prefix="stet-deploy-test.")
        self.port = free_port()
        cmd = [SCRIPT, "-n", "3", "-p", str(self.port), "--base-port", "0", "-m", model,
               "--stet", stet, "--prefix", self.prefix, "--", "-t", "1", "--max-queue", "256"]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, start_new_session=True)
        self.replicas = []   # (port, pid)
        self.nginx_pid = None
        self.fingerprint = None
        self.lines = []
        self.err = []
        threading.Thread(target=lambda: self.err.extend(self.proc.stderr), daemon=True).start()
        ready = threading.Event()

        def read_stdout():
            for raw in self.proc.stdout:
                line = raw.decode().rstrip("\n")
                self.lines.append(line)
                m = re.match(r"replica \d+ http://127\.0\.0\.1:(\d+) pid (\d+)", line)
                if m:
                    self.replicas.append((int(m.group(1)), int(m.group(2))))
                m = re.match(r"fingerprint (\S+)", line)
                if m:
                    self.fingerprint = m.group(1)
                m = re.match(r"nginx http://\S+ pid (\d+)", line)
                if m:
                    self.nginx_pid = int(m.group(1))
                if line == "ready":
                    ready.set()
            ready.set()
        threading.Thread(target=read_stdout, daemon=True).start()
        if not ready.wait(60) or self.proc.poll() is not None or len(self.replicas) != 3:
            out = "\n".join(self.lines) + "\n" + b"".join(self.err).decode("utf-8", "replace")
            self.stop()
            raise RuntimeError(f"run-replicas.sh did not come up:\n{out[-4000:]}")

    def stop(self):
        """SIGTERM to the script (it stops nginx and drains the replicas); SIGKILL to its
        process group if it hangs."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        try:
            os.killpg(self.proc.pid, 0)
            leftover = True
        except ProcessLookupError:
            leftover = False
        if leftover:
            os.killpg(self.proc.pid, signal.SIGKILL)
        return self.proc.returncode, leftover

    def access_log_upstreams(self):
        try:
            with open(os.path.join(self.prefix, "logs", "access.log")) as f:
                text = f.read()
        except OSError:
            return []
        return [int(m) for m in re.findall(r'"POST /v1/completions[^"]*" 200 .*upstream=127\.0\.0\.1:(\d+)', text)]


def companion_loop(port, stop, counter, lock, rng_seed):
    rng = random.Random(rng_seed)
    while not stop.is_set():
        body = {"model": "stories260K", "prompt": rng.choice(COMPANION_PROMPTS),
                "max_tokens": rng.randint(8, 96), "temperature": rng.choice([0, 0.7, 1.3]),
                "seed": rng.randint(0, 1 << 30), "n": rng.choice([1, 1, 2]),
                "stream": rng.random() < 0.5}
        try:
            status, _ = request(port, "POST", "/v1/completions", body)
            if status == 200:
                with lock:
                    counter[port] = counter.get(port, 0) + 1
        except OSError:
            pass


def run_probes(targets, results, parallel):
    """Sends every probe REPEATS times to every target; parallel threads at once."""
    jobs = [(name, label, port) for name in PROBES for label, port in targets
            for _ in range(REPEATS)]
    random.Random(len(jobs)).shuffle(jobs)
    lock = threading.Lock()

    def worker(chunk):
        for name, label, port in chunk:
            body = dict(PROBES[name], model="stories260K")
            try:
                out = post_completion(port, body)
            except (OSError, RuntimeError, ValueError) as e:
                out = f"ERROR {e}".encode()
            with lock:
                results.setdefault(name, []).append((label, out))

    threads = [threading.Thread(target=worker, args=(jobs[i::parallel],)) for i in range(parallel)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def main():
    stet, model = find_material()
    t0 = time.time()
    cluster = Cluster(stet, model)
    try:
        ports = [p for p, _ in cluster.replicas]
        targets = [("nginx", cluster.port)] + [(f"replica{i + 1}", p) for i, p in enumerate(ports)]
        print(f"cluster up in {time.time() - t0:.1f} s: nginx :{cluster.port}, replicas {ports}, "
              f"{cluster.fingerprint}")

        # Every replica reports the fingerprint the script checked.
        for label, port in targets:
            status, data = request(port, "GET", "/v1/models")
            fp = json.loads(data)["data"][0].get("system_fingerprint") if status == 200 else None
            check(fp == cluster.fingerprint, f"{label} /v1/models fingerprint {fp} != {cluster.fingerprint}")

        results = {}
        t1 = time.time()
        # Phase 1: quiet replicas, probes one at a time.
        run_probes(targets, results, parallel=1)
        # Phase 2: replica i carries COMPANIONS[i] concurrent background loops; the
        # probes themselves run 4 at a time, so they are batched with each other too.
        stop = threading.Event()
        done, lock = {}, threading.Lock()
        loops = [threading.Thread(target=companion_loop, args=(port, stop, done, lock, 100 * i + j),
                                  daemon=True)
                 for i, port in enumerate(ports) for j in range(COMPANIONS[i])]
        for t in loops:
            t.start()
        time.sleep(0.5)
        t2 = time.time()
        run_probes(targets, results, parallel=4)
        stop.set()
        print(f"probes: quiet {t2 - t1:.1f} s, under load {time.time() - t2:.1f} s")
        for t in loops:
            t.join(timeout=60)
        print(f"companion requests completed under load: "
              f"{ {f'replica{i + 1}': done.get(p, 0) for i, p in enumerate(ports)} }")
        for i, port in enumerate(ports):
            if COMPANIONS[i]:
                check(done.get(port, 0) >= COMPANIONS[i],
                      f"replica{i + 1} finished only {done.get(port, 0)} companion requests")

        for name, outs in results.items():
            ref_label, ref = outs[0]
            check(not ref.startswith(b"ERROR"), f"{name}: {ref_label}: {ref[:300]!r}")
            by_target = {}
            for label, out in outs:
                by_target.setdefault(label, set()).add(out)
            bad = [(label, out) for label, out in outs if out != ref]
            check(not bad, f"{name}: {len(bad)} of {len(outs)} answers differ from {ref_label}'s first "
                           f"(from {sorted({label for label, _ in bad})}); first differences: "
                           + " | ".join(f"{label} {diff(ref, out)}" for label, out in bad[:2]))
            print(f"{name}: {len(outs)} answers from {sorted(by_target)}: "
                  f"{'identical' if all(o == ref for _, o in outs) else 'DIFFERENT'}")
        # The greedy probe streamed through nginx says the same as non-streamed.
        stream_ref = json.loads(results["stream_greedy"][0][1])
        plain_ref = json.loads(results["greedy"][0][1])
        check(stream_ref["texts"].get("0") == plain_ref["choices"][0]["text"],
              "streamed text differs from the non-streamed text")
        check(stream_ref["logprobs"].get("0", {}).get("token_logprobs")
              == plain_ref["choices"][0]["logprobs"]["token_logprobs"],
              "streamed logprobs differ from the non-streamed ones")
        check(len(plain_ref["choices"][0]["logprobs"]["tokens"]) > 10,
              "the greedy probe generated almost nothing")

        # Round-robin really spread the nginx requests over all three replicas.
        ups = cluster.access_log_upstreams()
        counts = {p: ups.count(p) for p in ports}
        print(f"nginx upstream choices for /v1/completions: {counts}")
        check(all(counts[p] > 0 for p in ports), f"nginx did not use every replica: {counts}")
    finally:
        pids = [pid for _, pid in cluster.replicas] + ([cluster.nginx_pid] if cluster.nginx_pid else [])
        rc, leftover = cluster.stop()
        alive = []
        for pid in pids:
            try:
                os.kill(pid, 0)
                alive.append(pid)
            except ProcessLookupError:
                pass
        check(not leftover and not alive,
              f"processes left after run-replicas.sh stopped: group={leftover} pids={alive}")
        check(rc in (0, 143), f"run-replicas.sh exited {rc} on SIGTERM")
        shutil.rmtree(cluster.prefix, ignore_errors=True)

    print(f"{'FAILED' if failures else 'ok'} in {time.time() - t0:.1f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

"""llama.cpp's multi-process peer for bench/tp: its RPC backend (ggml-rpc-server, built by
`bench/build_llamacpp.sh --rpc`). llama.cpp splits by layers (half the layers in the
rpc-server process, -ngl), not by rows: prefill and decode speed side by side with one
llama.cpp process, and whether its greedy text through RPC equals its own one-process text.
"""
import csv
import io
import os
import socket
import subprocess
import time

from benchutil import log

RPC_DIR = os.path.expanduser(os.environ.get("STET_LLAMACPP_RPC_DIR",
                                            "~/.cache/stet/llama.cpp-0.3.36-rpc"))
PROMPT = "The history of the lighthouse begins"


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _bench(exe, model, args, threads, rpc):
    cmd = [exe, "-m", model, "-p", str(args.prompt), "-n", str(args.gen), "-r", str(args.reps),
           "-t", str(threads), "-o", "csv"]
    if rpc:
        cmd += ["--rpc", rpc, "-ngl", str(args.rpc_layers)]
    log(" ".join(cmd))
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=1800).stdout
    speeds = {}
    for row in csv.DictReader(io.StringIO(out)):
        speeds["pp" if int(row["n_gen"]) == 0 else "tg"] = float(row["avg_ts"])
    return speeds


def _text(exe, model, threads, rpc, layers):
    cmd = [exe, "-m", model, "-p", PROMPT, "-n", "24", "--temp", "0", "-t", str(threads),
           "-no-cnv", "--no-warmup"]
    if rpc:
        cmd += ["--rpc", rpc, "-ngl", str(layers)]
    log(" ".join(cmd))
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, stdin=subprocess.DEVNULL)
    return r.stdout.strip() if r.returncode == 0 else None


def measure(args, model):
    """Rows like bench/tp's measure() (pp, tg, text_equal), or None without the RPC build."""
    bench_exe = os.path.join(RPC_DIR, "bin", "llama-bench")
    server_exe = os.path.join(RPC_DIR, "bin", "ggml-rpc-server")
    completion_exe = os.path.join(RPC_DIR, "bin", "llama-completion")
    if not all(os.path.exists(p) for p in (bench_exe, server_exe, completion_exe)):
        return None
    port = _free_port()
    server = subprocess.Popen([server_exe, "-t", "1", "-p", str(port)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    rpc = f"127.0.0.1:{port}"
    try:
        for _ in range(100):  # until it listens
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        one = _bench(bench_exe, model, args, 2, None)
        two = _bench(bench_exe, model, args, 1, rpc)
        solo_text = _text(completion_exe, model, 2, None, 0)
        rpc_text = _text(completion_exe, model, 1, rpc, args.rpc_layers)
    finally:
        server.terminate()
        server.wait(timeout=30)
    same = solo_text is not None and solo_text == rpc_text
    return [dict(name="llama.cpp, 1 process -t 2", pp=one.get("pp", 0), tg=one.get("tg", 0)),
            dict(name=f"llama.cpp RPC, 2 processes -t 1 ({args.rpc_layers} layers remote)",
                 pp=two.get("pp", 0), tg=two.get("tg", 0), same_text=same,
                 texts=(solo_text, rpc_text))]

"""End-to-end: `stet proxy` commits an exchange before the client can see it
complete (a non-streamed body, or a stream's [DONE]), so kill -9 of the proxy
under load loses no acknowledged exchange. 8 clients (streamed and not, chat
and completions) go through the proxy to an upstream; the proxy is sent
SIGKILL after 300 acknowledged answers; the store must pass integrity_check
and hold every acknowledged exchange, with the text the client received.
"""
import json
import os
import shutil
import sqlite3
import sys
import tempfile
import threading
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_support as sup  # noqa: E402
import fake_upstream  # noqa: E402

WORKERS = 8
KILL_AFTER = 300


class ProxySurvivesKill9(unittest.TestCase):
    def test_kill9_under_load_loses_no_acknowledged_exchange(self):
        tmp = tempfile.mkdtemp(prefix="stet-e2e-proxy-kill-")
        srv = fake_upstream.serve()
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        upstream = f"http://127.0.0.1:{srv.server_address[1]}"
        db = os.path.join(tmp, "kill.db")
        proxy = sup.StetProxy(upstream, db, "--no-log", "--logprob-sample", "0.3")
        acked = {}
        lock = threading.Lock()
        stop = threading.Event()
        failures = []

        def worker(k):
            i = 0
            while not stop.is_set():
                i += 1
                stream = (k + i) % 2 == 0
                chat = (k + i) % 3 != 0
                body = {"model": "m", "max_tokens": 3 + (k * 5 + i) % 20, "stream": stream}
                if chat:
                    body["messages"] = [{"role": "user", "content": f"kill {k} {i}"}]
                else:
                    body["prompt"] = f"kill {k} {i}"
                path = "/v1/chat/completions" if chat else "/v1/completions"
                req = urllib.request.Request(proxy.url + path, data=json.dumps(body).encode(),
                                             headers={"Content-Type": "application/json"})
                try:
                    with urllib.request.urlopen(req, timeout=30) as r:
                        xid = r.headers["X-Stet-Exchange-Id"]
                        raw = r.read().decode()
                except Exception:  # killed mid-request: not acknowledged
                    continue
                if stream:
                    if "data: [DONE]" not in raw:
                        continue
                    text = ""
                    for block in raw.split("\n\n"):
                        if block.startswith("data: {"):
                            for c in json.loads(block[6:])["choices"]:
                                text += (c.get("delta") or {}).get("content") or c.get("text") or ""
                else:
                    c = json.loads(raw)["choices"][0]
                    text = c["message"]["content"] if chat else c["text"]
                with lock:
                    acked[xid] = text

        threads = [threading.Thread(target=worker, args=(k,), daemon=True) for k in range(WORKERS)]
        t0 = time.time()
        for t in threads:
            t.start()
        while len(acked) < KILL_AFTER and time.time() - t0 < 120:
            time.sleep(0.01)
        proxy.kill()  # SIGKILL
        stop.set()
        for t in threads:
            t.join(60)
        srv.shutdown()
        srv.server_close()
        try:
            self.assertFalse(failures)
            self.assertGreaterEqual(len(acked), KILL_AFTER)
            con = sqlite3.connect(db)
            self.assertEqual(con.execute("PRAGMA integrity_check").fetchone()[0], "ok")
            stored = {}
            for (text,) in con.execute("SELECT record FROM exchanges"):
                r = json.loads(text)
                c = r["response"]["choices"][0]
                stored[r["id"]] = c["message"]["content"] if "message" in c else c["text"]
            con.close()
            missing = [x for x in acked if x not in stored]
            self.assertEqual(missing, [], f"{len(missing)} acknowledged exchanges lost")
            for xid, text in acked.items():
                self.assertEqual(stored[xid], text, xid)
            print(f"\nkill -9 after {len(acked)} acknowledged exchanges ({time.time() - t0:.1f} s of load): "
                  f"all present, {len(stored) - len(acked)} more recorded than acknowledged", file=sys.stderr)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()

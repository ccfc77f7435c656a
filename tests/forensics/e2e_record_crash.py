"""End-to-end: a record is committed before its answer is sent, so it survives
kill -9. `stet serve --record` runs under concurrent load (streamed and
non-streamed completions, chat); the server is killed with SIGKILL mid-load;
then the database must be consistent (integrity_check), hold every request
whose answer the client received in full, hold it with the text the client
saw, and still replay identically against a fresh server.
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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_support as sup  # noqa: E402

WORKERS = 8
KILL_AFTER_COMPLETED = 400


class RecordSurvivesKill9(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="stet-e2e-kill-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_kill9_under_load(self):
        model = sup.stories_path()
        db = os.path.join(self.tmp, "crash.db")
        server = sup.StetServer(model, "--record", db, threads=1)
        t0 = time.time()
        completed = {}  # id -> text the client received (all choices joined)
        lock = threading.Lock()
        stop = threading.Event()
        failures = []

        def worker(k):
            i = 0
            while not stop.is_set():
                i += 1
                stream = (k + i) % 2 == 0
                chat = (k + i) % 5 == 0
                body = {"model": server.model, "max_tokens": 4 + (k * 7 + i * 3) % 60,
                        "temperature": 0.9, "stream": stream}
                if chat:
                    body["messages"] = [{"role": "user", "content": f"Story {k} {i}"}]
                else:
                    body["prompt"] = f"Once upon a time {k} {i}"
                path = "/v1/chat/completions" if chat else "/v1/completions"
                try:
                    status, resp = server.post(path, body, timeout=30)
                except Exception:  # the server was killed mid-request: not acknowledged
                    continue
                if status != 200:
                    failures.append((status, resp))
                    continue
                if stream:
                    events, done = sup.sse_events(resp)
                    if not done:
                        continue  # cut off before [DONE]: not acknowledged
                    rid = events[0]["id"]
                    text = "".join((c["delta"].get("content", "") if chat else c["text"])
                                   for e in events for c in e["choices"])
                else:
                    rid = resp["id"]
                    text = "".join(c["message"]["content"] if chat else c["text"] for c in resp["choices"])
                with lock:
                    completed[rid] = text

        threads = [threading.Thread(target=worker, args=(k,), daemon=True) for k in range(WORKERS)]
        for t in threads:
            t.start()
        deadline = time.time() + 90
        while time.time() < deadline:
            with lock:
                if len(completed) >= KILL_AFTER_COMPLETED:
                    break
            time.sleep(0.05)
        t_kill = time.time()
        server.kill()  # SIGKILL, mid-load
        stop.set()
        for t in threads:
            t.join(60)
        with lock:
            acked = dict(completed)
        self.assertEqual(failures, [])
        self.assertGreaterEqual(len(acked), KILL_AFTER_COMPLETED // 2, "too few requests completed before the kill")

        self.assertTrue(os.path.exists(db + "-wal"), "WAL file expected after kill -9")
        con = sqlite3.connect(db)
        self.assertEqual(con.execute("PRAGMA integrity_check").fetchone()[0], "ok")
        rows = dict(con.execute("SELECT id, record FROM records"))
        n_rows = con.execute("SELECT COUNT(*) FROM records").fetchone()[0]
        con.close()
        missing = sorted(set(acked) - set(rows))
        self.assertEqual(missing, [], f"{len(missing)} acknowledged request(s) missing after kill -9")
        for rid, text in acked.items():
            r = json.loads(rows[rid])
            self.assertEqual(r["id"], rid)
            self.assertEqual("".join(c["text"] for c in r["choices"]), text, rid)
        # Rows beyond the acknowledged ones were recorded but their answers were cut off by the kill.
        print(f"kill -9 after {len(acked)} acknowledged answers ({WORKERS} clients): {n_rows} records, "
              f"all {len(acked)} acknowledged present, {n_rows - len(acked)} recorded but not delivered, "
              f"integrity_check ok ({t_kill - t0:.1f} s of load)")

        # The store is still usable: export and replay it.
        jl = os.path.join(self.tmp, "out.jsonl")
        sup.run_stet("record", "export", db, "-o", jl, check=0)
        self.assertEqual(sum(1 for x in sup.read(jl).splitlines() if x.strip()), n_rows)
        with sup.StetServer(model, threads=1) as s:
            p = sup.run_stet("replay", db, "--endpoint", s.url, "-c", "4")
        self.assertEqual(p.returncode, 0, p.stdout[-3000:] + p.stderr[-2000:])
        self.assertIn(f"{n_rows} of {n_rows} identical", p.stdout)


if __name__ == "__main__":
    unittest.main()

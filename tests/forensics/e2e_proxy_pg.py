"""End-to-end: the PostgreSQL exchange store, on a private server started here
(pg_support.py). Two `stet proxy` instances write one store at once; `stet
replay` and `stet drift watch/report` work on it as on SQLite; kill -9 of a
proxy under load loses no acknowledged exchange; --retain deletes old
exchanges (and their snapshots) on both stores.
"""
import json
import os
import shutil
import sys
import tempfile
import threading
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_support as sup  # noqa: E402
import fake_upstream  # noqa: E402
import pg_support  # noqa: E402


def load(url, n, tag, acked, lock, stop=None):
    for i in range(n):
        if stop is not None and stop.is_set():
            return
        stream = i % 2 == 0
        body = {"model": "m", "max_tokens": 4, "stream": stream,
                "messages": [{"role": "system", "content": f"sys {i % 2}"}, {"role": "user", "content": f"{tag} {i}"}]}
        req = urllib.request.Request(url + "/v1/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                xid = r.headers["X-Stet-Exchange-Id"]
                raw = r.read().decode()
        except Exception:
            continue
        if stream and "data: [DONE]" not in raw:
            continue
        with lock:
            acked.add(xid)


class PostgresStore(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.pg = pg_support.PgCluster()
        cls.tmp = tempfile.mkdtemp(prefix="stet-e2e-pg-")
        cls.srv = fake_upstream.serve()
        threading.Thread(target=cls.srv.serve_forever, daemon=True).start()
        cls.fake = f"http://127.0.0.1:{cls.srv.server_address[1]}"

    @classmethod
    def tearDownClass(cls):
        cls.srv.shutdown()
        cls.srv.server_close()
        cls.pg.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def ids(self, db):
        return set(self.pg.psql(db, "SELECT id FROM exchanges").split())

    def test_two_proxies_one_store_replay_and_drift(self):
        url = self.pg.database("shared")
        acked, lock = set(), threading.Lock()
        with sup.StetProxy(self.fake, url, "--no-log") as a, sup.StetProxy(self.fake, url, "--no-log") as b:
            threads = [threading.Thread(target=load, args=(p.url, 12, f"{k}", acked, lock))
                       for k, p in enumerate([a, b, a, b])]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
        self.assertEqual(len(acked), 48)
        self.assertEqual(self.ids("shared"), acked)
        self.assertEqual(self.pg.psql("shared", "SELECT COUNT(*) FROM snapshots").strip(), "2")
        self.assertEqual(self.pg.psql("shared", "SELECT value FROM stet_meta WHERE key = 'schema'").strip(),
                         "stet.exchanges/1")
        out = os.path.join(self.tmp, "replay.json")
        p = sup.run_stet("replay", url, "--endpoint", self.fake, "-c", 4, "--json", out, timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout[-2000:] + p.stderr)
        self.assertEqual(sup.read_json(out)["identical"], 48)
        p = sup.run_stet("replay", url, "--endpoint", self.fake, "--since", "not a time", timeout=60)
        self.assertEqual(p.returncode, 2)
        prompts = os.path.join(self.tmp, "canary.txt")
        with open(prompts, "w") as f:
            f.write("one\ntwo\n")
        p = sup.run_stet("drift", "watch", "--endpoint", self.fake, "-m", "m", "--canary", prompts, "--store", url,
                         "--every", "0s", "--rounds", 3, "--baseline-runs", 4, "--repeats", 2, timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        p = sup.run_stet("drift", "report", url, "--baseline-runs", 4, timeout=60)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("0 of 2 tested round(s) flagged", p.stdout)

    def test_kill9_loses_no_acknowledged_exchange(self):
        url = self.pg.database("crash")
        proxy = sup.StetProxy(self.fake, url, "--no-log")
        acked, lock, stop = set(), threading.Lock(), threading.Event()
        threads = [threading.Thread(target=load, args=(proxy.url, 10 ** 6, f"k{k}", acked, lock, stop), daemon=True)
                   for k in range(8)]
        t0 = time.time()
        for t in threads:
            t.start()
        while len(acked) < 200 and time.time() - t0 < 120:
            time.sleep(0.01)
        proxy.kill()
        stop.set()
        for t in threads:
            t.join(60)
        stored = self.ids("crash")
        self.assertGreaterEqual(len(acked), 200)
        self.assertEqual(acked - stored, set(), "acknowledged exchanges lost")
        print(f"\npostgres: kill -9 after {len(acked)} acknowledged: all stored ({len(stored) - len(acked)} extra)",
              file=sys.stderr)

    def test_retention_on_both_stores(self):
        for store in [self.pg.database("retain"), os.path.join(self.tmp, "retain.db")]:
            acked, lock = set(), threading.Lock()
            with sup.StetProxy(self.fake, store, "--no-log") as p:
                load(p.url, 4, "old", acked, lock)
            time.sleep(2.5)
            with sup.StetProxy(self.fake, store, "--retain", "2s") as p:
                deadline = time.time() + 10
                while time.time() < deadline and not any("retention: deleted 4" in ln for ln in p.lines):
                    time.sleep(0.1)
                load(p.url, 2, "new", set(), lock)
                lines = list(p.lines)
            self.assertTrue(any("retention: deleted 4 exchange(s)" in ln for ln in lines), lines)
            if store.startswith("postgresql:"):
                self.assertEqual(self.pg.psql("retain", "SELECT COUNT(*) FROM exchanges").strip(), "2")
            else:
                self.assertEqual(len(sup.exchanges(store)), 2)


if __name__ == "__main__":
    unittest.main()

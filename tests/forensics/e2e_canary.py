"""End-to-end: canary drift monitoring. `stet drift watch` against `stet serve`
(a perfectly stable endpoint: no round may be flagged, p = 1), against
fake_upstream.py with stationary noise on every logprob (the measured false
alarm rate of the permutation test at alpha 0.05), and against simulated
backend changes (a logprob shift, a new system_fingerprint, a new answered
model) that must be flagged; `stet drift report --html` is well-formed XML;
`stet proxy --canary` records rounds in the proxy's own store.
"""
import json
import os
import shutil
import sys
import tempfile
import threading
import time
import unittest
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_support as sup  # noqa: E402
import fake_upstream  # noqa: E402

PROMPTS = "Once upon a time\nThe little dog\nLily went to the park\n"


class Canary(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="stet-e2e-canary-")
        cls.prompts = os.path.join(cls.tmp, "canary.txt")
        with open(cls.prompts, "w") as f:
            f.write(PROMPTS)
        cls.srv = fake_upstream.serve()
        threading.Thread(target=cls.srv.serve_forever, daemon=True).start()
        cls.fake = f"http://127.0.0.1:{cls.srv.server_address[1]}"

    @classmethod
    def tearDownClass(cls):
        cls.srv.shutdown()
        cls.srv.server_close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def watch(self, endpoint, store, rounds, *extra, model="m"):
        out = os.path.join(self.tmp, os.path.basename(store) + ".json")
        p = sup.run_stet("drift", "watch", "--endpoint", endpoint, "-m", model, "--canary", self.prompts,
                         "--store", store, "--every", "0s", "--rounds", rounds, "--max-tokens", 8,
                         "--json", out, *extra, timeout=600)
        return p, sup.read_json(out) if os.path.exists(out) else None

    def test_stable_endpoint_is_never_flagged(self):
        with sup.StetServer(sup.stories_path(), threads=1) as s:
            store = os.path.join(self.tmp, "stet.db")
            p, an = self.watch(s.url, store, 6, "--alpha", "0.05", model=s.model)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        tested = [r for r in an["rounds"] if not r["baseline"]]
        self.assertEqual(len(tested), 5)
        for r in tested:
            self.assertEqual(r["flags"], [])
            self.assertEqual(r["p_value"], 1.0)  # bitwise identical logprobs: T = 0 for every subset
            self.assertGreater(r["positions"], 0)
            self.assertEqual(r["fingerprints"], [s.fingerprint])
        print(f"\nstet serve: {sum(bool(r['flags']) for r in tested)} of {len(tested)} rounds flagged",
              file=sys.stderr)

    def test_noisy_but_stationary_endpoint_false_alarm_rate(self):
        fake_upstream.STATE.update(noise=0.2, shift=0.0)
        try:
            store = os.path.join(self.tmp, "noisy.db")
            p, an = self.watch(self.fake, store, 31, "--alpha", "0.05")
        finally:
            fake_upstream.STATE.update(noise=0.0)
        tested = [r for r in an["rounds"] if not r["baseline"]]
        self.assertEqual(len(tested), 30)
        flagged = sum(bool(r["flags"]) for r in tested)
        for r in tested:
            self.assertEqual(set(r["flags"]) - {"logprobs"}, set())
            self.assertTrue(0 < r["p_value"] <= 1)
        # Exact test at alpha 0.05: P(flag) = 11/220 per round under no drift; 8 or more of 30 has
        # probability < 1e-4 even with independent rounds.
        self.assertLessEqual(flagged, 7, [r["p_value"] for r in tested])
        print(f"\nnoisy stationary fake upstream: {flagged} of {len(tested)} rounds flagged at alpha 0.05",
              file=sys.stderr)

    def test_changes_are_flagged(self):
        store = os.path.join(self.tmp, "changes.db")
        fake_upstream.STATE.update(noise=0.05, shift=0.0)
        try:
            p, an = self.watch(self.fake, store, 2)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            fake_upstream.STATE.update(shift=-0.3)
            p, an = self.watch(self.fake, store, 1)
            self.assertEqual(p.returncode, 1, p.stdout)
            self.assertEqual(an["rounds"][-1]["flags"], ["logprobs"])
            self.assertLessEqual(an["rounds"][-1]["p_value"], 0.01)
            fake_upstream.STATE.update(shift=0.0, fp="fp_fake0002", model="fake-model-2024-06-01")
            p, an = self.watch(self.fake, store, 1)
            self.assertEqual(p.returncode, 1)
            self.assertEqual(an["rounds"][-1]["flags"], ["fingerprint", "model"])
        finally:
            fake_upstream.STATE.update(noise=0.0, shift=0.0, fp="fp_fake0001", model="fake-model-2024-01-01")
        html = os.path.join(self.tmp, "report.html")
        p = sup.run_stet("drift", "report", store, "--html", html, timeout=60)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("2 of 3 tested round(s) flagged", p.stdout)
        root = ET.parse(html).getroot()
        self.assertGreaterEqual(sum(1 for e in root.iter() if e.tag.endswith("svg")), 2)

    def test_proxy_runs_the_canary_into_its_store(self):
        store = os.path.join(self.tmp, "proxy-canary.db")
        with sup.StetProxy(self.fake, store, "--no-log", "--canary", self.prompts, "--canary-every", "1s",
                           "--canary-model", "m", "--canary-baseline-runs", "2", "--canary-repeats", "1") as p:
            deadline = time.time() + 30
            while time.time() < deadline:
                if sum(r["kind"] == "canary" for r in sup.exchanges(store)) >= 9:
                    break
                time.sleep(0.2)
        recs = [r for r in sup.exchanges(store) if r["kind"] == "canary"]
        self.assertGreaterEqual(len(recs), 9)
        self.assertTrue(all(r["response"]["choices"][0]["logprobs"] for r in recs))
        p = sup.run_stet("drift", "report", store, "--baseline-runs", "2", timeout=60)
        self.assertIn(p.returncode, (0, 1), p.stderr)
        self.assertIn("tested round(s) flagged", p.stdout)

    def test_bad_command_lines(self):
        for args in [["watch", "--endpoint", "http://h", "-m", "m", "--canary", self.prompts, "--store", "x.db",
                      "--every", "soon"],
                     ["watch", "--endpoint", "http://h", "-m", "m", "--canary", "/nonexistent", "--store", "x.db"],
                     ["report", os.path.join(self.tmp, "nonexistent.db")]]:
            p = sup.run_stet("drift", *args, timeout=30)
            self.assertEqual(p.returncode, 2, (args, p.stdout, p.stderr))


if __name__ == "__main__":
    unittest.main()

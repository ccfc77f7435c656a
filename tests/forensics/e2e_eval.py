"""End-to-end: `stet eval` against `stet serve` on stories260K with a tiny
dataset. Greedy: every item passes always or never (no flaky item), and the
Wilson intervals equal the textbook formula. Sampled with per-repeat seeds:
the flaky flags match the pass rates, every interval holds its estimate, and
— because the server is batch invariant and seeded — a second run at another
concurrency scores identically, which `eval compare` reports as no difference.
"""
import json
import math
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_support as sup  # noqa: E402

DATASET = [
    {"id": "story", "prompt": "Once upon a time", "expected": "was", "metric": "contains"},
    {"id": "never", "prompt": "Once upon a time", "expected": "zebra spaceship", "metric": "contains"},
    {"id": "word", "prompt": "The cat", "expected": "^\\s*\\S", "metric": "regex"},
    {"id": "exact", "prompt": "One day", "expected": "nope", "metric": "exact"},
    {"id": "lily", "prompt": "Lily and Ben", "expected": "Lily", "metric": "contains", "max_tokens": 24},
]


def wilson(k, n, z=1.959963984540054):
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return (0.0 if k == 0 else c - h, 1.0 if k == n else c + h)


class EvalEndToEnd(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="stet-e2e-eval-")
        cls.dataset = os.path.join(cls.tmp, "data.jsonl")
        with open(cls.dataset, "w") as f:
            for item in DATASET:
                f.write(json.dumps(item) + "\n")
        cls.server = sup.StetServer(sup.stories_path(), threads=2)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def eval(self, name, *args):
        out = os.path.join(self.tmp, name)
        s = self.server
        sup.run_stet("eval", "--endpoint", s.url, "-m", s.model, "--dataset", self.dataset, "--max-tokens", "16",
                     "--out", out, "--bootstrap", "2000", *args, check=0)
        self.assertTrue(os.path.exists(os.path.join(out, "report.html")))
        return sup.read_json(os.path.join(out, "results.json"))

    def check_sane(self, res, repeats):
        s = res["summary"]
        self.assertEqual(s["errors"], 0)
        for it in res["items"]:
            self.assertEqual(it["runs"], repeats)
            k = it["passes"]
            self.assertAlmostEqual(it["pass_rate"], k / repeats)
            lo, hi = it["wilson95"]
            wlo, whi = wilson(k, repeats)
            self.assertAlmostEqual(lo, wlo, places=9)
            self.assertAlmostEqual(hi, whi, places=9)
            self.assertTrue(0 <= lo <= it["pass_rate"] <= hi <= 1)
            self.assertEqual(it["flaky"], 0 < k < repeats, it)
            self.assertEqual(it["fingerprints"], [self.server.fingerprint])
            for r in it["results"]:
                self.assertEqual(r["fingerprint"], self.server.fingerprint)
        self.assertEqual(sorted(s["flaky"]), sorted(it["id"] for it in res["items"] if it["flaky"]))
        self.assertEqual(s["runs_scored"], repeats * len(DATASET))
        self.assertAlmostEqual(s["pooled_rate"], s["passes"] / s["runs_scored"])
        wlo, whi = wilson(s["passes"], s["runs_scored"])
        self.assertAlmostEqual(s["wilson95"][0], wlo, places=9)
        self.assertAlmostEqual(s["wilson95"][1], whi, places=9)
        self.assertAlmostEqual(s["mean_item_rate"], sum(it["pass_rate"] for it in res["items"]) / len(DATASET))
        blo, bhi = s["bootstrap95"]
        self.assertTrue(0 <= blo <= s["mean_item_rate"] <= bhi <= 1, s)
        return s

    def test_greedy_has_no_flaky_items_and_textbook_intervals(self):
        res = self.eval("greedy", "--repeats", "5", "-c", "3", "--temperature", "0")
        s = self.check_sane(res, 5)
        rates = {it["id"]: it["pass_rate"] for it in res["items"]}
        self.assertEqual(rates["never"], 0.0)
        self.assertEqual(rates["exact"], 0.0)
        self.assertEqual(rates["story"], 1.0)
        self.assertEqual(rates["word"], 1.0)
        self.assertEqual(s["flaky"], [])
        # Wilson 5/5 = [0.5655, 1], 0/5 = [0, 0.4345] (textbook).
        by_id = {it["id"]: it for it in res["items"]}
        self.assertAlmostEqual(by_id["story"]["wilson95"][0], 0.5655, places=4)
        self.assertAlmostEqual(by_id["never"]["wilson95"][1], 0.4345, places=4)
        self.assertEqual(s["passes"], 10)
        print("eval greedy: " + ", ".join(f"{k}={v}" for k, v in rates.items()) +
              f"; pooled {s['pooled_rate']} Wilson {[round(x, 4) for x in s['wilson95']]}, "
              f"item mean bootstrap {s['bootstrap95']}")

    def test_sampled_eval_is_sane_and_reproducible(self):
        a = self.eval("t1-c1", "--repeats", "6", "-c", "1", "--temperature", "1.5", "--seed-policy", "per-repeat",
                      "--seed", "11")
        b = self.eval("t1-c4", "--repeats", "6", "-c", "4", "--temperature", "1.5", "--seed-policy", "per-repeat",
                      "--seed", "11")
        sa = self.check_sane(a, 6)
        self.check_sane(b, 6)
        outs_a = {it["id"]: [r["output"] for r in it["results"]] for it in a["items"]}
        outs_b = {it["id"]: [r["output"] for r in it["results"]] for it in b["items"]}
        self.assertEqual(outs_a, outs_b)  # seeded sampling does not depend on concurrency
        # Different repeats really were different samples.
        self.assertGreater(len(set(outs_a["story"])), 1)
        cmp_json = os.path.join(self.tmp, "cmp.json")
        p = sup.run_stet("eval", "compare", os.path.join(self.tmp, "t1-c1", "results.json"),
                         os.path.join(self.tmp, "t1-c4", "results.json"), "--json", cmp_json, check=0)
        self.assertIn("no detectable difference", p.stdout)
        verdict = [line for line in p.stdout.splitlines() if line.startswith("verdict:")]
        print(f"eval T=1.5 per-repeat seeds: flaky {sa['flaky']}, pooled {sa['pooled_rate']:.3f} Wilson "
              f"{[round(x, 3) for x in sa['wilson95']]}; concurrency 1 vs 4: identical outputs; {verdict}")


if __name__ == "__main__":
    unittest.main()

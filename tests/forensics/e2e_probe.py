"""End-to-end: `stet probe` against `stet serve` on stories260K finds nothing
in invariant mode and finds the divergence in adaptive mode (same model, same
probe, same companion load).

stories260K is so small (dim 64) that adaptive split-K moves its logits only
in the last bits, which rarely flips a greedy token; the probe compares every
logprob bit for bit, so it still sees the logits follow the batch.
"""
import json
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_support as sup  # noqa: E402

PROBE = ["-p", "Once upon a time", "-n", "6", "-c", "1,4,8", "--max-tokens", "24"]


class ProbeInvariantVsAdaptive(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="stet-e2e-probe-")
        cls.model = sup.stories_path()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def probe(self, numerics):
        out = os.path.join(self.tmp, numerics + ".json")
        with sup.StetServer(self.model, "--numerics", numerics, threads=1) as s:
            p = sup.run_stet("probe", "--endpoint", s.url, "-m", s.model, *PROBE, "--json", out)
            fp = s.fingerprint
        return p, sup.read_json(out), fp

    def test_invariant_finds_nothing(self):
        p, r, fp = self.probe("invariant")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(r["verdict"], "deterministic at all tested levels")
        self.assertTrue(r["logprobs_used"])
        for lv in r["levels"]:
            self.assertEqual(lv["analysis"]["runs"], 6)
            self.assertEqual(lv["analysis"]["distinct_outputs"], 1, lv)
            self.assertEqual(lv["analysis"]["distinct_logprob_traces"], 1, lv)
            self.assertEqual(lv["analysis"]["fingerprints"], [fp])
        self.assertGreater(sum(lv["companion_workers"] for lv in r["levels"]), 0)
        print("invariant: " + ", ".join(f"c={lv['concurrency']}: {lv['analysis']['distinct_outputs']} output / "
                                        f"{lv['analysis']['distinct_logprob_traces']} trace" for lv in r["levels"]))

    def test_adaptive_diverges(self):
        p, r, fp = self.probe("adaptive")
        self.assertTrue(fp.endswith("-adaptive"), fp)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertTrue(r["verdict"].startswith("nondeterministic"), r["verdict"])
        traces = {lv["concurrency"]: lv["analysis"]["distinct_logprob_traces"] for lv in r["levels"]}
        outputs = {lv["concurrency"]: lv["analysis"]["distinct_outputs"] for lv in r["levels"]}
        self.assertEqual(traces[1], 1)  # alone, every run sees the same batch shapes
        self.assertGreater(max(traces[4], traces[8]), 1, traces)  # under load the logits follow the batch
        print(f"adaptive ({fp}): distinct outputs {outputs}, distinct logprob traces {traces}; "
              f"verdict: {r['verdict']}")


if __name__ == "__main__":
    unittest.main()

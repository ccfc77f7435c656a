"""End-to-end: `stet drift` flags a quantization change and not a rerun.
stories260K is re-encoded twice with `stet quantize` (Q8_0 and Q4_1). The
baseline is captured from the Q8_0 model; a second Q8_0 server with other
threads and batch settings (a rerun) must show zero drift, and the Q4_1 model
must exceed the threshold.
"""
import json
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_support as sup  # noqa: E402

PROMPTS = ["Once upon a time", "The little dog", "Lily and Ben went to the park", "One day, a big bird",
           "Tom had a red ball. He", "The sun was hot and"]


class DriftQuantization(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="stet-e2e-drift-")
        src = sup.stories_path()
        cls.q8 = sup.quantize(src, os.path.join(cls.tmp, "stories-q8_0.gguf"), "q8_0")
        cls.q41 = sup.quantize(src, os.path.join(cls.tmp, "stories-q4_1.gguf"), "q4_1")
        cls.prompts = os.path.join(cls.tmp, "prompts.txt")
        with open(cls.prompts, "w") as f:
            f.write("\n".join(PROMPTS) + "\n")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def drift(self, server, *args):
        out = os.path.join(self.tmp, f"drift-{len(os.listdir(self.tmp))}.json")
        p = sup.run_stet("drift", "--endpoint", server.url, "-m", server.model, "--prompts", self.prompts,
                         "--max-tokens", "16", "--top-k", "5", *args, "--json", out)
        return p, (sup.read_json(out) if os.path.exists(out) else None)

    def test_quantization_change_is_flagged_and_rerun_is_not(self):
        base = os.path.join(self.tmp, "baseline.json")
        with sup.StetServer(self.q8, threads=1) as s8:
            p = sup.run_stet("drift", "--endpoint", s8.url, "-m", s8.model, "--prompts", self.prompts,
                             "--max-tokens", "16", "--top-k", "5", "--save", base)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        # A rerun: the same model on a fresh server with other threads, batch and chunk settings, 3 in flight.
        with sup.StetServer(self.q8, "--batch-tokens", "24", "--chunk", "3", threads=2) as s8b:
            p, same = self.drift(s8b, "--baseline", base, "-c", "3")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        with sup.StetServer(self.q41, threads=1) as s41:
            p, q41 = self.drift(s41, "--baseline", base)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertEqual(same["drift"], 0.0, same)
        self.assertFalse(same["exceeded"])
        self.assertGreater(q41["drift"], 0.05, q41)
        self.assertTrue(q41["exceeded"])
        print(f"drift: rerun of Q8_0 = {same['drift']}; Q4_1 vs Q8_0 baseline = {q41['drift']:.4f} "
              f"(threshold 0.05)")
        print(p.stdout)


if __name__ == "__main__":
    unittest.main()

"""The chat template's clock, live and under replay: stories260K served with
Meta's Llama 3.1 chat template (--chat-template-file; it prints "Today Date:
" + date_string, which stet sets from the request's clock) and --record.

- A live request's prompt carries today's date: the request's clock is the
  server's wall clock, and the record keeps that instant (source "server
  clock").
- A pinned clock (metadata.stet_clock) renders its own date.
- `stet replay` against another server, started later, pins the recorded
  instant: the replayed request renders the same prompt byte for byte and its
  record holds the same instant, although that server's clock has moved on
  (a request without the clock there records a later one).
"""
import calendar
import json
import os
import sqlite3
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_support as sup  # noqa: E402

LLAMA31 = os.path.join(os.environ.get("STET_SHARED_DIR", os.path.join(sup.HERE, "..", "..", "..", "shared")),
                       "chat-templates", "meta-llama-Llama-3.1-8B-Instruct.jinja")
MESSAGES = [{"role": "system", "content": "You tell short stories."},
            {"role": "user", "content": "Tell me about a cat."}]


def day(unix):
    return time.strftime("%d %b %Y", time.gmtime(unix))


def records(db):
    con = sqlite3.connect(db)
    try:
        return [json.loads(text) for (text,) in con.execute("SELECT record FROM records ORDER BY seq")]
    finally:
        con.close()


class TemplateClock(unittest.TestCase):
    def setUp(self):
        sup.require(os.path.exists(LLAMA31), LLAMA31)
        self.model = sup.stories_path()
        self.tmp = tempfile.TemporaryDirectory(prefix="stet-e2e-clock-")
        self.addCleanup(self.tmp.cleanup)

    def serve(self, db):
        return sup.StetServer(self.model, "--chat-template-file", LLAMA31, "--record", db)

    def chat(self, server, **extra):
        body = {"model": server.model, "messages": MESSAGES, "max_tokens": 8, "temperature": 0, **extra}
        status, resp = server.post("/v1/chat/completions", body)
        self.assertEqual(status, 200, resp)
        return resp

    def test_live_clock_and_replay(self):
        db1, db2 = os.path.join(self.tmp.name, "live.db"), os.path.join(self.tmp.name, "replay.db")
        with self.serve(db1) as s:
            t0 = int(time.time())
            self.chat(s)
            t1 = int(time.time())
            status, pinned = s.post("/apply-template", {"messages": MESSAGES,
                                                        "metadata": {"stet_clock": "2031-02-03T04:05:06Z"}})
            self.assertEqual(status, 200, pinned)
            self.assertIn("Today Date: 03 Feb 2031\n", pinned["prompt"])
            status, live = s.post("/apply-template", {"messages": MESSAGES})
            self.assertIn("Today Date: " + day(time.time()) + "\n", live["prompt"])
        [rec] = records(db1)
        clock = rec["clock"]
        self.assertEqual(clock["source"], "server clock")
        self.assertTrue(t0 <= clock["unix"] <= t1, (t0, clock, t1))
        self.assertEqual(clock["utc"], time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(clock["unix"])))
        self.assertIn("Today Date: " + day(clock["unix"]) + "\n", rec["rendered_prompt"])
        self.assertNotIn("26 Jul 2024", rec["rendered_prompt"])

        time.sleep(1.5)  # the replaying server's clock is seconds later
        with self.serve(db2) as s:
            sup.run_stet("replay", db1, "--endpoint", s.url, check=0)
            self.chat(s)  # no clock: this server's own, later instant
        replayed, fresh = records(db2)
        self.assertEqual(replayed["clock"], {"unix": clock["unix"], "utc": clock["utc"],
                                             "source": "metadata.stet_clock"})
        self.assertEqual(replayed["rendered_prompt"], rec["rendered_prompt"])
        self.assertEqual(replayed["prompt_token_ids"], rec["prompt_token_ids"])
        self.assertEqual(replayed["choices"][0]["token_ids"], rec["choices"][0]["token_ids"])
        self.assertEqual(fresh["clock"]["source"], "server clock")
        self.assertGreater(fresh["clock"]["unix"], clock["unix"])
        self.assertEqual(calendar.timegm(time.strptime(clock["utc"], "%Y-%m-%dT%H:%M:%SZ")), clock["unix"])


if __name__ == "__main__":
    unittest.main()

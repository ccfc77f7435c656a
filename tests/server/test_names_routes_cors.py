"""Names, routes and browsers (issue 26, item 8), on stories260K with the openai
client: --served-model-name (repeatable; the first is the id answers report,
every name is accepted and listed by /v1/models, others are 404), the routes
without /v1 as aliases of the /v1 ones (as llama.cpp serves both; keyed and
counted alike), and --cors-origin (off by default: no CORS header and a
preflight is 405; on: the allowed origin gets its headers and its preflight, any
other origin neither; the Host check still applies)."""
import json
import subprocess
import unittest

import stet_server as S

S.require_openai()
import openai  # noqa: E402

STORIES = S.stories_path()
APP = "https://app.example.com"
PREFLIGHT = {"Origin": APP, "Access-Control-Request-Method": "POST",
             "Access-Control-Request-Headers": "authorization, content-type, x-stainless-os"}


class NamesAndCors(S.ClientTest):
    MODEL = STORIES
    SERVE_ARGS = ("--threads", "1", "--served-model-name", "alpha", "--served-model-name", "beta",
                  "--cors-origin", APP)

    def test_served_model_names(self):
        ids = [m.id for m in self.client.models.list().data]
        self.assertEqual(ids, ["alpha", "beta"])
        self.assertEqual(self.client.models.retrieve("beta").id, "beta")
        for name in ("alpha", "beta", "stories260K"):  # the file's stem still answers too
            r = self.client.completions.create(model=name, prompt="Once", max_tokens=4,
                                               temperature=0)
            self.assertEqual(r.model, "alpha", name)
        with self.assertRaises(openai.NotFoundError):
            self.client.completions.create(model="gamma", prompt="Once", max_tokens=4)

    def test_routes_without_v1(self):
        body = {"model": "beta", "prompt": "Once", "max_tokens": 6, "temperature": 0}
        s1, a = self.srv.post("/v1/completions", body)
        s2, b = self.srv.post("/completions", body)
        self.assertEqual((s1, s2), (200, 200), (a, b))
        self.assertEqual(a["choices"], b["choices"])
        chat = {"model": "alpha", "messages": [{"role": "user", "content": "hi"}],
                "max_tokens": 4, "temperature": 0}
        self.assertEqual(self.srv.post("/chat/completions", chat)[0], 200)
        status, _, data = self.srv.http("GET", "/models")
        self.assertEqual(status, 200)
        self.assertEqual([m["id"] for m in json.loads(data)["data"]], ["alpha", "beta"])
        self.assertEqual(self.srv.http("GET", "/models/beta")[0], 200)
        self.assertEqual(self.srv.http("GET", "/models/gamma")[0], 404)
        self.assertEqual(self.srv.http("GET", "/chat/completions")[0], 405)
        self.assertEqual(self.srv.http("GET", "/nope")[0], 404)
        label = ("stet_http_requests_total", frozenset({"endpoint": "/v1/completions",
                                                         "status": "200"}.items()))
        self.assertGreaterEqual(self.srv.metrics().get(label, 0), 2)

    def test_cors_allowed_origin(self):
        status, h, _ = self.srv.http("OPTIONS", "/v1/chat/completions", headers=PREFLIGHT)
        self.assertEqual(status, 204)
        self.assertEqual(h.get("access-control-allow-origin"), APP)
        self.assertIn("POST", h.get("access-control-allow-methods", ""))
        self.assertIn("x-stainless-os", h.get("access-control-allow-headers", ""))
        status, h, _ = self.srv.http("POST", "/v1/completions",
                                     {"model": "alpha", "prompt": "Once", "max_tokens": 2},
                                     headers={"Origin": APP})
        self.assertEqual(status, 200)
        self.assertEqual(h.get("access-control-allow-origin"), APP)
        self.assertEqual(h.get("vary"), "Origin")
        # An error a page must be able to read carries the header too.
        status, h, _ = self.srv.http("POST", "/v1/completions", "x", headers={"Origin": APP})
        self.assertEqual(status, 400)
        self.assertEqual(h.get("access-control-allow-origin"), APP)

    def test_cors_other_origins(self):
        evil = dict(PREFLIGHT, Origin="https://evil.example")
        status, h, _ = self.srv.http("OPTIONS", "/v1/chat/completions", headers=evil)
        self.assertEqual(status, 405)
        self.assertNotIn("access-control-allow-origin", h)
        status, h, _ = self.srv.http("POST", "/v1/completions",
                                     {"model": "alpha", "prompt": "Once", "max_tokens": 2},
                                     headers={"Origin": "https://evil.example"})
        self.assertNotIn("access-control-allow-origin", h)
        # A rebinding page: the allowed origin, but a Host the server does not answer for.
        status, h, _ = self.srv.http("OPTIONS", "/v1/completions",
                                     headers=dict(PREFLIGHT, Host="evil.example"))
        self.assertEqual(status, 403)


class CorsOffByDefault(S.ClientTest):
    MODEL = STORIES
    SERVE_ARGS = ("--threads", "1")

    def test_no_cors_headers(self):
        status, h, _ = self.srv.http("OPTIONS", "/v1/chat/completions", headers=PREFLIGHT)
        self.assertEqual(status, 405)
        self.assertNotIn("access-control-allow-origin", h)
        status, h, _ = self.srv.http("POST", "/v1/completions",
                                     {"model": self.model, "prompt": "Once", "max_tokens": 2},
                                     headers={"Origin": APP})
        self.assertEqual(status, 200)
        self.assertNotIn("access-control-allow-origin", h)

    def test_bad_flags_exit_2(self):
        for args in (["--cors-origin", "app.example.com"], ["--cors-origin", "https://a.example/"],
                     ["--served-model-name", ""]):
            p = subprocess.run([S.stet_binary(), "serve", "-m", STORIES, "--port", "0", *args],
                               stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
            self.assertEqual(p.returncode, 2, (args, p.stderr[-300:]))


if __name__ == "__main__":
    unittest.main()

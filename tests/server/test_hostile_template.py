"""A GGUF whose tokenizer.chat_template is hostile (issue 12): `stet serve`
refuses to start, within seconds and in bounded memory, naming the limit;
--chat-template-file replaces the template and the server starts; a template
that passes the load check but loops on longer conversations answers those
requests with a quick 400 template_limit_exceeded, frees the worker (no CPU
spent after the answer) and keeps serving others."""
import os
import shutil
import struct
import subprocess
import tempfile
import time
import unittest

import stet_server as S

STORIES = S.stories_path()
STET = S.stet_binary()

# 2^30 macro calls: never finishes without a budget.
MACRO_BOMB = ("{% macro m(n) %}{% if n > 0 %}{{ m(n - 1) }}{{ m(n - 1) }}{% endif %}{% endmacro %}"
              "{{ m(30) }}")
# Before the budget: 2 GB at once.
ALLOC_BOMB = "{{ '%*s' % (2000000000, '') }}{{ messages[0].content }}"
# [x, x] doubled 50 times, printed with indent=1000: 14 GB RSS before the budget.
DAG_BOMB = ("{% set ns = namespace(x=1) %}{% for i in range(50) %}{% set ns.x = [ns.x, ns.x] %}{% endfor %}"
            "{{ ns.x|tojson(indent=1000) }}")
# Passes the load check (4- and 6-message conversations), loops on longer ones.
LONG_CHAT_BOMB = ("{% if messages|length > 6 %}{% for i in range(100000) %}{% set x = 'a' * 30000000 %}"
                  "{% endfor %}{% endif %}{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}"
                  "assistant:")
CHATML = ("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
          "<|im_start|>assistant\n")

# A generous bound on the server's peak RSS: stories260K is 1 MB; a render may
# hold 256 MiB. Before the budget these templates reached 2-14 GB.
MAX_RSS_KB = 600 * 1024


def with_chat_template(src, dst, template):
    """Copies GGUF v2/v3 file `src` to `dst` with tokenizer.chat_template set to
    `template` (replaced, or added): the metadata is rewritten, tensor infos and
    data are copied as they are, the data section realigned."""
    sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
    with open(src, "rb") as f:
        blob = f.read()
    pos = 0

    def take(n):
        nonlocal pos
        pos += n
        return blob[pos - n:pos]

    def skip_str():
        (n,) = struct.unpack("<Q", take(8))
        return take(n)

    def skip_value(t):
        if t == 8:
            skip_str()
        elif t == 9:
            et, n = struct.unpack("<IQ", take(12))
            for _ in range(n):
                skip_value(et)
        else:
            take(sizes[t])

    magic, version, n_tensors, n_kv = struct.unpack("<4sIQQ", take(24))
    assert magic == b"GGUF" and version in (2, 3), (magic, version)
    kvs, alignment = [], 32
    for _ in range(n_kv):
        start = pos
        key = skip_str().decode()
        (t,) = struct.unpack("<I", take(4))
        vstart = pos
        skip_value(t)
        if key == "general.alignment":
            (alignment,) = struct.unpack("<I", blob[vstart:vstart + 4])
        if key != "tokenizer.chat_template":
            kvs.append(blob[start:pos])
    key = b"tokenizer.chat_template"
    value = template.encode()
    kvs.append(struct.pack("<Q", len(key)) + key + struct.pack("<IQ", 8, len(value)) + value)
    infos_start = pos
    for _ in range(n_tensors):
        skip_str()
        (n_dims,) = struct.unpack("<I", take(4))
        take(8 * n_dims + 4 + 8)
    infos = blob[infos_start:pos]
    data = blob[-(-pos // alignment) * alignment:]
    head = struct.pack("<4sIQQ", magic, version, n_tensors, len(kvs)) + b"".join(kvs) + infos
    head += b"\0" * (-len(head) % alignment)
    with open(dst, "wb") as f:
        f.write(head + data)


def run_to_exit(args, timeout=60):
    """Runs `stet serve ARGS` until it exits: (exit code, stderr, seconds, peak RSS in KB)."""
    start = time.time()
    proc = subprocess.Popen([STET, "serve", "--host", "127.0.0.1", "--port", "0", *args],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    # wait4 reaps the child itself (so Popen never does) and reports its own
    # peak RSS (ru_maxrss, KB on Linux).
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.time() - start > timeout:
            os.kill(proc.pid, 9)
        time.sleep(0.05)
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode("utf-8", "replace")
    proc.stderr.close()
    return proc.returncode, err, time.time() - start, usage.ru_maxrss


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return -1


class HostileTemplate(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="stet-hostile-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def gguf(self, name, template):
        path = os.path.join(self.dir, name + ".gguf")
        with_chat_template(STORIES, path, template)
        return path

    def file(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def test_the_rewritten_gguf_serves_its_template(self):
        path = self.gguf("chatml", CHATML)
        with S.StetServer(path) as srv:
            status, body = srv.post("/v1/chat/completions", {
                "model": "chatml", "max_tokens": 2, "temperature": 0,
                "messages": [{"role": "user", "content": "Once upon a time"}], "return_token_ids": True})
            self.assertEqual(status, 200, body)
            self.assertFalse(any("ChatML fallback" in line for line in srv.lines()), srv.lines())

    def test_start_up_refuses_hostile_templates(self):
        for name, template, limit in (("macro", MACRO_BOMB, "step budget (10000000 steps)"),
                                      ("alloc", ALLOC_BOMB, "size limit"),
                                      ("dag", DAG_BOMB, "size limit")):
            with self.subTest(name):
                code, err, secs, rss_kb = run_to_exit(["-m", self.gguf(name, template)])
                print(f"  {name}: exit {code} in {secs:.2f} s, peak RSS {rss_kb / 1024:.0f} MiB")
                self.assertEqual(code, 1, err)
                self.assertIn(limit, err)
                self.assertIn("the model's chat template is refused", err)
                self.assertIn("--chat-template-file", err)
                self.assertNotIn("listening on", err)
                self.assertLess(secs, 20)
                self.assertLess(rss_kb, MAX_RSS_KB)

    def test_chat_template_file_replaces_a_hostile_one(self):
        path = self.gguf("macro", MACRO_BOMB)
        with S.StetServer(path, "--chat-template-file", self.file("chatml.jinja", CHATML)) as srv:
            self.assertTrue(any("chat template from --chat-template-file" in line for line in srv.lines()))
            status, body = srv.post("/v1/chat/completions", {
                "model": "macro", "max_tokens": 2, "temperature": 0,
                "messages": [{"role": "user", "content": "Once upon a time"}]})
            self.assertEqual(status, 200, body)
        # A hostile --chat-template-file is refused the same way, and named.
        bad = self.file("bomb.jinja", MACRO_BOMB)
        code, err, _, _ = run_to_exit(["-m", STORIES, "--chat-template-file", bad])
        self.assertEqual(code, 1, err)
        self.assertIn(f"the chat template in {bad} is refused", err)
        # The limit named is the one in force: --template-max-steps sets it.
        code, err, _, _ = run_to_exit(["-m", STORIES, "--chat-template-file", bad, "--template-max-steps", "20000"])
        self.assertEqual(code, 1, err)
        self.assertIn("step budget (20000 steps)", err)

    def test_request_over_the_budget_is_a_quick_400_and_frees_the_worker(self):
        path = self.gguf("long", LONG_CHAT_BOMB)
        with S.StetServer(path, "--http-threads", "2") as srv:
            messages = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"hi {i}"} for i in range(8)]
            for _ in range(3):
                start = time.time()
                status, body = srv.post("/v1/chat/completions",
                                        {"model": "long", "max_tokens": 2, "messages": messages})
                secs = time.time() - start
                self.assertEqual(status, 400, body)
                err = body["error"]
                self.assertEqual(err["type"], "invalid_request_error")
                self.assertEqual(err["code"], "template_limit_exceeded")
                self.assertEqual(err["param"], "messages")
                self.assertIn("step budget", err["message"])
                self.assertLess(secs, 5)
            # Nothing keeps running after the answer: the process sits idle.
            time.sleep(0.5)
            before = cpu_seconds(srv.proc.pid)
            time.sleep(1.0)
            self.assertLess(cpu_seconds(srv.proc.pid) - before, 0.2)
            self.assertTrue(srv.healthy())
            status, body = srv.post("/v1/chat/completions", {
                "model": "long", "max_tokens": 2, "temperature": 0, "messages": messages[:3]})
            self.assertEqual(status, 200, body)
            self.assertLess(peak_rss_kb(srv.proc.pid), MAX_RSS_KB)


if __name__ == "__main__":
    unittest.main()

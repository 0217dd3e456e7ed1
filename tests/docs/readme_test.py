#!/usr/bin/env python3
"""Runs every `sh` and `python` block of README.md, in order, against a fresh metaopt-server.

Each block must succeed (exit 0) as written, after this mechanical translation only:
- `localhost:50051` becomes the test server's address, which METAOPT_SERVER also holds (the
  default address of metaoptctl and of the examples);
- a `build/` path becomes this build tree, and METAOPT_BUILD_DIR names it;
- `grpcurl` is a shell function that runs the buf CLI (tools/node_modules/.bin/buf) as the README
  says: `grpcurl -plaintext [-H H] -d D ADDRESS SERVICE/METHOD` becomes
  `buf curl --protocol grpc --http2-prior-knowledge [-H H] -d D http://ADDRESS/SERVICE/METHOD`,
  and `-d @` (the request on standard input) `-d @-`;
- Python blocks run with /usr/bin/python3 and the built package (BUILD/clients/python) on
  PYTHONPATH, as clients/python/README.md's offline use describes.
Each `sh` block runs in its own bash (`set -eo pipefail`) from the repository root, and the
blocks run in the README's order, so later blocks see the studies of earlier ones. The set-up
block (`bash scripts/serve.sh`, `bash scripts/test.sh`) is not run: it is what CI itself runs.
docs/grpcurl.md is run, with its responses checked, by grpcurl_doc_test.

Usage: readme_test.py SOURCE_DIR BUILD_DIR
"""

import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest

SOURCE_DIR = BUILD_DIR = None

GRPCURL = r'''
grpcurl() {
  local args=()
  while (($#)); do
    case "$1" in
      -plaintext) shift ;;
      -d) if [[ "$2" == @ ]]; then args+=(-d @-); else args+=(-d "$2"); fi; shift 2 ;;
      -H) args+=(-H "$2"); shift 2 ;;
      *) break ;;
    esac
  done
  "$METAOPT_TEST_BUF" curl --protocol grpc --http2-prior-knowledge "${args[@]}" "http://$1/$2"
}
'''


def blocks(markdown):
    """[(line number, language, code)] of the fenced blocks."""
    found = []
    for match in re.finditer(r"^```(\w*)\n(.*?)^```", markdown, re.S | re.M):
        line = markdown.count("\n", 0, match.start()) + 1
        found.append((line, match.group(1), match.group(2)))
    return found


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ReadmeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="readme_test.")
        cls.port = free_port()
        cls.address = f"localhost:{cls.port}"
        cls.log = open(os.path.join(cls.tmp, "server.log"), "w+")
        cls.server = subprocess.Popen(
            [os.path.join(BUILD_DIR, "server/metaopt-server"), f"--listen=127.0.0.1:{cls.port}",
             f"--db={cls.tmp}/readme.db", f"--models={SOURCE_DIR}/models",
             "--http-listen=127.0.0.1:0"],
            stdout=cls.log, stderr=subprocess.STDOUT)
        ctl = os.path.join(BUILD_DIR, "clients/cpp/metaoptctl")
        deadline = time.monotonic() + 60
        while subprocess.run([ctl, f"--server={cls.address}", "--timeout=2", "health"],
                             capture_output=True).returncode != 0:
            if cls.server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the server did not start:\n{cls.server_log()}")
            time.sleep(0.3)

    @classmethod
    def tearDownClass(cls):
        cls.server.terminate()
        cls.server.wait(timeout=30)
        cls.log.close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    @classmethod
    def server_log(cls):
        cls.log.seek(0)
        return cls.log.read()[-3000:]

    def translate(self, code):
        code = code.replace("localhost:50051", self.address)
        return re.sub(r"(?<![\w./-])build/", BUILD_DIR.rstrip("/") + "/", code)

    def env(self):
        env = dict(os.environ)
        env.update({
            "METAOPT_SERVER": self.address,
            "METAOPT_BUILD_DIR": BUILD_DIR,
            "METAOPT_TEST_BUF": os.path.join(SOURCE_DIR, "tools/node_modules/.bin/buf"),
            "PYTHONPATH": os.path.join(BUILD_DIR, "clients/python"),
        })
        return env

    def test_every_block_in_order(self):
        with open(os.path.join(SOURCE_DIR, "README.md"), encoding="utf-8") as f:
            found = blocks(f.read())
        run = 0
        for line, language, code in found:
            if language not in ("sh", "python"):
                continue
            if "bash scripts/serve.sh" in code:
                self.assertIn("bash scripts/test.sh", code)
                continue
            code = self.translate(code)
            if language == "sh":
                command = ["bash", "-c", "set -eo pipefail\n" + GRPCURL + code]
            else:
                command = ["/usr/bin/python3", "-c", code]
            started = time.monotonic()
            result = subprocess.run(command, cwd=SOURCE_DIR, env=self.env(), capture_output=True,
                                    text=True, timeout=600)
            print(f"README.md:{line} ({language}): exit {result.returncode} in "
                  f"{time.monotonic() - started:.1f} s", file=sys.stderr)
            self.assertEqual(result.returncode, 0,
                             f"README.md:{line} ({language}) failed:\n{code}\n--- stdout:\n"
                             f"{result.stdout[-3000:]}\n--- stderr:\n{result.stderr[-3000:]}\n"
                             f"--- server:\n{self.server_log()}")
            run += 1
        self.assertGreaterEqual(run, 6, "fewer blocks than the README has")


def main():
    global SOURCE_DIR, BUILD_DIR
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    SOURCE_DIR, BUILD_DIR = (os.path.abspath(a) for a in sys.argv[1:3])
    unittest.main(argv=[sys.argv[0], "-v"])


if __name__ == "__main__":
    main()
